"""ci_policy: a CI policy engine for repositories whose tests run on scarce accelerators.

The registration markers below are no-ops at run time. ci-policy never imports a
test file: it reads these calls from source with `ast`, so their arguments must be
literals (see README, "Marker grammar").
"""

from __future__ import annotations

from typing import Optional, Sequence

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "register_cpu_ci",
    "register_cuda_ci",
    "register_rocm_ci",
    "register_ci_gate",
]


def register_cpu_ci(est_time: float, suite: str, *, labels: Optional[Sequence[str]] = None,
                    nightly: bool = False, disabled: Optional[str] = None) -> None:
    """Register this file for a CPU stage. Read by ci-policy from source; does nothing here."""


def register_cuda_ci(est_time: float, suite: str, *, labels: Optional[Sequence[str]] = None,
                     nightly: bool = False, disabled: Optional[str] = None) -> None:
    """Register this file for a CUDA stage. Read by ci-policy from source; does nothing here."""


def register_rocm_ci(est_time: float, suite: str, *, labels: Optional[Sequence[str]] = None,
                     nightly: bool = False, disabled: Optional[str] = None) -> None:
    """Register this file for a ROCm stage. Read by ci-policy from source; does nothing here."""


def register_ci_gate(*, metric_key: str, steps=None, constraint=None, enforce: bool = False,
                     allowlist_reason: Optional[str] = None) -> None:
    """Declare a metric-history gate for this file. Read by ci-policy from source; does nothing here."""
