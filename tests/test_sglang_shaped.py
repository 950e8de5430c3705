"""`ci-policy init` on a checkout shaped like sglang (`tests/data/sglang-shaped`), its output unedited.

- The checkout has no ci-policy configuration: sglang's marker dialect (`register_cuda_ci`,
  `register_amd_ci`, `register_npu_ci`, `register_xpu_ci` with `stage=`/`runner_config=`,
  `nightly=True`, `disabled="reason"`), a suite shared by CUDA and AMD, an AMD registration
  in a file whose other registration is invalid (suppressed in the file), a file with markers
  outside the collector's directory (`test/manual`), the collector `test/run_suite.py`
  (`glob("registered/**/*.py")`), and workflows shaped like sglang's: `pr-test.yml` behind a
  `run-ci` gate job, `pr-test-amd.yml` with its runners in matrix entries and the suite run
  through `amd_ci_exec.sh -w /sglang-checkout/test`, NPU and XPU workflows (`bash -c "cd ... &&
  ..."`), and a nightly workflow whose runners come from `scripts/ci/nightly_runners.json`.
- `init` writes the configuration (a golden), prints its summary and JSON exactly; `lint`
  finds no error in it as written; `registry` reads the ground truth below, written by hand
  from the files; `plan` runs what `selection.changed_tests` says in each setting.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, assert_golden
from helpers import run_cli as run

from ci_policy.cli import main

FIXTURE = ROOT / "tests" / "data" / "sglang-shaped"

# Every registration sglang's collector runs (every *.py under test/registered), read by hand
# from the files: (file, backend, suite, est_time, nightly, disabled).
GROUND_TRUTH = [
    ("test/registered/amd/test_amd_large.py", "rocm", "base-b-test-2-gpu-large", 420, False, None),
    ("test/registered/amd/test_amd_nightly.py", "rocm", "nightly-amd-1-gpu", 900, True, None),
    ("test/registered/amd/test_amd_small.py", "rocm", "stage-b-test-small-1-gpu-amd", 180, False, None),
    ("test/registered/core/test_flaky_h100.py", "cuda", "stage-b-test-small-1-gpu", 90, False, "flaky on H100"),
    ("test/registered/core/test_large_model.py", "cuda", "base-b-test-2-gpu-large", 300, False, None),
    ("test/registered/core/test_mixed_backends.py", "cuda", "base-b-test-2-gpu-large", 200, False, None),
    ("test/registered/core/test_mixed_backends.py", "rocm", "stage-b-test-small-1-gpu-amd", 240, False, None),
    ("test/registered/core/test_srt_engine.py", "cuda", "stage-b-test-small-1-gpu", 120, False, None),
    ("test/registered/cpu/test_cpu_utils.py", "cpu", "stage-a-cpu-only", 10, False, None),
    ("test/registered/nightly/test_nightly_eval.py", "cuda", "nightly-1-gpu", 1800, True, None),
    ("test/registered/npu/test_npu_basic.py", "npu", "per-commit-1-npu-a2", 400, False, None),
    ("test/registered/npu/test_npu_nightly.py", "npu", "nightly-1-npu-a3", 600, True, "a3 pool offline"),
    ("test/registered/xpu/test_xpu_basic.py", "xpu", "per-commit-xpu", 200, False, None),
]
# Not registrations: test_amd_small.py's `register_cuda_ci(..., nightly="yes")` (CP229, suppressed
# in the file: only that call is dropped), and test/manual/test_manual_only.py, which no CI job runs.
# base-b-test-2-gpu-large is registered for CUDA and for AMD: a stage per (backend, suite), the AMD
# one with a variant per runner pool pr-test-amd.yml runs it on (mi325, mi355).
SHARED = "base-b-test-2-gpu-large"
SHARED_STAGES = (f"{SHARED}@cuda", f"{SHARED}@rocm+linux-mi325-gpu-2", f"{SHARED}@rocm+linux-mi355-gpu-2")

SUMMARY = """\
ci-policy init: wrote .github/ci-policy.yml: 10 stages for 14 registrations in 12 test files
discovery: test/registered (*.py), from test/run_suite.py's glob 'registered/**/*.py'
not discovered: 1 file with markers outside the collector's directories
runners: 6 of 9 accelerator stages from workflow jobs, 3 from runner mapping files, 0 left as 'TODO-runner'
cadences: '0 0 * * *' nightly (.github/workflows/nightly-test.yml); nightly_selects: nightly_only
label gates (stages[].requires_labels): run-ci on 5 stages
test/manual/test_manual_only.py: warning: test/manual/test_manual_only.py registers tests but is not under the \
directories the workflows' collector reads (test/registered); it is not discovered
    hint: add its directory to discovery.roots if CI should run it
warning: CP905 registration-disabled: 2 registrations in 2 files are disabled
    hint: `ci-policy lint --verbose` lists each one (so does --format json)
ci-policy lint: OK: 0 errors, 2 warnings, 1 suppressed (12 test files, 13 registrations, 0 gates)
"""

LINT = """\
warning: CP905 registration-disabled: 2 registrations in 2 files are disabled
    hint: `ci-policy lint --verbose` lists each one (so does --format json)
ci-policy lint: OK: 0 errors, 2 warnings, 1 suppressed (12 test files, 13 registrations, 0 gates)
"""


def _copy(tmp_path: Path) -> Path:
    repo = tmp_path / "sglang"
    shutil.copytree(FIXTURE, repo)
    return repo


@pytest.fixture(scope="module")
def initialised(tmp_path_factory) -> tuple[Path, tuple[int, str, str]]:
    repo = _copy(tmp_path_factory.mktemp("sglang-shaped"))
    return repo, _run_init(repo, [])


def _run_init(repo: Path, extra: list[str]) -> tuple[int, str, str]:
    """`ci-policy init` once for the module (capsys is per test): its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["init", "--repo", str(repo), *extra])
    return rc, out.getvalue(), err.getvalue()


def test_the_fixture_has_no_configuration_of_its_own():
    assert not (FIXTURE / ".github" / "ci-policy.yml").exists()


def test_init_prints_this_summary_and_writes_this_configuration(initialised):
    repo, (rc, out, err) = initialised
    assert (rc, out, err) == (0, SUMMARY, "")
    assert len(out.splitlines()) <= 40
    text = (repo / ".github" / "ci-policy.yml").read_text()
    assert text.splitlines()[0] == ("# yaml-language-server: $schema=https://raw.githubusercontent.com/ci-policy/"
                                    "ci-policy/main/ci_policy/schemas/config.schema.json")
    assert_golden("sglang-shaped/ci-policy.yml", text)


def test_the_configuration_as_written_lints_with_no_error(initialised, capsys):
    repo, _ = initialised
    assert run(["lint", "--repo", str(repo)], capsys) == (0, LINT, "")


def test_registry_reads_the_ground_truth(initialised, capsys):
    repo, _ = initialised
    rc, out, err = run(["registry", "--repo", str(repo), "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    read = [(r["file"], r["backend"], r["suite"], r["est_time"], r["nightly"], r["disabled"])
            for r in json.loads(out)["registrations"]]
    assert sorted(read) == sorted(GROUND_TRUTH)


def test_the_shared_suite_plans_as_a_stage_per_backend_and_the_amd_one_per_runner_pool(initialised, capsys):
    repo, _ = initialised
    rc, out, err = run(["plan", "--repo", str(repo), "--event", "workflow_dispatch", "--label", "run-ci",
                        "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    stages = {s["name"]: s for s in json.loads(out)["stages"]}
    assert [(name, stages[name]["backend"], stages[name]["decision"], stages[name]["runs_on"],
             [f for shard in stages[name]["shards"] for f in shard["files"]]) for name in SHARED_STAGES] == [
        (f"{SHARED}@cuda", "cuda", "run", ["2-gpu-runner"],
         ["test/registered/core/test_large_model.py", "test/registered/core/test_mixed_backends.py"]),
        (f"{SHARED}@rocm+linux-mi325-gpu-2", "rocm", "run", ["linux-mi325-gpu-2"],
         ["test/registered/amd/test_amd_large.py"]),
        (f"{SHARED}@rocm+linux-mi355-gpu-2", "rocm", "run", ["linux-mi355-gpu-2"],
         ["test/registered/amd/test_amd_large.py"]),
    ]


def test_init_json_lists_every_inference_with_its_source(tmp_path, capsys):
    repo = _copy(tmp_path)
    rc, out, err = run(["init", "--repo", str(repo), "--format", "json"], capsys)
    assert (rc, err) == (0, "")

    def stage(name, backend, files, est, runs_on, source, cadences, labels=(), runner="python", variants=()):
        return {"name": name, "backend": backend, "files": files, "est_time": est, "runner": runner,
                "runs_on": list(runs_on), "runs_on_from": source, "cadences": list(cadences),
                "requires_labels": list(labels),
                "variants": [{"name": pool, "runs_on": [pool]} for pool in variants]}

    nightly_map = "scripts/ci/nightly_runners.json (read by .github/workflows/nightly-test.yml)"
    assert json.loads(out) == {
        "schema": 1, "ok": True, "written": [".github/ci-policy.yml"],
        "stages": [
            stage("stage-a-cpu-only", "cpu", 1, 10, (), None, ["regular"], runner="pytest"),
            stage("base-b-test-2-gpu-large", "cuda", 2, 500, ["2-gpu-runner"],
                  ".github/workflows/pr-test.yml job base-b-test-2-gpu-large", ["regular"], ["run-ci"]),
            stage("nightly-1-gpu", "cuda", 1, 1800, ["1-gpu-runner"], nightly_map, ["nightly"]),
            # test_amd_small.py's invalid CUDA call counts here: init reads what it can of every call.
            stage("stage-b-test-small-1-gpu", "cuda", 3, 270, ["1-gpu-runner"],
                  ".github/workflows/pr-test.yml job stage-b-test-small-1-gpu", ["regular"], ["run-ci"]),
            stage("base-b-test-2-gpu-large", "rocm", 1, 420, ["linux-mi325-gpu-2"],
                  ".github/workflows/pr-test-amd.yml job unit-test-amd", ["regular"], ["run-ci"],
                  variants=("linux-mi325-gpu-2", "linux-mi355-gpu-2")),
            stage("nightly-amd-1-gpu", "rocm", 1, 900, ["linux-mi325-gpu-1"], nightly_map, ["nightly"]),
            stage("stage-b-test-small-1-gpu-amd", "rocm", 2, 420, ["linux-mi325-gpu-1"],
                  ".github/workflows/pr-test-amd.yml job unit-test-amd", ["regular"], ["run-ci"]),
            stage("nightly-1-npu-a3", "npu", 1, 600, ["linux-aarch64-a3-2"], nightly_map, ["nightly"]),
            stage("per-commit-1-npu-a2", "npu", 1, 400, ["linux-aarch64-a2-1"],
                  ".github/workflows/pr-test-npu.yml job per-commit-1-npu-a2", ["regular"], ["run-ci"]),
            stage("per-commit-xpu", "xpu", 1, 200, ["intel-bmg"], ".github/workflows/pr-test-xpu.yml job run-xpu-ci",
                  ["regular"]),
        ],
        "discovery": [{"path": "test/registered", "pattern": ["*.py"],
                       "from": "test/run_suite.py's glob 'registered/**/*.py'"}],
        "not_discovered": ["test/manual/test_manual_only.py"],
        "schedules": [{"cron": "0 0 * * *", "cadence": "nightly", "workflow": ".github/workflows/nightly-test.yml"}],
        "nightly_selects": "nightly_only", "require_labels": [], "labels": [], "todo": [],
        "notes": [
            {"path": "test/manual/test_manual_only.py", "line": None, "col": None,
             "message": "test/manual/test_manual_only.py registers tests but is not under the directories the "
                        "workflows' collector reads (test/registered); it is not discovered",
             "hint": "add its directory to discovery.roots if CI should run it"}],
        "errors": [],
        "warnings": [
            {"code": "CP905", "name": "registration-disabled", "path": "test/registered/core/test_flaky_h100.py",
             "line": 5, "col": 1, "message": "register_cuda_ci for suite stage-b-test-small-1-gpu is disabled: "
                                             "flaky on H100", "hint": None},
            {"code": "CP905", "name": "registration-disabled", "path": "test/registered/npu/test_npu_nightly.py",
             "line": 5, "col": 1, "message": "register_npu_ci for suite nightly-1-npu-a3 is disabled: a3 pool offline",
             "hint": None}],
    }


def test_the_nightly_schedule_runs_the_nightly_suites_only(initialised, capsys):
    repo, _ = initialised
    rc, out, err = run(["plan", "--repo", str(repo), "--event", "schedule", "--schedule", "0 0 * * *",
                        "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    not_nightly = "skip: the nightly cadence is not one of the stage's cadences (regular)"
    assert [(s["name"], s["decision"], s["reasons"]) for s in json.loads(out)["stages"]] == [
        ("stage-a-cpu-only", "skip", [not_nightly]),
        (f"{SHARED}@cuda", "skip", [not_nightly]),
        ("nightly-1-gpu", "run", ["run: schedule event runs every stage with selected tests (1 selected)"]),
        ("stage-b-test-small-1-gpu", "skip", [not_nightly]),
        *amd_variants("skip", [not_nightly]),
        ("nightly-amd-1-gpu", "run", ["run: schedule event runs every stage with selected tests (1 selected)"]),
        ("stage-b-test-small-1-gpu-amd", "skip", [not_nightly]),
        ("nightly-1-npu-a3", "skip", ["skip: no selected tests (all 1 disabled)"]),
        ("per-commit-1-npu-a2", "skip", [not_nightly]),
        ("per-commit-xpu", "skip", [not_nightly]),
    ]


# -- selection.changed_tests, with sglang's "any change under test/** runs every stage" rule ----------

CHANGED = "test/registered/core/test_srt_engine.py"
CPU = ("stage-a-cpu-only", "run", ["run: stage is not diff-pruned (1 selected)"])
NOT_REGULAR = "skip: the regular cadence is not one of the stage's cadences (nightly)"
ONLY = f"skip: the diff touches only {CHANGED}"
NO_RUN_CI = "skip: the PR lacks the label run-ci, which the stage requires (requires_labels)"


def amd_variants(decision: str, reasons: list[str]) -> list[tuple]:
    """The AMD stage of the shared suite, as its two variants: the stage's reasons, and each
    variant's own when it runs."""
    return [(f"{SHARED}@rocm+{pool}", decision,
             reasons + ([f"run: variant {pool} of {SHARED}@rocm on runs_on [{pool}]"] if decision == "run" else []))
            for pool in ("linux-mi325-gpu-2", "linux-mi355-gpu-2")]


def _plan_changed_test(initialised, tmp_path: Path, capsys, setting: str | None, labels: str = '["run-ci"]') -> list:
    repo = tmp_path / "repo"
    shutil.copytree(initialised[0], repo)
    config = repo / ".github" / "ci-policy.yml"
    with config.open("a") as fh:  # init writes no selection section: this is the maintainer's addition
        fh.write('selection:\n  rules:\n    - {paths: ["test/**"], stages: ["*"]}\n'
                 + (f"  changed_tests: {setting}\n" if setting else ""))
    diff = tmp_path / "pr.diff"
    diff.write_bytes(b"M\0" + CHANGED.encode() + b"\0")
    rc, out, err = run(["plan", "--repo", str(repo), "--event", "pull_request", "--diff", str(diff),
                        "--labels-json", labels, "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    return [(s["name"], s["decision"], s["reasons"]) for s in json.loads(out)["stages"]]


def test_changed_tests_own_stages_runs_the_file_own_stage_only(initialised, tmp_path, capsys):
    expected = [
        CPU,
        (f"{SHARED}@cuda", "skip", [ONLY]),
        ("nightly-1-gpu", "skip", [NOT_REGULAR]),
        ("stage-b-test-small-1-gpu", "run", [f"run: {CHANGED} changed"]),
        *amd_variants("skip", [ONLY]),
        ("nightly-amd-1-gpu", "skip", [NOT_REGULAR]),
        ("stage-b-test-small-1-gpu-amd", "skip", [ONLY]),
        ("nightly-1-npu-a3", "skip", [NOT_REGULAR]),
        ("per-commit-1-npu-a2", "skip", [ONLY]),
        ("per-commit-xpu", "skip", [ONLY]),
    ]
    assert _plan_changed_test(initialised, tmp_path / "default", capsys, None) == expected
    assert _plan_changed_test(initialised, tmp_path / "own", capsys, "own_stages") == expected


def test_changed_tests_paths_runs_every_regular_stage_of_every_platform(initialised, tmp_path, capsys):
    ruled = [f"run: {CHANGED} matches a selection rule for stages * (selection.changed_tests: paths)"]
    assert _plan_changed_test(initialised, tmp_path, capsys, "paths") == [
        CPU,
        (f"{SHARED}@cuda", "run", ruled),
        ("nightly-1-gpu", "skip", [NOT_REGULAR]),
        ("stage-b-test-small-1-gpu", "run", ruled),
        *amd_variants("run", ruled),
        ("nightly-amd-1-gpu", "skip", [NOT_REGULAR]),
        ("stage-b-test-small-1-gpu-amd", "run", ruled),
        ("nightly-1-npu-a3", "skip", [NOT_REGULAR]),
        ("per-commit-1-npu-a2", "run", ruled),
        ("per-commit-xpu", "run", ruled),
    ]
    # Without run-ci, the label gates read from the workflows hold: only the ungated XPU job runs.
    assert _plan_changed_test(initialised, tmp_path / "unlabelled", capsys, "paths", "[]") == [
        CPU,
        (f"{SHARED}@cuda", "skip", [NO_RUN_CI]),
        ("nightly-1-gpu", "skip", [NOT_REGULAR]),
        ("stage-b-test-small-1-gpu", "skip", [NO_RUN_CI]),
        *amd_variants("skip", [NO_RUN_CI]),
        ("nightly-amd-1-gpu", "skip", [NOT_REGULAR]),
        ("stage-b-test-small-1-gpu-amd", "skip", [NO_RUN_CI]),
        ("nightly-1-npu-a3", "skip", [NOT_REGULAR]),
        ("per-commit-1-npu-a2", "skip", [NO_RUN_CI]),
        ("per-commit-xpu", "run", ruled),
    ]


def test_changed_tests_both_adds_the_rule_to_the_file_own_stage(initialised, tmp_path, capsys):
    ruled = f"run: {CHANGED} matches a selection rule for stages * (selection.changed_tests: both)"
    assert _plan_changed_test(initialised, tmp_path, capsys, "both") == [
        CPU,
        (f"{SHARED}@cuda", "run", [ruled]),
        ("nightly-1-gpu", "skip", [NOT_REGULAR]),
        ("stage-b-test-small-1-gpu", "run", [f"run: {CHANGED} changed", ruled]),
        *amd_variants("run", [ruled]),
        ("nightly-amd-1-gpu", "skip", [NOT_REGULAR]),
        ("stage-b-test-small-1-gpu-amd", "run", [ruled]),
        ("nightly-1-npu-a3", "skip", [NOT_REGULAR]),
        ("per-commit-1-npu-a2", "run", [ruled]),
        ("per-commit-xpu", "run", [ruled]),
    ]


def test_a_manual_run_and_the_nightly_schedule_plan_every_enabled_registration(initialised, capsys):
    repo, _ = initialised
    planned = set()
    for argv in (["--event", "workflow_dispatch"], ["--event", "schedule", "--schedule", "0 0 * * *"]):
        rc, out, err = run(["plan", "--repo", str(repo), *argv, "--format", "json"], capsys)
        assert (rc, err) == (0, "")
        planned |= {(file, stage["name"]) for stage in json.loads(out)["stages"]
                    for shard in stage["shards"] for file in shard["files"]}
    # Every enabled registration of the ground truth runs on its stage (each variant of the AMD one).
    key = {("cuda", SHARED): [f"{SHARED}@cuda"], ("rocm", SHARED): list(SHARED_STAGES[1:])}
    assert planned == {(file, stage) for file, backend, suite, _est, _nightly, disabled in GROUND_TRUTH
                       if disabled is None for stage in key.get((backend, suite), [suite])}
