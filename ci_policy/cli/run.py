"""`ci-policy run`: run the files of one stage shard on this runner.

- In: --repo, --config, the plan inputs, --stage, --shard, retry and output options.
- Out: the shard's header, each file's output, a summary; timing records and the merged
  metric records of passing files; gates evaluated for files that declare them.
  Exit 0 when every file (and every enforced gate) passed, 1 otherwise, 143 on SIGTERM,
  130 on Ctrl-C.
- Partial plan (a test file is invalid): the shard's own files still run and decide the
  exit code; the invalid files are listed first with their diagnostics (github format:
  one `::warning` naming them, since the plan job annotates each diagnostic and its
  result job fails the workflow on `plan_complete`). Failing every shard for one broken
  file would hide every other result.
- The files run are exactly those `ci-policy list` prints for the same options.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ci_policy.cli.options import (
    add_checkout,
    add_format,
    add_plan_inputs,
    add_shard,
    append_step_summary,
    non_negative_float,
    plan_from_args,
    positive_int,
)

NAME = "run"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help="run the files of one stage shard on this runner",
                       description="Run the files of one stage shard on this runner (each as `python FILE`), "
                                   "retrying failures classified retriable, recording timings and metrics, and "
                                   "evaluating the metric gates of files that declare them.")
    add_checkout(p)
    add_shard(p)
    add_plan_inputs(p)
    p.add_argument("--continue-on-error", action="store_true",
                   help="run every file even after one failed (default: stop at the first failure)")
    p.add_argument("--max-attempts", type=positive_int, default=1, metavar="N",
                   help="attempts per file; only failures classified retriable are retried (default 1)")
    p.add_argument("--retry-wait", type=non_negative_float, default=0.0, metavar="SECONDS",
                   help="seconds to wait before a retry (default 0)")
    p.add_argument("--timings-out", default=None, metavar="FILE",
                   help="JSONL timing records (default $RUNNER_TEMP/ci-policy-timings.jsonl, "
                        "else .ci-policy/timings.jsonl)")
    p.add_argument("--records-out", default=None, metavar="DIR",
                   help="merged metric records of passing files (default $RUNNER_TEMP/ci-policy-records, "
                        "else .ci-policy/records)")
    p.add_argument("--store", default=None, metavar="URL",
                   help="metric history for gates: sqlite path or postgresql:// URL "
                        "(default $CI_POLICY_DATABASE_URL, else DIR/.ci-policy/metrics.sqlite)")
    add_format(p, ("text", "github"))
    return p


def _records_dir(args: argparse.Namespace, repo: Path) -> Path:
    if args.records_out:
        return Path(args.records_out)
    runner_temp = os.environ.get("RUNNER_TEMP")
    return Path(runner_temp) / "ci-policy-records" if runner_temp else repo / ".ci-policy" / "records"


def _gate_hook(args: argparse.Namespace, plan, repo: Path):
    """Gate the files that declare gates, with the plan's cadence deciding baseline writes."""
    from ci_policy.adapters.gate import opener, run_gate
    from ci_policy.cli.gate import run_identity
    from ci_policy.plan.results import GateOutcome

    snapshot = plan.snapshot
    declared = {g.file for g in snapshot.gates}
    identity = run_identity()

    def hook(reg, series):
        if reg.file not in declared:
            return GateOutcome(file=reg.file, registration=reg, baseline="no gates declared")
        return run_gate(snapshot, reg, series, opener(args.store, repo), cadence=plan.policy.cadence,
                        event=plan.policy.event, run=identity)
    return hook


def run(args: argparse.Namespace) -> int:
    from ci_policy import render
    from ci_policy.adapters.runner.shard import RunOptions, Terminated, run_shard
    from ci_policy.plan.build import shard_of

    plan = plan_from_args(args)
    stage, shard = shard_of(plan, args.stage, args.shard)
    if plan.invalid:
        print(render.invalid_text(plan.invalid))
        if args.format == "github":
            print("::warning::" + render.escape_data(
                f"the plan is incomplete: {len(plan.invalid)} invalid test file(s) not run: "
                + ", ".join(f.file for f in plan.invalid) + " (see the plan job)"))
        print(flush=True)
    if shard is None:
        print(f"Stage {stage.name} has nothing to run: {'; '.join(stage.reasons)}")
        return 0
    repo = Path(args.repo)
    runner_config = plan.config.runner
    print(render.shard_header(stage, shard), flush=True)
    options = RunOptions(
        max_attempts=args.max_attempts,
        retry_wait=args.retry_wait,
        continue_on_error=args.continue_on_error,
        bypass_fastfail=plan.policy.bypass_fastfail,
        github=args.format == "github",
        timings_out=Path(args.timings_out) if args.timings_out else None,
        kill_grace=runner_config.kill_grace,
        records_dir=_records_dir(args, repo),
        capture=plan.config.gates.capture,
        gate=_gate_hook(args, plan, repo),
    )
    try:
        result = run_shard(repo, stage, shard, runner_config.retry, options, runner_config.timeout_from_est_time)
    except Terminated:
        print("ci-policy run: terminated (SIGTERM); the running test and its processes were killed",
              file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("ci-policy run: interrupted; the running test and its processes were killed", file=sys.stderr)
        return 130
    print(render.run_summary_text(result), flush=True)
    if args.format == "github":
        annotations = render.run_annotations(result)
        if annotations:
            print(annotations)
        append_step_summary(render.run_summary_markdown(result))
    return 0 if result.ok else 1
