"""`plan --explain FILE` (`ci_policy.plan.explain`): each status, and for a registered file every stage's rule."""

from __future__ import annotations

import pytest
from plan.test_build import CONFIG, FILES, LABELS, MAIN, cuda, diff_of

from ci_policy.model.snapshot import load_snapshot
from ci_policy.plan.build import build_plan
from ci_policy.plan.explain import Explanation, StageExplanation, explain
from ci_policy.plan.policy import Trigger

EXTRA = {
    "tests/gpu/test_bad.py": cuda('register_cuda_ci(10, "gpu-a", labels=["nosuch"])'),
    # No `__main__` block for a `python FILE` stage: invalid, its registration still readable.
    "tests/gpu/test_nomain.py": cuda('register_cuda_ci(10, "gpu-a", labels=["megatron"])').replace(MAIN, ""),
    "tests/gpu/test_none.py": "# ci-policy: ignore[CP231]\ndef test_x():\n    pass\n",
    "tests/gpu/vendor/test_v.py": "def test_v():\n    pass\n",
    "tests/gpu/helper.py": "X = 1\n",
}
EXCLUDING = CONFIG.replace("EXPLICIT", "run").replace(
    "  roots: [tests]\n", "  roots: [tests]\n  exclude: [tests/gpu/vendor/]\n")


def plan_for(make_repo, trigger, records=None, config=EXCLUDING):
    return build_plan(load_snapshot(make_repo({**FILES, **EXTRA}, config=config, labels=LABELS)), trigger,
                      diff_of(records))


MEGATRON = Trigger("pull_request", labels=("run-ci-megatron",))
RUN_SETUP = "run: setup.py matches no rule, so every stage runs"


def stage(name, backend, line, decision, reasons, selected, why, est, shard=None, shards=0, source="literal"):
    return StageExplanation(name, backend, line, decision, tuple(reasons), selected, why, est, source, shard, shards)


CASES = [
    pytest.param(
        MEGATRON, ["M", "setup.py"], "tests/gpu/test_m1.py",
        Explanation("tests/gpu/test_m1.py", "registered",
                    "tests/gpu/test_m1.py is registered to 1 stage (gpu-a); it runs in gpu-a",
                    (stage("gpu-a", "cuda", 3, "run", [RUN_SETUP, "run: requested by run-ci-megatron"], True,
                           "selected: label megatron included by run-ci-megatron", 200, 1, 3),),
                    changed=False),
        id="selected-and-in-a-shard"),
    pytest.param(
        MEGATRON, ["M", "tests/gpu/test_f.py"], "tests/gpu/test_f.py",
        Explanation("tests/gpu/test_f.py", "registered",
                    "tests/gpu/test_f.py is registered to 2 stages (gpu-a, amd); it runs in no stage",
                    (stage("gpu-a", "cuda", 3, "run", ["run: tests/gpu/test_f.py changed",
                                                       "run: requested by run-ci-megatron"], False,
                           "not selected: needs one of: fsdp", 300, shards=3),
                     stage("amd", "rocm", 4, "skip", ["skip: no selected tests (its tests need one of: amd, fsdp)"],
                           False, "not selected: needs one of: fsdp, amd", 300)),
                    changed=True),
        id="one-file-two-stages-neither-selects-it"),
    pytest.param(
        Trigger("pull_request"), None, "tests/gpu/test_night.py",
        Explanation("tests/gpu/test_night.py", "registered",
                    "tests/gpu/test_night.py is registered to 1 stage (amd); it runs in no stage",
                    (stage("amd", "rocm", 3, "skip", ["skip: no selected tests (its tests need one of: amd, fsdp)"],
                           False, "not selected: nightly-only; the regular cadence does not admit nightly tests",
                           70),)),
        id="nightly-only-with-an-unavailable-diff"),
    pytest.param(
        Trigger("schedule", schedule="0 3 * * *"), None, "tests/gpu/test_off.py",
        Explanation("tests/gpu/test_off.py", "registered",
                    "tests/gpu/test_off.py is registered to 1 stage (gpu-a); it runs in no stage",
                    (stage("gpu-a", "cuda", 3, "run", ["run: schedule event runs every stage with selected tests "
                                                       "(5 selected)"], False,
                           "not selected: disabled: broken, see #9", 50, shards=3),)),
        id="disabled"),
    pytest.param(
        Trigger("schedule", schedule="0 3 * * *"), None, "tests/unit/test_a.py",
        Explanation("tests/unit/test_a.py", "registered",
                    "tests/unit/test_a.py is registered to 1 stage (cpu); it runs in cpu",
                    (stage("cpu", "cpu", None, "run", ["run: schedule event runs every stage with selected tests "
                                                       "(2 selected)"], True,
                           "selected: it has no labels, so it runs whenever its stage runs", 1.5, 0, 1,
                           source="implicit"),)),
        id="implicit-registration"),
    pytest.param(
        Trigger("schedule", schedule="0 3 * * *"), None, "tests/gpu/test_ext.py",
        Explanation("tests/gpu/test_ext.py", "registered",
                    "tests/gpu/test_ext.py is registered to 1 stage (ext); it runs in no stage",
                    (stage("ext", "cuda", 3, "external",
                           ["external: another system runs this stage; ci-policy never plans it"], False,
                           "not planned here: the stage is external", 5000),)),
        id="external-stage"),
    pytest.param(
        MEGATRON, ["M", "tests/gpu/test_none.py"], "tests/gpu/test_none.py",
        Explanation("tests/gpu/test_none.py", "unregistered",
                    "tests/gpu/test_none.py is a test file without a registration (its CP231 is suppressed), "
                    "so no stage runs it", changed=True),
        id="unregistered"),
    pytest.param(
        MEGATRON, None, "tests/gpu/vendor/test_v.py",
        Explanation("tests/gpu/vendor/test_v.py", "excluded",
                    "tests/gpu/vendor/test_v.py is excluded by discovery.exclude, so it is not a test file"),
        id="excluded"),
    pytest.param(
        MEGATRON, ["M", "src/x.py"], "src/x.py",
        Explanation("src/x.py", "not_discovered",
                    "src/x.py is not under a discovery root (tests), so it is not a test file", changed=True),
        id="outside-every-root"),
    pytest.param(
        MEGATRON, None, "tests/gpu/helper.py",
        Explanation("tests/gpu/helper.py", "not_discovered",
                    "tests/gpu/helper.py does not match the discovery pattern (test_*.py) of its root, "
                    "so it is not a test file"),
        id="name-not-matching-the-pattern"),
    pytest.param(
        MEGATRON, None, "tests/gpu/test_gone.py",
        Explanation("tests/gpu/test_gone.py", "not_discovered", "tests/gpu/test_gone.py is not in the checkout"),
        id="missing"),
]


@pytest.mark.parametrize("trigger, records, file, expected", CASES)
def test_explain(make_repo, trigger, records, file, expected):
    assert explain(plan_for(make_repo, trigger, records), file) == expected


def test_selected_but_the_stage_is_skipped(make_repo):
    config = EXCLUDING.replace("explicit: run", "explicit: prune")
    got = explain(plan_for(make_repo, Trigger("pull_request", labels=("run-ci-amd",)), ["M", "docs/a.md"],
                           config=config), "tests/gpu/test_amd1.py")
    assert got == Explanation(
        "tests/gpu/test_amd1.py", "registered",
        "tests/gpu/test_amd1.py is registered to 1 stage (amd); it runs in no stage",
        (stage("amd", "rocm", 3, "skip", ["skip: the diff touches only docs/a.md"], True,
               "selected: label amd included by run-ci-amd; the stage is skipped, so it does not run", 300),),
        changed=False)


def test_an_invalid_file_is_explained_with_its_diagnostics(make_repo):
    plan = plan_for(make_repo, MEGATRON)
    got = explain(plan, "tests/gpu/test_bad.py")
    assert (got.status, got.summary, got.stages, got.invalid_stages) == (
        "invalid", "tests/gpu/test_bad.py is an invalid test file: never scheduled until its error is fixed",
        (), ())
    assert [(d.code, d.path, d.line, d.col) for d in got.diagnostics] == [("CP227", "tests/gpu/test_bad.py", 3, 39)]
    got = explain(plan, "tests/gpu/test_nomain.py")
    assert (got.status, got.summary, got.invalid_stages, [d.code for d in got.diagnostics]) == (
        "invalid", "tests/gpu/test_nomain.py is an invalid test file: never scheduled until its error is fixed",
        ("gpu-a",), ["CP222"])


def test_the_size_of_a_running_stage_is_part_of_its_reasons(make_repo):
    config = EXCLUDING.replace(
        "{name: gpu-a, backend: cuda, runs_on: [h200], partitions: 3}",
        "{name: gpu-a, backend: cuda, runs_on: [h200], partitions: auto, shard_seconds: 1000, max_parallel: 2}")
    got = explain(plan_for(make_repo, MEGATRON, ["M", "setup.py"], config=config), "tests/gpu/test_big.py")
    assert got.stages == (stage("gpu-a", "cuda", 3, "run", [
        RUN_SETUP, "run: requested by run-ci-megatron", "2 shards: 1500s selected / 1000s per shard",
        "max_parallel 2: the stage's limit"], True, "selected: label megatron included by run-ci-megatron",
        1000, 0, 2),)


def test_every_included_label_is_named_with_what_included_it(make_repo):
    got = explain(plan_for(make_repo, Trigger("pull_request", labels=("run-ci-fsdp", "run-ci-amd")),
                           ["M", "setup.py"]), "tests/gpu/test_f.py")
    assert [(s.stage, s.selected, s.why, s.shard) for s in got.stages] == [
        ("gpu-a", True, "selected: label fsdp included by run-ci-fsdp", 0),
        ("amd", True, "selected: labels fsdp (included by run-ci-fsdp), amd (included by run-ci-amd)", 1),
    ]
