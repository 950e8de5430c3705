"""Markdown renderers: the step summary of a plan, a shard's run and its metric gates.

- In: core results (a `Plan`, a shard's run results, gate outcomes).
- Out: Markdown strings; every checkout-controlled value passes `md_escape` (and
  mermaid names `mermaid_name`/`bar_names`) first. The plan's accelerator hours are a
  line and a table under the stages (`render.text.hours_summary`).
- Refused: nothing: it formats values already checked; what the checkout controls is escaped.
- Sized for big repositories (a step summary is at most 1 MiB): each running stage has
  one Gantt chart of at most `CHART_BARS` bars, each shard at most
  `min(SHARD_BARS, CHART_BARS // shards)` (at least 1): its longest files one bar
  each, the rest one bar `+N files`; bar names are the shortest distinguishing path
  suffixes (`bar_names`); a shard's bars run one after another from 0 (`gantt`). Each
  shard's files are listed in a collapsed `<details>` block, at most `SHARD_LIST` of
  them (the rest counted, with the `ci-policy list` command that prints them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ci_policy.plan.build import Plan
from ci_policy.plan.jobs import StageJobs
from ci_policy.plan.policy import DIFF_EVENTS
from ci_policy.render.durations import duration
from ci_policy.render.escape import bar_names, label_list, md_escape, mermaid_name
from ci_policy.render.text import (
    code_title,
    command_text,
    est_sources,
    excused_text,
    failure,
    gate_rows,
    hours_number,
    hours_source,
    hours_summary,
    split_phrase,
    waves_of,
)

if TYPE_CHECKING:  # what `run`, `gate` and `result` render: their modules import them (a plan does not:
    # tests/cli/test_startup.py::test_a_plan_imports_no_module_of_running_it)
    from ci_policy.plan.outcome import Outcome
    from ci_policy.plan.results import GateOutcome, ShardResult

CHART_BARS = 200
SHARD_BARS = 25
SHARD_LIST = 300


def gantt(stage: str, shards: Sequence[tuple[int, Sequence[tuple[str, float]]]]) -> list[str]:
    """One stage's mermaid Gantt chart: per shard its longest files as bars, the rest as one bar.

    `shards`: (index, [(file, est_time), ...] longest first, as a shard holds them). A shard's
    bars run one after another: each has a task id (`s<shard>t<bar>`) and starts `after` the
    previous one, lasting its est_time in seconds. Mermaid reads an absolute start under
    `dateFormat X` as milliseconds (`:5, 10` is drawn from 0 to 10 seconds), so only the first
    bar of a shard names its start, 0, which is the same in either unit.
    """
    budget = max(1, min(SHARD_BARS, CHART_BARS // max(1, len(shards))))
    drawn = [files if len(files) <= budget else files[:budget - 1] for _, files in shards]
    names = bar_names([f for files in drawn for f, _ in files])
    out = ["```mermaid", "gantt", f"    title {mermaid_name(stage)} shards (estimated seconds)",
           "    dateFormat X", "    axisFormat %s"]
    for (index, files), bars in zip(shards, drawn, strict=True):
        out.append(f"    section shard {index}")
        rest = files[len(bars):]
        # Never a file's name: a bar name holds no space or `+` (see escape.mermaid_name).
        tasks = [(names[f], est) for f, est in bars]
        if rest:
            tasks.append((f"+{len(rest)} files of shard {index}", sum(est for _, est in rest)))
        for k, (name, est) in enumerate(tasks):
            start = "0" if k == 0 else f"after s{index}t{k - 1}"
            out.append(f"    {name} :s{index}t{k}, {start}, {_seconds(est)}s")
    out.append("```")
    return out


def _seconds(value: float) -> str:
    """A duration mermaid reads (`\\d+(\\.\\d+)?`, no exponent), to the millisecond."""
    return f"{round(value, 3):.3f}".rstrip("0").rstrip(".")


def shard_details(stage: str, index: int, files: Sequence[tuple[str, float]]) -> list[str]:
    """A shard's files, one a line with its est_time, in a collapsed `<details>` block."""
    total = duration(sum(est for _, est in files))
    noun = "file" if len(files) == 1 else "files"
    out = [f"<details><summary>shard {index}: {len(files)} {noun}, est {total}</summary>", ""]
    out += [f"- {md_escape(f)} ({duration(est)})" for f, est in files[:SHARD_LIST]]
    if len(files) > SHARD_LIST:
        out.append(f"- … and {len(files) - SHARD_LIST} more; ci-policy list --stage {md_escape(stage)} "
                   f"--shard {index} lists them all")
    out += ["", "</details>"]
    return out


def plan_markdown(plan: Plan, jobs: StageJobs) -> str:
    """The plan as Markdown (the step summary), with its stage jobs' waves and merged lanes (`jobs`)."""
    policy = plan.policy
    out = ["## ci-policy plan", ""]
    out.append(f"- **Event:** {md_escape(policy.event)}, **cadence:** {md_escape(policy.cadence)}, "
               f"**trust:** {policy.trust}")
    out.append(f"- **PR labels:** {md_escape(label_list(policy.pr_labels)) or '(none)'}")
    out.append(f"- **Included labels:** {md_escape(', '.join(policy.include_labels)) or '(none)'}")
    if plan.diff.available:
        out.append(f"- **Diff:** {len(plan.diff.files)} changed file(s)")
    elif policy.event in DIFF_EVENTS:
        out.append(f"- **Diff:** unavailable ({md_escape(plan.diff.reason)}); every runnable stage runs")
    out.append("- **Images:** " + ", ".join(f"{b} {a}" for b, a in plan.images))
    out.append("")
    out.append("| Stage | Backend | Decision | Tests | Shards | Est. wall | Reasons |")
    out.append("|---|---|---|---:|---:|---:|---|")
    for s in plan.stages:
        mark = "✅ run" if s.decision == "run" else "⏭️ skip"
        wall = duration(s.wall_seconds) if s.decision == "run" else "-"
        out.append(f"| {md_escape(s.name)} | {s.stage.backend} | {mark} | {len(s.tests)} | {len(s.shards)} "
                   f"| {wall} | {'<br>'.join(md_escape(r) for r in s.reasons + s.notes)} |")
    if plan.hours.stages:
        out += ["", f"**Accelerator hours** (est_time × accelerators per runner): {md_escape(hours_summary(plan))}",
                "", "| Stage | Scheduled h | Skipped h | Accelerators |", "|---|---:|---:|---|"]
        out += [f"| {md_escape(s.stage)} | {hours_number(s.scheduled)} | {hours_number(s.skipped())} "
                f"| {md_escape(hours_source(s, plan))} |" for s in plan.hours.stages]
    heading, waves, merges = waves_of(plan, jobs)
    if heading:
        out += ["", f"**{md_escape(heading[0].upper() + heading[1:])}**", "",
                *(f"- wave {md_escape(w)}" for w in waves)]
    if merges:
        out += ["", "**Lanes merged** (GitHub runs at most 256 jobs per matrix)", "",
                *(f"- {md_escape(m)}" for m in merges)]
    for s in plan.stages:
        if s.decision != "run" or not s.shards:
            continue
        est = {r.file: r.est_time for r in s.tests}
        out += ["", f"### {md_escape(s.name)}", "", f"**Split:** {split_phrase(s)}", ""]
        if s.stage.command:  # one shard: its command, no file to list
            out += [f"**Command:** {md_escape(command_text(s.stage))}, est {duration(s.est_seconds)}"]
            continue
        out += gantt(s.name, [(sh.index, [(f, est[f]) for f in sh.files]) for sh in s.shards])
        for sh in s.shards:
            out += ["", *shard_details(s.name, sh.index, [(f, est[f]) for f in sh.files])]
    sources = est_sources(plan)
    if "estimates" in sources:
        out += ["", f"est_time from the estimates file for {len(sources['estimates'])} test(s); "
                f"{len(sources.get('literal', []))} from literals, {len(sources.get('implicit', []))} implicit."]
    whole = [f for f in plan.invalid if not f.kept]
    partly = [f for f in plan.invalid if f.kept]
    for title, group in ((f"**Invalid, not scheduled: {len(whole)} file(s); the plan is incomplete**", whole),
                         (f"**Partly read, invalid registrations not scheduled: {len(partly)} file(s); "
                          "the plan is incomplete**", partly)):
        if not group:
            continue
        out += ["", title, ""]
        for bad in group:
            stages = (f" (still scheduled in: {md_escape(', '.join(bad.kept))})" if bad.kept
                      else f" (stages: {md_escape(', '.join(bad.suites))})" if bad.suites else "")
            out.append(f"- {md_escape(bad.file)}{stages}")
            for d in bad.diagnostics:
                where = f"line {d.line}: " if d.line is not None else ""
                code = f"{md_escape(code_title(d))}: " if d.code else ""
                out.append(f"  - {where}{code}{md_escape(d.message)}")
    if plan.warnings:
        out += ["", "**Warnings**", ""] + [f"- {md_escape(w)}" for w in plan.warnings]
    return "\n".join(out) + "\n"


def run_summary_markdown(result: ShardResult) -> str:
    out = [f"## ci-policy run: {md_escape(result.stage)} {result.shard_label}", "",
           "| File | Status | Attempts | Elapsed | Est. | |", "|---|---|---:|---:|---:|---|"]
    for r in result.results:
        last = r.attempts[-1]
        est = r.registration.est_time
        over = "⚠️ over est_time" if last.elapsed > est else ""
        status = last.status.upper() if r.passed or last.status != "pass" else failure(r)[0]
        status += " (quarantined)" if r.quarantine is not None else ""
        out.append(f"| {md_escape(r.file)} | {status} | {len(r.attempts)} | "
                   f"{duration(last.elapsed)} | {duration(est)} | {over} |")
    for reg in result.not_run:
        out.append(f"| {md_escape(reg.file)} | NOT RUN | 0 | - | {duration(reg.est_time)} | fast-fail |")
    quarantined = []
    for r in result.results:
        if r.excused:
            quarantined.append(f"- ⚠️ {md_escape(excused_text(r))}")
        elif r.quarantine is not None and r.passed:
            quarantined.append(f"- ✅ {md_escape(r.file)} passed while {md_escape(r.quarantine.describe())}")
    if quarantined:
        out += ["", "**Quarantined** (a failure is reported, not failing the run)", "", *quarantined]
    if result.warnings:
        out += ["", *(f"- ⚠️ {md_escape(w)}" for w in result.warnings)]
    gates = "".join(gate_markdown(r.gate) for r in result.results if r.gate is not None)
    return "\n".join(out) + "\n" + ("\n" + gates if gates else "")


def gate_markdown(outcome: GateOutcome) -> str:
    if not outcome.results:
        return ""
    out = [f"### Metric gates: {md_escape(outcome.file)}", "",
           "| Metric | Step | Value | Baseline | Band | Verdict | Detail |", "|---|---:|---:|---:|---|---|---|"]
    for row in gate_rows(outcome):
        out.append("| " + " | ".join(md_escape(c) for c in row) + " |")
    out += ["", f"Run {'trusted' if outcome.trusted else '**not trusted**'}; baseline: "
            f"{md_escape(outcome.baseline)}", ""]
    return "\n".join(out) + "\n"


def outcome_markdown(outcome: Outcome) -> str:
    """`ci-policy result`'s job summary: each needed job's result, then the reasons or why it passed."""
    lines = [f"## ci-policy result: {'✅ pass' if outcome.ok else '❌ fail'}", "", "| Job | Result |", "|---|---|"]
    lines += [f"| {md_escape(job.name)} | {job.result} |" for job in outcome.jobs]
    lines.append("")
    lines += [f"- {md_escape(reason)}" for reason in outcome.failures] or [md_escape(outcome.summary)]
    return "\n".join(lines) + "\n"
