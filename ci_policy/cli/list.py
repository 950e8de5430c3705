"""`ci-policy list`: the files of one stage shard, exactly as `run` would run them.

- In: --repo, --config, the plan inputs or --plan FILE|DIR (the plan job's plan JSON, checked
  against the checkout by content ids: `app.plan_source`), --stage, --shard,
  --format text|json.
- Out: text: one file per line (nothing for a skipped stage, its reasons on stderr; for a stage
  with a command, `# command: ARGV (in DIR)`); json: the stage, shard, decision, reasons and
  files (and a stage's `command` and `working_directory`), `invalid` and `plan_complete`.
- Partial plan: the shard's files are printed as always; invalid test files are listed
  with their diagnostics (text: on stderr) and the exit code is 1.
- Refused: an unknown or external stage, a missing or out-of-range shard, a plan file that
  is not a plan or comes with plan inputs (exit 2); a checkout that differs from the plan
  file (exit 1, naming what differs).
"""

from __future__ import annotations

import argparse
import sys

from ci_policy.app.listing import list_shard
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import add_cache, add_checkout, add_format, add_plan_inputs, add_shard, plan_source
from ci_policy.cli.output import report_incomplete
from ci_policy.render.escape import line_start, one_line
from ci_policy.render.text import command_text

NAME = "list"
EXAMPLES = examples(
    ("the files of the CPU stage on a push",
     "ci-policy list --repo examples/gpu-repo --event push --stage stage-a-cpu"),
    ("shard 1 of a GPU stage on the nightly schedule, as JSON",
     "ci-policy list --repo examples/gpu-repo --event schedule --schedule \"0 15 * * 0-5\"\n"
     "--stage stage-c-4-gpu-h200 --shard 1 --format json"))


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Print the files of one stage shard, as the plan splits them and as "
                                   "`ci-policy run` runs them, without running anything.",
                       epilog=EXAMPLES)
    add_checkout(p)
    add_cache(p)
    add_shard(p)
    add_plan_inputs(p, plan_file=True)
    add_format(p, ("text", "json"))
    return p


def run(args: argparse.Namespace) -> int:
    listed = list_shard(plan_source(args), args.shard)
    stage, shard = listed.stage, listed.shard
    if args.format == "json":
        # Imported here: the text listing needs no JSON document's classes
        # (tests/cli/test_startup.py::test_list_planning_here_imports_no_plan_file_module).
        from ci_policy.render.jsondoc import shard_files_json

        print(shard_files_json(stage, shard, listed.invalid))
        return report_incomplete(NAME, listed.invalid, section=False)
    if shard is None:
        print(f"# stage {stage.name} is skipped: {one_line('; '.join(stage.reasons))}", file=sys.stderr)
    if shard is not None and stage.stage.command:
        # Its one file is the stage's name; what runs is the command.
        print(f"# command: {one_line(command_text(stage.stage))}")
        return report_incomplete(NAME, listed.invalid)
    for file in shard.files if shard is not None else ():
        print(line_start(one_line(file)))
    return report_incomplete(NAME, listed.invalid)
