"""The stage plan: decisions, shards, image preparation, skipped stages, matrix and warnings.

Table-driven over one small checkout with a CPU stage, a 3-partition CUDA stage, a
2-partition ROCm stage and an external stage; every row asserts the whole plan summary.
"""

from __future__ import annotations

import pytest

from ci_policy.errors import InputError, InputErrors, UsageError
from ci_policy.model.snapshot import load_snapshot
from ci_policy.plan.build import build_plan, shard_of
from ci_policy.plan.policy import Trigger
from ci_policy.read.diff import Diff, read_diff

MAIN = '\nif __name__ == "__main__":\n    main()\n'

CONFIG = """\
version: 1
discovery:
  roots: [tests]
  implicit:
    - {root: tests/unit, backend: cpu, suite: cpu, est_time: 1.5, cpu_only: true}
stages:
  - {name: cpu, backend: cpu}
  - {name: gpu-a, backend: cuda, runs_on: [h200], partitions: 3}
  - {name: amd, backend: rocm, runs_on: [mi350], partitions: 2}
  - {name: ext, backend: cuda, external: true}
cadences:
  schedules: {"0 3 * * *": nightly}
selection:
  explicit: EXPLICIT
  no_gpu_paths: ["docs/**"]
  rules:
    - {paths: ["src/amd/**"], labels: [amd]}
"""

LABELS = 'KNOWN_LABELS = {"megatron": "Megatron", "fsdp": "FSDP", "amd": "ROCm"}\n'


def cuda(call: str) -> str:
    return "from ci_policy import register_cuda_ci\n\n" + call + "\n" + MAIN


FILES = {
    "tests/unit/test_a.py": "def test_a():\n    pass\n",
    "tests/unit/test_b.py": "def test_b():\n    pass\n",
    "tests/gpu/test_big.py": cuda('register_cuda_ci(1000, "gpu-a", labels=["megatron"])'),
    "tests/gpu/test_m1.py": cuda('register_cuda_ci(200, "gpu-a", labels=["megatron"])'),
    "tests/gpu/test_m2.py": cuda('register_cuda_ci(200, "gpu-a", labels=["megatron"])'),
    "tests/gpu/test_m3.py": cuda('register_cuda_ci(100, "gpu-a", labels=["megatron"])'),
    "tests/gpu/test_f.py": (
        "from ci_policy import register_cuda_ci, register_rocm_ci\n\n"
        'register_cuda_ci(300, "gpu-a", labels=["fsdp"])\n'
        'register_rocm_ci(300, "amd", labels=["fsdp", "amd"])\n' + MAIN),
    "tests/gpu/test_off.py": cuda('register_cuda_ci(50, "gpu-a", labels=["fsdp"], disabled="broken, see #9")'),
    "tests/gpu/test_amd1.py": (
        "from ci_policy import register_rocm_ci\n\n"
        'register_rocm_ci(300, "amd", labels=["amd"])\n' + MAIN),
    "tests/gpu/test_night.py": (
        "from ci_policy import register_rocm_ci\n\n"
        'register_rocm_ci(70, "amd", labels=["amd"], nightly=True)\n' + MAIN),
    "tests/gpu/test_ext.py": cuda('register_cuda_ci(5000, "ext", labels=["megatron"])'),
}


def snapshot_of(make_repo, explicit="run"):
    return load_snapshot(make_repo(FILES, config=CONFIG.replace("EXPLICIT", explicit), labels=LABELS))


def diff_of(records):
    if records is None:
        return read_diff(b"", "pr.diff")
    return read_diff(("\0".join(records) + "\0").encode(), "pr.diff")


def summary(plan) -> dict:
    return {
        "stages": {s.name: (s.decision, [[*sh.files] for sh in s.shards], [sh.est_seconds for sh in s.shards])
                   for s in plan.stages},
        "images": dict(plan.images),
        "skipped": list(plan.skipped_stages),
        "matrix": plan.matrix,
        "warnings": list(plan.warnings),
    }


U = ["tests/unit/test_a.py", "tests/unit/test_b.py"]
CPU = ("run", [U], [3])
SKIP = ("skip", [], [])
BIG_WARNING = ("gpu-a: tests/gpu/test_big.py alone (est 1000s) exceeds the stage's mean shard time (500s); "
               "the stage cannot finish sooner than this file")
DOCS = ["M", "docs/a.md"]

CASES = [
    pytest.param(
        "run", Trigger("pull_request"), DOCS,
        {"stages": {"cpu": CPU, "gpu-a": SKIP, "amd": SKIP},
         "images": {"cuda": "skip", "rocm": "skip"}, "skipped": ["gpu-a", "amd"],
         "matrix": {"cpu": [0], "gpu-a": [], "amd": []}, "warnings": []},
        id="docs-only-pr-skips-gpu-stages-and-both-images"),
    pytest.param(
        "prune", Trigger("pull_request", labels=("run-ci-megatron", "run-ci-amd")), DOCS,
        {"stages": {"cpu": CPU, "gpu-a": SKIP, "amd": SKIP},
         "images": {"cuda": "skip", "rocm": "skip"}, "skipped": ["gpu-a", "amd"],
         "matrix": {"cpu": [0], "gpu-a": [], "amd": []}, "warnings": []},
        id="docs-only-pr-with-pruned-explicit-labels-skips-both-images"),
    pytest.param(
        "run", Trigger("pull_request", labels=("run-ci-megatron",)), DOCS,
        {"stages": {"cpu": CPU,
                    "gpu-a": ("run", [["tests/gpu/test_big.py"], ["tests/gpu/test_m1.py", "tests/gpu/test_m3.py"],
                                      ["tests/gpu/test_m2.py"]], [1000, 300, 200]),
                    "amd": SKIP},
         "images": {"cuda": "build", "rocm": "skip"}, "skipped": ["amd"],
         "matrix": {"cpu": [0], "gpu-a": [0, 1, 2], "amd": []}, "warnings": [BIG_WARNING]},
        id="cuda-only-builds-only-the-cuda-image"),
    pytest.param(
        "run", Trigger("pull_request"), ["M", "src/amd/kernels.py"],
        {"stages": {"cpu": CPU, "gpu-a": SKIP,
                    "amd": ("run", [["tests/gpu/test_amd1.py"], ["tests/gpu/test_f.py"]], [300, 300])},
         "images": {"cuda": "skip", "rocm": "build"}, "skipped": ["gpu-a"],
         "matrix": {"cpu": [0], "gpu-a": [], "amd": [0, 1]}, "warnings": []},
        id="rule-builds-only-the-rocm-image-and-equal-shards-warn-nothing"),
    pytest.param(
        "run", Trigger("pull_request", labels=("run-ci-fsdp",)), ["M", "setup.py"],
        {"stages": {"cpu": CPU, "gpu-a": ("run", [["tests/gpu/test_f.py"]], [300]),
                    "amd": ("run", [["tests/gpu/test_f.py"]], [300])},
         "images": {"cuda": "build", "rocm": "build"}, "skipped": [],
         "matrix": {"cpu": [0], "gpu-a": [0], "amd": [0]}, "warnings": []},
        id="one-shard-when-one-file-whatever-the-partitions"),
    pytest.param(
        "run", Trigger("pull_request", labels=("run-ci-megatron", "run-ci-fsdp", "run-ci-amd")), ["M", "setup.py"],
        {"stages": {"cpu": CPU,
                    "gpu-a": ("run", [["tests/gpu/test_big.py"], ["tests/gpu/test_f.py", "tests/gpu/test_m3.py"],
                                      ["tests/gpu/test_m1.py", "tests/gpu/test_m2.py"]], [1000, 400, 400]),
                    "amd": ("run", [["tests/gpu/test_amd1.py"], ["tests/gpu/test_f.py"]], [300, 300])},
         "images": {"cuda": "build", "rocm": "build"}, "skipped": [],
         "matrix": {"cpu": [0], "gpu-a": [0, 1, 2], "amd": [0, 1]},
         "warnings": ["gpu-a: tests/gpu/test_big.py alone (est 1000s) exceeds the stage's mean shard time (600s); "
                      "the stage cannot finish sooner than this file"]},
        id="every-label-shards-longest-first-to-the-least-loaded"),
    pytest.param(
        "run", Trigger("pull_request"), ["M", "tests/gpu/test_f.py"],
        {"stages": {"cpu": CPU, "gpu-a": SKIP, "amd": SKIP},
         "images": {"cuda": "skip", "rocm": "skip"}, "skipped": ["gpu-a", "amd"],
         "matrix": {"cpu": [0], "gpu-a": [], "amd": []},
         "warnings": ["tests/gpu/test_f.py changed but is not selected (needs one of: fsdp; needs one of: fsdp, "
                      "amd), so it does not run"]},
        id="changed-test-that-is-not-selected-warns"),
    pytest.param(
        "run", Trigger("pull_request", labels=("run-ci-fsdp",)), ["M", "tests/gpu/test_off.py"],
        {"stages": {"cpu": CPU, "gpu-a": ("run", [["tests/gpu/test_f.py"]], [300]),
                    "amd": ("run", [["tests/gpu/test_f.py"]], [300])},
         "images": {"cuda": "build", "rocm": "build"}, "skipped": [],
         "matrix": {"cpu": [0], "gpu-a": [0], "amd": [0]},
         "warnings": ["tests/gpu/test_off.py changed but is not selected (disabled: broken, see #9), "
                      "so it does not run"]},
        id="changed-disabled-test-warns"),
    pytest.param(
        "run", Trigger("pull_request", labels=("run-ci-amd", "run-ci-typo")), ["M", "tests/gpu/test_night.py"],
        {"stages": {"cpu": CPU, "gpu-a": SKIP,
                    "amd": ("run", [["tests/gpu/test_amd1.py"], ["tests/gpu/test_f.py"]], [300, 300])},
         "images": {"cuda": "skip", "rocm": "build"}, "skipped": ["gpu-a"],
         "matrix": {"cpu": [0], "gpu-a": [], "amd": [0, 1]},
         "warnings": ["PR label run-ci-typo names no known label or scope; it selects nothing",
                      "tests/gpu/test_night.py changed but is not selected (nightly-only; the regular cadence "
                      "does not admit nightly tests), so it does not run"]},
        id="changed-nightly-test-warns-after-policy-warnings"),
    pytest.param(
        "prune", Trigger("pull_request", labels=("run-ci-megatron", "run-ci-typo")), None,
        {"stages": {"cpu": CPU,
                    "gpu-a": ("run", [["tests/gpu/test_big.py"], ["tests/gpu/test_m1.py", "tests/gpu/test_m3.py"],
                                      ["tests/gpu/test_m2.py"]], [1000, 300, 200]),
                    "amd": SKIP},
         "images": {"cuda": "build", "rocm": "skip"}, "skipped": ["amd"],
         "matrix": {"cpu": [0], "gpu-a": [0, 1, 2], "amd": []},
         "warnings": ["diff unavailable: pr.diff: the diff is empty",
                      "PR label run-ci-typo names no known label or scope; it selects nothing", BIG_WARNING]},
        id="unavailable-diff-warns-first-and-runs-runnable-stages"),
    pytest.param(
        "run", Trigger("schedule", schedule="0 3 * * *"), None,
        {"stages": {"cpu": CPU,
                    "gpu-a": ("run", [["tests/gpu/test_big.py"], ["tests/gpu/test_f.py", "tests/gpu/test_m3.py"],
                                      ["tests/gpu/test_m1.py", "tests/gpu/test_m2.py"]], [1000, 400, 400]),
                    "amd": ("run", [["tests/gpu/test_amd1.py", "tests/gpu/test_night.py"], ["tests/gpu/test_f.py"]],
                            [370, 300])},
         "images": {"cuda": "build", "rocm": "build"}, "skipped": [],
         "matrix": {"cpu": [0], "gpu-a": [0, 1, 2], "amd": [0, 1]},
         # amd's mean shard time is 335s: no file alone exceeds it, so only gpu-a warns.
         "warnings": ["gpu-a: tests/gpu/test_big.py alone (est 1000s) exceeds the stage's mean shard time (600s); "
                      "the stage cannot finish sooner than this file"]},
        id="schedule-runs-everything-selected-without-a-diff-warning"),
]


@pytest.mark.parametrize("explicit, trigger, records, expected", CASES)
def test_plan(make_repo, explicit, trigger, records, expected):
    plan = build_plan(snapshot_of(make_repo, explicit), trigger, diff_of(records))
    assert summary(plan) == expected
    for stage in plan.stages:
        assert stage.decision in ("run", "skip")
        if stage.decision == "skip":
            assert (stage.tests, stage.shards) == ((), ())
            continue
        # Every selected file runs in exactly one non-empty shard; the bound of list scheduling holds.
        files = [f for sh in stage.shards for f in sh.files]
        assert sorted(files) == [r.file for r in stage.tests] == sorted(set(files))
        assert all(sh.files for sh in stage.shards)
        assert len(stage.shards) == min(stage.stage.partitions, len(stage.tests))
        total, longest = sum(r.est_time for r in stage.tests), max(r.est_time for r in stage.tests)
        assert stage.wall_seconds <= total / len(stage.shards) + longest
        assert stage.est_seconds == total


def test_external_stage_is_absent_from_the_plan(make_repo):
    snapshot = snapshot_of(make_repo)
    plan = build_plan(snapshot, Trigger("schedule", schedule="0 3 * * *"), Diff.unavailable("none"))
    assert [s.name for s in plan.stages] == ["cpu", "gpu-a", "amd"]
    assert plan.stage("ext") is None
    assert "ext" not in plan.matrix and "ext" not in plan.skipped_stages
    assert all(f != "tests/gpu/test_ext.py" for s in plan.stages for sh in s.shards for f in sh.files)
    with pytest.raises(UsageError) as info:
        shard_of(plan, "ext", 0)
    assert info.value.message == "'ext' is an external stage: another system runs it, ci-policy never plans or runs it"
    assert info.value.source == "--stage"


def test_reasons_are_carried_into_the_plan(make_repo):
    plan = build_plan(snapshot_of(make_repo, "prune"), Trigger("pull_request", labels=("run-ci-megatron",)),
                      diff_of(["M", "docs/a.md", "M", "tests/gpu/test_m1.py"]))
    assert {s.name: s.reasons for s in plan.stages} == {
        "cpu": ("run: stage is not diff-pruned (2 selected)",),
        "gpu-a": ("run: tests/gpu/test_m1.py changed",),
        "amd": ("skip: no selected tests (its tests need one of: amd, fsdp)",),
    }
    assert plan.policy.include_labels == ("megatron",)
    assert plan.diff.files == ("docs/a.md", "tests/gpu/test_m1.py")


@pytest.mark.parametrize("stage, shard, expected", [
    ("cpu", None, ("run", 0, U)),
    ("cpu", 0, ("run", 0, U)),
    ("gpu-a", 0, ("run", 0, ["tests/gpu/test_big.py"])),
    ("gpu-a", 1, ("run", 1, ["tests/gpu/test_m1.py", "tests/gpu/test_m3.py"])),
    ("gpu-a", 2, ("run", 2, ["tests/gpu/test_m2.py"])),
    ("amd", None, ("skip", None, None)),
    ("amd", 4, ("skip", None, None)),
])
def test_shard_of(make_repo, stage, shard, expected):
    plan = build_plan(snapshot_of(make_repo), Trigger("pull_request", labels=("run-ci-megatron",)),
                      diff_of(["M", "setup.py"]))
    got_stage, got_shard = shard_of(plan, stage, shard)
    assert got_stage is plan.stage(stage)
    assert (got_stage.decision, got_shard and got_shard.index,
            got_shard and list(got_shard.files)) == expected


@pytest.mark.parametrize("stage, shard, path, message", [
    ("gpu-a", None, "--shard", "stage gpu-a has 3 shards; pass --shard INDEX"),
    ("gpu-a", 3, "--shard", "stage gpu-a has shards 0..2, not 3"),
    ("gpu-a", -1, "--shard", "stage gpu-a has shards 0..2, not -1"),
    ("cpu", 1, "--shard", "stage cpu has shards 0..0, not 1"),
    ("nope", 0, "--stage", "'nope' is not a planned stage (planned: cpu, gpu-a, amd); "
                           "external stages are never planned here"),
])
def test_shard_of_errors(make_repo, stage, shard, path, message):
    plan = build_plan(snapshot_of(make_repo), Trigger("pull_request", labels=("run-ci-megatron",)),
                      diff_of(["M", "setup.py"]))
    with pytest.raises(UsageError) as info:
        shard_of(plan, stage, shard)
    assert (info.value.source, info.value.message) == (path, message)


def test_plan_is_deterministic(make_repo):
    snapshot = snapshot_of(make_repo)
    trigger = Trigger("schedule", schedule="0 3 * * *")
    assert build_plan(snapshot, trigger, Diff.unavailable("x")) == build_plan(snapshot, trigger,
                                                                               Diff.unavailable("x"))


BAD = {"tests/gpu/test_bad.py": cuda('register_cuda_ci(10, "gpu-z", labels=["megatron"])'),
       "tests/gpu/test_bad2.py": cuda('register_cuda_ci(10, "gpu-a", labels=["nosuch"])')}


def test_invalid_test_files_are_left_out_of_a_partial_plan(make_repo):
    config = CONFIG.replace("EXPLICIT", "run")
    snapshot = load_snapshot(make_repo({**FILES, **BAD}, config=config, labels=LABELS))
    complete = build_plan(load_snapshot(make_repo(FILES, config=config, labels=LABELS, name="complete")),
                          Trigger("schedule", schedule="0 3 * * *"), Diff.unavailable("x"))
    plan = build_plan(snapshot, Trigger("schedule", schedule="0 3 * * *"), Diff.unavailable("x"))
    assert (plan.complete, complete.complete) == (False, True)
    assert [(f.file, f.suites, [(d.code, d.line, d.col) for d in f.diagnostics]) for f in plan.invalid] == [
        ("tests/gpu/test_bad.py", (), [("CP225", 3, 22)]),
        ("tests/gpu/test_bad2.py", (), [("CP227", 3, 39)]),
    ]
    # Everything else is planned exactly as without the two broken files.
    assert summary(plan) == summary(complete)
    assert [s.invalid for s in plan.stages] == [() for _ in plan.stages]
    assert plan.not_fully_read == ()


def test_a_configuration_error_still_refuses_the_whole_plan(make_repo):
    config = CONFIG.replace("EXPLICIT", "run").replace("cadences:\n", "cadences:\n  nightly_exclude: [gone]\n")
    snapshot = load_snapshot(make_repo({**FILES, **BAD}, config=config, labels=LABELS))
    with pytest.raises(InputErrors) as info:
        build_plan(snapshot, Trigger("pull_request"), Diff.unavailable("x"))
    # Only the fatal error: the invalid files would be reported by a plan that cannot be made.
    assert [(e.code, e.path, e.line) for e in info.value.errors] == [("CP310", ".github/ci-policy.yml", 12)]


def test_unknown_cron_refuses_to_plan(make_repo):
    with pytest.raises(InputError) as info:
        build_plan(snapshot_of(make_repo), Trigger("schedule", schedule="0 4 * * *"), Diff.unavailable("x"))
    assert info.value.message == ("--schedule: cron '0 4 * * *' is not listed in cadences.schedules "
                                  "(listed: '0 3 * * *')")


# -- partitions: auto and max_parallel -----------------------------------------------------------

SIZED = (CONFIG.replace("EXPLICIT", "run")
         .replace("{name: gpu-a, backend: cuda, runs_on: [h200], partitions: 3}",
                  "{name: gpu-a, backend: cuda, runs_on: [h200], partitions: auto, shard_seconds: 600, "
                  "max_partitions: 2, max_parallel: {default: 1, priority: 3, schedule: 2}}")
         .replace("{name: amd, backend: rocm, runs_on: [mi350], partitions: 2}",
                  "{name: amd, backend: rocm, runs_on: [mi350], partitions: 2, max_parallel: 1}")
         .replace("stages:\n", "pull_request: {priority_labels: [high priority]}\nstages:\n"))


def sizing(plan) -> dict:
    return {s.name: (s.decision, len(s.shards), s.shards_reason, s.max_parallel, s.max_parallel_reason, s.notes)
            for s in plan.stages}


@pytest.mark.parametrize("trigger, records, expected, max_parallel", [
    pytest.param(
        Trigger("pull_request", labels=("run-ci-fsdp",)), ["M", "setup.py"],
        {"cpu": ("run", 1, None, None, None, ()),
         "gpu-a": ("run", 1, "1 shard: 300s selected / 600s per shard", 1, "max_parallel 1: the stage's limit",
                   ("1 shard: 300s selected / 600s per shard", "max_parallel 1: the stage's limit")),
         "amd": ("run", 1, None, 1, "max_parallel 1: the stage's limit", ("max_parallel 1: the stage's limit",))},
        {"cpu": 1, "gpu-a": 1, "amd": 1},
        id="one-short-test-gets-one-shard"),
    pytest.param(
        Trigger("pull_request", labels=("run-ci-megatron", "high priority", "run-ci-fsdp")), ["M", "setup.py"],
        {"cpu": ("run", 1, None, None, None, ()),
         "gpu-a": ("run", 2, "2 shards: 1800s selected / 600s per shard = 3, capped by max_partitions 2", 3,
                   "max_parallel 3: raised by the PR label high priority",
                   ("2 shards: 1800s selected / 600s per shard = 3, capped by max_partitions 2",
                    "max_parallel 3: raised by the PR label high priority")),
         "amd": ("run", 1, None, 1, "max_parallel 1: the stage's limit", ("max_parallel 1: the stage's limit",))},
        {"cpu": 1, "gpu-a": 3, "amd": 1},
        id="priority-label-raises-max-parallel"),
    pytest.param(
        Trigger("pull_request", labels=("high priority",)), ["M", "docs/a.md"],
        {"cpu": ("run", 1, None, None, None, ()),
         "gpu-a": ("skip", 0, None, 3, "max_parallel 3: raised by the PR label high priority", ()),
         "amd": ("skip", 0, None, 1, "max_parallel 1: the stage's limit", ())},
        {"cpu": 1, "gpu-a": 3, "amd": 1},
        id="skipped-stages-keep-their-limit-without-notes"),
    pytest.param(
        Trigger("schedule", schedule="0 3 * * *", labels=("high priority",)), None,
        {"cpu": ("run", 1, None, None, None, ()),
         "gpu-a": ("run", 2, "2 shards: 1800s selected / 600s per shard = 3, capped by max_partitions 2", 2,
                   "max_parallel 2: raised for a schedule event",
                   ("2 shards: 1800s selected / 600s per shard = 3, capped by max_partitions 2",
                    "max_parallel 2: raised for a schedule event")),
         "amd": ("run", 2, None, 1, "max_parallel 1: the stage's limit", ("max_parallel 1: the stage's limit",))},
        {"cpu": 1, "gpu-a": 2, "amd": 1},
        id="a-schedule-raises-max-parallel-and-labels-do-not"),
    pytest.param(
        Trigger("workflow_dispatch", labels=("run-ci-megatron", "high priority")), None,
        {"cpu": ("run", 1, None, None, None, ()),
         "gpu-a": ("run", 2, "2 shards: 1500s selected / 600s per shard = 3, capped by max_partitions 2", 1,
                   "max_parallel 1: the stage's limit",
                   ("2 shards: 1500s selected / 600s per shard = 3, capped by max_partitions 2",
                    "max_parallel 1: the stage's limit")),
         "amd": ("skip", 0, None, 1, "max_parallel 1: the stage's limit", ())},
        {"cpu": 1, "gpu-a": 1, "amd": 1},
        id="priority-labels-count-only-on-pull-requests"),
])
def test_auto_shards_and_max_parallel(make_repo, trigger, records, expected, max_parallel):
    snapshot = load_snapshot(make_repo(FILES, config=SIZED, labels=LABELS))
    plan = build_plan(snapshot, trigger, diff_of(records))
    assert sizing(plan) == expected
    assert plan.max_parallel == max_parallel


def test_without_the_new_keys_no_stage_has_sizing_reasons(make_repo):
    plan = build_plan(snapshot_of(make_repo), Trigger("schedule", schedule="0 3 * * *"), Diff.unavailable("x"))
    assert {s.name: (s.shards_reason, s.max_parallel, s.max_parallel_reason, s.notes) for s in plan.stages} == {
        "cpu": (None, None, None, ()), "gpu-a": (None, None, None, ()), "amd": (None, None, None, ())}
    # Unlimited: each stage may run all of its shards at once.
    assert plan.max_parallel == {"cpu": 1, "gpu-a": 3, "amd": 2}
