r"""gitignore-style path globs, matched by the `pathspec` library (`GitIgnoreSpec`).

- In: a glob, or a list of globs, from configuration (e.g. `docs/**`, `**/*.md`, `*.md`,
  `/setup.py`, `!docs/api/**`), and repo-relative POSIX paths.
- Out: whether a path matches; for a list, the glob that decided (gitignore's rule: the
  last matching glob wins, and a `!glob` that matches last re-includes nothing, i.e. the
  path does not match).
- Semantics (gitignore's, as pathspec implements them): `*` and `?` stay within one path
  segment; `**` crosses directories (`**/x` also matches `x` at the root, `x/**`
  everything below `x`); `[...]` is a character class (`[!...]`/`[^...]` negated); a
  pattern without a `/` (other than a trailing one) matches at any depth; a leading `/`
  anchors to the root; a trailing `/` matches a directory and everything below it; a
  leading `!` negates. One deliberate difference from pathspec, as in git's own
  `wildmatch`: a character class never matches `/` (pathspec's `a[!x]b` matches `a/b`).
- Refused (`GlobError`, which the configuration reports located): an empty glob or one
  surrounded by whitespace, a backslash (except gitignore's `\!` and `\#` for a leading
  `!` or `#` that is part of the name), a glob that matches nothing (`/`, `!`), `**`
  inside a segment (`a**b`), an unclosed `[`, a bad range (`[z-a]`), and a leading `#`
  (a comment in gitignore: it would match nothing).
- `pathspec` is imported when a first glob is compiled: a configuration without globs
  (and a command that compiles none) never loads it.
- `any_name_match`: shell-style name patterns (`fnmatch.fnmatchcase`'s, not gitignore's),
  several at once as one compiled expression.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ci_policy.errors import CiPolicyError

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec  # here: as in `_pattern_class`


class GlobError(CiPolicyError, ValueError):
    """A glob in configuration that ci-policy cannot use; the configuration reports it located."""


def _class_without_slash(regex: str) -> str:
    """`regex` with every character class kept off `/` and its members escaped.

    pathspec copies a glob's `[...]` into the regex as it is: a negated class or a range
    such as `[+-0]` would then match `/`, which git never lets a class do, and `[a&&b]`
    would read as a set operation.
    """
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
        # A group, so that a quantifier after the class (`[^/]*` of a `*`) applies to both.
        out.append(f"(?:(?!/)[{'^' if negate else ''}{inner}])")
        i = j + 1
    return "".join(out)


@lru_cache(maxsize=1)
def _pattern_class() -> Any:
    """pathspec's gitignore pattern, with character classes that never match `/` (made on first use)."""
    # No pathspec without a glob: test_a_stage_job_given_its_plan_imports_no_glob_gate_or_other_command_module
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    class _Pattern(GitIgnoreSpecPattern):
        __slots__ = ()

        @classmethod
        def pattern_to_regex(cls, pattern: str) -> tuple[str | None, bool | None]:  # type: ignore[override]
            regex, include = super().pattern_to_regex(pattern)
            return (None if regex is None else _class_without_slash(regex)), include

    return _Pattern


def _check(pattern: str) -> None:
    """Refuse what gitignore would read as something else, or as nothing."""
    def bad(why: str) -> GlobError:
        return GlobError(f"invalid glob {pattern!r}: {why}")

    if not pattern or pattern.strip() != pattern:
        raise bad("empty or surrounded by whitespace")
    # gitignore's escapes of a leading '!' or '#' are the one use of a backslash.
    literal_start = pattern[:2] in ("\\!", "\\#")
    if "\\" in (pattern[2:] if literal_start else pattern):
        raise bad("backslashes are not supported")
    if pattern.startswith("#"):
        raise bad("a leading '#' makes a comment in gitignore, which matches nothing; write [#] for the character")
    body = pattern[1:] if pattern.startswith("!") or literal_start else pattern
    if not body.strip("/"):
        raise bad("matches nothing")
    for seg in body.split("/"):
        if "**" in seg and seg != "**":
            raise bad("'**' must be a whole path segment")
        i = 0
        while i < len(seg):
            if seg[i] == "[":
                start = i + 1
                if seg[start:start + 1] in ("!", "^"):
                    start += 1
                # A ']' right after '[' or '[!' is a member: "[]a]".
                j = seg.find("]", start + 1)
                if j == -1:
                    raise bad("unclosed '['")
                i = j
            i += 1


@lru_cache(maxsize=1024)
def _pattern(pattern: str) -> Any:
    _check(pattern)
    try:
        return _pattern_class()(pattern)
    except re.error as exc:  # e.g. a reversed range [z-a]
        raise GlobError(f"invalid glob {pattern!r}: {exc.msg}") from None


def compile_glob(pattern: str) -> re.Pattern[str]:
    """The regex pathspec matches one glob with (negation aside); raises `GlobError`."""
    regex = _pattern(pattern).regex
    assert isinstance(regex, re.Pattern)
    return regex


@lru_cache(maxsize=1024)
def compile_globs(patterns: tuple[str, ...]) -> GitIgnoreSpec:
    """The globs as one gitignore spec (the simple backend: the regexes use look-ahead)."""
    # No pathspec without a glob: test_a_stage_job_given_its_plan_imports_no_glob_gate_or_other_command_module
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec([_pattern(p) for p in patterns], backend="simple")


def deciding_glob(patterns: Iterable[str], path: str) -> str | None:
    """The glob of `patterns` that makes `path` match (the last one matching it), or None."""
    globs = tuple(patterns)
    if not globs:
        return None
    result = compile_globs(globs).check_file(path, separators=())
    if not result.include or result.index is None:
        return None
    return globs[result.index]


def matches_any(patterns: Iterable[str], path: str) -> bool:
    """Whether `path` matches the list of globs, gitignore's way (the last match wins)."""
    return deciding_glob(patterns, path) is not None


def matches(pattern: str, path: str) -> bool:
    """Whether `path` matches one glob (a lone `!glob` matches nothing)."""
    return matches_any((pattern,), path)


@lru_cache(maxsize=256)
def any_name_match(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a name matches any of `patterns` as `fnmatch.fnmatchcase` matches one: the
    patterns as one expression, compiled once (no pattern: nothing matches)."""
    if not patterns:
        return lambda name: False
    match = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match
    return lambda name: match(name) is not None
