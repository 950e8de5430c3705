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
import json
from pathlib import Path

from ci_policy.app.init import Initialised, InitRequest, init
from ci_policy.cli.main import summary
from ci_policy.cli.options import add_format, add_repo
from ci_policy.render.escape import one_line
from ci_policy.render.jsondoc import JSON_SCHEMA_VERSION
from ci_policy.render.text import diagnostic_text, lint_summary

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
    done = init(InitRequest(Path(args.repo), args.config, args.force))
    print(_json(done) if args.format == "json" else _text(done))
    return 0 if done.ok else 1


def _text(done: Initialised) -> str:
    start = done.start
    stages = len(start.stages)
    lines = [f"ci-policy init: wrote {' and '.join(one_line(w) for w in done.written)}: {stages} "
             f"stage{'s' if stages != 1 else ''} for {start.registrations} "
             f"registration{'s' if start.registrations != 1 else ''} in {start.files} "
             f"test file{'s' if start.files != 1 else ''}"]
    lines.extend(diagnostic_text(n) for n in start.notes)
    todo = done.todo
    if todo:
        lines.append("left to fill in (each line marked TODO):")
        lines.extend(f"  {one_line(path)}:{line}: {one_line(what)}" for path, line, what in todo)
    lines.extend(diagnostic_text(d) for d in (*done.report.errors, *done.report.warnings))
    summary = lint_summary(done.report)
    if done.filled:
        summary = summary.replace("ci-policy lint:", "ci-policy lint (with runs_on filled in):", 1)
    lines.append(summary)
    return "\n".join(lines)


def _json(done: Initialised) -> str:
    start = done.start
    return json.dumps({
        "schema": JSON_SCHEMA_VERSION,
        "ok": done.ok,
        "written": list(done.written),
        "stages": [{"name": s.name, "backend": s.backend, "files": s.files, "est_time": s.est_time,
                    "runner": s.runner} for s in start.stages],
        "labels": list(start.labels),
        "todo": [{"path": path, "line": line, "what": what} for path, line, what in done.todo],
        "notes": [n.as_dict() for n in start.notes],
        "errors": [e.as_dict() for e in done.report.errors],
        "warnings": [w.as_dict() for w in done.report.warnings],
    }, indent=2)
