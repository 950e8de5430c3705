"""`ci-policy init`: write a starter configuration (and labels file) inferred from the checkout.

- In: --repo, --config (the file to write; default DIR/.github/ci-policy.yml), --force,
  --format text|json.
- Out: the configuration, and `labels.py` when the tests use labels (inferred by
  `ci_policy.model.starter`); then what is left to fill in, init's notes, and the lint
  of the result with every runs_on placeholder filled in (so lint can read the tests
  too; the placeholders themselves are what `ci-policy lint` reports until filled).
- Exit: 0 when only the placeholders are left (lint finds no other error), 1 otherwise;
  the files are written in both cases.
- Refused (exit 1, nothing written): an existing configuration or labels file without
  --force; a checkout with no marker call; a target path through a symlink (even with
  --force).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ci_policy.cli.main import summary
from ci_policy.cli.options import add_format, add_repo
from ci_policy.errors import Diagnostic, InputError, InputErrors

if TYPE_CHECKING:
    from ci_policy.model.lint import LintReport
    from ci_policy.model.starter import Starter

NAME = "init"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Write a starter .github/ci-policy.yml (and labels.py when the tests use "
                                   "labels) from the markers of a checkout, then lint the result and print "
                                   "what is left to fill in.")
    add_repo(p)
    p.add_argument("--config", default=None, metavar="FILE",
                   help="the configuration file to write (default: DIR/.github/ci-policy.yml)")
    p.add_argument("--force", action="store_true",
                   help="overwrite an existing configuration or labels file")
    add_format(p, ("text", "json"))
    return p


def run(args: argparse.Namespace) -> int:
    from ci_policy.model.lint import lint
    from ci_policy.model.starter import LABELS_FILE, starter

    repo = Path(args.repo)
    start = starter(repo)
    config_file = Path(args.config) if args.config is not None else repo / ".github" / "ci-policy.yml"
    shown_config = args.config if args.config is not None else ".github/ci-policy.yml"
    targets = [(config_file, shown_config, start.config_text)]
    if start.labels_text is not None:
        targets.append((repo / LABELS_FILE, LABELS_FILE, start.labels_text))
    _refuse_existing(repo, targets, args.force)
    for path, shown, text in targets:
        _write(repo, path, shown, text)

    written = lint(repo, args.config)
    keys = {p.key for p in start.placeholders if p.key is not None}
    # Lint's "runs_on required" (CP103) for a stage init left a placeholder in.
    placeholder_errors = [e for e in written.errors
                          if e.code == "CP103" and e.message.split(":", 1)[0] in keys]
    filled = bool(placeholder_errors)
    report = _lint_filled(repo, start, shown_config) if filled else written
    ok = report.ok and len(placeholder_errors) == len(written.errors)
    shown = [s for _p, s, _t in targets]
    if args.format == "json":
        print(_json(start, shown, shown_config, report, ok))
    else:
        print(_text(start, shown, shown_config, report, filled))
    return 0 if ok else 1


def _refuse_existing(repo: Path, targets: list[tuple[Path, str, str]], force: bool) -> None:
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
    from ci_policy.read.checkout import check_no_symlinks

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


def _lint_filled(repo: Path, start: Starter, shown_config: str) -> LintReport:
    """Lint with every runs_on placeholder filled in, so the rest of the checkout is checked too.

    The copy lives outside the checkout, line for line the written file; its diagnostics
    name the written file.
    """
    import tempfile

    from ci_policy.model.lint import LintReport, lint

    with tempfile.TemporaryDirectory(prefix="ci-policy-init-") as tmp:
        copy = Path(tmp) / "ci-policy.yml"
        copy.write_text(start.filled("TODO"), encoding="utf-8")
        report = lint(repo, copy)

    def named(items: tuple[Diagnostic, ...]) -> tuple[Diagnostic, ...]:
        return tuple(replace(d, path=shown_config) if d.path == str(copy) else d for d in items)

    return LintReport(errors=named(report.errors), warnings=named(report.warnings), snapshot=report.snapshot,
                      suppressed=named(report.suppressed))


def _todo(start: Starter, shown_config: str) -> list[tuple[str, int, str]]:
    return [(p.path or shown_config, p.line, p.what) for p in start.placeholders]


def _text(start: Starter, written: list[str], shown_config: str, report: LintReport, filled: bool) -> str:
    from ci_policy.render.escape import one_line
    from ci_policy.render.text import diagnostic_text, lint_summary

    stages = len(start.stages)
    lines = [f"ci-policy init: wrote {' and '.join(one_line(w) for w in written)}: {stages} "
             f"stage{'s' if stages != 1 else ''} for {start.registrations} "
             f"registration{'s' if start.registrations != 1 else ''} in {start.files} "
             f"test file{'s' if start.files != 1 else ''}"]
    lines.extend(diagnostic_text(n) for n in start.notes)
    todo = _todo(start, shown_config)
    if todo:
        lines.append("left to fill in (each line marked TODO):")
        lines.extend(f"  {one_line(path)}:{line}: {one_line(what)}" for path, line, what in todo)
    lines.extend(diagnostic_text(d) for d in (*report.errors, *report.warnings))
    summary = lint_summary(report)
    if filled:
        summary = summary.replace("ci-policy lint:", "ci-policy lint (with runs_on filled in):", 1)
    lines.append(summary)
    return "\n".join(lines)


def _json(start: Starter, written: list[str], shown_config: str, report: LintReport, ok: bool) -> str:
    import json

    from ci_policy.render.jsondoc import JSON_SCHEMA_VERSION

    return json.dumps({
        "schema": JSON_SCHEMA_VERSION,
        "ok": ok,
        "written": written,
        "stages": [{"name": s.name, "backend": s.backend, "files": s.files, "est_time": s.est_time,
                    "runner": s.runner} for s in start.stages],
        "labels": list(start.labels),
        "todo": [{"path": path, "line": line, "what": what} for path, line, what in _todo(start, shown_config)],
        "notes": [n.as_dict() for n in start.notes],
        "errors": [e.as_dict() for e in report.errors],
        "warnings": [w.as_dict() for w in report.warnings],
    }, indent=2)
