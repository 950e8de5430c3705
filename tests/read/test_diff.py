"""The PR's diff (`ci_policy/read/diff.py`): accepted records, unavailable inputs, a named file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_policy.errors import InputError
from ci_policy.read.diff import (
    CONTROL_RE,
    NO_CHANGES,
    Change,
    Diff,
    parse_name_status,
    read_diff,
    read_diff_file,
)

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


UNIFIED = ("pr.diff: this is a unified diff (what `git diff` or GitHub's .diff gives), not the "
           "name-status list ci-policy reads; produce it with: git diff --name-status -z -M BASE HEAD")

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
    pytest.param(b"M\0a\nb.py\0", "pr.diff: path 'a\\nb.py' in record 1 has control characters; ci-policy "
                 "refuses such names", id="newline-in-path"),
    # finding 1 of issue 14: a CR is a line break to the Actions runner, a bidi control reorders the line.
    pytest.param(b"M\0a.py\0M\0a\r::set-output name=x::1.py\0",
                 "pr.diff: path 'a\\r::set-output name=x::1.py' in record 2 has control characters; ci-policy "
                 "refuses such names", id="cr-in-path"),
    pytest.param("M\0docs/\u202egnp.py\0".encode(),
                 "pr.diff: path 'docs/\\u202egnp.py' in record 1 has control characters; ci-policy "
                 "refuses such names", id="bidi-in-path"),
    pytest.param("R100\0a.py\0b\u2066.py\0".encode(),
                 "pr.diff: path 'b\\u2066.py' in record 1 has control characters; ci-policy "
                 "refuses such names", id="isolate-in-second-path"),
    pytest.param(b"M\0\xff.py\0", "pr.diff: the diff is not valid UTF-8 (byte 2)", id="not-utf8"),
    pytest.param(b"M\0a.py\0M\0\xed\xa0\x80\0", "pr.diff: the diff is not valid UTF-8 (byte 9)",
                 id="utf8-surrogate"),
    # Issue 31: a unified diff is named as such, with the command that gives what is read.
    pytest.param(b"diff --git a/x.py b/x.py\nindex 1..2 100644\n--- a/x.py\n+++ b/x.py\n",
                 UNIFIED, id="git-diff"),
    pytest.param(b"diff --git a/x.py b/x.py\0", UNIFIED, id="git-diff-ending-with-nul"),
    pytest.param(b"diff --cc merged.py\nindex 1,2..3\n", UNIFIED, id="combined-diff"),
    pytest.param(b"--- x.py\t2026-01-01\n+++ x.py\t2026-01-02\n@@ -1 +1 @@\n-a\n+b\n", UNIFIED,
                 id="diff-u"),
    pytest.param(b"From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"
                 b"Subject: [PATCH] x\n\ndiff --git a/x b/x\n", UNIFIED, id="github-patch"),
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


def test_a_diff_file_marked_as_no_changes_is_known_to_be_empty(tmp_path: Path):
    path = tmp_path / "pr.diff"
    path.write_bytes(b"ci-policy: no changed file\n")
    assert NO_CHANGES == b"ci-policy: no changed file\n"
    assert read_diff_file(path) == Diff(available=True, changes=(), reason="")
    # Only the exact line: anything else is read as name-status output, and refused.
    for near in (b"ci-policy: no changed file", b"ci-policy: no changed file\n\n", b"ci-policy: no changed file\0"):
        path.write_bytes(near)
        assert read_diff_file(path).available is False
    path.write_bytes(b"ci-policy: no changed file\0")
    assert read_diff_file(path) == Diff.unavailable(f"{path}: unknown status 'ci-policy: no changed file' in record 1")
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
    if data == NO_CHANGES:
        assert diff == Diff(available=True, changes=(), reason="")
    elif diff.available:
        assert diff.changes, "an available diff names at least one change"
        assert diff.reason == ""
    else:
        assert diff.changes == ()
        assert diff.reason.startswith("fuzz: ")


SEGMENT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0/\n"),
    min_size=1, max_size=8,
).filter(lambda s: s != ".." and not CONTROL_RE.search(s))  # control characters: see UNAVAILABLE
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
