"""`ci-policy init`: write a starter configuration (and labels file) inferred from the checkout.

- In: --repo, --config (the file to write; default DIR/.github/ci-policy.yml), --force,
  --format text|json.
- Out: the configuration, and `labels.py` when the tests use labels (inferred by
  `ci_policy.model.starter` from the markers and the workflows); then, in text, a summary of
  at most `MAX_LINES` lines: where discovery, runners, cadences and label gates came from,
  what is left to fill in, init's notes and the lint of the written files, as many as fit and
  a count of the rest; `--format json` carries every one.
- Exit: 0 when lint finds no error in what was written (the runs_on placeholder is a
  warning), 1 otherwise; the files are written in both cases.
- Refused: with exit 1, nothing written: an existing configuration or labels file without
  --force; a checkout with no marker call; a target path through a symlink (even with --force).
- --workflows --ci-policy-ref SHA: instead, the one caller workflow
  `.github/workflows/ci-policy.yml` (pipeline, comment commands, /rerun-test, tuning), every job
  pinned to SHA, with the configuration's schedules and the access policy's pins; refused
  (exit 2) without --ci-policy-ref or with anything but 40 lowercase hex, or --ci-policy-ref
  without --workflows; (exit 1, nothing written) an existing file without --force.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from ci_policy.app.init import (
    PLACEHOLDER_RUNNER,
    Initialised,
    InitRequest,
    WorkflowsRequest,
    WorkflowsWritten,
    init,
    init_workflows,
)
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_format, add_repo
from ci_policy.errors import UsageError
from ci_policy.render.escape import one_line
from ci_policy.render.jsondoc import JSON_SCHEMA_VERSION
from ci_policy.render.report import summarised
from ci_policy.render.text import diagnostic_text, lint_summary

NAME = "init"
EXAMPLES = examples(
    ("in the root of a checkout that registers tests: a starter .github/ci-policy.yml"
     " (and labels.py)",
     "ci-policy init"),
    ("then the one caller workflow, every job pinned to the ci-policy commit it names",
     "ci-policy init --workflows --ci-policy-ref 0123456789abcdef0123456789abcdef01234567"),
    ("once written, init overwrites nothing without --force (exits 1)",
     "ci-policy init"))
# The text summary's length: a first run on a large repository must stay readable.
MAX_LINES = 40


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Write a starter .github/ci-policy.yml (and labels.py when the tests use "
                                   "labels) from the markers of a checkout, then lint the result and print "
                                   "what is left to fill in.",
                       epilog=EXAMPLES)
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


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _text(done: Initialised) -> str:
    start = done.start
    lines = [f"ci-policy init: wrote {' and '.join(one_line(w) for w in done.written)}: "
             f"{_plural(len(start.stages), 'stage')} for {_plural(start.registrations, 'registration')} in "
             f"{_plural(start.files, 'test file')}"]
    roots = ", ".join(f"{r.path} ({', '.join(r.pattern)})" for r in start.roots)
    sources = sorted({r.source for r in start.roots if r.source is not None})
    lines.append(one_line(f"discovery: {roots}" + (f", from {'; '.join(sources)}" if sources else
                                                  ", covering the registered files (no workflow names a collector)")))
    if start.not_discovered:
        lines.append(f"not discovered: {_plural(len(start.not_discovered), 'file')} with markers outside the "
                     "collector's directories")
    accelerator = [s for s in start.stages if s.backend != "cpu"]
    if accelerator:
        from_jobs = sum(1 for s in accelerator if s.runs_on_from is not None and " job " in s.runs_on_from)
        from_files = len([s for s in accelerator if s.runs_on]) - from_jobs
        left = len(accelerator) - from_jobs - from_files
        lines.append(f"runners: {from_jobs} of {len(accelerator)} accelerator stages from workflow jobs, {from_files} "
                     f"from runner mapping files, {left} left as {PLACEHOLDER_RUNNER!r}")
    if start.schedules:
        lines.append(one_line("cadences: " + ", ".join(f"'{cron}' {cadence} ({workflow})"
                                                      for cron, cadence, workflow in start.schedules)
                              + (f"; nightly_selects: {start.nightly_selects}" if start.nightly_selects else "")))
    gated = [s for s in start.stages if s.requires_labels]
    if start.require_labels:
        lines.append(one_line(f"label gates: pull_request.require_labels {', '.join(start.require_labels)}"))
    elif gated:
        gates = Counter(s.requires_labels for s in gated)
        lines.append(one_line("label gates (stages[].requires_labels): " + "; ".join(
            f"{', '.join(gate)} on {_plural(n, 'stage')}" for gate, n in sorted(gates.items()))))
    items: list[str] = []
    todo = done.todo
    if todo:
        items.append("left to fill in (each line marked TODO):\n" + "\n".join(
            f"  {one_line(path)}:{line}: {one_line(what)}" for path, line, what in todo))
    items.extend(diagnostic_text(d) for d in done.report.errors)
    items.extend(diagnostic_text(n) for n in start.notes)
    items.extend(diagnostic_text(w) for w in summarised(done.report.warnings))
    summary = lint_summary(done.report)
    budget = MAX_LINES - len(lines) - 2  # the summary line, and the line counting what did not fit
    shown = 0
    for item in items:
        size = item.count("\n") + 1
        if size > budget:
            break
        lines.append(item)
        budget -= size
        shown += 1
    if shown < len(items):
        lines.append(f"... and {len(items) - shown} more (ci-policy init --format json lists every one; "
                     "ci-policy lint lists the lint's)")
    lines.append(summary)
    return "\n".join(lines)


def _json(done: Initialised) -> str:
    start = done.start
    return json.dumps({
        "schema": JSON_SCHEMA_VERSION,
        "ok": done.ok,
        "written": list(done.written),
        "stages": [{"name": s.name, "backend": s.backend, "files": s.files, "est_time": s.est_time,
                    "runner": s.runner, "runs_on": list(s.runs_on), "runs_on_from": s.runs_on_from,
                    "cadences": list(s.cadences), "requires_labels": list(s.requires_labels),
                    "variants": [{"name": name, "runs_on": list(runs_on)} for name, runs_on in s.variants]}
                   for s in start.stages],
        "discovery": [{"path": r.path, "pattern": list(r.pattern), "from": r.source} for r in start.roots],
        "not_discovered": list(start.not_discovered),
        "schedules": [{"cron": cron, "cadence": cadence, "workflow": workflow}
                      for cron, cadence, workflow in start.schedules],
        "nightly_selects": start.nightly_selects,
        "require_labels": list(start.require_labels),
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
