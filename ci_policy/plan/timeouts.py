"""Time limits of test files: the one rule `ci-policy run` kills a file by and the plan sizes jobs by.

- In: a registration, its stage's `timeout_per_file`, `runner.timeout_from_est_time`.
- Out: a file's limit in seconds, or None (no limit): `max(floor, factor * est_time)` when
  `runner.timeout_from_est_time` is configured, else the stage's `timeout_per_file`.
"""

from __future__ import annotations

from ci_policy.model.registry import Registration


def timeout_for(reg: Registration, stage_timeout: float | None,
                from_est: tuple[float, float] | None) -> float | None:
    """`max(floor, factor * est_time)` when configured, else the stage's timeout_per_file."""
    if from_est is not None:
        factor, floor = from_est
        return max(floor, factor * reg.est_time)
    return stage_timeout
