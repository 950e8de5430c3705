"""`ci-policy gate`: evaluate one test file's metric gates against the metric history.

- In: --repo, --config, --file, --record (the merged metric record of a run), --stage,
  --store, --cadence, --event and the run's identity (options, else $GITHUB_* variables).
- Out: a table of gate verdicts; in github format also annotations and the job summary.
  Exit 1 when an enforced gate failed.
- Refused: a --store URL holding a password (use --store-file or $CI_POLICY_DATABASE_URL), an
  unknown --cadence, a malformed $GITHUB_RUN_ATTEMPT, a baseline-writing run
  without an explicit shared store or into a SQLite file under GitHub Actions (exit 2); an unreadable
  record, an unregistered file, an invalid --file (its own diagnostics), a configuration
  or label-registry error (exit 1). Another test file's errors do not stop this file's gates.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ci_policy.adapters.console import write_commands
from ci_policy.cli.main import summary
from ci_policy.cli.options import (
    add_cache,
    add_checkout,
    add_format,
    add_store,
    append_step_summary,
    run_attempt,
    run_attempt_arg,
    scan_options,
    store_url,
)
from ci_policy.errors import InputError, InputErrors, UsageError

if TYPE_CHECKING:
    from ci_policy.adapters.gate import RunIdentity

NAME = "gate"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Evaluate a test file's metric gates on one run's metric record against "
                                   "the metric history, and record the run (nightly and weekly runs may "
                                   "write baselines).")
    add_checkout(p)
    add_cache(p)
    p.add_argument("--file", required=True, metavar="F", help="the registered test file (repo-relative)")
    p.add_argument("--record", required=True, metavar="R", help="the run's merged metric record (JSON)")
    p.add_argument("--stage", metavar="S", help="the stage, when the file is registered for several")
    add_store(p)
    p.add_argument("--cadence", default="regular", metavar="C",
                   help="regular, nightly, weekly or release (default regular); nightly and weekly runs "
                        "write baselines, regular and release never do")
    p.add_argument("--event", default=None, metavar="EVENT",
                   help="the triggering event (default $GITHUB_EVENT_NAME); pull_request and merge_group never "
                        "write")
    p.add_argument("--run-id", default=None, metavar="ID", help="the workflow run id (default $GITHUB_RUN_ID)")
    p.add_argument("--run-attempt", type=run_attempt_arg, default=None, metavar="N",
                   help="the run attempt (default $GITHUB_RUN_ATTEMPT, else 1)")
    p.add_argument("--commit", default=None, metavar="SHA", help="the commit tested (default $GITHUB_SHA)")
    add_format(p, ("text", "github"))
    return p


def attempt_of(given: int | None = None) -> int:
    """The attempt a metric record belongs to: `given`, else `$GITHUB_RUN_ATTEMPT`, else 1."""
    if given:
        return given  # --run-attempt, checked by its parser
    try:
        return run_attempt(os.environ.get("GITHUB_RUN_ATTEMPT") or "1")
    except ValueError as exc:
        raise UsageError(str(exc), source="$GITHUB_RUN_ATTEMPT",
                         hint="pass --run-attempt N, or leave GITHUB_RUN_ATTEMPT to GitHub Actions") from None


def run_identity(run_id: str | None = None, run_attempt: int | None = None,
                 commit: str | None = None) -> RunIdentity:
    """The run a metric record belongs to: the options, else what GitHub Actions sets."""
    from ci_policy.adapters.gate import RunIdentity

    return RunIdentity(run_id=run_id or os.environ.get("GITHUB_RUN_ID") or None, run_attempt=attempt_of(run_attempt),
                       commit=commit or os.environ.get("GITHUB_SHA") or None)


def run(args: argparse.Namespace) -> int:
    from ci_policy.adapters.gate import (
        baseline_store_problem,
        check_store_location,
        opener,
        registration_for,
        run_gate,
    )
    from ci_policy.config.cadences import CADENCES
    from ci_policy.gates.baseline import writes_baseline
    from ci_policy.model.snapshot import load_snapshot
    from ci_policy.read.records import load_record
    from ci_policy.render.text import gate_text

    if args.cadence not in CADENCES:
        raise UsageError(f"unknown cadence {args.cadence!r}; expected one of {', '.join(CADENCES)}",
                         source="--cadence")
    store = store_url(args)
    check_store_location(store)
    event = args.event or os.environ.get("GITHUB_EVENT_NAME")
    identity = run_identity(args.run_id, args.run_attempt, args.commit)
    if identity.run_id is not None and writes_baseline(args.cadence, event)[0]:
        problem = baseline_store_problem(store)
        if problem is not None:
            raise problem
    repo = Path(args.repo)
    # Another file's error does not stop this file's gates (one broken file never stops CI
    # for the rest); the file's own errors do, with its diagnostics.
    snapshot = load_snapshot(repo, args.config, **scan_options(args, repo)).usable()
    for invalid in snapshot.invalid_files:
        if invalid.file == args.file:
            raise InputErrors(invalid.diagnostics)
    reg = registration_for(snapshot, args.file, args.stage)
    try:
        series, problems = load_record(Path(args.record))
    except (OSError, ValueError) as exc:
        raise InputError(f"--record: {args.record} is not a readable metric record: {exc}",
                         path=args.record, hint="pass the record ci-policy run merged for this file") from None
    outcome = run_gate(snapshot, reg, series, opener(store, repo), cadence=args.cadence, event=event,
                       run=identity, problems=problems)
    print(gate_text(outcome))
    if args.format == "github":
        from ci_policy.render.github import gate_annotations
        from ci_policy.render.markdown import gate_markdown

        annotations = gate_annotations(outcome)
        if annotations:
            write_commands(annotations)
        append_step_summary(NAME, gate_markdown(outcome))
    return 1 if outcome.blocking else 0
