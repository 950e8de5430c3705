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
- --workflows --ci-policy-ref SHA: instead, the one caller workflow
  `.github/workflows/ci-policy.yml` (pipeline, comment commands, /rerun-test, tuning), every job
  pinned to SHA, with the configuration's schedules and the access policy's pins; refused
  (exit 2) without --ci-policy-ref or with anything but 40 lowercase hex, or --ci-policy-ref
  without --workflows; (exit 1, nothing written) an existing file without --force.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ci_policy.app.init import Initialised, InitRequest, WorkflowsRequest, WorkflowsWritten, init, init_workflows
from ci_policy.cli.main import summary
from ci_policy.cli.options import add_format, add_repo
from ci_policy.errors import UsageError
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
                   help="overwrite an existing configuration or labels file (with --workflows: the caller file)")
    p.add_argument("--workflows", action="store_true",
                   help="write the one caller workflow .github/workflows/ci-policy.yml instead of the configuration")
    p.add_argument("--ci-policy-ref", default=None, metavar="SHA",
                   help="with --workflows: the full 40-hex ci-policy commit every job of the caller pins")
    add_format(p, ("text", "json"))
    return p


def run(args: argparse.Namespace) -> int:
    if args.workflows or args.ci_policy_ref is not None:
        if not args.workflows:
            raise UsageError("only goes with --workflows", source="--ci-policy-ref",
                             hint="pass --workflows to write the caller workflow")
        if args.ci_policy_ref is None:
            raise UsageError("--workflows needs the ci-policy commit to pin", source="--ci-policy-ref",
                             hint="pass --ci-policy-ref SHA (the full 40-hex commit)")
        written = init_workflows(WorkflowsRequest(Path(args.repo), args.ci_policy_ref, args.config, args.force))
        print(_workflows_json(written) if args.format == "json" else _workflows_text(written))
        return 0
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


def _workflows_text(written: WorkflowsWritten) -> str:
    crons = ", ".join(f"'{c}'" for c in written.schedules) or "none"
    pins = ", ".join(written.pins) or "none"
    return (f"ci-policy init: wrote {one_line(written.written)}: jobs pipeline, comment, rerun-test and tune, "
            f"pinned to {written.ci_policy_ref}; pipeline schedules: {one_line(crons)}; /rerun-test pins: "
            f"{one_line(pins)}")


def _workflows_json(written: WorkflowsWritten) -> str:
    return json.dumps({"schema": JSON_SCHEMA_VERSION, "ok": True, "written": [written.written],
                       "ci_policy_ref": written.ci_policy_ref, "schedules": list(written.schedules),
                       "pins": list(written.pins)}, indent=2)
