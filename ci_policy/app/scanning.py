"""How a command reads the test files of a checkout: the scan cache, git's listing, the processes.

- In: a `ScanRequest`: the checkout, `--cache DIR` / `--no-cache`, `--jobs N` (None: `$CI_POLICY_JOBS`,
  else the CPUs this process may use), and where a warning goes.
- Out: a `Scan`: the cache to use (or None), git's listing of the checkout, started now (`index()`
  waits for it), and the scanner; `load(config)` is the checkout's snapshot read with them. The
  listing is used with or without the cache: discovery takes its candidates from it either way,
  so `--no-cache` changes no output.
- Refused: a `--cache` directory inside the checkout (a pull request could plant entries there),
  or a malformed `$CI_POLICY_JOBS`, as `UsageError`. A cache directory that cannot be used (a
  symlink, another user's, writable by others) is a warning, and every file is read; so is,
  once per command, a damaged or foreign pack or stored scan (every file it concerns is read).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ci_policy.adapters import parallel
from ci_policy.adapters.git import start_checkout_index
from ci_policy.adapters.scan_cache import DirScanCache, default_dir, inside, open_cache
from ci_policy.app.requests import ScanRequest
from ci_policy.errors import UsageError
from ci_policy.model.discovery import IndexEntry
from ci_policy.model.scan import Scanner
from ci_policy.model.snapshot import Snapshot, load_snapshot

JOBS_ENV = "CI_POLICY_JOBS"


class HasJobs(Protocol):
    @property
    def jobs(self) -> int | None: ...


def jobs(options: HasJobs) -> int:
    """`--jobs N`, else `$CI_POLICY_JOBS`, else the CPUs this process may use (affinity, cgroup quota)."""
    given = getattr(options, "jobs", None)
    if given is not None:
        return int(given)
    value = os.environ.get(JOBS_ENV, "")
    if not value:
        return parallel.available_cores()
    hint = "set it to a whole number of processes, at least 1, or unset it"
    try:
        number = int(value)
    except ValueError:
        raise UsageError(f"expected a whole number, got {value!r}", source=f"${JOBS_ENV}", hint=hint) from None
    if number < 1:
        raise UsageError(f"must be at least 1, got {number}", source=f"${JOBS_ENV}", hint=hint)
    return number


def scan_cache(request: ScanRequest) -> DirScanCache | None:
    """The scan cache `--cache DIR` names, else the default one (None without `default_cache`);
    a directory that cannot be used is a warning, and None."""
    given = request.cache or None
    if request.no_cache or (given is None and not request.default_cache):
        return None
    directory = Path(given) if given is not None else default_dir()
    if inside(directory, request.repo):
        if given is not None:
            raise UsageError(f"{given} is inside the checkout {request.repo}", source="--cache",
                             hint="name a directory outside the checkout, or pass --no-cache")
        why: str | None = f"the default cache directory {directory} is inside the checkout"
        cache = None
    else:
        cache, why = open_cache(directory, own=1 if given is not None else 2, warn=request.warn)
    if cache is None:
        request.warn(f"{'--cache: ' if given is not None else ''}{why}; reading every test file without the "
                     "scan cache")
    return cache


@dataclass(frozen=True)
class Scan:
    repo: Path
    listing: Callable[[], Mapping[str, IndexEntry] | None]
    scanner: Scanner | None
    cache: DirScanCache | None = None

    def index(self) -> Mapping[str, IndexEntry] | None:
        """git's listing of the checkout (None outside a git work tree), waited for on first call."""
        return self.listing()

    def load(self, config: str | None) -> Snapshot:
        return load_snapshot(self.repo, config, cache=self.cache, listing=self.listing, scanner=self.scanner)


def start_scan(request: ScanRequest) -> Scan:
    scanner = parallel.process_scanner(jobs(request))
    cache = scan_cache(request)
    # git lists the checkout while the configuration, the labels and the stored scans are read.
    return Scan(repo=request.repo, listing=start_checkout_index(request.repo), scanner=scanner, cache=cache)
