"""The reference the glob matcher (`ci_policy.read.globs`) is checked against: pathspec's
`GitIgnoreSpec` with its backtracking regexes, each character class kept off `/` (the one
deliberate difference, as in git's `wildmatch`); what ci-policy matched with before."""

from __future__ import annotations

import re

from pathspec import GitIgnoreSpec
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern


def class_without_slash(regex: str) -> str:
    """pathspec's regex with every character class kept off `/` and its members escaped."""
    out: list[str] = []
    i = 0
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            out.append(regex[i:i + 2])
            i += 2
            continue
        if c != "[":
            out.append(c)
            i += 1
            continue
        j = i + 1
        negate = regex[j:j + 1] == "^"
        if negate:
            j += 1
        start = j
        if regex[j:j + 1] == "]":
            j += 1
        while regex[j] != "]":
            j += 1
        inner = "".join(ch if ch == "-" else re.escape(ch) for ch in regex[start:j])
        out.append(f"(?:(?!/)[{'^' if negate else ''}{inner}])")
        i = j + 1
    return "".join(out)


class ReferencePattern(GitIgnoreSpecPattern):
    __slots__ = ()

    @classmethod
    def pattern_to_regex(cls, pattern):  # type: ignore[no-untyped-def, override]
        regex, include = super().pattern_to_regex(pattern)
        return (None if regex is None else class_without_slash(regex)), include


def reference(globs, path: str) -> str | None:  # type: ignore[no-untyped-def]
    """The glob of `globs` that decides `path` (None: no match, or a `!glob` decided)."""
    globs = tuple(globs)
    result = GitIgnoreSpec([ReferencePattern(g) for g in globs], backend="simple").check_file(path, separators=())
    return globs[result.index] if result.include and result.index is not None else None
