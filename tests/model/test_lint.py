"""`ci-policy lint`: errors are all reported and fail the run; warnings never do.

Warnings: a configured stage with no registered test files, a label no test uses, and
each disabled registration with its reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from config_cases import STAGE_KEYS_HINT
from helpers import MINIMAL_CONFIG, assert_run_golden

from ci_policy.cli import main

CONFIG = MINIMAL_CONFIG
LABELS = """\
KNOWN_LABELS = {
    "megatron": "Megatron tests",
    "fsdp": "FSDP tests",
    "long": "slow",
}
"""
MAIN = '\nif __name__ == "__main__":\n    main()\n'
UNIT = "def test_ok():\n    assert True\n"


def cuda(call: str) -> str:
    return f"from ci_policy import register_cuda_ci\n\n{call}\n{MAIN}"


def lint(repo: Path, capsys, *extra: str) -> tuple[int, str, str]:
    rc = main(["lint", "--repo", str(repo), *extra])
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_clean_checkout_has_no_warnings(make_repo, capsys):
    repo = make_repo({
        "tests/unit/test_ok.py": UNIT,
        "tests/e2e/test_a.py": cuda('register_cuda_ci(60, "gpu-a", labels=["megatron", "fsdp"])'),
        "tests/e2e/test_b.py": cuda('register_cuda_ci(60, "gpu-b", labels=["long"])'),
        "tests/e2e/test_c.py": (
            "from ci_policy import register_rocm_ci\n\n"
            'register_rocm_ci(est_time=30, suite="amd", labels=["fsdp"])\n' + MAIN),
    }, config=CONFIG, labels=LABELS)
    assert lint(repo, capsys) == (
        0, "ci-policy lint: OK: 0 errors, 0 warnings (4 test files, 4 registrations, 0 gates)\n", "")
    assert main(["lint", "--repo", str(repo), "--format", "github"]) == 0
    assert capsys.readouterr().out == (
        "ci-policy lint: OK: 0 errors, 0 warnings (4 test files, 4 registrations, 0 gates)\n")


@pytest.fixture
def warning_repo(make_repo) -> Path:
    return make_repo({
        "tests/unit/test_ok.py": UNIT,
        "tests/e2e/test_a.py": cuda('register_cuda_ci(60, "gpu-a", labels=["megatron"])'),
        "tests/e2e/test_off.py": cuda(
            'register_cuda_ci(60, "gpu-b", labels=["megatron"], disabled="broken on driver 580, see #12")'),
    }, config=CONFIG, labels=LABELS)


def test_warnings_do_not_fail_lint(warning_repo, capsys):
    assert_run_golden(lint(warning_repo, capsys), 0, "model/lint/warnings.txt")


def test_warnings_as_json(warning_repo, capsys):
    rc, out, err = lint(warning_repo, capsys, "--format", "json")
    assert (rc, err) == (0, "")
    assert json.loads(out) == {
        "schema": 1,
        "ok": True,
        "errors": [],
        "warnings": [
            {"code": "CP901", "name": "stage-without-tests",
             "path": ".github/ci-policy.yml", "line": 10, "col": None,
             "message": "stage amd has no registered test files",
             "hint": "register tests with suite='amd' or remove the stage"},
            {"code": "CP902", "name": "label-unused",
             "path": "labels.py", "line": 3, "col": None, "message": "label 'fsdp' is not used by any test",
             "hint": "run-ci-fsdp selects nothing; use it in a registration or remove it"},
            {"code": "CP902", "name": "label-unused",
             "path": "labels.py", "line": 4, "col": None, "message": "label 'long' is not used by any test",
             "hint": "run-ci-long selects nothing; use it in a registration or remove it"},
            {"code": "CP905", "name": "registration-disabled",
             "path": "tests/e2e/test_off.py", "line": 3, "col": 1,
             "message": "register_cuda_ci for suite gpu-b is disabled: broken on driver 580, see #12",
             "hint": None},
        ],
        "suppressed": [],
        "files": 3,
        "registrations": 3,
    }


def test_warnings_as_github_annotations(warning_repo, monkeypatch, capsys):
    monkeypatch.chdir(warning_repo)
    assert main(["lint", "--format", "github"]) == 0
    assert capsys.readouterr() == (
        "::warning file=.github/ci-policy.yml,line=10,title=CP901 stage-without-tests::"
        "stage amd has no registered test files "
        "(hint: register tests with suite='amd' or remove the stage)\n"
        "::warning file=labels.py,line=3,title=CP902 label-unused::label 'fsdp' is not used by any test "
        "(hint: run-ci-fsdp selects nothing; use it in a registration or remove it)\n"
        "::warning file=labels.py,line=4,title=CP902 label-unused::label 'long' is not used by any test "
        "(hint: run-ci-long selects nothing; use it in a registration or remove it)\n"
        "::warning file=tests/e2e/test_off.py,line=3,col=1,title=CP905 registration-disabled::"
        "register_cuda_ci for suite gpu-b is disabled: "
        "broken on driver 580, see #12\n"
        "ci-policy lint: OK: 0 errors, 4 warnings (3 test files, 3 registrations, 0 gates)\n",
        "")


def test_registry_accepts_a_checkout_with_only_warnings(warning_repo, capsys):
    assert main(["registry", "--repo", str(warning_repo), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["registrations"]
    assert [(r["file"], r["suite"], r["disabled"], r["implicit"]) for r in rows] == [
        ("tests/e2e/test_a.py", "gpu-a", None, False),
        ("tests/e2e/test_off.py", "gpu-b", "broken on driver 580, see #12", False),
        ("tests/unit/test_ok.py", "cpu", None, True),
    ]


def test_disabled_registrations_are_one_line_in_text_and_each_listed_under_verbose_and_in_json(make_repo, capsys):
    # sglang disables dozens of tests on purpose: one line says so, not one per registration.
    repo = make_repo({
        "tests/e2e/test_both.py": (
            "from ci_policy import register_cuda_ci, register_rocm_ci\n\n"
            'register_cuda_ci(60, "gpu-a", labels=["megatron", "fsdp", "long"], disabled="no H200 this week")\n'
            'register_rocm_ci(60, "amd", labels=["fsdp"], disabled="MI350 driver bug #7")\n' + MAIN),
        "tests/e2e/test_b.py": cuda('register_cuda_ci(60, "gpu-b", labels=["long"])'),
    }, config=CONFIG, labels=LABELS)
    rc, out, err = lint(repo, capsys)
    assert (rc, err) == (0, "")
    assert out == (
        ".github/ci-policy.yml:7: warning: CP901 stage-without-tests: stage cpu has no registered test files\n"
        "    hint: register tests with suite='cpu' or remove the stage\n"
        "warning: CP905 registration-disabled: 2 registrations in 1 file are disabled\n"
        "    hint: `ci-policy lint --verbose` lists each one (so does --format json)\n"
        "ci-policy lint: OK: 0 errors, 3 warnings (2 test files, 3 registrations, 0 gates)\n")
    assert main(["lint", "--repo", str(repo), "--verbose"]) == 0
    assert capsys.readouterr().out == (
        ".github/ci-policy.yml:7: warning: CP901 stage-without-tests: stage cpu has no registered test files\n"
        "    hint: register tests with suite='cpu' or remove the stage\n"
        "tests/e2e/test_both.py:3:1: warning: CP905 registration-disabled: "
        "register_cuda_ci for suite gpu-a is disabled: no H200 this week\n"
        "tests/e2e/test_both.py:4:1: warning: CP905 registration-disabled: "
        "register_rocm_ci for suite amd is disabled: MI350 driver bug #7\n"
        "ci-policy lint: OK: 0 errors, 3 warnings (2 test files, 3 registrations, 0 gates)\n")
    assert main(["lint", "--repo", str(repo), "--format", "json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert [(w["code"], w["path"], w["line"], w["message"]) for w in warnings] == [
        ("CP901", ".github/ci-policy.yml", 7, "stage cpu has no registered test files"),
        ("CP905", "tests/e2e/test_both.py", 3, "register_cuda_ci for suite gpu-a is disabled: no H200 this week"),
        ("CP905", "tests/e2e/test_both.py", 4, "register_rocm_ci for suite amd is disabled: MI350 driver bug #7")]
    assert main(["lint", "--repo", str(repo), "--format", "github"]) == 0
    assert capsys.readouterr().out.count("title=CP905 registration-disabled::") == 2


def test_every_configuration_error_is_reported_at_once(make_repo, capsys):
    config = CONFIG.replace("{name: gpu-a, backend: cuda,", "{name: gpu-a, backend: cdua,").replace(
        "  - {name: amd, backend: rocm, runs_on: [mi350]}\n",
        "  - {name: cpu, backend: cpu, partitons: 2}\n  - {name: amd, backend: rocm}\n")
    repo = make_repo({"tests/unit/test_ok.py": UNIT}, config=config, labels=LABELS)
    hint = STAGE_KEYS_HINT
    assert lint(repo, capsys) == (1, f"""\
.github/ci-policy.yml:8:28: CP105 config-invalid-value: stages[1].backend: expected one of cpu, cuda, rocm, got 'cdua'
    hint: did you mean 'cuda'? Otherwise, declare it in the configuration: backends: {{cdua: {{accelerator: true}}}}
.github/ci-policy.yml:10:12: CP106 config-duplicate: stages[3].name: duplicate stage name 'cpu' (also stages[0])
.github/ci-policy.yml:10:31: CP102 config-unknown-key: stages[3].partitons: unknown key; did you mean 'partitions'?
    hint: {hint}
.github/ci-policy.yml:11:5: CP103 config-missing-key: stages[4].runs_on: required for rocm stages that are not external
    hint: list the runner labels, e.g. runs_on: [h200, 4gpu]
ci-policy lint: FAILED: 4 errors, 0 warnings
""", "")
    rc = main(["lint", "--repo", str(repo), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert (rc, data["ok"], len(data["errors"]), data["warnings"], data["files"], data["registrations"]) == (
        1, False, 4, [], None, None)


def test_every_label_error_is_reported_at_once(make_repo, capsys):
    labels = 'KNOWN_LABELS = {"megatron": "x", "bad name": "y", "megatron": "z", "ok": 3}\n'
    repo = make_repo({"tests/unit/test_ok.py": UNIT}, config=CONFIG, labels=labels)
    assert_run_golden(lint(repo, capsys), 1, "model/lint/label-errors.txt")


def test_errors_in_many_files_are_all_reported_and_sorted(make_repo, capsys):
    repo = make_repo({
        "tests/e2e/test_z.py": cuda('register_cuda_ci(60, "gpu-a")'),
        "tests/e2e/test_a.py": cuda('register_cuda_ci(-1, "gpu-a", labels=["megatron"])'),
        "tests/e2e/test_m.py": cuda('register_cuda_ci(60, "gpu-a", labels=["fsdp"], nightly="yes")'),
    }, config=CONFIG, labels=LABELS)
    rc, out, err = lint(repo, capsys)
    assert (rc, err) == (1, "")
    errors = [line for line in out.splitlines() if line.startswith("tests/")]
    assert errors == [
        "tests/e2e/test_a.py:3:18: CP223 est-time-invalid: "
        "register_cuda_ci: est_time must be a finite non-negative number of "
        "seconds, got -1",
        "tests/e2e/test_m.py:3:56: CP229 nightly-invalid: register_cuda_ci: nightly must be True or False, got 'yes'",
        "tests/e2e/test_z.py:3:1: CP228 labels-required: "
        "register_cuda_ci: a cuda registration needs at least one label "
        "(gpu_requires_labels is true), so that a PR can select it",
    ]
    # An error's hint, when it has one, is on the next line.
    lines = out.splitlines()
    assert lines[:6] == [
        errors[0], "    hint: write e.g. est_time=300",
        errors[1],
        errors[2], "    hint: add labels=[...] with one of: megatron, fsdp, long",
        ".github/ci-policy.yml:7: warning: CP901 stage-without-tests: stage cpu has no registered test files",
    ]
    assert lines[-1].startswith("ci-policy lint: FAILED: 3 errors, ")


def test_a_stage_with_a_command_needs_no_registered_test_file(make_repo, capsys):
    config = ("version: 1\ngpu_requires_labels: false\ndiscovery: {roots: [tests]}\nstages:\n"
              "  - {name: unit, backend: cpu}\n"
              "  - {name: kernel, backend: cuda, runs_on: [h100], command: [pytest, tests/], working_directory: "
              "sgl-kernel, paths: ['sgl-kernel/**'], est_time: 600}\n"
              "  - {name: idle, backend: cpu}\n")
    repo = make_repo({"tests/unit/test_ok.py": "from ci_policy import register_cpu_ci\nregister_cpu_ci(1, 'unit')\n",
                      "sgl-kernel/tests/test_k.py": ""}, config=config, labels=None)
    # The stage without tests or a command is warned about; the one that runs its command is not.
    assert lint(repo, capsys) == (0, (
        ".github/ci-policy.yml:7: warning: CP901 stage-without-tests: stage idle has no registered test files\n"
        "    hint: register tests with suite='idle' or remove the stage\n"
        "ci-policy lint: OK: 0 errors, 1 warning (1 test file, 1 registration, 0 gates)\n"), "")


@pytest.mark.parametrize("made, expected", [
    ("missing", (".github/ci-policy.yml:6: CP402 path-missing: stages[1].working_directory: sgl-kernel does not "
                 "exist\n    hint: create it, or name the directory stage kernel's command runs in\n")),
    ("file", (".github/ci-policy.yml:6: CP403 path-wrong-type: stages[1].working_directory: sgl-kernel is not a "
              "directory\n    hint: name the directory stage kernel's command runs in\n")),
    ("symlink", (".github/ci-policy.yml:6: CP401 symlink-refused: stages[1].working_directory sgl-kernel is a "
                 "symlink; ci-policy refuses symlinks in a checkout\n"
                 "    hint: replace the symlink with the real file or directory\n")),
])
def test_a_stage_commands_working_directory_must_be_a_directory_of_the_checkout(make_repo, capsys, made, expected):
    config = ("version: 1\ngpu_requires_labels: false\ndiscovery: {roots: [tests]}\nstages:\n"
              "  - {name: unit, backend: cpu}\n"
              "  - {name: kernel, backend: cpu, command: [pytest, tests/], working_directory: sgl-kernel, "
              "paths: ['sgl-kernel/**'], est_time: 600}\n")
    repo = make_repo({"tests/unit/test_ok.py": "from ci_policy import register_cpu_ci\nregister_cpu_ci(1, 'unit')\n",
                      "elsewhere/keep": ""}, config=config, labels=None)
    if made == "file":
        (repo / "sgl-kernel").write_text("")
    elif made == "symlink":
        (repo / "sgl-kernel").symlink_to("elsewhere")
    summary = "ci-policy lint: FAILED: 1 error, 0 warnings (1 test file, 1 registration, 0 gates)\n"
    assert lint(repo, capsys) == (1, expected + summary, "")
