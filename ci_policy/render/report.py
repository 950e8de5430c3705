"""Diagnostics and lint reports in the format asked for (`text`, `json` or `github`).

- In: `Diagnostic`s, or a `LintReport`, and the output format.
- Out: one string: GitHub annotations, a JSON document, or text lines (and, for a lint
  report, the summary line). No I/O here; the command line writes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ci_policy.errors import Diagnostic
from ci_policy.render.github import diagnostic_github
from ci_policy.render.jsondoc import diagnostics_json, lint_json
from ci_policy.render.text import diagnostic_text, lint_summary

if TYPE_CHECKING:
    from ci_policy.model.lint import LintReport


def diagnostics(errors: Iterable[Diagnostic], fmt: str,
                path_of: Callable[[str], str] = lambda p: p) -> str:
    """Diagnostics in one format: `github` annotations, a `json` document, or text lines."""
    errors = list(errors)
    if fmt == "github":
        return "\n".join(diagnostic_github(e, path_of) for e in errors)
    if fmt == "json":
        return diagnostics_json(errors)
    return "\n".join(diagnostic_text(e) for e in errors)


def lint_report(report: LintReport, fmt: str, path_of: Callable[[str], str] = lambda p: p) -> str:
    """`ci-policy lint`'s output: a JSON document, or every diagnostic then the summary line."""
    if fmt == "json":
        return lint_json(report)
    items = list(report.errors) + list(report.warnings)
    lines = [diagnostics(items, fmt, path_of)] if items else []
    return "\n".join(lines + [lint_summary(report)])
