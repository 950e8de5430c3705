"""Test files scanned over several processes (an adapter): a `model.scan.Scanner`.

- In: how many processes may scan (`jobs`: `--jobs N`, else `$CI_POLICY_JOBS`, else the
  cores this process may use, `available_cores`), and, per call, the files to scan as
  `scan_files` takes them.
- Out: `process_scanner(jobs)`: None for one job (the snapshot scans in this process);
  else a scanner that scans in this process when fewer than `PARALLEL_MIN_FILES` files
  are to be scanned (starting workers costs more than it saves), and otherwise in
  `jobs` worker processes, the files split in consecutive chunks (about four per worker,
  at most `MAX_CHUNK` files each), the results returned in the files' order: the same
  result for any number of workers.
- Refused: nothing: `jobs` was checked by its caller (`app.scanning`); workers that fail make
  the scan run in this process, as below.
- Workers are forked (the `fork` start method, chosen on purpose): they start with the
  modules this process already imported and the configuration it already read, import
  nothing (least of all anything of the checkout) and are handed file names, texts
  already read and nothing else. Each returns plain data: a file's `encode_scan`, or the
  diagnostic of a file it could not read. Where `fork` is not offered, or the workers
  fail (they could not start, one died), the files are scanned in this process; the
  result is the same.
- `available_cores`: the CPUs this process may run on (`os.sched_getaffinity`), capped
  by the cgroup CPU quota (`cpu.max` of cgroup v2, `cpu.cfs_quota_us`/`cpu.cfs_period_us`
  of v1), at least 1.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ci_policy.config.top import Config
from ci_policy.errors import Diagnostic
from ci_policy.model.scan import FileScan, Scanner, scan_files
from ci_policy.model.scan_codec import encode_scan
from ci_policy.read.labels import LabelRegistry

JOBS_ENV = "CI_POLICY_JOBS"
# Below this many files to scan, one process is faster: starting the workers and moving
# the scans between processes costs about as much as scanning a few hundred files.
PARALLEL_MIN_FILES = 500
MAX_CHUNK = 256

CGROUP_V2_MAX = "/sys/fs/cgroup/cpu.max"
CGROUP_V1_QUOTA = "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"
CGROUP_V1_PERIOD = "/sys/fs/cgroup/cpu/cpu.cfs_period_us"

# What the forked workers scan with: set in the parent just before the pool forks.
_WORK: tuple[Path, Config, LabelRegistry] | None = None


def _cgroup_quota() -> int | None:
    """The CPUs the cgroup quota allows (rounded up), or None when there is none or it cannot be read."""
    try:
        with open(CGROUP_V2_MAX, encoding="ascii") as fh:
            quota, period = fh.read().split()[:2]
        if quota != "max":
            return max(1, math.ceil(int(quota) / int(period)))
        return None
    except (OSError, ValueError):
        pass
    try:
        with open(CGROUP_V1_QUOTA, encoding="ascii") as fh:
            quota_us = int(fh.read().strip())
        with open(CGROUP_V1_PERIOD, encoding="ascii") as fh:
            period_us = int(fh.read().strip())
    except (OSError, ValueError):
        return None
    return max(1, math.ceil(quota_us / period_us)) if quota_us > 0 and period_us > 0 else None


def available_cores() -> int:
    """The CPUs this process may use: its affinity, capped by the cgroup quota; at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_quota()
    return max(1, min(cores, quota) if quota is not None else cores)


def _scan_chunk(items: list[tuple[str, str | None]]) -> list[list[Any] | Diagnostic]:
    """In a worker: `scan_files` of one chunk, each scan encoded (plain data)."""
    assert _WORK is not None, "a worker is forked after the work is set"
    repo, config, labels = _WORK
    return [encode_scan(found) if isinstance(found, FileScan) else found
            for found in scan_files(repo, items, config, labels)]


def _chunks(items: Sequence[tuple[str, str | None]], jobs: int) -> list[list[tuple[str, str | None]]]:
    size = max(1, min(MAX_CHUNK, math.ceil(len(items) / (jobs * 4))))
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def process_scanner(jobs: int) -> Scanner | None:
    """The scanner for `jobs` processes (see the module doc); None for one."""
    if jobs <= 1 or sys.platform != "linux" or not hasattr(os, "fork"):
        return None

    def scanner(repo: Path, items: Sequence[tuple[str, str | None]], config: Config,
                labels: LabelRegistry) -> Sequence[FileScan | Diagnostic | list[Any]]:
        if len(items) < PARALLEL_MIN_FILES:
            return scan_files(repo, items, config, labels)
        return _in_workers(repo, items, config, labels, jobs)

    return scanner


def _in_workers(repo: Path, items: Sequence[tuple[str, str | None]], config: Config, labels: LabelRegistry,
                jobs: int) -> Sequence[FileScan | Diagnostic | list[Any]]:
    # A scan in one process starts no pool, nor imports multiprocessing (about 15 ms):
    # test_a_scan_in_one_process_imports_no_process_pool
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    global _WORK
    chunks = _chunks(items, jobs)
    _WORK = (repo, config, labels)
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)),
                                 mp_context=multiprocessing.get_context("fork")) as pool:
            return [found for part in pool.map(_scan_chunk, chunks) for found in part]
    except (BrokenProcessPool, OSError):
        return scan_files(repo, items, config, labels)
    finally:
        _WORK = None
