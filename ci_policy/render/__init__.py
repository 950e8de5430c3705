"""Renderers: turn results into text, JSON or GitHub workflow commands.

- In: `Diagnostic`s, lint reports, registrations (and later plans).
- Out: strings. No I/O here; `cli.py` writes them.
- GitHub workflow-command values are escaped (`%`, CR, LF; and `:`/`,` in
  properties) so a message cannot inject another workflow command.
"""

from __future__ import annotations

import json
from typing import Callable, Iterable, Optional

from ci_policy.errors import Diagnostic
from ci_policy.model.lint import LintReport
from ci_policy.model.registry import Registration

JSON_SCHEMA_VERSION = 1


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def one_line(value: str) -> str:
    """Checkout-controlled text (paths, reasons) printed as text stays on its line.

    In a CI log every line is parsed on its own: a CR or LF inside a value would start a
    line of the checkout's choosing (a GitHub `::workflow-command`, a fake diagnostic).
    """
    return value.replace("\r", "\\r").replace("\n", "\\n")


def line_start(value: str) -> str:
    """A path that begins an output line: `./` keeps a leading `::` from being a workflow command."""
    return "./" + value if value.lstrip().startswith("::") else value


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
        rows.append((line_start(one_line(where)), r.backend, r.suite, _est(r.est_time),
                     ",".join(r.labels) or "-", one_line("; ".join(notes))))
    return table(rows)


def table(rows: list[tuple[str, ...]], right: Optional[set[int]] = None) -> str:
    right = right or set()
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


# -- the stage plan --------------------------------------------------------------------

def _secs(value: float) -> str:
    return f"{value:g}s"


def plan_dict(plan) -> dict:
    policy = plan.policy
    return {
        "schema": JSON_SCHEMA_VERSION,
        "event": policy.event,
        "cadence": policy.cadence,
        "raw_labels": list(policy.raw_labels),
        "include_labels": list(policy.include_labels),
        "bypass_fastfail": policy.bypass_fastfail,
        "write_baseline": policy.write_baseline,
        "diff": {"available": plan.diff.available, "files": list(plan.diff.files),
                 **({} if plan.diff.available else {"reason": plan.diff.reason})},
        "stages": [{
            "name": s.name,
            "backend": s.stage.backend,
            "decision": s.decision,
            "reasons": list(s.reasons),
            "runs_on": list(s.stage.runs_on),
            "tests": [{"file": r.file, "est_time": r.est_time, "est_source": r.est_source} for r in s.tests],
            "shards": [sh.as_dict() for sh in s.shards],
            "invalid": [{"file": r.file, "reason": why} for r, why in s.invalid],
        } for s in plan.stages],
        "skipped_stages": list(plan.skipped_stages),
        "images": dict(plan.images),
        "warnings": list(plan.warnings),
    }


def plan_json(plan) -> str:
    return json.dumps(plan_dict(plan), indent=2)


def plan_text(plan) -> str:
    policy = plan.policy
    lines = [f"ci-policy plan: {policy.event}, cadence {policy.cadence}"]
    lines.append(f"PR labels: {' '.join(policy.raw_labels) or '(none)'}")
    lines.append(f"included labels: {', '.join(policy.include_labels) or '(none)'}")
    flags = [name for name, on in (("bypass-fastfail", policy.bypass_fastfail),
                                   ("write-baseline", policy.write_baseline),
                                   ("admit-nightly", policy.admit_nightly)) if on]
    if flags:
        lines.append(f"flags: {', '.join(flags)}")
    if plan.diff.available:
        lines.append(f"diff: {len(plan.diff.files)} changed file(s)")
    elif policy.event == "pull_request":
        lines.append(f"diff: unavailable ({plan.diff.reason})")
    lines.append("")
    rows = [("STAGE", "BACKEND", "DECISION", "TESTS", "SHARDS", "EST WALL", "REASONS")]
    for s in plan.stages:
        rows.append((s.name, s.stage.backend, s.decision.upper(), str(len(s.tests)), str(len(s.shards)),
                     _secs(s.wall_seconds) if s.decision == "run" else "-", "; ".join(s.reasons)))
    lines.append(table(rows, right={3, 4, 5}))
    running = [s for s in plan.stages if s.decision == "run"]
    if running:
        lines.append("")
        lines.append("shards:")
        for s in running:
            for sh in s.shards:
                lines.append(f"  {s.name}[{sh.index}] est {_secs(sh.est_seconds)}: {' '.join(sh.files)}")
        sources = est_sources(plan)
        if "estimates" in sources:
            lines.append("est_time from the estimates file for: " + " ".join(sources["estimates"]))
    if plan.invalid:
        lines.append("")
        lines.append("invalid (not scheduled):")
        lines += [f"  {stage}: {file}: {why}" for stage, file, why in plan.invalid]
    lines.append("")
    lines.append("images: " + ", ".join(f"{backend}={action}" for backend, action in plan.images))
    for w in plan.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def est_sources(plan) -> dict[str, list[str]]:
    """source -> files of the running stages whose est_time came from it."""
    out: dict[str, list[str]] = {}
    for s in plan.stages:
        for r in s.tests:
            out.setdefault(r.est_source, []).append(f"{r.file}" if r.est_source != "estimates"
                                                    else f"{r.file}({s.name})")
    return out


def md_escape(text: str) -> str:
    """Escape text for a Markdown table cell; checkout paths and labels are untrusted."""
    out = text.replace("\\", "\\\\")
    for ch in "|`*_[]<>#":
        out = out.replace(ch, "\\" + ch)
    return out.replace("\n", " ").replace("\r", " ")


def _mermaid_name(text: str) -> str:
    safe = "".join(c if c.isalnum() or c in "_.-/" else "_" for c in text)
    return safe.rsplit("/", 1)[-1] or "file"


def plan_markdown(plan) -> str:
    policy = plan.policy
    out = ["## ci-policy plan", ""]
    out.append(f"- **Event:** {md_escape(policy.event)}, **cadence:** {md_escape(policy.cadence)}")
    out.append(f"- **PR labels:** {md_escape(' '.join(policy.raw_labels)) or '(none)'}")
    out.append(f"- **Included labels:** {md_escape(', '.join(policy.include_labels)) or '(none)'}")
    if plan.diff.available:
        out.append(f"- **Diff:** {len(plan.diff.files)} changed file(s)")
    elif policy.event == "pull_request":
        out.append(f"- **Diff:** unavailable ({md_escape(plan.diff.reason)}); every runnable stage runs")
    out.append("- **Images:** " + ", ".join(f"{b} {a}" for b, a in plan.images))
    out.append("")
    out.append("| Stage | Backend | Decision | Tests | Shards | Est. wall | Reasons |")
    out.append("|---|---|---|---:|---:|---:|---|")
    for s in plan.stages:
        mark = "✅ run" if s.decision == "run" else "⏭️ skip"
        wall = _secs(s.wall_seconds) if s.decision == "run" else "-"
        out.append(f"| {md_escape(s.name)} | {s.stage.backend} | {mark} | {len(s.tests)} | {len(s.shards)} "
                   f"| {wall} | {'<br>'.join(md_escape(r) for r in s.reasons)} |")
    for s in plan.stages:
        if s.decision != "run" or not s.shards:
            continue
        out += ["", f"### {md_escape(s.name)}", "", "```mermaid", "gantt",
                f"    title {_mermaid_name(s.name)} shards (estimated seconds)",
                "    dateFormat X", "    axisFormat %s"]
        est = {r.file: r.est_time for r in s.tests}
        for sh in s.shards:
            out.append(f"    section shard {sh.index}")
            start = 0.0
            for f in sh.files:
                end = start + est[f]
                out.append(f"    {_mermaid_name(f)} :{start:g}, {end:g}")
                start = end
        out.append("```")
    sources = est_sources(plan)
    if "estimates" in sources:
        out += ["", f"est_time from the estimates file for {len(sources['estimates'])} test(s); "
                f"{len(sources.get('literal', []))} from literals, {len(sources.get('implicit', []))} implicit."]
    if plan.invalid:
        out += ["", "**Invalid, not scheduled**", ""]
        out += [f"- {md_escape(stage)}: {md_escape(file)}: {md_escape(why)}" for stage, file, why in plan.invalid]
    if plan.warnings:
        out += ["", "**Warnings**", ""] + [f"- {md_escape(w)}" for w in plan.warnings]
    return "\n".join(out) + "\n"


def github_outputs(plan, delimiter: str) -> str:
    """`$GITHUB_OUTPUT` lines in the multi-line-safe `name<<DELIMITER` syntax."""
    policy = plan.policy
    values = {
        "cadence": policy.cadence,
        "raw_labels": " ".join(policy.raw_labels),
        "bypass_fastfail": "true" if policy.bypass_fastfail else "false",
        "write_baseline": "true" if policy.write_baseline else "false",
        "skipped_stages": json.dumps(list(plan.skipped_stages), separators=(",", ":")),
        "matrix": json.dumps(plan.matrix, separators=(",", ":")),
        "cuda_image": dict(plan.images)["cuda"],
        "rocm_image": dict(plan.images)["rocm"],
    }
    return github_output_lines(values, delimiter)


def github_output_lines(values: dict, delimiter: str) -> str:
    out = []
    for name, value in values.items():
        if delimiter in value:
            raise ValueError("delimiter occurs in an output value")
        out.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(out)


def plan_annotations(plan) -> str:
    lines = [f"::error file={escape_property(file)}::" + escape_data(f"{stage}: {file} is not scheduled: {why}")
             for stage, file, why in plan.invalid]
    lines += [f"::warning::{escape_data(w)}" for w in plan.warnings]
    return "\n".join(lines)


# -- the suite runner's summary (takes a runner.ShardResult; render never imports adapters) --

def _attempt_note(attempt) -> str:
    v = attempt.verdict
    return f"attempt {attempt.attempt}: {attempt.status}" + (f" ({v.kind}: {v.reason})" if v else "")


def _failure(r) -> tuple[str, str]:
    """(status, why) of a file that did not pass: its test failed, or an enforced gate did."""
    last = r.attempts[-1]
    if last.status == "pass" and getattr(r, "gate_failed", False):
        n = len(r.gate.blocking)
        return "GATE-FAIL", f"{n} enforced metric gate coordinate(s) failed"
    return last.status.upper(), (f"{last.verdict.kind}: {last.verdict.reason}" if last.verdict else last.status)


def run_summary_text(result) -> str:
    passed = [r for r in result.results if r.passed]
    failed = [r for r in result.results if not r.passed]
    retried = [r for r in result.results if len(r.attempts) > 1]
    lines = ["", f"==== ci-policy run: {result.stage} shard {result.shard} ===="]
    lines.append(f"PASSED ({len(passed)}):")
    for r in passed:
        last = r.attempts[-1]
        lines.append(f"  {r.file} elapsed={last.elapsed:.1f}s est={r.registration.est_time:g}s")
    lines.append(f"FAILED ({len(failed)}):")
    for r in failed:
        status, why = _failure(r)
        lines.append(f"  {r.file} {status} after {len(r.attempts)} attempt(s) ({why})")
    lines.append(f"RETRIED ({len(retried)}):")
    for r in retried:
        lines.append(f"  {r.file}: " + "; ".join(_attempt_note(a) for a in r.attempts))
    if result.not_run:
        lines.append(f"NOT RUN ({len(result.not_run)}, fast-fail):")
        lines += [f"  {reg.file}" for reg in result.not_run]
    lines.append("RESULT: " + ("PASS" if result.ok else "FAIL"))
    return "\n".join(lines)


def run_summary_markdown(result) -> str:
    out = [f"## ci-policy run: {md_escape(result.stage)} shard {result.shard}", "",
           "| File | Status | Attempts | Elapsed | Est. | |", "|---|---|---:|---:|---:|---|"]
    for r in result.results:
        last = r.attempts[-1]
        est = r.registration.est_time
        over = "⚠️ over est_time" if last.elapsed > est else ""
        status = last.status.upper() if r.passed or last.status != "pass" else _failure(r)[0]
        out.append(f"| {md_escape(r.file)} | {status} | {len(r.attempts)} | "
                   f"{last.elapsed:.1f}s | {est:g}s | {over} |")
    for reg in result.not_run:
        out.append(f"| {md_escape(reg.file)} | NOT RUN | 0 | - | {reg.est_time:g}s | fast-fail |")
    gates = "".join(gate_markdown(r.gate) for r in result.results if getattr(r, "gate", None) is not None)
    return "\n".join(out) + "\n" + ("\n" + gates if gates else "")


def run_annotations(result) -> str:
    lines = []
    for r in result.results:
        if not r.passed:
            status, why = _failure(r)
            lines.append(f"::error file={escape_property(r.file)}::"
                         + escape_data(f"{r.file} {status.lower()} after {len(r.attempts)} attempt(s) ({why})"))
    return "\n".join(lines)


def shard_header(stage_plan, shard) -> str:
    est = {r.file: r.est_time for r in stage_plan.tests}
    total = sum(est[f] for f in shard.files)
    lines = [f"Enabled {len(shard.files)} test(s) (est total {total:g}s) "
             f"for {stage_plan.name} shard {shard.index}:"]
    source = {r.file: r.est_source for r in stage_plan.tests}
    lines += [f"  {f} (est {est[f]:g}s{', from the estimates file' if source[f] == 'estimates' else ''})"
              for f in shard.files]
    if stage_plan.not_selected:
        lines.append(f"Skipped {len(stage_plan.not_selected)} registered test(s) of this stage:")
        lines += [f"  {reg.file}: {why}" for reg, why in stage_plan.not_selected]
    return "\n".join(lines)


# -- metric gates (takes gates.command.GateOutcome; duck-typed) ---------------------------

def _num(value) -> str:
    return "-" if value is None else f"{value:.6g}"


def gate_rows(outcome) -> list[tuple[str, ...]]:
    rows = []
    for r in outcome.results:
        b = r.band
        verdict = r.verdict
        if r.verdict in ("FAIL", "ERROR"):
            if r.spec.allowlist_reason is not None:
                verdict += f" (allowlisted: {r.spec.allowlist_reason})"
            elif not r.spec.enforce:
                verdict += " (report only)"
        rows.append((r.spec.metric_key, "last" if r.step == -1 else str(r.step), _num(r.value),
                     f"{_num(b.ref)} (n={b.n})" if b else "-",
                     f"[{_num(b.lo)}, {_num(b.hi)}]" if b else "-", verdict,
                     "" if r.verdict == "PASS" else r.message))
    return rows


def gate_text(outcome) -> str:
    head = f"ci-policy gate: {outcome.file} ({outcome.registration.backend}, {outcome.registration.suite})"
    if not outcome.results:
        return f"{head}: {outcome.baseline}"
    rows = [("METRIC", "STEP", "VALUE", "BASELINE", "BAND", "VERDICT", "DETAIL")] + gate_rows(outcome)
    status = "trusted" if outcome.trusted else "NOT trusted"
    lines = [head, table(rows), f"run: {status}; baseline: {outcome.baseline}"]
    if outcome.blocking:
        lines.append(f"FAILED: {len(outcome.blocking)} enforced gate coordinate(s) failed")
    return "\n".join(lines)


def gate_markdown(outcome) -> str:
    if not outcome.results:
        return ""
    out = [f"### Metric gates: {md_escape(outcome.file)}", "",
           "| Metric | Step | Value | Baseline | Band | Verdict | Detail |", "|---|---:|---:|---:|---|---|---|"]
    for row in gate_rows(outcome):
        out.append("| " + " | ".join(md_escape(c) for c in row) + " |")
    out += ["", f"Run {'trusted' if outcome.trusted else '**not trusted**'}; baseline: "
            f"{md_escape(outcome.baseline)}", ""]
    return "\n".join(out) + "\n"


def gate_annotations(outcome) -> str:
    return "\n".join(
        f"::error file={escape_property(outcome.file)}::"
        + escape_data(f"gate {r.spec.metric_key} step {'last' if r.step == -1 else r.step}: {r.verdict}: {r.message}")
        for r in outcome.blocking)
