"""A suite name configured for several backends: one stage per (backend, name), named `NAME@BACKEND`.

sglang registers one file for `base-b-test-2-gpu-large` on CUDA and on AMD: each backend's
registration binds to its own backend's stage, with that stage's runners. A name one backend
configures keeps its name as its key; a shared one is `NAME@BACKEND` in the registry's plan,
the matrix, the per-stage plan files, `--stage`, `after`, `file-run` and `gate`. Every output
and refusal is asserted exactly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli.test_run import cli
from helpers import run_cli as run

CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: unit, backend: cpu}
  - {name: large, backend: cuda, runs_on: [h200], partitions: 2}
  - {name: large, backend: rocm, runs_on: [mi325], timeout_per_file: 600}
  - {name: amd-after, backend: rocm, runs_on: [mi325], after: [large@rocm]}
"""

LABELS = 'KNOWN_LABELS = {"megatron": "Megatron tests", "fsdp": "FSDP tests"}\n'


def gpu_file(*registrations: str, prints: str) -> str:
    markers = sorted({r.split("(")[0] for r in registrations})
    return (f"from ci_policy import {', '.join(markers)}\n\n" + "".join(f"{r}\n" for r in registrations)
            + f"\n\ndef main():\n    print({prints!r})\n\n\nif __name__ == \"__main__\":\n    main()\n")


FILES = {
    "tests/test_both.py": gpu_file('register_cuda_ci(est_time=30, suite="large", labels=["megatron"])',
                                   'register_rocm_ci(est_time=60, suite="large", labels=["megatron"])',
                                   prints="ran both"),
    "tests/test_cuda.py": gpu_file('register_cuda_ci(est_time=20, suite="large", labels=["megatron"])',
                                   prints="ran cuda"),
    "tests/test_amd.py": gpu_file('register_rocm_ci(est_time=10, suite="amd-after", labels=["fsdp"])',
                                  prints="ran amd"),
    "tests/test_unit.py": "from ci_policy import register_cpu_ci\n\nregister_cpu_ci(est_time=1, suite=\"unit\")\n",
}

PLAN = ["--event", "workflow_dispatch", "--label", "run-ci-megatron", "--label", "run-ci-fsdp"]


@pytest.fixture
def repo(make_repo) -> Path:
    return make_repo(FILES, config=CONFIG, labels=LABELS)


def test_the_registry_binds_each_backend_s_registration_to_its_own_stage(repo, capsys):
    assert run(["registry", "--repo", str(repo)], capsys) == (0, (
        "FILE                  BACKEND  SUITE      EST   LABELS    NOTES\n"
        "tests/test_amd.py:3   rocm     amd-after  10s   fsdp\n"
        "tests/test_both.py:3  cuda     large      30s   megatron\n"
        "tests/test_both.py:4  rocm     large      1m0s  megatron\n"
        "tests/test_cuda.py:3  cuda     large      20s   megatron\n"
        "tests/test_unit.py:3  cpu      unit       1s    -\n"), "")
    rc, out, _err = run(["lint", "--repo", str(repo)], capsys)
    assert (rc, out) == (0, "ci-policy lint: OK: 0 errors, 0 warnings (4 test files, 5 registrations, 0 gates)\n")


PLAN_TEXT = """\
ci-policy plan: workflow_dispatch, cadence regular, trust trusted
PR labels: run-ci-fsdp run-ci-megatron
included labels: fsdp, megatron

STAGE       BACKEND  DECISION  TESTS  SHARDS  EST WALL
unit        cpu      RUN           1       1        1s
  run: workflow_dispatch event runs every stage with selected tests (1 selected)
large@cuda  cuda     RUN           2       2       30s
  run: workflow_dispatch event runs every stage with selected tests (2 selected)
large@rocm  rocm     RUN           1       1      1m0s
  run: workflow_dispatch event runs every stage with selected tests (1 selected)
amd-after   rocm     RUN           1       1       10s
  run: workflow_dispatch event runs every stage with selected tests (1 selected)

waves, one after another: a failed wave skips the later ones (fast-fail; the bypass-fastfail label runs them all)
  0: unit, large@cuda, large@rocm; 4 jobs
  1: amd-after; 1 job

shards:
  unit: makespan 1s / lower bound 1s (optimal)
  unit[0] est 1s, 1 file:
    tests/test_unit.py
  large@cuda: makespan 30s / lower bound 30s (optimal)
  large@cuda[0] est 30s, 1 file:
    tests/test_both.py
  large@cuda[1] est 20s, 1 file:
    tests/test_cuda.py
  large@rocm: makespan 1m0s / lower bound 1m0s (optimal)
  large@rocm[0] est 1m0s, 1 file:
    tests/test_both.py
  amd-after: makespan 10s / lower bound 10s (optimal)
  amd-after[0] est 10s, 1 file:
    tests/test_amd.py

images: cuda=build, rocm=build

accelerator hours (est_time x accelerators per runner): 0.03 scheduled, 0.00 skipped
  large@cuda: 0.01 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)
  large@rocm: 0.02 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)
  amd-after: 0.00 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)
warning: large@cuda: tests/test_both.py alone (est 30s) exceeds the stage's mean shard time (25s); the stage cannot \
finish sooner than this file
"""


def test_the_shared_suite_plans_as_one_stage_per_backend_with_its_own_runners(repo, capsys):
    assert run(["plan", "--repo", str(repo), *PLAN], capsys) == (0, PLAN_TEXT, "")
    rc, out, _err = run(["plan", "--repo", str(repo), *PLAN, "--format", "json"], capsys)
    doc = json.loads(out)
    assert rc == 0
    assert [(s["name"], s["backend"], s["runs_on"], [sh["files"] for sh in s["shards"]], s["wave"])
            for s in doc["stages"]] == [
        ("unit", "cpu", [], [["tests/test_unit.py"]], 0),
        ("large@cuda", "cuda", ["h200"], [["tests/test_both.py"], ["tests/test_cuda.py"]], 0),
        ("large@rocm", "rocm", ["mi325"], [["tests/test_both.py"]], 0),
        ("amd-after", "rocm", ["mi325"], [["tests/test_amd.py"]], 1),
    ]
    assert [(j["stage"], j["lane"], j["shards"], j["runs_on"], j["timeout_minutes"], j["wave"])
            for j in doc["jobs"]] == [
        ("unit", 0, "0", ["ubuntu-latest"], 360, 0),
        ("large@cuda", 0, "0", ["h200"], 360, 0),
        ("large@cuda", 1, "1", ["h200"], 360, 0),
        # The ROCm stage's own timeout_per_file (600 s), not the CUDA stage's.
        ("large@rocm", 0, "0", ["mi325"], 20, 0),
        ("amd-after", 0, "0", ["mi325"], 360, 1),
    ]
    assert doc["skipped_stages"] == []


def test_a_plan_directory_keeps_the_keys_and_runs_one_backend_s_stage(repo, tmp_path, capsys):
    planned = tmp_path / "planned"
    planned.mkdir()
    assert run(["plan", "--repo", str(repo), *PLAN, "--json-out", str(planned / "plan.json"),
                "--stage-plans", str(planned / "stages")], capsys)[0] == 0
    assert sorted(p.name for p in (planned / "stages").iterdir()) == [
        "amd-after.json", "large@cuda.json", "large@rocm.json", "unit.json"]
    own = json.loads((planned / "stages" / "large@rocm.json").read_text())
    assert [(s["name"], s["backend"], [t["file"] for t in s["tests"]]) for s in own["stages"]] == [
        ("large@rocm", "rocm", ["tests/test_both.py"])]
    assert own["run_settings"]["timeout_per_file"] == 600
    # The whole plan read back: the same stages and keys as planning again.
    assert run(["list", "--repo", str(repo), "--plan", str(planned), "--stage", "large@cuda", "--shard", "1"],
               capsys) == (0, "tests/test_cuda.py\n", "")
    proc = cli(repo, "run", "--plan", str(planned), "--stage", "large@rocm", "--python", sys.executable,
               "--timings-out", str(tmp_path / "t.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Enabled 1 test(s) (est total 60s) for large@rocm shard 0:\n"
                                  "  tests/test_both.py (est 60s)\nran both\n")
    record = json.loads((tmp_path / "t.jsonl").read_text())
    # The timing record names the stage by its key: `tune` reads the backend back from it.
    assert (record["file"], record["stage"], record["status"]) == ("tests/test_both.py", "large@rocm", "pass")


def test_a_bare_shared_name_names_no_one_stage(repo, tmp_path, capsys):
    assert run(["list", "--repo", str(repo), *PLAN, "--stage", "large"], capsys) == (
        2, "", "ci-policy list: error: --stage: 'large' names 2 planned stages, one per backend: large@cuda, "
               "large@rocm\n    hint: pass --stage large@cuda or large@rocm\n")


def test_file_run_names_each_backend_s_stage_by_its_key(repo, capsys):
    rc, out, err = run(["file-run", "--repo", str(repo), "--file", "tests/test_both.py"], capsys)
    assert (rc, out, err) == (1, "", (
        "tests/test_both.py:4: tests/test_both.py has 2 registrations that can run (cuda large (line 3), rocm large "
        "(line 4)); name the backend or stage to rerun\n    hint: /rerun-test tests/test_both.py STAGE, with STAGE "
        "one of: large@cuda, large@rocm (or the backend: cuda, rocm); or choose by backend for every file: "
        "file_run.prefer: [cuda, rocm]\nci-policy: 1 error\n"))
    rocm = (0, "file: tests/test_both.py\nstage: large (rocm)\nruns on: mi325\nimage: -\ncontainer options: --device "
               "/dev/kfd --device /dev/dri --group-add video --group-add render\ntimeout: 10m0s\n", "")
    for named in (["--stage", "large@rocm"], ["--backend", "rocm"], ["--backend", "rocm", "--stage", "large"]):
        assert run(["file-run", "--repo", str(repo), "--file", "tests/test_both.py", *named, "--format", "text"],
                   capsys) == rocm
    assert run(["file-run", "--repo", str(repo), "--file", "tests/test_both.py", "--stage", "large@cuda", "--format",
                "text"], capsys)[1].splitlines()[1:3] == ["stage: large (cuda)", "runs on: h200"]
    assert run(["file-run", "--repo", str(repo), "--file", "tests/test_both.py", "--stage", "large@cpu"], capsys) == (
        1, "", "tests/test_both.py:3: tests/test_both.py has no enabled registration for stage large@cpu; its "
               "registrations: cuda large (line 3), rocm large (line 4)\n    hint: name one of: large@cuda, "
               "large@rocm\nci-policy: 1 error\n")


def test_explain_names_each_stage_of_a_file_registered_on_both_backends(repo, capsys):
    assert run(["plan", "--repo", str(repo), *PLAN, "--explain", "tests/test_both.py"], capsys) == (0, (
        "ci-policy plan --explain: workflow_dispatch, cadence regular, trust trusted\n"
        "tests/test_both.py is registered to 2 stages (large@cuda, large@rocm); it runs in large@cuda, large@rocm\n"
        "  large@cuda (cuda, line 3): RUN\n"
        "    stage: run: workflow_dispatch event runs every stage with selected tests (2 selected)\n"
        "    file: selected: label megatron included by run-ci-megatron\n"
        "    est_time 30s; shard 0 of 2\n"
        "  large@rocm (rocm, line 4): RUN\n"
        "    stage: run: workflow_dispatch event runs every stage with selected tests (1 selected)\n"
        "    file: selected: label megatron included by run-ci-megatron\n"
        "    est_time 1m0s; shard 0 of 1\n"), "")


def test_after_names_one_backend_s_stage_and_a_bare_shared_name_is_refused(repo, capsys):
    config = repo / ".github" / "ci-policy.yml"
    config.write_text(CONFIG.replace("after: [large@rocm]", "after: [large]")
                      + "  - {name: x, backend: cpu, after: [large@cpu, unit@cpu]}\n")
    assert run(["lint", "--repo", str(repo)], capsys) == (1, (
        ".github/ci-policy.yml:8:64: CP109 config-after-unknown: stages[3].after[0]: 'large' names 2 stages, one per "
        "backend (cuda, rocm)\n    hint: name the one to wait for: large@cuda or large@rocm (or list each)\n"
        ".github/ci-policy.yml:9:37: CP109 config-after-unknown: stages[4].after[0]: names no stage: 'large@cpu'; "
        "did you mean 'large@cuda'?\n    hint: name stages of this file: unit, large@cuda, large@rocm, amd-after, x\n"
        ".github/ci-policy.yml:9:48: CP109 config-after-unknown: stages[4].after[1]: names no stage: 'unit@cpu'; "
        "did you mean 'unit'?\n    hint: name stages of this file: unit, large@cuda, large@rocm, amd-after, x\n"
        "ci-policy lint: FAILED: 3 errors, 0 warnings\n"), "")


def test_the_same_name_twice_for_one_backend_is_a_duplicate(repo, capsys):
    (repo / ".github" / "ci-policy.yml").write_text(CONFIG + "  - {name: large, backend: rocm, runs_on: [mi355]}\n")
    assert run(["lint", "--repo", str(repo)], capsys) == (1, (
        ".github/ci-policy.yml:9:12: CP106 config-duplicate: stages[4].name: duplicate stage name 'large' "
        "(also stages[2])\nci-policy lint: FAILED: 1 error, 0 warnings\n"), "")


def test_a_backend_without_a_stage_of_the_shared_name_gets_the_unknown_suite_error_alone(repo, capsys):
    (repo / "tests" / "test_cpu.py").write_text(
        "from ci_policy import register_cpu_ci, register_cuda_ci\n"
        "register_cuda_ci(est_time=1, suite=\"large\", labels=[\"megatron\"])\n"
        "register_cpu_ci(est_time=1, suite=\"large\")\n"
        "\nif __name__ == \"__main__\":\n    print()\n")
    assert run(["lint", "--repo", str(repo)], capsys) == (1, (
        "tests/test_cpu.py:3:35: CP225 suite-unknown: register_cpu_ci: suite 'large' is a cuda and rocm stage, not a "
        "cpu stage\n    hint: to run it on cpu too, add {name: large, backend: cpu} to the stages in "
        ".github/ci-policy.yml; configured cpu stages: unit (stages are listed in .github/ci-policy.yml)\n"
        "ci-policy lint: FAILED: 1 error, 0 warnings (5 test files, 6 registrations, 0 gates)\n"), "")
    # The file's CUDA registration is kept (only the bad one is dropped) and plans in large@cuda.
    rc, out, _err = run(["plan", "--repo", str(repo), *PLAN, "--format", "json"], capsys)
    doc = json.loads(out)
    assert rc == 1
    assert [t["file"] for s in doc["stages"] if s["name"] == "large@cuda" for t in s["tests"]] == [
        "tests/test_both.py", "tests/test_cpu.py", "tests/test_cuda.py"]
