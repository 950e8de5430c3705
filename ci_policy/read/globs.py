"""gitignore-style path globs, compiled to regular expressions.

- In: a glob from configuration (e.g. `docs/**`, `**/*.md`, `*.md`, `/setup.py`).
- Out: a compiled regex matching repo-relative POSIX paths.
- Semantics (gitignore's): `*` and `?` stay within one path segment; `**` crosses
  directories (`**/x` also matches `x` at the root, `x/**` everything below `x`);
  `[...]` is a character class; a pattern without a `/` (other than a trailing one)
  matches at any depth; a leading `/` anchors to the root; a trailing `/` matches a
  directory and everything below it.
- Written here rather than taken from `pathspec` because the core depends only on the
  stdlib and PyYAML; covered by table and property tests.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ci_policy.errors import CiPolicyError


class GlobError(CiPolicyError, ValueError):
    """A glob in configuration that ci-policy cannot use; the configuration reports it located."""


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    if not pattern or pattern.strip() != pattern:
        raise GlobError(f"invalid glob {pattern!r}: empty or surrounded by whitespace")
    if "\\" in pattern:
        raise GlobError(f"invalid glob {pattern!r}: backslashes are not supported")
    directory = pattern.endswith("/")
    body = pattern.rstrip("/")
    anchored = body.startswith("/") or "/" in body
    body = body.lstrip("/")
    if not body:
        raise GlobError(f"invalid glob {pattern!r}: matches nothing")
    segments = body.split("/")
    out = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":
            if last:
                out.append(".*")           # x/** : everything below x
            else:
                out.append("(?:[^/]+/)*")  # **/ : zero or more directories
            continue
        if "**" in seg:
            raise GlobError(f"invalid glob {pattern!r}: '**' must be a whole path segment")
        out.append(_segment(seg, pattern) + ("" if last else "/"))
    regex = "".join(out)
    if not anchored:
        regex = "(?:[^/]+/)*" + regex
    # A pattern naming a directory also matches everything inside it.
    regex += "(?:/.*)?" if not directory else "/.*"
    try:
        return re.compile(regex + r"\Z", re.DOTALL)
    except re.error as exc:  # e.g. a reversed range [z-a]
        raise GlobError(f"invalid glob {pattern!r}: {exc.msg}") from None


def _segment(seg: str, pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            start = i + 1
            negate = seg[start:start + 1] in ("!", "^")
            if negate:
                start += 1
            # A ']' right after '[' or '[!' is a member, as in fnmatch: "[]a]".
            j = seg.find("]", start + 1)
            if j == -1:
                raise GlobError(f"invalid glob {pattern!r}: unclosed '['")
            inner = "".join(ch if ch == "-" else re.escape(ch) for ch in seg[start:j])
            # A class never matches '/', even through a range such as [+-0].
            out.append(f"(?!/)[{'^' if negate else ''}{inner}]")
            i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def matches(pattern: str, path: str) -> bool:
    return compile_glob(pattern).match(path) is not None
