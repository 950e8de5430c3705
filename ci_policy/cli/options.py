"""Options shared by several subcommands, stated once.

- In: an `argparse` parser to extend; later, the parsed `Namespace` and the environment.
- Out: the same spelling, default and help text for an option wherever it appears;
  the requests a handler passes to its use case (`app.requests`), a token, a store URL.
  What every command writes alike (a warning, `$GITHUB_OUTPUT`, the job summary) is
  `cli.output`'s.
- Refused: a malformed option value or a missing variable, as `UsageError` (exit 2)
  naming the option (`--head`) or variable (`$GITHUB_TOKEN`) at fault.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from ci_policy.app.attempts import run_attempt
from ci_policy.app.requests import PlanInputs, PlanRequest, PlanSource, ScanRequest
from ci_policy.app.stores import store_url as named_store
from ci_policy.cli.output import warn
from ci_policy.errors import UsageError
from ci_policy.read.numbers import is_finite_number

Format = Literal["text", "json", "markdown", "github"]

DEFAULT_API_URL = "https://api.github.com"


def add_repo(p: argparse.ArgumentParser, *, help: str = "root of the checkout to read, as data "
             "(default: the current directory)") -> None:
    p.add_argument("--repo", default=".", metavar="DIR", help=help)


def add_config(p: argparse.ArgumentParser, *,
               help: str = "configuration file (default: DIR/.github/ci-policy.yml)") -> None:
    p.add_argument("--config", default=None, metavar="FILE", help=help)


def add_checkout(p: argparse.ArgumentParser) -> None:
    add_repo(p)
    add_config(p)


_FORMAT_HELP = {
    "text": "text: for people",
    "json": "json: for programs (schema 1)",
    "markdown": "markdown: a job summary",
    "github": "github: annotations, step outputs and summary inside GitHub Actions",
}


def add_format(p: argparse.ArgumentParser, choices: Sequence[Format], default: Format = "text") -> None:
    """`--format` with the choices this command produces; each choice is explained."""
    explained = "; ".join(_FORMAT_HELP[c] for c in choices)
    p.add_argument("--format", choices=tuple(choices), default=default,
                   help=f"output format (default {default}). {explained}")


def add_token(p: argparse.ArgumentParser, needed_for: str) -> None:
    p.add_argument("--api-url", default=None, metavar="URL",
                   help=f"GitHub API URL (default $GITHUB_API_URL, else {DEFAULT_API_URL})")
    p.add_argument("--token-env", default="GITHUB_TOKEN", metavar="NAME",
                   help=f"environment variable holding the token {needed_for} (default GITHUB_TOKEN)")


def token(args: argparse.Namespace, needed_for: str) -> str:
    value = os.environ.get(args.token_env, "")
    if not value:
        raise UsageError(f"is empty: {needed_for} needs a token", source=f"${args.token_env}",
                         hint=f"set {args.token_env}, or name another variable with --token-env")
    return value


def add_store(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--store", default=None, metavar="URL",
                       help="metric history for gates: sqlite path or postgresql:// URL without a password (default "
                            "$CI_POLICY_DATABASE_URL, else the checkout's SQLite file in "
                            "$XDG_STATE_HOME/ci-policy/, read only); a baseline-writing run needs an explicit store")
    group.add_argument("--store-file", default=None, metavar="FILE",
                       help="a file holding the store URL (one line), for a URL with a password: a command "
                            "line is readable by every process of the machine, the tests included")


def store_url(args: argparse.Namespace) -> str | None:
    """The store `--store` or `--store-file` names, None for neither; never echoes a URL."""
    return named_store(args.store, args.store_file)


def api_url(args: argparse.Namespace) -> str:
    return args.api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL


def run_attempt_arg(text: str) -> int:
    try:
        return run_attempt(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not is_finite_number(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


# -- the plan inputs: plan, list and run decide the same plan from the same options ----------

def add_cache(p: argparse.ArgumentParser, *, jobs: bool = True, default: bool = True) -> None:
    """`--cache DIR` / `--no-cache`: where the scans of test files are kept (see `scan_options`);
    `--jobs N` with `jobs`. `default=False`: without `--cache` no cache is used (file-run)."""
    g = p.add_mutually_exclusive_group()
    where = ("$XDG_CACHE_HOME/ci-policy/scan, else ~/.cache/ci-policy/scan" if default
             else "none: this command reads a single test file")
    g.add_argument("--cache", default=None, metavar="DIR",
                   help=f"keep the scans of test files, by content, in DIR (default: {where}); never inside "
                        "the checkout")
    g.add_argument("--no-cache", action="store_true", help="read and parse every test file, keeping nothing")
    if not jobs:
        return
    p.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                   help="processes that parse test files when many are to be parsed (default $CI_POLICY_JOBS, "
                        "else the CPUs this process may use); 1: parse in this process only")


def scan_request(args: argparse.Namespace, *, default: bool = True) -> ScanRequest:
    """How the command reads the test files (`app.scanning`); a warning is printed in its format."""
    command, fmt = str(getattr(args, "command", "")), getattr(args, "format", None)
    return ScanRequest(Path(args.repo), cache=getattr(args, "cache", None), no_cache=getattr(args, "no_cache", False),
                       jobs=getattr(args, "jobs", None), default_cache=default,
                       warn=lambda message: warn(command, fmt, message))


def _given(text: str) -> str | None:
    return text or None  # a workflow passes every input on one line; GitHub gives "" for what the event lacks


def add_plan_inputs(p: argparse.ArgumentParser, *, plan_file: bool = False) -> None:
    """The plan inputs; with `plan_file` (list, run) also `--plan FILE`, which replaces all of them."""
    g = p.add_argument_group("plan inputs", "what triggered the workflow; an empty value means not given"
                             + ("; or, instead of all of them, --plan FILE|DIR" if plan_file else ""))
    if plan_file:
        g.add_argument("--plan", default=None, metavar="FILE|DIR",
                       help="the plan JSON of this CI run (`ci-policy plan --format json`): take the stage's "
                            "shards from it instead of planning, after checking its inputs (the content ids "
                            "of the configuration, the labels file and every test file) against the checkout; "
                            "or a per-stage plan (`plan --stage-plans`), which holds on its clean git tree only; or "
                            "the directory holding plan.json and stages/ (the stage's own plan when it holds)")
    g.add_argument("--event", required=not plan_file, metavar="EVENT",
                   help="the triggering event: pull_request, push, merge_group, schedule, workflow_dispatch "
                        "or workflow_call")
    g.add_argument("--labels-json", metavar="JSON",
                   help="the PR labels as a JSON array (toJSON(github.event.pull_request.labels.*.name))")
    g.add_argument("--label", action="append", default=None, metavar="L", help="a PR label (repeatable)")
    g.add_argument("--schedule", type=_given, metavar="CRON", help="the schedule's cron (schedule events)")
    g.add_argument("--cadence", type=_given, metavar="C", help="cadence override: regular, nightly, weekly or release")
    g.add_argument("--diff", metavar="FILE", help="output of git diff --name-status -z -M BASE HEAD")
    g.add_argument("--base", type=_given, metavar="REV", help="run git diff against this base revision (a push: "
                   "github.event.before; a merge queue: github.event.merge_group.base_sha)")
    g.add_argument("--head", type=_given, metavar="REV", help="head revision for --base (default: HEAD; a push: "
                   "github.event.after; a merge queue: github.event.merge_group.head_sha)")
    g.add_argument("--trust", default=None, metavar="T",
                   help="how far the head commit is trusted: trusted (default), approved (a maintainer approved "
                        "this commit) or untrusted (accelerator stages are skipped); the trust output of "
                        "ci-policy pull-request")
    g.add_argument("--forced", type=_given, metavar="BOOL", help="push events: github.event.forced (true or false); "
                   "the diff of a force push is unavailable, so every runnable stage runs")


def add_shard(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stage", required=True, metavar="S", help="the stage, as named in the configuration")
    p.add_argument("--shard", type=int, default=None, metavar="I",
                   help="the shard index, from 0 (needed when the stage has several shards)")


_PLAN_INPUTS = ("event", "labels_json", "label", "schedule", "cadence", "diff", "base", "head", "trust", "forced")


def plan_request(args: argparse.Namespace) -> PlanRequest:
    inputs = PlanInputs(event=args.event, labels_json=args.labels_json, labels=tuple(args.label or ()),
                        schedule=args.schedule, cadence=args.cadence, diff=args.diff, base=args.base,
                        head=args.head, trust=args.trust, forced=args.forced)
    return PlanRequest(Path(args.repo), args.config, inputs, scan_request(args))


def plan_source(args: argparse.Namespace) -> PlanSource:
    """`--plan FILE|DIR`, else the plan inputs (None without `--event`), for `list` and `run`."""
    return PlanSource(Path(args.repo), args.config, args.stage, plan_file=args.plan,
                      inputs=plan_request(args) if args.plan is None and args.event is not None else None,
                      given=tuple(name for name in _PLAN_INPUTS if getattr(args, name) is not None))
