"""Files written whole (an adapter): a reader sees the old file or the new one, never half.

- In: a path, its bytes, and the permission bits it gets.
- Out: `write_atomically` writes the bytes to a temporary file beside the path (made as
  `tempfile.mkstemp` makes one: a random name, created with `O_CREAT | O_EXCL | O_NOFOLLOW`
  and mode 0600, so never an existing file and never through a symlink; another name when
  one is taken), flushes and syncs it, sets its mode, then renames it over the path.
- Refused: nothing is caught; on any error the temporary file is removed and the error
  raised, for the caller to name (`FileExistsError` when every name tried was taken).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

# How many random names `_temporary` tries before giving up (`tempfile.TMP_MAX`).
TRIES = 10000


def _temporary(path: Path) -> tuple[int, Path]:
    """A new file beside `path`, open for writing, as `tempfile.mkstemp` makes one. Not
    tempfile itself: it imports shutil, random and the compression modules, 3 ms of the plan
    job's start (tests/cli/test_startup.py::test_a_plan_imports_no_module_of_running_it)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(TRIES):
        # The name stays short: a file name near the system's limit must still be writable.
        tmp = path.parent / f".{path.name[:64]}.{os.urandom(6).hex()}.tmp"
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no temporary file name is free", str(path.parent))


def write_atomically(path: Path, data: bytes, mode: int) -> None:
    fd, tmp = _temporary(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
