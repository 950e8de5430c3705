"""`git diff` run by the adapter (`ci_policy/adapters/git.py`) against a real repository."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ci_policy.adapters import git as git_module
from ci_policy.adapters.git import git_diff
from ci_policy.model.discovery import IndexEntry
from ci_policy.read.diff import Change, Diff


@pytest.fixture
def git_env(monkeypatch, tmp_path: Path):
    """Keep the user's and system's git configuration out of the tests."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_EXTERNAL_DIFF"):
        monkeypatch.delenv(var, raising=False)


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
         "-c", "commit.gpgsign=false", *args],
        capture_output=True, text=True, check=True)
    return proc.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, git_env) -> tuple[Path, str, str]:
    """A repository whose second commit renames, adds, deletes and modifies files."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "old_name.py").write_text("".join(f"line {i} of the module\n" for i in range(20)))
    (root / "keep.py").write_text("keep\n")
    (root / "gone.py").write_text("gone\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    base = git(root, "rev-parse", "HEAD")
    git(root, "mv", "old_name.py", "new_name.py")
    (root / "keep.py").write_text("keep\nmore\n")
    git(root, "rm", "-q", "gone.py")
    (root / "docs").mkdir()
    (root / "docs" / "ünï.md").write_text("x\n")
    (root / "added.py").write_text("y\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "head")
    head = git(root, "rev-parse", "HEAD")
    return root, base, head


EXPECTED_CHANGES = (
    Change("A", ("added.py",)),
    Change("A", ("docs/ünï.md",)),
    Change("D", ("gone.py",)),
    Change("M", ("keep.py",)),
    Change("R", ("old_name.py", "new_name.py")),
)


def test_git_diff_of_a_real_repository(repo):
    root, base, head = repo
    diff = git_diff(root, base, head)
    assert diff == Diff(available=True, changes=EXPECTED_CHANGES)
    assert diff.files == ("added.py", "docs/ünï.md", "gone.py", "keep.py", "new_name.py", "old_name.py")
    assert git_diff(root, base, "HEAD") == diff
    assert git_diff(root, base) == diff  # against the (clean) working tree


def test_git_diff_of_identical_revisions_is_known_to_be_empty(repo):
    root, _, head = repo
    assert git_diff(root, head, "HEAD") == Diff(available=True, changes=()) == Diff.no_changes()
    assert git_diff(root, head, "HEAD").files == ()


def test_git_diff_of_two_commits_with_the_same_tree_is_known_to_be_empty(repo):
    root, _, head = repo
    git(root, "commit", "-q", "--allow-empty", "-m", "identical to its parent")
    again = git(root, "rev-parse", "HEAD")
    assert again != head
    assert git_diff(root, head, again) == Diff.no_changes()


def test_an_empty_diff_against_the_working_tree_stays_unavailable(repo):
    # git diff BASE lists no untracked file: its silence does not say nothing changed.
    root, _, head = repo
    (root / "untracked.py").write_text("new\n")
    assert git_diff(root, head) == Diff.unavailable(f"git diff {head} (working tree): the diff is empty")


def test_git_diff_of_a_bad_revision_is_unavailable(repo):
    root, base, _ = repo
    assert git_diff(root, "nosuch", "HEAD") == Diff.unavailable(
        "git diff nosuch HEAD failed (exit 128): fatal: bad revision 'nosuch'")
    assert git_diff(root, base, "nosuch") == Diff.unavailable(
        f"git diff {base} nosuch failed (exit 128): fatal: bad revision 'nosuch'")


def test_git_diff_outside_a_repository_is_unavailable(tmp_path: Path, git_env):
    # Outside a repository git falls back to comparing two filesystem paths (--no-index);
    # that must never pass for a diff of two revisions.
    plain = tmp_path / "plain"
    (plain / "a").mkdir(parents=True)
    (plain / "b").mkdir()
    (plain / "a" / "x.py").write_text("1\n")
    (plain / "b" / "x.py").write_text("2\n")
    assert git_diff(plain, "HEAD", "HEAD") == Diff.unavailable(
        "git diff HEAD HEAD failed (exit 1): error: Could not access 'HEAD'")
    assert git_diff(plain, "a", "b") == Diff.unavailable("git diff a b failed (exit 1): no output")
    assert git_diff(plain, "a", "a") == Diff.unavailable("git diff a a: the diff is empty")


@pytest.mark.parametrize("base, head, bad", [
    ("--output=pwned", "HEAD", "--output=pwned"),
    ("-p", "HEAD", "-p"),
    ("HEAD", "--no-index", "--no-index"),
    ("HEAD", "-R", "-R"),
    ("HEAD; rm -rf .", "HEAD", "HEAD; rm -rf ."),
    ("$(id)", "HEAD", "$(id)"),
    (" HEAD", "HEAD", " HEAD"),
    ("HEAD\n", "HEAD", "HEAD\n"),
    ("", "HEAD", ""),
    ("HEAD", "", ""),
])
def test_a_revision_that_is_not_plain_is_refused_without_running_git(repo, monkeypatch, base, head, bad):
    root, _, _ = repo
    calls = []
    monkeypatch.setattr(git_module.subprocess, "run", lambda *a, **k: calls.append(a))
    assert git_diff(root, base, head) == Diff.unavailable(f"revision {bad!r} is not a plain git revision")
    assert calls == []


def test_git_diff_accepts_ordinary_revision_syntax(repo):
    root, base, head = repo
    assert git_diff(root, "HEAD~1", "HEAD").changes == EXPECTED_CHANGES
    assert git_diff(root, "HEAD^", head[:12]).changes == EXPECTED_CHANGES
    assert git_diff(root, base[:10], "HEAD@{0}").changes == EXPECTED_CHANGES


def test_git_diff_when_git_cannot_run(repo, monkeypatch):
    root, base, head = repo
    monkeypatch.setenv("PATH", str(root / "no-such-bin"))
    diff = git_diff(root, base, head)
    assert diff.available is False
    assert diff.reason.startswith(f"git diff {base} {head} failed: [Errno 2] No such file or directory")


# content_ids: git blob ids for unmodified tracked files, sha256 of the bytes otherwise.

def _sha(data: bytes) -> str:
    import hashlib
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture
def tracked(tmp_path: Path, git_env) -> Path:
    root = tmp_path / "ids"
    (root / "tests").mkdir(parents=True)
    (root / "tests/test_a.py").write_bytes(b"a = 1\n")
    (root / "tests/test_b.py").write_bytes(b"b = 2\n")
    (root / "gone.py").write_bytes(b"gone\n")
    (root / ".gitignore").write_bytes(b"ignored.py\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    (root / "tests/test_b.py").write_bytes(b"b = 3\n")  # modified
    (root / "tests/test_new.py").write_bytes(b"new\n")  # untracked
    (root / "ignored.py").write_bytes(b"ignored\n")  # ignored
    (root / "gone.py").unlink()  # deleted
    return root


def test_content_ids_blob_for_unmodified_sha256_for_modified_and_untracked(tracked: Path) -> None:
    blob = git(tracked, "rev-parse", "HEAD:tests/test_a.py")
    assert git_module.content_ids(tracked) == {
        ".gitignore": "git:" + git(tracked, "rev-parse", "HEAD:.gitignore"),
        "tests/test_a.py": f"git:{blob}",
        "tests/test_b.py": _sha(b"b = 3\n"),
        "tests/test_new.py": _sha(b"new\n"),
    }


def test_content_ids_of_chosen_paths(tracked: Path) -> None:
    got = git_module.content_ids(tracked, ["tests/test_b.py", "ignored.py", "gone.py", "missing.py", "../x",
                                           "/etc/hostname"])
    assert got == {"tests/test_b.py": _sha(b"b = 3\n"), "ignored.py": _sha(b"ignored\n")}


def test_content_ids_never_follow_symlinks(tracked: Path) -> None:
    (tracked / "tests/test_a.py").unlink()
    os.symlink("test_b.py", tracked / "tests/test_a.py")  # a tracked file replaced by a symlink
    os.symlink("tests", tracked / "linked")
    os.symlink("test_b.py", tracked / "tests/test_link.py")  # untracked symlink
    got = git_module.content_ids(tracked)
    assert "tests/test_a.py" not in got and "tests/test_link.py" not in got
    assert git_module.content_ids(tracked, ["linked/test_b.py", "tests/test_link.py"]) == {}


def test_a_file_git_does_not_compare_has_no_trusted_blob(tracked: Path) -> None:
    # assume-unchanged and skip-worktree files are ones git no longer looks at: their
    # working-tree copy may differ from the index, and `ls-files -m` would not say so.
    git(tracked, "update-index", "--assume-unchanged", "tests/test_a.py")
    (tracked / "tests/test_a.py").write_bytes(b"a = 100\n")
    git(tracked, "update-index", "--skip-worktree", ".gitignore")
    (tracked / ".gitignore").write_bytes(b"")
    index = git_module.checkout_index(tracked)
    assert index is not None
    assert index["tests/test_a.py"] == IndexEntry("file", None)
    assert index[".gitignore"] == IndexEntry("file", None)
    assert git_module.content_ids(tracked) == {
        ".gitignore": _sha(b""),
        "ignored.py": _sha(b"ignored\n"),  # no longer ignored: .gitignore is empty now
        "tests/test_a.py": _sha(b"a = 100\n"),
        "tests/test_b.py": _sha(b"b = 3\n"),
        "tests/test_new.py": _sha(b"new\n"),
    }


def test_the_listing_asked_for_is_the_one_parsed(tracked: Path, monkeypatch) -> None:
    # A record without its `-v` tag is not the format asked for: nothing of it is trusted.
    class Untagged(git_module._Git):
        def __init__(self, repo, args, **kwargs):
            super().__init__(repo, [a for a in args if a != "-v"], **kwargs)
    monkeypatch.setattr(git_module, "_Git", Untagged)
    assert git_module.checkout_index(tracked) is None


def test_content_ids_outside_git_hash_every_file(tmp_path: Path, git_env) -> None:
    root = tmp_path / "plain"
    (root / "d").mkdir(parents=True)
    (root / "d/x.py").write_bytes(b"x\n")
    (root / "y.py").write_bytes(b"y\n")
    os.symlink("d", root / "link")
    os.symlink("y.py", root / "z.py")
    assert git_module.content_ids(root) == {"d/x.py": _sha(b"x\n"), "y.py": _sha(b"y\n")}
    assert git_module.content_ids(root, ["y.py", "z.py", "link/x.py"]) == {"y.py": _sha(b"y\n")}


def test_content_ids_fall_back_to_sha256_when_git_fails(tracked: Path, monkeypatch) -> None:
    monkeypatch.setattr(git_module._Git, "output", lambda self: None)
    assert git_module.content_ids(tracked, ["tests/test_a.py"]) == {"tests/test_a.py": _sha(b"a = 1\n")}


def test_content_ids_refuse_a_listing_over_the_cap(tracked: Path, monkeypatch) -> None:
    monkeypatch.setattr(git_module, "MAX_LISTING_BYTES", 10)
    assert git_module._Git(tracked, ["ls-files", "-s", "-z"], limit=10).output() is None
    assert git_module.checkout_index(tracked) is None


@pytest.fixture
def clean(tmp_path: Path, git_env) -> Path:
    """A committed work tree with a checkout in a subdirectory, and an ignored file."""
    root = tmp_path / "clean"
    (root / "sub" / "tests").mkdir(parents=True)
    (root / "sub" / "tests" / "test_a.py").write_bytes(b"a = 1\n")
    (root / "top.py").write_bytes(b"top\n")
    (root / ".gitignore").write_bytes(b"*.log\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    (root / "sub" / "run.log").write_bytes(b"ignored\n")
    return root


def test_clean_tree_is_the_checkouts_own_tree(clean: Path) -> None:
    assert git_module.clean_tree(clean) == git(clean, "rev-parse", "HEAD^{tree}")
    assert git_module.clean_tree(clean / "sub") == git(clean, "rev-parse", "HEAD:sub")
    assert git_module.clean_tree(clean / "sub") != git_module.clean_tree(clean)


def test_a_clean_tree_started_before_a_change_is_answered_then_or_cancelled(clean: Path) -> None:
    started = git_module.CleanTree(clean / "sub")
    assert started.result() == git(clean, "rev-parse", "HEAD:sub")
    assert started.result() == git(clean, "rev-parse", "HEAD:sub")  # answered once, kept
    cancelled = git_module.CleanTree(clean)
    cancelled.cancel()
    assert cancelled.result() is None
    with git_module.CleanTree(clean) as left:  # leaving the block ends what was not waited for
        pass
    assert left.result() is None
    with git_module.CleanTree(clean) as waited:
        assert waited.result() == git(clean, "rev-parse", "HEAD^{tree}")
    assert waited.result() == git(clean, "rev-parse", "HEAD^{tree}")


@pytest.mark.parametrize("change", ["modified", "staged", "untracked", "deleted", "symlink"])
def test_any_change_under_the_checkout_leaves_no_clean_tree(clean: Path, change: str) -> None:
    test = clean / "sub" / "tests" / "test_a.py"
    if change == "modified":
        test.write_bytes(b"a = 2\n")
    elif change == "staged":
        test.write_bytes(b"a = 2\n")
        git(clean, "add", "-A")
        test.write_bytes(b"a = 1\n")  # the work tree is HEAD's again; the index is not
    elif change == "untracked":
        (clean / "sub" / "tests" / "test_new.py").write_bytes(b"new\n")
    elif change == "deleted":
        test.unlink()
    else:
        test.unlink()
        test.symlink_to(clean / "top.py")
    assert git_module.clean_tree(clean / "sub") is None
    assert git_module.clean_tree(clean) is None


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
@pytest.mark.parametrize("modified", [True, False], ids=["modified", "unmodified"])
def test_a_file_git_does_not_compare_leaves_no_clean_tree(clean: Path, flag: str, modified: bool) -> None:
    # git status does not look at such a file's working-tree copy: the tree id proves nothing.
    test = clean / "sub" / "tests" / "test_a.py"
    git(clean, "update-index", flag, "sub/tests/test_a.py")
    if modified:
        test.write_bytes(b"a = 2\n")
    assert git(clean, "status", "--porcelain") == ""
    assert git_module.clean_tree(clean / "sub") is None
    assert git_module.clean_tree(clean) is None
    git(clean, "update-index", flag.replace("--", "--no-"), "sub/tests/test_a.py")
    assert (git_module.clean_tree(clean) is None) is modified


def test_all_compared_reads_every_records_tag() -> None:
    assert git_module._all_compared(b"") is True
    assert git_module._all_compared(b"H a.py\0H b/c.py\0") is True
    assert git_module._all_compared(b"h a.py\0H b.py\0") is False
    assert git_module._all_compared(b"H a.py\0S b.py\0") is False
    assert git_module._all_compared(b"H a.py\0H b.py\0M c.py\0") is False
    assert git_module._all_compared(None) is False


def test_a_change_outside_a_subdirectory_checkout_is_not_its_change(clean: Path) -> None:
    (clean / "top.py").write_bytes(b"changed\n")
    (clean / "untracked.py").write_bytes(b"new\n")
    assert git_module.clean_tree(clean / "sub") == git(clean, "rev-parse", "HEAD:sub")
    assert git_module.clean_tree(clean) is None


def test_no_clean_tree_outside_git_or_before_the_first_commit(tmp_path: Path, git_env) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_module.clean_tree(plain) is None
    git(plain, "init", "-q")
    assert git_module.clean_tree(plain) is None


def test_git_diff_over_the_cap_or_the_timeout_or_without_git_is_unavailable(repo, monkeypatch):
    root, base, head = repo
    monkeypatch.setattr(git_module, "MAX_DIFF_BYTES", 20)
    assert git_diff(root, base, head) == Diff.unavailable(
        f"git diff {base} {head} failed: it printed more than 20 bytes")
    monkeypatch.setattr(git_module, "MAX_DIFF_BYTES", 1 << 20)
    assert git_diff(root, base, head, timeout=0) == Diff.unavailable(
        f"git diff {base} {head} failed: timed out after 0 s")
    monkeypatch.setenv("PATH", str(root / "no-such-bin"))
    assert git_diff(root, base, head) == Diff.unavailable(
        f"git diff {base} {head} failed: [Errno 2] No such file or directory: 'git'")


@pytest.mark.parametrize("data", [b"", b"version: 1\n", bytes(range(256)) * 5000], ids=["empty", "text", "binary"])
def test_a_blob_id_is_the_id_git_gives_the_file(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f.yml").write_bytes(data)
    expected = subprocess.run(["git", "hash-object", "--no-filters", str(tmp_path / "sub" / "f.yml")],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert git_module.blob_id(tmp_path, "sub/f.yml") == f"git:{expected}"
    # Read as content ids read: a symlink (at the file or on the way) or a missing file has none.
    (tmp_path / "link.yml").symlink_to(tmp_path / "sub" / "f.yml")
    (tmp_path / "linked").symlink_to(tmp_path / "sub")
    assert [git_module.blob_id(tmp_path, rel) for rel in ("link.yml", "linked/f.yml", "sub/none.yml", "sub")] == \
        [None, None, None, None]


def test_importing_the_module_loads_neither_the_diff_reader_nor_tempfile() -> None:
    """A stage job starts git (`start_clean_tree`) before its other imports: the module itself
    loads only what starting git needs."""
    import json
    import sys

    probe = ("import json, sys; import ci_policy.adapters.git; "
             "print(json.dumps([m for m in ('tempfile', 'ci_policy.read.diff') if m in sys.modules]))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout) == []
