"""The stage jobs: one matrix over (stage, lane), each lane's runner, image and timeout.

Exact entries for a small checkout (lanes from `max_parallel`, est_time-derived time
limits, built, default-tagged and absent images, a declared backend's options), the
bundled example as a golden file, and two properties: `lanes` places every shard in
exactly one lane and never opens more lanes than `max_parallel`; on random plans, every
shard of every running stage is in exactly one matrix entry, and only running stages
have entries. GitHub's 256 jobs per matrix: a 300-partition stage plans 256 jobs covering
every file, and the plan says which lanes were merged and why; waves split the matrix and
the plan shows them; over generated stage sets, `fit_lanes` fits the limit, runs every
shard once, and no allotment of the jobs has a shorter longest lane (brute force on small
limits, a proportional share at 256).
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
from helpers import assert_golden
from hypothesis import given, settings
from hypothesis import strategies as st
from plan.test_selection import CONFIG as SELECTION_CONFIG
from plan.test_selection import FILES, LABELS, RECORD, TRIGGER, diff_of

from ci_policy.app.plan_documents import github_outputs, plan_dict
from ci_policy.model.snapshot import Snapshot, load_snapshot
from ci_policy.plan.build import build_plan
from ci_policy.plan.jobs import (
    DEFAULT_TIMEOUT_MINUTES,
    SETUP_MINUTES,
    ImageBuild,
    MatrixEntry,
    _lpt,
    fit_lanes,
    lanes,
    stage_jobs,
)
from ci_policy.plan.partition import Shard
from ci_policy.plan.policy import Trigger
from ci_policy.read.diff import Diff
from ci_policy.render.github import plan_annotations
from ci_policy.render.markdown import plan_markdown
from ci_policy.render.text import plan_text

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


# -- GitHub's 256 jobs per matrix, and waves -----------------------------------------------------

def big_stage(partitions: int, after: str = "") -> str:
    return (f"version: 1\ngpu_requires_labels: false\ndiscovery:\n  roots: [tests]\nstages:\n"
            f"  - {{name: cpu, backend: cpu}}\n"
            f"  - {{name: gpu, backend: cuda, runs_on: [h200], partitions: {partitions}{after}}}\n")


def test_a_300_partition_stage_plans_at_most_256_jobs_covering_every_file(make_repo):
    files = {f"tests/test_g{i:03}.py": reg("cuda", "gpu", 10 + i % 7) for i in range(300)}
    files["tests/test_cpu.py"] = reg("cpu", "cpu", 5)
    plan = build_plan(load_snapshot(make_repo(files, config=big_stage(300), labels=None)),
                      Trigger(event="workflow_dispatch"), Diff.unavailable("none"))
    gpu_plan = plan.stage("gpu")
    assert gpu_plan is not None and len(gpu_plan.shards) == 300
    jobs = stage_jobs(plan, SHA)
    assert len(jobs.entries) == 256 and len(jobs.matrix(0)["include"]) == 256
    gpu_entries = [e for e in jobs.entries if e.stage == "gpu"]
    assert len(gpu_entries) == 255  # the cpu stage keeps its one job
    assert sorted(i for e in gpu_entries for i in e.shards) == list(range(300))
    covered = sorted(f for e in gpu_entries for i in e.shards for f in gpu_plan.shard(i).files)
    assert covered == sorted(f for f in files if f != "tests/test_cpu.py")
    # 300 shards of 10..16 s (43 of 10 s, 43 of 11 s, 43 of 12 s, ...) in 255 lanes: 45 lanes run
    # two shards one after another, the 90 shortest; any 45 pairs hold one of 22 s at least.
    assert sorted(len(e.shards) for e in gpu_entries) == [1] * 210 + [2] * 45
    longest = max(sum(gpu_plan.shard(i).est_seconds for i in e.shards) for e in gpu_entries)
    assert longest == 22
    assert [m.as_dict() for m in jobs.merges] == [{
        "stage": "gpu", "wave": 0, "lanes_from": 300, "lanes_to": 255,
        "reason": "300 lanes merged into 255: wave 0 needs 301 jobs and GitHub runs at most 256 jobs per matrix "
                  f"(Actions limits, \"Job matrix\"); each lane runs its shards one after another (longest lane "
                  f"{longest:g}s est)"}]
    assert "lanes merged:\n  gpu: 300 lanes merged into 255: wave 0 needs 301 jobs" in plan_text(plan, jobs)
    assert ("**Lanes merged** (GitHub runs at most 256 jobs per matrix)\n\n- gpu: 300 lanes merged into 255: wave 0 "
            "needs 301 jobs") in plan_markdown(plan, jobs)
    assert plan_annotations(plan, jobs).splitlines()[-1] == f"::notice title=lanes merged::gpu: {jobs.merges[0].reason}"
    outputs = github_outputs(plan, "EOF", SHA)
    assert f"merged_lanes<<EOF\n{json.dumps([jobs.merges[0].as_dict()], separators=(',', ':'))}\nEOF\n" in outputs
    assert "wave_jobs<<EOF\n[256,0,0,0]\nEOF\n" in outputs
    doc = plan_dict(plan, SHA)
    assert doc["merged_lanes"] == [jobs.merges[0].as_dict()]
    assert len(doc["jobs"]) == 256


def test_waves_split_the_matrix_and_the_plan_shows_them(make_repo):
    config = big_stage(2, ", after: [cpu]") + "  - {name: late, backend: cpu, after: [gpu, cpu]}\n"
    files = {"tests/test_cpu.py": reg("cpu", "cpu", 5), "tests/test_late.py": reg("cpu", "late", 5),
             **{f"tests/test_g{i}.py": reg("cuda", "gpu", 10) for i in range(2)}}
    plan = build_plan(load_snapshot(make_repo(files, config=config, labels=None)),
                      Trigger(event="pull_request"), Diff.unavailable("none"))
    jobs = stage_jobs(plan, SHA)
    assert [[(e.stage, e.lane) for e in wave] for wave in jobs.waves] == [
        [("cpu", 0)], [("gpu", 0), ("gpu", 1)], [("late", 0)], []]
    assert jobs.merges == ()
    text = plan_text(plan, stage_jobs(plan, None))
    assert ("waves, one after another: a failed wave skips the later ones (fast-fail; the bypass-fastfail label "
            "runs them all)\n  0: cpu; 1 job\n  1: gpu; 2 jobs\n  2: late; 1 job\n") in text
    assert ("**Waves, one after another: a failed wave skips the later ones (fast-fail; the bypass-fastfail "
            "label runs them all)**\n\n- wave 0: cpu; 1 job\n- wave 1: gpu; 2 jobs\n- wave 2: late; 1 job\n"
            ) in plan_markdown(plan, stage_jobs(plan, None))
    outputs = github_outputs(plan, "EOF", SHA)
    assert "wave_jobs<<EOF\n[1,2,1,0]\nEOF\n" in outputs
    assert "stage_matrix_3<<EOF\n{\"include\":[]}\nEOF\n" in outputs
    assert json.loads(outputs.split("stage_matrix_1<<EOF\n")[1].split("\nEOF")[0]) == jobs.matrix(1)
    doc = plan_dict(plan, SHA)
    assert [(s["name"], s["wave"]) for s in doc["stages"]] == [("cpu", 0), ("gpu", 1), ("late", 2)]
    assert [(j["stage"], j["wave"]) for j in doc["jobs"]] == [("cpu", 0), ("gpu", 1), ("gpu", 1), ("late", 2)]
    bypass = build_plan(plan.snapshot, Trigger(event="pull_request", labels=("bypass-fastfail",)),
                        Diff.unavailable("none"))
    assert "waves, one after another: every wave runs, whatever the earlier ones did (bypass_fastfail)" in (
        plan_text(bypass, stage_jobs(bypass, None)))


def test_a_configuration_without_after_shows_no_wave(jobs_checkout):
    plan = build_plan(jobs_checkout, Trigger(event="workflow_dispatch"), Diff.unavailable("none"))
    jobs = stage_jobs(plan, None)
    assert "waves" not in plan_text(plan, jobs) and "Waves" not in plan_markdown(plan, jobs)
    doc = plan_dict(plan, SHA)
    assert all("wave" not in s for s in doc["stages"]) and all("wave" not in j for j in doc["jobs"])
    assert "merged_lanes" not in doc


def _candidates(shards: tuple[Shard, ...], natural: tuple[tuple[int, ...], ...]) -> list[float]:
    """A stage's longest lane with at most k lanes, k = 1 .. its natural count (what fit_lanes may pick)."""
    best, out = math.inf, []
    for k in range(1, len(natural) + 1):
        lanes_k = natural if k == len(natural) else _lpt(shards, k)
        est = {sh.index: sh.est_seconds for sh in shards}
        best = min(best, max(sum(est[i] for i in lane) for lane in lanes_k))
        out.append(best)
    return out


stage_sets = st.lists(st.tuples(st.lists(st.integers(0, 50), min_size=1, max_size=9),
                                st.one_of(st.none(), st.integers(1, 9))), min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(stage_set=stage_sets, limit=st.integers(1, 20))
def test_fit_lanes_fits_covers_every_shard_and_keeps_the_longest_lane_shortest(stage_set, limit):
    stages = []
    for ests, max_parallel in stage_set:
        shards = tuple(Shard(i, float(e), (f"f{i}",)) for i, e in enumerate(sorted(ests, reverse=True)))
        stages.append((shards, lanes(len(shards), max_parallel)))
    if len(stages) > limit:
        with pytest.raises(ValueError, match=f"{len(stages)} stages cannot share {limit} jobs"):
            fit_lanes(stages, limit)
        return
    fitted = fit_lanes(stages, limit)
    assert fitted == fit_lanes(list(stages), limit)  # deterministic
    assert sum(len(f) for f in fitted) <= limit
    for (shards, natural), got in zip(stages, fitted, strict=True):
        assert sorted(i for lane in got for i in lane) == [sh.index for sh in shards]
        assert 1 <= len(got) <= len(natural) and all(got)
    if sum(len(n) for _, n in stages) <= limit:
        assert fitted == [n for _, n in stages]
        return
    # No allotment of the jobs to these stages' splits has a shorter longest lane.
    options = [_candidates(shards, natural) for shards, natural in stages]
    best = min(max(opt[k - 1] for opt, k in zip(options, ks, strict=True))
               for ks in itertools.product(*(range(1, len(o) + 1) for o in options)) if sum(ks) <= limit)
    est = [{sh.index: sh.est_seconds for sh in shards} for shards, _ in stages]
    assert max(sum(e[i] for i in lane) for e, got in zip(est, fitted, strict=True) for lane in got) == best


big_stage_sets = st.lists(st.tuples(st.integers(1, 400), st.one_of(st.none(), st.integers(1, 300)),
                                    st.integers(0, 2**16)), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(stage_set=big_stage_sets)
def test_any_wave_fits_256_jobs_and_runs_every_shard_once(stage_set):
    stages = []
    for count, max_parallel, seed in stage_set:
        # est values from the seed, longest first as the partitioner numbers shards
        ests = sorted(((seed * (i + 7) * 2654435761) % 3600 for i in range(count)), reverse=True)
        shards = tuple(Shard(i, float(e), (f"f{i}",)) for i, e in enumerate(ests))
        stages.append((shards, lanes(count, max_parallel)))
    fitted = fit_lanes(stages)
    assert sum(len(f) for f in fitted) <= 256
    for (shards, natural), got in zip(stages, fitted, strict=True):
        assert sorted(i for lane in got for i in lane) == list(range(len(shards)))
        assert 1 <= len(got) <= len(natural)
    total = sum(len(n) for _, n in stages)
    if total <= 256:
        assert fitted == [n for _, n in stages]
        return
    # No longer than a proportional share of the jobs, each stage's shards dealt longest first.
    share = [max(1, (256 - len(stages)) * len(n) // total) for _, n in stages]
    baseline = [n if k == len(n) else _lpt(shards, k) for (shards, n), k in zip(stages, share, strict=True)]

    def longest(all_lanes: list[tuple[tuple[int, ...], ...]]) -> float:
        return max(sum(shards[i].est_seconds for i in lane)
                   for (shards, _), lanes_of in zip(stages, all_lanes, strict=True) for lane in lanes_of)

    assert longest(fitted) <= longest(baseline)
