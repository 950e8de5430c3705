"""`ci-policy init`: writes the starter, refuses to overwrite, lints the result, resists hostile checkouts."""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers import run_cli as run

MAIN = '\nif __name__ == "__main__":\n    unittest.main()\n'

REPO = {
    "tests/e2e/test_fsdp.py": "from ci_policy import register_cuda_ci, register_rocm_ci\n"
                              'register_cuda_ci(est_time=300, suite="gpu-a", labels=["fsdp"])\n'
                              'register_rocm_ci(480, "amd", labels=["fsdp"])\n' + MAIN,
    "tests/e2e/test_flaky.py": "from ci_policy import register_cuda_ci\n"
                               'register_cuda_ci(est_time=60, suite="gpu-a", labels=["long"], disabled="flaky")\n',
    "tests/e2e/test_helpers.py": "def helper():\n    pass\n",
    "tests/unit/test_config.py": 'from ci_policy import register_cpu_ci\nregister_cpu_ci(est_time=5, suite="unit")\n',
}

PLACEHOLDER_WARNING = """\
.github/ci-policy.yml:16: warning: CP908 runs-on-placeholder: runs_on of 2 stages is still the placeholder \
'TODO-runner': gpu-a, amd
    hint: replace 'TODO-runner' with the runner labels of each stage's jobs, e.g. runs_on: [h200, 4gpu]
"""
DISABLED_WARNING = """\
tests/e2e/test_flaky.py:2:1: warning: CP905 registration-disabled: register_cuda_ci for suite gpu-a is disabled: flaky
"""

WRITTEN = """\
ci-policy init: wrote .github/ci-policy.yml and labels.py: 3 stages for 4 registrations in 3 test files
discovery: tests (test_*.py), covering the registered files (no workflow names a collector)
runners: 0 of 2 accelerator stages from workflow jobs, 0 from runner mapping files, 2 left as 'TODO-runner'
left to fill in (each line marked TODO):
  .github/ci-policy.yml:19: stages[1].runs_on: the runner labels of stage gpu-a (cuda)
  .github/ci-policy.yml:23: stages[2].runs_on: the runner labels of stage amd (rocm)
  labels.py:4: the description of label fsdp
  labels.py:5: the description of label long
""" + PLACEHOLDER_WARNING + DISABLED_WARNING + """\
ci-policy lint: OK: 0 errors, 2 warnings (3 test files, 4 registrations, 0 gates)
"""

# The written configuration plans as it is: lint warns once about the runners to fill in.
LINT_PLACEHOLDERS = PLACEHOLDER_WARNING + DISABLED_WARNING + """\
ci-policy lint: OK: 0 errors, 2 warnings (3 test files, 4 registrations, 0 gates)
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def fill_runs_on(repo: Path, config: str = ".github/ci-policy.yml") -> None:
    path = repo / config
    path.write_text(path.read_text().replace('runs_on: ["TODO-runner"]', "runs_on: [gpu-runner]"))


def test_init_writes_the_starter_and_lint_reports_only_the_placeholders(tmp_path, capsys):
    repo = write(tmp_path / "repo", REPO)
    assert run(["init", "--repo", str(repo)], capsys) == (0, WRITTEN, "")
    config = (repo / ".github/ci-policy.yml").read_text()
    assert config.splitlines()[0] == ("# yaml-language-server: $schema=https://raw.githubusercontent.com/ci-policy/"
                                      "ci-policy/main/ci_policy/schemas/config.schema.json")
    placeholder = ('    runs_on: ["TODO-runner"]  # TODO: the runner labels of this stage\'s jobs; '
                   "no workflow names them")
    assert config.splitlines()[18] == placeholder
    assert config.splitlines()[22] == placeholder
    assert (repo / "labels.py").read_text() == (
        "# The label registry of ci-policy (written by `ci-policy init`): one entry per label the tests use.\n"
        "# A PR labelled run-ci-<name> asks for the tests carrying <name>.\n"
        "KNOWN_LABELS = {\n    'fsdp': 'TODO: describe',\n    'long': 'TODO: describe',\n}\n")
    # What is left to fill in is what lint warns about, once...
    assert run(["lint", "--repo", str(repo)], capsys) == (0, LINT_PLACEHOLDERS, "")
    # ...and once runs_on is filled in, that warning is gone.
    fill_runs_on(repo)
    assert run(["lint", "--repo", str(repo)], capsys) == (0, (
        "tests/e2e/test_flaky.py:2:1: warning: CP905 registration-disabled: register_cuda_ci for suite gpu-a is "
        "disabled: flaky\n"
        "ci-policy lint: OK: 0 errors, 1 warning (3 test files, 4 registrations, 0 gates)\n"), "")
    rc, out, err = run(["registry", "--repo", str(repo), "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert [(r["file"], r["backend"], r["suite"]) for r in json.loads(out)["registrations"]] == [
        ("tests/e2e/test_flaky.py", "cuda", "gpu-a"), ("tests/e2e/test_fsdp.py", "cuda", "gpu-a"),
        ("tests/e2e/test_fsdp.py", "rocm", "amd"), ("tests/unit/test_config.py", "cpu", "unit")]


def test_init_refuses_to_overwrite_without_force_and_overwrites_with_it(tmp_path, capsys):
    repo = write(tmp_path / "repo", {**REPO, ".github/ci-policy.yml": "mine\n", "labels.py": "KNOWN_LABELS = {}\n"})
    assert run(["init", "--repo", str(repo)], capsys) == (1, "", (
        ".github/ci-policy.yml: .github/ci-policy.yml already exists; ci-policy init does not overwrite it without "
        "--force\n    hint: pass --force to replace it, or move it away first\n"
        "labels.py: labels.py already exists; ci-policy init does not overwrite it without --force\n"
        "    hint: pass --force to replace it, or move it away first\n"
        "ci-policy: 2 errors\n"))
    assert (repo / ".github/ci-policy.yml").read_text() == "mine\n"
    assert (repo / "labels.py").read_text() == "KNOWN_LABELS = {}\n"
    assert run(["init", "--repo", str(repo), "--force"], capsys) == (0, WRITTEN, "")
    written = (repo / ".github/ci-policy.yml").read_text().splitlines()
    assert written[1].startswith("# ci-policy configuration: a starter")
    assert "'fsdp': 'TODO: describe'" in (repo / "labels.py").read_text()


def test_only_the_labels_file_existing_is_refused_too(tmp_path, capsys):
    repo = write(tmp_path / "repo", {**REPO, "labels.py": "KNOWN_LABELS = {}\n"})
    rc, out, err = run(["init", "--repo", str(repo)], capsys)
    assert (rc, out) == (1, "")
    assert err.startswith("labels.py: labels.py already exists;")
    assert not (repo / ".github").exists()


def test_without_labels_there_is_no_labels_file_and_the_result_lints_clean_once_filled(tmp_path, capsys):
    repo = write(tmp_path / "repo", {
        "tests/test_a.py": 'register_cuda_ci(est_time=10, suite="gpu")\n' + MAIN,
        "tests/test_b.py": 'register_cpu_ci(est_time=1, suite="cpu")\n'})
    assert run(["init", "--repo", str(repo)], capsys) == (0, (
        "ci-policy init: wrote .github/ci-policy.yml: 2 stages for 2 registrations in 2 test files\n"
        "discovery: tests (test_*.py), covering the registered files (no workflow names a collector)\n"
        "runners: 0 of 1 accelerator stages from workflow jobs, 0 from runner mapping files, 1 left as 'TODO-runner'\n"
        "left to fill in (each line marked TODO):\n"
        "  .github/ci-policy.yml:17: stages[1].runs_on: the runner labels of stage gpu (cuda)\n"
        ".github/ci-policy.yml:14: warning: CP908 runs-on-placeholder: runs_on of 1 stage is still the placeholder "
        "'TODO-runner': gpu\n"
        "    hint: replace 'TODO-runner' with the runner labels of each stage's jobs, e.g. runs_on: [h200, 4gpu]\n"
        "ci-policy lint: OK: 0 errors, 1 warning (2 test files, 2 registrations, 0 gates)\n"), "")
    assert not (repo / "labels.py").exists()
    assert "labels_file" not in (repo / ".github/ci-policy.yml").read_text()
    fill_runs_on(repo)
    assert run(["lint", "--repo", str(repo)], capsys)[0] == 0


def test_a_cpu_only_checkout_has_nothing_left_to_fill_in(tmp_path, capsys):
    repo = write(tmp_path / "repo", {"tests/test_a.py": 'register_cpu_ci(est_time=1, suite="cpu")\n'})
    assert run(["init", "--repo", str(repo)], capsys) == (0, (
        "ci-policy init: wrote .github/ci-policy.yml: 1 stage for 1 registration in 1 test file\n"
        "discovery: tests (test_*.py), covering the registered files (no workflow names a collector)\n"
        "ci-policy lint: OK: 0 errors, 0 warnings (1 test file, 1 registration, 0 gates)\n"), "")
    assert run(["lint", "--repo", str(repo)], capsys)[0] == 0


def test_json_output(tmp_path, capsys):
    repo = write(tmp_path / "repo", REPO)
    rc, out, err = run(["init", "--repo", str(repo), "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert json.loads(out) == {
        "schema": 1, "ok": True, "written": [".github/ci-policy.yml", "labels.py"],
        "stages": [{"name": "unit", "backend": "cpu", "files": 1, "est_time": 5, "runner": "pytest", "runs_on": [],
                    "runs_on_from": None, "cadences": [], "requires_labels": [], "variants": []},
                   {"name": "gpu-a", "backend": "cuda", "files": 2, "est_time": 360, "runner": "python",
                    "runs_on": [], "runs_on_from": None, "cadences": [], "requires_labels": [], "variants": []},
                   {"name": "amd", "backend": "rocm", "files": 1, "est_time": 480, "runner": "python", "runs_on": [],
                    "runs_on_from": None, "cadences": [], "requires_labels": [], "variants": []}],
        "discovery": [{"path": "tests", "pattern": ["test_*.py"], "from": None}],
        "not_discovered": [], "schedules": [], "nightly_selects": None, "require_labels": [],
        "labels": ["fsdp", "long"],
        "todo": [{"path": ".github/ci-policy.yml", "line": 19,
                  "what": "stages[1].runs_on: the runner labels of stage gpu-a (cuda)"},
                 {"path": ".github/ci-policy.yml", "line": 23,
                  "what": "stages[2].runs_on: the runner labels of stage amd (rocm)"},
                 {"path": "labels.py", "line": 4, "what": "the description of label fsdp"},
                 {"path": "labels.py", "line": 5, "what": "the description of label long"}],
        "notes": [], "errors": [],
        "warnings": [
            {"code": "CP908", "name": "runs-on-placeholder", "path": ".github/ci-policy.yml", "line": 16, "col": None,
             "message": "runs_on of 2 stages is still the placeholder 'TODO-runner': gpu-a, amd",
             "hint": "replace 'TODO-runner' with the runner labels of each stage's jobs, e.g. runs_on: [h200, 4gpu]"},
            {"code": "CP905", "name": "registration-disabled", "path": "tests/e2e/test_flaky.py", "line": 2,
             "col": 1, "message": "register_cuda_ci for suite gpu-a is disabled: flaky", "hint": None}]}


def test_config_names_the_file_to_write(tmp_path, capsys, monkeypatch):
    repo = write(tmp_path / "repo", {"tests/test_a.py": 'register_cuda_ci(est_time=10, suite="gpu")\n' + MAIN})
    monkeypatch.chdir(tmp_path)
    rc, out, _err = run(["init", "--repo", "repo", "--config", "policy/ci.yml"], capsys)
    assert (rc, out.splitlines()[:3]) == (0, [
        "ci-policy init: wrote policy/ci.yml: 1 stage for 1 registration in 1 test file",
        "discovery: tests (test_*.py), covering the registered files (no workflow names a collector)",
        "runners: 0 of 1 accelerator stages from workflow jobs, 0 from runner mapping files, 1 left as 'TODO-runner'"])
    assert out.splitlines()[3:5] == ["left to fill in (each line marked TODO):",
                                     "  policy/ci.yml:14: stages[0].runs_on: the runner labels of stage gpu (cuda)"]
    assert not (repo / ".github").exists()
    fill_runs_on(tmp_path, "policy/ci.yml")
    assert run(["lint", "--repo", "repo", "--config", "policy/ci.yml"], capsys)[0] == 0


def test_other_lint_errors_are_printed_and_exit_1(tmp_path, capsys):
    repo = write(tmp_path / "repo", {
        "tests/test_ok.py": 'register_cuda_ci(est_time=10, suite="gpu")\n' + MAIN,
        "tests/test_dup.py": 'register_cuda_ci(est_time=10, suite="gpu")\nregister_cuda_ci(est_time=10, suite="gpu")\n',
    })
    rc, out, err = run(["init", "--repo", str(repo)], capsys)
    assert (rc, err) == (1, "")
    assert out.splitlines()[5:] == [
        "tests/test_dup.py:2:1: CP220 registration-duplicate: register_cuda_ci: tests/test_dup.py is registered "
        "twice for suite 'gpu' (lines 1 and 2), so it would run twice",
        "    hint: keep one registration per suite",
        ".github/ci-policy.yml:11: warning: CP908 runs-on-placeholder: runs_on of 1 stage is still the placeholder "
        "'TODO-runner': gpu",
        "    hint: replace 'TODO-runner' with the runner labels of each stage's jobs, e.g. runs_on: [h200, 4gpu]",
        "ci-policy lint: FAILED: 1 error, 1 warning (2 test files, 3 registrations, 0 gates)"]
    assert (repo / ".github/ci-policy.yml").is_file()  # written all the same


# -- hostile checkouts ------------------------------------------------------------------------------

def test_a_symlinked_test_file_is_not_followed_and_lint_refuses_it(tmp_path, capsys):
    secret = write(tmp_path / "outside", {"test_secret.py": 'register_cuda_ci(est_time=1, suite="secret")\n'})
    repo = write(tmp_path / "repo", {"tests/test_a.py": 'register_cpu_ci(est_time=1, suite="cpu")\n'})
    os.symlink(secret / "test_secret.py", repo / "tests" / "test_link.py")
    assert run(["init", "--repo", str(repo)], capsys) == (1, (
        "ci-policy init: wrote .github/ci-policy.yml: 1 stage for 1 registration in 1 test file\n"
        "discovery: tests (test_*.py), covering the registered files (no workflow names a collector)\n"
        "tests/test_link.py: CP401 symlink-refused: test file tests/test_link.py is a symlink; ci-policy refuses "
        "symlinks in a checkout\n"
        "    hint: replace the symlink with the real file or directory\n"
        "tests/test_link.py: warning: skipped tests/test_link.py: a symlink; ci-policy refuses symlinks in a checkout\n"
        "    hint: replace the symlink with the real file or directory\n"
        "ci-policy lint: FAILED: 1 error, 0 warnings (1 test file, 1 registration, 0 gates)\n"), "")
    assert "secret" not in (repo / ".github/ci-policy.yml").read_text()


def test_a_file_that_is_not_python_is_a_note_and_a_lint_error(tmp_path, capsys):
    repo = write(tmp_path / "repo", {"tests/test_a.py": 'register_cpu_ci(est_time=1, suite="cpu")\n',
                                     "tests/test_b.py": 'register_cpu_ci(est_time=1, suite="cpu"\n'})
    assert run(["init", "--repo", str(repo)], capsys) == (1, (
        "ci-policy init: wrote .github/ci-policy.yml: 1 stage for 1 registration in 1 test file\n"
        "discovery: tests (test_*.py), covering the registered files (no workflow names a collector)\n"
        "tests/test_b.py:1:16: CP206 python-syntax-error: tests/test_b.py is not valid Python: '(' was never closed\n"
        "    hint: fix the syntax error\n"
        "tests/test_b.py:1:16: warning: skipped: tests/test_b.py is not valid Python: '(' was never closed\n"
        "    hint: fix the syntax error\n"
        "ci-policy lint: FAILED: 1 error, 0 warnings (2 test files, 1 registration, 0 gates)\n"), "")


def test_a_non_literal_suite_is_a_note_and_a_lint_error(tmp_path, capsys):
    repo = write(tmp_path / "repo", {"tests/test_a.py": 'register_cpu_ci(est_time=1, suite="cpu")\n',
                                     "tests/test_b.py": 'S = "cpu"\nregister_cpu_ci(est_time=1, suite=S)\n'})
    assert run(["init", "--repo", str(repo)], capsys) == (1, (
        "ci-policy init: wrote .github/ci-policy.yml: 1 stage for 2 registrations in 2 test files\n"
        "discovery: tests (test_*.py), covering the registered files (no workflow names a collector)\n"
        "tests/test_b.py:2:35: CP215 marker-argument-not-literal: register_cpu_ci: suite must be a literal, not `S` "
        "(ci-policy reads it from source without running the file)\n"
        "    hint: write the value of suite itself (a number, string, True/False, None, or a list or dict of those)\n"
        "tests/test_b.py:2:1: warning: register_cpu_ci(...): suite is not a literal; the call gives no stage\n"
        "    hint: write the value of suite itself\n"
        "ci-policy lint: FAILED: 1 error, 0 warnings (2 test files, 1 registration, 0 gates)\n"), "")


def test_a_symlinked_github_directory_is_never_written_through(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    repo = write(tmp_path / "repo", {"tests/test_a.py": 'register_cpu_ci(est_time=1, suite="cpu")\n'})
    os.symlink(elsewhere, repo / ".github")
    assert run(["init", "--repo", str(repo), "--force"], capsys) == (1, "", (
        ".github/ci-policy.yml: CP401 symlink-refused: file to write .github/ci-policy.yml: directory .github is a "
        "symlink; ci-policy refuses symlinks in a checkout\n"
        "    hint: replace the symlink with the real file or directory\n"
        "ci-policy: 1 error\n"))
    assert list(elsewhere.iterdir()) == []


def test_a_symlinked_config_file_is_refused_even_with_force(tmp_path, capsys):
    target = tmp_path / "target.yml"
    target.write_text("keep\n")
    repo = write(tmp_path / "repo", {"tests/test_a.py": 'register_cpu_ci(est_time=1, suite="cpu")\n'})
    (repo / ".github").mkdir()
    os.symlink(target, repo / ".github/ci-policy.yml")
    rc, out, err = run(["init", "--repo", str(repo), "--force"], capsys)
    assert (rc, out) == (1, "")
    assert err.startswith(".github/ci-policy.yml: CP401 symlink-refused: .github/ci-policy.yml is a symlink; "
                          "ci-policy init does not write through a symlink\n")
    assert target.read_text() == "keep\n"


def test_an_empty_checkout_is_a_clear_error(tmp_path, capsys):
    repo = write(tmp_path / "repo", {"tests/test_a.py": "def test():\n    pass\n"})
    assert run(["init", "--repo", str(repo)], capsys) == (1, "", (
        f"{repo}: no test registrations in {repo}: no Python file calls a register_<word>_ci(...) marker as a "
        "module-level statement\n"
        "    hint: register a test first, e.g. register_cpu_ci(est_time=60, suite=\"unit\"), as "
        "docs/manual/markers.md describes\n"
        "ci-policy: 1 error\n"))
    assert not (repo / ".github").exists()


def test_the_summary_keeps_to_40_lines_and_json_lists_every_item(tmp_path, capsys):
    # 30 files whose suite init cannot read: 30 notes and 30 lint errors, two lines each.
    files = {f"tests/test_{i:02}.py": 'S = "cpu"\nregister_cpu_ci(est_time=1, suite=S)\n' for i in range(30)}
    repo = write(tmp_path / "repo", {"tests/test_ok.py": 'register_cpu_ci(est_time=1, suite="cpu")\n', **files})
    rc, out, err = run(["init", "--repo", str(repo)], capsys)
    lines = out.splitlines()
    assert (rc, err, len(lines)) == (1, "", 40)
    error = ("tests/test_{:02}.py:2:35: CP215 marker-argument-not-literal: register_cpu_ci: suite must be a literal, "
             "not `S` (ci-policy reads it from source without running the file)")
    assert lines[:2] == ["ci-policy init: wrote .github/ci-policy.yml: 1 stage for 31 registrations in 31 test files",
                         "discovery: tests (test_*.py), covering the registered files (no workflow names a collector)"]
    assert lines[2:38:2] == [error.format(i) for i in range(18)]
    assert lines[38:] == [
        "... and 42 more (ci-policy init --format json lists every one; ci-policy lint lists the lint's)",
        "ci-policy lint: FAILED: 30 errors, 0 warnings (31 test files, 1 registration, 0 gates)"]
    rc, out, err = run(["init", "--repo", str(repo), "--force", "--format", "json"], capsys)
    doc = json.loads(out)
    assert (rc, err, len(doc["errors"]), len(doc["notes"])) == (1, "", 30, 30)
