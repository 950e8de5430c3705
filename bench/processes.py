"""Whole processes timed for the benchmarks, one way for all of them.

- `measure(argv, cwd=..., env=..., ok=...)`: one process of `argv`, its output discarded, as a
  `Usage`: wall seconds, CPU seconds (user + system) and peak RSS (KiB), read by `os.wait4`.
  An exit code outside `ok` stops the benchmark with the tail of the process's stderr.
- The process is started by a small launcher, not by the benchmark itself: a child of a large
  process would report that process's size (Linux keeps the largest RSS across fork and exec,
  and a benchmark holds its in-process rows' snapshots: at 5,000 files every command read
  61 MiB here, 48 under `/usr/bin/time`). The launcher is small, so its child's peak is its
  own; CPU time is the child's alone, the launcher's own start not counted.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

LAUNCHER = """\
import os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = proc.stderr.read()
_, status, usage = os.wait4(proc.pid, 0)
took = time.perf_counter() - start
sys.stderr.buffer.write(err[-2000:])
print(os.waitstatus_to_exitcode(status), took, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
"""


@dataclass(frozen=True)
class Usage:
    wall: float  # seconds
    cpu: float  # seconds, user + system
    rss_kib: int  # peak


def measure(argv: list[str], *, cwd: Path | str | None = None, env: Mapping[str, str] | None = None,
            ok: Collection[int] = (0,)) -> Usage:
    """One process of `argv` (see the module doc)."""
    done = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], cwd=cwd, env=env, capture_output=True,
                          check=False)
    fields = done.stdout.split()
    if done.returncode != 0 or len(fields) != 4 or int(fields[0]) not in ok:
        code = fields[0].decode() if fields else "?"
        raise SystemExit(f"{' '.join(argv[:4])} exited {code}: {done.stderr.decode(errors='replace')[-1000:]}")
    return Usage(float(fields[1]), float(fields[2]), int(fields[3]))
