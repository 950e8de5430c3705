"""`ci-policy plan --explain FILE`: why one test file runs where it runs, or why it does not.

- In: a built `Plan` and a repo-relative path (normalised by the caller).
- Out: a frozen `Explanation`: the file's `status`, a one-line `summary`, and for a
  registered file one `StageExplanation` per registration: the stage's decision and its
  reasons (with the shard count and parallelism reasons when configured), whether the
  file itself is selected and why (or why not), its est_time and source, and the shard it
  lands in. An invalid file carries its diagnostics and the stages its readable
  registrations name.
- Statuses, first match wins: `invalid` (listed by the plan, never scheduled),
  `registered`, `unregistered` (a discovered test file without a registration, its CP231
  suppressed), `excluded` (a `discovery.exclude` glob drops it), `not_discovered` (outside
  every discovery root, a name the root's pattern does not match, or no such file).
- Refused: nothing: nothing is read here, the plan already holds the snapshot of the checkout;
  any path gets a status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ci_policy.config.discovery import under
from ci_policy.errors import Diagnostic
from ci_policy.model.registry import Registration
from ci_policy.plan.build import Plan
from ci_policy.plan.policy import Policy

Status = Literal["registered", "invalid", "unregistered", "excluded", "not_discovered"]
StageDecisionKind = Literal["run", "skip", "external"]


@dataclass(frozen=True)
class StageExplanation:
    stage: str
    backend: str
    line: int | None  # of the registration; None for an implicit one
    decision: StageDecisionKind
    reasons: tuple[str, ...]  # the stage's decision, then its size (shards, parallelism) when it runs
    selected: bool
    why: str  # why the file is selected, or why not
    est_time: float
    est_source: str
    shard: int | None  # the shard the file runs in; None when it does not run
    shards: int


@dataclass(frozen=True)
class Explanation:
    file: str
    status: Status
    summary: str
    stages: tuple[StageExplanation, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    invalid_stages: tuple[str, ...] = ()  # an invalid file: the stages its readable registrations name
    changed: bool | None = None  # in the diff; None when the diff is unavailable


def explain(plan: Plan, file: str) -> Explanation:
    changed = file in plan.diff.files if plan.diff.available else None
    partly: tuple[Diagnostic, ...] = ()
    for bad in plan.invalid:
        if bad.file == file and bad.kept:
            partly = bad.diagnostics  # a partly read file: explained by its kept registrations
        elif bad.file == file:
            n = len(bad.diagnostics)
            return Explanation(file, "invalid", f"{file} is an invalid test file: never scheduled until its "
                               f"{'error is' if n == 1 else f'{n} errors are'} fixed",
                               diagnostics=bad.diagnostics, invalid_stages=bad.suites, changed=changed)
    regs = plan.snapshot.registrations_for(file)
    if regs:
        stages = tuple(_stage(plan, reg) for reg in regs)
        running = [s.stage for s in stages if s.shard is not None]
        summary = (f"{file} is registered to {len(stages)} stage{'' if len(stages) == 1 else 's'} "
                   f"({', '.join(s.stage for s in stages)}); "
                   + (f"it runs in {', '.join(running)}" if running else "it runs in no stage"))
        if partly:
            summary += (f"; {len(partly)} invalid registration{'' if len(partly) == 1 else 's'} of it "
                        "never scheduled until fixed")
        return Explanation(file, "registered", summary, stages=stages, diagnostics=partly, changed=changed)
    return Explanation(file, *_not_registered(plan, file), changed=changed)


def _not_registered(plan: Plan, file: str) -> tuple[Status, str]:
    discovery = plan.config.discovery
    if file in plan.snapshot.files:
        return "unregistered", (f"{file} is a test file without a registration (its CP231 is suppressed), "
                                "so no stage runs it")
    roots = [r for r in discovery.roots if under(file, r)]
    if not roots:
        return "not_discovered", (f"{file} is not under a discovery root ({', '.join(discovery.roots)}), "
                                  "so it is not a test file")
    if discovery.excluded(file):
        return "excluded", f"{file} is excluded by discovery.exclude, so it is not a test file"
    if not discovery.name_matches(file):
        pattern = discovery.pattern_for(file)
        shown = pattern if isinstance(pattern, str) else ", ".join(pattern)
        return "not_discovered", (f"{file} does not match the discovery pattern ({shown}) of its root, "
                                  "so it is not a test file")
    return "not_discovered", f"{file} is not in the checkout"


def _stage(plan: Plan, reg: Registration) -> StageExplanation:
    key = plan.config.key_of(reg.backend, reg.suite)
    sp = plan.stage(key)
    if sp is None:  # only external stages are never planned
        return StageExplanation(key, reg.backend, reg.line, "external",
                                ("external: another system runs this stage; ci-policy never plans it",),
                                False, "not planned here: the stage is external", reg.est_time, reg.est_source,
                                None, 0)
    why_not = dict(sp.not_selected)
    selected = reg not in why_not
    why = _why_selected(reg, plan.policy) if selected else f"not selected: {why_not[reg]}"
    shard = next((sh.index for sh in sp.shards if reg.file in sh.files), None)
    if selected and shard is None:
        why += "; the stage is skipped, so it does not run"
    return StageExplanation(key, reg.backend, reg.line, sp.decision, sp.reasons + sp.notes, selected, why,
                            reg.est_time, reg.est_source, shard, len(sp.shards))


def _why_selected(reg: Registration, policy: Policy) -> str:
    if not reg.labels:
        return "selected: it has no labels, so it runs whenever its stage runs"
    included = [label for label in reg.labels if label in policy.include_labels]
    if len(included) == 1:
        return f"selected: label {included[0]} included by {policy.source_of(included[0])}"
    return "selected: labels " + ", ".join(f"{label} (included by {policy.source_of(label)})" for label in included)
