"""`ci-policy plan`: which stages run for a trigger, labels and diff, why, and their shards.

- In: --repo, --config, the plan inputs, --format text|json|markdown|github.
- Out: the plan; in github format also $GITHUB_OUTPUT values (`plan_complete`,
  `invalid_files` among them), the job summary (`append_step_summary`: skipped with a
  notice when $GITHUB_STEP_SUMMARY is unset) and annotations; each warning of the plan
  is an `::warning` annotation there and not also a text line.
- A partial plan (a test file is invalid: left out, listed with its diagnostics): github
  format exits 0 once every output is written, so the workflow goes on and its result
  job fails on `plan_complete != 'true'`; every other format prints the whole plan and
  exits 1.
- `--head-sha SHA` (a full commit SHA, or empty): the tag of the images the plan builds, in
  the stage jobs of the json and github formats (`ci_policy.plan.jobs`).
- `--json-out FILE`: the plan JSON (as `--format json` prints it) is also written to FILE,
  whole even for a partial plan, so one planning gives both the chosen format and the plan
  file the stage jobs read (`run --plan`). Written atomically (`adapters.files`); a FILE
  that cannot be written is exit 2 naming the option.
- `--stage-plans DIR`: besides, one per-stage plan per stage of the plan, `DIR/<stage>.json`:
  the plan JSON with `stages` holding that stage alone and `inputs` without the test files'
  content ids (`app.plan_documents.stage_plan_jsons`), which holds for the clean tree planned: a stage
  job on that tree reads its own stage's tests and shards and nothing else (`run --plan
  DIR/..`, where `plan.json` is the fallback). DIR is created when missing; other files in it
  are left alone; each file is written atomically.
- `--explain FILE` (text or json): instead of the plan, why one file runs where it runs
  (`ci_policy.plan.explain`); exit 0 whatever the file's status, since the explanation is
  the whole answer.
- Refused: bad plan inputs or a malformed `--head-sha` (exit 2, naming the option); a configuration, labels,
  discovery or estimates-file error (exit 1, nothing planned); `--explain` with a path
  that is not repo-relative, with markdown or github format, or with `--json-out` or
  `--stage-plans` (exit 2); a `--stage-plans` directory inside the checkout (a pull request
  could have put a symlink there) or one that cannot be created or written (exit 2).
"""

from __future__ import annotations

import argparse
import re

from ci_policy.app.planning import PlanCommand, PlanResult, explain, plan_command
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_cache, add_checkout, add_format, add_plan_inputs, plan_request
from ci_policy.cli.output import (
    append_github_file,
    append_step_summary,
    github_file,
    output_delimiter,
    report_incomplete,
)
from ci_policy.errors import UsageError
from ci_policy.render.text import plan_text

NAME = "plan"
EXAMPLES = examples(
    ("a pull request labelled run-ci-megatron that changes the files of"
     " examples/pr-42.diff",
     "ci-policy plan --repo examples/gpu-repo --event pull_request --label"
     " run-ci-megatron\n"
     "--diff examples/pr-42.diff"),
    ("why one test file runs or not on a push",
     "ci-policy plan --repo examples/gpu-repo --event push --explain"
     " tests/e2e/test_megatron_sft.py"),
    ("the nightly schedule's plan, also written whole for list --plan and run --plan",
     "ci-policy plan --repo examples/gpu-repo --event schedule --schedule \"0 15 * * 0-5\""
     " --json-out plan.json"))
HEAD_SHA_RE = re.compile(r"[0-9a-f]{40}")


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Decide which CI stages run for an event, its PR labels and its diff, "
                                   "with a reason for each decision, and split each stage's files into shards.",
                       epilog=EXAMPLES)
    add_checkout(p)
    add_cache(p)
    add_plan_inputs(p)
    add_format(p, ("text", "json", "markdown", "github"))
    p.add_argument("--head-sha", default="", metavar="SHA",
                   help="the head commit's full SHA (40 hex digits): tags the images the plan builds "
                        "(stage_matrix_<wave>, images_to_build); empty: no image is built")
    p.add_argument("--json-out", metavar="FILE", default=None,
                   help="also write the plan JSON (as --format json prints it) to FILE, for `run --plan` "
                        "and `list --plan`; written whole for a partial plan too")
    p.add_argument("--stage-plans", metavar="DIR", default=None,
                   help="also write DIR/STAGE.json for each stage of the plan: the plan JSON with that stage "
                        "alone and no test file's content id, which holds for this clean git tree only (the "
                        "stage jobs' `run --plan`, from the directory holding DIR and the whole plan); DIR "
                        "outside the checkout")
    p.add_argument("--explain", metavar="FILE", default=None,
                   help="instead of the plan, explain one repo-relative test file: each stage it is registered "
                        "to, the rule that selected or skipped it, its shard (text or json)")
    return p


def _head_sha(value: str) -> str | None:
    if value == "":
        return None
    if not HEAD_SHA_RE.fullmatch(value):
        raise UsageError(f"expected a full commit SHA (40 lower-case hex digits), got {value[:80]!r}",
                         source="--head-sha", hint="pass the pull request's head SHA, or nothing")
    return value


def run(args: argparse.Namespace) -> int:
    head_sha = _head_sha(args.head_sha)
    if args.explain is not None:
        if args.format not in ("text", "json"):
            raise UsageError(f"explains in text or json, not {args.format}", source="--explain",
                             hint="pass --format text or --format json")
        for option, value in (("--json-out", args.json_out), ("--stage-plans", args.stage_plans)):
            if value is not None:
                raise UsageError("--explain prints an explanation instead of the plan, so there is no plan to write",
                                 source=option, hint="run the plan and the explanation as two commands")
        # Imported here, as each format's renderer below: a command loads the renderer of its
        # output only (tests/cli/test_startup.py::test_plan_imports_only_what_its_format_uses).
        from ci_policy.render.jsondoc import explain_json
        from ci_policy.render.text import explain_text

        explained = explain(plan_request(args), args.explain)
        print(explain_json(explained.explanation, explained.plan) if args.format == "json"
              else explain_text(explained.explanation, explained.plan))
        return 0
    result = plan_command(PlanCommand(plan_request(args), head_sha, whole=args.format == "json",
                                      json_out=args.json_out, stage_plans=args.stage_plans))
    plan = result.plan
    if args.format == "json":
        print(result.document)
    elif args.format == "markdown":
        from ci_policy.render.markdown import plan_markdown  # test_plan_imports_only_what_its_format_uses

        print(plan_markdown(plan, result.jobs), end="")
    elif args.format == "github":
        return _github(args, result, head_sha)
    else:
        print(plan_text(plan, result.jobs))
    return report_incomplete(NAME, plan.invalid, section=False)


def _github(args: argparse.Namespace, result: PlanResult, head_sha: str | None) -> int:
    """`--format github`: the outputs, the job summary, the plan as text and its annotations."""
    # Imported here: only this format writes outputs and annotations
    # (tests/cli/test_startup.py::test_plan_imports_only_what_its_format_uses).
    from pathlib import Path

    from ci_policy.app.plan_documents import github_outputs
    from ci_policy.cli.paths import workspace_paths
    from ci_policy.render.console import write_commands
    from ci_policy.render.github import plan_annotations
    from ci_policy.render.markdown import plan_markdown

    plan = result.plan
    append_github_file("GITHUB_OUTPUT", github_file("GITHUB_OUTPUT"),
                       github_outputs(plan, output_delimiter(), head_sha, result.jobs))
    append_step_summary(NAME, plan_markdown(plan, result.jobs))
    print(plan_text(plan, result.jobs, warnings=False))  # each warning is an annotation below
    if plan.warnings or plan.invalid:
        write_commands(plan_annotations(plan, result.jobs, workspace_paths(Path(args.repo), args.config)))
    return 0
