"""`ci-policy run`: run the files of one stage shard (or several, in turn) on this runner.

- In: --repo, --config, the plan inputs or --plan FILE|DIR (the plan job's plan JSON, a
  per-stage plan, or the directory of both: no test file is parsed, see
  `cli.options.plan_from_file`; from a per-stage plan that holds, with no gate to evaluate
  and no store named, no configuration either: `cli.options.stage_job`), --stage, --shard
  or --shards, --python, retry and output options.
- Out: the shard's header, each file's output, a summary; timing records and the merged
  metric records of passing files; gates evaluated for files that declare them.
  Exit 0 when every file (and every enforced gate) passed, 1 otherwise, 143 on SIGTERM,
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
- `--python PATH`: the interpreter the tests run with (the adopting repository's
  environment, not ci_policy's); default: the one running ci-policy.
- Refused before any file runs: a checkout that differs from `--plan FILE` (exit 1, naming
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
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ci_policy.adapters.console import write_commands
from ci_policy.cli.main import summary
from ci_policy.cli.options import (
    add_cache,
    add_checkout,
    add_format,
    add_plan_inputs,
    add_shard,
    add_store,
    append_step_summary,
    non_negative_float,
    plan_checkout,
    positive_int,
    stage_job,
    store_url,
)

if TYPE_CHECKING:
    from ci_policy.adapters.git import CleanTree

NAME = "run"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=summary(NAME),
                       description="Run the files of one stage shard on this runner (each as `python FILE`), "
                                   "retrying failures classified retriable, recording timings and metrics, and "
                                   "evaluating the metric gates of files that declare them.")
    add_checkout(p)
    add_cache(p)
    add_shard(p)
    p.add_argument("--shards", default=None, metavar="'I J ...'",
                   help="several shard indices, space-separated, run one after another with one summary "
                        "(a lane of the plan's stage_matrix); not with --shard")
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


def _records_dir(args: argparse.Namespace, repo: Path) -> Path:
    if args.records_out:
        return Path(args.records_out)
    runner_temp = os.environ.get("RUNNER_TEMP")
    return Path(runner_temp) / "ci-policy-records" if runner_temp else repo / ".ci-policy" / "records"


def _gated(store: str | None) -> bool:
    """Whether a gate store is named (`--store`, `--store-file` or the environment's URL): its location
    is checked even when no file declares gates."""
    from ci_policy.cli.extras import DATABASE_URL_ENV

    return bool(store or os.environ.get(DATABASE_URL_ENV))


def _gate_hook(store: str | None, job, repo: Path):
    """Gate the files that declare gates, with the plan's cadence deciding baseline writes."""
    from ci_policy.plan.results import GateOutcome

    def no_gates(reg, series, problems=None):
        return GateOutcome(file=reg.file, registration=reg, baseline="no gates declared")

    plan = job.plan
    if plan is None:
        # A per-stage plan's job (`plan.planfile.stage_job`): no file of it declares gates, no
        # baseline is written where another file does, and no store is named. The run's attempt
        # is checked as when another file's gates are evaluated.
        if job.declares_gates:
            from ci_policy.cli.gate import attempt_of

            attempt_of()
        return no_gates
    if not plan.snapshot.gates and not _gated(store):
        # No gate to evaluate and no store location to check: the store's modules stay unloaded.
        return no_gates
    from ci_policy.adapters.gate import baseline_store_problem, check_store_location, opener, run_gate
    from ci_policy.cli.gate import run_identity

    check_store_location(store)
    snapshot = plan.snapshot
    declared = {g.file for g in snapshot.gates}
    identity = run_identity()
    # Refused before any test runs, not after the shard's hours of GPU time.
    if declared and identity.run_id is not None and plan.policy.write_baseline:
        problem = baseline_store_problem(store)
        if problem is not None:
            raise problem

    def hook(reg, series, problems=None):
        if reg.file not in declared:
            return GateOutcome(file=reg.file, registration=reg, baseline="no gates declared")
        return run_gate(snapshot, reg, series, opener(store, repo), cadence=plan.policy.cadence,
                        event=plan.policy.event, run=identity, problems=problems)
    return hook


def _shard_indices(args: argparse.Namespace) -> list[int] | None:
    """The indices `--shards` names, in order; None without it."""
    from ci_policy.errors import UsageError

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
    return indices


def _timings_out(value: str | None, repo: Path) -> Path | None:
    """`--timings-out`, refused inside the checkout: the tests write there (so does the PR)."""
    from ci_policy.errors import UsageError

    if value is None:
        return None
    inside = os.path.relpath(os.path.realpath(value), os.path.realpath(repo))
    if not inside.startswith(".."):
        raise UsageError(f"{value} is inside the checkout {repo}, where the tests can write; the timing records "
                         "are evidence for `ci-policy tune`", source="--timings-out",
                         hint="write them outside the checkout, e.g. $RUNNER_TEMP/ci-policy-timings.jsonl")
    return Path(value)


def _python(value: str | None) -> str:
    import shutil

    from ci_policy.errors import UsageError

    if value is None:
        return sys.executable
    found = shutil.which(value)
    if found is None:
        raise UsageError(f"{value!r} is not an executable file or a command on PATH", source="--python",
                         hint="pass the interpreter of the repository's test environment, e.g. .venv/bin/python")
    return found


def _shard_of(stage, index: int):
    """`pick_shard` for one index of `--shards`; its errors name that option."""
    from ci_policy.errors import UsageError
    from ci_policy.plan.stagejob import pick_shard

    try:
        return pick_shard(stage, index)
    except UsageError as exc:
        if exc.source != "--shard":
            raise
        raise UsageError(exc.message, source="--shards", hint=exc.hint) from None


def run(args: argparse.Namespace) -> int:
    # With --plan, git looks at the checkout beside the imports below and the plan file's reading.
    with plan_checkout(args) as tree:
        return _run(args, tree)


def _run(args: argparse.Namespace, tree: CleanTree | None) -> int:
    from ci_policy.adapters.runner.environment import hide_from_tests
    from ci_policy.adapters.runner.shard import RunOptions, Terminated, run_shard
    from ci_policy.cli.collector import resume
    from ci_policy.plan.results import combined
    from ci_policy.plan.stagejob import pick_shard
    from ci_policy.render.escape import escape_data, one_line
    from ci_policy.render.text import invalid_text, run_summary_text, shard_header

    indices = _shard_indices(args)
    python = _python(args.python)
    store = store_url(args)
    timings_out = _timings_out(args.timings_out, Path(args.repo))
    job = stage_job(args, tree, gated=_gated(store))
    stage = job.stage
    picked = ([pick_shard(stage, args.shard)] if indices is None
              else [_shard_of(stage, index) for index in indices])
    shards = [shard for shard in picked if shard is not None]
    if job.invalid:
        print(invalid_text(job.invalid))
        if args.format == "github":
            write_commands("::warning::" + escape_data(
                f"the plan is incomplete: {len(job.invalid)} invalid test file(s) not run: "
                + ", ".join(f.file for f in job.invalid) + " (see the plan job)"))
        print(flush=True)
    if not shards:
        print(f"Stage {stage.name} has nothing to run: {one_line('; '.join(stage.reasons))}")
        return 0
    repo = Path(args.repo)
    options = RunOptions(
        max_attempts=args.max_attempts,
        retry_wait=args.retry_wait,
        continue_on_error=args.continue_on_error,
        bypass_fastfail=job.bypass_fastfail,
        github=args.format == "github",
        timings_out=timings_out,
        settings=job.settings,
        records_dir=_records_dir(args, repo),
        gate=_gate_hook(store, job, repo),
        python=python,
    )
    fast_fail = not (options.continue_on_error or options.bypass_fastfail)
    # The tests' environment leaves out every secret; the runner's own /proc/<pid>/environ must too.
    hide_from_tests()
    resume()  # the reading is done; the tests may run for hours
    results = []
    try:
        for i, shard in enumerate(shards):
            print(shard_header(stage, shard), flush=True)
            results.append(run_shard(repo, stage, shard, options))
            if fast_fail and not results[-1].ok and i + 1 < len(shards):
                print(f"ci-policy: stopping after shard {shard.index} failed (fast-fail); shard(s) "
                      f"{' '.join(str(s.index) for s in shards[i + 1:])} not run. Use --continue-on-error "
                      "to run them.", flush=True)
                break
    except Terminated:
        print("ci-policy run: terminated (SIGTERM); the running test and its processes were killed",
              file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("ci-policy run: interrupted; the running test and its processes were killed", file=sys.stderr)
        return 130
    if indices is None:
        result = results[0]
    else:
        regs = {r.file: r for r in stage.tests}
        skipped = [regs[f] for shard in shards[len(results):] for f in shard.files]
        result = combined(tuple(s.index for s in shards), results, skipped)
    github = args.format == "github"
    print(run_summary_text(result, warnings=not github), flush=True)  # github: annotated below
    if github:
        from ci_policy.render.github import run_annotations
        from ci_policy.render.markdown import run_summary_markdown

        annotations = run_annotations(result)
        if annotations:
            write_commands(annotations)
        append_step_summary(NAME, run_summary_markdown(result))
    return 0 if result.ok else 1
