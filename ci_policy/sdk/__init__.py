"""What the tests being run import: the no-op markers and the metric producers.

- `register_cpu_ci`, `register_cuda_ci`, `register_rocm_ci`, `register_ci_gate`: no-ops,
  read from source by ci-policy (`ci_policy.read.markers`), never called by it.
- `MetricRecorder`, `tito_mismatch_metrics`, `rollout_metrics`, `session_server_version`:
  the producer side of metric-history gates (`ci_policy.sdk.metrics`).
- Standard library only: a test process pays for nothing else. The metric producers are
  imported on first use, so `import ci_policy` (every `ci-policy` command, every test file
  that imports a marker) does not load them.
"""

from __future__ import annotations

from ci_policy.sdk.markers import register_ci_gate, register_cpu_ci, register_cuda_ci, register_rocm_ci

TYPE_CHECKING = False  # typing's, without importing typing (every command and test file imports this)
if TYPE_CHECKING:
    from typing import Any

    from ci_policy.sdk.metrics import (
        MetricRecorder,
        TitoMismatchError,
        rollout_metrics,
        session_server_version,
        tito_mismatch_metrics,
    )

_METRICS = frozenset({"MetricRecorder", "TitoMismatchError", "rollout_metrics", "session_server_version",
                      "tito_mismatch_metrics"})


def __getattr__(name: str) -> Any:
    if name in _METRICS:
        from ci_policy.sdk import metrics  # not for `--help`: test_help_imports_no_subcommand_module

        return getattr(metrics, name)
    raise AttributeError(f"module 'ci_policy.sdk' has no attribute {name!r}")

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
