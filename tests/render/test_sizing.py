"""The reasons of a stage's size (`partitions: auto`, `max_parallel`) in every plan format."""

from __future__ import annotations

import json

from render_cases import CONFIG, pr_plan, write_repo

from ci_policy.app.plan_documents import github_outputs, plan_dict
from ci_policy.plan.jobs import stage_jobs
from ci_policy.render.markdown import plan_markdown
from ci_policy.render.text import plan_text

SIZED = CONFIG.replace(
    "{name: gpu, backend: cuda, runs_on: [h200], partitions: 2}",
    "{name: gpu, backend: cuda, runs_on: [h200], partitions: auto, shard_seconds: 200,\n"
    "     max_parallel: {default: 1, priority: 2}}").replace(
    "stages:\n", "pull_request: {priority_labels: [high priority]}\nstages:\n")

RUN = "run: the diff is unavailable (no --diff or --base was given), so every runnable stage runs"
REQUESTED = "run: requested by run-ci-megatron"
SHARDS = "2 shards: 360s selected / 200s per shard"
PARALLEL = "max_parallel 2: raised by the PR label high priority"


def sized_plan(tmp_path):
    repo = write_repo(tmp_path)
    (repo / ".github" / "ci-policy.yml").write_text(SIZED)
    return pr_plan(repo, "run-ci-megatron", "high priority")


def test_text_lists_the_size_reasons_after_the_decision(tmp_path):
    plan = sized_plan(tmp_path)
    lines = plan_text(plan, stage_jobs(plan, None)).splitlines()
    gpu = lines.index("gpu    cuda     RUN           2       2      5m0s")
    assert lines[gpu + 1:gpu + 6] == [f"  {RUN}", f"  {REQUESTED}", f"  {SHARDS}", f"  {PARALLEL}",
                                      "cpu    cpu      SKIP          0       0         -"]
    assert lines[gpu + 6] == "  skip: no registered tests"


def test_json_carries_the_sizing_keys_only_where_configured(tmp_path):
    doc = json.loads(json.dumps(plan_dict(sized_plan(tmp_path))))
    gpu, cpu = doc["stages"]
    assert (gpu["reasons"], gpu["shards_reason"], gpu["max_parallel"], gpu["max_parallel_reason"]) == (
        [RUN, REQUESTED], SHARDS, 2, PARALLEL)
    assert [sh["files"] for sh in gpu["shards"]] == [["tests/test_big_model.py"], ["tests/test_small.py"]]
    assert list(cpu) == ["name", "backend", "decision", "reasons", "runs_on", "tests", "shards", "makespan",
                         "lower_bound", "optimal", "invalid"]


def test_markdown_row_holds_every_reason(tmp_path):
    plan = sized_plan(tmp_path)
    rows = plan_markdown(plan, stage_jobs(plan, None)).splitlines()
    [gpu, hours] = [row for row in rows if row.startswith("| gpu |")]
    assert hours == "| gpu | 0.10 | 0.00 | 1 accelerator per runner (no accelerators entry matches) |"
    assert gpu == (f"| gpu | cuda | ✅ run | 2 | 2 | 5m0s | {RUN}<br>{REQUESTED}"
                   "<br>2 shards: 360s selected / 200s per shard"
                   "<br>max\\_parallel 2: raised by the PR label high priority |")


def test_github_outputs_max_parallel_beside_an_unchanged_matrix(tmp_path):
    out = github_outputs(sized_plan(tmp_path), "EOF")
    assert 'matrix<<EOF\n{"gpu":[0,1],"cpu":[]}\nEOF\nmax_parallel<<EOF\n{"gpu":2,"cpu":1}\nEOF\n' in out


def test_without_a_priority_label_the_default_limit_applies(tmp_path):
    repo = write_repo(tmp_path)
    (repo / ".github" / "ci-policy.yml").write_text(SIZED)
    plan = pr_plan(repo, "run-ci-megatron", "High Priority")  # raw labels match exactly
    assert plan_dict(plan)["stages"][0]["max_parallel_reason"] == "max_parallel 1: the stage's limit"
    assert 'max_parallel<<EOF\n{"gpu":1,"cpu":1}\nEOF\n' in github_outputs(plan, "EOF")
