r"""gitignore-style path globs, with `pathspec`'s `GitIgnoreSpec` meaning, matched in time linear in the path.

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
  leading `!` negates. In a list, as in `GitIgnoreSpec`, a glob that matches a path as a
  file (or the directory the path is) outranks one that matches only a directory above
  it: the last of the first kind decides, else the last of the second. One deliberate
  difference from pathspec, as in git's own `wildmatch`: a character class never matches
  `/` (pathspec's `a[!x]b` matches `a/b`).
- Refused: as a `GlobError`, which the configuration reports located: an empty glob or one
  surrounded by whitespace, a backslash (except gitignore's `\!` and `\#` for a leading
  `!` or `#` that is part of the name), a glob that matches nothing (`/`, `!`), `**`
  inside a segment (`a**b`), an unclosed `[`, a bad range (`[z-a]`), and a leading `#`
  (a comment in gitignore: it would match nothing).
- `any_name_match`: shell-style name patterns (`fnmatch.fnmatchcase`'s, not gitignore's),
  several at once as one compiled expression.

Why a matcher of our own rather than pathspec's regexes: pathspec compiles a glob to a
backtracking regex (`^(?:.+/)?[^/]*a[^/]*a[^/]*b(?:(?P<ps_d>/)|$)`), and Python's `re`
takes exponential time on a glob with several `*` in one segment against a long segment
that almost matches (`*a*a*a*a*b` took 121 s on a 200-character segment of a PR's diff).
Here the same normalisation and the same regex structure are compiled to a small program
(characters, prioritised splits, the end anchor, the directory mark) that a Pike VM runs:
every thread advances one character at a time, in the priority order Python's backtracking
would try them, so the answer (and whether the match took pathspec's directory-mark `/`,
which decides between globs in a list) is the one `re` gives, and the cost is at most
(path length + 1) x (program length) steps, never a retry. The thread lists are cached as
the states of a lazy DFA (one dictionary look-up per character once warm). RE2
(`google-re2`) would also be linear, but it is a compiled extension the core would depend
on, and it has no look-ahead, which pathspec's regexes need for classes that never match
`/`; no new dependency is needed. `tests/read/test_globs.py` checks the matcher against
`GitIgnoreSpec` on generated globs and paths.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from ci_policy.errors import CiPolicyError


class GlobError(CiPolicyError, ValueError):
    """A glob in configuration that ci-policy cannot use; the configuration reports it located."""


# -- the program ------------------------------------------------------------------------------
# One instruction per slot: (op, a, b).
_CHAR = 0   # consume one character for which the predicate `a` holds
_SPLIT = 1  # try `a`, then `b` (the order Python's backtracking tries them)
_JMP = 2    # go to `a`
_MARK = 3   # pathspec's directory mark (`(?P<ps_d>/)`) is taken
_END = 4    # `$` (end of the path, or before a final LF, as Python's `$`), then a match
_MATCH = 5

Predicate = Callable[[str], bool]


def _not_slash(c: str) -> bool:
    return c != "/"


def _dot(c: str) -> bool:  # `.` without DOTALL
    return c != "\n"


def _slash(c: str) -> bool:
    return c == "/"


def _literal(ch: str) -> Predicate:
    return ch.__eq__


def _class(body: str, negate: bool) -> Predicate:
    """A `[...]` class as Python's regex reads pathspec's (its members escaped, `-` a range)
    and never matching `/`; a reversed range is refused with `re`'s own message."""
    members: set[str] = set()
    ranges: list[tuple[str, str]] = []
    k = 0
    while k < len(body):
        c = body[k]
        k += 1
        if k < len(body) and body[k] == "-":
            k += 1
            if k == len(body):  # a '-' last is a member
                members.update((c, "-"))
                break
            hi = body[k]
            k += 1
            if hi < c:
                raise ValueError(f"bad character range {re.escape(c)}-{re.escape(hi)}")
            ranges.append((c, hi))
        else:
            members.add(c)
    frozen, spans = frozenset(members), tuple(ranges)

    def pred(ch: str) -> bool:
        inside = ch in frozen or any(lo <= ch <= hi for lo, hi in spans)
        return ch != "/" and inside is not negate

    return pred


class _Builder:
    def __init__(self) -> None:
        self.prog: list[tuple[int, object, object]] = []

    def emit(self, op: int, a: object = None, b: object = None) -> int:
        self.prog.append((op, a, b))
        return len(self.prog) - 1

    def patch(self, at: int, a: object, b: object = None) -> None:
        self.prog[at] = (self.prog[at][0], a, b)

    def leading_dirs(self) -> None:
        """`(?:.+/)?`: any leading directories, the longest tried first."""
        split = self.emit(_SPLIT)
        body = self.emit(_CHAR, _dot)
        again = self.emit(_SPLIT)
        self.patch(again, body, again + 1)
        self.emit(_CHAR, _slash)
        self.patch(split, body, len(self.prog))

    def inner_dirs(self) -> None:
        """`(?:/.+)?`: any inner directories, the longest tried first."""
        split = self.emit(_SPLIT)
        self.emit(_CHAR, _slash)
        body = self.emit(_CHAR, _dot)
        again = self.emit(_SPLIT)
        self.patch(again, body, again + 1)
        self.patch(split, split + 1, len(self.prog))

    def plus(self, pred: Predicate) -> None:
        body = self.emit(_CHAR, pred)
        again = self.emit(_SPLIT)
        self.patch(again, body, again + 1)

    def star(self, pred: Predicate) -> None:
        split = self.emit(_SPLIT)
        self.emit(_CHAR, pred)
        self.emit(_JMP, split)
        self.patch(split, split + 1, len(self.prog))

    def segment(self, seg: str) -> None:
        """pathspec's `_translate_segment_glob`, as instructions."""
        i, end = 0, len(seg)
        while i < end:
            c = seg[i]
            i += 1
            if c == "\\":  # only a leading `\!` or `\#` reaches here (`_check`)
                self.emit(_CHAR, _literal(seg[i]))
                i += 1
            elif c == "*":
                self.star(_not_slash)
            elif c == "?":
                self.emit(_CHAR, _not_slash)
            elif c == "[":
                j = i
                if j < end and seg[j] in "!^":
                    j += 1
                if j < end and seg[j] == "]":
                    j += 1
                while j < end and seg[j] != "]":
                    j += 1
                if j == end:  # refused by `_check` first
                    raise ValueError("unclosed '['")
                negate = seg[i] in "!^"
                self.emit(_CHAR, _class(seg[i + 1 if negate else i:j], negate))
                i = j + 1
            else:
                self.emit(_CHAR, _literal(c))

    def last_segment_end(self) -> None:
        """`(?:(?P<ps_d>/)|$)`: a directory's `/` (marked), else the end."""
        split = self.emit(_SPLIT)
        self.emit(_CHAR, _slash)
        self.emit(_MARK)
        self.emit(_MATCH)
        self.patch(split, split + 1, self.emit(_END))
        self.emit(_MATCH)


def _normalize(is_dir: bool, segs: list[str]) -> tuple[list[str] | None, str | None]:
    """pathspec's `GitIgnoreSpecPattern.__normalize_segments`: the segments, or an override
    (`any`: any path; `slash`: a path with a `/`; `dir`: the same, as a directory)."""
    if not segs[0]:
        del segs[0]
    elif len(segs) == 1 or (len(segs) == 2 and not segs[1]):
        if segs[0] != "**":
            segs.insert(0, "**")
    if not segs:
        raise ValueError("matches nothing")
    if not segs[-1]:
        segs[-1] = "**"
    for i in range(len(segs) - 1, 0, -1):
        if segs[i - 1] == "**" and segs[i] == "**":
            del segs[i]
    if segs == ["**"]:
        return None, "dir" if is_dir else "any"
    if segs == ["**", "*"]:
        return None, "any"
    if segs == ["**", "*", "**"]:
        return None, "dir" if is_dir else "slash"
    return segs, None


def _program(is_dir: bool, segs: list[str]) -> tuple[tuple[int, object, object], ...]:
    """pathspec's `__translate_segments`, as instructions."""
    b = _Builder()
    need_slash = False
    end = len(segs) - 1
    for i, seg in enumerate(segs):
        if seg == "**":
            if i == 0:
                b.leading_dirs()
            elif i < end:
                b.inner_dirs()
                need_slash = True
            else:
                b.emit(_CHAR, _slash)                           # / or (?P<ps_d>/)
                if is_dir:
                    b.emit(_MARK)
                b.emit(_MATCH)
        else:
            if need_slash:
                b.emit(_CHAR, _slash)
            if seg == "*":
                b.plus(_not_slash)                              # [^/]+
            else:
                b.segment(seg)
            if i == end:
                b.last_segment_end()
            need_slash = True
    return tuple(b.prog)


_NO = -1  # no match (a match is its directory mark, 0 or 1)
_DEAD = 0  # the state without threads: nothing more can match


@dataclass(eq=False)
class Glob:
    """One compiled glob: `match(path)` is None, or whether pathspec's directory mark was taken."""

    pattern: str
    include: bool
    override: str | None
    program: tuple[tuple[int, object, object], ...]
    # The lazy DFA: a state is a thread list (pc * 2 + mark, in priority order).
    _states: dict[tuple[int, ...], int] = field(default_factory=dict, repr=False)
    _lists: list[tuple[int, ...]] = field(default_factory=list, repr=False)
    _moves: list[dict[str, tuple[int, int]]] = field(default_factory=list, repr=False)
    _start: int = field(default=-1, repr=False)

    # A cap on the cached states of one glob; past it the cache starts again (still linear).
    MAX_STATES = 2000

    def match(self, path: str) -> bool | None:
        """None when the glob does not match `path` (negation aside); else whether the match
        took the directory mark (the path is below a directory the glob names)."""
        if self.override is not None:
            if self.override == "any":
                return False if path.strip("\n") else None
            return (self.override == "dir") if "/" in path else None
        state = self._initial()
        moves, lists = self._moves, self._lists
        found = _NO
        # A final LF is read apart: Python's `$` holds before it.
        final_lf = path.endswith("\n")
        for c in path[:-1] if final_lf else path:
            move = moves[state].get(c)
            if move is None:
                move = self._move(state, c, False)
            state, got = move
            if got != _NO:
                found = got
            if state == _DEAD:
                return None if found == _NO else bool(found)
        if final_lf:
            threads, got = self._step(lists[state], "\n", True)
            if got != _NO:
                found = got
        else:
            threads = lists[state]
        got = self._final(threads)
        if got != _NO:
            found = got
        return None if found == _NO else bool(found)

    def work(self, path: str) -> list[int]:
        """The threads the matcher holds before each character of `path` and at its end (no
        cache): one list of at most `len(program)` threads per position, never a retry."""
        if self.override is not None:
            return [1] * (len(path) + 1)
        threads = self._closure((0,))
        sizes = [len(threads)]
        for i, c in enumerate(path):
            threads, _ = self._step(threads, c, i == len(path) - 1 and c == "\n")
            sizes.append(len(threads))
        return sizes

    # -- the Pike VM -------------------------------------------------------------------------

    def _closure(self, seeds: Iterable[int]) -> tuple[int, ...]:
        """The threads `seeds` reach without reading a character, in priority order (the
        first to reach an instruction holds it, as backtracking would have tried it first)."""
        prog = self.program
        out: list[int] = []
        seen: set[int] = set()

        def add(thread: int) -> None:
            stack = [thread]
            while stack:
                t = stack.pop()
                pc, mark = t >> 1, t & 1
                if pc in seen:
                    continue
                seen.add(pc)
                op, a, b = prog[pc]
                if op == _SPLIT:
                    stack.append(int(b) * 2 + mark)  # type: ignore[call-overload]
                    stack.append(int(a) * 2 + mark)  # type: ignore[call-overload]
                elif op == _JMP:
                    stack.append(int(a) * 2 + mark)  # type: ignore[call-overload]
                elif op == _MARK:
                    stack.append((pc + 1) * 2 + 1)
                else:
                    out.append(t)

        for s in seeds:
            add(s)
        return tuple(out)

    def _step(self, threads: tuple[int, ...], c: str, final_lf: bool) -> tuple[tuple[int, ...], int]:
        """Read `c`: the next thread list, and the match (its mark) found before reading it.

        A thread at a match ends the list (every later thread has a lower priority); `$`
        holds before a character only when it is a final LF (Python's `$`).
        """
        prog = self.program
        nxt: list[int] = []
        found = _NO
        for t in threads:
            pc, mark = t >> 1, t & 1
            op, pred, _ = prog[pc]
            if op == _MATCH or (op == _END and final_lf):
                found = mark
                break
            if op == _CHAR and pred(c):  # type: ignore[operator]
                nxt.append((pc + 1) * 2 + mark)
        return self._closure(nxt), found

    def _final(self, threads: tuple[int, ...]) -> int:
        """At the end of the path: the first thread at a match or at `$` matches."""
        for t in threads:
            if self.program[t >> 1][0] in (_MATCH, _END):
                return t & 1
        return _NO

    def _state(self, threads: tuple[int, ...]) -> int:
        sid = self._states.get(threads)
        if sid is None:
            sid = self._states[threads] = len(self._lists)
            self._lists.append(threads)
            self._moves.append({})
        return sid

    def _initial(self) -> int:
        if self._start < 0 or len(self._lists) > self.MAX_STATES:
            self._states.clear()
            self._lists.clear()
            self._moves.clear()
            self._state(())  # _DEAD: no thread left
            self._start = self._state(self._closure((0,)))
        return self._start

    def _move(self, state: int, c: str, final_lf: bool) -> tuple[int, int]:
        threads, found = self._step(self._lists[state], c, final_lf)
        move = (self._state(threads), found)
        self._moves[state][c] = move
        return move


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
def compile_glob(pattern: str) -> Glob:
    """One glob, compiled (negation aside: `include` says which way it counts); raises `GlobError`."""
    _check(pattern)
    include = not pattern.startswith("!")
    body = pattern if include else pattern[1:]
    segs = body.split("/")
    is_dir = not segs[-1]
    try:
        normal, override = _normalize(is_dir, segs)
        program = () if normal is None else _program(is_dir, normal)
    except ValueError as exc:  # e.g. a reversed range [z-a]
        raise GlobError(f"invalid glob {pattern!r}: {exc}") from None
    return Glob(pattern, include, override, program)


@lru_cache(maxsize=1024)
def _compiled(patterns: tuple[str, ...]) -> tuple[Glob, ...]:
    return tuple(compile_glob(p) for p in patterns)


def deciding_glob(patterns: Iterable[str], path: str) -> str | None:
    """The glob of `patterns` that makes `path` match, or None.

    `GitIgnoreSpec`'s rule: the last glob matching `path` as a file decides, else the last
    one matching a directory above it (its directory mark); a deciding `!glob` means no.
    """
    globs = tuple(patterns)
    # pathspec's `normalize_file`: one leading '/' or './' is dropped.
    if path.startswith("/"):
        path = path[1:]
    elif path.startswith("./"):
        path = path[2:]
    decided: Glob | None = None
    for glob in reversed(_compiled(globs)):
        mark = glob.match(path)
        if mark is None:
            continue
        if not mark:
            decided = glob
            break
        if decided is None:
            decided = glob
    return decided.pattern if decided is not None and decided.include else None


def matches_any(patterns: Iterable[str], path: str) -> bool:
    """Whether `path` matches the list of globs, gitignore's way (the last match wins)."""
    return deciding_glob(patterns, path) is not None


def matches(pattern: str, path: str) -> bool:
    """Whether `path` matches one glob (a lone `!glob` matches nothing)."""
    return matches_any((pattern,), path)


@lru_cache(maxsize=256)
def any_name_match(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a name matches any of `patterns` as `fnmatch.fnmatchcase` matches one: the
    patterns as one expression, compiled once (no pattern: nothing matches).

    `fnmatch.translate` makes every `*` but the last an atomic group (Python 3.11's `(?>.*?x)`,
    3.10's look-ahead and back-reference): a name is scanned once per `*`, never retried.
    """
    if not patterns:
        return lambda name: False
    match = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match
    return lambda name: match(name) is not None
