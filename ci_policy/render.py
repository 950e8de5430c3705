"""Renderers: turn results into text, JSON or GitHub workflow commands.

- In: `PolicyError`s, lint reports, registrations (and later plans).
- Out: strings. No I/O here; `cli.py` writes them.
- GitHub workflow-command values are escaped (`%`, CR, LF; and `:`/`,` in
  properties) so a message cannot inject another workflow command.
"""

from __future__ import annotations

import json
from typing import Callable, Iterable, Optional

from .errors import PolicyError
from .lint import LintReport
from .registry import Registration

JSON_SCHEMA_VERSION = 1


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def diagnostic_text(err: PolicyError) -> str:
    label = "warning: " if err.severity == "warning" else ""
    text = f"{err.location()}: {label}{err.message}"
    if err.hint:
        text += f"\n    hint: {err.hint}"
    return text


def diagnostic_github(err: PolicyError, path_of: Callable[[str], str] = lambda p: p) -> str:
    props = []
    if err.path:
        props.append(f"file={escape_property(path_of(err.path))}")
    if err.line is not None:
        props.append(f"line={err.line}")
    if err.col is not None:
        props.append(f"col={err.col}")
    message = err.message + (f" (hint: {err.hint})" if err.hint else "")
    command = "warning" if err.severity == "warning" else "error"
    head = f"::{command} {','.join(props)}" if props else f"::{command}"
    return f"{head}::{escape_data(message)}"


def diagnostics(errors: Iterable[PolicyError], fmt: str,
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


def _est(value: float) -> str:
    return f"{value:g}s"


def registry_json(registrations: Iterable[Registration]) -> str:
    return json.dumps({"schema": JSON_SCHEMA_VERSION,
                       "registrations": [r.as_dict() for r in registrations]}, indent=2)


def registry_text(registrations: Iterable[Registration]) -> str:
    rows = [("FILE", "BACKEND", "SUITE", "EST", "LABELS", "NOTES")]
    for r in registrations:
        notes = []
        if r.implicit:
            notes.append("implicit")
        if r.nightly:
            notes.append("nightly")
        if r.disabled is not None:
            notes.append(f"disabled: {r.disabled}")
        where = r.file if r.line is None else f"{r.file}:{r.line}"
        rows.append((where, r.backend, r.suite, _est(r.est_time), ",".join(r.labels) or "-",
                     "; ".join(notes)))
    return table(rows)


def table(rows: list[tuple[str, ...]], right: Optional[set[int]] = None) -> str:
    right = right or set()
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)
