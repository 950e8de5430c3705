"""Suppressions: diagnostics a repository accepts, inline or per path, as linters allow.

- In: a test file's source (its `# ci-policy: ignore[CP201, marker-not-called]` comments),
  the configuration's `lint.ignore` rules, and the diagnostics found.
- Out: the diagnostics kept, the ones suppressed, and which suppressions were used. An
  inline suppression covers the diagnostics of its codes on its own line, or in the
  statement whose first line it is on; a `lint.ignore` rule covers its codes in files
  matching its globs.
- Refused: as located diagnostics: a bare `# ci-policy: ignore` (CP250) and a code or name that
  is no diagnostic of lint (CP251). A suppression that suppresses nothing is a warning
  (CP906), reported by `lint`.
- Comments are found with `tokenize` (a `#` inside a string is no comment); nothing of
  the file is executed.
"""

from __future__ import annotations

import ast
import io
import tokenize
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ci_policy.config.lint import IgnoreRule, code_of
from ci_policy.config.top import Config
from ci_policy.errors import Diagnostic
from ci_policy.read.globs import matches_any
from ci_policy.read.lazyregex import LazyRegex

COMMENT_RE = LazyRegex(r"#\s*ci-policy:\s*ignore\b(\[[^\]]*\])?")


@dataclass(frozen=True)
class Suppression:
    """One inline `# ci-policy: ignore[...]`: where it is, the statement lines it covers, its codes."""

    path: str
    line: int
    col: int
    first: int  # the lines it covers: its own, and the statement starting on it through `last`
    last: int
    codes: tuple[str, ...]

    def covers(self, diagnostic: Diagnostic) -> bool:
        return (diagnostic.path == self.path and diagnostic.code in self.codes
                and diagnostic.line is not None and self.first <= diagnostic.line <= self.last)


def inline_suppressions(text: str, path: str, *, tree: ast.Module | object | None = None
                        ) -> tuple[list[Suppression], list[Diagnostic]]:
    """The suppressions of one source file, and the errors in writing them.

    `tree`: the file's module as the caller parsed it already (anything else, such as the
    parser's diagnostic, means the file does not parse); None parses it here.
    """
    comments = _comments(text)
    if not comments:
        return [], []
    spans = _statement_spans(text, tree)
    found: list[Suppression] = []
    errors: list[Diagnostic] = []
    for line, col, comment in comments:
        match = COMMENT_RE.search(comment)
        if match is None:
            continue
        at = col + match.start() + 1
        if match.group(1) is None:
            errors.append(Diagnostic(
                "a bare `# ci-policy: ignore` would hide every diagnostic of the line; name what it accepts",
                path=path, line=line, col=at, code="CP250",
                hint="write `# ci-policy: ignore[CP201]` (codes or names, comma-separated)"))
            continue
        names = [n.strip() for n in match.group(1)[1:-1].split(",") if n.strip()]
        codes = [code_of(n) for n in names]
        unknown = [n for n, c in zip(names, codes, strict=True) if c is None]
        if not names or unknown:
            shown = ", ".join(repr(n) for n in unknown) if unknown else "nothing"
            errors.append(Diagnostic(
                f"`# ci-policy: ignore[...]` names {shown}, not a diagnostic code or name of ci-policy lint",
                path=path, line=line, col=at, code="CP251",
                hint="name codes such as CP201 or names such as marker-not-module-level"))
            continue
        last = spans.get(line, line)
        found.append(Suppression(path, line, at, line, last, tuple(c for c in codes if c is not None)))
    return found, errors


def _comments(text: str) -> list[tuple[int, int, str]]:
    """(line, col, text) of every comment that mentions ci-policy; none when the file does not tokenize."""
    if "ci-policy:" not in text:
        return []
    out = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and "ci-policy:" in token.string:
                out.append((token.start[0], token.start[1], token.string))
    except (tokenize.TokenError, SyntaxError):
        return out  # a file that does not tokenize has its own error; what was read still counts
    return out


def _statement_spans(text: str, parsed: ast.Module | object | None = None) -> dict[int, int]:
    """First line -> last line of every statement (the longest one starting on a line)."""
    if parsed is None:
        try:
            with warnings.catch_warnings():  # a SyntaxWarning would print a checkout's text (read.markers)
                warnings.simplefilter("ignore")
                parsed = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return {}
    if not isinstance(parsed, ast.Module):
        return {}
    tree = parsed
    spans: dict[int, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            end = node.end_lineno or node.lineno
            spans[node.lineno] = max(spans.get(node.lineno, node.lineno), end)
    return spans


@dataclass(frozen=True)
class Applied:
    kept: tuple[Diagnostic, ...]
    suppressed: tuple[Diagnostic, ...]
    used: frozenset[Suppression | IgnoreRule]


def apply(diagnostics: Iterable[Diagnostic], inline: Sequence[Suppression], rules: Sequence[IgnoreRule]) -> Applied:
    """Split `diagnostics` into those kept and those an inline suppression or an ignore rule covers."""
    kept: list[Diagnostic] = []
    suppressed: list[Diagnostic] = []
    used: set[Suppression | IgnoreRule] = set()
    for diagnostic in diagnostics:
        by: list[Suppression | IgnoreRule] = [s for s in inline if s.covers(diagnostic)]
        by += [r for r in rules if diagnostic.code in r.codes and diagnostic.path is not None
               and matches_any(r.paths, diagnostic.path)]
        if by:
            suppressed.append(diagnostic)
            used.update(by)
        else:
            kept.append(diagnostic)
    return Applied(tuple(kept), tuple(suppressed), frozenset(used))


def unused(inline: Sequence[Suppression], config: Config,
           used: frozenset[Suppression | IgnoreRule]) -> list[Diagnostic]:
    """A warning for every suppression that suppressed nothing: stale ones hide future problems."""
    out = [Diagnostic(f"`# ci-policy: ignore[{', '.join(s.codes)}]` suppresses nothing here",
                      path=s.path, line=s.line, col=s.col, code="CP906", severity="warning",
                      hint="remove it, or move it to the line of the diagnostic it accepts")
           for s in inline if s not in used]
    out += [Diagnostic(f"lint.ignore[{i}] ({', '.join(rule.codes)} in {', '.join(rule.paths)}) suppresses nothing",
                       path=config.path, line=rule.line, code="CP906", severity="warning",
                       hint="remove the rule, or correct its paths or codes")
            for i, rule in enumerate(config.lint.ignore) if rule not in used]
    return out
