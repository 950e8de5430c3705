"""The `ci-policy` command line: argument parsing and output, nothing else.

- In: argv.
- Out: text on stdout/stderr and an exit code: 0 success, 1 a policy/input error
  (every error printed, located, with a hint), 2 a usage error.
- Policy lives in the core modules; adapters (PyGithub, libcst, database drivers)
  are imported only inside the subcommands that need them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

from ci_policy import __version__
from ci_policy.errors import Diagnostic, InputError, InputErrors


def _repo_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", default=".", metavar="DIR",
                   help="root of the checkout to read (default: the current directory)")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="configuration file (default: DIR/.github/ci-policy.yml)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ci-policy",
        description="CI policy engine for repositories whose tests run on scarce accelerators.")
    parser.add_argument("--version", action="version", version=f"ci-policy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("lint", help="check configuration, labels, registrations and gate declarations")
    _repo_arg(p)
    p.add_argument("--format", choices=("text", "json", "github"), default="text")
    p.set_defaults(func=cmd_lint)

    p = sub.add_parser("registry", help="list every test registration")
    _repo_arg(p)
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_registry)

    p = sub.add_parser("plan", help="decide which stages run for a trigger, labels and diff, and their shards")
    _repo_arg(p)
    _plan_inputs(p)
    p.add_argument("--format", choices=("text", "json", "markdown", "github"), default="text")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("list", help="print the files of one stage shard, as the plan splits them")
    _repo_arg(p)
    p.add_argument("--stage", required=True, metavar="S")
    p.add_argument("--shard", type=int, default=None, metavar="I")
    _plan_inputs(p)
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("run", help="run the files of one stage shard on this runner")
    _repo_arg(p)
    p.add_argument("--stage", required=True, metavar="S")
    p.add_argument("--shard", type=int, default=None, metavar="I")
    _plan_inputs(p)
    p.add_argument("--continue-on-error", action="store_true",
                   help="run every file even after one failed (default: stop at the first failure)")
    p.add_argument("--max-attempts", type=_positive_int, default=1, metavar="N",
                   help="attempts per file; only failures classified retriable are retried (default 1)")
    p.add_argument("--retry-wait", type=_non_negative_float, default=0.0, metavar="SECONDS")
    p.add_argument("--timings-out", default=None, metavar="FILE",
                   help="JSONL timing records (default $RUNNER_TEMP/ci-policy-timings.jsonl, "
                        "else .ci-policy/timings.jsonl)")
    p.add_argument("--list-only", action="store_true", help="print the shard's files (as `list`) and stop")
    p.add_argument("--records-out", default=None, metavar="DIR",
                   help="merged metric records of passing files (default $RUNNER_TEMP/ci-policy-records, "
                        "else .ci-policy/records)")
    p.add_argument("--store", default=None, metavar="URL",
                   help="metric history for gates: sqlite path or postgresql:// URL "
                        "(default $CI_POLICY_DATABASE_URL, else DIR/.ci-policy/metrics.sqlite)")
    p.add_argument("--format", choices=("text", "github"), default="text")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("gate", help="evaluate a test file's metric gates against the metric history")
    _repo_arg(p)
    p.add_argument("--file", required=True, metavar="F", help="the registered test file (repo-relative)")
    p.add_argument("--record", required=True, metavar="R", help="the run's merged metric record (JSON)")
    p.add_argument("--stage", metavar="S", help="the stage, when the file is registered for several")
    p.add_argument("--store", metavar="URL",
                   help="sqlite path or postgresql:// URL (default $CI_POLICY_DATABASE_URL, "
                        "else DIR/.ci-policy/metrics.sqlite)")
    p.add_argument("--cadence", default="regular", metavar="C",
                   help="nightly and weekly runs write baselines; regular and release never do")
    p.add_argument("--event", default=None, metavar="E",
                   help="the triggering event (default $GITHUB_EVENT_NAME); pull_request never writes")
    p.add_argument("--run-id", default=None, help="default $GITHUB_RUN_ID")
    p.add_argument("--run-attempt", type=_positive_int, default=None, help="default $GITHUB_RUN_ATTEMPT, else 1")
    p.add_argument("--commit", default=None, help="default $GITHUB_SHA")
    p.add_argument("--format", choices=("text", "github"), default="text")
    p.set_defaults(func=cmd_gate)

    p = sub.add_parser("tune", help="propose est_time values from the timings of past runs")
    _repo_arg(p)
    p.add_argument("--from", dest="sources", action="append", default=[], metavar="PATH",
                   help="timing records (*.jsonl) or job logs (*.txt, *.log), files or directories; repeatable")
    p.add_argument("--github-run", action="append", default=[], metavar="OWNER/REPO/RUN_ID",
                   help="download a run's job logs and timing artifacts (or give its URL); repeatable")
    p.add_argument("--api-url", default=None, metavar="URL", help="default $GITHUB_API_URL")
    p.add_argument("--token-env", default="GITHUB_TOKEN", metavar="NAME")
    p.add_argument("--csv", default=None, metavar="OUT", help="one row per (run, job, file), citing its source")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--apply", action="store_true", help="rewrite the est_time literals (libcst)")
    mode.add_argument("--check", action="store_true", help="exit 1 when a proposal would change a file")
    mode.add_argument("--write-estimates", default=None, metavar="FILE",
                      help="write the proposals to a JSON estimates file instead of editing tests")
    p.set_defaults(func=cmd_tune, format="text")

    p = sub.add_parser("file-run", help="resolve where /rerun-test runs one test file of a checkout")
    p.add_argument("--file", required=True, metavar="PATH", help="tests/.../test_*.py, repo-relative")
    p.add_argument("--source-root", required=True, metavar="DIR", help="the checkout to read (as data)")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="trusted configuration (default: the checkout's .github/ci-policy.yml)")
    p.add_argument("--image-tag", default=None, metavar="TAG")
    p.add_argument("--format", choices=("json", "github"), default="json")
    p.set_defaults(func=cmd_file_run, repo=None)

    p = sub.add_parser("comment", help="handle a PR comment command (issue_comment event)")
    p.add_argument("--repo", default=".", metavar="DIR",
                   help="the TRUSTED default-branch checkout holding the policy and configuration")
    p.add_argument("--config", default=None, metavar="FILE")
    p.add_argument("--event", default=None, metavar="FILE", help="event payload (default $GITHUB_EVENT_PATH)")
    p.add_argument("--policy", default=None, metavar="FILE",
                   help="access policy (default DIR/.github/ci-commands.json)")
    p.add_argument("--repository", default=None, metavar="OWNER/NAME", help="default $GITHUB_REPOSITORY")
    p.add_argument("--repository-id", default=None, type=int, metavar="ID", help="default $GITHUB_REPOSITORY_ID")
    p.add_argument("--api-url", default=None, metavar="URL", help="default $GITHUB_API_URL")
    p.add_argument("--token-env", default="GITHUB_TOKEN", metavar="NAME",
                   help="environment variable holding the token (default GITHUB_TOKEN)")
    p.add_argument("--commands", default=None, metavar="KINDS",
                   help="comma-separated command kinds this job handles (add_label, clear_labels, "
                        "rerun_failed_ci, rerun_test); others are ignored. Default: all")
    p.add_argument("--dry-run", action="store_true",
                   help="print every mutating API request as a JSON line instead of sending it")
    p.set_defaults(func=cmd_comment, format="text")
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def _plan_inputs(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("plan inputs")
    g.add_argument("--event", required=True,
                   help="pull_request, schedule, workflow_dispatch or workflow_call")
    g.add_argument("--labels-json", metavar="JSON",
                   help="the PR labels as a JSON array (toJSON(github.event.pull_request.labels.*.name))")
    g.add_argument("--label", action="append", default=None, metavar="L", help="a PR label (repeatable)")
    g.add_argument("--schedule", metavar="CRON", help="the schedule's cron (schedule events)")
    g.add_argument("--cadence", metavar="C", help="cadence override: regular, nightly, weekly or release")
    g.add_argument("--diff", metavar="FILE", help="output of git diff --name-status -z -M BASE HEAD")
    g.add_argument("--base", metavar="REV", help="run git diff against this base revision")
    g.add_argument("--head", metavar="REV", help="head revision for --base (default: HEAD)")


def _plan_from_args(args: argparse.Namespace):
    from ci_policy.read.diff import Diff, git_diff, read_diff_file
    from ci_policy.plan.build import build_plan
    from ci_policy.plan.policy import Trigger, parse_labels_json
    from ci_policy.model.snapshot import load_snapshot

    # A workflow passes every input on one line; GitHub gives "" for a value the event lacks.
    for name in ("schedule", "cadence", "base", "head"):
        if getattr(args, name) == "":
            setattr(args, name, None)
    if args.head and not args.base:
        raise InputError("--head needs --base", path="--head")
    if args.diff and args.base:
        raise InputError("pass either --diff or --base, not both", path="--diff")
    if args.labels_json is not None and args.label:
        raise InputError("pass either --labels-json or --label, not both", path="--labels-json")
    labels = parse_labels_json(args.labels_json) if args.labels_json is not None else tuple(args.label or ())
    repo = Path(args.repo)
    snapshot = load_snapshot(repo, args.config)
    if args.diff:
        diff = read_diff_file(Path(args.diff))
    elif args.base:
        diff = git_diff(repo, args.base, args.head or "HEAD")
    else:
        diff = Diff.unavailable("no --diff or --base was given")
    trigger = Trigger(event=args.event, labels=labels, schedule=args.schedule, cadence=args.cadence)
    return build_plan(snapshot, trigger, diff)


def _github_file(name: str) -> Path:
    value = os.environ.get(name)
    if not value:
        raise InputError(f"${name} is not set; --format github runs inside a GitHub Actions step",
                          path=f"${name}", hint="use --format text, json or markdown outside GitHub Actions")
    return Path(value)


def cmd_plan(args: argparse.Namespace) -> int:
    import uuid

    from ci_policy import render

    plan = _plan_from_args(args)
    if args.format == "json":
        print(render.plan_json(plan))
    elif args.format == "markdown":
        print(render.plan_markdown(plan), end="")
    elif args.format == "github":
        outputs, summary = _github_file("GITHUB_OUTPUT"), _github_file("GITHUB_STEP_SUMMARY")
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


def _records_dir(args: argparse.Namespace, repo: Path) -> Path:
    if args.records_out:
        return Path(args.records_out)
    runner_temp = os.environ.get("RUNNER_TEMP")
    return Path(runner_temp) / "ci-policy-records" if runner_temp else repo / ".ci-policy" / "records"


def _gate_hook(args: argparse.Namespace, plan, repo: Path):
    """Gate the files that declare gates, with the plan's cadence deciding baseline writes."""
    from ci_policy.adapters.gate import opener, run_gate

    snapshot = plan.snapshot
    declared = {g.file for g in snapshot.gates}
    run = run_identity()

    def hook(reg, series):
        from ci_policy.adapters.gate import GateOutcome

        if reg.file not in declared:
            return GateOutcome(file=reg.file, registration=reg, baseline="no gates declared")
        return run_gate(snapshot, reg, series, opener(args.store, repo), cadence=plan.policy.cadence,
                        event=plan.policy.event, run=run)
    return hook


def cmd_run(args: argparse.Namespace) -> int:
    from ci_policy import render
    from ci_policy.plan.build import shard_of
    from ci_policy.adapters.runner.shard import RunOptions, run_shard

    plan = _plan_from_args(args)
    stage, shard = shard_of(plan, args.stage, args.shard)
    if shard is None:
        print(f"Stage {stage.name} has nothing to run: {'; '.join(stage.reasons)}")
        return 0
    if args.list_only:
        for file in shard.files:
            print(file)
        return 0
    repo = Path(args.repo)
    runner_config = plan.config.runner
    print(render.shard_header(stage, shard), flush=True)
    gate = _gate_hook(args, plan, repo)
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
        gate=gate,
    )
    from ci_policy.adapters.runner.shard import Terminated

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
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(render.run_summary_markdown(result))
    return 0 if result.ok else 1


def run_identity(run_id=None, run_attempt=None, commit=None):
    from ci_policy.adapters.gate import RunIdentity

    attempt = run_attempt or os.environ.get("GITHUB_RUN_ATTEMPT") or 1
    try:
        attempt = int(attempt)
    except ValueError:
        raise InputError(f"GITHUB_RUN_ATTEMPT is not a number: {attempt!r}", path="$GITHUB_RUN_ATTEMPT") from None
    if attempt < 1:
        raise InputError(f"the run attempt must be at least 1, got {attempt}", path="$GITHUB_RUN_ATTEMPT")
    return RunIdentity(run_id=run_id or os.environ.get("GITHUB_RUN_ID") or None, run_attempt=attempt,
                       commit=commit or os.environ.get("GITHUB_SHA") or None)


def cmd_gate(args: argparse.Namespace) -> int:
    from ci_policy import render
    from ci_policy.config import CADENCES
    from ci_policy.adapters.gate import opener, registration_for, run_gate
    from ci_policy.sdk.metrics import read_record
    from ci_policy.model.snapshot import load_snapshot

    if args.cadence not in CADENCES:
        raise InputError(f"unknown cadence {args.cadence!r}; expected one of {', '.join(CADENCES)}",
                          path="--cadence")
    repo = Path(args.repo)
    snapshot = load_snapshot(repo, args.config).require_valid()
    reg = registration_for(snapshot, args.file, args.stage)
    try:
        series = read_record(Path(args.record))
    except (OSError, ValueError, KeyError, TypeError, OverflowError) as exc:
        raise InputError(f"--record: {args.record} is not a readable metric record: {exc}",
                          path=args.record, hint="pass the record ci-policy run merged for this file") from None
    outcome = run_gate(snapshot, reg, series, opener(args.store, repo), cadence=args.cadence,
                       event=args.event or os.environ.get("GITHUB_EVENT_NAME"),
                       run=run_identity(args.run_id, args.run_attempt, args.commit))
    print(render.gate_text(outcome))
    if args.format == "github":
        annotations = render.gate_annotations(outcome)
        if annotations:
            print(annotations)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(render.gate_markdown(outcome))
    return 1 if outcome.blocking else 0


def cmd_file_run(args: argparse.Namespace) -> int:
    import json
    import uuid

    from ci_policy.plan.filerun import resolve_file
    from ci_policy.render import github_output_lines

    # An empty --image-tag (a workflow input left blank) means the configured default_tag.
    plan = resolve_file(args.file, Path(args.source_root), config_path=args.config,
                        image_tag=args.image_tag or None)
    if args.format == "github":
        values = {"hw": plan.hw, "suite": plan.suite, "runs_on": json.dumps(list(plan.runs_on)),
                  "container_image": plan.container_image or "", "timeout_seconds": str(plan.timeout_seconds),
                  "timeout_minutes": str(-(-plan.timeout_seconds // 60) + 5)}
        with _github_file("GITHUB_OUTPUT").open("a", encoding="utf-8") as fh:
            fh.write(github_output_lines(values, f"ghadelimiter_{uuid.uuid4()}"))
    print(json.dumps(plan.as_dict(), indent=2))
    return 0


def _json_file(path: Path, what: str) -> dict:
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{what} {path} cannot be read as JSON: {exc}", path=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(f"{what} {path} is not a JSON object", path=str(path))
    return data


def cmd_comment(args: argparse.Namespace) -> int:
    from ci_policy.read.checkout import read_text
    from ci_policy.adapters.github.access import parse_access_policy
    from ci_policy.adapters.github.gateway import Gateway, github_api
    from ci_policy.config import DEFAULT_CONFIG, load_config
    from ci_policy.read.labels import load_labels

    repo = Path(args.repo)
    event_path = args.event or os.environ.get("GITHUB_EVENT_PATH")
    if not event_path:
        raise InputError("no event payload: pass --event or set $GITHUB_EVENT_PATH", path="--event")
    event = _json_file(Path(event_path), "event payload")
    repository = args.repository or os.environ.get("GITHUB_REPOSITORY")
    repository_id = args.repository_id or os.environ.get("GITHUB_REPOSITORY_ID")
    if not repository or not repository_id:
        raise InputError("the configured repository is unknown: pass --repository and --repository-id "
                          "(or set $GITHUB_REPOSITORY and $GITHUB_REPOSITORY_ID)", path="--repository")
    try:
        repository_id = int(repository_id)
    except ValueError:
        raise InputError(f"repository id {repository_id!r} is not a number", path="--repository-id") from None
    config = load_config(repo, args.config)
    labels = load_labels(repo, config.labels_file)
    policy_rel = ".github/ci-commands.json"
    if args.policy:
        policy_text, policy_path = Path(args.policy).read_text(encoding="utf-8"), args.policy
    else:
        policy_text, policy_path = read_text(repo, policy_rel, what="access policy"), policy_rel
    access = parse_access_policy(policy_text, labels, policy_path)
    token = os.environ.get(args.token_env, "")
    if not token:
        raise InputError(f"${args.token_env} is empty: the comment gateway needs a token", path=f"${args.token_env}")
    api_url = args.api_url or os.environ.get("GITHUB_API_URL") or "https://api.github.com"
    api = github_api(token, api_url, dry_run=args.dry_run, out=sys.stdout)
    config_path = Path(args.config) if args.config else repo / DEFAULT_CONFIG
    kinds = None
    if args.commands:
        from ci_policy.adapters.github.access import COMMANDS

        kinds = frozenset(k.strip() for k in args.commands.split(",") if k.strip())
        unknown = sorted(kinds - set(COMMANDS))
        if unknown:
            raise InputError(f"unknown command kind(s) {', '.join(unknown)}; expected some of {', '.join(COMMANDS)}",
                              path="--commands")
    result = Gateway(api, access, config, config_path, kinds=kinds).handle(event, repository, repository_id)
    print(f"ci-policy comment: {result.status}: {result.message}", file=sys.stderr if args.dry_run else sys.stdout)
    return result.exit_code


def cmd_tune(args: argparse.Namespace) -> int:
    from ci_policy.model import estimates as estimates_mod
    from ci_policy.model.snapshot import load_snapshot
    from ci_policy.adapters.tuning.propose import LOWER, RAISE, backend_of, balance, deduplicate, normalise_paths, propose
    from ci_policy.adapters.tuning.report import csv_text, summary_text
    from ci_policy.adapters.tuning.sources import collect

    repo = Path(args.repo)
    snapshot = load_snapshot(repo, args.config).require_valid()
    config = snapshot.config
    if args.apply and config.estimates_file:
        raise InputError(f"this repository keeps est_time in {config.estimates_file} (estimates_file); "
                          "--apply would edit literals the plan does not use", path="--apply",
                          hint=f"use --write-estimates {config.estimates_file}")
    if not args.sources and not args.github_run:
        raise InputError("no evidence: pass --from PATH or --github-run RUN", path="--from")
    evidence = collect([Path(p) for p in args.sources])
    if args.github_run:
        from ci_policy.adapters.github.download import download_run

        token = os.environ.get(args.token_env, "")
        if not token:
            raise InputError(f"${args.token_env} is empty: --github-run needs a token", path=f"${args.token_env}")
        api_url = args.api_url or os.environ.get("GITHUB_API_URL") or "https://api.github.com"
        for spec in args.github_run:
            evidence += download_run(spec, token, api_url)
    evidence = normalise_paths(evidence, snapshot.files)
    counted = deduplicate(evidence)
    applying = bool(args.apply or args.check or args.write_estimates)
    proposals = propose(counted, snapshot, config.tune, applying=applying)
    if args.csv:
        Path(args.csv).write_text(csv_text(evidence, proposals, lambda row: backend_of(row, snapshot) or "?",
                                           counted=counted), encoding="utf-8")
    print(summary_text(proposals, balance(snapshot, proposals)))
    changing = [p for p in proposals if p.action in (RAISE, LOWER)]
    if args.check:
        return 1 if changing else 0
    if args.write_estimates:
        target = Path(args.write_estimates)
        table: dict = {}
        if target.exists():
            table = estimates_mod.parse_estimates(target.read_text(encoding="utf-8"), str(target))
        for p in changing:
            table[(p.file, p.suite)] = p.proposed
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(estimates_mod.render((f, s, e) for (f, s), e in table.items()), encoding="utf-8")
        print(f"ci-policy tune: wrote {len(table)} estimate(s) to {target}")
    if args.apply:
        from ci_policy.adapters.tuning.apply import apply_to_file

        skipped = 0
        for p in changing:
            result = apply_to_file(repo / p.file, p.backend, p.proposed)
            detail = f": {result.reason}" if result.reason else ""
            print(f"{p.file}: {result.status} ({p.backend} est_time {p.current:g} -> {p.proposed}){detail}")
            skipped += result.status == "skipped"
        if skipped:
            # The balance printed above assumed every edit; say plainly that some were not made.
            print(f"ci-policy tune: {skipped} proposal(s) were not applied (see above); edit them by hand",
                  file=sys.stderr)
            return 1
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from ci_policy.plan.build import shard_of

    plan = _plan_from_args(args)
    stage, shard = shard_of(plan, args.stage, args.shard)
    if shard is None:
        print(f"# stage {stage.name} is skipped: {'; '.join(stage.reasons)}", file=sys.stderr)
        return 0
    for file in shard.files:
        print(file)
    return 0


def _path_of(repo: Path, config: Optional[str] = None) -> Callable[[str], str]:
    """Annotation paths relative to the workspace (the current directory) when possible.

    Error paths are repo-relative, except two that are already relative to the current
    directory (or absolute): the --repo argument itself and a --config file outside the
    checkout; those are shown as given.
    """
    as_given = {str(repo)}
    if config is not None:
        try:
            Path(config).resolve().relative_to(repo.resolve())
        except (OSError, ValueError):
            as_given.add(str(config))

    def convert(path: str) -> str:
        if Path(path).is_absolute() or path in as_given or path.startswith(("--", "$")):
            return path
        try:
            rel = os.path.relpath(repo / path, Path.cwd())
        except ValueError:
            return path
        return path if rel == ".." or rel.startswith("../") else Path(rel).as_posix()
    return convert


def cmd_lint(args: argparse.Namespace) -> int:
    from ci_policy.model.lint import lint
    from ci_policy.render import lint_report

    repo = Path(args.repo)
    report = lint(repo, args.config)
    print(lint_report(report, args.format, _path_of(repo, args.config)))
    return 0 if report.ok else 1


def cmd_registry(args: argparse.Namespace) -> int:
    from ci_policy.render import registry_json, registry_text
    from ci_policy.model.snapshot import load_snapshot

    snapshot = load_snapshot(Path(args.repo), args.config).require_valid()
    render = registry_json if args.format == "json" else registry_text
    print(render(snapshot.registrations))
    return 0


def report_errors(errors: Sequence[Diagnostic], fmt: str, repo: Optional[Path],
                  config: Optional[str] = None) -> None:
    """The one place errors become output: annotations in github format, text otherwise."""
    from ci_policy.render import diagnostics

    path_of = _path_of(repo, config) if repo is not None else (lambda p: p)
    if fmt == "github":
        print(diagnostics(errors, "github", path_of))
    else:
        print(diagnostics(errors, "text"), file=sys.stderr)
    n = len(errors)
    print(f"ci-policy: {n} error{'s' if n != 1 else ''}", file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    fmt = getattr(args, "format", "text")
    repo = Path(args.repo) if getattr(args, "repo", None) else None
    config = getattr(args, "config", None)
    try:
        return args.func(args)
    except InputErrors as exc:
        report_errors(exc.errors, fmt, repo, config)
        return 1
    except InputError as exc:
        report_errors([exc.diagnostic], fmt, repo, config)
        return 1
    except BrokenPipeError:
        return 1
    except (OSError, RecursionError, MemoryError) as exc:
        # A checkout the core could not read (see lint.read_failure): an input error, not a crash.
        from ci_policy.model.lint import read_failure

        report_errors([read_failure(exc)], fmt, repo, config)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
