"""`ci-policy plan`: which stages run for a trigger, labels and diff, why, and their shards.

- In: --repo, --config, the plan inputs, --format text|json|markdown|github.
- Out: the plan; in github format also $GITHUB_OUTPUT values, the job summary and
  annotations, and exit 1 when a scheduled file is invalid.
- Refused: bad plan inputs (exit 2, naming the option), a bad checkout (exit 1).
"""

from __future__ import annotations

import argparse
import uuid

from ci_policy.cli.options import add_checkout, add_format, add_plan_inputs, github_file, plan_from_args

NAME = "plan"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help="decide which stages run for a trigger, labels and diff, and their shards",
                       description="Decide which CI stages run for an event, its PR labels and its diff, "
                                   "with a reason for each decision, and split each stage's files into shards.")
    add_checkout(p)
    add_plan_inputs(p)
    add_format(p, ("text", "json", "markdown", "github"))
    return p


def run(args: argparse.Namespace) -> int:
    from ci_policy import render

    plan = plan_from_args(args)
    if args.format == "json":
        print(render.plan_json(plan))
    elif args.format == "markdown":
        print(render.plan_markdown(plan), end="")
    elif args.format == "github":
        outputs, summary = github_file("GITHUB_OUTPUT"), github_file("GITHUB_STEP_SUMMARY")
        with outputs.open("a", encoding="utf-8") as fh:
            fh.write(render.github_outputs(plan, f"ghadelimiter_{uuid.uuid4()}"))
        with summary.open("a", encoding="utf-8") as fh:
            fh.write(render.plan_markdown(plan))
        print(render.plan_text(plan))
        if plan.warnings or plan.invalid:
            print(render.plan_annotations(plan))
        if plan.invalid:
            return 1
    else:
        print(render.plan_text(plan))
    return 0
