"""`list`: the files of one stage shard, exactly as `run` would run them.

- In: a `PlanSource` (the plan file or the plan inputs, and the stage) and the shard index.
- Out: a `Listed`: the planned stage, its shard (None for a skipped stage) and the invalid test
  files the plan left out.
- Refused: an unknown or external stage, a missing or out-of-range shard (`UsageError`), and
  whatever `plan_source.shard_plan` refuses.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_policy.app.plan_source import shard_plan
from ci_policy.app.requests import PlanSource
from ci_policy.model.snapshot import InvalidFile
from ci_policy.plan.build import StagePlan, shard_of
from ci_policy.plan.partition import Shard


@dataclass(frozen=True)
class Listed:
    stage: StagePlan
    shard: Shard | None
    invalid: tuple[InvalidFile, ...]


def list_shard(source: PlanSource, shard: int | None) -> Listed:
    plan = shard_plan(source)
    stage, picked = shard_of(plan, source.stage, shard)
    return Listed(stage, picked, tuple(plan.invalid))
