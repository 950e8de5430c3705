"""Diagnostics and lint reports in the format asked for (`text`, `json` or `github`).

- In: `Diagnostic`s, or a `LintReport`, and the output format.
- Out: one string: GitHub annotations, a JSON document, or text lines (and, for a lint
  report, the summary line). No I/O here; the command line writes it.
- Refused: nothing: it formats diagnostics already made.
- A lint report's text shows the warnings of a kind that is normal in number (CP905, a
  disabled registration) as one summary line when there are several; `verbose` lists each.
  JSON and GitHub annotations always carry every one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ci_policy.errors import Diagnostic
from ci_policy.render.text import diagnostic_text, lint_summary

if TYPE_CHECKING:
    from ci_policy.model.lint import LintReport


def diagnostics(errors: Iterable[Diagnostic], fmt: str,
                path_of: Callable[[str], str] = lambda p: p) -> str:
    """Diagnostics in one format: `github` annotations, a `json` document, or text lines."""
    errors = list(errors)
    if fmt == "github":
        # Imported here, each format's renderer: the GitHub and JSON renderers import the plan
        # document's classes, which a text report never uses
        # (tests/cli/test_startup.py::test_lint_as_text_imports_no_json_or_github_renderer).
        from ci_policy.render.github import diagnostic_github

        return "\n".join(diagnostic_github(e, path_of) for e in errors)
    if fmt == "json":
        from ci_policy.render.jsondoc import diagnostics_json  # test_lint_as_text_imports_no_json_or_github_renderer

        return diagnostics_json(errors)
    return "\n".join(diagnostic_text(e) for e in errors)


# Warning code -> what one of them is, for its summary line: kinds a repository has many of on
# purpose (sglang disables dozens of tests), which would bury the other diagnostics line by line.
SUMMARISED = {"CP905": ("registration", "disabled")}


def summarised(warnings: Iterable[Diagnostic]) -> list[Diagnostic]:
    """`warnings` with each `SUMMARISED` kind of several reduced to one line where its first was."""
    warnings = list(warnings)
    out: list[Diagnostic] = []
    for w in warnings:
        kind = SUMMARISED.get(w.code or "")
        if kind is None:
            out.append(w)
            continue
        same = [x for x in warnings if x.code == w.code]
        if len(same) == 1:
            out.append(w)
        elif w is same[0]:
            noun, state = kind
            files = len({x.path for x in same})
            out.append(Diagnostic(f"{len(same)} {noun}s in {files} file{'s' if files != 1 else ''} are {state}",
                                  code=w.code, severity="warning",
                                  hint="`ci-policy lint --verbose` lists each one (so does --format json)"))
    return out


def lint_report(report: LintReport, fmt: str, path_of: Callable[[str], str] = lambda p: p, *,
                verbose: bool = False) -> str:
    """`ci-policy lint`'s output: a JSON document, or the diagnostics then the summary line."""
    if fmt == "json":
        from ci_policy.render.jsondoc import lint_json  # test_lint_as_text_imports_no_json_or_github_renderer

        return lint_json(report)
    warnings = report.warnings if verbose or fmt != "text" else summarised(report.warnings)
    items = list(report.errors) + list(warnings)
    lines = [diagnostics(items, fmt, path_of)] if items else []
    return "\n".join(lines + [lint_summary(report)])
