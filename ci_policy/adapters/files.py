"""Files written whole (an adapter): a reader sees the old file or the new one, never half.

- In: a path, its bytes, and the permission bits it gets.
- Out: `write_atomically` writes the bytes to a temporary file beside the path (made by
  `tempfile.mkstemp`: never an existing file, never through a symlink), flushes and syncs
  it, sets its mode, then renames it over the path.
- Refused: nothing is caught; on any error the temporary file is removed and the error
  raised, for the caller to name.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, data: bytes, mode: int) -> None:
    # The temporary name stays short: a file name near the system's limit must still be writable.
    # Imported here: `plan` without --json-out writes nothing, and tempfile imports random
    # (tests/cli/test_startup.py::test_plan_imports_only_what_its_format_uses).
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:64]}.", suffix=".tmp")
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
