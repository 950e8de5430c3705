"""The scan cache on disk (an adapter): `model.snapshot.ScanCache` over a directory.

- In: a cache directory (`--cache DIR`, else `$XDG_CACHE_HOME/ci-policy/scan`, else
  `~/.cache/ci-policy/scan`) and keys made by `model.snapshot.scan_key` (64 hex digits: a
  SHA-256 over the file's path, its content id and the scan context).
- Out: one JSON file per key, `<first two hex>/<key>.json`, holding
  `{"cache": CACHE_VERSION, "key": KEY, "value": ...}`; `get` returns the value stored
  under that key, or None.
- Entries are written atomically (a temporary file in the same directory, named by the
  process and the key, created with `O_EXCL`, then `os.replace`), so a reader never sees
  half an entry; concurrent writers of one key write the same bytes. An entry larger than
  `MAX_ENTRY_BYTES` is neither written nor read.
- Ignored (a miss, and the entry is rewritten): a missing, unreadable, corrupt, foreign or
  oversized entry, or one whose recorded key differs. Any OSError while writing is
  swallowed: the cache only ever saves work.
- Refused (`open_cache`): a directory inside the checkout (a usage error naming the
  option: a pull request could plant entries), a cache directory or parent that is a
  symlink, one owned by another user or writable by group or others, or one that cannot be
  created or written (a warning: the command runs uncached). Directories it creates are 0700.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

CACHE_VERSION = 1
MAX_ENTRY_BYTES = 4 * 1024 * 1024
_KEY_RE = re.compile(r"[0-9a-f]{64}")


def default_dir(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """`$XDG_CACHE_HOME/ci-policy/scan`, or `~/.cache/ci-policy/scan` (XDG: an absolute path only)."""
    base = environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "ci-policy" / "scan"


def inside(path: Path, repo: Path) -> bool:
    """Whether `path` is `repo` or below it (both resolved as far as they exist)."""
    try:
        target = Path(os.path.realpath(path))
        top = Path(os.path.realpath(repo))
    except (OSError, ValueError):
        return True
    return target == top or top in target.parents


class DirScanCache:
    """`ScanCache` over a directory (see the module doc)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._made: set[Path] = set()  # entry directories this process made or found

    def _path(self, key: str) -> Path | None:
        if not _KEY_RE.fullmatch(key):
            return None
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        if path is None:
            return None
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags)
        except OSError:
            return None
        try:
            with os.fdopen(fd, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    return None
                data = fh.read(MAX_ENTRY_BYTES + 1)
        except OSError:
            return None
        if len(data) > MAX_ENTRY_BYTES:
            return None
        try:
            entry = json.loads(data)
        except (ValueError, RecursionError):
            return None
        if (not isinstance(entry, dict) or entry.get("cache") != CACHE_VERSION or entry.get("key") != key
                or not isinstance(entry.get("value"), dict)):
            return None
        value: dict[str, Any] = entry["value"]
        return value

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        if path is None:
            return
        try:
            data = json.dumps({"cache": CACHE_VERSION, "key": key, "value": value},
                              separators=(",", ":")).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError, RecursionError):
            return
        if len(data) > MAX_ENTRY_BYTES:
            return
        try:
            if path.parent not in self._made:
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                self._made.add(path.parent)
            # Named by process and key: no other writer uses this name at the same time, and
            # O_EXCL refuses whatever (a planted symlink) is in the way.
            tmp = path.parent / f".tmp-{os.getpid()}-{key}.json"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
            try:
                fd = os.open(tmp, flags, 0o600)
            except FileExistsError:  # left by a crashed process that had this pid: not in use
                os.unlink(tmp)
                fd = os.open(tmp, flags, 0o600)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            return


def open_cache(directory: Path, *, own: int = 1) -> tuple[DirScanCache | None, str | None]:
    """The cache at `directory`, created if needed; or (None, why) when it cannot be used.

    `own`: how many trailing components of `directory` are the cache's own (1 for
    `--cache DIR`, 2 for the default `.../ci-policy/scan`); a symlink at any of them is
    refused (it could point anywhere, e.g. into a checkout), as is a directory that is not
    one or not writable. A symlink higher up (`/home` on some systems) is the machine's.
    """
    directory = Path(os.path.abspath(directory))
    for part in (directory, *directory.parents)[:own]:
        try:
            st = os.lstat(part)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return None, f"{part} cannot be read: {exc.strerror}"
        if stat.S_ISLNK(st.st_mode):
            return None, f"{part} is a symlink"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        return None, f"{directory} cannot be created: {exc.strerror}"
    st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode):
        return None, f"{directory} is not a directory"
    # Another user (a test run as an unprivileged user, say) could plant entries otherwise.
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return None, f"{directory} belongs to another user"
    if st.st_mode & 0o022:
        return None, f"{directory} is writable by others"
    if not os.access(directory, os.W_OK | os.X_OK):
        return None, f"{directory} is not writable"
    return DirScanCache(directory), None
