"""A repository shaped like sglang (`tests/data/sglang-repo`), read as it is written.

- Its dialect: `register_amd_ci`, `register_npu_ci`, `register_xpu_ci` declared in
  `markers.names`, NPU and XPU declared in `backends`, suites built from
  `stage=`/`runner_config=` by `markers.suite`, `in_process_group=` as an extra argument,
  a module-level rebinding of `register_cpu_ci`, files with two and three
  registrations, a disabled file without a `__main__` block, a benchmark root with its
  own pattern, and `conftest.py`/`__init__.py`/a vendored directory excluded.
- `lint` reports nothing, `registry` reads every registration with its suite and marker,
  `plan` plans a pull request with an image entry per accelerator backend; `init` infers
  a configuration that lints with no error as written (its runs_on placeholders one warning).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from cli.test_plan import parse_github_output
from helpers import ROOT, assert_golden
from helpers import run_cli as run

REPO = ROOT / "tests" / "data" / "sglang-repo"


def test_lint_reports_nothing(capsys):
    assert run(["lint", "--repo", str(REPO)], capsys) == (
        0, "ci-policy lint: OK: 0 errors, 0 warnings, 1 suppressed (11 test files, 14 registrations, 0 gates)\n",
        "")


def test_registry_reads_every_registration_with_its_suite_and_marker(capsys):
    rc, out, err = run(["registry", "--repo", str(REPO), "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert_golden("sglang/registry.json", out)
    rows = [(r["file"], r["line"], r["backend"], r["suite"], r["marker"], r["nightly"], r["disabled"])
            for r in json.loads(out)["registrations"]]
    assert rows == [
        ("python/pkg/jit_kernel/benchmark/bench_rmsnorm.py", 3, "cuda", "stage-b-kernel-benchmark-1-gpu-large",
         "register_cuda_ci", False, None),
        ("test/registered/amd/test_amd_nightly.py", 5, "rocm", "stage-b-test-1-gpu-small-amd", "register_amd_ci",
         True, None),
        ("test/registered/core/test_base_b_engine.py", 5, "cuda", "base-b-test-1-gpu-large", "register_cuda_ci",
         False, None),
        ("test/registered/core/test_flaky_h100.py", 4, "cuda", "stage-b-test-1-gpu-large", "register_cuda_ci",
         False, "flaky on H100"),
        ("test/registered/core/test_srt_engine.py", 5, "cuda", "stage-b-test-1-gpu-large", "register_cuda_ci",
         False, None),
        ("test/registered/core/test_three_backends.py", 5, "cuda", "base-b-test-1-gpu-large", "register_cuda_ci",
         False, None),
        ("test/registered/core/test_three_backends.py", 6, "rocm", "stage-b-test-1-gpu-small-amd",
         "register_amd_ci", True, None),
        ("test/registered/core/test_three_backends.py", 7, "npu", "nightly-1-npu-a3", "register_npu_ci", True, None),
        ("test/registered/core/test_two_backends.py", 5, "cuda", "stage-b-test-1-gpu-large", "register_cuda_ci",
         False, None),
        ("test/registered/core/test_two_backends.py", 6, "rocm", "stage-b-test-1-gpu-small-amd", "register_amd_ci",
         False, None),
        ("test/registered/cpu/test_cpu_utils.py", 16, "cpu", "stage-a-cpu-only", "register_cpu_ci", False, None),
        ("test/registered/kernels/test_fused_moe.py", 5, "cuda", "stage-b-test-1-gpu-small", "register_cuda_ci",
         False, None),
        ("test/registered/npu/test_npu_attention.py", 5, "npu", "nightly-1-npu-a3", "register_npu_ci", True, None),
        ("test/registered/xpu/test_xpu_basic.py", 5, "xpu", "per-commit-xpu", "register_xpu_ci", False, None),
    ]


def test_plan_of_a_pull_request_prepares_an_image_per_accelerator_backend(tmp_path, monkeypatch, capsys):
    diff = tmp_path / "pr.diff"
    diff.write_bytes(b"A\0test/registered/xpu/test_xpu_basic.py\0M\0docs/index.md\0")
    argv = ["plan", "--repo", str(REPO), "--event", "pull_request", "--diff", str(diff)]
    rc, out, err = run(argv + ["--format", "json"], capsys)
    assert (rc, err) == (0, "")
    plan = json.loads(out)
    assert plan["images"] == {"cuda": "skip", "rocm": "skip", "npu": "skip", "xpu": "build"}
    assert [(s["name"], s["decision"], s["reasons"]) for s in plan["stages"]] == [
        ("stage-a-cpu-only", "run", ["run: stage is not diff-pruned (1 selected)"]),
        *[(name, "skip", ["skip: the diff touches only docs/index.md, test/registered/xpu/test_xpu_basic.py"])
          for name in ("stage-b-test-1-gpu-small", "stage-b-test-1-gpu-large", "base-b-test-1-gpu-large",
                       "stage-b-kernel-benchmark-1-gpu-large", "stage-b-test-1-gpu-small-amd")],
        ("nightly-1-npu-a3", "skip", ["skip: no selected tests (its tests are nightly-only; the regular cadence "
                                      "does not admit them)"]),
        ("per-commit-xpu", "run", ["run: test/registered/xpu/test_xpu_basic.py changed"]),
    ]

    outputs = tmp_path / "output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    rc, _out, err = run(argv + ["--format", "github"], capsys)
    assert (rc, err) == (0, "")
    values = parse_github_output(outputs.read_text())
    assert {k: v for k, v in values.items() if k.endswith("_image") or k == "matrix"} == {
        "matrix": '{"stage-a-cpu-only":[0],"stage-b-test-1-gpu-small":[],"stage-b-test-1-gpu-large":[],'
                  '"base-b-test-1-gpu-large":[],"stage-b-kernel-benchmark-1-gpu-large":[],'
                  '"stage-b-test-1-gpu-small-amd":[],"nightly-1-npu-a3":[],"per-commit-xpu":[0]}',
        "cuda_image": "skip", "rocm_image": "skip", "npu_image": "skip", "xpu_image": "build"}


def test_plan_of_a_manual_run_runs_every_stage_of_the_regular_cadence(capsys):
    rc, out, err = run(["plan", "--repo", str(REPO), "--event", "workflow_dispatch", "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    plan = json.loads(out)
    assert plan["images"] == {"cuda": "build", "rocm": "build", "npu": "skip", "xpu": "build"}
    shards = {s["name"]: [sh["files"] for sh in s["shards"]] for s in plan["stages"]}
    assert shards["base-b-test-1-gpu-large"] == [["test/registered/core/test_base_b_engine.py",
                                                  "test/registered/core/test_three_backends.py"]]
    assert shards["stage-b-test-1-gpu-small-amd"] == [["test/registered/core/test_two_backends.py"]]


def test_without_its_dialect_every_undeclared_marker_is_an_error(tmp_path, capsys):
    repo = tmp_path / "sglang"
    shutil.copytree(REPO, repo)
    config = repo / ".github" / "ci-policy.yml"
    text = config.read_text()
    config.write_text(text.replace("  names: {register_amd_ci: rocm, register_npu_ci: npu, register_xpu_ci: xpu}\n",
                                   "  names: {register_amd_ci: rocm, register_npu_ci: npu}\n"))
    rc, out, err = run(["lint", "--repo", str(repo)], capsys)
    configured = "register_amd_ci, register_cpu_ci, register_cuda_ci, register_npu_ci, register_rocm_ci"
    assert (rc, out, err) == (1, (
        "test/registered/xpu/test_xpu_basic.py:5:1: CP207 marker-undeclared: register_xpu_ci(...) looks like a "
        f"registration marker but the configuration does not declare it (configured: {configured}), so ci-policy "
        "reads no registration from it\n"
        "    hint: declare it: markers: {names: {register_xpu_ci: BACKEND}} in the configuration, with BACKEND one "
        "of its backends\n"
        ".github/ci-policy.yml:24: warning: CP901 stage-without-tests: stage per-commit-xpu has no registered "
        "test files\n"
        "    hint: register tests with suite='per-commit-xpu' or remove the stage\n"
        "ci-policy lint: FAILED: 1 error, 1 warning, 1 suppressed (11 test files, 13 registrations, 0 gates)\n"),
        "")


def test_tune_apply_rewrites_the_est_time_of_a_register_amd_ci_call(tmp_path, capsys):
    repo = tmp_path / "sglang"
    shutil.copytree(REPO, repo)
    record = {"schema": 1, "file": "test/registered/amd/test_amd_nightly.py", "stage": "stage-b-test-1-gpu-small-amd",
              "shard": 0, "attempt": 1, "status": "pass", "elapsed": 900.0, "est_time": 600, "failure_kind": None,
              "retriable": None, "started_at": "2026-11-30T04:40:00Z", "commit": None, "run_id": None,
              "run_attempt": None}
    timings = tmp_path / "timings.jsonl"
    timings.write_text(json.dumps(record) + "\n")
    rc, out, err = run(["tune", "--repo", str(repo), "--from", str(timings), "--apply", "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert json.loads(out)["applied"] == [
        {"file": "test/registered/amd/test_amd_nightly.py", "backend": "rocm", "current": 600, "proposed": 1200,
         "status": "changed", "reason": None}]
    before = (REPO / "test/registered/amd/test_amd_nightly.py").read_text()
    assert (repo / "test/registered/amd/test_amd_nightly.py").read_text() == before.replace(
        'register_amd_ci(est_time=600,', 'register_amd_ci(est_time=1200,')


def test_init_writes_a_configuration_that_lints_with_no_error_as_written(tmp_path, capsys):
    repo = tmp_path / "sglang"
    shutil.copytree(REPO, repo)
    (repo / ".github" / "ci-policy.yml").unlink()
    rc, out, err = run(["init", "--repo", str(repo)], capsys)
    assert (rc, err) == (0, "")
    # The whole dialect is inferred: the markers' backends, the extra arguments, the suite template,
    # and the vendored NPU directory the real configuration excludes becomes a stage of its own.
    assert out.splitlines()[0] == "ci-policy init: wrote .github/ci-policy.yml: 9 stages for 15 registrations in " \
                                  "12 test files"
    assert [line.split(": ", 1)[1] for line in out.splitlines()[4:12]] == [
        f"stages[{i}].runs_on: the runner labels of stage {stage}" for i, stage in enumerate((
            "base-b-test-1-gpu-large (cuda)", "stage-b-kernel-benchmark-1-gpu-large (cuda)",
            "stage-b-test-1-gpu-large (cuda)", "stage-b-test-1-gpu-small (cuda)",
            "stage-b-test-1-gpu-small-amd (rocm)", "ascend-legacy (npu)", "nightly-1-npu-a3 (npu)",
            "per-commit-xpu (xpu)"), start=1)]
    config_path = repo / ".github" / "ci-policy.yml"
    config = config_path.read_text()
    assert config.count('runs_on: ["TODO-runner"]  # TODO') == 8
    for block in ('backends:\n  "npu": {accelerator: true}\n  "xpu": {accelerator: true}\n',
                  'names:\n    "register_amd_ci": "rocm"\n    "register_npu_ci": "npu"\n    "register_xpu_ci": "xpu"\n',
                  'suite: "{stage}-test-{runner_config}"',
                  '    - {path: "python/pkg/jit_kernel/benchmark", pattern: ["bench_*.py"]}\n'
                  '    - "test/registered"\n'):
        assert block in config
    # Lint warns once about the placeholders, naming each stage...
    rc, out, _ = run(["lint", "--repo", str(repo)], capsys)
    assert rc == 0
    assert [line for line in out.splitlines() if "CP908" in line] == [
        ".github/ci-policy.yml:30: warning: CP908 runs-on-placeholder: runs_on of 8 stages is still the placeholder "
        "'TODO-runner': "
        "base-b-test-1-gpu-large, stage-b-kernel-benchmark-1-gpu-large, stage-b-test-1-gpu-large, "
        "stage-b-test-1-gpu-small, stage-b-test-1-gpu-small-amd, ascend-legacy, nightly-1-npu-a3, per-commit-xpu"]
    # ...and once runs_on is filled in, it lints clean and reads what the hand-written configuration reads.
    config_path.write_text(config.replace('runs_on: ["TODO-runner"]', "runs_on: [gpu-runner]"))
    assert run(["lint", "--repo", str(repo)], capsys) == (0, (
        "test/registered/core/test_flaky_h100.py:4:1: warning: CP905 registration-disabled: register_cuda_ci for "
        "suite stage-b-test-1-gpu-large is disabled: flaky on H100\n"
        "ci-policy lint: OK: 0 errors, 1 warning (12 test files, 15 registrations, 0 gates)\n"), "")
    rc, out, err = run(["registry", "--repo", str(repo), "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    inferred = [(r["file"], r["backend"], r["suite"], r["marker"]) for r in json.loads(out)["registrations"]]
    rc, out, _ = run(["registry", "--repo", str(REPO), "--format", "json"], capsys)
    written = [(r["file"], r["backend"], r["suite"], r["marker"]) for r in json.loads(out)["registrations"]]
    ascend = ("test/registered/ascend/test_ascend_legacy.py", "npu", "ascend-legacy", "register_npu_ci")
    assert sorted(inferred) == sorted([*written, ascend])


MAIN_RULE = '  rules:\n    - {paths: ["test/**"], stages: ["*"]}\n'
FUSED_MOE = "test/registered/kernels/test_fused_moe.py"
NPU_NIGHTLY = ("nightly-1-npu-a3", "skip", ["skip: no selected tests (its tests are nightly-only; the regular "
                                            "cadence does not admit them)"])
CPU_STAGE = ("stage-a-cpu-only", "run", ["run: stage is not diff-pruned (1 selected)"])
OTHER_MAIN = ("stage-b-test-1-gpu-large", "base-b-test-1-gpu-large", "stage-b-kernel-benchmark-1-gpu-large",
              "stage-b-test-1-gpu-small-amd", "per-commit-xpu")


def _stages_for_a_changed_test(tmp_path, capsys, changed_tests: str | None) -> list:
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo)
    config = repo / ".github" / "ci-policy.yml"
    setting = "" if changed_tests is None else f"  changed_tests: {changed_tests}\n"
    text = config.read_text()
    assert "selection:\n" in text
    config.write_text(text.replace("selection:\n", "selection:\n" + MAIN_RULE + setting))
    diff = tmp_path / "pr.diff"
    diff.write_bytes(b"M\0" + FUSED_MOE.encode() + b"\0")
    rc, out, err = run(["plan", "--repo", str(repo), "--event", "pull_request", "--diff", str(diff),
                        "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    return [(s["name"], s["decision"], s["reasons"]) for s in json.loads(out)["stages"]]


def test_a_changed_test_file_selects_its_own_stages_before_a_test_rule_by_default(tmp_path, capsys):
    # sglang runs every main stage for any change under test/**; the default keeps a test
    # file's own stages first, so only its stage runs.
    expected = [
        CPU_STAGE,
        ("stage-b-test-1-gpu-small", "run", [f"run: {FUSED_MOE} changed"]),
        *[(name, "skip", [f"skip: the diff touches only {FUSED_MOE}"]) for name in OTHER_MAIN[:4]],
        NPU_NIGHTLY,
        ("per-commit-xpu", "skip", [f"skip: the diff touches only {FUSED_MOE}"]),
    ]
    assert _stages_for_a_changed_test(tmp_path / "default", capsys, None) == expected
    assert _stages_for_a_changed_test(tmp_path / "own", capsys, "own_stages") == expected


def test_changed_tests_paths_lets_the_test_rule_decide_for_a_test_file(tmp_path, capsys):
    ruled = f"run: {FUSED_MOE} matches a selection rule for stages * (selection.changed_tests: paths)"
    assert _stages_for_a_changed_test(tmp_path, capsys, "paths") == [
        CPU_STAGE,
        ("stage-b-test-1-gpu-small", "run", [ruled]),
        *[(name, "run", [ruled]) for name in OTHER_MAIN[:4]],
        NPU_NIGHTLY,
        ("per-commit-xpu", "run", [ruled]),
    ]


def test_changed_tests_both_takes_the_file_own_stages_and_the_test_rule(tmp_path, capsys):
    ruled = f"run: {FUSED_MOE} matches a selection rule for stages * (selection.changed_tests: both)"
    assert _stages_for_a_changed_test(tmp_path, capsys, "both") == [
        CPU_STAGE,
        ("stage-b-test-1-gpu-small", "run", [f"run: {FUSED_MOE} changed", ruled]),
        *[(name, "run", [ruled]) for name in OTHER_MAIN[:4]],
        NPU_NIGHTLY,
        ("per-commit-xpu", "run", [ruled]),
    ]


def test_a_diff_known_to_be_empty_plans_as_no_change_and_an_empty_file_stays_unavailable(tmp_path, monkeypatch,
                                                                                          capsys):
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo)

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
                               "-c", "commit.gpgsign=false", *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "base")
    git("commit", "-q", "--allow-empty", "-m", "identical to its parent")

    def stages(*argv: str) -> tuple[dict, list]:
        rc, out, err = run(["plan", "--repo", str(repo), "--event", "pull_request", *argv, "--format", "json"], capsys)
        assert (rc, err) == (0, "")
        plan = json.loads(out)
        return plan["diff"], [(s["name"], s["decision"], s["reasons"]) for s in plan["stages"]]

    unchanged = ["skip: no file changed (the diff is empty)"]
    no_change = [CPU_STAGE, *[(name, "skip", unchanged) for name in ("stage-b-test-1-gpu-small", *OTHER_MAIN[:4])],
                 NPU_NIGHTLY, ("per-commit-xpu", "skip", unchanged)]
    assert stages("--base", "HEAD~1", "--head", "HEAD") == ({"available": True, "files": []}, no_change)
    assert stages("--base", "HEAD", "--head", "HEAD") == ({"available": True, "files": []}, no_change)

    empty = tmp_path / "pr.diff"
    empty.write_bytes(b"")
    everything = [f"run: the diff is unavailable ({empty}: the diff is empty), so every runnable stage runs"]
    diff, decisions = stages("--diff", str(empty))
    assert diff == {"available": False, "files": [], "reason": f"{empty}: the diff is empty"}
    assert decisions == [CPU_STAGE, *[(name, "run", everything) for name in ("stage-b-test-1-gpu-small",
                                                                              *OTHER_MAIN[:4])],
                         NPU_NIGHTLY, ("per-commit-xpu", "run", everything)]
