"""Stage selection: which stages run for this trigger and diff, each decision with reasons.

- In: the `Snapshot` (config, registrations), the resolved `Policy`, and the `Diff`.
- Out: a `Selection` result: the policy after auto-selection, one `StageDecision` per
  planned stage (external stages are never planned) with its selected registrations.
- pull_request, `diff_pruned` stages: the stage runs iff it is runnable (has a selected
  registration) and affected by the diff or forced by an explicit label / broad scope
  (`selection.explicit: run`). Each changed path is classified, first match wins:
  an invalid test file (one the snapshot could not read or validate) affects every stage,
  path-owned ones too (fail safe: its registrations are unknown); a registered test file
  affects its own stages (`selection.changed_tests: own_stages`; with `paths` it goes on
  through the rules below as any other path does, with `both` it affects its own stages and
  what the rules below give it, their reasons naming the setting); a path matching
  `selection.rules` or a stage's `paths` affects the stages holding tests with the rules'
  labels (and auto-selects those labels), the stages the rules name (`stages`, name globs)
  and the stages owning it; a `no_gpu_paths` path affects none; any other path affects
  every stage without `paths` (fail safe; a stage that declares `paths` owns its paths and
  is not reached by unknown ones).
  An unavailable diff affects every stage; a diff known to be empty affects none (`skip: no
  file changed (the diff is empty)`).
- A stage with a `command` (a suite without markers) has one test, its command
  (`command_registration`), always selected: it runs when the diff touches its `paths` (or is
  unavailable, or an invalid test file changed), on events that are not diff-pruned, and
  never when `held_back` holds it (cadences, label gates, an untrusted head), its skip
  naming its paths when the diff touches none of them.
- Refused: nothing: its input is the planner's own values, checked when they were read
  (`config.stages`, `model.snapshot`); an invalid test file is planned around, never raised.
- Invalid test files are never scheduled; each stage lists those whose readable
  registrations name it (`StageDecision.invalid`).
- Before any of this, `policy.held_back` may skip a stage: not in the cron's schedule, not
  one of its cadences, an untrusted head (accelerator stages, and stages that may run on
  self-hosted runners), a pull request without its gate labels. An untrusted head's stage
  with no selected test is skipped for that (its reason says so), not for trust, unless its
  diff calls for tests of it: only a stage the PR's labels or diff call for waits for
  `/ok-to-test`.
- An outside contributor's head (untrusted or approved) selects no test by path rule: its
  diff may not choose what runs. A stage whose tests the diff's path rules would select for
  a trusted head, and no maintainer's label selects, is skipped with `UNLABELLED_REASON`,
  naming the labels to add (`/run-ci-<label>`); a stage that runs some tests and not those
  carries the same reason among its `run:` reasons. The required check holds either as it holds a
  head awaiting approval, so such a PR is never green without the tests its diff calls for.
- `push` and `merge_group` are pruned by their diff as pull requests are (`DIFF_EVENTS`).
- Other events, and stages with `diff_pruned: false`, run whenever they have selected tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from ci_policy.config.selection import Rule
from ci_policy.config.stages import Stage
from ci_policy.model.registry import Registration
from ci_policy.model.snapshot import Snapshot
from ci_policy.plan.policy import (
    DIFF_EVENTS,
    UNLABELLED_REASON,
    UNTRUSTED_REASON,
    Policy,
    exclusion_text,
    exclusions,
    held_back,
    selects,
    variant_reason,
    why_not,
)
from ci_policy.read.diff import Diff
from ci_policy.read.globs import deciding_glob, matches_any

MAX_PATHS_SHOWN = 5

Decision = Literal["run", "skip"]
PathKind = Literal["invalid", "test", "rule", "owned", "no_gpu", "other"]


@dataclass(frozen=True)
class PathEffect:
    """What one changed path does: affects some stages, none, or all.

    `stages`: a test file's own stages, or the stages holding tests with a rule's `labels`.
    """

    path: str
    kind: PathKind
    stages: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    # (stage, the stage-name glob of a matching rule that names it)
    targeted: tuple[tuple[str, str], ...] = ()
    # (stage, the glob of its `paths` that decided the match): the stages owning the path
    owned_by: tuple[tuple[str, str], ...] = ()
    # A registered test file's own stages, when `selection.changed_tests: both` sent it through
    # the path rules too (`own_stages` keeps them in `stages`, with kind "test").
    own: tuple[str, ...] = ()
    # The `selection.changed_tests` setting that sent a registered test file through the path
    # rules ("paths" or "both"); "" for any other path.
    by_setting: str = ""


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


def command_registration(stage: Stage) -> Registration:
    """The one test of a stage with a `command`: the command, named by the stage, with its `est_time`.

    Planned, split, listed and run as a test file is (`run` runs the command instead of a file,
    `plan.stagejob.RunSettings.command`); no marker registers it, so it is `implicit`, its
    est_time from the configuration."""
    return Registration(file=stage.name, line=None, backend=stage.backend, suite=stage.name,
                        est_time=stage.est_time or 0, implicit=True, est_source="implicit")


def classify(path: str, snapshot: Snapshot) -> PathEffect:
    if path in snapshot.invalid_paths:
        return PathEffect(path, "invalid")
    regs = snapshot.registrations_for(path)
    config = snapshot.config
    selection = config.selection
    own = tuple(sorted({config.key_of(r.backend, r.suite) for r in regs}))
    if regs and selection.changed_tests == "own_stages":
        return PathEffect(path, "test", stages=own)
    effect = _by_paths(path, snapshot)
    if not regs:
        return effect
    if selection.changed_tests == "both":
        if effect.kind in ("no_gpu", "other"):  # no rule and no stage's paths: its own stages alone
            return PathEffect(path, "test", stages=own)
        return replace(effect, own=own, by_setting="both")
    return replace(effect, by_setting="paths")


def _by_paths(path: str, snapshot: Snapshot) -> PathEffect:
    """What `path` affects through the path rules, stage `paths`, `no_gpu_paths` or none of them."""
    config = snapshot.config
    selection = config.selection
    owned_by = tuple((stage.key, glob) for stage in config.stages
                     if stage.paths and (glob := deciding_glob(stage.paths, path)) is not None)
    matched: list[Rule] = [rule for rule in selection.rules if matches_any(rule.paths, path)]
    if matched:
        labels = tuple(sorted({label for rule in matched for label in rule.labels}))
        stages = tuple(sorted(snapshot.suites_labelled(labels)))
        targeted = tuple(sorted({(stage.key, glob) for rule in matched for glob in rule.stages
                                 for stage in config.stages if stage.matches(glob)}))
        return PathEffect(path, "rule", stages=stages, labels=labels, targeted=targeted, owned_by=owned_by)
    if owned_by:
        return PathEffect(path, "owned", owned_by=owned_by)
    if matches_any(selection.no_gpu_paths, path):
        return PathEffect(path, "no_gpu")
    return PathEffect(path, "other")


def decide(snapshot: Snapshot, policy: Policy, diff: Diff) -> tuple[Policy, tuple[StageDecision, ...]]:
    """`snapshot` is `usable()`: its invalid files have no registrations left to select."""
    config = snapshot.config
    pr = policy.event in DIFF_EVENTS  # a pull request, or a push or merge queue entry pruned alike
    effects = [classify(p, snapshot) for p in diff.files] if (pr and diff.available) else []
    owning = any(stage.paths for stage in config.stages if not stage.external)

    # Labels of explicit requests and broad scopes force their stages; auto-selected ones do not.
    forcing = set(policy.include_labels) if config.selection.explicit == "run" else set()
    # A fork's diff must not choose what runs on accelerator runners: a maintainer's labels do.
    diff_labels = [(label, f"a change to {e.path}") for e in effects if e.kind == "rule" for label in e.labels]
    # What the same diff would select for a trusted head: the tests an outside contributor's
    # diff calls for, which wait for a maintainer's labels rather than pass unrun.
    trusted_view = None if policy.auto_selects or not diff_labels else policy.with_labels(diff_labels)
    policy = policy.with_labels(diff_labels if policy.auto_selects else [])

    # Whether a test is selected, and why not, depend on its labels, nightly flag and disabled
    # reason only: decided once per such combination, not once per test of a large repository.
    verdicts: dict[tuple[str | None, bool, tuple[str, ...]], str | None] = {}

    def why_left_out(r: Registration) -> str | None:
        """None when `r` is selected, else why not."""
        key = (r.disabled, r.nightly, r.labels)
        if key not in verdicts:
            verdicts[key] = None if selects(r, policy) else why_not(r, policy)
        return verdicts[key]

    by_stage: dict[tuple[str, str], list[Registration]] = {}
    for r in snapshot.registrations:
        stage_of = (r.backend, r.suite)
        group = by_stage.get(stage_of)
        if group is None:  # not `setdefault`, which makes a list for every registration
            group = by_stage[stage_of] = []
        group.append(r)
    decisions = []
    partial: dict[str, str] = {}
    # A stage with variants is planned as its variants: each the same tests, on its own runners.
    for stage in config.planned_stages:
        if stage.external:
            continue
        regs = [command_registration(stage)] if stage.command else by_stage.get((stage.backend, stage.name), [])
        invalid = tuple(f.file for f in snapshot.invalid_files if stage.base_key in f.suites)
        not_selected: tuple[tuple[Registration, str], ...] = ()
        # A command has no labels, nightly flag or disabled reason: the stage's cadences,
        # label gates, trust and paths decide whether it runs, nothing else.
        if stage.command:
            selected = tuple(regs)
        else:  # one pass over a stage's tests (thousands in a large repository)
            chosen: list[Registration] = []
            left_out: list[tuple[Registration, str]] = []
            for r in regs:
                why = why_left_out(r)
                if why is None:
                    chosen.append(r)
                else:
                    left_out.append((r, why))
            selected, not_selected = tuple(chosen), tuple(left_out)
        called = _called_by_diff(regs, selected, trusted_view)
        held = held_back(stage, policy, config)
        if held and not selected and not called and held[0].startswith(UNTRUSTED_REASON):
            # The PR's labels and diff call for no test of this stage, trusted or not: its skip
            # waits for no approval (the required check does not hold it back for one).
            held = ()
        if not held and called and not selected:
            held = (_unlabelled(called, trusted_view),)
        elif called and selected and not held:
            # Some of its tests run (a maintainer's labels select them); the ones only the diff
            # calls for do not, and hold the required check as a skipped stage would.
            partial[stage.key] = f"run: {_unlabelled(called, trusted_view)}; the stage runs without them"
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
            what = "its command" if stage.command else f"{len(selected)} selected"
            decisions.append(StageDecision(stage, "run", (f"run: {why} ({what})",),
                                           selected, not_selected, invalid))
            continue
        reasons = _affected_reasons(stage, diff, effects, owning)
        # A broad inclusion that excludes one of a test's labels did not include that test.
        # Only a test's labels count here (`exclusions` reads no other field): one test of each
        # set of labels, not every selected test, each asking `source_of` per label.
        sources = {(label, source) for r in {r.labels: r for r in selected}.values() for label in r.labels
                   if label in forcing and (source := policy.source_of(label)) is not None
                   and source not in {s for _label, s in exclusions(r, policy)}}
        requested = {src for label, src in sources if src == f"run-ci-{label}"}
        reasons += [f"run: requested by {src}" for src in sorted(requested)]
        included = {src for label, src in sources if src != f"run-ci-{label}"}
        reasons += [f"run: included by {src}" for src in sorted(included)]
        if reasons:
            decisions.append(StageDecision(stage, "run", tuple(reasons), selected, not_selected, invalid))
        else:
            decisions.append(StageDecision(stage, "skip", (_untouched_reason(stage, effects),),
                                           selected, not_selected, invalid))
    for i, d in enumerate(decisions):
        extra = [partial[d.stage.key]] if d.stage.key in partial else []
        placed = variant_reason(d.stage, policy) if d.decision == "run" else None
        if extra or placed:
            decisions[i] = replace(d, reasons=(*d.reasons, *extra, *([placed] if placed else [])))
    return policy, tuple(decisions)


def _called_by_diff(regs: list[Registration], selected: tuple[Registration, ...],
                    trusted_view: Policy | None) -> tuple[Registration, ...]:
    """The tests of a stage that the diff's path rules select for a trusted head but nothing
    selects for this one (none for a trusted head, or a diff that selects no label)."""
    if trusted_view is None:
        return ()
    chosen = set(selected)
    return tuple(r for r in regs if r not in chosen and selects(r, trusted_view))


def _unlabelled(called: tuple[Registration, ...], trusted_view: Policy | None) -> str:
    labels = sorted({label for r in called for label in r.labels
                     if trusted_view is not None and (source := trusted_view.source_of(label)) is not None
                     and source.startswith("a change to ")})
    asked = ", ".join(f"/run-ci-{label}" for label in labels)
    return f"{UNLABELLED_REASON}: {len(called)} test(s) need {', '.join(labels)} ({asked})"


def _affected_reasons(stage: Stage, diff: Diff, effects: list[PathEffect], owning: bool) -> list[str]:
    """`owning`: some planned stage declares `paths`, so unknown paths reach only the others."""
    if not diff.available:
        return [f"run: the diff is unavailable ({diff.reason}), so every runnable stage runs"]
    everything = []
    invalid = [e.path for e in effects if e.kind == "invalid"]
    if invalid:
        verb = "is an invalid test file" if len(invalid) == 1 else "are invalid test files"
        everything.append(f"run: {_shown(invalid)} changed and {verb}, so every stage runs (fail safe)")
    other = [e.path for e in effects if e.kind == "other"]
    if other and not stage.paths:
        verb = "matches" if len(other) == 1 else "match"
        setting = _setting(effects, other)
        if owning:
            everything.append(f"run: {_shown(other)} {verb} no rule and no stage's paths, so every stage "
                              f"without paths runs{setting}")
        else:
            everything.append(f"run: {_shown(other)} {verb} no rule, so every stage runs{setting}")
    if everything:
        return everything
    key = stage.base_key  # a variant is affected as its stage is
    tests = [e.path for e in effects if (e.kind == "test" and key in e.stages) or key in e.own]
    reasons = []
    if tests:
        reasons.append(f"run: {_shown(tests)} changed")
    ruled = [e for e in effects if e.kind == "rule" and key in e.stages]
    if ruled:
        labels = sorted({label for e in ruled for label in e.labels})
        reasons.append(f"run: {_shown(e.path for e in ruled)} selects {', '.join(labels)}"
                       + _setting(effects, [e.path for e in ruled]))
    for glob, paths in _by_glob(effects, key, "targeted").items():
        verb = "matches" if len(paths) == 1 else "match"
        reasons.append(f"run: {_shown(paths)} {verb} a selection rule for stages {glob}" + _setting(effects, paths))
    for glob, paths in _by_glob(effects, key, "owned_by").items():
        reasons.append(f"run: {_shown(paths)} changed under its paths ({glob})" + _setting(effects, paths))
    return reasons


def _setting(effects: list[PathEffect], paths: list[str]) -> str:
    """Names `selection.changed_tests` when it sent some of `paths` (registered test files) there."""
    settings = sorted({e.by_setting for e in effects if e.by_setting and e.path in paths})
    return f" (selection.changed_tests: {settings[0]})" if settings else ""


def _by_glob(effects: list[PathEffect], stage: str, field: Literal["targeted", "owned_by"]) -> dict[str, list[str]]:
    """glob -> the changed paths that reach `stage` through it, in glob then diff order."""
    out: dict[str, list[str]] = {}
    for e in effects:
        for name, glob in getattr(e, field):
            if name == stage:
                out.setdefault(glob, []).append(e.path)
    return dict(sorted(out.items()))


def _untouched_reason(stage: Stage, effects: list[PathEffect]) -> str:
    if not effects:  # a diff known to be empty (`Diff.no_changes()`)
        return "skip: no file changed (the diff is empty)"
    touched = _shown(e.path for e in effects)
    if stage.command:
        return f"skip: the diff touches only {touched}: nothing under its paths ({', '.join(stage.paths)})"
    if stage.paths:
        return f"skip: the diff touches only {touched}: none of its test files, nothing under its paths"
    return f"skip: the diff touches only {touched}"


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
    # Tests a broad inclusion would take but for a label it excludes (exclusion means exclusion).
    include = set(policy.include_labels)
    excluded = [r for r in eligible if not include.isdisjoint(r.labels) and exclusions(r, policy)]
    left = {id(r) for r in excluded}
    needs = sorted({label for r in eligible if id(r) not in left for label in r.labels})
    if not excluded:
        return f"no selected tests (its tests need one of: {', '.join(needs)})"
    why = exclusion_text(pair for r in excluded for pair in exclusions(r, policy))
    if not needs:
        return f"no selected tests (its tests: {why})"
    return f"no selected tests (its tests need one of: {', '.join(needs)}, or: {why})"

