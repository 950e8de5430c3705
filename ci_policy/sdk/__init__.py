"""What the tests being run import: the no-op markers and the metric producers.

- `register_cpu_ci`, `register_cuda_ci`, `register_rocm_ci`, `register_ci_gate`: no-ops,
  read from source by ci-policy (`ci_policy.read.markers`), never called by it.
- `MetricRecorder`, `tito_mismatch_metrics`, `rollout_metrics`, `session_server_version`:
  the producer side of metric-history gates (`ci_policy.sdk.metrics`).
- Standard library only: a test process pays for nothing else.
"""

from ci_policy.sdk.markers import register_ci_gate, register_cpu_ci, register_cuda_ci, register_rocm_ci
from ci_policy.sdk.metrics import (
    MetricRecorder,
    TitoMismatchError,
    rollout_metrics,
    session_server_version,
    tito_mismatch_metrics,
)

__all__ = [
    "MetricRecorder",
    "TitoMismatchError",
    "register_ci_gate",
    "register_cpu_ci",
    "register_cuda_ci",
    "register_rocm_ci",
    "rollout_metrics",
    "session_server_version",
    "tito_mismatch_metrics",
]
