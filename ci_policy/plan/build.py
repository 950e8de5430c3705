"""The stage plan: trigger policy + diff-aware stage selection + balanced shards.

- In: a `Snapshot`, a `Trigger` and a `Diff`.
- Out: a frozen `Plan`: the resolved `Policy` (after auto-selection), one `StagePlan`
  per planned stage (decision, reasons, selected tests, shards), the stages skipped,
  image preparation per accelerator backend (`build` exactly when a stage of that backend
  runs), warnings, the invalid test files with their diagnostics, and the accelerator hours
  scheduled and skipped (`plan.hours`).
- Refused: a fatal error of the snapshot (configuration, labels, discovery, estimates file),
  as its located `InputErrors`; everything else is planned around, as below.
- Partial: an invalid test file (`Snapshot.usable`) is left out and the plan is built
  from every valid registration; `Plan.complete` is false. A fatal error (configuration,
  labels, discovery, estimates file) raises `InputErrors` instead.
- Shards: a fixed `partitions`, or `partitions: auto` sized from the selected est_time
  (`plan.partition.stage_split`, with its reason), split with the shortest makespan found
  (`StagePlan.makespan`, `lower_bound`, `optimal`); with `splits` (a `SplitCache`), the split
  of an unchanged stage is taken from it once checked. Parallelism: a stage's `max_parallel`
  (`default`, raised by `priority` on a pull request carrying a raw PR label of
  `pull_request.priority_labels`, or by `schedule` on a schedule event), with its reason;
  `Plan.max_parallel` gives every planned stage a limit for `strategy.max-parallel` (its
  shard count, at least 1, when the stage sets none).
- `ci-policy plan`, `ci-policy list` and `ci-policy run` all call `build_plan`, so
  every shard job computes exactly the split the plan job printed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_policy.config.stages import Stage
from ci_policy.config.top import Config
from ci_policy.model.registry import Registration
from ci_policy.model.snapshot import InvalidFile, Snapshot
from ci_policy.plan.hours import Hours, plan_hours
from ci_policy.plan.partition import Shard, SplitCache, stage_split
from ci_policy.plan.picking import pick_shard, planned_stage
from ci_policy.plan.policy import DIFF_EVENTS, Policy, Trigger, resolve, selects, why_not
from ci_policy.plan.selection import Decision, StageDecision, decide
from ci_policy.read.diff import Diff


@dataclass(frozen=True)
class StagePlan:
    stage: Stage
    decision: Decision
    reasons: tuple[str, ...]
    tests: tuple[Registration, ...]
    shards: tuple[Shard, ...]
    not_selected: tuple[tuple[Registration, str], ...] = ()
    invalid: tuple[str, ...] = ()  # invalid test files whose readable registrations name this stage
    # Why this many shards (`partitions: auto` only) and the stage's parallelism (`max_parallel` only).
    shards_reason: str | None = None
    max_parallel: int | None = None
    max_parallel_reason: str | None = None
    # The split's lower bound (max(sum / shards, longest file)) and whether the split is
    # proven optimal (`plan.partition.Split`); a skipped stage has no shards: 0 and True.
    lower_bound: float = 0
    optimal: bool = True

    @property
    def notes(self) -> tuple[str, ...]:
        """The reasons of a running stage's size: its shard count and parallelism, when configured."""
        if self.decision != "run":
            return ()
        return tuple(n for n in (self.shards_reason, self.max_parallel_reason) if n is not None)

    @property
    def name(self) -> str:
        """How the plan names the stage: its `Stage.key` (`NAME@BACKEND` for a shared name)."""
        return self.stage.key

    @property
    def est_seconds(self) -> float:
        return sum(s.est_seconds for s in self.shards)

    @property
    def wall_seconds(self) -> float:
        return max((s.est_seconds for s in self.shards), default=0)

    @property
    def makespan(self) -> float:
        """The longest shard's est: the stage's wall time."""
        return self.wall_seconds

    def shard(self, index: int) -> Shard:
        for shard in self.shards:
            if shard.index == index:
                return shard
        raise IndexError(index)


@dataclass(frozen=True)
class Plan:
    snapshot: Snapshot  # what the plan was built from; run reuses it for gates
    policy: Policy
    diff: Diff
    stages: tuple[StagePlan, ...]
    images: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...]
    # The accelerator hours scheduled and skipped (`plan.hours`); none for a plan read from a plan file.
    hours: Hours = Hours()

    @property
    def skipped_stages(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.stages if s.decision == "skip")

    @property
    def config(self) -> Config:
        return self.snapshot.config

    @property
    def invalid(self) -> tuple[InvalidFile, ...]:
        """Every test file the plan could not schedule, with its diagnostics."""
        return self.snapshot.invalid_files

    @property
    def complete(self) -> bool:
        """False when a test file is invalid: the plan runs everything else, CI must still fail."""
        return self.snapshot.complete

    @property
    def not_fully_read(self) -> tuple[str, ...]:
        """Valid files a suppressed error left partly unread (a registration or gate dropped)."""
        return self.snapshot.validity.not_fully_read if self.snapshot.validity is not None else ()

    @property
    def matrix(self) -> dict[str, list[int]]:
        return {s.name: [sh.index for sh in s.shards] for s in self.stages}

    @property
    def max_parallel(self) -> dict[str, int]:
        """Each planned stage's `strategy.max-parallel`: its `max_parallel`, else its shard count (at least 1)."""
        return {s.name: s.max_parallel if s.max_parallel is not None else max(1, len(s.shards))
                for s in self.stages}

    def stage(self, name: str) -> StagePlan | None:
        for s in self.stages:
            if s.name == name:
                return s
        return None


def build_plan(snapshot: Snapshot, trigger: Trigger, diff: Diff, splits: SplitCache | None = None) -> Plan:
    snapshot = snapshot.usable()
    policy = resolve(trigger, snapshot.config, snapshot.labels)
    policy, decisions = decide(snapshot, policy, diff)
    warnings = list(policy.warnings)
    stages = tuple(_stage_plan(d, warnings, trigger, snapshot.config, splits) for d in decisions)
    images = []
    for backend in snapshot.config.backends.accelerators:
        # A variant that names its own image runs in it as it is: it needs no build.
        runs = any(s.decision == "run" and s.stage.backend == backend and s.stage.image is None for s in stages)
        images.append((backend, "build" if runs else "skip"))
    if trigger.event in DIFF_EVENTS and not diff.available:
        warnings.insert(0, f"diff unavailable: {diff.reason}")
    if trigger.event in DIFF_EVENTS and diff.available:
        for path in diff.files:
            regs = snapshot.registrations_for(path)
            if regs and not any(selects(r, policy) for r in regs):
                why = "; ".join(sorted({why_not(r, policy) for r in regs}))
                warnings.append(f"{path} changed but is not selected ({why}), so it does not run")
    for path in snapshot.validity.not_fully_read if snapshot.validity is not None else ():
        warnings.append(f"{path} was not fully read: a suppressed error dropped part of it "
                        "(`ci-policy lint --format json` lists the suppressed diagnostics)")
    return Plan(snapshot=snapshot, policy=policy, diff=diff, stages=stages, images=tuple(images),
                warnings=tuple(warnings), hours=plan_hours(decisions, policy, snapshot.config))


def max_parallel_of(stage: Stage, trigger: Trigger, config: Config) -> tuple[int, str] | None:
    """The stage's limit of shards run at once and its reason; None when the stage sets none.

    Priority labels are raw PR labels (`high priority`), read from the trigger: the policy
    keeps only the canonical `run-ci-*` ones.
    """
    limit = stage.max_parallel
    if limit is None:
        return None
    if trigger.event == "pull_request" and limit.priority is not None:
        raised = [label for label in config.pull_request.priority_labels if label in trigger.labels]
        if raised:
            return limit.priority, f"max_parallel {limit.priority}: raised by the PR label {raised[0]}"
    if trigger.event == "schedule" and limit.schedule is not None:
        return limit.schedule, f"max_parallel {limit.schedule}: raised for a schedule event"
    return limit.default, f"max_parallel {limit.default}: the stage's limit"


def _stage_plan(d: StageDecision, warnings: list[str], trigger: Trigger, config: Config,
                splits: SplitCache | None) -> StagePlan:
    parallel = max_parallel_of(d.stage, trigger, config)
    max_parallel, max_parallel_reason = parallel if parallel is not None else (None, None)
    if d.decision == "skip":
        return StagePlan(d.stage, d.decision, d.reasons, (), (), d.not_selected, d.invalid,
                         max_parallel=max_parallel, max_parallel_reason=max_parallel_reason)
    tests = tuple(sorted(d.selected, key=lambda r: r.file))
    split, shards_reason = stage_split(d.stage, ((r.file, r.est_time) for r in tests), splits)
    shards = split.shards
    if len(shards) > 1:
        mean = sum(s.est_seconds for s in shards) / len(shards)
        for r in tests:
            if r.est_time > mean:
                warnings.append(f"{d.stage.key}: {r.file} alone (est {r.est_time:g}s) exceeds the stage's "
                                f"mean shard time ({mean:g}s); the stage cannot finish sooner than this file")
    return StagePlan(d.stage, d.decision, d.reasons, tests, shards, d.not_selected, d.invalid,
                     shards_reason, max_parallel, max_parallel_reason, split.lower_bound, split.optimal)


def shard_of(plan: Plan, stage_name: str, shard: int | None) -> tuple[StagePlan, Shard | None]:
    """The stage and shard a stage job runs (`plan.picking`); errors name what is wrong."""
    stage = planned_stage(plan, stage_name)
    return stage, pick_shard(stage, shard)
