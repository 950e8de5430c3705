"""Accelerator hours: what a plan schedules on accelerator runners and what it skips, and why.

- In: the stage decisions of a plan (`plan.selection.StageDecision`: the tests each stage
  selected and those it left out, with why), the resolved `Policy` and the configuration's
  `accelerators` (`config.accelerators`).
- Out: `Hours`: per stage of an accelerator backend, its accelerators per runner (the most
  specific `accelerators` entry, else 1), the hours it schedules (each selected test's
  est_time x gpus, summed; 0 for a skipped stage) and the hours it skips, grouped by why:
  `diff` (diff pruning: the diff leaves the stage untouched), `labels` (a test's labels are not
  included, or a label gate holds the stage), `cadence` (the event's cadence or schedule does
  not plan the stage, or a test is nightly-only or not nightly), `trust` (an untrusted head, or
  labels only an outside diff calls for). Costs (runner hours x `cost_per_hour`) where the
  stage's entry gives one. `runner_of(stage, config)`: that runner's accelerators and price,
  the one matching the plan and `ci-policy report` share.
- Refused: nothing: its input is the planner's own values, checked when they were read
  (`config.accelerators`, `model.registry`).
- A test counts under its own reason first (its labels, its cadence), else under its stage's
  skip reason; a disabled test counts nowhere (no plan would run it). Stages of a
  non-accelerator backend (cpu) count no hours.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ci_policy.config.accelerators import DEFAULT_GPUS, Accelerator, accelerator_of
from ci_policy.config.stages import Stage
from ci_policy.config.top import Config
from ci_policy.model.registry import Registration
from ci_policy.model.skips import SKIP_GROUPS, SkipGroup
from ci_policy.plan.policy import UNLABELLED_REASON, UNTRUSTED_REASON, Policy, nightly_split
from ci_policy.plan.selection import StageDecision

HOUR = 3600.0


@dataclass(frozen=True)
class StageHours:
    stage: str
    gpus: int
    entry: int | None  # the index of its `accelerators` entry; None: the default of 1
    cost_per_hour: float | None
    scheduled_seconds: float  # runner seconds (est_time of the selected tests)
    skipped_seconds: tuple[tuple[SkipGroup, float], ...]  # runner seconds per reason, in SKIP_GROUPS order

    @property
    def scheduled(self) -> float:
        """Accelerator hours scheduled."""
        return self.scheduled_seconds * self.gpus / HOUR

    def skipped(self, reason: SkipGroup | None = None) -> float:
        """Accelerator hours skipped, for one reason or all."""
        return sum(sec for why, sec in self.skipped_seconds if reason in (None, why)) * self.gpus / HOUR

    @property
    def scheduled_cost(self) -> float | None:
        return None if self.cost_per_hour is None else self.scheduled_seconds / HOUR * self.cost_per_hour

    @property
    def skipped_cost(self) -> float | None:
        total = sum(sec for _, sec in self.skipped_seconds)
        return None if self.cost_per_hour is None else total / HOUR * self.cost_per_hour


@dataclass(frozen=True)
class Hours:
    stages: tuple[StageHours, ...] = ()

    @property
    def scheduled(self) -> float:
        return sum(s.scheduled for s in self.stages)

    def skipped(self, reason: SkipGroup | None = None) -> float:
        return sum(s.skipped(reason) for s in self.stages)

    @property
    def by_reason(self) -> tuple[tuple[SkipGroup, float], ...]:
        """Skipped accelerator hours per reason that skipped any, in SKIP_GROUPS order."""
        return tuple((r, self.skipped(r)) for r in SKIP_GROUPS
                     if any(why == r for s in self.stages for why, _ in s.skipped_seconds))

    @property
    def priced(self) -> bool:
        return any(s.cost_per_hour is not None for s in self.stages)

    @property
    def scheduled_cost(self) -> float | None:
        costs = [c for s in self.stages if (c := s.scheduled_cost) is not None]
        return sum(costs) if self.priced else None

    @property
    def skipped_cost(self) -> float | None:
        costs = [c for s in self.stages if (c := s.skipped_cost) is not None]
        return sum(costs) if self.priced else None


def test_reason(reg: Registration, policy: Policy) -> SkipGroup | None:
    """Why the policy leaves `reg` out, as a group (`policy.why_not` in words); None when disabled."""
    if reg.disabled is not None:
        return None
    if nightly_split(reg, policy) is not None or (reg.nightly and not policy.admit_nightly):
        return "cadence"
    return "labels"


def stage_reason(reasons: Iterable[str]) -> SkipGroup:
    """The group of a skipped stage's first reason (`plan.selection`, `plan.policy.held_back`)."""
    first = next(iter(reasons), "")
    text = first.removeprefix("skip: ")
    if text.startswith((UNTRUSTED_REASON, UNLABELLED_REASON)):
        return "trust"
    if text.startswith("not in this schedule") or " cadence is not one of " in text:
        return "cadence"
    if text.startswith(("the diff touches only", "no file changed")):
        return "diff"
    return "labels"  # a label gate: the PR lacks a label the stage (or its variant) requires


@dataclass(frozen=True)
class Runner:
    """What one runner of a stage holds: its accelerators and its price per hour (None: not given)."""

    gpus: int
    cost_per_hour: float | None
    entry: Accelerator | None  # the `accelerators` entry that says so; None: the default


def runner_of(stage: Stage, config: Config) -> Runner:
    """The accelerators and price of `stage`'s runner: the most specific `accelerators` entry, else
    `DEFAULT_GPUS` for an accelerator backend and 0 for another (which counts no hours)."""
    if not config.is_accelerator(stage.backend):
        return Runner(0, None, None)
    entry = accelerator_of(config.accelerators, stage)
    return Runner(entry.gpus if entry else DEFAULT_GPUS, entry.cost_per_hour if entry else None, entry)


def stage_hours(d: StageDecision, policy: Policy, config: Config) -> StageHours:
    runner = runner_of(d.stage, config)
    entry = runner.entry
    skipped: dict[SkipGroup, float] = {}
    for reg, _why in d.not_selected:
        reason = test_reason(reg, policy)
        if reason is not None:
            skipped[reason] = skipped.get(reason, 0.0) + reg.est_time
    scheduled = sum(r.est_time for r in d.selected)
    if d.decision == "skip" and d.selected:
        reason = stage_reason(d.reasons)
        skipped[reason] = skipped.get(reason, 0.0) + scheduled
        scheduled = 0.0
    return StageHours(stage=d.stage.key, gpus=runner.gpus,
                      entry=config.accelerators.index(entry) if entry else None,
                      cost_per_hour=runner.cost_per_hour, scheduled_seconds=scheduled,
                      skipped_seconds=tuple((r, skipped[r]) for r in SKIP_GROUPS if r in skipped))


def plan_hours(decisions: Iterable[StageDecision], policy: Policy, config: Config) -> Hours:
    return Hours(tuple(stage_hours(d, policy, config) for d in decisions if config.is_accelerator(d.stage.backend)))
