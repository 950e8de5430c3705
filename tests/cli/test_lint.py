"""`ci-policy lint`: exact outputs in every format, on the bundled example and a broken checkout."""

from __future__ import annotations

import json

from cli.expected import EXAMPLE, lint_github_under
from helpers import assert_golden, assert_run_golden, read_golden
from helpers import run_cli as run


def test_lint_text_on_the_example(example_repo, monkeypatch, capsys):
    monkeypatch.chdir(example_repo)
    assert_run_golden(run(["lint"], capsys), 0, "cli/lint/example.txt")
    assert_run_golden(run(["lint", "--repo", ".", "--format", "text"], capsys), 0, "cli/lint/example.txt")


def test_lint_text_locations_are_repo_relative_from_any_directory(example_repo, monkeypatch, capsys):
    monkeypatch.chdir(example_repo.parent)
    assert_run_golden(run(["lint", "--repo", "gpu-repo"], capsys), 0, "cli/lint/example.txt")
    # The bundled example itself, read in place.
    assert_run_golden(run(["lint", "--repo", str(EXAMPLE)], capsys), 0, "cli/lint/example.txt")


def test_lint_json_on_the_example(capsys):
    rc, out, err = run(["lint", "--repo", str(EXAMPLE), "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert_golden("cli/lint/example.json", out)


def test_lint_github_paths_are_relative_to_the_workspace(example_repo, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(example_repo)
    assert_run_golden(run(["lint", "--format", "github"], capsys), 0, "cli/lint/example-github.txt")
    monkeypatch.chdir(example_repo.parent)
    under = lint_github_under("gpu-repo/")
    assert under != read_golden("cli/lint/example-github.txt")
    assert run(["lint", "--repo", "gpu-repo", "--format", "github"], capsys) == (0, under, "")
    assert run(["lint", "--repo", str(example_repo), "--format", "github"], capsys) == (0, under, "")
    # A checkout outside the workspace keeps repo-relative paths (never ../../...).
    elsewhere = tmp_path / "workspace"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert_run_golden(run(["lint", "--repo", str(example_repo), "--format", "github"], capsys), 0,
                      "cli/lint/example-github.txt")


def test_github_annotation_for_a_config_outside_the_checkout(example_repo, tmp_path, monkeypatch, capsys):
    cfgs = tmp_path / "cfgs"
    cfgs.mkdir()
    (cfgs / "bad.yml").write_text("version: 2\ndiscovery: {roots: [tests]}\nstages: [{name: a, backend: cpu}]\n")
    monkeypatch.chdir(tmp_path)
    message = "version: unsupported version 2; this ci_policy reads version 1"
    # The --config path is relative to the current directory, not to the checkout.
    assert run(["lint", "--repo", "gpu-repo", "--config", "cfgs/bad.yml", "--format", "github"], capsys) == (
        1, f"::error file=cfgs/bad.yml,line=1,col=10,title=CP107 config-unsupported::{message}\n"
           "ci-policy lint: FAILED: 1 error, 0 warnings\n", "")
    monkeypatch.chdir(example_repo)
    assert run(["lint", "--config", "../cfgs/bad.yml", "--format", "github"], capsys) == (
        1, f"::error file=../cfgs/bad.yml,line=1,col=10,title=CP107 config-unsupported::{message}\n"
           "ci-policy lint: FAILED: 1 error, 0 warnings\n", "")


def test_github_annotation_for_a_missing_repo_names_it_once(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert run(["lint", "--repo", "nonexistent", "--format", "github"], capsys) == (
        1, "::error file=nonexistent,title=CP403 path-wrong-type::repository nonexistent is not a directory "
           "(hint: pass --repo with the checkout's root directory)\n"
           "ci-policy lint: FAILED: 1 error, 0 warnings\n", "")


# -- errors: every one reported, located, with its hint -----------------------------------

def test_lint_reports_every_error_with_its_hint(broken_repo, capsys):
    rc, out, err = run(["lint", "--repo", str(broken_repo)], capsys)
    assert (rc, err) == (1, "")
    assert_golden("cli/lint/broken.txt", out)


def test_lint_json_with_errors(broken_repo, capsys):
    rc, out, err = run(["lint", "--repo", str(broken_repo), "--format", "json"], capsys)
    assert (rc, err) == (1, "")
    data = json.loads(out)
    assert list(data) == ["schema", "ok", "errors", "warnings", "suppressed", "files", "registrations"]
    assert (data["schema"], data["ok"], data["files"], data["registrations"]) == (1, False, 5, 2)
    assert [(e["path"], e["line"], e["col"]) for e in data["errors"]] == [
        ("tests/e2e/test_bad_label.py", 3, 54), ("tests/e2e/test_bad_suite.py", 3, 22),
        ("tests/e2e/test_no_main.py", 3, 1), ("tests/e2e/test_unregistered.py", 1, 1)]
    assert data["errors"][0] == {
        "code": "CP227", "name": "label-unknown", "path": "tests/e2e/test_bad_label.py", "line": 3, "col": 54,
        "message": "register_cuda_ci: unknown label 'megatrn' (did you mean 'megatron'?); "
                   "valid labels: megatron, fsdp, long",
        "hint": "use a valid label, or add 'megatrn' with a description to KNOWN_LABELS in labels.py"}
    assert [(w["path"], w["line"], w["message"]) for w in data["warnings"]] == [
        (".github/ci-policy.yml", 8, "stage gpu-a has no registered test files"),
        (".github/ci-policy.yml", 10, "stage amd has no registered test files"),
        ("labels.py", 1, "label 'fsdp' is not used by any test"),
        ("labels.py", 1, "label 'megatron' is not used by any test")]


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
