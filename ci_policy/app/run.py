"""`run`: the files of one stage shard (or several, in turn) on this runner.

- In: a `RunRequest`: where the plan comes from (`PlanSource`), the shard or shards, the
  interpreter, the store URL, the output paths and the retry options.
- Out: `prepare(request, tree)` a `Prepared` run (the stage job and the shards it runs), read
  before any test runs; `execute(request, prepared, show)` runs them, one after another, `show`
  given each shard's header and a fast-fail stop as they happen, and returns an `Executed`: the
  shards' result, or the signal that ended them (exit 143 on SIGTERM, 130 on Ctrl-C).
- Gates are evaluated for the files that declare them, the plan's cadence deciding baseline
  writes; with no gate and no store named, the store's modules are never loaded.
- Where baselines may be written, each shard's attempts are recorded in the store's test
  history once the shard ends (`app.history.recorder`); a store that cannot take them is a
  warning of the shard's result, which stands.
- Who the tests run as: `runner.user` when the runner is root (`Prepared.user`), with the
  warnings to print once (`Prepared.warnings`); `leave_secrets_behind()`, called first by the
  `ci-policy` program, re-executes it without its secrets in the environment block.
- Refused: before any file runs: a `--timings-out` inside the checkout, a `--python` that is not
  an executable, a `--shards` index out of the stage's range, a baseline-writing run of a
  checkout that declares gates without an explicit shared store (`UsageError`); whatever
  `plan_source.stage_job` refuses.
"""

from __future__ import annotations

import datetime
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ci_policy.adapters import cache_dir
from ci_policy.adapters.git import CleanTree
from ci_policy.adapters.runner import environment as secrets_environment
from ci_policy.adapters.runner import shard as runner
from ci_policy.adapters.runner.attempt import Terminated
from ci_policy.adapters.runner.environment import RunAs, hide_from_tests
from ci_policy.adapters.runner.shard import RunOptions
from ci_policy.app.attempts import attempt_of
from ci_policy.app.plan_source import stage_job
from ci_policy.app.requests import PlanSource
from ci_policy.app.stores import DATABASE_URL_ENV, store_url
from ci_policy.errors import UsageError
from ci_policy.model.registration import Registration
from ci_policy.plan import stagejob
from ci_policy.plan.partition import Shard
from ci_policy.plan.results import GateOutcome, ShardResult, combined
from ci_policy.plan.stagejob import StageJob
from ci_policy.read.records import Problems, Series
from ci_policy.render.text import shard_header


@dataclass(frozen=True)
class RunRequest:
    source: PlanSource
    shard: int | None = None
    shards: tuple[int, ...] | None = None     # `--shards`, checked distinct by the command line
    python: str | None = None
    store: str | None = None                  # `--store URL`
    store_file: str | None = None             # `--store-file FILE`
    timings_out: str | None = None
    records_out: str | None = None
    max_attempts: int = 1
    retry_wait: float = 0.0
    continue_on_error: bool = False
    github: bool = False
    cache: str | None = None                  # `--cache DIR`: swept after the tests, as the default one is
    today: datetime.date | None = None        # the day quarantines are judged on; None: today in UTC


@dataclass(frozen=True)
class Prepared:
    job: StageJob
    shards: tuple[Shard, ...]                 # the shards to run; none for a skipped stage
    python: str
    timings_out: Path | None
    store: str | None                         # the store URL named, None for none
    user: RunAs | None = None                 # `runner.user` when the runner is root
    warnings: tuple[str, ...] = ()            # about who the tests run as, to print once


def leave_secrets_behind() -> None:
    """For the `ci-policy` program only, first thing: the secrets of its environment leave the
    environment block a test could read (`adapters.runner.environment.leave_secrets_behind`)."""
    secrets_environment.leave_secrets_behind(list(sys.orig_argv))


@dataclass(frozen=True)
class Executed:
    result: ShardResult | None                # None when a signal ended the run
    signal: int | None = None                 # the exit code of that end: 143 SIGTERM, 130 Ctrl-C


def gated(store: str | None) -> bool:
    """Whether a gate store is named (the option or the environment's URL): its location is
    checked even when no file declares gates."""
    return bool(store or os.environ.get(DATABASE_URL_ENV))


def _holding(request: RunRequest) -> tuple[str, ...]:
    """What secret this runner holds, as the root warning names it."""
    names = [f"${name}" for name in sorted(secrets_environment.held_secrets())]
    return tuple(names + ([f"the store URL of --store-file {request.store_file}"] if request.store_file else []))


def _timings_out(value: str | None, repo: Path) -> Path | None:
    """`--timings-out`, refused inside the checkout: the tests write there (so does the PR)."""
    if value is None:
        return None
    inside = os.path.relpath(os.path.realpath(value), os.path.realpath(repo))
    if not inside.startswith(".."):
        raise UsageError(f"{value} is inside the checkout {repo}, where the tests can write; the timing records "
                         "are evidence for `ci-policy tune`", source="--timings-out",
                         hint="write them outside the checkout, e.g. $RUNNER_TEMP/ci-policy-timings.jsonl")
    return Path(value)


def _python(value: str | None) -> str:
    if value is None:
        return sys.executable
    found = shutil.which(value)
    if found is None:
        raise UsageError(f"{value!r} is not an executable file or a command on PATH", source="--python",
                         hint="pass the interpreter of the repository's test environment, e.g. .venv/bin/python")
    return found


def _shard_of(job: StageJob, index: int) -> Shard | None:
    """`pick_shard` for one index of `--shards`; its errors name that option."""
    try:
        return stagejob.pick_shard(job.stage, index)
    except UsageError as exc:
        if exc.source != "--shard":
            raise
        raise UsageError(exc.message, source="--shards", hint=exc.hint) from None


def prepare(request: RunRequest, tree: CleanTree | None = None) -> Prepared:
    python = _python(request.python)
    store = store_url(request.store, request.store_file)
    timings_out = _timings_out(request.timings_out, request.source.repo)
    job = stage_job(request.source, tree, gated=gated(store))
    picked = ([stagejob.pick_shard(job.stage, request.shard)] if request.shards is None
              else [_shard_of(job, index) for index in request.shards])
    user, warnings = secrets_environment.run_as(job.settings.user, _holding(request))
    return Prepared(job, tuple(shard for shard in picked if shard is not None), python, timings_out, store,
                    user, warnings)


def _records_dir(value: str | None, repo: Path) -> Path:
    if value:
        return Path(value)
    runner_temp = os.environ.get("RUNNER_TEMP")
    return Path(runner_temp) / "ci-policy-records" if runner_temp else repo / ".ci-policy" / "records"


GateHook = Callable[[Registration, Series, "Problems | None"], GateOutcome]


def _no_gates(reg: Registration, series: Series, problems: Problems | None = None) -> GateOutcome:
    return GateOutcome(file=reg.file, registration=reg, baseline="no gates declared")


def _gate_hook(store: str | None, job: StageJob, repo: Path) -> GateHook:
    """Gate the files that declare gates, with the plan's cadence deciding baseline writes."""
    plan = job.plan
    if plan is None:
        # A per-stage plan's job (`plan.planfile.stage_job`): no file of it declares gates, no
        # baseline is written where another file does, and no store is named. The run's attempt
        # is checked as when another file's gates are evaluated.
        if job.declares_gates:
            attempt_of()
        return _no_gates
    if not plan.snapshot.gates and not gated(store):
        # No gate to evaluate and no store location to check: the store's modules stay unloaded.
        return _no_gates
    # Imported here: a run with no gate loads neither the store nor gate evaluation (tests/cli/
    # test_startup.py::test_a_stage_job_naming_no_store_loads_no_store_module).
    from ci_policy.adapters.gate import baseline_store_problem, check_store_location, opener, run_gate
    from ci_policy.app.gate import run_identity

    check_store_location(store)
    snapshot = plan.snapshot
    declared = {g.file for g in snapshot.gates}
    identity = run_identity()
    # Refused before any test runs, not after the shard's hours of GPU time.
    if declared and identity.run_id is not None and plan.policy.write_baseline:
        problem = baseline_store_problem(store)
        if problem is not None:
            raise problem

    def hook(reg: Registration, series: Series, problems: Problems | None = None) -> GateOutcome:
        if reg.file not in declared:
            return _no_gates(reg, series)
        return run_gate(snapshot, reg, series, opener(store, repo), cadence=plan.policy.cadence,
                        event=plan.policy.event, run=identity, problems=problems)
    return hook


def _history_recorder(store: str | None, job: StageJob, repo: Path) -> Callable[[ShardResult], str | None] | None:
    """What records each shard's attempts in the test history (`app.history.recorder`), or None."""
    if not gated(store):
        return None
    # Imported here: a run that names no store loads none of the store's modules (tests/cli/
    # test_startup.py::test_a_stage_job_naming_no_store_loads_no_store_module).
    from ci_policy.app.history import recorder

    return recorder(store, job, repo)


def _cache_listings(request: RunRequest) -> dict[Path, cache_dir.Listing]:
    """The scan cache directories (the default one, `--cache DIR`) as they are before the tests."""
    named = [cache_dir.default_dir(), *([Path(request.cache)] if request.cache else [])]
    return {directory: cache_dir.listing(directory) for directory in dict.fromkeys(Path(os.path.abspath(d))
                                                                                  for d in named)}


def _discard_cache_writes(before: dict[Path, cache_dir.Listing], show: Callable[[str], None]) -> None:
    """Remove what the tests wrote to the scan cache (`adapters.cache_dir`): a test is a pull
    request's code, and the next command on this runner must not read its scans."""
    removed = sum(cache_dir.discard_changed(directory, listed) for directory, listed in before.items())
    if removed:
        show(f"ci-policy: removed {removed} file(s) written to the scan cache while the tests ran "
             f"({', '.join(map(str, before))}); later commands read those test files again")


def execute(request: RunRequest, prepared: Prepared, show: Callable[[str], None],
            before: Callable[[], None] = lambda: None) -> Executed:
    """Run the prepared shards; `before` is called once the run is set up, just before the first test."""
    repo = request.source.repo
    job, shards = prepared.job, prepared.shards
    options = RunOptions(
        max_attempts=request.max_attempts,
        retry_wait=request.retry_wait,
        continue_on_error=request.continue_on_error,
        bypass_fastfail=job.bypass_fastfail,
        github=request.github,
        timings_out=prepared.timings_out,
        settings=job.settings,
        records_dir=_records_dir(request.records_out, repo),
        gate=_gate_hook(prepared.store, job, repo),
        python=prepared.python,
        user=prepared.user,
        today=request.today,
    )
    fast_fail = not (options.continue_on_error or options.bypass_fastfail)
    # The tests' environment leaves out every secret; the runner's own /proc/<pid>/environ must too.
    hide_from_tests()
    before()
    results: list[ShardResult] = []
    listed = _cache_listings(request) if shards else {}
    record = _history_recorder(prepared.store, job, repo) if shards else None
    try:
        for i, shard in enumerate(shards):
            show(shard_header(job.stage, shard))
            results.append(runner.run_shard(repo, job.stage, shard, options))
            if record is not None:
                problem = record(results[-1])
                if problem is not None:
                    results[-1].warnings.append(problem)
            if fast_fail and not results[-1].ok and i + 1 < len(shards):
                show(f"ci-policy: stopping after shard {shard.index} failed (fast-fail); shard(s) "
                     f"{' '.join(str(s.index) for s in shards[i + 1:])} not run. Use --continue-on-error "
                     "to run them.")
                break
    except Terminated:
        return Executed(None, 143)
    except KeyboardInterrupt:
        return Executed(None, 130)
    finally:
        _discard_cache_writes(listed, show)
    if request.shards is None:
        return Executed(results[0])
    regs = {r.file: r for r in job.stage.tests}
    skipped = [regs[f] for shard in shards[len(results):] for f in shard.files]
    return Executed(combined(tuple(s.index for s in shards), results, skipped))
