"""The CI health report's core (`model.health`): costs, the window, proposals, `--since`."""

from __future__ import annotations

import datetime

import pytest

from ci_policy.config.quarantined import Quarantine
from ci_policy.errors import InputError
from ci_policy.model.health import RunnerCost, WeekHours, health_report, parse_since
from ci_policy.model.outcomes import Outcome
from ci_policy.render.health import report_json, report_markdown, report_text

DAY = datetime.date(2026, 11, 29)


def row(run: str, file: str, status: str = "pass", *, stage: str = "gpu", labels: tuple[str, ...] = ("h200",),
        started: str = "2026-11-24T01:00:00Z", elapsed: float = 1800.0, attempt: int = 1) -> Outcome:
    return Outcome(run_id=run, run_attempt=1, commit=f"c{run}", stage=stage, shard=0, runner_labels=labels,
                   file=file, attempt=attempt, status=status,  # type: ignore[arg-type]
                   retry_class=None if status == "pass" else "flaky", started_at=started, elapsed=elapsed,
                   est_time=1800.0)


def test_costs_apply_by_stage_name_first_then_by_runner_label():
    rows = [row("1", "a.py", stage="gpu", labels=("h200",)), row("1", "b.py", stage="big", labels=("mi300",))]
    costs = {"gpu": RunnerCost(gpus=8, cost_per_hour=20.0), "mi300": RunnerCost(gpus=4)}
    report = health_report(rows, since=DAY - datetime.timedelta(days=6), until=DAY, costs=costs)
    assert report.weeks == (
        WeekHours(week="2026-11-23", stage="big", runs=1, runner_hours=0.5, gpu_hours=2.0, cost=None),
        WeekHours(week="2026-11-23", stage="gpu", runs=1, runner_hours=0.5, gpu_hours=4.0, cost=10.0))
    assert report.notes == ("hours saved by skipping: no plan in the window (`ci-policy history import` reads them "
                            "from the runs' plan artifacts)", "cost: no cost_per_hour given for big")


def test_one_attempt_without_a_cost_makes_the_weeks_gpu_hours_unknown():
    rows = [row("1", "a.py", labels=("h200",)), row("2", "a.py", labels=("other",))]
    report = health_report(rows, since=DAY - datetime.timedelta(days=6), until=DAY, costs={"h200": RunnerCost(2)})
    [week] = report.weeks
    assert (week.runner_hours, week.gpu_hours, week.cost) == (1.0, None, None)


def test_the_window_holds_its_first_and_last_day_whole():
    rows = [row("1", "a.py", started="2026-11-22T23:59:59Z"), row("2", "a.py", started="2026-11-23T00:00:00Z"),
            row("3", "a.py", started="2026-11-29T23:59:59Z"), row("4", "a.py", started="2026-11-30T00:00:00Z")]
    report = health_report(rows, since=datetime.date(2026, 11, 23), until=DAY)
    assert (report.since, report.until, report.runs) == ("2026-11-23", "2026-11-29", 2)


def test_proposals_need_the_threshold_and_the_runs_and_quote_what_yaml_would_misread():
    rows = []
    for i in range(5):
        for file in ("tests/a b.py", "tests/ok.py", "tests/two.py"):
            if i % 2 == 0:
                rows.append(row(str(i), file, "flaky", started=f"2026-11-2{i}T01:00:00Z"))
            rows.append(row(str(i), file, started=f"2026-11-2{i}T01:00:05Z", attempt=2 if i % 2 == 0 else 1))
        rows.append(row(str(i), "tests/two.py", stage="other", started=f"2026-11-2{i}T02:00:00Z"))
    report = health_report(rows, since=datetime.date(2026, 11, 1), until=DAY, repository=None, threshold=0.5,
                           min_runs=5)
    assert report.quarantine_yaml == (
        "quarantine:\n"
        '  - file: "tests/a b.py"\n'
        '    stage: gpu\n'
        '    reason: "flaky: 3 of 5 runs failed then passed (first run 0)"\n'
        "    issue: null\n"
        "    until: 2026-12-13\n"
        "  - file: tests/ok.py\n"
        '    stage: gpu\n'
        '    reason: "flaky: 3 of 5 runs failed then passed (first run 0)"\n'
        "    issue: null\n"
        "    until: 2026-12-13\n"
        "  - file: tests/two.py\n"
        '    reason: "flaky: 3 of 5 runs failed then passed (first run 0)"\n'
        "    issue: null\n"
        "    until: 2026-12-13\n")
    assert health_report(rows, since=datetime.date(2026, 11, 1), until=DAY, threshold=0.5,
                         min_runs=6).proposals == ()
    assert health_report(rows, since=datetime.date(2026, 11, 1), until=DAY).proposals is None


def test_an_empty_history_renders_in_every_format():
    report = health_report([], since=DAY, until=DAY, threshold=0.1)
    assert report.slowest_run is None and report.weeks == () and report.proposals == ()
    assert "no attempts in the window" in report_text(report)
    assert "No attempts in the window." in report_markdown(report)
    assert '"proposals": []' in report_json(report)


@pytest.mark.parametrize("text, days", [("30d", 30), ("4w", 28), ("1d", 1), ("9999d", 9999), (" 7d ", 7)])
def test_since_is_days_or_weeks(text, days):
    assert parse_since(text) == days


@pytest.mark.parametrize("text", ["", "30", "d", "0d", "01d", "10000d", "3h", "1.5w", "-2d"])
def test_anything_else_is_cp702(text):
    with pytest.raises(InputError) as err:
        parse_since(text)
    assert (err.value.code, err.value.path) == ("CP702", "--since")


def test_the_gantt_chart_marks_failed_attempts_and_chains_retries_after_the_failure():
    rows = [row("9", "tests/a/test_x.py", "flaky", started="2026-11-24T01:00:00Z", elapsed=30.0),
            row("9", "tests/a/test_x.py", started="2026-11-24T01:00:30Z", elapsed=60.0, attempt=2),
            row("9", "tests/b/test_x.py", started="2026-11-24T01:01:30Z", elapsed=0.2)]
    report = health_report(rows, since=DAY - datetime.timedelta(days=6), until=DAY, repository="o/r")
    markdown = report_markdown(report)
    chart = markdown[markdown.index("```mermaid\ngantt"):].split("```\n")[0]
    assert chart.splitlines()[5:] == [
        "    section shard 0",
        "    a/test_x.py :crit, b0, 0, 30s",
        "    a/test_x.py try 2 :b1, after b0, 60s",
        "    b/test_x.py :b2, after b1, 1s"]
    assert report.slowest_run is not None and report.slowest_run.seconds == 90.2


def test_a_stage_quarantine_counts_its_stage_only_and_a_flake_keeps_it():
    until = datetime.date(2027, 1, 1)
    entries = [Quarantine(file="a.py", stage="gpu", reason="r", owner="@o", until=until),
               Quarantine(file="b.py", reason="r", owner="@o", until=until)]
    rows = [row("1", "a.py", stage="gpu"), row("1", "a.py", "fail", stage="other"),
            row("2", "b.py", "flaky", started="2026-11-28T01:00:00Z"),
            row("2", "b.py", started="2026-11-28T01:30:00Z", attempt=2),
            row("3", "b.py", "fail", started="2026-11-15T01:00:00Z")]  # before the last 14 days
    report = health_report(rows, since=DAY - datetime.timedelta(days=6), until=DAY, quarantine=entries)
    assert [(q.file, q.status, q.runs, q.failed_runs, q.last_failure) for q in report.quarantine or ()] == [
        ("a.py", "ready", 1, 0, None), ("b.py", "failing", 1, 1, "2")]
    assert health_report(rows, since=DAY, until=DAY).quarantine is None
