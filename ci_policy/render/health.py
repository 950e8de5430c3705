"""`ci-policy report` rendered: the CI health report (`model.health.HealthReport`) as text, Markdown or JSON.

- In: a `HealthReport`.
- Out: `report_text` (aligned columns), `report_markdown` (tables; Mermaid `xychart-beta` charts
  of runner-hours, accelerator hours saved by skipping, and flaky runs per week; a Gantt chart
  of the slowest stage's latest run, each attempt of a shard starting where the previous one
  ended: the first bar of a shard at 0, each next one `after` the previous bar's id, so no bar
  is drawn from 0 but the first; the hours planned and saved per week and skip group; the
  quarantine proposals as a YAML block; each configured quarantine entry ready to leave, with
  the YAML to delete, or still needed), `report_json` (the codec's encoding, schema
  `report`, two-space indented).
- Every file name, stage and URL from the history is escaped for its format
  (`escape.md_escape`; Gantt bar names through `escape.bar_names`).
- Refused: nothing: it formats a report already computed; every value from the history is escaped
  for its format.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ci_policy.model.health import HealthReport
from ci_policy.model.release import QuarantineStatus
from ci_policy.model.skips import SKIP_GROUPS
from ci_policy.read.codec import encode
from ci_policy.render.durations import duration
from ci_policy.render.escape import bar_names, md_escape, mermaid_name, one_line


def _num(value: float | None, places: int = 3) -> str:
    return "-" if value is None else f"{value:.{places}f}"


def _pct(rate: float) -> str:
    return f"{rate * 100:.1f}%"


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _groups(by_group: Mapping[str, float]) -> str:
    return ", ".join(f"{g} {_num(h)}" for g, h in by_group.items()) or "-"


def _saved_text(r: HealthReport) -> list[str]:
    if r.skipped_hours is None:
        return []
    out = [f"Accelerator hours planned: {_num(r.scheduled_hours)} scheduled, {_num(r.skipped_hours)} saved by "
           f"skipping ({_groups(r.skipped_by_group)}):"]
    return out + _table([["week", "plans", "scheduled", "saved", "by group"]]
                        + [[w.week, str(w.plans), _num(w.scheduled_hours), _num(w.skipped_hours), _groups(w.by_group)]
                           for w in r.plan_weeks])


def _saved_markdown(r: HealthReport) -> list[str]:
    if r.skipped_hours is None:
        return []
    out = ["", "### Accelerator hours scheduled and saved", "",
           f"The window's plans scheduled {_num(r.scheduled_hours)} accelerator hours and saved "
           f"{_num(r.skipped_hours)} by skipping ({_groups(r.skipped_by_group)}).", "",
           "| Week | Plans | Scheduled | Saved | " + " | ".join(g.capitalize() for g in SKIP_GROUPS) + " |",
           "|---|---:|---:|---:|" + "---:|" * len(SKIP_GROUPS)]
    out += [f"| {w.week} | {w.plans} | {_num(w.scheduled_hours)} | {_num(w.skipped_hours)} | "
            + " | ".join(_num(w.by_group.get(g)) for g in SKIP_GROUPS) + " |" for w in r.plan_weeks]
    weeks = [w.week for w in r.plan_weeks]
    out += ["", *_xychart("Accelerator hours saved by skipping per week", weeks, "hours",
                          [w.skipped_hours for w in r.plan_weeks], "bar")]
    return out


_VERDICT = {"ready": "ready to leave quarantine", "failing": "still needed: failing",
            "not-run": "still needed: not run"}


def _where(q: QuarantineStatus) -> str:
    return one_line(q.file) + (f" in {one_line(q.stage)}" if q.stage else "")


def _why(q: QuarantineStatus) -> str:
    if q.status == "ready":
        return f"passed all {q.runs} run(s)"
    if q.status == "failing":
        return f"failed in {q.failed_runs} of {q.runs} run(s), last run {q.last_failure}"
    return "no run"


def _release_text(r: HealthReport) -> list[str]:
    if r.quarantine is None:
        return []
    out = ["", f"Quarantine (each entry over the last {r.release_after} days):"]
    for q in r.quarantine:
        line = f", line {q.line}" if q.line else ""
        out.append(f"  {_where(q)} (until {q.until}{line}): {_VERDICT[q.status]} ({_why(q)})")
        if q.status == "ready":
            out += [f"    delete: {text}" for text in q.entry.splitlines()]
    return out + (["  no entries"] if not r.quarantine else [])


def _release_markdown(r: HealthReport) -> list[str]:
    if r.quarantine is None:
        return []
    out = ["", "### Quarantine", "", f"Each `quarantine:` entry over the last {r.release_after} days.", ""]
    if not r.quarantine:
        return [*out, "No entries."]
    out += ["| File | Stage | Until | Status | Runs |", "|---|---|---|---|---|"]
    out += [f"| {md_escape(q.file)} | {md_escape(q.stage or 'every stage')} | {q.until} | {_VERDICT[q.status]} | "
            f"{md_escape(_why(q))} |" for q in r.quarantine]
    ready = [q for q in r.quarantine if q.status == "ready"]
    if ready:
        out += ["", "Ready to leave: delete from `quarantine:` in `.github/ci-policy.yml`:", "", "```yaml",
                *(line for q in ready for line in q.entry.splitlines()), "```"]
    return out


def _run(run_id: str, url: str | None) -> str:
    return f"run {run_id}" + (f" ({url})" if url else "")


def report_text(r: HealthReport) -> str:
    out = [f"CI health {r.since} to {r.until}" + (f" ({r.repository})" if r.repository else "")
           + f": {r.runs} run(s), {r.attempts} attempt(s)", ""]
    out.append("Runner-hours per week and stage:")
    if r.weeks:
        out += _table([["week", "stage", "runs", "runner-h", "gpu-h", "cost"]]
                      + [[w.week, one_line(w.stage), str(w.runs), _num(w.runner_hours), _num(w.gpu_hours),
                          _num(w.cost, 2)] for w in r.weeks])
        out.append("Totals per stage:")
        out += _table([[one_line(s.stage), _num(s.runner_hours), _num(s.gpu_hours), _num(s.cost, 2)]
                       for s in r.stages])
    else:
        out.append("  no attempts in the window")
    out += [*_saved_text(r), *(f"Note: {n}" for n in r.notes), ""]
    out.append("Slowest files (mean of passing attempts):")
    out += _table([[one_line(f.file), one_line(f.stage), f"mean {duration(f.mean_seconds)}",
                    f"max {duration(f.max_seconds)}", f"{f.passes} pass(es)"] for f in r.slowest]) or ["  none"]
    out += ["", "est_time drift (median of passing attempts against est_time, outside 0.8 to 1.25):"]
    out += _table([[one_line(d.file), one_line(d.stage), f"est {duration(d.est_time)}",
                    f"measured {duration(d.measured)}", "x-" if d.ratio is None else f"x{d.ratio:.2f}",
                    f"first week {duration(d.first_week)}", f"last week {duration(d.last_week)}"]
                   for d in r.drift]) or ["  none"]
    out += ["", "Flaky files:"]
    for f in r.flaky:
        out.append(f"  {one_line(f.file)}: flaky in {f.flaky_runs} of {f.runs} runs ({_pct(f.flake_rate)}; "
                   f"{f.retried} retried, {f.same_commit} same commit); first {_run(f.first.run_id, f.first.url)}, "
                   f"last {_run(f.last.run_id, f.last.url)}")
    if not r.flaky:
        out.append("  none")
    if r.slowest_run is not None:
        s = r.slowest_run
        out += ["", f"Slowest stage: {one_line(s.stage)}, latest {_run(s.run_id, s.url)}, longest shard "
                    f"{duration(s.seconds)}:"]
        out += _table([[f"shard {b.shard}", one_line(b.file), f"attempt {b.attempt}", b.status,
                        f"{duration(b.start)} to {duration(b.start + b.elapsed)}"] for b in s.bars])
    if r.proposals is not None:
        out += ["", f"Quarantine proposals (flake rate >= {_pct(r.threshold or 0)}):"]
        out += ([f"  {line}" for line in (r.quarantine_yaml or "").splitlines()] if r.proposals else ["  none"])
    out += _release_text(r)
    return "\n".join(out) + "\n"


def _xychart(title: str, weeks: list[str], axis: str, values: list[float], kind: str) -> list[str]:
    labels = ", ".join(json.dumps(w[5:]) for w in weeks)
    return ["```mermaid", "xychart-beta", f"    title {json.dumps(title)}", f"    x-axis [{labels}]",
            f"    y-axis {json.dumps(axis)}", f"    {kind} [{', '.join(f'{v:g}' for v in values)}]", "```"]


def _gantt(r: HealthReport) -> list[str]:
    s = r.slowest_run
    assert s is not None
    names = bar_names([b.file for b in s.bars])
    out = ["```mermaid", "gantt", f"    title {mermaid_name(s.stage)} run {mermaid_name(s.run_id)} (seconds)",
           "    dateFormat X", "    axisFormat %s"]
    shard = None
    for i, b in enumerate(s.bars):
        if b.shard != shard:
            out.append(f"    section shard {b.shard}")
            start = "0"
            shard = b.shard
        else:
            start = f"after b{i - 1}"
        tags = "crit, " if b.status != "pass" else ""
        name = names[b.file] + (f" try {b.attempt}" if b.attempt > 1 else "")
        # A bar of at least 1 s: Mermaid draws a zero-length task as a point.
        out.append(f"    {name} :{tags}b{i}, {start}, {max(b.elapsed, 1):g}s")
    out.append("```")
    return out


def report_markdown(r: HealthReport) -> str:
    where = f" of `{md_escape(r.repository)}`" if r.repository else ""
    out = [f"## CI health: {r.since} to {r.until}", "", f"{r.runs} run(s), {r.attempts} attempt(s){where}.", "",
           "### Runner-hours per week", ""]
    if r.weeks:
        out += ["| Week | Stage | Runs | Runner-hours | GPU-hours | Cost |", "|---|---|---:|---:|---:|---:|"]
        out += [f"| {w.week} | {md_escape(w.stage)} | {w.runs} | {_num(w.runner_hours)} | {_num(w.gpu_hours)} | "
                f"{_num(w.cost, 2)} |" for w in r.weeks]
        weeks = sorted({w.week for w in r.weeks})
        total = [round(sum(w.runner_hours for w in r.weeks if w.week == week), 3) for week in weeks]
        out += ["", *_xychart("Runner-hours per week", weeks, "hours", total, "bar"), "",
                "| Stage | Runner-hours | GPU-hours | Cost |", "|---|---:|---:|---:|"]
        out += [f"| {md_escape(s.stage)} | {_num(s.runner_hours)} | {_num(s.gpu_hours)} | {_num(s.cost, 2)} |"
                for s in r.stages]
    else:
        out.append("No attempts in the window.")
    out += _saved_markdown(r)
    out += ["", *(f"- {md_escape(n)}" for n in r.notes), *([""] if r.notes else []), "### Slowest files", ""]
    if r.slowest:
        out += ["| File | Stage | Mean | Max | Passes |", "|---|---|---:|---:|---:|"]
        out += [f"| {md_escape(f.file)} | {md_escape(f.stage)} | {duration(f.mean_seconds)} | "
                f"{duration(f.max_seconds)} | {f.passes} |" for f in r.slowest]
    else:
        out.append("No passing attempt in the window.")
    out += ["", "### est_time drift", "", "Median of passing attempts against est_time, outside 0.8 to 1.25.", ""]
    if r.drift:
        out += ["| File | Stage | est_time | Measured | Ratio | First week | Last week |",
                "|---|---|---:|---:|---:|---:|---:|"]
        out += [f"| {md_escape(d.file)} | {md_escape(d.stage)} | {duration(d.est_time)} | {duration(d.measured)} | "
                f"{'-' if d.ratio is None else f'{d.ratio:.2f}'} | {duration(d.first_week)} | "
                f"{duration(d.last_week)} |" for d in r.drift]
    else:
        out.append("No drift.")
    out += ["", "### Flaky tests", ""]
    if r.flaky:
        out += ["| File | Flaky runs | Rate | Retried | Same commit | First | Last |",
                "|---|---:|---:|---:|---:|---|---|"]
        out += [f"| {md_escape(f.file)} | {f.flaky_runs} of {f.runs} | {_pct(f.flake_rate)} | {f.retried} | "
                f"{f.same_commit} | {_link(f.first.run_id, f.first.url)} | {_link(f.last.run_id, f.last.url)} |"
                for f in r.flaky]
    else:
        out.append("No flaky test.")
    if r.flaky_weeks:
        out += ["", *_xychart("Flaky runs per week", [w.week for w in r.flaky_weeks], "flaky runs",
                              [w.flaky_runs for w in r.flaky_weeks], "bar")]
    if r.slowest_run is not None:
        s = r.slowest_run
        out += ["", f"### Slowest stage: {md_escape(s.stage)}", "",
                f"Its latest run, {_link(s.run_id, s.url)}: longest shard {duration(s.seconds)}; each attempt "
                "starts where the previous one ended, failed attempts in red.", "", *_gantt(r)]
    if r.proposals is not None:
        out += ["", "### Quarantine proposals", "", f"Flake rate at least {_pct(r.threshold or 0)}."]
        out += (["", "Add to `.github/ci-policy.yml`:", "", "```yaml", *(r.quarantine_yaml or "").splitlines(), "```"]
                if r.proposals else ["", "None."])
    out += _release_markdown(r)
    return "\n".join(out) + "\n"


def _link(run_id: str, url: str | None) -> str:
    return f"[run {md_escape(run_id)}]({url})" if url else f"run {md_escape(run_id)}"


def report_json(r: HealthReport) -> str:
    return json.dumps(encode(r), indent=2) + "\n"
