"""The stage jobs: one matrix over (stage, lane), each lane's runner, image and timeout.

Exact entries for a small checkout (lanes from `max_parallel`, est_time-derived time
limits, built, default-tagged and absent images, a declared backend's options), the
bundled example as a golden file, and two properties: `lanes` places every shard in
exactly one lane and never opens more lanes than `max_parallel`; on random plans, every
shard of every running stage is in exactly one matrix entry, and only running stages
have entries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import assert_golden
from hypothesis import given, settings
from hypothesis import strategies as st
from plan.test_selection import CONFIG as SELECTION_CONFIG
from plan.test_selection import FILES, LABELS, RECORD, TRIGGER, diff_of

from ci_policy.model.snapshot import Snapshot, load_snapshot
from ci_policy.plan.build import build_plan
from ci_policy.plan.jobs import DEFAULT_TIMEOUT_MINUTES, SETUP_MINUTES, ImageBuild, MatrixEntry, lanes, stage_jobs
from ci_policy.plan.policy import Trigger
from ci_policy.read.diff import Diff

ROOT = Path(__file__).resolve().parents[2]
SHA = "0123456789abcdef0123456789abcdef01234567"
MAIN = '\nif __name__ == "__main__":\n    main()\n'


@pytest.mark.parametrize("shards, max_parallel, expected", [
    (5, 2, ((0, 2, 4), (1, 3))),
    (3, None, ((0,), (1,), (2,))),
    (3, 3, ((0,), (1,), (2,))),
    (2, 4, ((0,), (1,))),
    (4, 1, ((0, 1, 2, 3),)),
    (1, 1, ((0,),)),
])
def test_lanes(shards, max_parallel, expected):
    assert lanes(shards, max_parallel) == expected


CONFIG = """\
version: 1
gpu_requires_labels: false
backends:
  npu: {container_options: "--device /dev/davinci0"}
markers:
  names: {register_npu_ci: npu}
discovery:
  roots: [tests]
stages:
  - {name: cpu, backend: cpu}
  - {name: gpu, backend: cuda, runs_on: [h200, 1gpu], partitions: 5, max_parallel: 2}
  - {name: amd, backend: rocm, runs_on: [mi350], timeout_per_file: 100}
  - {name: npu, backend: npu, runs_on: [a3], timeout_per_file: 61}
  - {name: ext, backend: cuda, external: true}
runner:
  timeout_from_est_time: {factor: 2, floor: 600}
file_run:
  default_tag: stable
images:
  cuda: {repository: ghcr.io/org/ci-cuda, dockerfile: docker/cuda.Dockerfile}
  rocm: {repository: ghcr.io/org/ci-rocm, dockerfile: docker/rocm/Dockerfile, context: docker/rocm}
"""


def reg(backend: str, suite: str, est: int) -> str:
    return f"from ci_policy import register_{backend}_ci\n\nregister_{backend}_ci({est}, {suite!r})\n" + MAIN


JOB_FILES = {
    "tests/test_cpu.py": reg("cpu", "cpu", 5),
    # est 1000, 900, 800, 100, 50: five shards, one file each, in that order.
    **{f"tests/test_gpu_{est}.py": reg("cuda", "gpu", est) for est in (1000, 900, 800, 100, 50)},
    "tests/test_amd.py": reg("rocm", "amd", 30),
    "tests/test_npu.py": reg("npu", "npu", 10),
}


@pytest.fixture
def jobs_checkout(make_repo) -> Snapshot:
    repo = make_repo(JOB_FILES, config=CONFIG, labels=None)
    snapshot = load_snapshot(repo)
    assert snapshot.errors == ()
    return snapshot


def gpu(lane: int, shards: tuple[int, ...], image: str, minutes: int) -> MatrixEntry:
    return MatrixEntry("gpu", lane, shards, "cuda", ("h200", "1gpu"), image, "--gpus all", minutes)


ROCM_OPTIONS = "--device /dev/kfd --device /dev/dri --group-add video --group-add render"


def test_entries_of_every_running_stage(jobs_checkout):
    plan = build_plan(jobs_checkout, Trigger(event="workflow_dispatch"), Diff.unavailable("none"))
    assert [(s.name, [sh.files for sh in s.shards]) for s in plan.stages if s.name == "gpu"] == [
        ("gpu", [("tests/test_gpu_1000.py",), ("tests/test_gpu_900.py",), ("tests/test_gpu_800.py",),
                 ("tests/test_gpu_100.py",), ("tests/test_gpu_50.py",)])]
    jobs = stage_jobs(plan, SHA)
    # Limits: max(600, 2 * est): lane 0 = 2000 + 1600 + 600 s, lane 1 = 1800 + 600 s; amd and
    # npu: max(600, 2 * est) capped by the stage's own timeout_per_file (100 s, 61 s).
    assert jobs.entries == (
        MatrixEntry("cpu", 0, (0,), "cpu", ("ubuntu-latest",), "", "", 10 + SETUP_MINUTES),
        gpu(0, (0, 2, 4), f"ghcr.io/org/ci-cuda:{SHA}", 70 + SETUP_MINUTES),
        gpu(1, (1, 3), f"ghcr.io/org/ci-cuda:{SHA}", 40 + SETUP_MINUTES),
        MatrixEntry("amd", 0, (0,), "rocm", ("mi350",), f"ghcr.io/org/ci-rocm:{SHA}", ROCM_OPTIONS, 2 + SETUP_MINUTES),
        MatrixEntry("npu", 0, (0,), "npu", ("a3",), "", "--device /dev/davinci0", 2 + SETUP_MINUTES),
    )
    assert jobs.images_to_build == (
        ImageBuild("cuda", f"ghcr.io/org/ci-cuda:{SHA}", "docker/cuda.Dockerfile", "."),
        ImageBuild("rocm", f"ghcr.io/org/ci-rocm:{SHA}", "docker/rocm/Dockerfile", "docker/rocm"),
    )
    assert jobs.has_stage_jobs
    assert jobs.matrix()["include"][1] == {
        "stage": "gpu", "lane": 0, "shards": "0 2 4", "backend": "cuda", "runs_on": ["h200", "1gpu"],
        "image": f"ghcr.io/org/ci-cuda:{SHA}", "container_options": "--gpus all", "timeout_minutes": 80}


def test_without_a_head_sha_nothing_is_built_and_the_default_tag_is_used(jobs_checkout):
    plan = build_plan(jobs_checkout, Trigger(event="workflow_dispatch"), Diff.unavailable("none"))
    jobs = stage_jobs(plan, None)
    assert jobs.images_to_build == ()
    assert [(e.stage, e.lane, e.image) for e in jobs.entries] == [
        ("cpu", 0, ""), ("gpu", 0, "ghcr.io/org/ci-cuda:stable"), ("gpu", 1, "ghcr.io/org/ci-cuda:stable"),
        ("amd", 0, "ghcr.io/org/ci-rocm:stable"), ("npu", 0, "")]


def test_an_image_is_built_only_for_a_backend_that_runs(jobs_checkout):
    # A push touching only the amd test: the cuda and npu stages are pruned.
    plan = build_plan(jobs_checkout, Trigger(event="push"), diff_of(["M", "tests/test_amd.py"]))
    jobs = stage_jobs(plan, SHA)
    assert [(e.stage, e.image) for e in jobs.entries] == [("cpu", ""), ("amd", f"ghcr.io/org/ci-rocm:{SHA}")]
    assert [b.backend for b in jobs.images_to_build] == ["rocm"]


def test_a_file_without_a_time_limit_gives_githubs_default(make_repo):
    repo = make_repo(JOB_FILES, config=CONFIG.replace("runner:\n  timeout_from_est_time: {factor: 2, floor: 600}\n",
                                                       ""), labels=None)
    plan = build_plan(load_snapshot(repo), Trigger(event="workflow_dispatch"), Diff.unavailable("none"))
    assert [(e.stage, e.lane, e.timeout_minutes) for e in stage_jobs(plan, SHA).entries] == [
        ("cpu", 0, DEFAULT_TIMEOUT_MINUTES), ("gpu", 0, DEFAULT_TIMEOUT_MINUTES), ("gpu", 1, DEFAULT_TIMEOUT_MINUTES),
        # timeout_per_file 100s: ceil(100 / 60) + 10; 61s: ceil(61 / 60) + 10.
        ("amd", 0, 12), ("npu", 0, 12)]


def test_an_untrusted_head_has_no_accelerator_job_and_builds_nothing(jobs_checkout):
    plan = build_plan(jobs_checkout, Trigger(event="pull_request", trust="untrusted"), Diff.unavailable("none"))
    jobs = stage_jobs(plan, SHA)
    assert [e.stage for e in jobs.entries] == ["cpu"]
    assert jobs.images_to_build == ()


def test_no_running_stage_means_no_stage_jobs(make_repo):
    files = {rel: text for rel, text in JOB_FILES.items() if rel != "tests/test_cpu.py"}
    plan = build_plan(load_snapshot(make_repo(files, config=CONFIG, labels=None)),
                      Trigger(event="pull_request", trust="untrusted"), Diff.unavailable("none"))
    assert [s.decision for s in plan.stages] == ["skip"] * 4
    jobs = stage_jobs(plan, SHA)
    assert (jobs.entries, jobs.has_stage_jobs, jobs.matrix(), jobs.images_to_build) == ((), False, {"include": []}, ())


def test_the_example_jobs(monkeypatch):
    monkeypatch.chdir(ROOT)
    from ci_policy.read.diff import read_diff_file

    snapshot = load_snapshot(ROOT / "examples" / "gpu-repo")
    out = {}
    for name, trigger, diff in (
        ("quickstart", Trigger(event="pull_request", labels=("run-ci-sglang", "documentation")),
         read_diff_file(ROOT / "examples" / "pr-42.diff")),
        ("weekly", Trigger(event="schedule", schedule="0 15 * * 6"), Diff.unavailable("none")),
        ("untrusted", Trigger(event="pull_request", labels=("run-ci-all",), trust="untrusted"),
         read_diff_file(ROOT / "examples" / "pr-42.diff")),
    ):
        jobs = stage_jobs(build_plan(snapshot, trigger, diff), SHA)
        out[name] = {"stage_matrix": jobs.matrix(), "has_stage_jobs": jobs.has_stage_jobs,
                     "images_to_build": [b.as_dict() for b in jobs.images_to_build]}
    assert_golden("plan/jobs-example.json", json.dumps(out, indent=2) + "\n")


# -- properties -----------------------------------------------------------------------------------

@given(shards=st.integers(0, 40), max_parallel=st.one_of(st.none(), st.integers(1, 50)))
def test_lanes_hold_every_shard_once_and_respect_max_parallel(shards, max_parallel):
    result = lanes(shards, max_parallel)
    assert sorted(i for lane in result for i in lane) == list(range(shards))
    assert all(lane for lane in result)
    assert len(result) == (min(shards, max_parallel) if max_parallel is not None else shards)
    for lane in result:
        assert list(lane) == sorted(lane)


MAX_PARALLEL_CONFIG = SELECTION_CONFIG.replace("EXPLICIT", "run").replace(
    "{name: gpu-b, backend: cuda, runs_on: [h200, 4gpu], partitions: 2}",
    "{name: gpu-b, backend: cuda, runs_on: [h200, 4gpu], partitions: 4, max_parallel: 1}").replace(
    "{name: gpu-a, backend: cuda, runs_on: [h200], partitions: 2}",
    "{name: gpu-a, backend: cuda, runs_on: [h200], partitions: 3, max_parallel: 2}")


@pytest.fixture(scope="module")
def lane_snapshot(tmp_path_factory) -> Snapshot:
    repo = tmp_path_factory.mktemp("lanes")
    for rel, text in {**FILES, ".github/ci-policy.yml": MAX_PARALLEL_CONFIG, "labels.py": LABELS}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return load_snapshot(repo).require_valid()


@settings(max_examples=150, deadline=None)
@given(trigger=TRIGGER, trust=st.sampled_from(["trusted", "approved", "untrusted"]),
       records=st.one_of(st.none(), st.lists(RECORD, min_size=1, max_size=5)),
       head=st.sampled_from([None, SHA]))
def test_every_running_shard_is_in_exactly_one_entry(lane_snapshot, trigger, trust, records, head):
    from dataclasses import replace

    diff = diff_of(None if records is None else [f for record in records for f in record])
    plan = build_plan(lane_snapshot, replace(trigger, trust=trust), diff)
    jobs = stage_jobs(plan, head)
    placed = [(e.stage, i) for e in jobs.entries for i in e.shards]
    assert sorted(placed) == sorted((s.name, sh.index) for s in plan.stages if s.decision == "run"
                                    for sh in s.shards)
    for s in plan.stages:
        mine = [e for e in jobs.entries if e.stage == s.name]
        assert [e.lane for e in mine] == list(range(len(mine)))
        if s.max_parallel is not None:
            assert len(mine) <= s.max_parallel
        assert all(e.runs_on == (s.stage.runs_on or ("ubuntu-latest",)) for e in mine)
    assert jobs.has_stage_jobs == bool(placed)
    assert bool(jobs.images_to_build) is False  # the selection checkout configures no image
