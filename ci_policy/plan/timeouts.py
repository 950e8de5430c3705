"""Time limits of test files: the one rule `ci-policy run` kills a file by and the plan sizes jobs by.

- In: a registration, its stage's `timeout_per_file`, `runner.timeout_from_est_time`.
- Out: a file's limit in seconds, or None (no limit): `max(floor, factor * est_time)` when
  `runner.timeout_from_est_time` is configured, capped by the stage's `timeout_per_file`
  when it has one; else the stage's `timeout_per_file`. Every input is bounded
  (`ci_policy.read.numbers`), so the limit is finite.
- Refused: nothing: its inputs were checked, and bounded, when they were read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ci_policy.model.registration import Registration


def timeout_for(reg: Registration, stage_timeout: float | None,
                from_est: tuple[float, float] | None) -> float | None:
    """`max(floor, factor * est_time)` (at most the stage's) when configured, else the stage's."""
    if from_est is not None:
        factor, floor = from_est
        derived = max(floor, factor * reg.est_time)
        # A file never gets longer than its stage allows every file.
        return derived if stage_timeout is None else min(derived, stage_timeout)
    return stage_timeout
