"""The timing records of a shard (an adapter): one JSON line per attempt, which the tests cannot forge.

- In: the timings path (`--timings-out`, else `default_timings_path`: `$RUNNER_TEMP`, else the
  user's cache directory, never the checkout), the stage and shard, and each attempt's record.
- Out: the line (`read.timings.TimingRecord`, written by `line_of`) appended, flushed and
  fsynced before the next attempt starts (`TimingsWriter`), so a runner killed mid-shard keeps
  every finished record; `restored` counts the times the file
  was found changed by something else and rewritten to the runner's own bytes.
- Refused: a record that cannot be written (ENOSPC, EIO, EROFS) is a warning (`write_warning`),
  never an exception: losing a timing record must not lose the remaining tests' results. A
  symbolic link or FIFO at the path is never followed or read.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ci_policy.plan.results import Attempt
from ci_policy.read.timings import TimingRecord, line_of
from ci_policy.render.escape import one_line

if TYPE_CHECKING:
    from ci_policy.model.registration import Registration


def default_timings_path(repo: Path) -> Path:
    """`$RUNNER_TEMP/ci-policy-timings.jsonl`, else the user's cache directory: never the
    checkout, where a test (or the PR itself) writes."""
    runner_temp = os.environ.get("RUNNER_TEMP")
    if runner_temp:
        return Path(runner_temp) / "ci-policy-timings.jsonl"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "ci-policy" / "timings.jsonl"


def _read_regular(path: Path) -> bytes | None:
    """The bytes of the regular file `path` (b"" when missing); None for anything else (a
    symbolic link, a FIFO), which is never followed or read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return b""
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        return fh.read()


class TimingsWriter:
    """Appends one JSON line per attempt, fsynced before the next attempt starts.

    The tests run as the same user and could write the file (finding: a test appended forged
    records to steer `tune`). So the writer keeps the bytes the file must hold (what was there
    when it opened, plus its own records) and, before each record and on close, when no test
    process is left, compares the file with them; anything else (a line added or edited, the
    file replaced or linked elsewhere) is undone by rewriting the file, and counted in
    `restored`. A path that is a device or a FIFO when the shard starts (e.g. `/dev/full`) is
    only appended to, never replaced.

    A record that cannot be written (ENOSPC, EIO, EROFS, ...) is returned as a warning instead
    of stopping the shard: losing a timing record must not lose the remaining tests' results.
    """

    def __init__(self, path: Path, stage: str, shard: int) -> None:
        self.path = path
        self.stage = stage
        self.shard = shard
        self.restored = 0
        self._fh: IO[bytes] | None = None
        self._fd: int | None = None
        self._expected = b""
        self._guarded = True
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            before = _read_regular(path)
            if before is None and not path.is_symlink():
                self._guarded = False  # a device or FIFO the caller named: append only
                return
            self._expected = b"" if before is None else before
            if before is None:
                self._restore()
            self._fh = open(path, "ab")
        except OSError:
            self._guarded = False  # each write reports the error as a warning

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return self._fd

    def _restore(self) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".ci-policy-timings-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(self._expected)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _check(self) -> bool:
        """Whether the file held exactly the expected bytes; restored when not."""
        assert self._fh is not None
        current = _read_regular(self.path)
        try:
            same_file = os.path.samestat(os.lstat(self.path), os.fstat(self._fh.fileno()))
        except OSError:
            same_file = False
        if current == self._expected and same_file:
            return True
        self._fh.close()
        self._restore()
        self._fh = open(self.path, "ab")
        self.restored += 1
        return False

    def write(self, reg: Registration, attempt: Attempt) -> str | None:
        """Appends the attempt's record; the warning when it could not be written, else None."""
        data = line_of(TimingRecord(
            schema=1, file=reg.file, stage=self.stage, shard=self.shard, attempt=attempt.attempt,
            status=attempt.status, elapsed=round(attempt.elapsed, 3), est_time=reg.est_time,
            failure_kind=attempt.verdict.kind if attempt.verdict else None,
            retriable=attempt.verdict.retriable if attempt.verdict else None, started_at=attempt.started_at,
            commit=os.environ.get("GITHUB_SHA"), run_id=os.environ.get("GITHUB_RUN_ID"),
            run_attempt=os.environ.get("GITHUB_RUN_ATTEMPT")))
        try:
            if self._guarded and self._fh is not None:
                self._check()
                self._fh.write(data)
                self._fh.flush()
                os.fsync(self._fh.fileno())
                self._expected += data
            else:
                fd = self._open()
                # One write of the whole line to an O_APPEND file: never interleaved, never buffered.
                if os.write(fd, data) != len(data):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
                os.fsync(fd)
        except OSError as exc:
            return write_warning("timing record", self.path, reg.file, attempt.attempt, exc)
        return None

    def close(self) -> bool:
        """Closes the file; False when it had been changed by something else since the last record."""
        unchanged = True
        if self._fh is not None:
            try:
                unchanged = self._check()
            except OSError:
                unchanged = False
            finally:
                self._fh.close()
                self._fh = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        return unchanged


def write_warning(what: str, path: Path, file: str, attempt: int, exc: OSError) -> str:
    """`cannot write the timing record of F attempt N to PATH: No space left on device (ENOSPC)`."""
    name = errno.errorcode.get(exc.errno or 0, "")
    reason = (exc.strerror or str(exc)) + (f" ({name})" if name else "")
    return f"cannot write the {what} of {one_line(file)} attempt {attempt} to {one_line(str(path))}: {reason}"
