"""The CI health report's charts, drawn by mermaid itself in headless Chromium.

The report of the six-week history fixture (tests/data/history, the report goldens' window and
checkout) is made as Markdown and as JSON; every Mermaid block of the Markdown is rendered
(tests/mermaid_render.py), and what mermaid drew is read back from the SVG: each xychart-beta
bar through the y axis against the JSON's figures (runner-hours, accelerator hours saved and
flaky runs per week), and each Gantt bar of the slowest stage's latest run through the time
axis against where its attempt started and ended.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT, run_cli
from mermaid_render import Series, gantt_bars, mermaid_blocks, xychart_series

from ci_policy.cli.main import main

HISTORY = ROOT / "tests" / "data" / "history"
WINDOW = ["--today", "2026-11-29", "--since", "6w", "--repository", "octo/gpu-repo", "--repo",
          str(HISTORY / "checkout")]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("charts") / "history.sqlite"
    assert main(["history", "import", "--store", str(path), str(HISTORY / "runs")]) == 0
    return path


@pytest.fixture
def report(store, mermaid, capsys, monkeypatch) -> tuple[dict, list[str], list[str]]:
    """The report's JSON document, its Markdown's Mermaid blocks, and each drawn (in that order)."""
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    outputs = {}
    for fmt in ("json", "markdown"):
        rc, outputs[fmt], err = run_cli(["report", "--store", str(store), *WINDOW, "--format", fmt], capsys)
        assert (rc, err) == (0, "")
    charts = mermaid_blocks(outputs["markdown"])
    return json.loads(outputs["json"]), charts, mermaid.render(charts)  # MermaidError if one does not parse


def titled(charts: list[str], svgs: list[str], title: str) -> str:
    [svg] = [svg for chart, svg in zip(charts, svgs, strict=True) if chart.splitlines()[1].strip() == title]
    return svg


def assert_bars(series: list[Series], expected: list[tuple[str, float]]) -> None:
    [bars] = series
    assert bars.kind == "bar"
    assert bars.points == tuple((label, pytest.approx(value, abs=bars.px)) for label, value in expected)


def test_every_chart_of_the_report_renders(report):
    _, charts, svgs = report
    assert [chart.splitlines()[:2] for chart in charts] == [
        ["xychart-beta", '    title "Runner-hours per week"'],
        ["xychart-beta", '    title "Accelerator hours saved by skipping per week"'],
        ["xychart-beta", '    title "Flaky runs per week"'],
        ["gantt", "    title gpu-a run 7041 (seconds)"]]
    assert all(svg.startswith("<svg") for svg in svgs)


def test_the_weekly_bars_are_the_reports_figures(report):
    doc, charts, svgs = report
    weeks = sorted({w["week"] for w in doc["weeks"]})
    hours = [(week[5:], sum(w["runner_hours"] for w in doc["weeks"] if w["week"] == week)) for week in weeks]
    assert_bars(xychart_series(titled(charts, svgs, 'title "Runner-hours per week"')), hours)
    assert_bars(xychart_series(titled(charts, svgs, 'title "Accelerator hours saved by skipping per week"')),
                [(w["week"][5:], w["skipped_hours"]) for w in doc["plan_weeks"]])
    flaky = [(w["week"][5:], w["flaky_runs"]) for w in doc["flaky_weeks"]]
    assert_bars(xychart_series(titled(charts, svgs, 'title "Flaky runs per week"')), flaky)
    # The fixture's flakes: test_rollout.py every fifth day, test_server.py every seventh, test_eval.py once.
    assert [n for _, n in flaky] == [2, 3, 3, 3, 2, 2]


def test_the_slowest_stages_bars_start_and_end_where_its_attempts_did(report):
    doc, charts, svgs = report
    run = doc["slowest_run"]
    bars = {b.task: b for b in gantt_bars(titled(charts, svgs, "title gpu-a run 7041 (seconds)"))}
    assert sorted(bars) == [f"b{i}" for i in range(len(run["bars"]))]
    for i, attempt in enumerate(run["bars"]):
        bar = bars[f"b{i}"]
        assert attempt["file"].endswith("/" + bar.name)
        assert (bar.start, bar.end) == (pytest.approx(attempt["start"], abs=bar.px),
                                        pytest.approx(attempt["start"] + attempt["elapsed"], abs=bar.px)), bar
    # Shard 0's two files one after the other, shard 1's from 0.
    assert [(b.name, round(b.start), round(b.end)) for b in sorted(bars.values(), key=lambda b: b.task)] == [
        ("test_train.py", 0, 588), ("test_ckpt.py", 588, 1093), ("test_rollout.py", 0, 910)]
