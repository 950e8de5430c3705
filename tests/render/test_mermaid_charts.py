"""Every Mermaid chart ci_policy emits, drawn by mermaid itself in headless Chromium.

The plan's Gantt charts (`ci-policy plan --format markdown` and the step summary of
`--format github`) are rendered (tests/mermaid_render.py) and each drawn bar's start and end is
read from the SVG through the chart's time axis, then compared with the plan's shard schedule
(`--format json`: a shard's files run one after another in the order the plan lists them, each
for its est_time). A chart mermaid cannot parse fails the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from big_repo import big_plan
from helpers import run_cli as run
from mermaid_render import Bar, MermaidError, Renderer, gantt_bars, mermaid_blocks, xychart_series

from ci_policy.plan.jobs import stage_jobs
from ci_policy.render.markdown import CHART_BARS, SHARD_BARS, gantt, plan_markdown

ROOT = Path(__file__).resolve().parents[2]
CODE_PR = ["plan", "--repo", "examples/gpu-repo", "--event", "pull_request",
           "--labels-json", '["run-ci-sglang", "documentation"]', "--diff", "examples/pr-42.diff"]

Schedule = list[tuple[str, str, float, float]]  # (task id, file or "+N files", start, end)


@pytest.fixture
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def shard_schedule(index: int, files: list[tuple[str, float]]) -> Schedule:
    """A shard's bars as the chart must draw them: its files back to back from 0, the files past
    the chart's per-shard budget as one bar."""
    out, start = [], 0.0
    for k, (f, est) in enumerate(files):
        out.append((f"s{index}t{k}", f, start, start + est))
        start += est
    return out


def budgeted(schedule: Schedule, index: int, budget: int) -> Schedule:
    if len(schedule) <= budget:
        return schedule
    kept, rest = schedule[:budget - 1], schedule[budget - 1:]
    return [*kept, (f"s{index}t{budget - 1}", f"+{len(rest)} files", rest[0][2], rest[-1][3])]


def plan_schedules(document: dict) -> list[Schedule]:
    """Per running stage with shards, every bar its chart must draw, from the plan's JSON document."""
    out = []
    for stage in document["stages"]:
        if stage["decision"] != "run" or not stage["shards"]:
            continue
        est = {t["file"]: t["est_time"] for t in stage["tests"]}
        budget = max(1, min(SHARD_BARS, CHART_BARS // len(stage["shards"])))
        out.append([bar for shard in stage["shards"]
                    for bar in budgeted(shard_schedule(shard["index"], [(f, est[f]) for f in shard["files"]]),
                                        shard["index"], budget)])
    return out


def assert_drawn(bars: list[Bar], schedule: Schedule) -> None:
    drawn = {b.task: b for b in bars}
    assert sorted(drawn) == sorted(task for task, _, _, _ in schedule)
    for task, what, start, end in schedule:
        bar = drawn[task]
        # The label is the file's shortest distinguishing suffix (render.escape.bar_names).
        assert what.endswith("/" + bar.name) or what == bar.name or bar.name.startswith(what), (bar, what)
        assert (bar.start, bar.end) == (pytest.approx(start, abs=bar.px), pytest.approx(end, abs=bar.px)), bar


def test_the_code_pr_plan_draws_each_shard_as_scheduled_in_markdown_and_the_step_summary(
        at_root, mermaid, tmp_path, monkeypatch, capsys):
    rc, out, err = run([*CODE_PR, "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    schedules = plan_schedules(json.loads(out))
    assert len(schedules) == 4  # stage-a-cpu, stage-b-1-gpu-h200, stage-c-4-gpu-h200, stage-c-4-gpu-mi350
    rc, markdown, err = run([*CODE_PR, "--format", "markdown"], capsys)
    assert (rc, err) == (0, "")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert run([*CODE_PR, "--format", "github"], capsys)[0] == 0
    charts = mermaid_blocks(markdown) + mermaid_blocks(summary.read_text())
    assert len(charts) == 2 * len(schedules)
    for svg, schedule in zip(mermaid.render(charts), schedules * 2, strict=True):
        assert_drawn(gantt_bars(svg), schedule)
    # The CPU stage's shard: four files of 5 s each, back to back (mermaid drew all four from 0
    # when the chart gave absolute starts).
    cpu = gantt_bars(mermaid.render(charts[:1])[0])
    assert [(b.name, round(b.start), round(b.end)) for b in cpu] == [
        ("test_advantages.py", 0, 5), ("test_kl.py", 5, 10), ("test_rollout.py", 10, 15),
        ("test_session_protocol.py", 15, 20)]


def test_the_docs_only_plan_draws_its_one_shard_as_scheduled(at_root, mermaid, tmp_path, capsys):
    diff = tmp_path / "docs.diff"
    diff.write_bytes(b"M\0docs/guide.md\0M\0README.md\0")
    argv = ["plan", "--repo", "examples/gpu-repo", "--event", "pull_request", "--labels-json", "[]",
            "--diff", str(diff)]
    rc, out, _ = run([*argv, "--format", "json"], capsys)
    schedules = plan_schedules(json.loads(out))
    rc, markdown, err = run([*argv, "--format", "markdown"], capsys)
    assert (rc, err) == (0, "")
    charts = mermaid_blocks(markdown)
    assert len(charts) == len(schedules) == 1
    assert_drawn(gantt_bars(mermaid.render(charts)[0]), schedules[0])


def test_a_plan_of_2000_files_draws_every_shard_and_its_rest_bar_as_scheduled(tmp_path, mermaid):
    plan = big_plan(tmp_path / "repo", 2000)
    charts = mermaid_blocks(plan_markdown(plan, stage_jobs(plan, None)))
    schedules = []
    for s in plan.stages:
        if s.decision != "run":
            continue
        est = {r.file: r.est_time for r in s.tests}
        budget = max(1, min(SHARD_BARS, CHART_BARS // len(s.shards)))
        schedules.append([bar for sh in s.shards
                          for bar in budgeted(shard_schedule(sh.index, [(f, est[f]) for f in sh.files]),
                                              sh.index, budget)])
    assert len(charts) == len(schedules) == 3
    assert any(name.startswith("+") for schedule in schedules for _, name, _, _ in schedule)
    for svg, schedule in zip(mermaid.render(charts), schedules, strict=True):
        assert_drawn(gantt_bars(svg), schedule)


def test_fractional_and_long_est_times_are_written_without_exponents_and_drawn_to_scale(mermaid):
    chart = mermaid_blocks("\n".join(gantt("s", [(0, [("a.py", 2.5), ("b.py", 0.25), ("c.py", 1e-4)]),
                                                 (1, [("d.py", 7200.125)])])) + "\n")
    assert chart[0].splitlines()[4:] == ["    section shard 0", "    a.py :s0t0, 0, 2.5s",
                                         "    b.py :s0t1, after s0t0, 0.25s", "    c.py :s0t2, after s0t1, 0s",
                                         "    section shard 1", "    d.py :s1t0, 0, 7200.125s"]
    bars = gantt_bars(mermaid.render(chart)[0])
    assert_drawn(bars, [("s0t0", "a.py", 0, 2.5), ("s0t1", "b.py", 2.5, 2.75), ("s0t2", "c.py", 2.75, 2.75),
                        ("s1t0", "d.py", 0, 7200.125)])


def test_the_reader_sees_what_mermaid_draws_of_absolute_starts(mermaid):
    """What the charts were: `dateFormat X` reads a start of 5 as 5 ms, so b.py is drawn from 0 to
    10 s, over a.py; the reader must see that, or it could not catch the bug again."""
    chart = "gantt\n    dateFormat X\n    axisFormat %s\n    section shard 0\n    a.py :0, 5\n    b.py :5, 10\n"
    bars = gantt_bars(mermaid.render([chart])[0])
    assert [(b.name, round(b.start), round(b.end)) for b in bars] == [("a.py", 0, 5), ("b.py", 0, 10)]


def test_the_xychart_reader_reads_each_bar_and_line_point_through_the_y_axis(mermaid):
    """The reader the report's charts are checked with: a bar plot and a line plot, by x label."""
    chart = ('xychart-beta\n    title "Weekly hours"\n    x-axis [w1, w2, w3]\n    y-axis "hours" 0 --> 40\n'
             "    bar [10, 25.5, 40]\n    line [5, 10, 20]\n")
    bars, line = xychart_series(mermaid.render([chart])[0])
    assert (bars.kind, bars.index, line.kind, line.index) == ("bar", 0, "line", 1)
    for series, expected in ((bars, [("w1", 10), ("w2", 25.5), ("w3", 40)]), (line, [("w1", 5), ("w2", 10),
                                                                                      ("w3", 20)])):
        assert series.points == tuple((label, pytest.approx(value, abs=series.px)) for label, value in expected)


def test_a_chart_mermaid_cannot_parse_fails(mermaid):
    good = "gantt\n    dateFormat X\n    axisFormat %s\n    section s\n    a.py :t0, 0, 5s\n"
    with pytest.raises(MermaidError, match=r"mermaid refused the chart: .*\ngantt\n  bogus ::: \)"):
        mermaid.render([good, "gantt\n  bogus ::: )"])
    assert len(mermaid.render([good])) == 1  # the page still draws after a refused chart


def test_the_pinned_packages_are_installed_from_the_lock_file():
    import mermaid_render

    lock = json.loads((mermaid_render.HERE / "package-lock.json").read_text(encoding="utf-8"))
    pinned = {"mermaid": "11.17.2", "playwright-core": "1.65.2"}
    for name in mermaid_render.PACKAGES:
        installed = json.loads((mermaid_render.HERE / "node_modules" / name / "package.json").read_text("utf-8"))
        assert installed["version"] == lock["packages"][f"node_modules/{name}"]["version"] == pinned[name]


def test_a_renderer_without_its_packages_names_the_fix(monkeypatch, tmp_path):
    import mermaid_render

    monkeypatch.setattr(mermaid_render, "HERE", tmp_path)
    with pytest.raises(mermaid_render.MermaidMissing,
                       match=r"mermaid, playwright-core not installed in tests/mermaid_js/node_modules: run "
                             r"scripts/test.sh, or `npm ci --prefix tests/mermaid_js --ignore-scripts`"):
        Renderer().render(["gantt"])
