"""Run a command the way an init that reaps runs it: `python reaping_init.py REPORT ARGV...`.

A test that SIGKILLs the runner leaves the runner's descendants orphaned; they are reparented
to the nearest child subreaper, else to PID 1. Every real init reaps them (systemd, tini,
docker --init), but a PID 1 that never calls wait() keeps each as a zombie, and a PID hopper
makes hundreds a second. This wrapper is that reaping ancestor for the test, and its witness:
- a child subreaper that runs ARGV and reaps every process that ends up its child until none
  is left (at most LINGER seconds after ARGV ends);
- SIGTERM and SIGINT it receives go on to ARGV, so a test signals the command through it;
- it writes to REPORT how many processes it reaped besides ARGV: what ARGV left behind, live
  or as unreaped zombies (0 for a runner that reaps everything it adopted);
- it ends as ARGV ended, by the same signal if ARGV died of one.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
LINGER = 20.0


def main(report: str, argv: list[str]) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("reaping_init: cannot become a child subreaper", file=sys.stderr)
        return 125
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)

    def forward(signum: int, frame: object) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    status = None
    deadline = None
    adopted = 0
    while True:
        try:
            child, code = os.waitpid(-1, os.WNOHANG if deadline is not None else 0)
        except ChildProcessError:
            break  # no child left: everything the command started is reaped
        if child == pid:
            status = code
            deadline = time.monotonic() + LINGER
        elif child:
            adopted += 1
        elif deadline is not None and time.monotonic() >= deadline:
            break
        else:
            time.sleep(0.01)
    with open(report, "w", encoding="utf-8") as fh:
        fh.write(f"{adopted}\n")
    assert status is not None
    if os.WIFSIGNALED(status):
        if os.WTERMSIG(status) not in (signal.SIGKILL, signal.SIGSTOP):  # those cannot be handled
            signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
