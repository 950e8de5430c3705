"""Output for big repositories: short text lines, a bounded Markdown summary and Gantt chart.

The repositories are generated (tests/big_repo.py, seeded): 400 and 2,000 files written
and planned; 50,000 files put straight into a plan's stages. Limits checked:
- text: no line over 100 characters (the generated paths are shorter than that);
- Markdown: every mermaid block under mermaid's default `maxTextSize` of 50,000
  characters, at most `CHART_BARS` bars a chart, bar names unique in each chart, and the
  whole summary well under GitHub's 1 MiB step-summary limit (at most 300 KB here).
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from big_repo import big_files, big_plan
from helpers import assert_golden

from ci_policy.model.registry import Registration
from ci_policy.plan.build import Plan
from ci_policy.plan.jobs import stage_jobs
from ci_policy.plan.partition import Shard
from ci_policy.render.markdown import CHART_BARS, SHARD_BARS, SHARD_LIST, plan_markdown
from ci_policy.render.text import plan_text

MERMAID = re.compile(r"```mermaid\n(.*?)```", re.S)
BAR = re.compile(r"^    (?!section |title |dateFormat |axisFormat )(.+?) :s(\d+)t\d+, (?:0|after s\d+t\d+), "
                 r"\d+(?:\.\d+)?s$", re.M)
DETAILS = re.compile(r"<details><summary>shard (\d+): (\d+) files?, est [0-9dhms]+</summary>\n\n(.*?)\n\n</details>",
                     re.S)
STEP_SUMMARY_LIMIT = 1024 * 1024


@pytest.fixture(scope="module")
def plan_2000(tmp_path_factory) -> Plan:
    return big_plan(tmp_path_factory.mktemp("big") / "repo", 2000)


def check_summary(md: str, plan: Plan, *, most_bytes: int) -> None:
    """The mermaid limits, unique bar names, one <details> per shard listing its files."""
    assert len(md.encode()) < most_bytes < STEP_SUMMARY_LIMIT
    charts = MERMAID.findall(md)
    running = [s for s in plan.stages if s.decision == "run"]
    assert len(charts) == len(running)
    for stage, chart in zip(running, charts, strict=True):
        assert len(chart) < 50_000
        bars = [name for name, _ in BAR.findall(chart)]
        assert len(set(bars)) == len(bars) <= CHART_BARS
        # Every bar line has the drawn form: a shard's longest files, then one bar for the rest.
        budget = max(1, min(SHARD_BARS, CHART_BARS // len(stage.shards)))
        assert len(bars) == sum(min(len(sh.files), budget) for sh in stage.shards)
        assert chart.count("    section shard ") == len(stage.shards)
    details = DETAILS.findall(md)
    shards = [(s.name, sh) for s in running for sh in s.shards]
    assert [(int(i), int(n)) for i, n, _ in details] == [(sh.index, len(sh.files)) for _, sh in shards]
    for (_, _, body), (stage_name, sh) in zip(details, shards, strict=True):
        lines = body.split("\n")
        listed = min(len(sh.files), SHARD_LIST)
        assert [line.split(" (")[0] for line in lines[:listed]] == [
            "- " + f.replace("_", "\\_") for f in sh.files[:listed]]
        more = [f"- … and {len(sh.files) - SHARD_LIST} more; ci-policy list --stage {stage_name} --shard "
                f"{sh.index} lists them all"] if len(sh.files) > SHARD_LIST else []
        assert lines[listed:] == more


def test_the_text_plan_of_400_files_has_no_line_over_100_characters(tmp_path):
    plan = big_plan(tmp_path / "repo", 400)
    text = plan_text(plan, stage_jobs(plan, None))
    assert max(len(line) for line in text.splitlines()) <= 100
    for s in plan.stages:  # every file of every shard on a line of its own
        for sh in s.shards:
            block = f"  {s.name}[{sh.index}] est "
            start = text.index(block)
            assert text[start:].split("\n")[1:len(sh.files) + 1] == [f"    {f}" for f in sh.files]


def test_the_markdown_summary_of_2000_files_is_golden_and_within_limits(plan_2000):
    md = plan_markdown(plan_2000, stage_jobs(plan_2000, None))
    assert_golden("render/big-2000.md", md)
    check_summary(md, plan_2000, most_bytes=150_000)
    # Basenames repeat in the generated repository; the bars tell them apart by directory.
    assert "    router/test_layernorm.py :" in md


def test_the_markdown_summary_of_50000_files_keeps_mermaid_under_its_limits(plan_2000):
    files = big_files(50_000)
    stages = []
    for s in plan_2000.stages:
        mine = sorted(((path, est) for path, stage, est in files if stage == s.name), key=lambda f: (-f[1], f[0]))
        parts = len(s.shards)
        shards = tuple(Shard(i, sum(est for _, est in mine[i::parts]), tuple(p for p, _ in mine[i::parts]))
                       for i in range(parts))
        tests = tuple(Registration(file=p, line=3, backend=s.stage.backend, suite=s.name, est_time=est)
                      for p, est in mine)
        stages.append(dataclasses.replace(s, tests=tests, shards=shards))
    plan = dataclasses.replace(plan_2000, stages=tuple(stages))
    assert sum(len(s.tests) for s in plan.stages) == 50_000
    md = plan_markdown(plan, stage_jobs(plan, None))
    check_summary(md, plan, most_bytes=300_000)
    assert md.count("more; ci-policy list --stage ") == 14  # every shard holds more files than it lists
