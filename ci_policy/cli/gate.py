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
from pathlib import Path

from ci_policy.app.gate import GateRequest, gate
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_cache, add_checkout, add_format, add_store, run_attempt_arg, scan_request
from ci_policy.cli.output import append_step_summary
from ci_policy.render.console import write_commands
from ci_policy.render.github import gate_annotations
from ci_policy.render.markdown import gate_markdown
from ci_policy.render.text import gate_text

NAME = "gate"
EXAMPLES = examples(
    ("a nightly run's metric record kept as the baseline (the SQLite history"
     " metrics.sqlite is created)",
     "ci-policy gate --repo examples/gpu-repo --file"
     " tests/e2e/session_server/test_session_tool_calls.py\n"
     "--record examples/tool-calls.record.json --store metrics.sqlite --cadence nightly\n"
     "--event schedule --run-id 1 --commit 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"),
    ("a pull request's run checked against that history, which it never writes",
     "ci-policy gate --repo examples/gpu-repo --file"
     " tests/e2e/session_server/test_session_tool_calls.py\n"
     "--record examples/tool-calls.record.json --store metrics.sqlite --event pull_request"))


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Evaluate a test file's metric gates on one run's metric record against "
                                   "the metric history, and record the run (nightly and weekly runs may "
                                   "write baselines).",
                       epilog=EXAMPLES)
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


def run(args: argparse.Namespace) -> int:
    request = GateRequest(Path(args.repo), args.config, scan_request(args), file=args.file, record=args.record,
                          stage=args.stage, store=args.store, store_file=args.store_file, cadence=args.cadence,
                          event=args.event, run_id=args.run_id, run_attempt=args.run_attempt, commit=args.commit)
    outcome = gate(request)
    print(gate_text(outcome))
    if args.format == "github":
        annotations = gate_annotations(outcome)
        if annotations:
            write_commands(annotations)
        append_step_summary(NAME, gate_markdown(outcome))
    return 1 if outcome.blocking else 0
