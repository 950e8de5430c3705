"""A repository shaped like sglang, planned as its maintainers run CI (`tests/data/sglang-ci-repo`).

- Its policy: accelerator stages gated by `run-ci` (`pull_request.require_labels`), an
  extra suite that also needs `run-ci-extra` (`requires_labels`), a nightly-only NPU suite
  (`cadences: [nightly]`) and `cadences.nightly_selects: nightly_only`, a kernel stage
  owned by `python/pkg/jit_kernel/**` (`paths`), an AMD-only six-hourly cron (a schedule
  that chooses `backends: [rocm]`), and an AMD stage sized by `partitions: auto`.
- The checkout is `tests/data/sglang-repo` (the same test files) with this directory laid
  over it: its own configuration and an extra suite's test file.
- Each scenario asserts every stage's decision and reasons, as `plan --format json` gives them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT
from helpers import run_cli as run

OVERLAY = ROOT / "tests" / "data" / "sglang-ci-repo"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sglang-ci") / "repo"
    shutil.copytree(ROOT / "tests" / "data" / "sglang-repo", root)
    shutil.copytree(OVERLAY, root, dirs_exist_ok=True)
    return root

STAGES = ("stage-a-cpu-only", "stage-b-test-1-gpu-small", "stage-b-test-1-gpu-large", "base-b-test-1-gpu-large",
          "stage-b-kernel-benchmark-1-gpu-large", "stage-b-test-1-gpu-small-amd", "nightly-1-npu-a3",
          "per-commit-xpu", "extra-a-test-1-gpu")
KERNEL, AMD, NPU, EXTRA = STAGES[4], STAGES[5], STAGES[6], STAGES[8]
NOT_NIGHTLY_CADENCE = "skip: the regular cadence is not one of the stage's cadences (nightly)"
NO_RUN_CI = "skip: the PR lacks the label run-ci, which accelerator stages need (pull_request.require_labels)"
NO_EXTRA = "skip: the PR lacks the label run-ci-extra, which the stage requires (requires_labels)"
AMD_CRON = "0 */6 * * *"


def plan(repo: Path, tmp_path, capsys, *args: str, diff: str | None = None) -> dict:
    argv = ["plan", "--repo", str(repo), "--format", "json", *args]
    if diff is not None:
        (tmp_path / "pr.diff").write_bytes(f"M\0{diff}\0".encode())
        argv += ["--diff", str(tmp_path / "pr.diff")]
    rc, out, err = run(argv, capsys)
    assert (rc, err) == (0, "")
    return json.loads(out)


def decisions(doc: dict) -> dict[str, tuple[str, list[str]]]:
    return {s["name"]: (s["decision"], s["reasons"]) for s in doc["stages"]}


def test_the_repository_lints_clean(repo, capsys):
    assert run(["lint", "--repo", str(repo)], capsys) == (
        0, "ci-policy lint: OK: 0 errors, 0 warnings, 1 suppressed (12 test files, 15 registrations, 0 gates)\n", "")


def test_a_docs_change_plans_nothing(repo, tmp_path, capsys):
    doc = plan(repo, tmp_path, capsys, "--event", "pull_request", "--label", "run-ci", diff="docs/guide.md")
    only_docs = "skip: the diff touches only docs/guide.md"
    assert decisions(doc) == {
        **{name: ("skip", [only_docs]) for name in STAGES},
        KERNEL: ("skip", [only_docs + ": none of its test files, nothing under its paths"]),
        NPU: ("skip", [NOT_NIGHTLY_CADENCE]),
        EXTRA: ("skip", [NO_EXTRA]),
    }
    assert doc["images"] == {"cuda": "skip", "rocm": "skip", "npu": "skip", "xpu": "skip"}


def test_a_kernel_change_plans_the_kernel_stage_and_not_the_nightly_suites(repo, tmp_path, capsys):
    changed = "python/pkg/jit_kernel/benchmark/utils.py"
    doc = plan(repo, tmp_path, capsys, "--event", "pull_request", "--label", "run-ci", diff=changed)
    owned = f"skip: the diff touches only {changed}"
    assert decisions(doc) == {
        **{name: ("skip", [owned]) for name in STAGES},
        KERNEL: ("run", [f"run: {changed} changed under its paths (python/pkg/jit_kernel/**)"]),
        NPU: ("skip", [NOT_NIGHTLY_CADENCE]),
        EXTRA: ("skip", [NO_EXTRA]),
    }


def test_a_source_change_without_run_ci_plans_no_accelerator_stage(repo, tmp_path, capsys):
    doc = plan(repo, tmp_path, capsys, "--event", "pull_request", diff="python/pkg/srt/server.py")
    assert decisions(doc) == {
        **{name: ("skip", [NO_RUN_CI]) for name in STAGES},
        "stage-a-cpu-only": ("run", ["run: python/pkg/srt/server.py matches no rule and no stage's paths, so every "
                                     "stage without paths runs"]),
        NPU: ("skip", [NOT_NIGHTLY_CADENCE]),
        EXTRA: ("skip", [NO_RUN_CI, NO_EXTRA]),
    }


def test_with_run_ci_and_run_ci_extra_a_source_change_plans_every_per_commit_stage(repo, tmp_path, capsys):
    doc = plan(repo, tmp_path, capsys, "--event", "pull_request", "--label", "run-ci", "--label", "run-ci-extra",
               diff="python/pkg/srt/server.py")
    running = {name for name, (decision, _) in decisions(doc).items() if decision == "run"}
    assert running == set(STAGES) - {KERNEL, NPU}


def test_the_nightly_cron_plans_only_nightly_suites(repo, tmp_path, capsys):
    doc = plan(repo, tmp_path, capsys, "--event", "schedule", "--schedule", "0 0 * * *")
    none_nightly = ("skip: no selected tests (none of its tests is nightly; the nightly cadence selects only "
                    "nightly tests: cadences.nightly_selects: nightly_only)")
    assert decisions(doc) == {
        **{name: ("skip", [none_nightly]) for name in STAGES},
        AMD: ("run", ["run: schedule event runs every stage with selected tests (2 selected)"]),
        NPU: ("run", ["run: schedule event runs every stage with selected tests (2 selected)"]),
    }
    assert {s["name"]: [t["file"] for t in s["tests"]] for s in doc["stages"] if s["decision"] == "run"} == {
        AMD: ["test/registered/amd/test_amd_nightly.py", "test/registered/core/test_three_backends.py"],
        NPU: ["test/registered/core/test_three_backends.py", "test/registered/npu/test_npu_attention.py"]}


def test_the_amd_cron_plans_only_rocm_stages_and_auto_partitions_give_one_shard_for_one_short_test(
        repo, tmp_path, capsys):
    doc = plan(repo, tmp_path, capsys, "--event", "schedule", "--schedule", AMD_CRON)
    elsewhere = f"skip: not in this schedule (cadences.schedules[{AMD_CRON!r}] plans only rocm stages)"
    assert decisions(doc) == {
        **{name: ("skip", [elsewhere]) for name in STAGES},
        AMD: ("run", [f"run: schedule event runs every stage of cadences.schedules[{AMD_CRON!r}] (rocm stages) "
                      "with selected tests (1 selected)"]),
    }
    [amd] = [s for s in doc["stages"] if s["name"] == AMD]
    assert ([t["file"] for t in amd["tests"]], len(amd["shards"]), amd["shards_reason"]) == (
        ["test/registered/core/test_two_backends.py"], 1, "1 shard: 240s selected / 300s per shard")
    assert doc["images"] == {"cuda": "skip", "rocm": "build", "npu": "skip", "xpu": "skip"}


@pytest.mark.parametrize("cron, shards, reason", [
    (AMD_CRON, 1, "1 shard: 240s selected / 300s per shard"),
    ("0 0 * * *", 2, "2 shards: 1200s selected / 300s per shard = 4, but only 2 selected files"),
])
def test_auto_partitions_follow_the_selected_est_time(repo, tmp_path, capsys, cron, shards, reason):
    doc = plan(repo, tmp_path, capsys, "--event", "schedule", "--schedule", cron)
    [amd] = [s for s in doc["stages"] if s["name"] == AMD]
    assert (len(amd["shards"]), amd["shards_reason"]) == (shards, reason)
