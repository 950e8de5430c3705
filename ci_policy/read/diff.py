"""The PR's diff: `git diff --name-status -z -M BASE HEAD`, parsed from bytes.

- In: the raw bytes of that command's output: given directly (`read_diff`; the git
  adapter `adapters.git.git_diff` runs the command), or in a file the maintainer named
  (`read_diff_file`, for `--diff FILE`).
- Out: a `Diff`: `available` with the sorted changed paths (both paths of a rename or
  copy), or unavailable with the reason.
- Refused: a unified diff (`git diff` without `--name-status -z`, GitHub's `.diff`), by name:
  its file headers cannot be read exactly; the reason says so and the hint gives the command.
- Nothing is guessed: an empty, truncated, malformed or non-UTF-8 diff, a path with
  control characters (`CONTROL_RE`: CR, LF, bidi controls ...), or an
  unreadable file, is "unavailable" and makes every runnable stage run; never "no changes".
  `parse_name_status` raises only `InputError`.
- A diff known to be empty is available with no change: bytes that are exactly
  `NO_CHANGES` (what `ci-policy pull-request --diff-out` writes for a pull request GitHub
  counts no changed file in; git never prints it), or, in `adapters.git.git_diff`, two
  revisions of the repository git finds no difference between. An empty file says nothing
  of where it came from, so it stays unavailable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ci_policy.errors import InputError

STATUS_RE = re.compile(r"([ACDMRTUXB])([0-9]{0,3})")
TWO_PATHS = frozenset("RC")
# Refused in a path: C0 controls but the tab (CR and LF end a log line), DEL, C1 controls,
# the Unicode line and paragraph separators, and the bidi embeddings, overrides and isolates.
CONTROL_RE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


# The whole content of a diff file that is known to be empty. It cannot be name-status output
# (no status letter, no NUL byte), and says what it means to whoever opens the file.
NO_CHANGES = b"ci-policy: no changed file\n"

NAME_STATUS_COMMAND = "produce it with: git diff --name-status -z -M BASE HEAD"

# How a unified diff begins: git's own header (`git diff`, GitHub's .diff and .patch after
# the mail header), a combined diff's, or a plain `diff -u`'s. No name-status record does.
UNIFIED_STARTS = (b"diff --git ", b"diff --cc ", b"diff --combined ", b"--- ", b"From ")


@dataclass(frozen=True)
class Change:
    status: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Diff:
    available: bool
    changes: tuple[Change, ...] = ()
    reason: str = ""

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(sorted({p for c in self.changes for p in c.paths}))

    @classmethod
    def unavailable(cls, reason: str) -> Diff:
        return cls(available=False, reason=reason)

    @classmethod
    def no_changes(cls) -> Diff:
        """A diff known to be empty: no file changed."""
        return cls(available=True)


def parse_name_status(data: bytes, source: str = "diff") -> tuple[Change, ...]:
    def fail(message: str) -> InputError:
        return InputError(f"{source}: {message}", path=source,
                           hint=NAME_STATUS_COMMAND)

    if not isinstance(data, (bytes, bytearray)):
        raise fail("expected bytes")
    if not data:
        raise fail("the diff is empty")
    if bytes(data).startswith(UNIFIED_STARTS):
        # A patch's headers are not exact: `diff --git a/x b/y` splits ambiguously when a path
        # holds " b/", and a mode-only or binary change has no ---/+++ lines. Refused by name.
        raise fail("this is a unified diff (what `git diff` or GitHub's .diff gives), not the "
                   f"name-status list ci-policy reads; {NAME_STATUS_COMMAND}")
    if not data.endswith(b"\0"):
        raise fail("the diff is truncated (it does not end with a NUL byte)")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"the diff is not valid UTF-8 (byte {exc.start})") from None
    fields = text[:-1].split("\0")
    changes: list[Change] = []
    i = 0
    while i < len(fields):
        status = fields[i]
        m = STATUS_RE.fullmatch(status)
        if not m:
            raise fail(f"unknown status {status!r} in record {len(changes) + 1}")
        letter = m.group(1)
        count = 2 if letter in TWO_PATHS else 1
        if letter in TWO_PATHS and not m.group(2):
            raise fail(f"status {status!r} must carry a similarity score (e.g. {letter}100)")
        paths = fields[i + 1:i + 1 + count]
        if len(paths) != count:
            raise fail(f"the diff is truncated: record {len(changes) + 1} ({status}) "
                       f"needs {count} path(s)")
        for path in paths:
            if not path or path.startswith("/") or ".." in path.split("/"):
                raise fail(f"invalid path {path!r} in record {len(changes) + 1}")
            if CONTROL_RE.search(path):
                # A CR or LF would end the line the path is printed on (a workflow command
                # of the PR's choosing could follow); a bidi control would reorder it.
                raise fail(f"path {path!r} in record {len(changes) + 1} has control characters; "
                           "ci-policy refuses such names")
        changes.append(Change(status=letter, paths=tuple(paths)))
        i += 1 + count
    return tuple(changes)


def read_diff(data: bytes, source: str) -> Diff:
    if data == NO_CHANGES:
        return Diff.no_changes()
    try:
        return Diff(available=True, changes=parse_name_status(data, source))
    except InputError as exc:
        return Diff.unavailable(exc.message)


def read_diff_file(path: Path) -> Diff:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return Diff.unavailable(f"{path}: cannot be read: {exc.strerror}")
    return read_diff(data, str(path))
