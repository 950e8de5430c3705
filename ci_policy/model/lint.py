"""`ci-policy lint`: every problem of a checkout, errors and warnings, as coded diagnostics.

- In: a checkout root and optional config path.
- Out: a `LintReport` of `Diagnostic`s: errors (configuration, labels, discovery and
  reads, registrations, gate declarations and requirements) and warnings (CP9xx: a stage
  with no registrations and no command, a label no test uses, a missing or stale estimates file, each
  disabled registration with its reason, the stages whose `runs_on` is still init's
  placeholder `PLACEHOLDER_RUNNER`, once for them all), all located and sorted; and the GitHub Actions
  workflows of `lint.workflows` read as data and checked against the stages (CP6xx, see
  `ci_policy.model.workflows`); a stage command's working directory that `run` would refuse
  (missing, not a directory, a symlink on the way); a quarantine past its `until` (CP233) or
  ending within a week (CP909), judged on `today` (`model.quarantine`).
- Refused: nothing raised for bad input: unusable configuration or labels, and a checkout
  the core cannot read at all, become errors.
"""

from __future__ import annotations

import datetime
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_policy.config.pull_request import gate_near_misses
from ci_policy.errors import Diagnostic, InputError, InputErrors, read_failure, warning
from ci_policy.gates.requirements import violations
from ci_policy.model.discovery import IndexEntry
from ci_policy.model.quarantine import calendar_problems
from ci_policy.model.scan import ScanCache, Scanner
from ci_policy.model.snapshot import Snapshot, load_snapshot
from ci_policy.model.suppress import apply, unused
from ci_policy.model.workflow_cache import cached_workflows
from ci_policy.model.workflows import workflow_diagnostics
from ci_policy.read.checkout import check_no_symlinks
from ci_policy.read.names import WORKFLOW_ONLY_LABELS
from ci_policy.read.workflows import read_workflows

# The runner label `ci-policy init` writes for a stage whose runners no workflow names: any
# label passes the configuration's load, so the starter plans as written, and lint warns
# (CP908) once, listing every stage still carrying it.
PLACEHOLDER_RUNNER = "TODO-runner"


@dataclass(frozen=True)
class LintReport:
    errors: tuple[Diagnostic, ...]
    warnings: tuple[Diagnostic, ...]
    snapshot: Snapshot | None = None
    suppressed: tuple[Diagnostic, ...] = ()  # accepted by a suppression: counted and listed, never failing

    @property
    def ok(self) -> bool:
        return not self.errors


def lint(repo: Path, config_path: str | Path | None = None, *, cache: ScanCache | None = None,
         listing: Callable[[], Mapping[str, IndexEntry] | None] | None = None,
         scanner: Scanner | None = None, today: datetime.date | None = None) -> LintReport:
    """`today`: the day quarantines are judged on (CP233, CP909); None: today in UTC."""
    try:
        snapshot = load_snapshot(repo, config_path, cache=cache, listing=listing, scanner=scanner)
    except InputErrors as exc:
        return LintReport(errors=exc.errors, warnings=())
    except InputError as exc:
        return LintReport(errors=(exc.diagnostic,), warnings=())
    except (OSError, RecursionError, MemoryError) as exc:
        return LintReport(errors=(read_failure(exc),), warnings=())
    rules = snapshot.config.lint.ignore
    calendar = calendar_problems(snapshot.config, today or datetime.datetime.now(datetime.timezone.utc).date())
    required = apply([*violations(snapshot), *workflow_problems(repo, snapshot, cache),
                      *command_problems(repo, snapshot), *(d for d in calendar if d.severity == "error")],
                     snapshot.suppressions, rules)
    warned = apply([*warnings_of(snapshot), *(d for d in calendar if d.severity == "warning")],
                   snapshot.suppressions, rules)
    used = snapshot.used_suppressions | required.used | warned.used
    errors = sorted(set(snapshot.errors) | set(required.kept), key=Diagnostic.sort_key)
    warnings = sorted([*warned.kept, *unused(snapshot.suppressions, snapshot.config, used)], key=Diagnostic.sort_key)
    suppressed = sorted({*snapshot.suppressed, *required.suppressed, *warned.suppressed}, key=Diagnostic.sort_key)
    return LintReport(errors=tuple(errors), warnings=tuple(warnings), snapshot=snapshot, suppressed=tuple(suppressed))


def command_problems(repo: Path, snapshot: Snapshot) -> list[Diagnostic]:
    """A stage command's working directory that is missing, not a directory or reached through a
    symlink (CP402, CP403, CP401), located at the stage: `run` would refuse it before it starts."""
    config = snapshot.config
    out = []
    for i, stage in enumerate(config.stages):
        if not stage.command or stage.working_directory is None:
            continue
        rel = stage.working_directory
        where: dict[str, Any] = {"path": config.path, "line": stage.line}
        try:
            st = check_no_symlinks(repo, rel, what=f"stages[{i}].working_directory")
        except InputError as exc:
            out.append(Diagnostic(exc.message, **where, hint=exc.hint, code=exc.code))
            continue
        if st is None:
            out.append(Diagnostic(f"stages[{i}].working_directory: {rel} does not exist", **where, code="CP402",
                                  hint=f"create it, or name the directory stage {stage.name}'s command runs in"))
        elif not stat.S_ISDIR(st.st_mode):
            out.append(Diagnostic(f"stages[{i}].working_directory: {rel} is not a directory", **where, code="CP403",
                                  hint=f"name the directory stage {stage.name}'s command runs in"))
    return out


def workflow_problems(repo: Path, snapshot: Snapshot, cache: ScanCache | None = None) -> list[Diagnostic]:
    """The CP6xx errors of the workflows `lint.workflows` names (none when it is false); each
    workflow composed once and then stored in `cache` by its text (`model.workflow_cache`)."""
    directory = snapshot.config.lint.workflows
    if directory is None:
        return []
    workflows, problems = (read_workflows(repo, directory) if cache is None
                           else cached_workflows(repo, directory, cache))
    return [*problems, *workflow_diagnostics(snapshot.config, bool(snapshot.gates), workflows)]


def warnings_of(snapshot: Snapshot) -> list[Diagnostic]:
    config, labels = snapshot.config, snapshot.labels
    out: list[Diagnostic] = []
    used_stages = {(r.backend, r.suite) for r in snapshot.registrations}
    for stage in config.stages:
        if (stage.backend, stage.name) not in used_stages and not stage.command:  # a command runs its suite itself
            out.append(warning(f"stage {stage.key} has no registered test files",
                               path=config.path, line=stage.line, code="CP901",
                               hint=f"register tests with suite={stage.name!r} or remove the stage"))
    used_labels = {label for r in snapshot.registrations for label in r.labels}
    for label in labels.labels:
        if label.name not in used_labels:
            out.append(warning(f"label {label.name!r} is not used by any test",
                               path=labels.path, line=label.line, code="CP902",
                               hint=f"run-ci-{label.name} selects nothing; use it in a registration or remove it"))
    if snapshot.estimates_missing:
        out.append(warning(f"estimates file {config.estimates_file} does not exist yet; the est_time literals apply",
                           path=config.path, line=config.line_of("estimates_file"), code="CP903",
                           hint=f"create it with ci-policy tune --write-estimates {config.estimates_file}"))
    for file, suite in snapshot.unused_estimates:
        out.append(warning(f"the estimates file lists {file} for suite {suite}, which no registration matches",
                           path=config.estimates_file, code="CP904",
                           hint="regenerate it with ci-policy tune --write-estimates"))
    known_pr_labels = [f"run-ci-{name}" for name in labels.names] + [s.name for s in config.scopes]
    for gate, near, field, line in gate_near_misses(config.gate_references(),
                                                    [*known_pr_labels, *WORKFLOW_ONLY_LABELS]):
        out.append(warning(f"{field}: gate label {gate!r} is one edit from {near!r}",
                           path=config.path, line=line, code="CP907",
                           hint=f"a PR must carry exactly {gate!r} to open this gate; correct it if you meant "
                                f"{near!r}"))
    placeholders = [stage for stage in config.stages if PLACEHOLDER_RUNNER in stage.runs_on]
    if placeholders:
        count = len(placeholders)
        out.append(warning(f"runs_on of {count} stage{'s' if count != 1 else ''} is still the placeholder "
                           f"{PLACEHOLDER_RUNNER!r}: {', '.join(s.name for s in placeholders)}",
                           path=config.path, line=placeholders[0].line, code="CP908",
                           hint=f"replace {PLACEHOLDER_RUNNER!r} with the runner labels of each stage's jobs, "
                                "e.g. runs_on: [h200, 4gpu]"))
    for reg in snapshot.registrations:
        if reg.disabled is not None:
            out.append(warning(f"{reg.marker} for suite {reg.suite} is disabled: {reg.disabled}",
                               path=reg.file, line=reg.line, col=reg.col, code="CP905"))
    return sorted(out, key=Diagnostic.sort_key)
