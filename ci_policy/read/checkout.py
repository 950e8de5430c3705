"""Reading files of a checkout that may be an untrusted fork PR.

- In: the checkout root (an explicit path given by the caller, never the current
  directory) and a repo-relative POSIX path.
- Out: the file's text, or an `InputError` naming the path, with a CP4xx code.
- Refused: absolute paths and `..`; a symlink at the file or at any directory between
  the root and it (a symlink could point at `/etc/passwd` or at a file of the runner);
  anything that is not a regular file; files over the size cap; bytes that are not UTF-8.
- Files are only ever read as bytes. Nothing here imports, executes or spawns.
- `where_missing`: for a path that does not exist, its deepest existing directory, the first
  missing name and the names beside it (what a hint suggests instead).
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path, PurePosixPath
from typing import Any

from ci_policy.errors import InputError

# Large enough for any hand-written test or config file; a PR cannot make the
# planner read gigabytes.
MAX_FILE_BYTES = 2 * 1024 * 1024


def check_relative(rel: str, *, field: str, path: str | None = None, line: int | None = None,
                   col: int | None = None) -> str:
    """Validate a repo-relative POSIX path written in configuration and normalise it.

    No code of its own: the configuration reports the problem with its own location and code.
    """
    where: dict[str, Any] = dict(path=path, line=line, col=col)
    if not rel or rel.strip() != rel:
        raise InputError(f"{field}: expected a repo-relative path, got {rel!r}", **where,
                          hint="write a path such as tests/e2e")
    if "\\" in rel or "\0" in rel:
        raise InputError(f"{field}: {rel!r} must use forward slashes and no NUL bytes", **where,
                          hint="write a POSIX path such as tests/e2e")
    pure = PurePosixPath(rel)
    if pure.is_absolute():
        raise InputError(f"{field}: {rel!r} is absolute; paths are relative to the repository root",
                          **where, hint="drop the leading '/'")
    if ".." in pure.parts:
        raise InputError(f"{field}: {rel!r} leaves the repository ('..' is not allowed)", **where,
                          hint="name a path inside the repository")
    norm = str(pure)
    if norm == ".":
        return "."
    return norm


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def is_plain_relative(rel: str) -> bool:
    """Whether `rel` is a repo-relative POSIX path `check_relative` accepts unchanged, with no
    control character: what a path read from an untrusted document (a plan file) must be.

    Without building a path object or splitting it: a plan file names every test file of
    the checkout. No part is empty, `.` or `..` exactly when the path framed by slashes
    holds no `//`, `/./` or `/../` (a leading or trailing slash makes an empty part).
    """
    if not rel or rel.strip() != rel or "\\" in rel:
        return False
    # An ASCII string is printable exactly when it has no control character.
    if not (rel.isprintable() if rel.isascii() else _CONTROL.search(rel) is None):
        return False
    framed = f"/{rel}/"
    return "//" not in framed and "/./" not in framed and "/../" not in framed


def _lstat(path: str | Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # NotADirectory: a file on the way
        return None


class Directories:
    """The entries of a checkout's directories, each directory listed once (`os.scandir`), so
    checking thousands of files in a few directories costs a listing per directory, not an
    `lstat` per path component per file. A directory entry tells whether the name is a
    symlink without following it (`DirEntry.is_symlink`).

    `entry(parent, name)`: the entry of `name` in the directory `parent` ("" for the root),
    or None when the listing cannot say (the directory could not be listed, or holds no such
    name as listed, e.g. another spelling on a case-insensitive file system): the caller then
    asks `lstat`, as without a listing.
    """

    def __init__(self, root: Path) -> None:
        self.root = os.fspath(root)
        self._listed: dict[str, dict[str, os.DirEntry[str]] | None] = {}

    def entry(self, parent: str, name: str) -> os.DirEntry[str] | None:
        listed = self._listed.get(parent, self)
        if listed is self:
            try:
                with os.scandir(os.path.join(self.root, parent) if parent else self.root) as entries:
                    listed = {e.name: e for e in entries}
            except OSError:
                listed = None
            self._listed[parent] = listed
        return listed.get(name) if isinstance(listed, dict) else None


def check_no_symlinks(root: Path, rel: str, *, what: str, dirs: Directories | None = None) -> os.stat_result | None:
    """lstat every component of `rel` below `root`; refuse any symlink.

    Returns the final component's stat, or None when it does not exist. `dirs`: listings of
    this root's directories; a directory on the way found in them is told from a symlink by
    its entry, without an `lstat` of its own (the final component is always `lstat`-ed).
    """
    if is_plain_relative(rel):  # what check_relative accepts unchanged, told without a path object
        parts: tuple[str, ...] | list[str] = rel.split("/")
    else:
        check_relative(rel, field=what, path=rel)  # an absolute path or `..` would leave `root`
        parts = PurePosixPath(rel).parts if rel != "." else ()
        dirs = None
    current = os.fspath(root)  # joined as strings: a Path per component costs more than its lstat
    st = None
    parent = ""
    last = len(parts) - 1
    for i, part in enumerate(parts):
        current = os.path.join(current, part)
        entry = dirs.entry(parent, part) if dirs is not None and i < last else None
        try:
            link = entry.is_symlink() if entry is not None else None
        except OSError:
            link = None
        if link is None:
            st = _lstat(current)
            if st is None:
                return None
            link = stat.S_ISLNK(st.st_mode)
        if link:
            shown = "/".join(parts[: i + 1])
            subject = f"{what} {rel}" if shown == rel else f"{what} {rel}: directory {shown}"
            raise InputError(
                f"{subject} is a symlink; ci-policy refuses symlinks in a checkout",
                path=rel, code="CP401",
                hint="replace the symlink with the real file or directory",
            )
        if dirs is not None:
            parent = f"{parent}/{part}" if parent else part
    return st if parts else os.lstat(root)


def read_text(root: Path, rel: str, *, what: str = "file", max_bytes: int = MAX_FILE_BYTES,
              dirs: Directories | None = None) -> str:
    """Read a regular, symlink-free, UTF-8 file of the checkout (`dirs`: see `check_no_symlinks`)."""
    st = check_no_symlinks(root, rel, what=what, dirs=dirs)
    if st is None:
        raise InputError(f"{what} {rel} does not exist", path=rel, code="CP402",
                          hint=f"create it or point the configuration at the right {what}")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what} {rel} is not a regular file", path=rel, code="CP403")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(os.path.join(os.fspath(root), rel), flags)
    except OSError as exc:
        raise InputError(f"{what} {rel} cannot be read: {exc.strerror}", path=rel,
                         code="CP404") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise InputError(f"{what} {rel} is not a regular file", path=rel, code="CP403")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(f"{what} {rel} is larger than {max_bytes} bytes", path=rel, code="CP405",
                          hint="ci-policy reads checkout files as data and caps their size")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        # Column in characters, like every other column; the bytes before the bad one decode.
        col = len(data[data.rfind(b"\n", 0, exc.start) + 1: exc.start].decode("utf-8")) + 1
        raise InputError(f"{what} {rel} is not valid UTF-8", path=rel, line=line, col=col,
                         code="CP406", hint="save the file as UTF-8") from None


def where_missing(root: Path, rel: str) -> tuple[str, str, tuple[str, ...]]:
    """For a plain relative `rel` that does not exist: the deepest directory of it that exists
    ("" for the root), the first name below it that does not, and the sorted names of that
    directory (none when it is a symlink or not a directory: nothing is followed)."""
    parts = rel.split("/")
    current = os.fspath(root)
    for i, part in enumerate(parts):
        st = _lstat(os.path.join(current, part))
        if st is None or not stat.S_ISDIR(st.st_mode):
            here = os.lstat(current)
            names = tuple(sorted(os.listdir(current))) if stat.S_ISDIR(here.st_mode) else ()
            return "/".join(parts[:i]), part, names
        current = os.path.join(current, part)
    return rel, "", ()


# O_NONBLOCK: opening a FIFO planted in a checkout returns at once (and is then refused as not a
# regular file) instead of waiting for a writer; it changes nothing for a regular file.
_READ_BYTES_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NONBLOCK", 0))


class FileReader:
    """Reads files of one checkout as bytes, as `read_text` would accept them: the scan cache's
    reader, which names a file by a hash of the bytes it read itself.

    The directories between the root and a file are checked for symlinks once per reader,
    through its `Directories` (a checkout holds thousands of test files in a few
    directories; `check_no_symlinks` takes the same listings); the file itself is
    opened with `O_NOFOLLOW` and checked with `fstat`. `read` returns None for anything
    `read_text` would refuse (a symlink, not a regular file, unreadable, over the size cap,
    not a plain relative path): the caller then asks `read_text`, which says why.

    `identity(rel)` is the file's `(dev, ino, size, mtime_ns, ctime_ns)` as `lstat` gives it,
    as text; `read` gives the same for the bytes it read when they are settled: unchanged
    while read, and last changed more than `SETTLED_NS` before. A file changed later gets
    another ctime (the kernel sets it on every write; no unprivileged process can set it
    back), so a settled identity names the bytes read; an unsettled one may not (a change
    within one tick of a coarse file-system clock keeps the ctime).
    """

    def __init__(self, root: Path, max_bytes: int = MAX_FILE_BYTES) -> None:
        self.root = os.fspath(root)
        # The root with its separator: a plain relative path (`_path`) is joined to it by
        # concatenation, as `os.path.join` would join it, without a call per file.
        self._top = os.path.join(self.root, "")
        self.max_bytes = max_bytes
        self.dirs = Directories(root)
        self._dirs: dict[str, bool] = {}

    def _real_dir(self, rel: str) -> bool:
        known = self._dirs.get(rel)
        if known is None:
            parent, _, name = rel.rpartition("/")
            known = (not parent or self._real_dir(parent)) and self._listed_dir(parent, name, rel)
            self._dirs[rel] = known
        return known

    def _listed_dir(self, parent: str, name: str, rel: str) -> bool:
        """Whether `name` in `parent` is a directory and no symlink: by its listing, else `lstat`."""
        entry = self.dirs.entry(parent, name)
        if entry is not None:
            try:
                return not entry.is_symlink() and entry.is_dir(follow_symlinks=False)
            except OSError:
                pass  # the listing cannot say: as without one
        st = _lstat(os.path.join(self.root, rel))
        return st is not None and stat.S_ISDIR(st.st_mode)

    def _path(self, rel: str) -> str | None:
        if not is_plain_relative(rel):
            return None
        parent = rel.rpartition("/")[0]
        # A directory judged before (the usual case: thousands of files in a few directories)
        # is a dict lookup, without a call.
        if parent and not (self._dirs.get(parent) or self._real_dir(parent)):
            return None
        return self._top + rel  # plain and relative: what `os.path.join(self.root, rel)` gives

    def identity(self, rel: str) -> str | None:
        """The identity of a regular file with no symlink on its way (see the class doc), or None."""
        path = self._path(rel)
        if path is None:
            return None
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return _identity(st) if stat.S_ISREG(st.st_mode) else None

    def read(self, rel: str) -> tuple[bytes, str | None] | None:
        """The bytes of a regular file with no symlink on its way and their identity when settled
        (see the class doc), or None."""
        path = self._path(rel)
        if path is None:
            return None
        now = time.time_ns()
        try:
            fd = os.open(path, _READ_BYTES_FLAGS)
        except OSError:
            return None
        try:
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_size > self.max_bytes:
                    return None
                data = fh.read(self.max_bytes + 1)
                after = os.fstat(fh.fileno())
        except OSError:
            return None
        if len(data) > self.max_bytes:
            return None
        settled = (max(st.st_mtime_ns, st.st_ctime_ns) < now - SETTLED_NS and st.st_ctime_ns == after.st_ctime_ns
                   and st.st_mtime_ns == after.st_mtime_ns and st.st_size == after.st_size)
        return data, _identity(st) if settled else None


# Longer than the coarsest file-system clock a checkout is likely on (1 s; FAT's 2 s).
SETTLED_NS = 3 * 10**9


def _identity(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
