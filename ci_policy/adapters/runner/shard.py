"""The suite runner (an adapter): executes one shard's files as subprocesses.

- In: the checkout root, the `StagePlan` and `Shard` from `ci_policy.plan` (the same
  code as `ci-policy plan`/`list`), retry rules, timeouts and `RunOptions`.
- Out: a `ShardResult`; progress lines and the tests' live output on `out`; one JSON
  line per attempt appended (and flushed, fsynced) to the timings file, so a runner
  killed mid-shard keeps every finished record.
- Each file runs as `python FILE` or `python -m pytest FILE` (the stage's `runner`),
  from the checkout root, in its own session/process group, without a shell.
- On timeout: SIGTERM to the process group and to every descendant, SIGKILL after the
  grace period. The runner makes itself a child subreaper (Linux), so double-forked
  daemons are reparented to it and killed too; leftovers of a test that exited are
  killed the same way, so no process a test started outlives its attempt.
- Refused before anything runs: a missing, non-regular or symlinked test file.
"""

from __future__ import annotations

import codecs
import collections
import ctypes
import datetime
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from ci_policy.adapters.runner.retry import classify
from ci_policy.config.runner import RetryRules, RunnerConfig
from ci_policy.errors import InputError, InputErrors
from ci_policy.model.registry import Registration
from ci_policy.plan.build import StagePlan
from ci_policy.plan.partition import Shard
from ci_policy.plan.results import Attempt, AttemptStatus, FileResult, GateOutcome, ShardResult
from ci_policy.plan.timeouts import timeout_for
from ci_policy.read.checkout import check_no_symlinks
from ci_policy.read.records import Problems, Series, merge_record_dir, write_record
from ci_policy.render import escape_data, one_line
from ci_policy.sdk.metrics import CAPTURE_ENV, RECORD_DIR_ENV

TAIL_BYTES = 64 * 1024
FAILURE_KIND_ENV = "CI_POLICY_FAILURE_KIND_FILE"
PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class RunOptions:
    max_attempts: int = 1
    retry_wait: float = 0.0
    continue_on_error: bool = False
    bypass_fastfail: bool = False
    github: bool = False
    timings_out: Path | None = None
    kill_grace: float = RunnerConfig.kill_grace
    python: str = sys.executable
    # Metric capture: every attempt gets its own CI_POLICY_RECORD_DIR; the passing
    # attempt's files are merged into records_dir/<file>.json and handed to `gate`.
    records_dir: Path | None = None
    capture: tuple[str, ...] = ()
    gate: Callable[[Registration, Series, Problems], GateOutcome] | None = None


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


# -- processes ---------------------------------------------------------------------------

def become_subreaper() -> bool:
    """Orphaned descendants (double-forked daemons) get reparented to us, so we can kill them."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, state) from /proc; empty where /proc does not exist."""
    table: dict[int, tuple[int, str]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                data = fh.read().decode("ascii", "replace")
        except OSError:
            continue
        # The command name may contain spaces and parentheses: split after the last ')'.
        rest = data[data.rfind(")") + 2:].split()
        if len(rest) >= 2:
            table[int(name)] = (int(rest[1]), rest[0])
    return table


def descendants(root: int, exclude: frozenset[int] = frozenset()) -> set[int]:
    table = _proc_table()
    children: dict[int, list[int]] = collections.defaultdict(list)
    for pid, (ppid, state) in table.items():
        if state != "Z":
            children[ppid].append(pid)
    out, stack = set(), [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in out and child not in exclude:
                out.add(child)
                stack.append(child)
    return out


def _alive(pid: int) -> bool:
    state = _proc_table().get(pid)
    if state is not None:
        return state[1] != "Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not Path("/proc").is_dir()


def _signal(pids, pgid: int | None, sig: int) -> None:
    if pgid is not None:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _reap(pids) -> None:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def kill_tree(pgid: int | None, keep: frozenset[int], grace: float) -> int:
    """SIGTERM the group and every descendant of this process, SIGKILL what remains."""
    me = os.getpid()
    targets = descendants(me, keep)
    if not targets and pgid is None:
        return 0
    _signal(targets, pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(targets)
        targets |= descendants(me, keep)
        if not any(_alive(p) for p in targets):
            break
        time.sleep(0.05)
    survivors = {p for p in targets | descendants(me, keep) if _alive(p)}
    if survivors or pgid is not None:
        _signal(survivors, pgid, signal.SIGKILL)
    for _ in range(100):
        _reap(targets | survivors)
        if not any(_alive(p) for p in survivors):
            break
        time.sleep(0.02)
    return len(targets)


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


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None
    timed_out: bool
    elapsed: float
    tail: str
    killed: int


def run_process(argv: list[str], cwd: Path, env: dict, timeout: float | None, grace: float,
                out: IO[str]) -> ProcessResult:
    keep = frozenset(descendants(os.getpid()))
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
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
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        killed = kill_tree(proc.pid, keep | {os.getpid()}, grace) if timed_out else 0
        if not timed_out:
            # The test exited; anything it left behind (servers, daemons) goes too.
            killed = kill_tree(None, keep | {os.getpid()}, grace)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        proc.wait()
    elapsed = time.monotonic() - start
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
    runner_temp = os.environ.get("RUNNER_TEMP")
    if runner_temp:
        return Path(runner_temp) / "ci-policy-timings.jsonl"
    return repo / ".ci-policy" / "timings.jsonl"


class TimingsWriter:
    """Appends one JSON line per attempt; flushed and fsynced before the next attempt starts."""

    def __init__(self, path: Path, stage: str, shard: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.stage = stage
        self.shard = shard
        self._fh = open(path, "a", encoding="utf-8")

    def write(self, reg: Registration, attempt: Attempt) -> dict:
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
        self._fh.write(json.dumps(record, sort_keys=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        return record

    def close(self) -> None:
        self._fh.close()


def _fmt_s(value: float) -> str:
    return f"{value:.1f}s"


def _est(value: float) -> str:
    return f"{value:g}s"


class Terminated(BaseException):
    """The runner received SIGTERM (a cancelled job); the running test is killed on the way out."""


def _on_sigterm(signum, frame):
    raise Terminated()


def run_shard(repo: Path, stage_plan: StagePlan, shard: Shard, rules: RetryRules,
              options: RunOptions, from_est: tuple[float, float] | None = None,
              out: IO[str] = sys.stdout) -> ShardResult:
    regs_by_file = {r.file: r for r in stage_plan.tests}
    regs = [regs_by_file[f] for f in shard.files]
    check_files(repo, regs)
    become_subreaper()
    timings = TimingsWriter(options.timings_out or default_timings_path(repo), stage_plan.name, shard.index)
    result = ShardResult(stage=stage_plan.name, shard=shard.index, results=[], not_run=[])
    fast_fail = not (options.continue_on_error or options.bypass_fastfail)
    total = len(regs)
    # A cancelled job sends SIGTERM; the test runs in its own session and would otherwise
    # keep its GPU. Terminated unwinds through run_process, which kills the test's tree.
    previous = (signal.signal(signal.SIGTERM, _on_sigterm)
                if threading.current_thread() is threading.main_thread() else None)
    try:
        for i, reg in enumerate(regs, start=1):
            file_result = FileResult(reg, timeout_for(reg, stage_plan.stage.timeout_per_file, from_est))
            result.results.append(file_result)
            _run_file(repo, stage_plan, shard, reg, file_result, i, total, rules, options, timings, out)
            if not file_result.passed and fast_fail and i < total:
                result.not_run = regs[i:]
                print(f"ci-policy: stopping after {one_line(reg.file)} failed (fast-fail); "
                      f"{len(result.not_run)} file(s) not run. Use --continue-on-error to run them.",
                      file=out, flush=True)
                break
    finally:
        timings.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return result


def _run_file(repo, stage_plan, shard, reg, file_result, i, total, rules, options, timings, out) -> None:
    argv = ([options.python, reg.file] if stage_plan.stage.runner == "python"
            else [options.python, "-m", "pytest", reg.file])
    timeouts = 0
    with tempfile.TemporaryDirectory(prefix="ci-policy-") as tmp:
        for attempt in range(1, options.max_attempts + 1):
            kind_file = Path(tmp, f"failure-kind-{attempt}")
            env = dict(os.environ)
            env.update({FAILURE_KIND_ENV: str(kind_file), "CI_POLICY_STAGE": stage_plan.name,
                        "CI_POLICY_SHARD": str(shard.index), "CI_POLICY_ATTEMPT": str(attempt)})
            record_dir = Path(tmp, f"record-{attempt}")
            if options.records_dir is not None:
                record_dir.mkdir()
                env.update({RECORD_DIR_ENV: str(record_dir), CAPTURE_ENV: json.dumps(list(options.capture))})
            started = _now()
            if options.github:
                print(f"::group::{escape_data(f'{reg.file} (attempt {attempt})')}", file=out, flush=True)
            proc = run_process(argv, repo, env, file_result.timeout, options.kill_grace, out)
            if options.github:
                print("::endgroup::", file=out, flush=True)
            status: AttemptStatus = "timeout" if proc.timed_out else ("pass" if proc.returncode == 0 else "fail")
            verdict = None
            if status != "pass":
                reported = _read_kind(kind_file)
                verdict = classify(status, proc.tail, reported, timeouts, rules)
                timeouts += status == "timeout"
            attempt_rec = Attempt(attempt=attempt, status=status, elapsed=proc.elapsed, started_at=started,
                                  returncode=proc.returncode, verdict=verdict, killed=proc.killed)
            file_result.attempts.append(attempt_rec)
            timings.write(reg, attempt_rec)
            line = (f"[{i}/{total}] {one_line(reg.file)} {status.upper()} elapsed={_fmt_s(proc.elapsed)} "
                    f"est={_est(reg.est_time)} attempt={attempt}")
            if proc.timed_out:
                line += f" (timeout {file_result.timeout:g}s)"
            if proc.killed:
                line += f" (killed {proc.killed} leftover process(es))"
            print(line, file=out, flush=True)
            if status == "pass":
                if options.records_dir is not None:
                    _merge_and_gate(reg, record_dir, options.records_dir, file_result, options, out)
                return
            assert verdict is not None  # every attempt that did not pass was classified
            if not verdict.retriable or attempt == options.max_attempts:
                print(f"      {verdict.kind}: {verdict.reason}"
                      + ("" if verdict.retriable else "; not retried"), file=out, flush=True)
                return
            print(f"      {verdict.kind}: {verdict.reason}; retrying"
                  + (f" in {options.retry_wait:g}s" if options.retry_wait else ""), file=out, flush=True)
            if options.retry_wait:
                time.sleep(options.retry_wait)


def record_path(records_dir: Path, file: str) -> Path:
    return records_dir / (file.replace("/", "__") + ".json")


def _merge_and_gate(reg, record_dir: Path, records_dir: Path, file_result: FileResult, options: RunOptions,
                    out) -> None:
    """Only a passing attempt's records are merged (failed attempts' never are), then gated."""
    from ci_policy import render

    # A record the code under test wrote wrong is that file's problem (its gates ERROR),
    # never an exception that loses the rest of the shard.
    series, problems = merge_record_dir(record_dir)
    if problems:
        count = sum(len(m) for m in problems.values())
        first = next(iter(problems.values()))[0]
        print(f"      metrics: the record of {one_line(reg.file)} has {count} problem(s): {one_line(first)}",
              file=out, flush=True)
    write_record(series, record_path(records_dir, reg.file), problems)
    if options.gate is not None:
        file_result.gate = options.gate(reg, series, problems)
        if file_result.gate.results:
            print(render.gate_text(file_result.gate), file=out, flush=True)


def _read_kind(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip().lower()[:32] or None
    except OSError:
        return None
