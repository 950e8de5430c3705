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
- Refused before anything runs: a missing, non-regular or symlinked test file; a stage
  command's working directory that is missing, not a directory or reached through a symlink,
  and a program that is not an executable on the PATH it runs with.
"""

from __future__ import annotations

import codecs
import collections
import contextlib
import datetime
import errno
import io
import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from ci_policy.adapters.runner import procs
from ci_policy.adapters.runner.environment import RunAs, become
from ci_policy.adapters.runner.procs import Watchdog, proc_table, set_subreaper
from ci_policy.adapters.runner.retry import classify
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

TAIL_BYTES = 64 * 1024
REAP_INTERVAL = 0.1  # seconds between sweeps for adopted zombies while a test runs
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


class Terminated(BaseException):
    """The runner received SIGTERM (a cancelled job); the running test is killed on the way out."""


def _on_sigterm(signum, frame):
    raise Terminated()


# -- processes ---------------------------------------------------------------------------

def descendants(root: int, exclude: frozenset[int] = frozenset()) -> set[int]:
    """The live descendants of `root` (the runner's own, before an attempt: its watchdog)."""
    table = proc_table()
    return {p for p in procs.descendants(table, [root], exclude) if not procs.dead(table[p][3])}


def signal_name(returncode: int | None) -> str | None:
    """`SIGKILL` for a process that died of signal 9 (a negative return code), else None."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _attempt_selector(main: int, keep: frozenset[int]) -> Callable[[procs.Table], set[int]]:
    """The attempt's processes: the runner's descendants (it is a subreaper) and the test's session
    and process group, with theirs; never the runner, its watchdog or what ran before the attempt."""
    me = os.getpid()
    spare = keep | {me}

    def select(table: procs.Table) -> set[int]:
        found = procs.descendants(table, [me], spare)
        grouped = {p for p, (_ppid, pgid, sid, _state) in table.items()
                   if main in (pgid, sid) and p not in spare}
        return found | grouped | procs.descendants(table, grouped, spare)
    return select


def _signal_group(main: subprocess.Popen, sig: int) -> None:
    """Signal the test's process group while its leader is unreaped (so its id cannot have been
    reused), or at any time where there is no /proc to find the group's members by."""
    if main.returncode is not None and Path("/proc/self").is_dir():
        return
    try:
        os.killpg(main.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_attempt(main: subprocess.Popen, group: Path | None, keep: frozenset[int], grace: float,
                 hurried: Callable[[], bool]) -> int:
    """SIGTERM every process of the attempt, wait up to `grace` (less when hurried), then kill
    its cgroup and freeze-then-kill what is left; returns how many processes were signalled."""
    select = _attempt_selector(main.pid, keep)

    def alive(table: procs.Table) -> set[int]:
        # Zombies are dead already (the ones adopted are reaped below): not counted as killed.
        return {p for p in select(table) if p != main.pid and not procs.dead(table[p][3])}

    live = alive(proc_table())
    if main.poll() is None:
        live.add(main.pid)
    if group is not None:
        live |= procs.cgroup_pids(group)
    if not live:
        if group is not None:
            procs.remove_cgroup(group)
        reap_adopted(keep | {main.pid})
        return 0
    procs.signal_all(live, signal.SIGTERM)
    _signal_group(main, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and not hurried():
        main.poll()
        procs.reap(live - {main.pid})
        table = proc_table()
        live |= alive(table)
        if not any(not procs.dead(table.get(p, (0, 0, 0, "X"))[3]) for p in live):
            break
        time.sleep(0.05)
    held = procs.kill_cgroup(group) | procs.freeze_and_kill(select)
    _signal_group(main, signal.SIGKILL)  # without /proc (not Linux), the test's group is all there is
    main.wait()
    # Reaped by pid, never by waitpid(-1): that could take the watchdog or the test's own status.
    procs.wait_gone(held - {main.pid}, procs.reap)
    reap_adopted(keep)
    return len(live | held)


def _echo(out: IO[str], text: str) -> None:
    """Echo test output; never let it stop the pump (an undrained pipe would block the test)."""
    try:
        out.write(text)
        out.flush()
    except UnicodeEncodeError:  # e.g. a runner whose stdout is not UTF-8
        encoding = getattr(out, "encoding", None) or "ascii"
        try:
            out.write(text.encode(encoding, "backslashreplace").decode(encoding))
            out.flush()
        except (OSError, ValueError):
            pass
    except (OSError, ValueError):
        pass


def _wait(proc: subprocess.Popen, timeout: float | None, keep: frozenset[int]) -> None:
    """`proc.wait(timeout)`, reaping meanwhile the zombies the runner adopts as a subreaper: a
    PID hopper leaves hundreds a second, which unreaped would use up the pid space."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        step = REAP_INTERVAL if deadline is None else min(REAP_INTERVAL, max(0.0, deadline - time.monotonic()))
        try:
            proc.wait(timeout=step)
            return
        except subprocess.TimeoutExpired:
            if deadline is not None and time.monotonic() >= deadline:
                raise
        reap_adopted(keep | {proc.pid})


def reap_adopted(spare: frozenset[int]) -> None:
    """Reap the zombie children of the runner, except `spare`: by pid, never waitpid(-1), since
    the test's own status belongs to its `Popen` and the watchdog's to its owner."""
    me = os.getpid()
    procs.reap(p for p, (ppid, _pgid, _sid, state) in proc_table().items()
               if ppid == me and state == "Z" and p not in spare)


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None
    timed_out: bool
    elapsed: float
    tail: str
    killed: int


@dataclass
class Containment:
    """What every attempt of a shard shares: the cgroup to nest attempts in, and the watchdog."""

    cgroups: Path | None = None
    watchdog: Watchdog | None = None
    user: RunAs | None = None


def _child_setup(group: Path | None, user: RunAs | None) -> Callable[[], None] | None:
    """The forked child's setup: join the attempt's cgroup (as root still), then become `user`."""
    join = procs.join_cgroup(group)
    if user is None:
        return join

    def setup() -> None:
        if join is not None:
            join()
        become(user)
    return setup


def run_process(argv: list[str], cwd: Path, env: dict, timeout: float | None, grace: float,
                out: IO[str], contain: Containment | None = None) -> ProcessResult:
    contain = contain or Containment()
    keep = frozenset(descendants(os.getpid()))
    ident = procs.attempt_id()
    env = {**env, procs.ATTEMPT_ENV: ident}
    group = procs.make_cgroup(contain.cgroups, f"ci-policy-{ident}")
    watchdog = contain.watchdog
    if watchdog is not None:
        watchdog.send(f"A {ident} {group or '-'}")
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=_child_setup(group, contain.user))
    if watchdog is not None:
        watchdog.send(f"P {proc.pid}")
    if group is not None and proc.pid not in procs.cgroup_pids(group):
        procs.remove_cgroup(group)  # the move failed (not delegated after all): freeze-then-kill only
        group = None
    tail: collections.deque[bytes] = collections.deque()
    size = [0]
    # A read may end inside a multi-byte UTF-8 character: decode incrementally.
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    last = [b"\n"]

    # stdout=PIPE without text mode: a buffered binary reader, so read1 returns what is there.
    stream = cast(io.BufferedReader, proc.stdout)

    def pump() -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):
            _echo(out, decoder.decode(chunk))
            last[0] = chunk[-1:]
            tail.append(chunk)
            size[0] += len(chunk)
            while size[0] > TAIL_BYTES and len(tail) > 1:
                size[0] -= len(tail.popleft())
        _echo(out, decoder.decode(b"", final=True))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = False
    interrupted: BaseException | None = None
    try:
        _wait(proc, timeout, keep)
    except subprocess.TimeoutExpired:
        timed_out = True
    except (Terminated, KeyboardInterrupt) as exc:
        interrupted = exc
    # The test's time ends when its main process exits or is timed out, not after the kill grace.
    elapsed = time.monotonic() - start
    # The test exited: anything it left behind (servers, daemons) goes too. Timed out or
    # interrupted: the test itself goes. Signals that arrive meanwhile only hurry the kill.
    with procs.KillGuard(Terminated, reraise=interrupted is None) as guard:
        killed = kill_attempt(proc, group, keep, grace, guard.hurried)
    if watchdog is not None:
        watchdog.send("D")
    if interrupted is not None:
        raise interrupted
    reader.join(timeout=5)
    if last[0] != b"\n":
        # Output without a final newline must not swallow what follows (`::endgroup::`,
        # the progress line) into its last line.
        out.write("\n")
        out.flush()
    return ProcessResult(returncode=None if timed_out else proc.returncode, timed_out=timed_out,
                         elapsed=elapsed, tail=b"".join(tail).decode("utf-8", "replace"), killed=killed)


# -- the shard -----------------------------------------------------------------------------

def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_timings_path(repo: Path) -> Path:
    """`$RUNNER_TEMP/ci-policy-timings.jsonl`, else the user's cache directory: never the
    checkout, where a test (or the PR itself) writes."""
    runner_temp = os.environ.get("RUNNER_TEMP")
    if runner_temp:
        return Path(runner_temp) / "ci-policy-timings.jsonl"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "ci-policy" / "timings.jsonl"


def _read_regular(path: Path) -> bytes | None:
    """The bytes of the regular file `path` (b"" when missing); None for anything else (a
    symbolic link, a FIFO), which is never followed or read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return b""
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        return fh.read()


class TimingsWriter:
    """Appends one JSON line per attempt, fsynced before the next attempt starts.

    The tests run as the same user and could write the file (finding: a test appended forged
    records to steer `tune`). So the writer keeps the bytes the file must hold (what was there
    when it opened, plus its own records) and, before each record and on close, when no test
    process is left, compares the file with them; anything else (a line added or edited, the
    file replaced or linked elsewhere) is undone by rewriting the file, and counted in
    `restored`. A path that is a device or a FIFO when the shard starts (e.g. `/dev/full`) is
    only appended to, never replaced.

    A record that cannot be written (ENOSPC, EIO, EROFS, ...) is returned as a warning instead
    of stopping the shard: losing a timing record must not lose the remaining tests' results.
    """

    def __init__(self, path: Path, stage: str, shard: int) -> None:
        self.path = path
        self.stage = stage
        self.shard = shard
        self.restored = 0
        self._fh: IO[bytes] | None = None
        self._fd: int | None = None
        self._expected = b""
        self._guarded = True
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            before = _read_regular(path)
            if before is None and not path.is_symlink():
                self._guarded = False  # a device or FIFO the caller named: append only
                return
            self._expected = b"" if before is None else before
            if before is None:
                self._restore()
            self._fh = open(path, "ab")
        except OSError:
            self._guarded = False  # each write reports the error as a warning

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return self._fd

    def _restore(self) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".ci-policy-timings-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(self._expected)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _check(self) -> bool:
        """Whether the file held exactly the expected bytes; restored when not."""
        assert self._fh is not None
        current = _read_regular(self.path)
        try:
            same_file = os.path.samestat(os.lstat(self.path), os.fstat(self._fh.fileno()))
        except OSError:
            same_file = False
        if current == self._expected and same_file:
            return True
        self._fh.close()
        self._restore()
        self._fh = open(self.path, "ab")
        self.restored += 1
        return False

    def write(self, reg: Registration, attempt: Attempt) -> str | None:
        """Appends the attempt's record; the warning when it could not be written, else None."""
        record = {
            "schema": 1,
            "file": reg.file,
            "stage": self.stage,
            "shard": self.shard,
            "attempt": attempt.attempt,
            "status": attempt.status,
            "elapsed": round(attempt.elapsed, 3),
            "est_time": reg.est_time,
            "failure_kind": attempt.verdict.kind if attempt.verdict else None,
            "retriable": attempt.verdict.retriable if attempt.verdict else None,
            "started_at": attempt.started_at,
            "commit": os.environ.get("GITHUB_SHA"),
            "run_id": os.environ.get("GITHUB_RUN_ID"),
            "run_attempt": os.environ.get("GITHUB_RUN_ATTEMPT"),
        }
        data = (json.dumps(record, sort_keys=False) + "\n").encode("utf-8")
        try:
            if self._guarded and self._fh is not None:
                self._check()
                self._fh.write(data)
                self._fh.flush()
                os.fsync(self._fh.fileno())
                self._expected += data
            else:
                fd = self._open()
                # One write of the whole line to an O_APPEND file: never interleaved, never buffered.
                if os.write(fd, data) != len(data):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
                os.fsync(fd)
        except OSError as exc:
            return write_warning("timing record", self.path, reg.file, attempt.attempt, exc)
        return None

    def close(self) -> bool:
        """Closes the file; False when it had been changed by something else since the last record."""
        unchanged = True
        if self._fh is not None:
            try:
                unchanged = self._check()
            except OSError:
                unchanged = False
            finally:
                self._fh.close()
                self._fh = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        return unchanged


def write_warning(what: str, path: Path, file: str, attempt: int, exc: OSError) -> str:
    """`cannot write the timing record of F attempt N to PATH: No space left on device (ENOSPC)`."""
    name = errno.errorcode.get(exc.errno or 0, "")
    reason = (exc.strerror or str(exc)) + (f" ({name})" if name else "")
    return f"cannot write the {what} of {one_line(file)} attempt {attempt} to {one_line(str(path))}: {reason}"


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


def sweep(spare: frozenset[int]) -> int:
    """Freeze-then-kill every live descendant of the runner but `spare`; how many there were."""
    me = os.getpid()

    def select(table: procs.Table) -> set[int]:
        return {p for p in procs.descendants(table, [me], spare) if not procs.dead(table[p][3])}

    held = procs.freeze_and_kill(select) if select(proc_table()) else set()
    procs.wait_gone(held, procs.reap)
    reap_adopted(spare)
    return len(held)


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
