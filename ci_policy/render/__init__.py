"""Renderers: core results as text, Markdown, JSON and GitHub Actions output.

- In: `Diagnostic`s and lint reports (here), registrations, plans, run results and gate
  outcomes (`text`, `markdown`, `jsondoc`, `github`), all core types.
- Out: strings. No I/O here; the command line writes them.
- Every checkout-controlled value passes `render.escape` on its way out, so a file name,
  label or reason cannot inject a workflow command, a line of its own or Markdown.
- The names below are the package's API; each lives in the module of its format.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ci_policy.errors import Diagnostic
from ci_policy.model.lint import LintReport
from ci_policy.render.escape import escape_data, escape_property, line_start, md_escape, one_line
from ci_policy.render.github import (
    diagnostic_github,
    file_run_outputs,
    gate_annotations,
    github_output_lines,
    github_outputs,
    invalid_annotations,
    plan_annotations,
    run_annotations,
    usage_error_github,
)
from ci_policy.render.jsondoc import (
    JSON_SCHEMA_VERSION,
    comment_json,
    diagnostics_json,
    explain_json,
    file_run_json,
    invalid_json,
    lint_json,
    outcome_json,
    plan_dict,
    plan_json,
    registry_json,
    shard_files_json,
    tune_json,
)
from ci_policy.render.markdown import gate_markdown, outcome_markdown, plan_markdown, run_summary_markdown
from ci_policy.render.text import (
    diagnostic_text,
    est_sources,
    explain_text,
    file_run_text,
    gate_rows,
    gate_text,
    invalid_text,
    lint_summary,
    outcome_text,
    plan_text,
    registry_text,
    run_summary_text,
    shard_header,
    table,
    usage_error_text,
)

__all__ = [
    "JSON_SCHEMA_VERSION", "diagnostic_github", "diagnostic_text", "diagnostics", "escape_data", "escape_property",
    "est_sources", "gate_annotations", "gate_markdown", "gate_rows", "gate_text", "github_output_lines",
    "github_outputs", "line_start", "lint_report", "md_escape", "one_line", "plan_annotations", "plan_dict",
    "plan_json", "plan_markdown", "plan_text", "registry_json", "registry_text", "run_annotations",
    "run_summary_markdown", "run_summary_text", "shard_header", "table",
    "comment_json", "file_run_json", "file_run_outputs", "file_run_text", "shard_files_json", "tune_json",
    "usage_error_github", "usage_error_text", "diagnostics_json", "lint_json", "lint_summary",
    "invalid_annotations", "invalid_json", "invalid_text", "explain_json", "explain_text",
    "outcome_json", "outcome_markdown", "outcome_text",
]


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
