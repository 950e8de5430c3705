"""Options shared by several subcommands, stated once.

- In: an `argparse` parser to extend; later, the parsed `Namespace` and the environment.
- Out: the same spelling, default and help text for an option wherever it appears;
  values a handler can pass straight to the core (a `Trigger`, a `Plan`, a token).
- Refused: a malformed option value or a missing variable, as `UsageError` (exit 2)
  naming the option (`--head`) or variable (`$GITHUB_OUTPUT`) at fault.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ci_policy.errors import UsageError
from ci_policy.read.numbers import is_finite_number

if TYPE_CHECKING:
    from ci_policy.adapters.git import CleanTree
    from ci_policy.adapters.scan_cache import DirScanCache
    from ci_policy.config import Config
    from ci_policy.model.snapshot import InvalidFile
    from ci_policy.plan.build import Plan
    from ci_policy.plan.planfile import PlanFile
    from ci_policy.plan.stagejob import StageJob

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


# A password in a URL's user info (`user:pw@`), or a `password=` parameter or libpq keyword.
_URL_PASSWORD = re.compile(r"://[^/@?#]*:[^/@?#]*@|password\s*=", re.IGNORECASE)


def store_url(args: argparse.Namespace) -> str | None:
    """The store `--store` or `--store-file` names, None for neither; never echoes a URL."""
    if args.store_file is not None:
        try:
            with open(args.store_file, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
            raise UsageError(f"cannot read {args.store_file}: {reason}", source="--store-file",
                             hint="write the store URL on the first line of the file") from None
        urls = [line.strip() for line in lines if line.strip()]
        if len(urls) != 1:
            raise UsageError(f"{args.store_file} must hold exactly one store URL, found {len(urls)} non-empty "
                             "lines", source="--store-file", hint="write the store URL on one line")
        return urls[0]
    if args.store is not None:
        from ci_policy.adapters.store import parse_location

        parse_location(args.store, "--store")  # a value that is no store location at all is the first thing to fix
    if args.store is not None and _URL_PASSWORD.search(args.store):
        raise UsageError("the store URL holds a password, and a command line is readable by every process "
                         "of the machine (a test reads it from /proc)", source="--store",
                         hint="pass the URL as $CI_POLICY_DATABASE_URL or in a file with --store-file FILE")
    return args.store or None


def api_url(args: argparse.Namespace) -> str:
    return args.api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL


def github_file(name: str) -> Path:
    """A file GitHub Actions names in the environment ($GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY)."""
    value = os.environ.get(name)
    if not value:
        raise UsageError("is not set; --format github runs inside a GitHub Actions step", source=f"${name}",
                         hint="use --format text or json outside GitHub Actions")
    return Path(value)


def append_github_file(name: str, path: Path, text: str) -> None:
    """Append `text` to a file GitHub Actions named in `$name`; a failure is a usage error
    naming the variable and the path (not a checkout that could not be read)."""
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}", source=f"${name}",
                         hint=f"${name} must name a writable file (GitHub Actions sets it for each step)") from None


def append_step_summary(command: str, markdown: str) -> None:
    """`--format github`'s job summary: appended to `$GITHUB_STEP_SUMMARY` when it is set.

    Every subcommand with a job summary (plan, run, gate, result) writes it here, once per
    command. Unset (outside Actions), nothing is written and one notice line on stderr
    says so; the exit code is the command's own.
    """
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        print(f"ci-policy {command}: notice: $GITHUB_STEP_SUMMARY is not set; the job summary is not written",
              file=sys.stderr)
        return
    if markdown:
        append_github_file("GITHUB_STEP_SUMMARY", Path(summary), markdown)


def warn(command: str, fmt: str | None, message: str) -> None:
    """A warning, printed once in the command's format: an `::warning::` annotation (github
    format, on stdout, nothing else), else `ci-policy COMMAND: warning: MESSAGE` on stderr
    (text; json documents carry their own warnings, and stdout stays the document)."""
    from ci_policy.render import escape_data, one_line

    if fmt == "github":
        from ci_policy.adapters.console import write_commands

        write_commands(f"::warning::{escape_data(f'ci-policy {command}: {message}')}")
    else:
        print(f"ci-policy {command}: warning: {one_line(message)}", file=sys.stderr)


def report_incomplete(command: str, invalid: Sequence[InvalidFile], *, section: bool = True) -> int:
    """After a command printed everything it could: the invalid test files on stderr, and its exit code.

    1 when a test file is invalid (the output is partial), else 0. `section=False` when the
    command's own output already holds the invalid files' diagnostics.
    """
    from ci_policy.render import invalid_text, one_line

    if not invalid:
        return 0
    if section:
        print(invalid_text(invalid), file=sys.stderr)
    print(f"ci-policy {command}: incomplete: {len(invalid)} invalid test file(s) left out: "
          + one_line(", ".join(f.file for f in invalid)), file=sys.stderr)
    return 1


# A run attempt is stored as a 64-bit integer (SQLite, PostgreSQL's bigint).
MAX_RUN_ATTEMPT = 2**63 - 1


def run_attempt(text: str) -> int:
    """A run attempt: ASCII digits (no sign, `_` or other scripts' digits, which `int` takes),
    1 to `MAX_RUN_ATTEMPT`; ValueError with the reason, quoting at most 40 characters."""
    shown = repr(text[:40]) + ("..." if len(text) > 40 else "")
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"is not a number: {shown}")
    if len(text.lstrip("0")) > 19 or int(text) > MAX_RUN_ATTEMPT:
        raise ValueError(f"must be at most {MAX_RUN_ATTEMPT}, got {shown}")
    if int(text) < 1:
        raise ValueError(f"must be at least 1, got {int(text)}")
    return int(text)


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


JOBS_ENV = "CI_POLICY_JOBS"


def jobs(args: argparse.Namespace) -> int:
    """`--jobs N`, else `$CI_POLICY_JOBS`, else the CPUs this process may use (affinity, cgroup quota)."""
    given: int | None = getattr(args, "jobs", None)
    if given is not None:
        return given
    value = os.environ.get(JOBS_ENV, "")
    if value:
        try:
            return positive_int(value)
        except argparse.ArgumentTypeError as exc:
            raise UsageError(str(exc), source=f"${JOBS_ENV}",
                             hint="set it to a whole number of processes, at least 1, or unset it") from None
    from ci_policy.adapters.parallel import available_cores

    return available_cores()


def scan_options(args: argparse.Namespace, repo: Path) -> dict[str, Any]:
    """The `cache`, `index` and `scanner` keywords of `load_snapshot` for these options
    (`index`: the listing, started now; call it for the listing).

    The index (what git lists in a git work tree; None elsewhere) is passed with or
    without the cache: discovery takes its candidates from it either way, so `--no-cache`
    changes no output. A cache directory inside the checkout is a usage error (a pull
    request could plant entries there); one that cannot be used (a symlink, another
    user's, writable by others) is a warning on stderr, and the command reads every file.
    """
    from ci_policy.adapters.git import start_checkout_index
    from ci_policy.adapters.parallel import process_scanner

    scanner = process_scanner(jobs(args))
    cache = {} if getattr(args, "no_cache", False) else {"cache": scan_cache(args, repo)}
    # git lists the checkout while the configuration, the labels and the stored scans are read.
    return {**cache, "index": start_checkout_index(repo), "scanner": scanner}


def scan_cache(args: argparse.Namespace, repo: Path, *, default: bool = True) -> DirScanCache | None:
    """The scan cache `--cache DIR` names, else the default one (None with `default=False`).

    A directory inside the checkout is a usage error; one that cannot be used is a warning
    on stderr, and None.
    """
    from ci_policy.adapters.scan_cache import default_dir, inside, open_cache

    given = getattr(args, "cache", None)
    if given == "":
        given = None  # a workflow passes every input on one line
    if given is None and not default:
        return None
    directory = Path(given) if given is not None else default_dir()
    if inside(directory, repo):
        if given is not None:
            raise UsageError(f"{given} is inside the checkout {repo}", source="--cache",
                             hint="name a directory outside the checkout, or pass --no-cache")
        why: str | None = f"the default cache directory {directory} is inside the checkout"
        cache = None
    else:
        cache, why = open_cache(directory, own=1 if given is not None else 2)
    if cache is None:
        warn(args.command, getattr(args, "format", None),
             f"{'--cache: ' if given is not None else ''}{why}; reading every test file without the scan cache")
    return cache


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
    g.add_argument("--schedule", metavar="CRON", help="the schedule's cron (schedule events)")
    g.add_argument("--cadence", metavar="C", help="cadence override: regular, nightly, weekly or release")
    g.add_argument("--diff", metavar="FILE", help="output of git diff --name-status -z -M BASE HEAD")
    g.add_argument("--base", metavar="REV", help="run git diff against this base revision (a push: "
                   "github.event.before; a merge queue: github.event.merge_group.base_sha)")
    g.add_argument("--head", metavar="REV", help="head revision for --base (default: HEAD; a push: "
                   "github.event.after; a merge queue: github.event.merge_group.head_sha)")
    g.add_argument("--trust", default=None, metavar="T",
                   help="how far the head commit is trusted: trusted (default), approved (a maintainer approved "
                        "this commit) or untrusted (accelerator stages are skipped); the trust output of "
                        "ci-policy pull-request")
    g.add_argument("--forced", metavar="BOOL", help="push events: github.event.forced (true or false); "
                   "the diff of a force push is unavailable, so every runnable stage runs")


def add_shard(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stage", required=True, metavar="S", help="the stage, as named in the configuration")
    p.add_argument("--shard", type=int, default=None, metavar="I",
                   help="the shard index, from 0 (needed when the stage has several shards)")


_PLAN_INPUTS = ("event", "labels_json", "label", "schedule", "cadence", "diff", "base", "head", "trust", "forced")

# A plan of 20,000 test files is a few MB; the cap keeps an artifact from filling memory.
MAX_PLAN_FILE_BYTES = 256 * 1024 * 1024
# `--plan DIR`: the plan job's directory, the whole plan and each stage's (`plan --json-out
# DIR/plan.json --stage-plans DIR/stages`).
WHOLE_PLAN = "plan.json"
STAGE_PLANS = "stages"


def plan_checkout(args: argparse.Namespace) -> CleanTree | contextlib.nullcontext[None]:
    """With `--plan FILE`: git's look at the checkout (`adapters.git.CleanTree`), started now so that
    it runs beside what the command does before it needs the answer (imports, the plan file's
    reading); without `--plan`, nothing (None). Either is a context manager: leaving it ends
    the git commands not waited for."""
    if getattr(args, "plan", None) is None:
        return contextlib.nullcontext()
    from ci_policy.adapters.git import CleanTree

    return CleanTree(Path(args.repo))


def shard_plan(args: argparse.Namespace, tree: CleanTree | None = None) -> Plan:
    """The plan `list` and `run` take their shard from: read from `--plan FILE`, else planned here.

    `tree`: `plan_checkout(args)`, started earlier by the caller (else started here)."""
    if getattr(args, "plan", None) is None:
        if args.event is None:
            raise UsageError("is required", source="--event",
                             hint="pass the plan inputs (--event ...), or --plan FILE from this run's plan job")
        return plan_from_args(args)
    _no_plan_inputs(args)
    return plan_from_file(args, tree)


def stage_job(args: argparse.Namespace, tree: CleanTree | None = None, *, gated: bool) -> StageJob:
    """The stage `run` runs (`plan.stagejob.StageJob`), from `shard_plan`'s plan; or, from a per-stage
    plan that holds for the checkout (`plan_from_file`), its stage and `run_settings` alone, when
    `plan.planfile.stage_job` finds them enough and no gate store is named (not `gated`): no
    configuration is parsed and nothing is planned."""
    from ci_policy.plan.planfile import stage_job as planned_job
    from ci_policy.plan.stagejob import StageJob

    if getattr(args, "plan", None) is None:
        return StageJob.of(shard_plan(args, tree), args.stage)
    _no_plan_inputs(args)
    with tree if tree is not None else plan_checkout(args) as started:
        repo = Path(args.repo)
        plan_file, changed = _read_plan(args, repo, started)
        if changed is None and not gated:
            job = planned_job(plan_file, args.stage)
            if job is not None:
                return job
        return StageJob.of(_plan_of_file(args, repo, plan_file, changed), args.stage)


def _no_plan_inputs(args: argparse.Namespace) -> None:
    given = [name for name in _PLAN_INPUTS if getattr(args, name) is not None]
    if given:
        raise UsageError(f"the plan file holds the plan inputs; --{given[0].replace('_', '-')} is not "
                         "taken with it", source="--plan",
                         hint="pass either --plan FILE or the plan inputs (--event ...), not both")


def _plan_text(value: str) -> str:
    try:
        with open(value, "rb") as fh:
            data = fh.read(MAX_PLAN_FILE_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {value}: {exc.strerror}", source="--plan",
                         hint="pass the file `ci-policy plan --format json` wrote in this run's plan job") from None
    if len(data) > MAX_PLAN_FILE_BYTES:
        raise UsageError(f"{value} is larger than {MAX_PLAN_FILE_BYTES} bytes", source="--plan")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{value} is not UTF-8 text", source="--plan",
                         hint="pass the file `ci-policy plan --format json` wrote") from None


def plan_from_file(args: argparse.Namespace, tree: CleanTree | None = None) -> Plan:
    """`--plan FILE`: the file's plan, once its inputs match the checkout; no test file is parsed.

    The configuration's content id is checked first, before it is parsed: under another
    configuration the discovered files and their stages mean something else. A checkout
    that is exactly the clean git tree the plan recorded is not listed, discovered or hashed
    at all (`adapters.inputs.unchanged_since`). Only the stage asked for (`--stage`) is read
    from the file: `list` and `run` show and run no other. `tree`: `plan_checkout(args)`, when
    the caller started it; else it starts here, to run beside the plan file's reading.

    A per-stage plan (`plan --stage-plans`: one stage, no test file's content id) holds only
    for the clean tree it recorded, with the configuration it was planned with; on any other
    checkout it is refused (exit 1, naming which). `--plan DIR` (the plan job's directory:
    `plan.json` and `stages/<stage>.json`) reads the stage's own plan when it holds, else the
    whole plan, checked as always.
    """
    with tree if tree is not None else plan_checkout(args) as started:
        repo = Path(args.repo)
        plan_file, changed = _read_plan(args, repo, started)
        return _plan_of_file(args, repo, plan_file, changed)


def _read_plan(args: argparse.Namespace, repo: Path, tree: CleanTree | None) -> tuple[PlanFile, str | None]:
    """The plan file `--plan` names (for a directory: the stage's own plan when it holds, else the
    whole plan), and what of the checkout differs from its inputs (None: it holds as it is)."""
    from ci_policy.adapters.inputs import unchanged_since, why_changed
    from ci_policy.errors import InputError
    from ci_policy.plan.planfile import read_plan_file
    from ci_policy.read.names import NAME_RE

    source = args.plan
    if os.path.isdir(source):
        # The plan job's directory: the stage's own plan when the checkout is the clean tree it
        # recorded (nothing else of the plan is read), else the whole plan beside it.
        own = os.path.join(source, STAGE_PLANS, f"{args.stage}.json")
        if args.stage and NAME_RE.fullmatch(args.stage) and os.path.isfile(own):
            stage_plan = read_plan_file(_plan_text(own), own, args.stage)
            if (stage_plan.stage_plan and repo.is_dir()
                    and unchanged_since(repo, args.config, stage_plan.inputs, tree)):
                return stage_plan, None
        source = os.path.join(source, WHOLE_PLAN)
    plan_file = read_plan_file(_plan_text(source), source, args.stage)
    if not repo.is_dir():
        raise InputError(f"repository {repo} is not a directory", path=str(repo),
                         code="CP403", hint="pass --repo with the checkout's root directory")
    return plan_file, why_changed(repo, args.config, plan_file.inputs, tree)


def _plan_of_file(args: argparse.Namespace, repo: Path, plan_file: PlanFile, changed: str | None) -> Plan:
    """The `Plan` of a plan file `_read_plan` read, checked against the checkout when it does not hold as it is."""
    from ci_policy.adapters.git import checkout_index
    from ci_policy.adapters.inputs import checkout_inputs, config_id
    from ci_policy.config import load_config
    from ci_policy.errors import InputError, InputErrors
    from ci_policy.plan.planfile import Inputs, check_inputs

    if changed is None:
        # The same clean git tree: the same files, ids and configuration as the plan's.
        return _file_plan(plan_file, repo, load_config(repo, args.config),
                          _test_files(plan_file) if plan_file.stage_plan
                          else tuple(name for name, _ in plan_file.inputs.files))
    if plan_file.stage_plan:
        raise InputError(f"a per-stage plan lists no test file's content id, and {changed}", path=plan_file.source,
                         hint="pass the whole plan (`plan --json-out FILE`), or the directory holding it and "
                              "the per-stage plans (`--plan DIR`)")
    from ci_policy.model.discovery import discover

    index = checkout_index(repo)  # one listing for the configuration, discovery and the content ids
    config_name, current_config = config_id(repo, args.config, index)
    if current_config != plan_file.inputs.config:
        check_inputs(plan_file, Inputs(current_config, plan_file.inputs.labels, plan_file.inputs.files),
                     config_name, "")
    config = load_config(repo, args.config)
    # Discovered as `plan` discovers (from the git index in a git work tree), or the files differ.
    files, errors = discover(repo, config, index)
    # A test file discovery refused (a symlink) was invalid in the plan too; anything else is fatal.
    refused = {file for file, _ in plan_file.invalid}
    fatal = [d for d in errors if d.path not in refused]
    if fatal:
        raise InputErrors(fatal)
    check_inputs(plan_file, checkout_inputs(repo, args.config, config.labels_file, files, index),
                 config.path, config.labels_file)
    return _file_plan(plan_file, repo, config, tuple(files))


def _test_files(plan_file: PlanFile) -> tuple[str, ...]:
    """A per-stage plan's files: its stage's tests and invalid files (it lists no other)."""
    return tuple(sorted({file for stage in plan_file.stages for file in (*(t.file for t in stage.tests),
                                                                          *stage.invalid)}))


def _file_plan(plan_file: PlanFile, repo: Path, config: Config, files: tuple[str, ...]) -> Plan:
    from ci_policy.model.snapshot import Snapshot, optional_labels
    from ci_policy.plan.planfile import plan_of

    labels, _missing = optional_labels(repo, config)
    snapshot = Snapshot(repo=repo, config=config, labels=labels, files=files, registrations=(), gates=(),
                        errors=())
    return plan_of(plan_file, snapshot)


def plan_inputs_of(args: argparse.Namespace, plan: Plan, scan: dict[str, Any]) -> dict[str, object]:
    """The plan JSON's `inputs` for a plan built here: the content ids of what it was built from.

    `scan`: the `scan_options` the plan was built with, whose git listing gives the ids
    (one `git ls-files` per command).
    """
    from ci_policy.adapters.git import clean_tree
    from ci_policy.adapters.inputs import checkout_inputs
    from ci_policy.plan.planfile import inputs_dict

    config = plan.config
    index = scan["index"]
    inputs = checkout_inputs(Path(args.repo), args.config, config.labels_file, plan.snapshot.files,
                             index() if callable(index) else index)
    tree = scan["tree"]() if "tree" in scan else clean_tree(Path(args.repo))
    return inputs_dict(inputs.config, inputs.labels, dict(inputs.files), tree)


def plan_from_args(args: argparse.Namespace) -> Plan:
    return plan_with_scan(args)[0]


def plan_with_scan(args: argparse.Namespace, *, tree: bool = False) -> tuple[Plan, dict[str, Any]]:
    """The plan of these plan inputs, and the `scan_options` it read the checkout with (whose
    git listing `plan_inputs_of` reuses). With `tree`, the clean-tree check `plan_inputs_of`
    needs runs while the plan is built (under `"tree"`)."""
    from ci_policy.adapters.git import git_diff, start_clean_tree
    from ci_policy.model.snapshot import load_snapshot
    from ci_policy.plan.build import build_plan
    from ci_policy.plan.policy import TRUSTS, Trigger, parse_labels_json, push_diff_unavailable
    from ci_policy.read.diff import Diff, read_diff_file

    # A workflow passes every input on one line; GitHub gives "" for a value the event lacks.
    for name in ("schedule", "cadence", "base", "head", "forced"):
        if getattr(args, name) == "":
            setattr(args, name, None)
    if args.trust is None:
        args.trust = "trusted"
    if args.trust not in TRUSTS:
        # An empty value too: a workflow whose trust step failed must not run as trusted.
        raise UsageError(f"expected one of {', '.join(TRUSTS)}, got {args.trust!r}", source="--trust",
                         hint="pass the trust output of ci-policy pull-request")
    if args.forced not in (None, "true", "false"):
        raise UsageError(f"expected true or false, got {args.forced!r}", source="--forced",
                         hint="pass ${{ github.event.forced }}")
    if args.forced == "true" and args.event != "push":
        raise UsageError(f"only a push is forced, not a {args.event} event", source="--forced",
                         hint="pass --forced only with --event push")
    if args.head and not args.base:
        raise UsageError("needs --base", source="--head", hint="pass --base REV, or --diff FILE without --head")
    if args.diff and args.base:
        raise UsageError("pass either --diff or --base, not both", source="--diff")
    if args.labels_json is not None and args.label:
        raise UsageError("pass either --labels-json or --label, not both", source="--labels-json")
    if args.diff and not Path(args.diff).exists():
        # A mistyped path is the caller's error: read as an unavailable diff, it would
        # silently run every stage. A workflow passes "" (no --diff) when it has none.
        raise UsageError(f"{args.diff} does not exist", source="--diff",
                         hint="pass the file `git diff --name-status -z -M BASE HEAD` wrote, or omit --diff")
    labels = parse_labels_json(args.labels_json) if args.labels_json is not None else tuple(args.label or ())
    repo = Path(args.repo)
    scan = scan_options(args, repo)
    snapshot = load_snapshot(repo, args.config, **scan)
    if tree:  # git answers while the plan is built
        scan = {**scan, "tree": start_clean_tree(repo)}
    untrusted = push_diff_unavailable(args.base, args.head, args.forced == "true")
    if untrusted is not None:
        diff = Diff.unavailable(untrusted)
    elif args.diff:
        diff = read_diff_file(Path(args.diff))
    elif args.base:
        diff = git_diff(repo, args.base, args.head or "HEAD")
    else:
        diff = Diff.unavailable("no --diff or --base was given")
    trigger = Trigger(event=args.event, labels=labels, schedule=args.schedule, cadence=args.cadence,
                      trust=args.trust)
    return build_plan(snapshot, trigger, diff), scan
