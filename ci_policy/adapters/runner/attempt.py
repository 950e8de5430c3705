"""One attempt of a test (an adapter): its process run, its output pumped, and every process it started killed.

- In: the argv, working directory, environment, timeout and kill grace of the attempt, the stream
  its output is echoed to, and the shard's `Containment` (the cgroup base, the watchdog, the user
  the tests run as).
- Out: a `ProcessResult`: the return code (None when timed out), whether it timed out, the time
  until the main process exited or was timed out, the last `TAIL_BYTES` of its output and how
  many processes were killed. The output is echoed as it comes, decoded incrementally as UTF-8.
- On timeout, interruption or exit: SIGTERM to every process of the attempt (the runner's
  descendants, it being a subreaper, and the test's session and process group), then after the
  grace its cgroup's `cgroup.kill` and freeze-then-kill (`procs`); `sweep` does the same for
  whatever a shard left. A signal arriving meanwhile (`Terminated`, SIGINT) hurries the kill,
  never aborts it, and is raised once it is done.
- Refused: nothing; an output stream that cannot take the text is skipped (`echo`), never
  allowed to stop the pump (an undrained pipe would block the test).
"""

from __future__ import annotations

import codecs
import collections
import io
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from ci_policy.adapters.runner import procs
from ci_policy.adapters.runner.environment import RunAs, become
from ci_policy.adapters.runner.procs import Watchdog, proc_table

TAIL_BYTES = 64 * 1024
REAP_INTERVAL = 0.1  # seconds between sweeps for adopted zombies while a test runs


class Terminated(BaseException):
    """The runner received SIGTERM (a cancelled job); the running test is killed on the way out."""


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


def echo(out: IO[str], text: str) -> None:
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


def wait_reaping(proc: subprocess.Popen, timeout: float | None, keep: frozenset[int]) -> None:
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
            echo(out, decoder.decode(chunk))
            last[0] = chunk[-1:]
            tail.append(chunk)
            size[0] += len(chunk)
            while size[0] > TAIL_BYTES and len(tail) > 1:
                size[0] -= len(tail.popleft())
        echo(out, decoder.decode(b"", final=True))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = False
    interrupted: BaseException | None = None
    try:
        wait_reaping(proc, timeout, keep)
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


def sweep(spare: frozenset[int]) -> int:
    """Freeze-then-kill every live descendant of the runner but `spare`; how many there were."""
    me = os.getpid()

    def select(table: procs.Table) -> set[int]:
        return {p for p in procs.descendants(table, [me], spare) if not procs.dead(table[p][3])}

    held = procs.freeze_and_kill(select) if select(proc_table()) else set()
    procs.wait_gone(held, procs.reap)
    reap_adopted(spare)
    return len(held)
