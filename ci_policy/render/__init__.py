"""Renderers: core results as text, Markdown, JSON and GitHub Actions output.

- In: `Diagnostic`s and lint reports (here), registrations, plans, run results and gate
  outcomes (`text`, `markdown`, `jsondoc`, `github`), all core types.
- Out: strings. No I/O here; the command line writes them.
- Every checkout-controlled value passes `render.escape` on its way out, so a file name,
  label or reason cannot inject a workflow command, a line of its own or Markdown.
- The names below are the package's API; each lives in the module of its format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from ci_policy.errors import Diagnostic
from ci_policy.model.lint import LintReport
from ci_policy.render.escape import escape_data, escape_property, line_start, md_escape, one_line
from ci_policy.render.github import (
    file_run_outputs,
    gate_annotations,
    github_output_lines,
    github_outputs,
    plan_annotations,
    run_annotations,
    usage_error_github,
)
from ci_policy.render.jsondoc import (
    JSON_SCHEMA_VERSION,
    comment_json,
    file_run_json,
    plan_dict,
    plan_json,
    registry_json,
    shard_files_json,
    tune_json,
)
from ci_policy.render.markdown import gate_markdown, plan_markdown, run_summary_markdown
from ci_policy.render.text import (
    est_sources,
    file_run_text,
    gate_rows,
    gate_text,
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
    "usage_error_github", "usage_error_text",
]


def _code(err: Diagnostic) -> str:
    """`CP201 marker-not-module-level`, or "" for a diagnostic without a code."""
    if err.code is None:
        return ""
    return f"{err.code} {err.name}" if err.name else err.code


def diagnostic_text(err: Diagnostic) -> str:
    """`path:line:col: [warning: ]CODE name: message`, then an indented hint line."""
    label = "warning: " if err.severity == "warning" else ""
    code = f"{_code(err)}: " if err.code else ""
    text = f"{line_start(one_line(err.location()))}: {label}{code}{one_line(err.message)}"
    if err.hint:
        text += f"\n    hint: {one_line(err.hint)}"
    return text


def diagnostic_github(err: Diagnostic, path_of: Callable[[str], str] = lambda p: p) -> str:
    """`::error file=..,line=..,col=..,title=CODE name::message (hint: ...)`."""
    props = []
    # Command-line arguments and environment variables are not files of the workspace.
    if err.path and not err.path.startswith(("--", "$")):
        props.append(f"file={escape_property(path_of(err.path))}")
    if err.line is not None:
        props.append(f"line={err.line}")
    if err.col is not None:
        props.append(f"col={err.col}")
    if err.code is not None:
        props.append(f"title={escape_property(_code(err))}")
    message = err.message + (f" (hint: {err.hint})" if err.hint else "")
    command = "warning" if err.severity == "warning" else "error"
    head = f"::{command} {','.join(props)}" if props else f"::{command}"
    return f"{head}::{escape_data(message)}"


def diagnostics(errors: Iterable[Diagnostic], fmt: str,
                path_of: Callable[[str], str] = lambda p: p) -> str:
    errors = list(errors)
    if fmt == "github":
        return "\n".join(diagnostic_github(e, path_of) for e in errors)
    if fmt == "json":
        return json.dumps({"schema": JSON_SCHEMA_VERSION,
                           "errors": [e.as_dict() for e in errors if e.severity == "error"],
                           "warnings": [e.as_dict() for e in errors if e.severity == "warning"]},
                          indent=2)
    return "\n".join(diagnostic_text(e) for e in errors)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def lint_report(report: LintReport, fmt: str, path_of: Callable[[str], str] = lambda p: p) -> str:
    if fmt == "json":
        snap = report.snapshot
        return json.dumps({
            "schema": JSON_SCHEMA_VERSION,
            "ok": report.ok,
            "errors": [e.as_dict() for e in report.errors],
            "warnings": [w.as_dict() for w in report.warnings],
            "files": len(snap.files) if snap else None,
            "registrations": len(snap.registrations) if snap else None,
        }, indent=2)
    lines = []
    items = list(report.errors) + list(report.warnings)
    if items:
        lines.append(diagnostics(items, fmt, path_of))
    snap = report.snapshot
    counts = f"{_count(len(report.errors), 'error')}, {_count(len(report.warnings), 'warning')}"
    if snap is not None:
        counts += (f" ({_count(len(snap.files), 'test file')}, "
                   f"{_count(len(snap.registrations), 'registration')}, "
                   f"{_count(len(snap.gates), 'gate')})")
    lines.append(f"ci-policy lint: {'OK' if report.ok else 'FAILED'}: {counts}")
    return "\n".join(lines)
