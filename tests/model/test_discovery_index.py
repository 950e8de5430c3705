"""Discovery from the git index gives exactly the walk's files and diagnostics."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_policy.adapters.git import checkout_index
from ci_policy.config.top import parse_config
from ci_policy.model.discovery import discover

CONFIG = parse_config("""\
version: 1
discovery:
  roots: [tests, tests/e2e]
  pattern: "test_*.py"
  roots_patterns: {}
  exclude: ["tests/skip/", "tests/**/old_*.py", "!tests/skip/keep.py"]
stages:
  - {name: cpu, backend: cpu}
""".replace("  roots_patterns: {}\n", ""), ".github/ci-policy.yml")

DIRS = ("tests", "tests/e2e", "tests/skip", "tests/e2e/deep", "tests/__pycache__", "tests/unit")
NAMES = ("test_a.py", "test_b.py", "old_test.py", "old_x.py", "helper.py", "keep.py", "test_dir")
# What a path becomes: a file, a symlink to a file, to a directory, dangling, or a directory.
KINDS = ("file", "file", "file", "link-file", "link-dir", "dangling", "dir")

entries = st.dictionaries(st.tuples(st.sampled_from(DIRS), st.sampled_from(NAMES)),
                          st.tuples(st.sampled_from(KINDS), st.booleans()), max_size=14)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
                    "-c", "commit.gpgsign=false", *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})


def _build(repo: Path, tree: dict) -> list[str]:
    """Write the tree; return the paths to commit (the others stay untracked)."""
    (repo / "tests").mkdir(parents=True)
    (repo / "elsewhere").mkdir()
    (repo / "elsewhere" / "f.py").write_text("x = 1\n")
    tracked = []
    for (directory, name), (kind, track) in sorted(tree.items()):
        parent = repo / directory
        if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
            continue
        parent.mkdir(parents=True, exist_ok=True)
        path = parent / name
        if path.exists() or path.is_symlink():
            continue
        if kind == "file":
            path.write_text(f"# {directory}/{name}\n")
        elif kind == "dir":
            path.mkdir()
            (path / "test_inner.py").write_text("y = 2\n")
        elif kind == "link-file":
            path.symlink_to(repo / "elsewhere" / "f.py")
        elif kind == "link-dir":
            path.symlink_to(repo / "elsewhere")
        else:
            path.symlink_to(repo / "missing")
        if track:
            tracked.append(f"{directory}/{name}")
    return tracked


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(tree=entries, delete_tracked=st.booleans())
def test_index_discovery_equals_the_walk(tree, delete_tracked) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        tracked = _build(repo, tree)
        _git(repo, "init", "-q")
        (repo / ".keep").write_text("")
        _git(repo, "add", ".keep", *tracked)
        _git(repo, "commit", "-q", "-m", "base")
        if delete_tracked and tracked:
            victim = repo / tracked[0]
            if victim.is_file() and not victim.is_symlink():
                victim.unlink()
        index = checkout_index(repo)
        assert index is not None
        assert discover(repo, CONFIG, index) == discover(repo, CONFIG)


def test_index_discovery_refuses_a_directory_replaced_by_a_symlink(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tests" / "e2e").mkdir(parents=True)
    (repo / "tests" / "e2e" / "test_a.py").write_text("a = 1\n")
    (repo / "tests" / "test_b.py").write_text("b = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    (repo / "tests" / "e2e" / "test_a.py").unlink()
    (repo / "tests" / "e2e").rmdir()
    (repo / "tests" / "e2e").symlink_to(tmp_path)
    index = checkout_index(repo)
    assert index is not None and "tests/e2e/test_a.py" in index
    files, errors = discover(repo, CONFIG, index)
    assert (files, errors) == discover(repo, CONFIG)
    assert files == ["tests/test_b.py"]
    assert sorted(e.message for e in errors) == [
        "directory tests/e2e is a symlink; ci-policy refuses symlinks in a checkout",
        "discovery root tests/e2e is a symlink; ci-policy refuses symlinks in a checkout"]


def test_index_discovery_looks_at_files_git_does_not_compare(tmp_path: Path) -> None:
    # A file marked assume-unchanged or skip-worktree is listed with no blob id, so it is
    # lstat-ed as any changed file: a symlink there is refused, a missing one skipped.
    repo = tmp_path / "repo"
    (repo / "tests" / "e2e").mkdir(parents=True)
    (repo / "tests" / "e2e" / "test_d.py").write_text("x = 1\n")
    for name in ("test_a.py", "test_b.py", "test_c.py"):
        (repo / "tests" / name).write_text("x = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "update-index", "--assume-unchanged", "tests/test_a.py")
    (repo / "tests" / "test_a.py").unlink()
    (repo / "tests" / "test_a.py").symlink_to(repo / "tests" / "test_c.py")
    _git(repo, "update-index", "--skip-worktree", "tests/test_b.py")
    (repo / "tests" / "test_b.py").unlink()
    index = checkout_index(repo)
    assert index is not None
    files, errors = discover(repo, CONFIG, index)
    assert (files, errors) == discover(repo, CONFIG)
    assert files == ["tests/e2e/test_d.py", "tests/test_c.py"]
    assert [e.message for e in errors] == [
        "test file tests/test_a.py is a symlink; ci-policy refuses symlinks in a checkout"]
