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
from importlib import import_module
from typing import TYPE_CHECKING, Any

from ci_policy.errors import Diagnostic

if TYPE_CHECKING:
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
        plan_jsons,
        registry_json,
        shard_files_json,
        stage_plan_jsons,
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

# Each name is imported from its module on first use: `adapters.console` needs only
# `render.escape`, and `ci-policy --help` should not import the plan and model layers.
_MODULE_OF = {
    "escape_data": "escape",
    "escape_property": "escape",
    "line_start": "escape",
    "md_escape": "escape",
    "one_line": "escape",
    "diagnostic_github": "github",
    "file_run_outputs": "github",
    "gate_annotations": "github",
    "github_output_lines": "github",
    "github_outputs": "github",
    "invalid_annotations": "github",
    "plan_annotations": "github",
    "run_annotations": "github",
    "usage_error_github": "github",
    "JSON_SCHEMA_VERSION": "jsondoc",
    "comment_json": "jsondoc",
    "diagnostics_json": "jsondoc",
    "explain_json": "jsondoc",
    "file_run_json": "jsondoc",
    "invalid_json": "jsondoc",
    "lint_json": "jsondoc",
    "outcome_json": "jsondoc",
    "plan_dict": "jsondoc",
    "plan_json": "jsondoc",
    "plan_jsons": "jsondoc",
    "registry_json": "jsondoc",
    "shard_files_json": "jsondoc",
    "stage_plan_jsons": "jsondoc",
    "tune_json": "jsondoc",
    "gate_markdown": "markdown",
    "outcome_markdown": "markdown",
    "plan_markdown": "markdown",
    "run_summary_markdown": "markdown",
    "diagnostic_text": "text",
    "est_sources": "text",
    "explain_text": "text",
    "file_run_text": "text",
    "gate_rows": "text",
    "gate_text": "text",
    "invalid_text": "text",
    "lint_summary": "text",
    "outcome_text": "text",
    "plan_text": "text",
    "registry_text": "text",
    "run_summary_text": "text",
    "shard_header": "text",
    "table": "text",
    "usage_error_text": "text",
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"ci_policy.render.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "JSON_SCHEMA_VERSION", "diagnostic_github", "diagnostic_text", "diagnostics", "escape_data", "escape_property",
    "est_sources", "gate_annotations", "gate_markdown", "gate_rows", "gate_text", "github_output_lines",
    "github_outputs", "line_start", "lint_report", "md_escape", "one_line", "plan_annotations", "plan_dict",
    "plan_json", "plan_jsons", "plan_markdown", "plan_text", "registry_json", "registry_text", "run_annotations",
    "run_summary_markdown", "run_summary_text", "shard_header", "table",
    "comment_json", "file_run_json", "file_run_outputs", "file_run_text", "shard_files_json", "stage_plan_jsons",
    "tune_json",
    "usage_error_github", "usage_error_text", "diagnostics_json", "lint_json", "lint_summary",
    "invalid_annotations", "invalid_json", "invalid_text", "explain_json", "explain_text",
    "outcome_json", "outcome_markdown", "outcome_text",
]


def diagnostics(errors: Iterable[Diagnostic], fmt: str,
                path_of: Callable[[str], str] = lambda p: p) -> str:
    """Diagnostics in one format: `github` annotations, a `json` document, or text lines."""
    from ci_policy.render.github import diagnostic_github
    from ci_policy.render.jsondoc import diagnostics_json
    from ci_policy.render.text import diagnostic_text

    errors = list(errors)
    if fmt == "github":
        return "\n".join(diagnostic_github(e, path_of) for e in errors)
    if fmt == "json":
        return diagnostics_json(errors)
    return "\n".join(diagnostic_text(e) for e in errors)


def lint_report(report: LintReport, fmt: str, path_of: Callable[[str], str] = lambda p: p) -> str:
    """`ci-policy lint`'s output: a JSON document, or every diagnostic then the summary line."""
    from ci_policy.render.jsondoc import lint_json
    from ci_policy.render.text import lint_summary

    if fmt == "json":
        return lint_json(report)
    items = list(report.errors) + list(report.warnings)
    lines = [diagnostics(items, fmt, path_of)] if items else []
    return "\n".join(lines + [lint_summary(report)])
