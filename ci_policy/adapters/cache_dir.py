"""Where the scan cache lives, and what a stage job does to it after its tests ran.

- In: the environment (`$XDG_CACHE_HOME`), a cache directory, its listing before the tests.
- Out: `default_dir()`, the default scan cache directory; `listing(directory)`, what is in it
  now; `discard_changed(directory, before)` removes every file or symlink directly in it that
  is not in the `before` listing as it was (name, inode, size, mtime, ctime), and returns how
  many it removed.
- Refused: nothing raised: a file it cannot list or remove is skipped; the directory itself was
  checked when the cache was opened (`scan_cache.open_cache`).
- Why: the tests a stage job runs are a pull request's code, running as the runner's user
  unless `runner.user` names another, so they can write the cache directory: plant a pack
  whose checksum matches and whose entries decode (a valid scan, but not of the file it is
  stored for). `run` lists the directory before the first test and removes what changed
  after the last, so a later command misses and reads the files: a test that writes the
  cache causes misses only. A file's ctime is set by the kernel whenever the file is
  written, renamed, linked or its mode changed, and no unprivileged process can set it
  back (mtime it can), so a changed file cannot pass for one listed before. `run` itself
  reads and writes the cache only before its first test (planning from the plan inputs;
  from a plan file, `--plan`, it reads none at all).
- Not covered: a process a test leaves running (detached from the runner's process group)
  that writes after the sweep and before the runner ends the job; a test that is root. Run
  the tests as another user (`runner.user`): the cache directory is 0700 and refused when
  another user can write it (`scan_cache.open_cache`).
- Kept small: a stage job imports it after its tests, and nothing of the scan.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

Listing = dict[str, tuple[int, int, int, int]]


def default_dir(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """`$XDG_CACHE_HOME/ci-policy/scan`, or `~/.cache/ci-policy/scan` (XDG: an absolute path only)."""
    base = environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "ci-policy" / "scan"


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def listing(directory: Path) -> Listing:
    """Each file or symlink directly in `directory` by name, with its identity (none when unreadable)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return {}
    found: Listing = {}
    for name in names:
        try:
            st = os.lstat(os.path.join(directory, name))
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            found[name] = _identity(st)
    return found


def discard_changed(directory: Path, before: Listing) -> int:
    """Remove what in `directory` is not in `before` as it was; see the module doc.

    Directories below it are left (the cache reads none); a symlink is removed, not followed.
    """
    removed = 0
    for name, identity in listing(directory).items():
        if before.get(name) == identity:
            continue
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            continue
        removed += 1
    return removed
