"""cli.paths: diagnostic paths seen from the workspace, for `::error file=...` annotations."""

from __future__ import annotations

from pathlib import Path

from ci_policy.cli.paths import workspace_paths


def test_a_repo_below_the_workspace(tmp_path, monkeypatch):
    (tmp_path / "checkout" / "tests").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    convert = workspace_paths(Path("checkout"))
    assert convert("tests/test_a.py") == "checkout/tests/test_a.py"
    assert convert(".github/ci-policy.yml") == "checkout/.github/ci-policy.yml"
    assert convert("checkout") == "checkout"  # the --repo argument itself, as given
    assert convert("/etc/passwd") == "/etc/passwd"  # absolute: as given


def test_the_repo_is_the_workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    convert = workspace_paths(Path("."))
    assert convert("tests/test_a.py") == "tests/test_a.py"
    assert convert("labels.py") == "labels.py"


def test_an_absolute_repo(tmp_path, monkeypatch):
    repo = tmp_path / "ws" / "repo"
    repo.mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "ws")
    convert = workspace_paths(repo)
    assert convert("tests/test_a.py") == "repo/tests/test_a.py"
    assert convert(str(repo)) == str(repo)


def test_a_repo_outside_the_workspace_stays_repo_relative(tmp_path, monkeypatch):
    (tmp_path / "ws").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "ws")
    convert = workspace_paths(tmp_path / "elsewhere")
    assert convert("tests/test_a.py") == "tests/test_a.py"
    # A repo containing the workspace: paths inside the workspace are converted, the others not.
    parent = workspace_paths(tmp_path)
    assert parent("ws/tests/test_a.py") == "tests/test_a.py"
    assert parent("ws") == "."
    assert parent("elsewhere/test_b.py") == "elsewhere/test_b.py"
    assert parent("labels.py") == "labels.py"


def test_a_config_outside_the_checkout_is_shown_as_given(tmp_path, monkeypatch):
    (tmp_path / "repo").mkdir()
    (tmp_path / "policy.yml").write_text("version: 1\n")
    monkeypatch.chdir(tmp_path)
    convert = workspace_paths(Path("repo"), "policy.yml")
    assert convert("policy.yml") == "policy.yml"
    assert convert("tests/test_a.py") == "repo/tests/test_a.py"
    # A config inside the checkout is repo-relative in diagnostics, like any checkout file.
    inside = workspace_paths(Path("repo"), "repo/ci.yml")
    assert inside("ci.yml") == "repo/ci.yml"
    assert inside("repo/ci.yml") == "repo/repo/ci.yml"
