"""Process control for the suite runner: no process of a test attempt outlives it.

- In: an attempt's process, its id (`attempt_id`) and the runner's cgroup; /proc and cgroupfs.
- Out: the attempt's cgroup made, killed and removed; its processes found, frozen and killed
  (`freeze_and_kill`); the `KillGuard` and `Watchdog` below.
- Refused: nothing: a process or cgroup gone meanwhile, or a kernel without cgroup v2
  delegation, is skipped (an `OSError` swallowed); a kill must never stop half way.
- Containment: where the cgroup v2 hierarchy is delegated to us (the runner's own cgroup
  directory is writable), every attempt runs in a child cgroup of its own and is killed
  with `cgroup.kill`, which no fork, `setsid` or PID hop escapes. `CI_POLICY_CGROUPS=0`
  in the runner's environment turns this off.
- Freeze, then kill (everywhere, also after a cgroup kill, for a process that moved out):
  SIGSTOP every process the selection finds in /proc (the runner's descendants, the runner
  being a child subreaper, and the test's session and process group), rescan until a scan
  finds nothing new and nothing running, then SIGKILL them all. A stopped process cannot
  fork, so a child that re-forks and calls `setsid` in a loop is caught.
- A watchdog, forked once per shard before any thread starts, holds the read end of a pipe
  from the runner. When the runner dies without saying so (SIGKILL), the pipe closes and the
  watchdog kills the running attempt: its cgroup, then every process that carries the
  attempt's id in its environment (`CI_POLICY_ATTEMPT_ID`) or is in the test's session or
  process group, with their descendants, frozen first.
- `KillGuard`: while a kill runs, SIGTERM and SIGINT only hurry it (straight to the freeze
  and SIGKILL); the interrupted run ends once the kill is done, never before.
- Nothing here reads or runs anything from the checkout; /proc and cgroupfs only.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType, TracebackType

ATTEMPT_ENV = "CI_POLICY_ATTEMPT_ID"
CGROUPS_ENV = "CI_POLICY_CGROUPS"
PR_SET_CHILD_SUBREAPER = 36
# How long a freeze may chase processes that keep appearing before it kills what it holds.
FREEZE_LIMIT = 10.0

Table = dict[int, tuple[int, int, int, str]]  # pid -> (ppid, pgid, sid, state)


PR_GET_CHILD_SUBREAPER = 37


def set_subreaper(on: bool) -> bool | None:
    """Orphaned descendants (double-forked daemons) get reparented to us, so we can kill them.

    Returns whether this process was a subreaper before (None where that is unknown), so a
    caller that runs inside a longer-lived process (a test session) can put it back: a
    subreaper left on would adopt, and never reap, every orphan of the rest of its life.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        was = ctypes.c_int(0)
        before = bool(was.value) if libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0) == 0 else None
        if libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
            return None
        return before
    except (OSError, AttributeError):
        return None


# A scan lists /proc, then reads each process; a process born after the listing is caught by
# listing again and reading only the new pids, at most this many more times.
RELIST_ROUNDS = 8


def proc_table(skip: Iterable[int] = ()) -> Table:
    """pid -> (ppid, pgid, sid, state) from /proc, leaving out `skip`; empty without /proc.

    /proc is not a snapshot: a PID hopper's generation lives about 2 ms, and on a machine with
    thousands of processes the listing's newest pids (the hopper's) are read last, by when the
    generation listed has exited and the next was not listed. So the scan lists /proc again
    and reads only the pids that are new, until a listing holds none (or RELIST_ROUNDS): those
    reads take microseconds, and catch the live generation.
    """
    table: Table = {}
    seen = set(skip)
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for _ in range(RELIST_ROUNDS + 1):
        fresh = [int(n) for n in names if n.isdigit() and int(n) not in seen]
        if not fresh:
            break
        seen.update(fresh)
        _read_stats(sorted(fresh, reverse=True), table)  # newest first: the shortest-lived
        try:
            names = os.listdir("/proc")
        except OSError:
            break
    return table


def _read_stats(pids: Iterable[int], table: Table) -> None:
    for pid in pids:
        name = str(pid)
        try:
            fd = os.open(f"/proc/{name}/stat", os.O_RDONLY)
            try:
                data = os.read(fd, 4096).decode("ascii", "replace")
            finally:
                os.close(fd)
        except OSError:
            continue
        # The command name may contain spaces and parentheses: split after the last ')'.
        rest = data[data.rfind(")") + 2:].split()
        if len(rest) >= 4:
            table[pid] = (int(rest[1]), int(rest[2]), int(rest[3]), rest[0])


def dead(state: str | None) -> bool:
    return state is None or state in ("Z", "X", "x")


def descendants(table: Table, roots: Iterable[int], exclude: frozenset[int] = frozenset()) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _pgid, _sid, _state) in table.items():
        children.setdefault(ppid, []).append(pid)
    out: set[int] = set()
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in out and child not in exclude:
                out.add(child)
                stack.append(child)
    return out


def signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def freeze_and_kill(select: Callable[[Table], set[int]]) -> set[int]:
    """SIGSTOP what `select` finds until a full scan finds nothing new or running, then SIGKILL it all.

    `select(table)` returns the pids to kill among the processes of `table`. Returns every
    pid signalled. Processes found foreign stay foreign (only a process's own descendants can
    join it), so the chase rescans only new pids; the final confirming scan is a full one.
    """
    held: set[int] = set()
    foreign: set[int] = set()
    deadline = time.monotonic() + FREEZE_LIMIT
    while True:
        full = proc_table()
        chase = True
        while chase:
            table = full if full else proc_table(skip=foreign)
            full = {}
            targets = {p for p in select(table) if not dead(table[p][3])}
            foreign |= set(table) - targets - held
            signal_all(targets, signal.SIGSTOP)
            new = targets - held
            held |= targets
            running = [p for p in targets if table[p][3] not in ("T", "t")]
            chase = bool(new or running) and time.monotonic() < deadline
        confirm = proc_table()
        targets = {p for p in select(confirm) if not dead(confirm[p][3])}
        if targets <= held and all(confirm[p][3] in ("T", "t") for p in targets):
            break
        held |= targets
        foreign.clear()
        if time.monotonic() >= deadline:
            break
    # SIGKILL ends a stopped process too: nothing needs SIGCONT first.
    signal_all(held, signal.SIGKILL)
    return held


def wait_gone(pids: set[int], reap: Callable[[set[int]], None], limit: float = 5.0) -> None:
    """Until every pid is dead (reaping our own children as they die), at most `limit` seconds."""
    deadline = time.monotonic() + limit
    while pids:
        reap(pids)
        table = proc_table()
        if all(dead(table.get(p, (0, 0, 0, "X"))[3]) for p in pids) or time.monotonic() > deadline:
            reap(pids)
            return
        time.sleep(0.01)


def reap(pids: Iterable[int]) -> None:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


# -- cgroups --------------------------------------------------------------------------------

def cgroup_base() -> Path | None:
    """The runner's own cgroup v2 directory when it is delegated to us (writable); else None."""
    if os.environ.get(CGROUPS_ENV, "1") == "0" or not sys.platform.startswith("linux"):
        return None
    try:
        own = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines()
                   if line.startswith("0::"))
        mount = None
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields, _, tail = line.partition(" - ")
            if tail.split(" ", 1)[0] == "cgroup2":
                mount = fields.split()[4]
                break
    except (OSError, StopIteration):
        return None
    if mount is None:
        return None
    base = Path(mount, own.lstrip("/"))
    if not (base / "cgroup.procs").is_file() or not os.access(base, os.W_OK):
        return None
    return base


def make_cgroup(base: Path | None, name: str) -> Path | None:
    """A child cgroup `name` of `base` with `cgroup.kill` (Linux 5.14+); None when impossible."""
    if base is None:
        return None
    path = base / name
    try:
        path.mkdir()
    except OSError:
        return None
    if not (path / "cgroup.kill").exists():
        remove_cgroup(path)
        return None
    return path


def join_cgroup(path: Path | None) -> Callable[[], None] | None:
    """A `preexec_fn` that moves the forked child into `path` before it runs the test."""
    if path is None:
        return None
    procs = str(path / "cgroup.procs")

    def join() -> None:
        try:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        except OSError:
            pass  # the parent checks membership and falls back to freeze-then-kill
    return join


def cgroup_pids(path: Path) -> set[int]:
    try:
        return {int(p) for p in (path / "cgroup.procs").read_text().split()}
    except (OSError, ValueError):
        return set()


def kill_cgroup(path: Path | None) -> set[int]:
    """`cgroup.kill`, wait until the cgroup is empty, remove it; returns the pids it held."""
    if path is None:
        return set()
    pids = cgroup_pids(path)
    try:
        (path / "cgroup.kill").write_text("1")
    except OSError:
        pass
    deadline = time.monotonic() + 5
    while cgroup_pids(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    remove_cgroup(path)
    return pids


def remove_cgroup(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def attempt_id() -> str:
    return f"{os.getpid()}-{secrets.token_hex(8)}"


# -- signals during a kill ------------------------------------------------------------------------

class KillGuard:
    """While a kill runs, SIGTERM/SIGINT hurry it instead of interrupting it; re-raised after.

    In the main thread only (Python runs signal handlers there). On exit, a signal that
    arrived raises what it would have raised (`on_sigterm()`, KeyboardInterrupt), unless the
    caller is already ending the run for an earlier one (`reraise=False`).
    """

    def __init__(self, on_sigterm: Callable[[], BaseException], reraise: bool = True) -> None:
        self.on_sigterm = on_sigterm
        self.reraise = reraise
        self.received: list[int] = []
        self.previous: dict[int, object] = {}

    def hurried(self) -> bool:
        return bool(self.received)

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)

    def __enter__(self) -> KillGuard:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self.previous[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        if exc_type is None and self.reraise and self.received:
            if signal.SIGTERM in self.received:
                raise self.on_sigterm()
            raise KeyboardInterrupt


# -- the watchdog -----------------------------------------------------------------------------------

class Watchdog:
    """A forked process that kills the running attempt if the runner dies without saying so.

    Protocol on the pipe, one line each: `A <attempt id> <cgroup or ->` before an attempt
    starts, `P <pid>` once it runs, `D` when the runner has killed it itself, `Q` at the end.
    End of file without `Q`: the runner died.
    """

    def __init__(self) -> None:
        self.pid: int | None = None
        self._fd: int | None = None

    def start(self) -> None:
        if not sys.platform.startswith("linux"):
            return
        try:
            read_fd, write_fd = os.pipe()
            pid = os.fork()
        except OSError:
            return
        if pid == 0:  # the watchdog: never returns into the runner's code
            code = 0
            try:
                os.close(write_fd)
                _watch(read_fd)
            except BaseException:  # noqa: B036 - nothing may unwind into the runner's code in this process
                code = 1
            finally:
                os._exit(code)
        os.close(read_fd)
        self.pid, self._fd = pid, write_fd

    def send(self, line: str) -> None:
        if self._fd is None:
            return
        try:
            os.write(self._fd, (line + "\n").encode())
        except OSError:
            pass

    def stop(self) -> None:
        if self._fd is None or self.pid is None:
            return
        self.send("Q")
        os.close(self._fd)
        self._fd = None
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _watch(fd: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the runner handles a Ctrl-C or a cancelled job
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    buf = b""
    attempt: tuple[str, Path | None] | None = None
    pid: int | None = None
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            word, _, arg = line.decode().partition(" ")
            if word == "A":
                ident, _, group = arg.partition(" ")
                attempt, pid = (ident, None if group == "-" else Path(group)), None
            elif word == "P":
                pid = int(arg)
            elif word == "D":
                attempt, pid = None, None
            elif word == "Q":
                return
    if attempt is None:
        return
    ident, cgroup = attempt
    kill_cgroup(cgroup)
    freeze_and_kill(lambda table: _attempt_processes(table, ident, pid))
    print("ci-policy run: the runner died; the processes of its running test were killed", file=sys.stderr,
          flush=True)


def _attempt_processes(table: Table, ident: str, pid: int | None) -> set[int]:
    me = os.getpid()
    needle = f"{ATTEMPT_ENV}={ident}".encode()
    roots = set()
    for p, (_ppid, pgid, sid, _state) in table.items():
        if p == me:
            continue
        if pid is not None and pid in (pgid, sid):
            roots.add(p)
            continue
        try:
            with open(f"/proc/{p}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    roots.add(p)
        except OSError:
            continue
    return roots | descendants(table, roots, frozenset({me}))
