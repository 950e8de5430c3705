"""`init`: write a starter configuration (and labels file) inferred from a checkout, then lint it.

- In: an `InitRequest`: the checkout, the configuration file to write (None: DIR/.github/ci-policy.yml),
  whether to overwrite.
- Out: an `Initialised`: the `Starter` (`ci_policy.model.starter`: its stages with the runners,
  cadences and label gates read from the checkout's workflows, its discovery roots, labels, notes
  and placeholders), the files written as shown, the configuration as shown, the lint of the
  written files as they are (a runs_on init could not read is the placeholder label lint warns
  about once, CP908) and `ok` (lint finds no error). The files are written whether or not it is `ok`.
- Refused: with nothing written: an existing configuration or labels file without `force`; a
  target path through a symlink (even with `force`); a checkout with no marker call
  (`InputErrors`); a file that cannot be written (`InputError`).
- `init_workflows(WorkflowsRequest)`: the one caller workflow `.github/workflows/ci-policy.yml`
  (`ci_policy.render.caller`), pinned to the given ci-policy commit, with the pipeline's schedules
  of the checkout's configuration (none without one; a --config named must exist) and an input
  per PR-body pin of its `.github/ci-commands.json` (read with the configuration's labels: none
  without either). Out: a `WorkflowsWritten`. Refused: a commit that
  is not 40 lowercase hex (`UsageError` at --ci-policy-ref); an existing file without `force`, a
  symlink, a configuration or policy that does not read, a cron the tuning uses (nothing written).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ci_policy.adapters.github.access import parse_access_policy
from ci_policy.config.load import load_config
from ci_policy.errors import Diagnostic, InputError, InputErrors, UsageError
from ci_policy.model.lint import PLACEHOLDER_RUNNER as PLACEHOLDER_RUNNER  # the runs_on label init writes
from ci_policy.model.lint import LintReport, lint
from ci_policy.model.starter import LABELS_FILE, Starter, starter
from ci_policy.read.checkout import check_no_symlinks, read_text
from ci_policy.read.labels import load_labels
from ci_policy.render.caller import SHA_RE, caller_workflow

DEFAULT_SHOWN = ".github/ci-policy.yml"


@dataclass(frozen=True)
class InitRequest:
    repo: Path
    config: str | None = None   # the configuration file to write, as given
    force: bool = False


@dataclass(frozen=True)
class Initialised:
    start: Starter
    written: tuple[str, ...]    # each file written, as shown
    shown_config: str
    report: LintReport
    ok: bool

    @property
    def todo(self) -> list[tuple[str, int, str]]:
        """What is left to fill in: (file as shown, line, what)."""
        return [(p.path or self.shown_config, p.line, p.what) for p in self.start.placeholders]


def init(request: InitRequest) -> Initialised:
    repo = request.repo
    start = starter(repo)
    config_file = Path(request.config) if request.config is not None else repo / ".github" / "ci-policy.yml"
    shown_config = request.config if request.config is not None else DEFAULT_SHOWN
    targets = [(config_file, shown_config, start.config_text)]
    if start.labels_text is not None:
        targets.append((repo / LABELS_FILE, LABELS_FILE, start.labels_text))
    _refuse_existing(targets, request.force)
    for path, shown, text in targets:
        _write(repo, path, shown, text)

    report = lint(repo, request.config)
    return Initialised(start, tuple(s for _p, s, _t in targets), shown_config, report, report.ok)


CALLER_SHOWN = ".github/workflows/ci-policy.yml"
POLICY_SHOWN = ".github/ci-commands.json"


@dataclass(frozen=True)
class WorkflowsRequest:
    repo: Path
    ci_policy_ref: str
    config: str | None = None   # the configuration whose schedules the pipeline runs on
    force: bool = False


@dataclass(frozen=True)
class WorkflowsWritten:
    written: str                # the caller file, as shown
    ci_policy_ref: str
    schedules: tuple[str, ...]  # the pipeline's crons
    pins: tuple[str, ...]       # the PR-body pins dispatched to /rerun-test


def init_workflows(request: WorkflowsRequest) -> WorkflowsWritten:
    ref = request.ci_policy_ref
    if not SHA_RE.fullmatch(ref):
        raise UsageError(f"{ref!r} is not a full 40-hex commit SHA (lowercase)", source="--ci-policy-ref",
                         hint="pin the ci-policy commit to run, e.g. the output of `git rev-parse HEAD` in ci-policy")
    repo = request.repo
    config_file = Path(request.config) if request.config is not None else repo / ".github" / "ci-policy.yml"
    schedules: list[tuple[str, str]] = []
    pins: tuple[str, ...] = ()
    if request.config is not None or config_file.exists():  # a configuration named must be read
        config = load_config(repo, request.config)
        schedules = [(cron, str(config.cadences.for_cron(cron))) for cron in config.cadences.schedules]
        if (repo / POLICY_SHOWN).exists():
            access = parse_access_policy(read_text(repo, POLICY_SHOWN, what="access policy"),
                                         load_labels(repo, config.labels_file), POLICY_SHOWN)
            rerun = access.command("rerun_test")
            pins = tuple(name for name, _pattern in rerun.pins) if rerun is not None else ()
    try:
        text = caller_workflow(ref, schedules, pins)
    except ValueError as exc:
        raise InputError(f"cannot write {CALLER_SHOWN}: {exc}", path=request.config or DEFAULT_SHOWN,
                         hint="give the pipeline's schedule another cron in cadences.schedules, or the /rerun-test pin "
                         f"another name in {POLICY_SHOWN}") from None
    target = repo / CALLER_SHOWN
    _refuse_existing([(target, CALLER_SHOWN, text)], request.force)
    _write(repo, target, CALLER_SHOWN, text)
    return WorkflowsWritten(CALLER_SHOWN, ref, tuple(cron for cron, _c in schedules), pins)


def _refuse_existing(targets: list[tuple[Path, str, str]], force: bool) -> None:
    errors = []
    for path, shown, _text in targets:
        if os.path.islink(path):
            errors.append(Diagnostic(f"{shown} is a symlink; ci-policy init does not write through a symlink",
                                     path=shown, code="CP401", hint="remove the symlink, then run init again"))
        elif os.path.lexists(path) and not force:
            errors.append(Diagnostic(f"{shown} already exists; ci-policy init does not overwrite it without --force",
                                     path=shown, hint="pass --force to replace it, or move it away first"))
    if errors:
        raise InputErrors(errors)


def _write(repo: Path, path: Path, shown: str, text: str) -> None:
    try:
        rel = Path(os.path.abspath(path)).relative_to(os.path.abspath(repo)).as_posix()
    except ValueError:
        rel = None  # a file the maintainer named outside the checkout
    if rel is not None:
        check_no_symlinks(repo, rel, what="file to write")  # .github as a symlink would redirect the write
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise InputError(f"{shown} cannot be written: {exc.strerror}", path=shown) from None
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)

