"""The registration markers a test file calls: no-ops at run time.

- In: the literal arguments a test file writes (`register_cuda_ci(est_time=300, suite=...)`).
- Out: nothing; ci-policy never imports a test file. It reads these calls from source with
  `ast` (`ci_policy.read.markers`), so their arguments must be literals.
- Refused: nothing at run time (a test must not fail on its own registration); `lint` refuses
  a bad call, read from source (`read.markers`, `model.registry`).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing (every command and test file imports this)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


def register_cpu_ci(est_time: float, suite: str, *, labels: Sequence[str] | None = None,
                    nightly: bool = False, disabled: str | None = None) -> None:
    """Register this file for a CPU stage. Read by ci-policy from source; does nothing here."""


def register_cuda_ci(est_time: float, suite: str, *, labels: Sequence[str] | None = None,
                     nightly: bool = False, disabled: str | None = None) -> None:
    """Register this file for a CUDA stage. Read by ci-policy from source; does nothing here."""


def register_rocm_ci(est_time: float, suite: str, *, labels: Sequence[str] | None = None,
                     nightly: bool = False, disabled: str | None = None) -> None:
    """Register this file for a ROCm stage. Read by ci-policy from source; does nothing here."""


def register_ci_gate(*, metric_key: str, steps: Any = None, constraint: Any = None, enforce: bool = False,
                     allowlist_reason: str | None = None) -> None:
    """Declare a metric-history gate for this file. Read by ci-policy from source; does nothing here."""
