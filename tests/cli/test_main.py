"""End-to-end behaviour of `ci-policy lint` and `ci-policy registry`.

Most tests call `ci_policy.cli.main([...])` in-process and read stdout/stderr with capsys;
a few run the installed console script and `python -m ci_policy` in a subprocess, which is
also how "no traceback, ever" is checked for bad input.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import MINIMAL_CONFIG, MINIMAL_LABELS, clean_env, console_script
from ci_policy.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gpu-repo"
PYTHON = sys.executable




def run(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def usage_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


# -- the bundled example: exact outputs ---------------------------------------------------

DISABLED_WARNING = ("register_cuda_ci for suite stage-c-4-gpu-h200 is disabled: "
                    "flaky on H200 driver 580, tracked in #1234")
SUMMARY = "ci-policy lint: OK: 0 errors, 1 warning (17 test files, 18 registrations, 5 gates)"

LINT_TEXT = (
    f"tests/e2e/test_fsdp_checkpoint_resume.py:10:1: warning: CP905 registration-disabled: {DISABLED_WARNING}\n"
    f"{SUMMARY}\n"
)


def lint_github(prefix: str = "") -> str:
    return (
        f"::warning file={prefix}tests/e2e/test_fsdp_checkpoint_resume.py,line=10,col=1,"
        f"title=CP905 registration-disabled::{DISABLED_WARNING}\n"
        f"{SUMMARY}\n"
    )


LINT_JSON = {
    "schema": 1,
    "ok": True,
    "errors": [],
    "warnings": [
        {
            "code": "CP905",
            "name": "registration-disabled",
            "path": "tests/e2e/test_fsdp_checkpoint_resume.py",
            "line": 10,
            "col": 1,
            "message": DISABLED_WARNING,
            "hint": None,
        }
    ],
    "files": 17,
    "registrations": 18,
}

_FIELDS = ("file", "line", "backend", "suite", "est_time", "labels", "nightly", "disabled", "implicit")
_ROWS = [
    ("tests/e2e/session_server/test_session_multiturn.py", 11, "cuda", "stage-c-4-gpu-h200", 480,
     ["session", "sglang"], False, None, False),
    ("tests/e2e/session_server/test_session_tool_calls.py", 10, "cuda", "stage-b-1-gpu-h200", 360,
     ["session"], False, None, False),
    ("tests/e2e/test_fsdp_checkpoint_resume.py", 10, "cuda", "stage-c-4-gpu-h200", 420, ["fsdp"], False,
     "flaky on H200 driver 580, tracked in #1234", False),
    ("tests/e2e/test_fsdp_dpo_4gpu.py", 9, "cuda", "stage-c-4-gpu-h200", 600, ["fsdp"], False, None, False),
    ("tests/e2e/test_fsdp_grpo.py", 9, "cuda", "stage-b-1-gpu-h200", 240, ["fsdp"], False, None, False),
    ("tests/e2e/test_gb200_scaling.py", 9, "cuda", "stage-d-8-gpu-gb200", 3000, ["megatron"], False, None,
     False),
    ("tests/e2e/test_megatron_long_context.py", 10, "cuda", "stage-c-4-gpu-h200", 2400,
     ["megatron", "long"], False, None, False),
    ("tests/e2e/test_megatron_nightly_convergence.py", 9, "cuda", "stage-c-4-gpu-h200", 1500,
     ["megatron"], True, None, False),
    ("tests/e2e/test_megatron_ppo_4gpu.py", 9, "cuda", "stage-c-4-gpu-h200", 900, ["megatron"], False, None,
     False),
    ("tests/e2e/test_megatron_sft.py", 9, "cuda", "stage-b-1-gpu-h200", 300, ["megatron"], False, None, False),
    ("tests/e2e/test_rocm_fsdp_grpo.py", 9, "cuda", "stage-c-4-gpu-h200", 360, ["fsdp"], False, None, False),
    ("tests/e2e/test_rocm_fsdp_grpo.py", 10, "rocm", "stage-c-4-gpu-mi350", 480, ["fsdp", "rocm"], False,
     None, False),
    ("tests/e2e/test_rocm_megatron_sft.py", 9, "rocm", "stage-c-4-gpu-mi350", 540, ["megatron", "rocm"],
     False, None, False),
    ("tests/e2e/test_sglang_rollout.py", 9, "cuda", "stage-b-1-gpu-h200", 180, ["sglang"], False, None, False),
    ("tests/fast/test_advantages.py", None, "cpu", "stage-a-cpu", 5, [], False, None, True),
    ("tests/fast/test_kl.py", None, "cpu", "stage-a-cpu", 5, [], False, None, True),
    ("tests/fast/test_rollout.py", None, "cpu", "stage-a-cpu", 5, [], False, None, True),
    ("tests/fast/test_session_protocol.py", None, "cpu", "stage-a-cpu", 5, [], False, None, True),
]
REGISTRY_JSON = {"schema": 1, "registrations": [dict(zip(_FIELDS, row)) for row in _ROWS]}

REGISTRY_TEXT = """\
FILE                                                    BACKEND  SUITE                EST    LABELS          NOTES
tests/e2e/session_server/test_session_multiturn.py:11   cuda     stage-c-4-gpu-h200   480s   session,sglang
tests/e2e/session_server/test_session_tool_calls.py:10  cuda     stage-b-1-gpu-h200   360s   session
tests/e2e/test_fsdp_checkpoint_resume.py:10             cuda     stage-c-4-gpu-h200   420s   fsdp            disabled: flaky on H200 driver 580, tracked in #1234
tests/e2e/test_fsdp_dpo_4gpu.py:9                       cuda     stage-c-4-gpu-h200   600s   fsdp
tests/e2e/test_fsdp_grpo.py:9                           cuda     stage-b-1-gpu-h200   240s   fsdp
tests/e2e/test_gb200_scaling.py:9                       cuda     stage-d-8-gpu-gb200  3000s  megatron
tests/e2e/test_megatron_long_context.py:10              cuda     stage-c-4-gpu-h200   2400s  megatron,long
tests/e2e/test_megatron_nightly_convergence.py:9        cuda     stage-c-4-gpu-h200   1500s  megatron        nightly
tests/e2e/test_megatron_ppo_4gpu.py:9                   cuda     stage-c-4-gpu-h200   900s   megatron
tests/e2e/test_megatron_sft.py:9                        cuda     stage-b-1-gpu-h200   300s   megatron
tests/e2e/test_rocm_fsdp_grpo.py:9                      cuda     stage-c-4-gpu-h200   360s   fsdp
tests/e2e/test_rocm_fsdp_grpo.py:10                     rocm     stage-c-4-gpu-mi350  480s   fsdp,rocm
tests/e2e/test_rocm_megatron_sft.py:9                   rocm     stage-c-4-gpu-mi350  540s   megatron,rocm
tests/e2e/test_sglang_rollout.py:9                      cuda     stage-b-1-gpu-h200   180s   sglang
tests/fast/test_advantages.py                           cpu      stage-a-cpu          5s     -               implicit
tests/fast/test_kl.py                                   cpu      stage-a-cpu          5s     -               implicit
tests/fast/test_rollout.py                              cpu      stage-a-cpu          5s     -               implicit
tests/fast/test_session_protocol.py                     cpu      stage-a-cpu          5s     -               implicit
"""


def test_lint_text_on_the_example(example_repo, monkeypatch, capsys):
    monkeypatch.chdir(example_repo)
    assert run(["lint"], capsys) == (0, LINT_TEXT, "")
    assert run(["lint", "--repo", ".", "--format", "text"], capsys) == (0, LINT_TEXT, "")


def test_lint_text_locations_are_repo_relative_from_any_directory(example_repo, monkeypatch, capsys):
    monkeypatch.chdir(example_repo.parent)
    assert run(["lint", "--repo", "gpu-repo"], capsys) == (0, LINT_TEXT, "")
    # The bundled example itself, read in place.
    assert run(["lint", "--repo", str(EXAMPLE)], capsys) == (0, LINT_TEXT, "")


def test_lint_json_on_the_example(capsys):
    rc, out, err = run(["lint", "--repo", str(EXAMPLE), "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert json.loads(out) == LINT_JSON
    assert out == json.dumps(LINT_JSON, indent=2) + "\n"


def test_lint_github_paths_are_relative_to_the_workspace(example_repo, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(example_repo)
    assert run(["lint", "--format", "github"], capsys) == (0, lint_github(), "")
    monkeypatch.chdir(example_repo.parent)
    assert run(["lint", "--repo", "gpu-repo", "--format", "github"], capsys) == (0, lint_github("gpu-repo/"), "")
    assert run(["lint", "--repo", str(example_repo), "--format", "github"], capsys) == (
        0, lint_github("gpu-repo/"), "")
    # A checkout outside the workspace keeps repo-relative paths (never ../../...).
    elsewhere = tmp_path / "workspace"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert run(["lint", "--repo", str(example_repo), "--format", "github"], capsys) == (0, lint_github(), "")


def test_registry_json_on_the_example(capsys):
    rc, out, err = run(["registry", "--repo", str(EXAMPLE), "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert json.loads(out) == REGISTRY_JSON
    assert out == json.dumps(REGISTRY_JSON, indent=2) + "\n"
    rows = json.loads(out)["registrations"]
    assert [list(r) for r in rows] == [list(_FIELDS)] * len(rows)
    assert [(r["file"], r["line"] or 0) for r in rows] == sorted((r["file"], r["line"] or 0) for r in rows)


def test_registry_text_is_the_default_format(example_repo, monkeypatch, capsys):
    monkeypatch.chdir(example_repo)
    assert run(["registry"], capsys) == (0, REGISTRY_TEXT, "")
    assert run(["registry", "--repo", ".", "--format", "text"], capsys) == (0, REGISTRY_TEXT, "")


def test_explicit_config_inside_and_outside_the_checkout(example_repo, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(example_repo)
    assert run(["lint", "--config", ".github/ci-policy.yml"], capsys) == (0, LINT_TEXT, "")
    outside = tmp_path / "policy.yml"
    outside.write_text((example_repo / ".github" / "ci-policy.yml").read_text())
    (example_repo / ".github" / "ci-policy.yml").unlink()
    assert run(["lint", "--config", str(outside)], capsys) == (0, LINT_TEXT, "")
    assert run(["registry", "--config", str(outside), "--format", "json"], capsys) == (
        0, json.dumps(REGISTRY_JSON, indent=2) + "\n", "")
    # Without --config the (now missing) default is an error.
    rc, out, err = run(["lint"], capsys)
    assert rc == 1
    assert out == (".github/ci-policy.yml: CP402 path-missing: configuration file .github/ci-policy.yml does not exist\n"
                   "    hint: create it or point the configuration at the right configuration file\n"
                   "ci-policy lint: FAILED: 1 error, 0 warnings\n")


def test_github_annotation_for_a_config_outside_the_checkout(example_repo, tmp_path, monkeypatch, capsys):
    cfgs = tmp_path / "cfgs"
    cfgs.mkdir()
    (cfgs / "bad.yml").write_text("version: 2\ndiscovery: {roots: [tests]}\nstages: [{name: a, backend: cpu}]\n")
    monkeypatch.chdir(tmp_path)
    message = "version: unsupported version 2; this ci_policy reads version 1"
    # The --config path is relative to the current directory, not to the checkout.
    assert run(["lint", "--repo", "gpu-repo", "--config", "cfgs/bad.yml", "--format", "github"], capsys) == (
        1, f"::error file=cfgs/bad.yml,line=1,col=10::{message}\n"
           "ci-policy lint: FAILED: 1 error, 0 warnings\n", "")
    monkeypatch.chdir(example_repo)
    assert run(["lint", "--config", "../cfgs/bad.yml", "--format", "github"], capsys) == (
        1, f"::error file=../cfgs/bad.yml,line=1,col=10::{message}\n"
           "ci-policy lint: FAILED: 1 error, 0 warnings\n", "")


def test_github_annotation_for_a_missing_repo_names_it_once(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert run(["lint", "--repo", "nonexistent", "--format", "github"], capsys) == (
        1, "::error file=nonexistent,title=CP403 path-wrong-type::repository nonexistent is not a directory "
           "(hint: pass --repo with the checkout's root directory)\n"
           "ci-policy lint: FAILED: 1 error, 0 warnings\n", "")


# -- errors: every one reported, located, with its hint -----------------------------------

CONFIG = MINIMAL_CONFIG
LABELS = MINIMAL_LABELS
MAIN = '\nif __name__ == "__main__":\n    main()\n'
IMPORT = "from ci_policy import register_cuda_ci\n\n"


def write_repo(root: Path, files: dict[str, str], config: str = CONFIG, labels: str = LABELS) -> Path:
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "ci-policy.yml").write_text(config)
    (root / "labels.py").write_text(labels)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def broken_repo(tmp_path) -> Path:
    return write_repo(tmp_path / "repo", {
        "tests/e2e/test_bad_label.py":
            IMPORT + 'register_cuda_ci(est_time=60, suite="gpu-a", labels=["megatrn"])\n' + MAIN,
        "tests/e2e/test_bad_suite.py": IMPORT + 'register_cuda_ci(60, "gpu-x", labels=["fsdp"])\n' + MAIN,
        "tests/e2e/test_no_main.py": IMPORT + 'register_cuda_ci(60, "gpu-b", labels=["long"])\n',
        "tests/e2e/test_unregistered.py": "x = 1\n",
        "tests/unit/test_ok.py": "def test_ok():\n    assert True\n",
    })


BROKEN_ERRORS = """\
tests/e2e/test_bad_label.py:3:54: CP227 label-unknown: register_cuda_ci: unknown label 'megatrn' (did you mean 'megatron'?); valid labels: megatron, fsdp, long
    hint: use a valid label, or add 'megatrn' with a description to KNOWN_LABELS in labels.py
tests/e2e/test_bad_suite.py:3:22: CP225 suite-unknown: register_cuda_ci: suite 'gpu-x' is not a configured cuda stage; did you mean 'gpu-b'?
    hint: configured cuda stages: gpu-a, gpu-b (stages are listed in .github/ci-policy.yml)
tests/e2e/test_no_main.py:3:1: CP222 registration-no-main-block: stage gpu-b runs tests/e2e/test_no_main.py as `python FILE`, but the file has no `if __name__ == "__main__":` block that calls something, so it would exit 0 without running a test
    hint: add `if __name__ == "__main__": unittest.main()` (or pytest.main([__file__]))
tests/e2e/test_unregistered.py:1:1: CP231 test-file-unregistered: tests/e2e/test_unregistered.py matches the discovery pattern 'test_*.py' but has no registration and is not under an implicit root, so no stage would run it
    hint: add register_cpu_ci/register_cuda_ci/register_rocm_ci(...) at module level, or add an implicit root for its directory in the configuration
"""
BROKEN_WARNINGS = """\
.github/ci-policy.yml:8: warning: CP901 stage-without-tests: stage gpu-a has no registered test files
    hint: register tests with suite='gpu-a' or remove the stage
.github/ci-policy.yml:10: warning: CP901 stage-without-tests: stage amd has no registered test files
    hint: register tests with suite='amd' or remove the stage
labels.py:1: warning: CP902 label-unused: label 'fsdp' is not used by any test
    hint: run-ci-fsdp selects nothing; use it in a registration or remove it
labels.py:1: warning: CP902 label-unused: label 'megatron' is not used by any test
    hint: run-ci-megatron selects nothing; use it in a registration or remove it
"""


def test_lint_reports_every_error_with_its_hint(broken_repo, capsys):
    rc, out, err = run(["lint", "--repo", str(broken_repo)], capsys)
    assert (rc, err) == (1, "")
    assert out == (BROKEN_ERRORS + BROKEN_WARNINGS
                   + "ci-policy lint: FAILED: 4 errors, 4 warnings (5 test files, 2 registrations, 0 gates)\n")


def test_registry_refuses_an_invalid_checkout_and_lists_every_error(broken_repo, capsys):
    for fmt in ("text", "json"):
        rc, out, err = run(["registry", "--repo", str(broken_repo), "--format", fmt], capsys)
        assert (rc, out) == (1, "")
        assert err == BROKEN_ERRORS + "ci-policy: 4 errors\n"


def test_lint_json_with_errors(broken_repo, capsys):
    rc, out, err = run(["lint", "--repo", str(broken_repo), "--format", "json"], capsys)
    assert (rc, err) == (1, "")
    data = json.loads(out)
    assert list(data) == ["schema", "ok", "errors", "warnings", "files", "registrations"]
    assert (data["schema"], data["ok"], data["files"], data["registrations"]) == (1, False, 5, 2)
    assert [(e["path"], e["line"], e["col"]) for e in data["errors"]] == [
        ("tests/e2e/test_bad_label.py", 3, 54), ("tests/e2e/test_bad_suite.py", 3, 22),
        ("tests/e2e/test_no_main.py", 3, 1), ("tests/e2e/test_unregistered.py", 1, 1)]
    assert data["errors"][0] == {
        "code": "CP227", "name": "label-unknown", "path": "tests/e2e/test_bad_label.py", "line": 3, "col": 54,
        "message": "register_cuda_ci: unknown label 'megatrn' (did you mean 'megatron'?); "
                   "valid labels: megatron, fsdp, long",
        "hint": "use a valid label, or add 'megatrn' with a description to KNOWN_LABELS in labels.py"}
    assert [(w["code"], w["path"], w["line"], w["message"]) for w in data["warnings"]] == [
        ("CP901", ".github/ci-policy.yml", 8, "stage gpu-a has no registered test files"),
        ("CP901", ".github/ci-policy.yml", 10, "stage amd has no registered test files"),
        ("CP902", "labels.py", 1, "label 'fsdp' is not used by any test"),
        ("CP902", "labels.py", 1, "label 'megatron' is not used by any test")]


def test_lint_github_with_errors(broken_repo, monkeypatch, capsys):
    monkeypatch.chdir(broken_repo)
    rc, out, err = run(["lint", "--format", "github"], capsys)
    assert (rc, err) == (1, "")
    lines = out.splitlines()
    assert lines[0] == (
        "::error file=tests/e2e/test_bad_label.py,line=3,col=54,title=CP227 label-unknown::"
        "register_cuda_ci: unknown label 'megatrn' "
        "(did you mean 'megatron'?); valid labels: megatron, fsdp, long (hint: use a valid label, or add "
        "'megatrn' with a description to KNOWN_LABELS in labels.py)")
    assert [line.split("::")[1] for line in lines[:-1]] == [
        "error file=tests/e2e/test_bad_label.py,line=3,col=54,title=CP227 label-unknown",
        "error file=tests/e2e/test_bad_suite.py,line=3,col=22,title=CP225 suite-unknown",
        "error file=tests/e2e/test_no_main.py,line=3,col=1,title=CP222 registration-no-main-block",
        "error file=tests/e2e/test_unregistered.py,line=1,col=1,title=CP231 test-file-unregistered",
        "warning file=.github/ci-policy.yml,line=8,title=CP901 stage-without-tests",
        "warning file=.github/ci-policy.yml,line=10,title=CP901 stage-without-tests",
        "warning file=labels.py,line=1,title=CP902 label-unused",
        "warning file=labels.py,line=1,title=CP902 label-unused",
    ]
    assert lines[-1] == "ci-policy lint: FAILED: 4 errors, 4 warnings (5 test files, 2 registrations, 0 gates)"


def test_a_syntax_error_is_one_located_error_among_others(broken_repo, capsys):
    (broken_repo / "tests" / "e2e" / "test_syntax.py").write_text("def f(:\n    pass\n")
    rc, out, _ = run(["lint", "--repo", str(broken_repo)], capsys)
    assert rc == 1
    syntax = [line for line in out.splitlines() if line.startswith("tests/e2e/test_syntax.py:1:")]
    assert len(syntax) == 1 and syntax[0].endswith(": tests/e2e/test_syntax.py is not valid Python: invalid syntax")
    assert out.splitlines()[-1].startswith("ci-policy lint: FAILED: 5 errors, 4 warnings")


# -- usage errors: exit 2 ------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["lint", "--bogus"], "ci-policy: error: unrecognized arguments: --bogus"),
    (["lint", "--format", "xml"],
     "ci-policy lint: error: argument --format: invalid choice: 'xml' (choose from 'text', 'json', 'github')"),
    (["registry", "--format", "github"],
     "ci-policy registry: error: argument --format: invalid choice: 'github' (choose from 'text', 'json')"),
    ([], "ci-policy: error: the following arguments are required: COMMAND"),
    (["frobnicate"], "ci-policy: error: argument COMMAND: invalid choice: 'frobnicate'"),
    (["lint", "--repo"], "ci-policy lint: error: argument --repo: expected one argument"),
])
def test_usage_errors_exit_2(argv, message, capsys):
    err = usage_error(argv, capsys)
    assert err.startswith("usage: ci-policy")
    assert message in err


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == "ci-policy 0.1.0\n"


# -- bad input: a clear message and exit 1, never a traceback ------------------------------

def _bad_inputs(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (extra argv, the message lint must print)."""
    def repo(name: str, **kw) -> Path:
        return write_repo(tmp_path / name, {"tests/unit/test_ok.py": "def test_ok():\n    pass\n"}, **kw)

    no_config = repo("no-config")
    (no_config / ".github" / "ci-policy.yml").unlink()
    invalid_yaml = repo("invalid-yaml", config="version: 1\n  stages: [\n")
    broken_labels = repo("broken-labels", labels="KNOWN_LABELS = {\n")
    no_labels = repo("no-labels", labels="LABELS = {}\n")
    through_file = repo("through-file", config=CONFIG.replace("version: 1\n", "version: 1\nlabels_file: README/labels.py\n"))
    (through_file / "README").write_text("not a directory\n")
    long_name = "a" * 300
    too_long = repo("too-long", config=CONFIG.replace("version: 1\n", f"version: 1\nlabels_file: {long_name}/labels.py\n"))
    nested = repo("nested", labels=LABELS + "x = a" + ".b" * 300_000 + "\n")
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    return {
        "missing default config": (["--repo", str(no_config)],
                                   ".github/ci-policy.yml: CP402 path-missing: configuration file .github/ci-policy.yml does not exist"),
        "missing --config": (["--repo", str(no_config), "--config", str(tmp_path / "nope.yml")],
                             f"configuration file {tmp_path / 'nope.yml'} cannot be read: No such file or directory"),
        "invalid YAML": (["--repo", str(invalid_yaml)],
                         ".github/ci-policy.yml:2:9: invalid YAML: mapping values are not allowed here"),
        "broken labels.py": (["--repo", str(broken_labels)], "labels.py:1:16: CP301 labels-syntax-error: labels file labels.py is not valid Python"),
        "labels.py without KNOWN_LABELS": (["--repo", str(no_labels)],
                                           "labels.py:1:1: CP302 labels-undefined: labels file labels.py does not define KNOWN_LABELS"),
        "labels_file through a regular file": (["--repo", str(through_file)],
                                               "README/labels.py: CP402 path-missing: labels file README/labels.py does not exist"),
        "labels_file name too long": (["--repo", str(too_long)],
                                      f"cannot read {too_long / long_name}: File name too long"),
        "deeply nested labels.py": (["--repo", str(nested)], "too deeply nested"),
        "--repo does not exist": (["--repo", str(tmp_path / "missing")],
                                  f"repository {tmp_path / 'missing'} is not a directory"),
        "--repo is a file": (["--repo", str(a_file)], f"repository {a_file} is not a directory"),
    }


BAD_INPUTS = ["missing default config", "missing --config", "invalid YAML", "broken labels.py",
              "labels.py without KNOWN_LABELS", "labels_file through a regular file", "labels_file name too long", "deeply nested labels.py",
              "--repo does not exist", "--repo is a file"]


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_a_message_not_a_traceback(case, tmp_path):
    extra, message = _bad_inputs(tmp_path)[case]
    script = console_script()
    lint = subprocess.run([script, "lint", *extra], capture_output=True, text=True, env=clean_env(), cwd=tmp_path)
    assert lint.returncode == 1, lint
    assert "Traceback" not in lint.stderr + lint.stdout
    assert message in lint.stdout
    assert lint.stdout.endswith("ci-policy lint: FAILED: 1 error, 0 warnings\n")

    as_json = subprocess.run([script, "lint", "--format", "json", *extra], capture_output=True, text=True,
                             env=clean_env(), cwd=tmp_path)
    assert as_json.returncode == 1
    data = json.loads(as_json.stdout)
    assert (data["ok"], data["files"], data["registrations"], len(data["errors"])) == (False, None, None, 1)

    registry = subprocess.run([script, "registry", *extra], capture_output=True, text=True, env=clean_env(),
                              cwd=tmp_path)
    assert registry.returncode == 1, registry
    assert registry.stdout == ""
    assert "Traceback" not in registry.stderr
    assert message in registry.stderr
    assert registry.stderr.endswith("ci-policy: 1 error\n")


def test_usage_error_from_the_console_script(tmp_path):
    proc = subprocess.run([console_script(), "lint", "--format", "yaml"], capture_output=True, text=True,
                          env=clean_env(), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "invalid choice: 'yaml'" in proc.stderr and "Traceback" not in proc.stderr


# -- the installed entry points -------------------------------------------------------------

def test_console_script_lint_and_registry(example_repo):
    script = console_script()
    lint = subprocess.run([script, "lint"], capture_output=True, text=True, env=clean_env(), cwd=example_repo)
    assert (lint.returncode, lint.stdout, lint.stderr) == (0, LINT_TEXT, "")
    reg = subprocess.run([script, "registry", "--repo", str(example_repo), "--format", "json"],
                         capture_output=True, text=True, env=clean_env(), cwd=example_repo.parent)
    assert (reg.returncode, reg.stderr) == (0, "")
    assert json.loads(reg.stdout) == REGISTRY_JSON


def test_python_dash_m(example_repo):
    gh = subprocess.run([PYTHON, "-m", "ci_policy", "lint", "--format", "github"], capture_output=True, text=True,
                        env=clean_env(), cwd=example_repo)
    assert (gh.returncode, gh.stdout, gh.stderr) == (0, lint_github(), "")
    reg = subprocess.run([PYTHON, "-m", "ci_policy", "registry"], capture_output=True, text=True,
                         env=clean_env(), cwd=example_repo)
    assert (reg.returncode, reg.stdout, reg.stderr) == (0, REGISTRY_TEXT, "")
    bad = subprocess.run([PYTHON, "-m", "ci_policy", "registry", "--nope"], capture_output=True, text=True,
                         env=clean_env(), cwd=example_repo)
    assert bad.returncode == 2 and "unrecognized arguments: --nope" in bad.stderr


# -- lazy imports: lint and registry never load an adapter's dependency ---------------------

ADAPTER_MODULES = ("github", "libcst", "psycopg", "psycopg2")


def test_lint_and_registry_do_not_import_adapters(tmp_path):
    code = textwrap.dedent(f"""\
        import contextlib, io, json, sys
        from ci_policy.cli import main
        codes = []
        with contextlib.redirect_stdout(io.StringIO()) as out:
            codes.append(main(["lint", "--repo", {str(EXAMPLE)!r}]))
            codes.append(main(["registry", "--repo", {str(EXAMPLE)!r}, "--format", "json"]))
        modules = sorted(sys.modules)
        import github, libcst, psycopg  # installed here, so their absence above means something
        print(json.dumps({{"codes": codes, "out": out.getvalue(), "modules": modules}}))
        """)
    proc = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=clean_env(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    # Both commands really ran (a crash before importing anything would prove nothing).
    assert result["codes"] == [0, 0]
    assert LINT_TEXT in result["out"] and '"registrations": [' in result["out"]
    assert "ci_policy.model.lint" in result["modules"] and "ci_policy.render" in result["modules"]
    loaded = {m.split(".")[0] for m in result["modules"]}
    assert sorted(loaded & set(ADAPTER_MODULES)) == []

