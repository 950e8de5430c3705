"""`ci-policy run`: run the files of one stage shard (or several, in turn) on this runner.

- In: --repo, --config, the plan inputs or --plan FILE|DIR (the plan job's plan JSON, a
  per-stage plan, or the directory of both: no test file is parsed, see
  `app.plan_source`; from a per-stage plan that holds, with no gate to evaluate
  and no store named, no configuration either: `app.plan_source.stage_job`), --stage, --shard
  or --shards, --python, retry and output options.
- Out: the shard's header, each file's output, a summary; timing records and the merged
  metric records of passing files; gates evaluated for files that declare them.
  Exit 0 when every file (and every enforced gate) passed, or failed while quarantined
  (`quarantine:` in the configuration, carried by the plan: listed under QUARANTINED, a
  `::warning` in github format, and in the step summary), 1 otherwise, 143 on SIGTERM,
  130 on Ctrl-C (a second one during the kill only hurries it). A record that cannot be
  written (a full disk) is a warning of the summary, never the exit code.
- Partial plan (a test file is invalid): the shard's own files still run and decide the
  exit code; the invalid files are listed first with their diagnostics (github format:
  one `::warning` naming them, since the plan job annotates each diagnostic and its
  result job fails the workflow on `plan_complete`). Failing every shard for one broken
  file would hide every other result.
- The files run are exactly those `ci-policy list` prints for the same options.
- `--shards "0 2"` (a stage job's lane, `plan.jobs`): the shards one after another, each with
  its header and its timing records; one summary and one exit status for them all. Fast-fail
  (unless bypassed) stops the later shards too; their files are listed as not run.
- The `ci-policy` program first re-executes itself without the secrets of its environment
  block (`app.run.leave_secrets_behind`); who the tests run as is warned about once, when the
  run is set up (its store checked), before the first shard's header.
- `--python PATH`: the interpreter the tests run with (the adopting repository's
  environment, not ci_policy's); default: the one running ci-policy.
- Refused: before any file runs: a checkout that differs from `--plan FILE` (exit 1, naming
  what differs). Refused (exit 2): a plan file that is not a plan, or with plan inputs;
  `--shard` with `--shards`; a `--timings-out` inside the checkout; a
  `--store` URL holding a password (a test could read it from /proc; `--store-file` or
  `$CI_POLICY_DATABASE_URL` carry it); a `--shards` that is not distinct shard indices of
  the stage; a `--python` that is not an executable; before any file runs, a
  baseline-writing run of a checkout that declares gates without an explicit shared store,
  or into a SQLite file under GitHub Actions.
"""

from __future__ import annotations

import argparse
import sys

from ci_policy.app.plan_source import checkout
from ci_policy.app.run import RunRequest, execute, leave_secrets_behind, prepare
from ci_policy.cli.collector import resume
from ci_policy.cli.main import examples, summary
from ci_policy.cli.options import (
    add_cache,
    add_checkout,
    add_format,
    add_plan_inputs,
    add_shard,
    add_store,
    non_negative_float,
    plan_source,
    positive_int,
)
from ci_policy.cli.output import append_step_summary
from ci_policy.errors import UsageError
from ci_policy.render.console import write_commands
from ci_policy.render.escape import escape_data, one_line
from ci_policy.render.text import invalid_text, run_summary_text

NAME = "run"
EXAMPLES = examples(
    ("run the CPU stage's files of a push, its timing records in timings.jsonl",
     "ci-policy run --repo examples/gpu-repo --event push --stage stage-a-cpu"
     " --timings-out timings.jsonl"),
    ("a pull request labelled run-ci-session: the stage's metrics recorded and gated"
     " against metrics.sqlite",
     "ci-policy run --repo examples/gpu-repo --event pull_request --label run-ci-session\n"
     "--stage stage-b-1-gpu-h200 --records-out records --store metrics.sqlite"))


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Run the files of one stage shard on this runner (each as `python FILE`), "
                                   "retrying failures classified retriable, recording timings and metrics, and "
                                   "evaluating the metric gates of files that declare them.",
                       epilog=EXAMPLES)
    add_checkout(p)
    add_cache(p)
    add_shard(p)
    p.add_argument("--shards", default=None, metavar="'I J ...'",
                   help="several shard indices, space-separated, run one after another with one summary "
                        "(a lane of the plan's stage_matrix_<wave>); not with --shard")
    p.add_argument("--python", default=None, metavar="PATH",
                   help="the Python interpreter that runs the tests (default: the one running ci-policy)")
    add_plan_inputs(p, plan_file=True)
    p.add_argument("--continue-on-error", action="store_true",
                   help="run every file even after one failed (default: stop at the first failure)")
    p.add_argument("--max-attempts", type=positive_int, default=1, metavar="N",
                   help="attempts per file; only failures classified retriable are retried (default 1)")
    p.add_argument("--retry-wait", type=non_negative_float, default=0.0, metavar="SECONDS",
                   help="seconds to wait before a retry (default 0)")
    p.add_argument("--timings-out", default=None, metavar="FILE",
                   help="JSONL timing records, outside the checkout (default "
                        "$RUNNER_TEMP/ci-policy-timings.jsonl, else ~/.cache/ci-policy/timings.jsonl)")
    p.add_argument("--records-out", default=None, metavar="DIR",
                   help="merged metric records of passing files (default $RUNNER_TEMP/ci-policy-records, "
                        "else .ci-policy/records)")
    add_store(p)
    add_format(p, ("text", "github"))
    return p


def _shard_indices(args: argparse.Namespace) -> tuple[int, ...] | None:
    """The indices `--shards` names, in order; None without it."""
    if args.shards is None:
        return None
    if args.shard is not None:
        raise UsageError("pass either --shard or --shards, not both", source="--shards")
    words = args.shards.split()
    if not words or not all(w.isascii() and w.isdigit() for w in words):
        raise UsageError(f"expected shard indices separated by spaces, got {args.shards!r}", source="--shards",
                         hint="pass the shards of a stage_matrix entry, e.g. --shards \"0 2\"")
    indices = [int(w) for w in words]
    if len(set(indices)) != len(indices):
        raise UsageError(f"a shard is named twice in {args.shards!r}", source="--shards")
    return tuple(indices)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "own_process", False):
        leave_secrets_behind()  # may re-execute this program: before any output
    source = plan_source(args)
    # With --plan, git looks at the checkout beside the plan file's reading.
    with checkout(source) as tree:
        request = RunRequest(source, shard=args.shard, shards=_shard_indices(args), python=args.python,
                             store=args.store, store_file=args.store_file, timings_out=args.timings_out,
                             records_out=args.records_out, max_attempts=args.max_attempts,
                             retry_wait=args.retry_wait, continue_on_error=args.continue_on_error,
                             github=args.format == "github", cache=args.cache or None)
        prepared = prepare(request, tree)
    job, shards = prepared.job, prepared.shards
    if job.invalid:
        print(invalid_text(job.invalid))
        if args.format == "github":
            whole = [f.file for f in job.invalid if not f.kept]
            partly = [f.file for f in job.invalid if f.kept]
            parts = ([f"{len(whole)} invalid test file(s) not run: " + ", ".join(whole)] if whole else []) + (
                [f"{len(partly)} test file(s) partly read (their invalid registrations not run): "
                 + ", ".join(partly)] if partly else [])
            write_commands("::warning::" + escape_data(
                "the plan is incomplete: " + "; ".join(parts) + " (see the plan job)"))
        print(flush=True)
    if not shards:
        print(f"Stage {job.stage.name} has nothing to run: {one_line('; '.join(job.stage.reasons))}")
        return 0
    def before() -> None:
        # Once the run is set up (its store checked), just before the first test: who can read what.
        for warning in prepared.warnings:
            if args.format == "github":
                write_commands("::warning::" + escape_data(warning))
            else:
                print(f"ci-policy run: warning: {warning}", file=sys.stderr, flush=True)
        resume()  # the reading is done; the tests may run for hours

    executed = execute(request, prepared, lambda text: print(text, flush=True), before=before)
    if executed.signal == 143:
        print("ci-policy run: terminated (SIGTERM); the running test and its processes were killed",
              file=sys.stderr)
        return 143
    if executed.signal == 130:
        print("ci-policy run: interrupted; the running test and its processes were killed", file=sys.stderr)
        return 130
    result = executed.result
    assert result is not None
    github = args.format == "github"
    print(run_summary_text(result, warnings=not github), flush=True)  # github: annotated below
    if github:
        # Imported here: the github and markdown renderers load the planner's modules, which a stage job
        # running from its per-stage plan never imports (tests/cli/test_startup.py::
        # test_a_stage_job_given_its_per_stage_plan_parses_no_configuration).
        from ci_policy.render.github import run_annotations
        from ci_policy.render.markdown import run_summary_markdown

        annotations = run_annotations(result, command=job.settings.command is not None)
        if annotations:
            write_commands(annotations)
        append_step_summary(NAME, run_summary_markdown(result))
    return 0 if result.ok else 1
