"""`ci-policy result`: the pipeline's result job, the one check a maintainer requires.

- In: --plan-complete (the plan job's output: true, false, or empty when it wrote none),
  --needs-json (GitHub's `toJSON(needs)`), --format text|json|github.
- Out: the outcome (`ci_policy.plan.outcome`): each needed job's result, then the reasons
  to fail or why it passes. github format: the text, one `::error` per reason, and the job
  summary. Exit 1 on any reason to fail, 0 otherwise.
- Reads no checkout: `--repo` is accepted, as by every subcommand, and unused.
- Refused (exit 2): a --plan-complete other than true, false or empty; a --needs-json that
  is empty, not JSON, or not GitHub's shape of needs.
"""

from __future__ import annotations

import argparse

from ci_policy.app.result import result as decide
from ci_policy.cli.main import summary
from ci_policy.cli.options import add_format, add_repo
from ci_policy.cli.output import append_step_summary
from ci_policy.render.console import write_commands
from ci_policy.render.escape import escape_data
from ci_policy.render.jsondoc import outcome_json
from ci_policy.render.markdown import outcome_markdown
from ci_policy.render.text import outcome_text

NAME = "result"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Decide a pipeline's result, as its required result job: fail when the plan "
                                   "is missing or partial or a needed job failed or was cancelled; pass when "
                                   "every job succeeded or was skipped, saying why.")
    add_repo(p, help="accepted as by every subcommand; result reads no checkout")
    p.add_argument("--plan-complete", required=True, metavar="BOOL",
                   help="the plan job's plan_complete output: true, false, or empty when the plan job wrote none")
    p.add_argument("--needs-json", required=True, metavar="JSON",
                   help="the needed jobs' results as GitHub gives them: toJSON(needs)")
    add_format(p, ("text", "json", "github"))
    return p


def run(args: argparse.Namespace) -> int:
    decided = decide(args.plan_complete, args.needs_json)
    result = decided.outcome
    if args.format == "json":
        print(outcome_json(result, decided.plan_complete))
    else:
        print(outcome_text(result))
    if args.format == "github":
        for reason in result.failures:
            write_commands(f"::error::{escape_data(reason)}")
        append_step_summary(NAME, outcome_markdown(result))
    return 0 if result.ok else 1
