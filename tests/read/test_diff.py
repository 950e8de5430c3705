"""The PR's diff (`ci_policy.diff`): accepted records, unavailable inputs, a real git repo."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_policy.read import diff as diff_module
from ci_policy.read.diff import Change, Diff, git_diff, parse_name_status, read_diff, read_diff_file
from ci_policy.errors import InputError

HINT = "produce it with: git diff --name-status -z -M BASE HEAD"

# (raw bytes, expected changes)
ACCEPTED = [
    pytest.param(b"A\0new.py\0", [("A", ("new.py",))], id="A"),
    pytest.param(b"D\0gone.py\0", [("D", ("gone.py",))], id="D"),
    pytest.param(b"M\0src/a.py\0", [("M", ("src/a.py",))], id="M"),
    pytest.param(b"T\0link\0", [("T", ("link",))], id="T"),
    pytest.param(b"U\0conflict.py\0", [("U", ("conflict.py",))], id="U"),
    pytest.param(b"X\0odd\0", [("X", ("odd",))], id="X"),
    pytest.param(b"B\0broken.py\0", [("B", ("broken.py",))], id="B"),
    pytest.param(b"R100\0old.py\0new.py\0", [("R", ("old.py", "new.py"))], id="R100-two-paths"),
    pytest.param(b"R087\0a/x.py\0b/x.py\0", [("R", ("a/x.py", "b/x.py"))], id="R087"),
    pytest.param(b"C075\0orig.py\0copy.py\0", [("C", ("orig.py", "copy.py"))], id="C-with-score"),
    pytest.param(b"C5\0orig.py\0copy.py\0", [("C", ("orig.py", "copy.py"))], id="C-one-digit-score"),
    pytest.param("M\0docs/ünïcödé.md\0A\0测试/test_ü.py\0".encode(),
                 [("M", ("docs/ünïcödé.md",)), ("A", ("测试/test_ü.py",))], id="unicode-paths"),
    pytest.param("R100\0ölder.py\0néwer.py\0".encode(), [("R", ("ölder.py", "néwer.py"))],
                 id="unicode-rename"),
    pytest.param(b"M\0with space.py\0M\0tab\there.py\0M\0-rf\0",
                 [("M", ("with space.py",)), ("M", ("tab\there.py",)), ("M", ("-rf",))],
                 id="spaces-tabs-dashes"),
    pytest.param(b"A\0a.py\0R100\0b.py\0c.py\0D\0d.py\0M\0e.py\0",
                 [("A", ("a.py",)), ("R", ("b.py", "c.py")), ("D", ("d.py",)), ("M", ("e.py",))],
                 id="several-records"),
]


@pytest.mark.parametrize("data, expected", ACCEPTED)
def test_accepted_records(data, expected):
    changes = parse_name_status(data, "pr.diff")
    assert changes == tuple(Change(status=s, paths=p) for s, p in expected)
    diff = read_diff(data, "pr.diff")
    assert diff.available is True
    assert diff.reason == ""
    assert diff.changes == changes
    assert diff.files == tuple(sorted({p for _, paths in expected for p in paths}))


def test_files_holds_both_paths_of_a_rename_sorted_without_duplicates():
    diff = read_diff(b"R100\0z_old.py\0a_new.py\0M\0a_new.py\0C100\0z_old.py\0m.py\0", "pr.diff")
    assert diff.files == ("a_new.py", "m.py", "z_old.py")


def test_bytearray_is_accepted():
    assert parse_name_status(bytearray(b"M\0a.py\0")) == (Change("M", ("a.py",)),)


# (raw bytes, exact reason the diff is unavailable)
UNAVAILABLE = [
    pytest.param(b"", "pr.diff: the diff is empty", id="empty"),
    pytest.param(b"M\0a.py", "pr.diff: the diff is truncated (it does not end with a NUL byte)",
                 id="no-final-nul"),
    pytest.param(b"M\tsrc/a.py\n", "pr.diff: the diff is truncated (it does not end with a NUL byte)",
                 id="without-z"),
    pytest.param(b"M\0", "pr.diff: the diff is truncated: record 1 (M) needs 1 path(s)", id="no-path"),
    pytest.param(b"R100\0old.py\0", "pr.diff: the diff is truncated: record 1 (R100) needs 2 path(s)",
                 id="rename-one-path"),
    pytest.param(b"M\0a.py\0C090\0x.py\0",
                 "pr.diff: the diff is truncated: record 2 (C090) needs 2 path(s)", id="copy-one-path"),
    pytest.param(b"R\0a.py\0b.py\0", "pr.diff: status 'R' must carry a similarity score (e.g. R100)",
                 id="rename-without-score"),
    pytest.param(b"C\0a.py\0b.py\0", "pr.diff: status 'C' must carry a similarity score (e.g. C100)",
                 id="copy-without-score"),
    pytest.param(b"Z\0a.py\0", "pr.diff: unknown status 'Z' in record 1", id="unknown-letter"),
    pytest.param(b"m\0a.py\0", "pr.diff: unknown status 'm' in record 1", id="lowercase"),
    pytest.param(b"R1000\0a\0b\0", "pr.diff: unknown status 'R1000' in record 1", id="score-too-long"),
    pytest.param(b"MM\0a.py\0", "pr.diff: unknown status 'MM' in record 1", id="two-letters"),
    pytest.param(b"M\0a.py\0Q\0b.py\0", "pr.diff: unknown status 'Q' in record 2", id="bad-second-record"),
    pytest.param(b"\0", "pr.diff: unknown status '' in record 1", id="lone-nul"),
    pytest.param(b"M\0a.py\0\0", "pr.diff: unknown status '' in record 2", id="extra-nul"),
    pytest.param(b"M\0\0", "pr.diff: invalid path '' in record 1", id="empty-path"),
    pytest.param(b"M\0/etc/passwd\0", "pr.diff: invalid path '/etc/passwd' in record 1", id="absolute"),
    pytest.param(b"M\0a/../b.py\0", "pr.diff: invalid path 'a/../b.py' in record 1", id="dotdot"),
    pytest.param(b"R100\0ok.py\0../up.py\0", "pr.diff: invalid path '../up.py' in record 1",
                 id="dotdot-second-path"),
    pytest.param(b"M\0a\nb.py\0", "pr.diff: invalid path 'a\\nb.py' in record 1", id="newline-in-path"),
    pytest.param(b"M\0\xff.py\0", "pr.diff: the diff is not valid UTF-8 (byte 2)", id="not-utf8"),
    pytest.param(b"M\0a.py\0M\0\xed\xa0\x80\0", "pr.diff: the diff is not valid UTF-8 (byte 9)",
                 id="utf8-surrogate"),
    pytest.param("not bytes", "pr.diff: expected bytes", id="str"),
    pytest.param(None, "pr.diff: expected bytes", id="none"),
]


@pytest.mark.parametrize("data, reason", UNAVAILABLE)
def test_unavailable_inputs(data, reason):
    diff = read_diff(data, "pr.diff")
    assert diff == Diff(available=False, changes=(), reason=reason)
    assert diff.files == ()
    with pytest.raises(InputError) as info:
        parse_name_status(data, "pr.diff")
    assert info.value.message == reason
    assert info.value.path == "pr.diff"
    assert info.value.hint == HINT


def test_read_diff_file(tmp_path: Path):
    path = tmp_path / "pr.diff"
    path.write_bytes(b"M\0a.py\0")
    assert read_diff_file(path) == Diff(available=True, changes=(Change("M", ("a.py",)),))
    path.write_bytes(b"")
    assert read_diff_file(path) == Diff.unavailable(f"{path}: the diff is empty")
    missing = tmp_path / "missing.diff"
    assert read_diff_file(missing) == Diff.unavailable(f"{missing}: cannot be read: No such file or directory")


# -- properties ----------------------------------------------------------------------------

FRAGMENTS = st.sampled_from([b"M", b"A", b"R100", b"C5", b"R", b"Z", b"\0", b"a.py", b"/", b"..",
                             b"\xff", b"\n", b"\xc3\xa9", b"0", b""])
NEAR_VALID = st.lists(FRAGMENTS, max_size=12).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.binary(max_size=64), NEAR_VALID))
def test_parse_raises_only_policy_error(data):
    try:
        changes = parse_name_status(data, "fuzz")
    except InputError as exc:
        assert exc.message.startswith("fuzz: ")
        assert exc.path == "fuzz"
    else:
        assert changes, "a parsed diff is never empty"


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.binary(max_size=64), NEAR_VALID))
def test_read_diff_never_raises(data):
    diff = read_diff(data, "fuzz")
    if diff.available:
        assert diff.changes, "an available diff names at least one change"
        assert diff.reason == ""
    else:
        assert diff.changes == ()
        assert diff.reason.startswith("fuzz: ")


SEGMENT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0/\n"),
    min_size=1, max_size=8,
).filter(lambda s: s != "..")
PATH = st.lists(SEGMENT, min_size=1, max_size=4).map("/".join)
SINGLE = st.tuples(st.sampled_from("ADMTUXB"), st.just(""), PATH.map(lambda p: (p,)))
DOUBLE = st.tuples(st.sampled_from("RC"), st.integers(0, 100).map(str), st.tuples(PATH, PATH))
RECORDS = st.lists(st.one_of(SINGLE, DOUBLE), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(RECORDS)
def test_a_generated_valid_diff_round_trips(records):
    data = b"".join(
        (letter + score).encode() + b"\0" + b"".join(p.encode("utf-8") + b"\0" for p in paths)
        for letter, score, paths in records
    )
    expected = tuple(Change(status=letter, paths=paths) for letter, _, paths in records)
    assert parse_name_status(data) == expected
    diff = read_diff(data, "gen")
    assert diff.available and diff.changes == expected
    assert diff.files == tuple(sorted({p for _, _, paths in records for p in paths}))
    # Cutting off the final NUL always makes it unavailable: never a partial guess.
    assert read_diff(data[:-1], "gen").available is False


# -- git_diff against a real repository ------------------------------------------------------


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


def test_git_diff_of_identical_revisions_is_unavailable_not_empty(repo):
    root, _, head = repo
    assert git_diff(root, head, "HEAD") == Diff.unavailable(f"git diff {head} HEAD: the diff is empty")


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
    monkeypatch.setattr(diff_module.subprocess, "run", lambda *a, **k: calls.append(a))
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
