"""The plan's accelerator hours (`plan.hours`): each skip counted under its group, exactly.

One generated repository: gpu-a holds an unlabelled 600 s test (diff-pruned: it runs only when
the diff touches its test or its paths), gpu-b a megatron-labelled 1200 s test and a nightly-only
1800 s one, on runners that `accelerators` gives 4 GPUs (runs_on 4gpu, 10/h); gpu-a's runner has
the default 1.
"""

from __future__ import annotations

import pytest
from helpers import MAIN_BLOCK

from ci_policy.model.snapshot import load_snapshot
from ci_policy.plan.build import build_plan
from ci_policy.plan.hours import Hours
from ci_policy.plan.policy import Trigger
from ci_policy.read.diff import Diff, parse_name_status

CONFIG = """\
version: 1
gpu_requires_labels: false
discovery:
  roots: [tests]
stages:
  - {name: gpu-a, backend: cuda, runs_on: [h200], paths: ["src/a/**"]}
  - {name: gpu-b, backend: cuda, runs_on: [h200, 4gpu]}
accelerators:
  - {runs_on: 4gpu, gpus: 4, cost_per_hour: 10}
"""
FILES = {path: f"from ci_policy import register_cuda_ci\n{call}\n{MAIN_BLOCK}" for path, call in (
    ("tests/a/test_x.py", 'register_cuda_ci(600, "gpu-a")'),
    ("tests/b/test_y.py", 'register_cuda_ci(1200, "gpu-b", labels=["megatron"])'),
    ("tests/b/test_n.py", 'register_cuda_ci(1800, "gpu-b", labels=["megatron"], nightly=True)'))}
DOCS = Diff(available=True, changes=parse_name_status(b"M\0README.md\0"))


@pytest.fixture
def repo(make_repo):
    return make_repo(FILES, config=CONFIG)


def table(h: Hours) -> list[tuple]:
    """(stage, gpus, entry, scheduled h, {group: skipped h}) per accelerator stage."""
    return [(s.stage, s.gpus, s.entry, round(s.scheduled, 6),
             {r: round(s.skipped(r), 6) for r, _ in s.skipped_seconds}) for s in h.stages]


def test_a_docs_only_pr_skips_the_diff_pruned_stage_and_the_unlabelled_and_nightly_tests(repo):
    h = build_plan(load_snapshot(repo), Trigger("pull_request"), DOCS).hours
    # gpu-a: 600 s x 1 GPU pruned by the diff; gpu-b: 1200 s x 4 unlabelled, 1800 s x 4 nightly-only.
    assert table(h) == [("gpu-a", 1, None, 0.0, {"diff": 0.166667}),
                        ("gpu-b", 4, 0, 0.0, {"labels": 1.333333, "cadence": 2.0})]
    assert (h.scheduled, round(h.skipped(), 6)) == (0.0, 3.5)
    assert [(r, round(v, 6)) for r, v in h.by_reason] == [("diff", 0.166667), ("labels", 1.333333),
                                                          ("cadence", 2.0)]
    # Only gpu-b's runners have a price: 3000 s at 10/h.
    assert (h.scheduled_cost, round(h.skipped_cost or 0, 6)) == (0.0, 8.333333)


def test_a_labelled_code_pr_schedules_what_runs(repo):
    diff = Diff(available=True, changes=parse_name_status(b"M\0tests/a/test_x.py\0"))
    h = build_plan(load_snapshot(repo), Trigger("pull_request", labels=("run-ci-megatron",)), diff).hours
    assert table(h) == [("gpu-a", 1, None, 0.166667, {}), ("gpu-b", 4, 0, 1.333333, {"cadence": 2.0})]
    assert (round(h.scheduled, 6), round(h.scheduled_cost or 0, 6)) == (1.5, 3.333333)


def test_an_untrusted_head_skips_for_trust(repo):
    trigger = Trigger("pull_request", labels=("run-ci-megatron",), trust="untrusted")
    h = build_plan(load_snapshot(repo), trigger, DOCS).hours
    assert table(h) == [("gpu-a", 1, None, 0.0, {"trust": 0.166667}),
                        ("gpu-b", 4, 0, 0.0, {"trust": 1.333333, "cadence": 2.0})]


def test_a_label_gate_skips_for_labels_and_a_schedule_for_cadence(make_repo):
    gated = make_repo(FILES, config=CONFIG + "pull_request: {require_labels: [ready]}\n", name="gated")
    h = build_plan(load_snapshot(gated), Trigger("pull_request", labels=("run-ci-megatron",)), DOCS).hours
    assert table(h) == [("gpu-a", 1, None, 0.0, {"labels": 0.166667}),
                        ("gpu-b", 4, 0, 0.0, {"labels": 1.333333, "cadence": 2.0})]
    scheduled = make_repo(FILES, config=CONFIG + "cadences:\n  schedules:\n    '0 3 * * *': "
                          "{cadence: nightly, stages: [gpu-a]}\n", name="scheduled")
    h = build_plan(load_snapshot(scheduled), Trigger("schedule", schedule="0 3 * * *"), Diff.unavailable("x")).hours
    # The nightly cadence selects both gpu-b tests; the schedule plans gpu-a only: 3000 s x 4 GPUs.
    assert table(h) == [("gpu-a", 1, None, 0.166667, {}), ("gpu-b", 4, 0, 0.0, {"cadence": 3.333333})]


def test_a_cpu_only_configuration_counts_no_hours(make_repo):
    repo = make_repo({"tests/unit/test_u.py": "def test_u():\n    pass\n"}, config=(
        "version: 1\ndiscovery:\n  roots: [tests]\n  implicit:\n"
        "    - {root: tests/unit, backend: cpu, suite: cpu, est_time: 1, cpu_only: true}\n"
        "stages:\n  - {name: cpu, backend: cpu}\n"))
    h = build_plan(load_snapshot(repo), Trigger("push"), Diff.unavailable("x")).hours
    assert h == Hours() and h.scheduled_cost is None
