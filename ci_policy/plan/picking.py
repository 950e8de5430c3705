"""What a stage job picks from a plan: a planned stage by name, then a shard by index.

- In: a plan (anything with `stages`, `stage(name)` and a configuration's `stage(name)`:
  `plan.build.Plan`) and a stage name; a planned stage (`RunStage`) and a shard index.
- Out: `planned_stage`: the planned stage; `pick_shard`: the shard `--shard` names (None: a
  skipped stage), with the errors `list` and `run` print.
- Refused: a stage not planned, as `UsageError` naming `--stage` (an external one as
  such, a name several backends share with the keys to pass); a shard the stage does not
  have, or none named of several, naming `--shard`.
- Below both `plan.build` (which plans) and `plan.stagejob` (what a stage job runs,
  importing no planner): each imports this, neither the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from ci_policy.errors import UsageError

if TYPE_CHECKING:
    from ci_policy.model.registration import Registration
    from ci_policy.plan.partition import Shard


class RunStage(Protocol):
    """What running a stage's shard reads of the stage (`plan.build.StagePlan` has it)."""

    @property
    def name(self) -> str: ...
    @property
    def decision(self) -> str: ...
    @property
    def reasons(self) -> tuple[str, ...]: ...
    @property
    def tests(self) -> tuple[Registration, ...]: ...
    @property
    def shards(self) -> tuple[Shard, ...]: ...
    @property
    def not_selected(self) -> tuple[tuple[Registration, str], ...]: ...


S = TypeVar("S", bound=RunStage, covariant=True)


class _Configured(Protocol):
    @property
    def external(self) -> bool: ...


class _Config(Protocol):
    def stage(self, name: str) -> _Configured | None: ...


class Planned(Protocol[S]):
    """What `planned_stage` reads of a plan."""

    @property
    def stages(self) -> Sequence[S]: ...
    @property
    def config(self) -> _Config: ...
    def stage(self, name: str) -> S | None: ...


def planned_stage(plan: Planned[S], stage_name: str) -> S:
    """The planned stage a stage job runs; `UsageError` for one not planned (naming an external one)."""
    planned = plan.stage(stage_name)
    configured = plan.config.stage(stage_name)
    if planned is None and configured is not None and configured.external:
        raise UsageError(f"{stage_name!r} is an external stage: another system runs it, ci-policy never "
                         "plans or runs it", source="--stage")
    # A name several backends share (`NAME@BACKEND`), or a stage planned as its variants (`KEY+VARIANT`).
    shared = [s.name for s in plan.stages if s.name.startswith((f"{stage_name}@", f"{stage_name}+"))]
    if planned is None and shared:
        per = "backend" if all("+" not in s for s in shared) else "backend or variant"
        raise UsageError(f"{stage_name!r} names {len(shared)} planned stages, one per {per}: "
                         f"{', '.join(shared)}", source="--stage", hint=f"pass --stage {' or '.join(shared)}")
    if planned is None:
        names = ", ".join(s.name for s in plan.stages)
        raise UsageError(f"{stage_name!r} is not a planned stage (planned: {names}); "
                         "external stages are never planned here", source="--stage")
    return planned


def pick_shard(stage: RunStage, shard: int | None) -> Shard | None:
    """The shard `--shard` names (None: the only one), or None for a skipped stage."""
    if stage.decision == "skip":
        return None
    index = 0 if shard is None else shard
    if shard is None and len(stage.shards) > 1:
        raise UsageError(f"stage {stage.name} has {len(stage.shards)} shards; "
                         "pass --shard INDEX", source="--shard")
    for found in stage.shards:
        if found.index == index:
            return found
    raise UsageError(f"stage {stage.name} has shards 0..{len(stage.shards) - 1}, not {index}", source="--shard")
