"""The suite runner (an adapter): executes one shard's files as subprocesses.

- In: the checkout root, the stage (`plan.picking.RunStage`) and `Shard` from
  `ci_policy.plan` (the same code as `ci-policy plan`/`list`), and `RunOptions`, whose
  `RunSettings` hold the runner, timeouts, retry rules and environment rules.
- Out: a `ShardResult`; progress lines and the tests' live output on `out` (default: the
  `sys.stdout` of the call, under GitHub the console guard, which neutralises workflow
  commands in the tests' output too; `::group::` lines go through `write_commands`); one JSON
  line per attempt appended (and flushed, fsynced) to the timings file, so a runner
  killed mid-shard keeps every finished record. The timings file is outside the checkout
  by default, never named in a test's environment, and whatever a test changed in it is
  undone before the next record and at the end of the shard (`TimingsWriter`), with a
  warning.
- Each file runs as `python FILE` or `python -m pytest FILE` (the stage's `runner`),
  from the checkout root, in its own session/process group, without a shell, with the
  environment `runner.env` allows (`ci_policy.config.runrules.child_env`): no token, password,
  Actions runtime variable or store URL, and not `$RUNNER_TEMP` (where the timings go).
- On timeout: SIGTERM to every process of the attempt, then after the grace period its
  cgroup's `cgroup.kill` (where cgroup v2 is delegated to us) and freeze-then-kill of the
  runner's descendants (it is a child subreaper) and the test's session and process group
  (`procs`); leftovers of a test that exited are killed the same way, so no process a test
  started outlives its attempt. A watchdog kills the attempt if the runner itself is killed;
  SIGTERM/SIGINT during a kill hurry it and never abort it.
- `elapsed` ends when the test's main process exits or times out (never the kill grace); a
  test killed by a signal is reported with the signal's name (`killed by SIGKILL`).
- A file the stage's `quarantine:` entries name (`RunSettings.quarantine`) runs as any other; its
  failure is excused (`FileResult.excused`: fast-fail goes on, the shard passes) while its
  `until` has not passed on the day the shard starts (UTC, or `RunOptions.today`); an expired
  entry excuses nothing and is a warning of the result.
- A timing or metric record that cannot be written (a full disk, EIO, a read-only file
  system) is a warning of the result (`ShardResult.warnings`), and the shard goes on.
- A stage with a `command` (`RunSettings.command`) runs that argv instead of a test file, once,
  in its working directory, with the same environment, timeouts, kill, records and results;
  its one result is named by the stage.
- Refused: before anything runs, as located `InputErrors`: a missing, non-regular or symlinked
  test file; a stage command's working directory that is missing, not a directory or reached
  through a symlink, and a program that is not an executable on the PATH it runs with.
- Layout: one attempt's process, output and kill are `runner.attempt`; the timing records,
  `runner.timings`; this module runs the shard's files through them.
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ci_policy.adapters.runner import procs
from ci_policy.adapters.runner.attempt import Containment, Terminated, descendants, run_process, signal_name, sweep
from ci_policy.adapters.runner.environment import RunAs
from ci_policy.adapters.runner.procs import Watchdog, set_subreaper
from ci_policy.adapters.runner.retry import classify
from ci_policy.adapters.runner.timings import TimingsWriter, default_timings_path, write_warning
from ci_policy.config.quarantined import Quarantine, quarantine_of
from ci_policy.config.runrules import child_env
from ci_policy.errors import InputError, InputErrors
from ci_policy.plan.picking import RunStage
from ci_policy.plan.results import Attempt, AttemptStatus, FileResult, GateOutcome, ShardResult
from ci_policy.plan.stagejob import RunSettings
from ci_policy.plan.timeouts import timeout_for
from ci_policy.read.checkout import check_no_symlinks
from ci_policy.read.records import Problems, Series, merge_record_dir, write_record
from ci_policy.render.console import write_commands
from ci_policy.render.escape import escape_data, one_line
from ci_policy.render.text import gate_text
from ci_policy.sdk.metrics import CAPTURE_ENV, RECORD_DIR_ENV

if TYPE_CHECKING:
    from ci_policy.model.registration import Registration
    from ci_policy.plan.partition import Shard

FAILURE_KIND_ENV = "CI_POLICY_FAILURE_KIND_FILE"


@dataclass(frozen=True)
class RunOptions:
    max_attempts: int = 1
    retry_wait: float = 0.0
    continue_on_error: bool = False
    bypass_fastfail: bool = False
    github: bool = False
    timings_out: Path | None = None
    python: str = sys.executable
    # How the stage's files run: its runner and timeouts, the retry rules, the kill grace, which
    # of the runner's variables a test sees (never a token, password or the store URL), and
    # the metrics captured.
    settings: RunSettings = RunSettings()
    # Metric capture: every attempt gets its own CI_POLICY_RECORD_DIR; the passing
    # attempt's files are merged into records_dir/<file>.json and handed to `gate`.
    records_dir: Path | None = None
    gate: Callable[[Registration, Series, Problems], GateOutcome] | None = None
    # `runner.user` resolved (`environment.run_as`): the tests run as it; None: as the runner.
    user: RunAs | None = None
    # The day (UTC) a quarantine's `until` is judged on; None: today, when the shard starts.
    today: datetime.date | None = None


def check_files(repo: Path, regs: list[Registration]) -> None:
    errors = []
    for reg in regs:
        try:
            st = check_no_symlinks(repo, reg.file, what="test file")
        except InputError as exc:
            errors.append(exc)
            continue
        if st is None or not Path(repo, reg.file).is_file():
            errors.append(InputError(f"test file {reg.file} does not exist in {repo} "
                                      "(deleted after planning?)", path=reg.file,
                                      hint="re-run the plan on this checkout"))
    if errors:
        raise InputErrors(errors)


def command_cwd(repo: Path, settings: RunSettings) -> Path:
    """Where a stage's command runs: its working directory, checked now (a symlink anywhere on the
    way is refused, as for a test file), or the checkout root."""
    rel = settings.working_directory or "."
    st = check_no_symlinks(repo, rel, what="working directory")
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise InputError(f"working directory {rel} of the stage's command "
                         f"{'does not exist' if st is None else 'is not a directory'} in {repo}", path=rel,
                         hint="create it in the repository, or correct the stage's working_directory")
    return Path(repo, rel) if rel != "." else repo


def check_command(repo: Path, settings: RunSettings, env: dict[str, str]) -> Path:
    """The command's working directory, after checking it and that its program can be started
    (found on the PATH it runs with, or a path relative to that directory): refused before it runs."""
    assert settings.command is not None
    cwd = command_cwd(repo, settings)
    program = settings.command[0]
    if "/" in program:
        found = Path(cwd, program)
        ok = found.is_file() and os.access(found, os.X_OK)
    else:
        ok = shutil.which(program, path=env.get("PATH", os.defpath)) is not None
    if not ok:
        where = "in its working directory" if "/" in program else "on the PATH the command runs with"
        raise InputError(f"the stage's command cannot start: {program} is not an executable {where}",
                         path=settings.working_directory or ".",
                         hint="install it in the job's environment (a step before ci-policy run), or name it by a "
                              "path relative to the working directory")
    return cwd


def _on_sigterm(signum, frame):
    raise Terminated()


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fmt_s(value: float) -> str:
    return f"{value:.1f}s"


def _est(value: float) -> str:
    return f"{value:g}s"


def run_shard(repo: Path, stage_plan: RunStage, shard: Shard, options: RunOptions,
              out: IO[str] | None = None) -> ShardResult:
    # The stream at call time: under GitHub it is the console guard `cli.main` installed.
    out = sys.stdout if out is None else out
    settings = options.settings
    regs_by_file = {r.file: r for r in stage_plan.tests}
    regs = [regs_by_file[f] for f in shard.files]
    if settings.command is not None:
        # Its one test is its command: no test file, the working directory and program checked instead.
        try:
            cwd = check_command(repo, settings, child_env(os.environ, settings.env))
        except InputError as exc:
            raise InputErrors([exc]) from None
    else:
        check_files(repo, regs)
        cwd = repo
    was_subreaper = set_subreaper(True)
    before = frozenset(descendants(os.getpid()))
    # Forked before the first test's output thread starts, and before the SIGTERM handler.
    watchdog = Watchdog()
    watchdog.start()
    spare = before | ({watchdog.pid} if watchdog.pid is not None else set())
    contain = Containment(cgroups=procs.cgroup_base(), watchdog=watchdog, user=options.user)
    timings = TimingsWriter(options.timings_out or default_timings_path(repo), stage_plan.name, shard.index)
    result = ShardResult(stage=stage_plan.name, shard=shard.index, results=[], not_run=[])
    fast_fail = not (options.continue_on_error or options.bypass_fastfail)
    total = len(regs)
    today = options.today or datetime.datetime.now(datetime.timezone.utc).date()
    # A cancelled job sends SIGTERM; the test runs in its own session and would otherwise
    # keep its GPU. Terminated unwinds through run_process, which kills the test's tree.
    previous = (signal.signal(signal.SIGTERM, _on_sigterm)
                if threading.current_thread() is threading.main_thread() else None)
    interrupted = False
    try:
        for i, reg in enumerate(regs, start=1):
            file_result = FileResult(reg, timeout_for(reg, settings.timeout_per_file, settings.timeout_from_est_time),
                                     quarantine=_quarantine(settings, reg.file, today, result.warnings))
            result.results.append(file_result)
            _run_file(cwd, stage_plan, shard, reg, file_result, i, total, options, timings, out,
                      contain, result.warnings)
            if not file_result.ok and fast_fail and i < total:
                result.not_run = regs[i:]
                print(f"ci-policy: stopping after {one_line(reg.file)} failed (fast-fail); "
                      f"{len(result.not_run)} file(s) not run. Use --continue-on-error to run them.",
                      file=out, flush=True)
                break
    except (Terminated, KeyboardInterrupt):
        interrupted = True
        raise
    finally:
        try:
            # A signal between an attempt's end and its kill would skip that kill: whatever any
            # attempt left is swept once more before the runner goes on or exits.
            with procs.KillGuard(Terminated, reraise=not interrupted):
                sweep(spare)
        finally:
            timings.close()
            watchdog.stop()
            if was_subreaper is False:  # everything adopted is reaped: back to how the caller was
                set_subreaper(False)
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
    if timings.restored:
        message = (f"the timing records {timings.path} were changed by something other than the runner (a test?) "
                   f"{timings.restored} time(s); the runner's records were restored")
        if options.github:  # an annotation only, not also a line of text
            write_commands(f"::warning::{escape_data('ci-policy: ' + message)}", out)
        else:
            print(f"ci-policy: warning: {one_line(message)}", file=out, flush=True)
    return result


def _quarantine(settings: RunSettings, file: str, today: datetime.date, warnings: list[str]) -> Quarantine | None:
    """The quarantine in force for `file` on `today`; one past its `until` is a warning, and none."""
    entry = quarantine_of(settings.quarantine, file)
    if entry is None or not entry.expired(today):
        return entry
    warnings.append(one_line(f"the quarantine of {file} has expired: it held until {entry.until.isoformat()} "
                             f"({entry.reason}; {entry.tracked_by}), so its failures count again; renew or remove "
                             "the entry"))
    return None


def _run_file(cwd, stage_plan, shard, reg, file_result, i, total, options, timings, out, contain,
              warnings) -> None:
    """`cwd`: the checkout root, or a stage command's working directory."""
    settings = options.settings
    if settings.command is not None:
        argv = list(settings.command)
        print(f"ci-policy: {one_line(reg.file)} runs {one_line(shlex.join(argv))} in "
              f"{one_line(settings.working_directory or 'the repository root')}", file=out, flush=True)
    else:
        argv = ([options.python, reg.file] if settings.runner == "python"
                else [options.python, "-m", "pytest", reg.file])
    timeouts = 0
    user = options.user
    with tempfile.TemporaryDirectory(prefix="ci-policy-") as tmp:
        if user is not None:  # where the test reports its failure kind and metric records
            os.chown(tmp, user.uid, user.gid)
        for attempt in range(1, options.max_attempts + 1):
            kind_file = Path(tmp, f"failure-kind-{attempt}")
            env = child_env(os.environ, settings.env)
            if user is not None:
                env.update({"HOME": user.home, "USER": user.name, "LOGNAME": user.name})
            env.update({FAILURE_KIND_ENV: str(kind_file), "CI_POLICY_STAGE": stage_plan.name,
                        "CI_POLICY_SHARD": str(shard.index), "CI_POLICY_ATTEMPT": str(attempt)})
            record_dir = Path(tmp, f"record-{attempt}")
            if options.records_dir is not None:
                record_dir.mkdir()
                if user is not None:
                    os.chown(record_dir, user.uid, user.gid)
                env.update({RECORD_DIR_ENV: str(record_dir), CAPTURE_ENV: json.dumps(list(settings.capture))})
            started = _now()
            if options.github:
                write_commands(f"::group::{escape_data(f'{reg.file} (attempt {attempt})')}", out)
                out.flush()
            proc = run_process(argv, cwd, env, file_result.timeout, settings.kill_grace, out, contain)
            if options.github:
                write_commands("::endgroup::", out)
                out.flush()
            status: AttemptStatus = "timeout" if proc.timed_out else ("pass" if proc.returncode == 0 else "fail")
            verdict = None
            if status != "pass":
                reported = _read_kind(kind_file)
                verdict = classify(status, proc.tail, reported, timeouts, settings.retry, signal_name(proc.returncode))
                timeouts += status == "timeout"
            attempt_rec = Attempt(attempt=attempt, status=status, elapsed=proc.elapsed, started_at=started,
                                  returncode=proc.returncode, verdict=verdict, killed=proc.killed)
            file_result.attempts.append(attempt_rec)
            problem = timings.write(reg, attempt_rec)
            line = (f"[{i}/{total}] {one_line(reg.file)} {status.upper()} elapsed={_fmt_s(proc.elapsed)} "
                    f"est={_est(reg.est_time)} attempt={attempt}")
            if proc.timed_out:
                line += f" (timeout {file_result.timeout:g}s)"
            killed_by = signal_name(proc.returncode)
            if killed_by:
                line += f" (killed by {killed_by})"
            if proc.killed:
                line += f" (killed {proc.killed} leftover process(es))"
            print(line, file=out, flush=True)
            if problem is not None:
                warnings.append(problem)  # printed once: in the summary (text) or as an annotation (github)
            if status == "pass":
                if options.records_dir is not None:
                    _merge_and_gate(reg, record_dir, options.records_dir, file_result, options, out, warnings,
                                    attempt)
                return
            assert verdict is not None  # every attempt that did not pass was classified
            if not verdict.retriable or attempt == options.max_attempts:
                print(f"      {verdict.kind}: {one_line(verdict.reason)}"
                      + ("" if verdict.retriable else "; not retried"), file=out, flush=True)
                return
            print(f"      {verdict.kind}: {one_line(verdict.reason)}; retrying"
                  + (f" in {options.retry_wait:g}s" if options.retry_wait else ""), file=out, flush=True)
            if options.retry_wait:
                time.sleep(options.retry_wait)


def record_path(records_dir: Path, file: str) -> Path:
    return records_dir / (file.replace("/", "__") + ".json")


def _merge_and_gate(reg, record_dir: Path, records_dir: Path, file_result: FileResult, options: RunOptions,
                    out, warnings: list[str], attempt: int) -> None:
    """Only a passing attempt's records are merged (failed attempts' never are), then gated."""
    # A record the code under test wrote wrong is that file's problem (its gates ERROR),
    # never an exception that loses the rest of the shard.
    series, problems = merge_record_dir(record_dir)
    if problems:
        count = sum(len(m) for m in problems.values())
        first = next(iter(problems.values()))[0]
        print(f"      metrics: the record of {one_line(reg.file)} has {count} problem(s): {one_line(first)}",
              file=out, flush=True)
    target = record_path(records_dir, reg.file)
    try:
        write_record(series, target, problems)
    except OSError as exc:
        # The gate still sees the series; only the file handed to later steps is missing.
        problem = write_warning("metric record", target, reg.file, attempt, exc)
        warnings.append(problem)  # printed once: in the summary (text) or as an annotation (github)
    if options.gate is not None:
        file_result.gate = options.gate(reg, series, problems)
        if file_result.gate.results:
            print(gate_text(file_result.gate), file=out, flush=True)


def _read_kind(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip().lower()[:32] or None
    except OSError:
        return None
