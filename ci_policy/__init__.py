"""ci_policy: a CI policy engine for repositories whose tests run on scarce accelerators.

The markers a test file calls are re-exported here (`from ci_policy import
register_cuda_ci`); they live in `ci_policy.sdk` with the metric producers. ci-policy
never imports a test file: it reads those calls from source with `ast`.
"""

from ci_policy.sdk.markers import register_ci_gate, register_cpu_ci, register_cuda_ci, register_rocm_ci

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "register_cpu_ci",
    "register_cuda_ci",
    "register_rocm_ci",
    "register_ci_gate",
]
