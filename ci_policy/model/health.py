"""CI health over the test history: where the hours went, what drifted, what is flaky (pure).

- In: the attempts of the store (`model.outcomes.Outcome`), the window (`since`, `until`: dates,
  both included), the repository for run links, and optionally `costs`: runner cost by stage
  name or runner label (`RunnerCost`: GPUs per runner, cost per runner-hour); the flake-rate
  threshold and the fewest runs a quarantine proposal needs.
- Out: `health_report(...)` a `HealthReport`, declared through `read.codec` (its JSON form and
  schema `report` are derived from it): runner-hours per ISO week (Monday) and stage, with
  GPU-hours and cost where `costs` names the stage or one of its runner labels; totals per
  stage; the slowest files (mean of passing attempts); est_time drift (median of passing
  attempts against the est_time they ran with, and that median in the window's first and last
  week); flaky files (`model.flaky`) and flaky runs per week; the slowest stage's latest run as
  bars one after another per shard; quarantine proposals when asked (`quarantine_yaml`).
- `parse_since("30d")`: days of a `--since` (`Nd` or `Nw`); anything else is CP702 (`option`
  names the option: `--release-after` takes the same spans).
- Quarantine: given the configuration's entries (`quarantine`, None: no configuration), each
  entry's status over the last `release_days` days of the window's end (`model.release`): ready
  to leave quarantine, still failing, or not run.
- Hours saved by skipping: from `plans` (`model.outcomes.PlanHours`, one per workflow run
  attempt whose plan was imported, pull request runs included), the accelerator hours each
  plan scheduled and skipped, per ISO week of the plan and per skip group (diff, labels,
  cadence, trust); without a plan in the window `skipped_hours` is null and a note says so.
- Every number is rounded (hours to 3 places, seconds to 1), so a report is the same bytes
  for the same history.
- Refused: a `--since` that is not `Nd` or `Nw` (`InputError` CP702, located at `--since`); the rows
  are the store's, checked when they were recorded or imported.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from ci_policy.config.quarantined import Quarantine
from ci_policy.errors import InputError
from ci_policy.model.flaky import FlakyFile, flaky_files, flaky_runs, run_url
from ci_policy.model.outcomes import Outcome, PlanHours
from ci_policy.model.release import RELEASE_DAYS, QuarantineStatus, release_status, yaml_text
from ci_policy.model.skips import SKIP_GROUPS
from ci_policy.read.declare import document, spec

DRIFT_BAND = (0.8, 1.25)   # measured / est_time outside this is drift
QUARANTINE_DAYS = 14
SLOWEST = 10
SKIPPED_NOTE = ("hours saved by skipping: no plan in the window (`ci-policy history import` reads them from the "
                "runs' plan artifacts)")
_SINCE = re.compile(r"([1-9][0-9]{0,3})([dw])")


@dataclass(frozen=True)
class RunnerCost:
    """What one runner-hour of a stage costs: its GPUs, and its price per runner-hour (None: unknown)."""

    gpus: int = 1
    cost_per_hour: float | None = None


@document
class WeekHours:
    week: str = spec(description="The ISO week's Monday (YYYY-MM-DD).")
    stage: str
    runs: int = spec(minimum=0, description="Workflow runs with an attempt of the stage that week.")
    runner_hours: float = spec(minimum=0, description="Sum of the attempts' wall time, in hours.")
    gpu_hours: float | None = spec(description="runner_hours times the GPUs of its runner; null: no cost given.")
    cost: float | None = spec(description="runner_hours times the cost per runner-hour; null: no price given.")


@document
class WeekPlans:
    week: str = spec(description="The ISO week's Monday (YYYY-MM-DD) the plans were made in.")
    plans: int = spec(minimum=0, description="Plans (workflow run attempts) made that week.")
    scheduled_hours: float = spec(minimum=0, description="Accelerator hours the plans scheduled.")
    skipped_hours: float = spec(minimum=0, description="Accelerator hours the plans skipped: saved.")
    by_group: Mapping[str, float] = spec(minimum=0, description="The skipped hours by group: diff, labels, "
                                                                "cadence, trust (a group none skipped: absent).")


@document
class StageHours:
    stage: str
    runner_hours: float = spec(minimum=0)
    gpu_hours: float | None
    cost: float | None


@document
class SlowFile:
    file: str
    stage: str
    passes: int = spec(minimum=1, description="Passing attempts in the window.")
    mean_seconds: float = spec(minimum=0)
    max_seconds: float = spec(minimum=0)


@document
class Drift:
    file: str
    stage: str
    est_time: float = spec(minimum=0, description="The est_time of its latest attempt.")
    measured: float = spec(minimum=0, description="Median wall time of its passing attempts.")
    ratio: float | None = spec(description="measured / est_time (null for an est_time of 0).")
    first_week: float = spec(minimum=0, description="The median in the first week it passed in the window.")
    last_week: float = spec(minimum=0, description="The median in the last week it passed in the window.")


@document
class WeekCount:
    week: str
    flaky_runs: int = spec(minimum=0, description="Flaky (file, run) pairs whose run started that week.")


@document
class Bar:
    shard: int = spec(minimum=0)
    file: str
    attempt: int = spec(minimum=1)
    status: str
    start: float = spec(minimum=0, description="Seconds from the shard's start: where the previous bar ended.")
    elapsed: float = spec(minimum=0)


@document
class SlowestRun:
    stage: str
    run_id: str
    url: str | None
    seconds: float = spec(minimum=0, description="The longest shard's wall time.")
    bars: tuple[Bar, ...]


@document
class Proposal:
    file: str
    stage: str | None = spec(description="The stage, when the file ran in one stage only.")
    reason: str
    until: str = spec(description="The quarantine's expiry (YYYY-MM-DD).")


@document(kw_only=True)
class HealthReport:
    schema: Literal[1] = spec(default=1, description="The version of this document's format.")
    since: str = spec(description="The window's first day (YYYY-MM-DD, UTC).")
    until: str = spec(description="The window's last day.")
    repository: str | None = spec(description="OWNER/REPO the run links name; null: no links.")
    runs: int = spec(minimum=0, description="Workflow runs with an attempt in the window.")
    attempts: int = spec(minimum=0, description="Test attempts in the window.")
    weeks: tuple[WeekHours, ...] = spec(description="Runner-hours per ISO week and stage.")
    stages: tuple[StageHours, ...] = spec(description="The window's hours per stage.")
    skipped_hours: float | None = spec(description="Accelerator hours the window's plans saved by skipping; null: "
                                                   "no plan recorded.")
    scheduled_hours: float | None = spec(description="Accelerator hours the window's plans scheduled; null: no "
                                                     "plan recorded.")
    skipped_by_group: Mapping[str, float] = spec(minimum=0, description="The saved hours by group: diff, labels, "
                                                                        "cadence, trust.")
    plan_weeks: tuple[WeekPlans, ...] = spec(description="Accelerator hours scheduled and saved per ISO week.")
    notes: tuple[str, ...] = spec(description="What the figures leave out, and why.")
    slowest: tuple[SlowFile, ...] = spec(description="The slowest files by the mean of their passing attempts.")
    drift: tuple[Drift, ...] = spec(description="Files whose measured time is outside 0.8 to 1.25 of est_time.")
    flaky: tuple[FlakyFile, ...] = spec(description="Flaky files, highest flake rate first.")
    flaky_weeks: tuple[WeekCount, ...] = spec(description="Flaky runs per week.")
    slowest_run: SlowestRun | None = spec(description="The latest run of the stage with the most runner-hours.")
    threshold: float | None = spec(description="The flake rate a proposal needs; null: not asked.")
    proposals: tuple[Proposal, ...] | None = spec(description="Files to quarantine; null: not asked.")
    quarantine_yaml: str | None = spec(description="The `quarantine:` entries to add, as YAML.")
    release_after: int = spec(minimum=1, description="The days a quarantined file must pass every run of "
                                                     "(ending on `until`) to be ready to leave quarantine.")
    quarantine: tuple[QuarantineStatus, ...] | None = spec(
        description="The configuration's quarantine entries: ready to leave, failing or not run; null: no "
                    "configuration read.")


def parse_since(text: str, option: str = "--since") -> int:
    """The days of `--since` (`30d`, `4w`), or of `option` taking the same spans; CP702 otherwise."""
    match = _SINCE.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        shown = json.dumps(text)[:40] if isinstance(text, str) else repr(text)
        raise InputError(f"{shown.replace(chr(34), chr(39))} is not a time span: write a number of days or weeks, "
                         "e.g. 30d or 4w", path=option, code="CP702",
                         hint="a report reads the attempts started in the last N days (Nd) or weeks (Nw), "
                              "at most 9999")
    return int(match.group(1)) * (7 if match.group(2) == "w" else 1)


def _week(started_at: str) -> str:
    day = datetime.date.fromisoformat(started_at[:10])
    return (day - datetime.timedelta(days=day.weekday())).isoformat()


def _hours(seconds: float) -> float:
    return round(seconds / 3600, 3)


def _cost_of(costs: Mapping[str, RunnerCost] | None, o: Outcome) -> RunnerCost | None:
    if not costs:
        return None
    if o.stage in costs:
        return costs[o.stage]
    return next((costs[label] for label in o.runner_labels if label in costs), None)


def _priced(seconds: float, cost: RunnerCost | None) -> tuple[float | None, float | None]:
    """GPU-hours and cost of one attempt, unrounded: a sum is rounded once, so GPU-hours on one GPU
    equal runner-hours."""
    if cost is None:
        return None, None
    price = None if cost.cost_per_hour is None else seconds / 3600 * cost.cost_per_hour
    return seconds * cost.gpus / 3600, price


def _week_hours(rows: list[Outcome], costs: Mapping[str, RunnerCost] | None) -> tuple[WeekHours, ...]:
    seconds: dict[tuple[str, str], float] = defaultdict(float)
    gpu: dict[tuple[str, str], float | None] = {}
    price: dict[tuple[str, str], float | None] = {}
    runs: dict[tuple[str, str], set[str]] = defaultdict(set)
    for o in rows:
        key = (_week(o.started_at), o.stage)
        seconds[key] += o.elapsed
        runs[key].add(o.run_id)
        cost = _cost_of(costs, o)
        g, p = _priced(o.elapsed, cost)
        for table, value in ((gpu, g), (price, p)):
            before = table.get(key, 0.0)
            # One attempt without a cost makes the week's figure unknown, never a partial sum.
            table[key] = None if value is None or before is None else before + value
    return tuple(WeekHours(week=w, stage=s, runs=len(runs[(w, s)]), runner_hours=_hours(seconds[(w, s)]),
                           gpu_hours=None if gpu[(w, s)] is None else round(gpu[(w, s)] or 0.0, 3),
                           cost=None if price[(w, s)] is None else round(price[(w, s)] or 0.0, 2))
                 for w, s in sorted(seconds))


def _stage_hours(weeks: tuple[WeekHours, ...]) -> tuple[StageHours, ...]:
    out = []
    for stage in sorted({w.stage for w in weeks}):
        mine = [w for w in weeks if w.stage == stage]
        gpu = None if any(w.gpu_hours is None for w in mine) else round(sum(w.gpu_hours or 0.0 for w in mine), 3)
        cost = None if any(w.cost is None for w in mine) else round(sum(w.cost or 0.0 for w in mine), 2)
        out.append(StageHours(stage=stage, runner_hours=round(sum(w.runner_hours for w in mine), 3),
                              gpu_hours=gpu, cost=cost))
    return tuple(out)


def _passes(rows: list[Outcome]) -> dict[tuple[str, str], list[Outcome]]:
    found: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for o in rows:
        if o.status == "pass":
            found[(o.file, o.stage)].append(o)
    return found


def _slowest(passes: dict[tuple[str, str], list[Outcome]]) -> tuple[SlowFile, ...]:
    files = [SlowFile(file=f, stage=s, passes=len(p), mean_seconds=round(statistics.fmean(o.elapsed for o in p), 1),
                      max_seconds=round(max(o.elapsed for o in p), 1)) for (f, s), p in passes.items()]
    files.sort(key=lambda x: (-x.mean_seconds, x.file, x.stage))
    return tuple(files[:SLOWEST])


def _drift(passes: dict[tuple[str, str], list[Outcome]]) -> tuple[Drift, ...]:
    out = []
    for (file, stage), rows in passes.items():
        latest = max(rows, key=lambda o: (o.started_at, o.run_id))
        if latest.est_time is None:
            continue
        measured = statistics.median(o.elapsed for o in rows)
        ratio = None if latest.est_time == 0 else measured / latest.est_time
        if ratio is not None and DRIFT_BAND[0] <= ratio <= DRIFT_BAND[1]:
            continue
        weeks: dict[str, list[float]] = defaultdict(list)
        for o in rows:
            weeks[_week(o.started_at)].append(o.elapsed)
        order = sorted(weeks)
        out.append(Drift(file=file, stage=stage, est_time=latest.est_time, measured=round(measured, 1),
                         ratio=None if ratio is None else round(ratio, 2),
                         first_week=round(statistics.median(weeks[order[0]]), 1),
                         last_week=round(statistics.median(weeks[order[-1]]), 1)))
    out.sort(key=lambda d: (-(math.inf if d.ratio is None else abs(math.log(max(d.ratio, 1e-9)))), d.file, d.stage))
    return tuple(out[:SLOWEST])


def _plan_weeks(plans: list[PlanHours]) -> tuple[WeekPlans, ...]:
    weeks: dict[str, list[PlanHours]] = defaultdict(list)
    for p in plans:
        weeks[_week(p.created)].append(p)
    return tuple(WeekPlans(week=w, plans=len(mine), scheduled_hours=round(sum(p.scheduled for p in mine), 3),
                           skipped_hours=round(sum(sum(p.skipped.values()) for p in mine), 3),
                           by_group=_by_group(mine)) for w, mine in sorted(weeks.items()))


def _by_group(plans: list[PlanHours]) -> dict[str, float]:
    return {g: round(sum(p.skipped.get(g, 0.0) for p in plans), 3) for g in SKIP_GROUPS
            if any(g in p.skipped for p in plans)}


def _flaky_weeks(rows: list[Outcome]) -> tuple[WeekCount, ...]:
    """Flaky (file, run) pairs per week of the run's start, every week of the window's rows listed (0 included)."""
    started: dict[str, str] = {}
    for o in rows:
        started[o.run_id] = min(started.get(o.run_id, o.started_at), o.started_at)
    counts: dict[str, int] = {w: 0 for w in sorted({_week(o.started_at) for o in rows})}
    retried, same_commit = flaky_runs(rows)
    for file in set(retried) | set(same_commit):
        for run_id in retried[file] | same_commit[file]:
            counts[_week(started[run_id])] += 1
    return tuple(WeekCount(week=w, flaky_runs=n) for w, n in counts.items())


def _slowest_run(rows: list[Outcome], repository: str | None, server: str) -> SlowestRun | None:
    """The latest run of the stage with the most runner-hours: its attempts, one after another per shard."""
    if not rows:
        return None
    totals: dict[str, float] = defaultdict(float)
    for o in rows:
        totals[o.stage] += o.elapsed
    stage = min(totals, key=lambda s: (-totals[s], s))
    mine = [o for o in rows if o.stage == stage]
    last = max(mine, key=lambda o: (o.started_at, o.run_id)).run_id
    attempts = sorted((o for o in mine if o.run_id == last),
                      key=lambda o: (o.shard, o.run_attempt, o.started_at, o.attempt, o.file))
    bars = []
    ends: dict[int, float] = defaultdict(float)
    for o in attempts:
        start = ends[o.shard]
        bars.append(Bar(shard=o.shard, file=o.file, attempt=o.attempt, status=o.status, start=round(start, 1),
                        elapsed=round(o.elapsed, 1)))
        ends[o.shard] = start + o.elapsed
    return SlowestRun(stage=stage, run_id=last, url=run_url(last, repository, server),
                      seconds=round(max(ends.values()), 1), bars=tuple(bars))


def _proposals(flaky: tuple[FlakyFile, ...], rows: list[Outcome], threshold: float, min_runs: int,
               until: datetime.date) -> tuple[tuple[Proposal, ...], str]:
    stages: dict[str, set[str]] = defaultdict(set)
    for o in rows:
        stages[o.file].add(o.stage)
    expiry = (until + datetime.timedelta(days=QUARANTINE_DAYS)).isoformat()
    out = []
    for f in flaky:
        if f.flake_rate < threshold or f.runs < min_runs:
            continue
        where = f.first.url or f"first run {f.first.run_id}"
        only = sorted(stages[f.file])
        out.append(Proposal(file=f.file, stage=only[0] if len(only) == 1 else None, until=expiry,
                            reason=f"flaky: {f.flaky_runs} of {f.runs} runs failed then passed ({where})"))
    lines = ["quarantine:"]
    for p in out:
        lines.append(f"  - file: {yaml_text(p.file)}")
        if p.stage is not None:
            lines.append(f"    stage: {yaml_text(p.stage)}")
        lines += [f"    reason: {json.dumps(p.reason)}", "    issue: null", f"    until: {p.until}"]
    return tuple(out), "\n".join(lines) + "\n" if out else ""


def health_report(outcomes: Iterable[Outcome], *, since: datetime.date, until: datetime.date,
                  plans: Iterable[PlanHours] = (), repository: str | None = None, server: str = "https://github.com",
                  costs: Mapping[str, RunnerCost] | None = None, threshold: float | None = None,
                  min_runs: int = 5, quarantine: Iterable[Quarantine] | None = None,
                  release_days: int = RELEASE_DAYS) -> HealthReport:
    """The report of the attempts started from `since` to `until` (both days included, UTC)."""
    first, last = since.isoformat(), (until + datetime.timedelta(days=1)).isoformat()
    outcomes = list(outcomes)
    released = None if quarantine is None else release_status(
        quarantine, outcomes, since=until - datetime.timedelta(days=release_days - 1), until=until)
    rows = sorted((o for o in outcomes if first <= o.started_at < last),
                  key=lambda o: (o.started_at, o.run_id, o.run_attempt, o.stage, o.shard, o.file, o.attempt))
    weeks = _week_hours(rows, costs)
    planned = sorted((p for p in plans if first <= p.created < last),
                     key=lambda p: (p.created, p.run_id, p.run_attempt))
    passes = _passes(rows)
    flaky = flaky_files(rows, repository, server)
    proposals, yaml_text = (None, None) if threshold is None else _proposals(flaky, rows, threshold, min_runs, until)
    notes = [] if planned else [SKIPPED_NOTE]
    stages = _stage_hours(weeks)
    if not costs:
        notes.append("GPU-hours and cost: no runner cost given; runner-hours only")
    else:
        unknown = [s.stage for s in stages if s.gpu_hours is None]
        unpriced = [s.stage for s in stages if s.gpu_hours is not None and s.cost is None]
        if unknown:
            notes.append(f"GPU-hours and cost: no runner cost given for {', '.join(unknown)}")
        if unpriced:
            notes.append(f"cost: no cost_per_hour given for {', '.join(unpriced)}")
    return HealthReport(since=first, until=until.isoformat(), repository=repository,
                        runs=len({o.run_id for o in rows}), attempts=len(rows), weeks=weeks,
                        stages=stages, notes=tuple(notes),
                        skipped_hours=round(sum(sum(p.skipped.values()) for p in planned), 3) if planned else None,
                        scheduled_hours=round(sum(p.scheduled for p in planned), 3) if planned else None,
                        skipped_by_group=_by_group(planned), plan_weeks=_plan_weeks(planned),
                        slowest=_slowest(passes), drift=_drift(passes), flaky=flaky,
                        flaky_weeks=_flaky_weeks(rows), slowest_run=_slowest_run(rows, repository, server),
                        threshold=threshold, proposals=proposals, quarantine_yaml=yaml_text or None,
                        release_after=release_days, quarantine=released)
