"""Plain-text renderers: tables and summaries for a terminal or a CI log.

- In: core results (registrations, a `Plan`, a shard's run results, gate outcomes).
- Out: strings; every checkout-controlled value passes `render.escape` first. A plan's
  accelerator hours (`hours_text`, `hours_summary`, shared with the Markdown plan) are
  formatted from `Plan.hours` as computed by `plan.hours`, two decimals.
- No I/O: the command line prints what these return.
- Refused: nothing: it formats values already checked.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ci_policy.errors import Diagnostic, UsageError
from ci_policy.render.durations import duration
from ci_policy.render.escape import label_list, line_start, one_line

if TYPE_CHECKING:  # the types of what is rendered; the modules that make them import them
    from ci_policy.config.stages import Stage
    from ci_policy.model.lint import LintReport
    from ci_policy.model.registry import Registration
    from ci_policy.model.snapshot import InvalidFile
    from ci_policy.plan.build import Plan, StagePlan
    from ci_policy.plan.explain import Explanation
    from ci_policy.plan.filerun import FilePlan
    from ci_policy.plan.hours import StageHours
    from ci_policy.plan.jobs import StageJobs
    from ci_policy.plan.outcome import Outcome
    from ci_policy.plan.partition import Shard
    from ci_policy.plan.picking import RunStage
    from ci_policy.plan.results import Attempt, FileResult, GateOutcome, ShardResult


def count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def command_text(stage: Stage) -> str:
    """`pytest -q tests/ (in sgl-kernel)`: a stage's command as shown (quoted as a POSIX shell would
    read it, for reading only: it runs without a shell) and where it runs."""
    where = stage.working_directory or "the repository root"
    return f"{shlex.join(stage.command)} (in {where})"


def commands_text(stages: Iterable[Stage]) -> str:
    """The stages with a command, one line each: what `registry` shows after the registrations."""
    lines = [f"{s.name} ({s.backend}): {command_text(s)}; est {duration(s.est_time or 0)}; selected by changes to "
             f"{', '.join(s.paths)}" for s in stages]
    return "" if not lines else "\n".join(["stages with a command (no marker registers to them):",
                                           *(f"  {one_line(line)}" for line in lines)])


def registry_text(registrations: Iterable[Registration]) -> str:
    rows: list[tuple[str, ...]] = [("FILE", "BACKEND", "SUITE", "EST", "LABELS", "NOTES")]
    for r in registrations:
        notes = []
        if r.implicit:
            notes.append("implicit")
        if r.nightly:
            notes.append("nightly")
        if r.disabled is not None:
            notes.append(f"disabled: {r.disabled}")
        where = r.file if r.line is None else f"{r.file}:{r.line}"
        rows.append((line_start(one_line(where)), r.backend, r.suite, duration(r.est_time),
                     ",".join(r.labels) or "-", one_line("; ".join(notes))))
    return table(rows)


def table(rows: Sequence[tuple[str, ...]], right: set[int] | None = None) -> str:
    right = right or set()
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [cell.rjust(w) if i in right else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(row, widths, strict=True))]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def split_phrase(s: StagePlan) -> str:
    """`makespan 1h5m0s / lower bound 1h4m0s (optimal)`: how good a running stage's split is."""
    proof = "optimal" if s.optimal else "not proven optimal"
    return f"makespan {duration(s.makespan)} / lower bound {duration(s.lower_bound)} ({proof})"


def plan_text(plan: Plan, jobs: StageJobs, *, warnings: bool = True) -> str:
    """The plan as text, with its stage jobs' waves and merged lanes (`jobs`, `plan.jobs.stage_jobs`);
    without `warnings` (github format, which annotates each) no `warning:` lines."""
    # Imported here: a stage job running from its per-stage plan loads no policy (tests/cli/
    # test_startup.py::test_a_stage_job_given_its_per_stage_plan_parses_no_configuration).
    from ci_policy.plan.policy import DIFF_EVENTS

    policy = plan.policy
    lines = [f"ci-policy plan: {policy.event}, cadence {policy.cadence}, trust {policy.trust}"]
    # As given (case and spaces kept): the canonical `raw_labels` are for matching only.
    lines.append(f"PR labels: {one_line(label_list(policy.pr_labels)) or '(none)'}")
    lines.append(f"included labels: {', '.join(policy.include_labels) or '(none)'}")
    flags = [name for name, on in (("bypass-fastfail", policy.bypass_fastfail),
                                   ("write-baseline", policy.write_baseline),
                                   ("admit-nightly", policy.admit_nightly)) if on]
    if flags:
        lines.append(f"flags: {', '.join(flags)}")
    if plan.diff.available:
        lines.append(f"diff: {len(plan.diff.files)} changed file(s)")
    elif policy.event in DIFF_EVENTS:
        lines.append(f"diff: unavailable ({plan.diff.reason})")
    lines.append("")
    rows: list[tuple[str, ...]] = [("STAGE", "BACKEND", "DECISION", "TESTS", "SHARDS", "EST WALL")]
    for s in plan.stages:
        rows.append((s.name, s.stage.backend, s.decision.upper(), str(len(s.tests)), str(len(s.shards)),
                     duration(s.wall_seconds) if s.decision == "run" else "-"))
    head, *stage_rows = table(rows, right={3, 4, 5}).split("\n")
    lines.append(head)
    for s, row in zip(plan.stages, stage_rows, strict=True):
        # Each reason on its own line under its stage's row: a table cell of them grows too wide.
        lines += [row] + [f"  {one_line(r)}" for r in s.reasons + s.notes]
    running = [s for s in plan.stages if s.decision == "run"]
    lines += waves_text(plan, jobs)
    if running:
        lines.append("")
        lines.append("shards:")
        for s in running:
            lines.append(f"  {s.name}: {split_phrase(s)}")
            if s.stage.command:
                for sh in s.shards:
                    lines.append(f"  {s.name}[{sh.index}] est {duration(sh.est_seconds)}, command: "
                                 f"{one_line(command_text(s.stage))}")
                continue
            for sh in s.shards:
                # One file a line: a shard of a big stage holds hundreds of files.
                lines.append(f"  {s.name}[{sh.index}] est {duration(sh.est_seconds)}, {count(len(sh.files), 'file')}:")
                lines += [f"    {line_start(one_line(f))}" for f in sh.files]
        sources = est_sources(plan)
        if "estimates" in sources:
            lines.append(f"est_time from the estimates file for {count(len(sources['estimates']), 'test')}:")
            lines += [f"  {line_start(one_line(f))}" for f in sources["estimates"]]
    if plan.invalid:
        lines.append("")
        lines.append(invalid_text(plan.invalid))
    lines.append("")
    lines.append("images: " + ", ".join(f"{backend}={action}" for backend, action in plan.images))
    lines += hours_text(plan)
    if warnings:
        lines += [f"warning: {one_line(w)}" for w in plan.warnings]
    return "\n".join(lines)


# How the plan names each group of skipped hours (`model.skips.SKIP_GROUPS`).
SKIP_TITLES = {"diff": "diff pruning", "labels": "labels", "cadence": "cadence", "trust": "trust"}


def hours_number(value: float) -> str:
    return f"{value:.2f}"


def hours_summary(plan: Plan) -> str:
    """`1.33 scheduled, 0.50 skipped (diff pruning 0.40, labels 0.10); cost 12.00 scheduled, 4.00 skipped`."""
    h = plan.hours
    groups = ", ".join(f"{SKIP_TITLES[r]} {hours_number(v)}" for r, v in h.by_reason)
    out = f"{hours_number(h.scheduled)} scheduled, {hours_number(h.skipped())} skipped" + (
        f" ({groups})" if groups else "")
    if h.scheduled_cost is not None and h.skipped_cost is not None:
        out += f"; cost {hours_number(h.scheduled_cost)} scheduled, {hours_number(h.skipped_cost)} skipped"
    return out


def hours_source(stage: StageHours, plan: Plan) -> str:
    """`4 accelerators per runner (accelerators[1]: runs_on h200)` or the default's."""
    noun = "accelerator" if stage.gpus == 1 else "accelerators"
    if stage.entry is None:
        return f"{stage.gpus} {noun} per runner (no accelerators entry matches)"
    entry = plan.config.accelerators[stage.entry]
    cost = f", cost {entry.cost_per_hour:g}/h" if entry.cost_per_hour is not None else ""
    return f"{stage.gpus} {noun} per runner (accelerators[{stage.entry}]: {entry.describe()}{cost})"


def hours_text(plan: Plan) -> list[str]:
    """The accelerator hours the plan schedules and skips, with each accelerator stage's share."""
    if not plan.hours.stages:
        return []
    lines = ["", f"accelerator hours (est_time x accelerators per runner): {hours_summary(plan)}"]
    for s in plan.hours.stages:
        lines.append(f"  {s.stage}: {hours_number(s.scheduled)} scheduled, {hours_number(s.skipped())} skipped; "
                     f"{hours_source(s, plan)}")
    return lines


def waves_of(plan: Plan, jobs: StageJobs) -> tuple[str, list[str], list[str]]:
    """What the plan says of its waves (a heading and one line per wave, where the configuration
    orders stages) and of its merged lanes (one line per stage), from its stage jobs."""
    heading, waves = "", []
    if any(stage.after for stage in plan.config.stages):
        heading = "waves, one after another: " + (
            "every wave runs, whatever the earlier ones did (bypass_fastfail)" if plan.policy.bypass_fastfail
            else "a failed wave skips the later ones (fast-fail; the bypass-fastfail label runs them all)")
        for wave, entries in enumerate(jobs.waves):
            stages = [s for s in plan.stages if s.stage.wave == wave]
            if stages:
                names = ", ".join(s.name + ("" if s.decision == "run" else " (skipped)") for s in stages)
                waves.append(f"{wave}: {names}; {count(len(entries), 'job')}")
    return heading, waves, [f"{m.stage}: {m.reason}" for m in jobs.merges]


def waves_text(plan: Plan, jobs: StageJobs) -> list[str]:
    """The waves, where the configuration orders stages, and the stages whose lanes were merged."""
    heading, waves, merges = waves_of(plan, jobs)
    lines = ["", heading, *(f"  {w}" for w in waves)] if heading else []
    if merges:
        lines += ["", "lanes merged:", *(f"  {m}" for m in merges)]
    return lines


def explain_text(explanation: Explanation, plan: Plan) -> str:
    """`plan --explain FILE`: the file's status, then each stage it is registered to and why."""
    e = explanation
    changed = {True: "; changed in this diff", False: "; not changed in this diff", None: ""}[e.changed]
    lines = [f"ci-policy plan --explain: {plan.policy.event}, cadence {plan.policy.cadence}, "
             f"trust {plan.policy.trust}{changed}",
             line_start(one_line(e.summary))]
    for s in e.stages:
        where = "implicit" if s.line is None else f"line {s.line}"
        lines.append(f"  {s.stage} ({s.backend}, {where}): {s.decision.upper()}")
        lines += [f"    stage: {one_line(r)}" for r in s.reasons]
        lines.append(f"    file: {one_line(s.why)}")
        source = ", from the estimates file" if s.est_source == "estimates" else ""
        runs = f"; shard {s.shard} of {s.shards}" if s.shard is not None else ""
        lines.append(f"    est_time {duration(s.est_time)}{source}{runs}")
    if e.invalid_stages:
        lines.append(f"  stages its readable registrations name: {', '.join(e.invalid_stages)}")
    lines += ["  " + line for d in e.diagnostics for line in diagnostic_text(d).split("\n")]
    return "\n".join(lines)


def invalid_text(invalid: Sequence[InvalidFile]) -> str:
    """The partial-plan section: each invalid file (and its stages), then its diagnostics, indented;
    then each partly read file (the stages it is still scheduled in), then the diagnostics of
    the registrations it lost."""
    lines: list[str] = []
    whole = [f for f in invalid if not f.kept]
    partly = [f for f in invalid if f.kept]
    if whole or not partly:
        lines.append(f"invalid (not scheduled): {count(len(whole), 'test file')}")
    for f in whole:
        stages = f" (stages: {', '.join(f.suites)})" if f.suites else ""
        lines.append(f"  {line_start(one_line(f.file))}{stages}")
        lines += ["    " + line for d in f.diagnostics for line in diagnostic_text(d).split("\n")]
    if partly:
        lines.append(f"partly read (invalid registrations not scheduled): {count(len(partly), 'test file')}")
    for f in partly:
        lines.append(f"  {line_start(one_line(f.file))} (still scheduled in: {', '.join(f.kept)})")
        lines += ["    " + line for d in f.diagnostics for line in diagnostic_text(d).split("\n")]
    return "\n".join(lines)


def est_sources(plan: Plan) -> dict[str, list[str]]:
    """source -> files of the running stages whose est_time came from it."""
    out: dict[str, list[str]] = {}
    for s in plan.stages:
        for r in s.tests:
            out.setdefault(r.est_source, []).append(f"{r.file}" if r.est_source != "estimates"
                                                    else f"{r.file}({s.name})")
    return out


def _attempt_note(attempt: Attempt) -> str:
    v = attempt.verdict
    return f"attempt {attempt.attempt}: {attempt.status}" + (f" ({v.kind}: {v.reason})" if v else "")


def failure(r: FileResult) -> tuple[str, str]:
    """(status, why) of a file that did not pass: its test failed, or an enforced gate did."""
    last = r.attempts[-1]
    if last.status == "pass" and r.gate is not None and r.gate_failed:
        n = len(r.gate.blocking)
        return "GATE-FAIL", f"{n} enforced metric gate coordinate(s) failed"
    return last.status.upper(), (f"{last.verdict.kind}: {last.verdict.reason}" if last.verdict else last.status)


def excused_text(r: FileResult) -> str:
    """A quarantined file's failure, as the summary and its annotation name it."""
    assert r.quarantine is not None
    status, why = failure(r)
    return one_line(f"{r.file} {status.lower()} after {len(r.attempts)} attempt(s) ({why}); {r.quarantine.describe()}")


def run_summary_text(result: ShardResult, *, warnings: bool = True) -> str:
    """A shard's summary; without `warnings` (github format, which annotates each) no WARNINGS section.
    A quarantined file's failure is listed under QUARANTINED (only when there is one), not FAILED."""
    passed = [r for r in result.results if r.passed]
    failed = [r for r in result.results if not r.ok]
    excused = [r for r in result.results if r.excused]
    retried = [r for r in result.results if len(r.attempts) > 1]
    lines = ["", f"==== ci-policy run: {result.stage} {result.shard_label} ===="]
    lines.append(f"PASSED ({len(passed)}):")
    for r in passed:
        last = r.attempts[-1]
        lines.append(f"  {r.file} elapsed={last.elapsed:.1f}s est={r.registration.est_time:g}s"
                     + (" (passed while quarantined)" if r.quarantine is not None else ""))
    lines.append(f"FAILED ({len(failed)}):")
    for r in failed:
        status, why = failure(r)
        lines.append(f"  {r.file} {status} after {len(r.attempts)} attempt(s) ({why})")
    if excused:
        lines.append(f"QUARANTINED ({len(excused)}, failed, not failing the run):")
        lines += [f"  {excused_text(r)}" for r in excused]
    lines.append(f"RETRIED ({len(retried)}):")
    for r in retried:
        lines.append(f"  {r.file}: " + "; ".join(_attempt_note(a) for a in r.attempts))
    if result.not_run:
        lines.append(f"NOT RUN ({len(result.not_run)}, fast-fail):")
        lines += [f"  {reg.file}" for reg in result.not_run]
    if warnings and result.warnings:
        lines.append(f"WARNINGS ({len(result.warnings)}):")
        lines += [f"  {w}" for w in result.warnings]
    lines.append("RESULT: " + ("PASS" if result.ok else "FAIL"))
    return "\n".join(lines)


def shard_header(stage_plan: RunStage, shard: Shard) -> str:
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


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def gate_rows(outcome: GateOutcome) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for r in outcome.results:
        b = r.band
        verdict: str = r.verdict
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


def gate_text(outcome: GateOutcome) -> str:
    head = f"ci-policy gate: {outcome.file} ({outcome.registration.backend}, {outcome.registration.suite})"
    if not outcome.results:
        return f"{head}: {outcome.baseline}"
    rows = [("METRIC", "STEP", "VALUE", "BASELINE", "BAND", "VERDICT", "DETAIL")] + gate_rows(outcome)
    status = "trusted" if outcome.trusted else "NOT trusted"
    lines = [head, table(rows), f"run: {status}; baseline: {outcome.baseline}"]
    if outcome.blocking:
        lines.append(f"FAILED: {len(outcome.blocking)} enforced gate coordinate(s) failed")
    return "\n".join(lines)


def usage_error_text(command: str, err: UsageError) -> str:
    """A `UsageError`: `ci-policy COMMAND: error: SOURCE: MESSAGE`, the hint on its own line."""
    where = f"{err.source}: " if err.source else ""
    return with_hint(f"ci-policy {command}: error: {where}{one_line(err.message)}", err.hint)


def file_run_text(plan: FilePlan) -> str:
    rows = [("file", plan.file), ("stage", f"{plan.suite} ({plan.hw})"), ("runs on", ", ".join(plan.runs_on)),
            ("image", plan.container_image or "-"), ("container options", plan.container_options or "-"),
            ("timeout", duration(plan.timeout_seconds))]
    if plan.choice is not None:
        rows.append(("chosen by", f"{plan.choice.by} [{', '.join(plan.choice.prefer)}], among "
                                  f"{', '.join(plan.choice.among)}"))
    return "\n".join(f"{name}: {one_line(value)}" for name, value in rows)


def code_title(err: Diagnostic) -> str:
    """`CP201 marker-not-module-level`, or "" for a diagnostic without a code."""
    if err.code is None:
        return ""
    return f"{err.code} {err.name}" if err.name else err.code


def diagnostic_text(err: Diagnostic) -> str:
    """`path:line:col: [warning: ]CODE name: message` (no location when none is known), then the hint."""
    label = "warning: " if err.severity == "warning" else ""
    code = f"{code_title(err)}: " if err.code else ""
    where = err.location()
    head = f"{line_start(one_line(where))}: " if where else ""
    return with_hint(f"{head}{label}{code}{one_line(err.message)}", err.hint)


def with_hint(text: str, hint: str | None) -> str:
    """A message line, then its hint on the next line, indented: how to fix what it says."""
    return f"{text}\n    hint: {one_line(hint)}" if hint else text


def lint_summary(report: LintReport) -> str:
    """`ci-policy lint: OK|FAILED: N errors, N warnings (N test files, N registrations, N gates)`."""
    snap = report.snapshot
    counts = f"{count(len(report.errors), 'error')}, {count(len(report.warnings), 'warning')}"
    if report.suppressed:
        counts += f", {len(report.suppressed)} suppressed"
    if snap is not None:
        counts += (f" ({count(len(snap.files), 'test file')}, "
                   f"{count(len(snap.registrations), 'registration')}, "
                   f"{count(len(snap.gates), 'gate')})")
    return f"ci-policy lint: {'OK' if report.ok else 'FAILED'}: {counts}"


def outcome_text(outcome: Outcome) -> str:
    """`ci-policy result`: PASS or FAIL, each needed job's result, then the reasons or why it passed."""
    lines = [f"ci-policy result: {'PASS' if outcome.ok else 'FAIL'}"]
    lines += [f"  {one_line(job.name)}: {job.result}" for job in outcome.jobs]
    lines += [f"fail: {one_line(reason)}" for reason in outcome.failures]
    if outcome.ok:
        lines.append(f"pass: {one_line(outcome.summary)}")
    return "\n".join(lines)
