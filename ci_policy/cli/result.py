"""`ci-policy result`: the pipeline's result job, the one check a maintainer requires.

- In: --plan FILE (the plan job's plan file, an artifact of the run; "" for none) and/or
  --plan-complete (the plan job's output: true, false, or empty when it wrote none),
  --needs-json (the needed jobs' results: `{"job": {"result": ...}}`, outputs optional),
  --head-sha (the head the plan is for, named in the approval it awaits), --format
  text|json|github.
- Out: the outcome (`ci_policy.plan.outcome`): each needed job's result, then the reasons
  to fail or why it passes; a stage the plan held back for trust fails it with "awaiting
  `/ok-to-test <head sha>` from a maintainer" and one reason per stage. github format: the
  text, one `::error` per reason, and the job summary. Exit 1 on any reason to fail, 0
  otherwise.
- Reads no checkout: `--repo` is accepted, as by every subcommand, and unused.
- Refused: with exit 2: neither --plan nor --plan-complete; a --plan-complete other than true,
  false or empty, or one the plan file contradicts; a --needs-json that is empty, not JSON, or
  not GitHub's shape of needs; a --head-sha that is not 40 hex digits; a --plan that cannot be
  read or is not a plan (the file and the place in it named).
"""

from __future__ import annotations

import argparse

from ci_policy.app.result import ResultRequest
from ci_policy.app.result import result as decide
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_format, add_repo
from ci_policy.cli.output import append_step_summary
from ci_policy.render.console import write_commands
from ci_policy.render.escape import escape_data
from ci_policy.render.jsondoc import outcome_json
from ci_policy.render.markdown import outcome_markdown
from ci_policy.render.text import outcome_text

NAME = "result"
EXAMPLES = examples(
    ("every needed job succeeded: the pipeline passes",
     "ci-policy result --plan-complete true\n"
     "--needs-json '{\"plan\": {\"result\": \"success\"}, \"gpu\": {\"result\": \"success\"}}'"),
    ("a needed job failed (exits 1)",
     "ci-policy result --plan-complete true\n"
     "--needs-json '{\"plan\": {\"result\": \"success\"}, \"gpu\": {\"result\": \"failure\"}}'"))


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Decide a pipeline's result, as its required result job: fail when the plan "
                                   "is missing or partial, held a stage back because nobody approved an outside "
                                   "contributor's head, or a needed job failed or was cancelled; pass when "
                                   "every job succeeded or was skipped, saying why.",
                       epilog=EXAMPLES)
    add_repo(p, help="accepted as by every subcommand; result reads no checkout")
    p.add_argument("--plan", default=None, metavar="FILE",
                   help="the plan job's plan file (plan --json-out), downloaded from this run; says which stages "
                        "were held back for trust. Empty: none (the plan job wrote none)")
    p.add_argument("--plan-complete", default=None, metavar="BOOL",
                   help="the plan job's plan_complete output: true, false, or empty when the plan job wrote none "
                        "(needed without --plan)")
    p.add_argument("--needs-json", required=True, metavar="JSON",
                   help='the needed jobs\' results: {"job": {"result": "success"}, ...} (outputs optional; '
                        "GitHub's toJSON(needs) has this shape, but its outputs may exceed an env variable's size)")
    p.add_argument("--head-sha", default="", metavar="SHA",
                   help="the head commit the plan is for, named in the /ok-to-test a held-back head awaits")
    add_format(p, ("text", "json", "github"))
    return p


def run(args: argparse.Namespace) -> int:
    decided = decide(ResultRequest(args.plan_complete, args.needs_json, args.plan, args.head_sha))
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
