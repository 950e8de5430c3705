"""Stage selection: which stages run for this trigger and diff, each decision with reasons.

- In: the `Snapshot` (config, registrations), the resolved `Policy`, and the `Diff`.
- Out: a `Selection` result: the policy after auto-selection, one `StageDecision` per
  planned stage (external stages are never planned) with its selected registrations.
- pull_request, `diff_pruned` stages: the stage runs iff it is runnable (has a selected
  registration) and affected by the diff or forced by an explicit label / broad scope
  (`selection.explicit: run`). Each changed path is classified, first match wins:
  an invalid test file (one the snapshot could not read or validate) affects every stage
  (fail safe: its registrations are unknown); a registered test file affects its own
  stages; a `selection.rules` path affects the stages holding tests with the rule's
  labels and auto-selects those labels; a `no_gpu_paths` path affects none; any other
  path affects every stage (fail safe).
  An unavailable diff affects every stage.
- Invalid test files are never scheduled; each stage lists those whose readable
  registrations name it (`StageDecision.invalid`).
- Before any of this, `policy.held_back` may skip a stage: not in the cron's schedule, not
  one of its cadences, a pull request without its gate labels.
- `push` and `merge_group` are pruned by their diff as pull requests are (`DIFF_EVENTS`).
- Other events, and stages with `diff_pruned: false`, run whenever they have selected tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ci_policy.config import Rule, Stage
from ci_policy.model.registry import Registration
from ci_policy.model.snapshot import Snapshot
from ci_policy.plan.policy import DIFF_EVENTS, Policy, held_back, selects, why_not
from ci_policy.read.diff import Diff
from ci_policy.read.globs import matches

MAX_PATHS_SHOWN = 5

Decision = Literal["run", "skip"]
PathKind = Literal["invalid", "test", "rule", "no_gpu", "other"]


@dataclass(frozen=True)
class PathEffect:
    """What one changed path does: affects some stages, none, or all."""

    path: str
    kind: PathKind
    stages: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class StageDecision:
    stage: Stage
    decision: Decision
    reasons: tuple[str, ...]
    selected: tuple[Registration, ...]
    not_selected: tuple[tuple[Registration, str], ...] = ()
    # Invalid test files (see `Snapshot.usable`) whose readable registrations name this stage.
    invalid: tuple[str, ...] = ()


def _shown(items: Iterable[str]) -> str:
    paths = list(items)
    head = ", ".join(paths[:MAX_PATHS_SHOWN])
    more = len(paths) - MAX_PATHS_SHOWN
    return head + (f" and {more} more" if more > 0 else "")


def classify(path: str, snapshot: Snapshot) -> PathEffect:
    if any(f.file == path for f in snapshot.invalid_files):
        return PathEffect(path, "invalid")
    regs = snapshot.registrations_for(path)
    if regs:
        return PathEffect(path, "test", stages=tuple(sorted({r.suite for r in regs})))
    selection = snapshot.config.selection
    matched: list[Rule] = [rule for rule in selection.rules if any(matches(g, path) for g in rule.paths)]
    if matched:
        labels = tuple(sorted({label for rule in matched for label in rule.labels}))
        stages = tuple(sorted({r.suite for r in snapshot.registrations if set(r.labels) & set(labels)}))
        return PathEffect(path, "rule", stages=stages, labels=labels)
    if any(matches(g, path) for g in selection.no_gpu_paths):
        return PathEffect(path, "no_gpu")
    return PathEffect(path, "other")


def decide(snapshot: Snapshot, policy: Policy, diff: Diff) -> tuple[Policy, tuple[StageDecision, ...]]:
    """`snapshot` is `usable()`: its invalid files have no registrations left to select."""
    config = snapshot.config
    pr = policy.event in DIFF_EVENTS  # a pull request, or a push or merge queue entry pruned alike
    effects = [classify(p, snapshot) for p in diff.files] if (pr and diff.available) else []

    # Labels of explicit requests and broad scopes force their stages; auto-selected ones do not.
    forcing = set(policy.include_labels) if config.selection.explicit == "run" else set()
    auto = [(label, f"a change to {e.path}") for e in effects if e.kind == "rule" for label in e.labels]
    policy = policy.with_labels(auto)

    decisions = []
    for stage in config.stages:
        if stage.external:
            continue
        regs = [r for r in snapshot.registrations if r.suite == stage.name]
        invalid = tuple(f.file for f in snapshot.invalid_files if stage.name in f.suites)
        selected = tuple(r for r in regs if selects(r, policy))
        not_selected = tuple((r, why_not(r, policy)) for r in regs if not selects(r, policy))
        held = held_back(stage, policy, config)
        if held:
            decisions.append(StageDecision(stage, "skip", tuple(f"skip: {h}" for h in held), selected,
                                           not_selected, invalid))
            continue
        if not selected:
            reason = (f"no schedulable tests ({len(invalid)} invalid, listed below)" if invalid and not regs
                      else _no_tests_reason(regs, policy))
            decisions.append(StageDecision(stage, "skip", (f"skip: {reason}",), (), not_selected, invalid))
            continue
        if not (pr and stage.diff_pruned):
            why = (f"{policy.event} event runs every stage with selected tests" if not pr
                   else "stage is not diff-pruned")
            if policy.schedule is not None:
                why = (f"schedule event runs every stage of cadences.schedules[{policy.schedule.cron!r}] "
                       f"({policy.schedule.describe()}) with selected tests")
            decisions.append(StageDecision(stage, "run", (f"run: {why} ({len(selected)} selected)",),
                                           selected, not_selected, invalid))
            continue
        reasons = _affected_reasons(stage, diff, effects)
        sources = {(label, source) for r in selected for label in r.labels
                   if label in forcing and (source := policy.source_of(label)) is not None}
        requested = {src for label, src in sources if src == f"run-ci-{label}"}
        reasons += [f"run: requested by {src}" for src in sorted(requested)]
        included = {src for label, src in sources if src != f"run-ci-{label}"}
        reasons += [f"run: included by {src}" for src in sorted(included)]
        if reasons:
            decisions.append(StageDecision(stage, "run", tuple(reasons), selected, not_selected, invalid))
        else:
            touched = [e.path for e in effects]
            decisions.append(StageDecision(stage, "skip", (f"skip: the diff touches only {_shown(touched)}",),
                                           selected, not_selected, invalid))
    return policy, tuple(decisions)


def _affected_reasons(stage: Stage, diff: Diff, effects: list[PathEffect]) -> list[str]:
    if not diff.available:
        return [f"run: the diff is unavailable ({diff.reason}), so every runnable stage runs"]
    everything = []
    invalid = [e.path for e in effects if e.kind == "invalid"]
    if invalid:
        verb = "is an invalid test file" if len(invalid) == 1 else "are invalid test files"
        everything.append(f"run: {_shown(invalid)} changed and {verb}, so every stage runs (fail safe)")
    other = [e.path for e in effects if e.kind == "other"]
    if other:
        verb = "matches" if len(other) == 1 else "match"
        everything.append(f"run: {_shown(other)} {verb} no rule, so every stage runs")
    if everything:
        return everything
    tests = [e.path for e in effects if e.kind == "test" and stage.name in e.stages]
    reasons = []
    if tests:
        reasons.append(f"run: {_shown(tests)} changed")
    ruled = [e for e in effects if e.kind == "rule" and stage.name in e.stages]
    if ruled:
        labels = sorted({label for e in ruled for label in e.labels})
        reasons.append(f"run: {_shown(e.path for e in ruled)} selects {', '.join(labels)}")
    return reasons


def _no_tests_reason(regs: list[Registration], policy: Policy) -> str:
    if not regs:
        return "no registered tests"
    enabled = [r for r in regs if r.disabled is None]
    if not enabled:
        return f"no selected tests (all {len(regs)} disabled)"
    eligible = [r for r in enabled if not r.nightly or policy.admit_nightly]
    if not eligible:
        return f"no selected tests (its tests are nightly-only; the {policy.cadence} cadence does not admit them)"
    if policy.nightly_only:
        eligible = [r for r in eligible if r.nightly]
        if not eligible:
            return (f"no selected tests (none of its tests is nightly; the {policy.cadence} cadence selects only "
                    "nightly tests: cadences.nightly_selects: nightly_only)")
    needs = sorted({label for r in eligible for label in r.labels})
    return f"no selected tests (its tests need one of: {', '.join(needs)})"

