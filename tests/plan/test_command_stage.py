"""A stage with a command (a suite without markers): selected by its paths, held back by its
cadences, label gates and trust like any stage, planned as one shard, written to the plan file."""

from __future__ import annotations

import json

import pytest

from ci_policy.model.snapshot import load_snapshot
from ci_policy.plan.build import Plan, build_plan
from ci_policy.plan.jobs import stage_jobs
from ci_policy.plan.policy import Trigger
from ci_policy.plan.written import plan_document
from ci_policy.read.codec import encode
from ci_policy.read.diff import Diff, read_diff
from ci_policy.render.markdown import plan_markdown
from ci_policy.render.text import plan_text

MAIN = '\nif __name__ == "__main__":\n    main()\n'

CONFIG = """\
version: 1
gpu_requires_labels: false
discovery:
  roots: [test]
stages:
  - {name: gpu, backend: cuda, runs_on: [h100]}
  - name: kernel
    backend: cuda
    runs_on: [h100]
    command: [pytest, -q, tests/]
    working_directory: sgl-kernel
    paths: ["sgl-kernel/**"]
    est_time: 900
    timeout_per_file: 1800
  - name: multimodal
    backend: cuda
    runs_on: [h100]
    command: [python, -m, pytest, python/sglang/multimodal_gen/test]
    paths: ["python/sglang/multimodal_gen/**"]
    est_time: 600
    cadences: [nightly]
  - name: kernel-labelled
    backend: cpu
    command: [make, check]
    paths: ["sgl-kernel/**"]
    est_time: 60
    requires_labels: [run-ci]
cadences:
  schedules: {"0 3 * * *": nightly}
"""

FILES = {
    "test/registered/test_a.py": ("from ci_policy import register_cuda_ci\n\n"
                                  'register_cuda_ci(est_time=300, suite="gpu")\n' + MAIN),
}

KERNEL_CU = ["M", "sgl-kernel/csrc/x.cu"]
PYTHON = ["M", "python/sglang/srt/x.py"]


def diff_of(records: list[str] | None) -> Diff:
    if records is None:
        return read_diff(b"", "pr.diff")
    return read_diff(("\0".join(records) + "\0").encode(), "pr.diff")


@pytest.fixture
def snapshot(make_repo):
    return load_snapshot(make_repo(FILES, config=CONFIG, labels=None)).require_valid()


def decisions(plan: Plan) -> dict[str, tuple[str, list[str]]]:
    return {s.name: (s.decision, list(s.reasons)) for s in plan.stages}


UNTOUCHED = "skip: the diff touches only python/sglang/srt/x.py: nothing under its paths (sgl-kernel/**)"
NOT_REGULAR = "skip: the regular cadence is not one of the stage's cadences (nightly)"
NO_RUN_CI = "skip: the PR lacks the label run-ci, which the stage requires (requires_labels)"
UNAVAILABLE = "run: the diff is unavailable (pr.diff: the diff is empty), so every runnable stage runs"

CASES = [
    pytest.param(
        Trigger("pull_request"), KERNEL_CU,
        {"gpu": ("skip", ["skip: the diff touches only sgl-kernel/csrc/x.cu"]),
         "kernel": ("run", ["run: sgl-kernel/csrc/x.cu changed under its paths (sgl-kernel/**)"]),
         "multimodal": ("skip", [NOT_REGULAR]),
         "kernel-labelled": ("skip", [NO_RUN_CI])},
        id="a-change-under-its-paths-selects-it"),
    pytest.param(
        Trigger("pull_request", labels=("run-ci",)), PYTHON,
        {"gpu": ("run", ["run: python/sglang/srt/x.py matches no rule and no stage's paths, so every stage "
                         "without paths runs"]),
         "kernel": ("skip", [UNTOUCHED]),
         "multimodal": ("skip", [NOT_REGULAR]),
         "kernel-labelled": ("skip", [UNTOUCHED])},
        id="a-change-elsewhere-skips-it"),
    pytest.param(
        Trigger("pull_request", labels=("run-ci",)), None,
        {"gpu": ("run", [UNAVAILABLE]), "kernel": ("run", [UNAVAILABLE]), "multimodal": ("skip", [NOT_REGULAR]),
         "kernel-labelled": ("run", [UNAVAILABLE])},
        id="an-unavailable-diff-runs-it"),
    pytest.param(
        Trigger("schedule", schedule="0 3 * * *"), None,
        {name: ("run", [f"run: schedule event runs every stage with selected tests ({what})"])
         for name, what in (("gpu", "1 selected"), ("kernel", "its command"), ("multimodal", "its command"),
                            ("kernel-labelled", "its command"))},
        id="a-schedule-runs-it"),
    pytest.param(
        Trigger("pull_request", labels=("run-ci",), trust="untrusted"), KERNEL_CU,
        {"gpu": ("skip", ["skip: untrusted head not approved"]),
         "kernel": ("skip", ["skip: untrusted head not approved"]),
         "multimodal": ("skip", [NOT_REGULAR]),
         "kernel-labelled": ("run", ["run: sgl-kernel/csrc/x.cu changed under its paths (sgl-kernel/**)"])},
        id="an-outsiders-unapproved-head-holds-it"),
    pytest.param(
        Trigger("pull_request", trust="approved"), KERNEL_CU,
        {"gpu": ("skip", ["skip: the diff touches only sgl-kernel/csrc/x.cu"]),
         "kernel": ("run", ["run: sgl-kernel/csrc/x.cu changed under its paths (sgl-kernel/**)"]),
         "multimodal": ("skip", [NOT_REGULAR]),
         "kernel-labelled": ("skip", [NO_RUN_CI])},
        id="a-maintainer-approved-head-runs-it"),
]


@pytest.mark.parametrize("trigger, records, expected", CASES)
def test_a_command_stage_is_selected_like_any_stage_by_its_paths(snapshot, trigger, records, expected):
    assert decisions(build_plan(snapshot, trigger, diff_of(records))) == expected


def test_a_command_stage_plans_as_one_shard_of_its_est_time(snapshot):
    plan = build_plan(snapshot, Trigger("pull_request"), diff_of(KERNEL_CU))
    kernel = plan.stage("kernel")
    assert kernel is not None
    assert [(r.file, r.suite, r.backend, r.est_time, r.implicit, r.est_source) for r in kernel.tests] == [
        ("kernel", "kernel", "cuda", 900, True, "implicit")]
    assert [sh.as_dict() for sh in kernel.shards] == [{"index": 0, "est_seconds": 900, "files": ["kernel"]}]
    assert plan.max_parallel["kernel"] == 1
    # The plan file records the command, its directory and its one test (no file of the checkout).
    doc = encode(plan_document(plan))
    (stage,) = [s for s in doc["stages"] if s["name"] == "kernel"]
    assert stage == {
        "name": "kernel", "backend": "cuda", "decision": "run",
        "reasons": ["run: sgl-kernel/csrc/x.cu changed under its paths (sgl-kernel/**)"], "runs_on": ["h100"],
        "tests": [{"file": "kernel", "est_time": 900, "est_source": "implicit", "line": None, "marker": None}],
        "shards": [{"index": 0, "est_seconds": 900, "files": ["kernel"]}], "makespan": 900, "lower_bound": 900,
        "optimal": True, "invalid": [], "command": ["pytest", "-q", "tests/"], "working_directory": "sgl-kernel"}
    (job,) = [j for j in doc["jobs"] if j["stage"] == "kernel"]
    # The job's limit: the command's timeout_per_file (1800 s = 30 min) and 10 minutes around it.
    assert (job["runs_on"], job["shards"], job["timeout_minutes"]) == (["h100"], "0", 40)
    text = plan_text(plan, stage_jobs(plan, None))
    assert "  kernel: makespan 15m0s / lower bound 15m0s (optimal)\n" \
           "  kernel[0] est 15m0s, command: pytest -q tests/ (in sgl-kernel)\n" in text
    assert "kernel[0] est 15m0s, 1 file" not in text
    markdown = plan_markdown(plan, stage_jobs(plan, None))
    assert markdown.endswith("### kernel\n\n**Split:** makespan 15m0s / lower bound 15m0s (optimal)\n\n"
                             "**Command:** pytest -q tests/ (in sgl-kernel), est 15m0s\n")


def test_a_plan_file_holds_a_command_stage_with_its_one_test_only(make_repo, tmp_path, capsys):
    from helpers import run_cli

    repo = make_repo(FILES, config=CONFIG, labels=None)
    plan_file = tmp_path / "plan.json"
    assert run_cli(["plan", "--repo", str(repo), "--event", "workflow_dispatch", "--json-out", str(plan_file)],
                   capsys)[0] == 0
    listed = ["list", "--repo", str(repo), "--plan", str(plan_file), "--stage", "kernel"]
    assert run_cli(listed, capsys) == (0, "# command: pytest -q tests/ (in sgl-kernel)\n", "")
    whole = json.loads(plan_file.read_text())
    at = next(i for i, s in enumerate(whole["stages"]) if s["name"] == "kernel")

    def refused(change) -> tuple[int, str, str]:
        doc = json.loads(plan_file.read_text())
        change(doc["stages"][at])
        edited = tmp_path / "edited.json"
        edited.write_text(json.dumps(doc))
        return run_cli([*listed[:4], str(edited), *listed[5:]], capsys)

    def other_test(stage):
        stage["tests"][0]["file"] = stage["shards"][0]["files"][0] = "test/registered/test_a.py"

    hint = "\n    hint: pass the file `ci-policy plan --format json` wrote in this run's plan job\n"
    assert refused(other_test) == (2, "", f"ci-policy list: error: --plan: {tmp_path / 'edited.json'}: "
                                          f"stages[{at}].tests: a stage with a command has one test, named kernel"
                                          + hint)

    def directory_alone(stage):
        stage.pop("command")

    assert refused(directory_alone) == (2, "", f"ci-policy list: error: --plan: {tmp_path / 'edited.json'}: "
                                               f"stages[{at}].working_directory: only a stage with a command has a "
                                               "working directory" + hint)

    def another_command(stage):
        stage["command"] = ["make", "kernel"]

    rc, out, err = refused(another_command)
    assert (rc, out) == (2, "")
    assert err.startswith(f"ci-policy list: error: --plan: {tmp_path / 'edited.json'}: stage 'kernel' runs another "
                          "command in the configuration\n    hint: ")
