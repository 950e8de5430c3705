"""ci_policy.read.checkout: repo-relative paths and reading files of an untrusted checkout."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_policy.errors import InputError
from ci_policy.read.checkout import (
    MAX_FILE_BYTES,
    Directories,
    FileReader,
    check_no_symlinks,
    check_relative,
    read_text,
    where_missing,
)

SYMLINK_HINT = "replace the symlink with the real file or directory"
MISSING_HINT = "create it or point the configuration at the right file"


def refused(fn, *args, **kwargs) -> tuple:
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    e = info.value
    return (e.path, e.line, e.col, e.message, e.hint)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "tests" / "unit").mkdir(parents=True)
    (root / "tests" / "unit" / "test_a.py").write_text("x = 1\n")
    (root / "README").write_text("hello\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("runner secret\n")
    return d


# -- check_relative -------------------------------------------------------------------------


@pytest.mark.parametrize("rel, normalised", [
    ("tests", "tests"),
    ("tests/e2e", "tests/e2e"),
    ("tests/", "tests"),
    ("./tests", "tests"),
    ("tests//e2e", "tests/e2e"),
    ("tests/./e2e", "tests/e2e"),
    (".", "."),
    ("./", "."),
    ("...", "..."),
    ("..a/b..", "..a/b.."),
    ("~/x", "~/x"),
    (".github/ci-policy.yml", ".github/ci-policy.yml"),
])
def test_check_relative_accepts_and_normalises(rel, normalised):
    assert check_relative(rel, field="roots[0]") == normalised


@pytest.mark.parametrize("rel, message, hint", [
    ("", "f: expected a repo-relative path, got ''", "write a path such as tests/e2e"),
    (" tests", "f: expected a repo-relative path, got ' tests'", "write a path such as tests/e2e"),
    ("tests\n", "f: expected a repo-relative path, got 'tests\\n'", "write a path such as tests/e2e"),
    ("tests\\e2e", "f: 'tests\\\\e2e' must use forward slashes and no NUL bytes",
     "write a POSIX path such as tests/e2e"),
    ("tests\0", "f: 'tests\\x00' must use forward slashes and no NUL bytes", "write a POSIX path such as tests/e2e"),
    ("/etc/passwd", "f: '/etc/passwd' is absolute; paths are relative to the repository root",
     "drop the leading '/'"),
    ("//server/share", "f: '//server/share' is absolute; paths are relative to the repository root",
     "drop the leading '/'"),
    ("..", "f: '..' leaves the repository ('..' is not allowed)", "name a path inside the repository"),
    ("../x", "f: '../x' leaves the repository ('..' is not allowed)", "name a path inside the repository"),
    ("a/../../x", "f: 'a/../../x' leaves the repository ('..' is not allowed)",
     "name a path inside the repository"),
    ("a/..", "f: 'a/..' leaves the repository ('..' is not allowed)", "name a path inside the repository"),
])
def test_check_relative_refuses(rel, message, hint):
    assert refused(check_relative, rel, field="f", path="conf.yml", line=3, col=7) == (
        "conf.yml", 3, 7, message, hint)


def test_check_relative_without_a_location():
    assert refused(check_relative, "/x", field="f") == (
        None, None, None, "f: '/x' is absolute; paths are relative to the repository root", "drop the leading '/'")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", "/", ".", "\\", " ", "\0", "é"]), max_size=12))
def test_check_relative_never_returns_a_path_that_leaves_the_root(rel):
    try:
        result = check_relative(rel, field="f")
    except InputError:
        return
    pure = PurePosixPath(result)
    assert not pure.is_absolute() and ".." not in pure.parts
    assert "\\" not in result and "\0" not in result


# -- read_text: accepted --------------------------------------------------------------------


def test_read_text(repo):
    assert read_text(repo, "tests/unit/test_a.py") == "x = 1\n"
    assert read_text(repo, "./tests//unit/test_a.py") == "x = 1\n"


def test_root_itself_may_be_reached_through_a_symlink(repo, tmp_path):
    # Only what lies below the root belongs to the checkout; the caller chose the root.
    os.symlink(repo, tmp_path / "alias")
    assert read_text(tmp_path / "alias", "README") == "hello\n"


def test_file_exactly_at_the_size_cap(repo):
    (repo / "big").write_bytes(b"a" * 10)
    assert read_text(repo, "big", max_bytes=10) == "a" * 10


def test_default_cap(repo):
    (repo / "big").write_bytes(b"a" * MAX_FILE_BYTES)
    assert len(read_text(repo, "big")) == MAX_FILE_BYTES
    (repo / "big").write_bytes(b"a" * (MAX_FILE_BYTES + 1))
    assert refused(read_text, repo, "big") == (
        "big", None, None, f"file big is larger than {MAX_FILE_BYTES} bytes",
        "ci-policy reads checkout files as data and caps their size")


# -- read_text: refused ---------------------------------------------------------------------


def test_symlink_to_etc_passwd(repo):
    os.symlink("/etc/passwd", repo / "tests" / "unit" / "test_passwd.py")
    assert refused(read_text, repo, "tests/unit/test_passwd.py", what="test file") == (
        "tests/unit/test_passwd.py", None, None,
        "test file tests/unit/test_passwd.py is a symlink; ci-policy refuses symlinks in a checkout", SYMLINK_HINT)


def test_symlink_to_a_file_inside_the_repo(repo):
    os.symlink("README", repo / "LINK")
    assert refused(read_text, repo, "LINK") == (
        "LINK", None, None, "file LINK is a symlink; ci-policy refuses symlinks in a checkout", SYMLINK_HINT)


def test_dangling_symlink(repo):
    os.symlink("nowhere", repo / "dangling")
    assert refused(read_text, repo, "dangling") == (
        "dangling", None, None, "file dangling is a symlink; ci-policy refuses symlinks in a checkout",
        SYMLINK_HINT)


def test_symlinked_directory_to_etc(repo):
    os.symlink("/etc", repo / "tests" / "etc")
    assert refused(read_text, repo, "tests/etc/passwd") == (
        "tests/etc/passwd", None, None,
        "file tests/etc/passwd: directory tests/etc is a symlink; ci-policy refuses symlinks in a checkout",
        SYMLINK_HINT)


def test_symlinked_directory_outside_the_repo(repo, outside):
    os.symlink(outside, repo / "data")
    assert refused(read_text, repo, "data/secret.txt", what="labels file") == (
        "data/secret.txt", None, None,
        "labels file data/secret.txt: directory data is a symlink; ci-policy refuses symlinks in a checkout",
        SYMLINK_HINT)


def test_symlinked_directory_deep_in_the_path(repo, outside):
    (repo / "a" / "b").mkdir(parents=True)
    os.symlink(outside, repo / "a" / "b" / "c")
    assert refused(read_text, repo, "a/b/c/secret.txt") == (
        "a/b/c/secret.txt", None, None,
        "file a/b/c/secret.txt: directory a/b/c is a symlink; ci-policy refuses symlinks in a checkout",
        SYMLINK_HINT)


def test_symlinked_directory_pointing_back_inside_the_repo(repo):
    os.symlink("tests", repo / "t")
    assert refused(read_text, repo, "t/unit/test_a.py")[3] == (
        "file t/unit/test_a.py: directory t is a symlink; ci-policy refuses symlinks in a checkout")


def test_missing_file(repo):
    assert refused(read_text, repo, "nope.txt") == ("nope.txt", None, None, "file nope.txt does not exist",
                                                    MISSING_HINT)
    assert refused(read_text, repo, "no/such/dir/f") == ("no/such/dir/f", None, None,
                                                         "file no/such/dir/f does not exist", MISSING_HINT)


def test_path_through_a_regular_file(repo):
    assert refused(read_text, repo, "README/x") == ("README/x", None, None, "file README/x does not exist",
                                                    MISSING_HINT)


# -- read_text with directory listings (Directories): the same answers, fewer lstat ------------


@pytest.fixture
def tree(repo, outside):
    """A checkout with every kind of path a listing must answer for as `lstat` does."""
    (repo / "a" / "b" / "c").mkdir(parents=True)
    (repo / "a" / "b" / "c" / "test_x.py").write_text("x = 1\n")
    (repo / "a" / "real").mkdir()
    (repo / "a" / "real" / "test_y.py").write_text("y = 2\n")
    os.symlink(repo / "a" / "real", repo / "a" / "mid")  # a symlinked middle directory
    os.symlink("../outside", repo / "a" / "b" / "out")  # dangling, relative to the checkout
    os.symlink(outside, repo / "a" / "b" / "c" / "away")  # a symlinked last directory
    os.symlink("test_x.py", repo / "a" / "b" / "c" / "test_link.py")  # a symlinked file
    return repo


TREE_PATHS = ["a/b/c/test_x.py", "a/real/test_y.py", "a/mid/test_y.py", "a/b/out/secret.txt",
              "a/b/c/away/secret.txt", "a/b/c/test_link.py", "a/b/c/test_missing.py", "a/nope/test_z.py",
              "README/x", "a/b/c/test_x.py/y", "a/b", "README", "tests/unit/test_a.py"]


def outcome(fn, *args, **kwargs) -> object:
    try:
        return fn(*args, **kwargs)
    except InputError as e:
        return (e.code, e.path, e.message, e.hint)


def test_a_symlinked_middle_directory_is_refused_with_listings(tree):
    dirs = Directories(tree)
    assert read_text(tree, "a/real/test_y.py", dirs=dirs) == "y = 2\n"
    assert refused(read_text, tree, "a/mid/test_y.py", what="test file", dirs=dirs) == (
        "a/mid/test_y.py", None, None,
        "test file a/mid/test_y.py: directory a/mid is a symlink; ci-policy refuses symlinks in a checkout",
        SYMLINK_HINT)
    assert outcome(check_no_symlinks, tree, "a/mid/test_y.py", what="file", dirs=dirs)[0] == "CP401"


@pytest.mark.parametrize("order", ["listed", "reversed"])
def test_listings_answer_every_path_as_lstat_does(tree, order):
    # One Directories for the whole run, as the scan uses it: whatever was listed before,
    # every path gets the answer it gets without listings (text, or code, path, message, hint).
    dirs = Directories(tree)
    paths = TREE_PATHS if order == "listed" else TREE_PATHS[::-1]
    for rel in paths:
        assert outcome(read_text, tree, rel, what="test file", dirs=dirs) == outcome(
            read_text, tree, rel, what="test file"), rel
        with_dirs = outcome(check_no_symlinks, tree, rel, what="file", dirs=dirs)
        without = outcome(check_no_symlinks, tree, rel, what="file")
        if isinstance(without, os.stat_result):
            assert isinstance(with_dirs, os.stat_result) and with_dirs.st_ino == without.st_ino, rel
        else:
            assert with_dirs == without, rel
    assert [rel for rel in paths if outcome(read_text, tree, rel, dirs=dirs)[0] == "CP401"] == [
        rel for rel in paths if rel in ("a/mid/test_y.py", "a/b/out/secret.txt", "a/b/c/away/secret.txt",
                                        "a/b/c/test_link.py")]


def test_listings_leave_one_lstat_per_file(tree, monkeypatch):
    names = [f"test_{i}.py" for i in range(20)]
    for name in names:
        (tree / "a" / "b" / "c" / name).write_text("z = 3\n")
    seen: list[str] = []
    real = os.lstat
    monkeypatch.setattr(os, "lstat", lambda p, *a, **k: seen.append(os.fspath(p)) or real(p, *a, **k))
    dirs = Directories(tree)
    for name in names:
        assert read_text(tree, f"a/b/c/{name}", dirs=dirs) == "z = 3\n"
    assert sorted(seen) == sorted(os.path.join(tree, "a", "b", "c", name) for name in names)
    seen.clear()
    read_text(tree, "a/b/c/test_0.py")  # without listings: every component
    assert len(seen) == 4


def test_a_directory_that_cannot_be_listed_is_checked_by_lstat(tree, monkeypatch):
    # A directory one may search but not read (mode 0311) cannot be listed; its names are then
    # checked by lstat as without listings. The refusal to list is raised where os.scandir
    # would raise it, so the test holds when run as root too (root lists every directory).
    real = os.scandir

    def scandir(path):
        if os.fspath(path) == os.path.join(tree, "a", "b"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    dirs = Directories(tree)
    assert read_text(tree, "a/b/c/test_x.py", dirs=dirs) == "x = 1\n"
    assert outcome(read_text, tree, "a/b/out/secret.txt", dirs=dirs)[2] == (
        "file a/b/out/secret.txt: directory a/b/out is a symlink; ci-policy refuses symlinks in a checkout")
    assert outcome(read_text, tree, "a/mid/test_y.py", dirs=dirs)[0] == "CP401"


def test_what_names_the_kind_of_file(repo):
    assert refused(read_text, repo, "ci.yml", what="configuration file") == (
        "ci.yml", None, None, "configuration file ci.yml does not exist",
        "create it or point the configuration at the right configuration file")


def test_directory_is_not_a_regular_file(repo):
    assert refused(read_text, repo, "tests") == ("tests", None, None, "file tests is not a regular file", None)
    assert refused(read_text, repo, ".") == (".", None, None, "file . is not a regular file", None)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_fifo_is_not_a_regular_file_and_is_never_opened(repo):
    os.mkfifo(repo / "pipe")
    # Opening a FIFO for reading would block forever; the lstat check refuses it first.
    assert refused(read_text, repo, "pipe") == ("pipe", None, None, "file pipe is not a regular file", None)
    assert stat.S_ISFIFO(os.lstat(repo / "pipe").st_mode)


def test_oversize_file(repo):
    (repo / "big").write_bytes(b"a" * 11)
    assert refused(read_text, repo, "big", what="test file", max_bytes=10) == (
        "big", None, None, "test file big is larger than 10 bytes",
        "ci-policy reads checkout files as data and caps their size")


@pytest.mark.parametrize("data, line, col", [
    (b"\xff", 1, 1),
    (b"abc\xfe\n", 1, 4),
    (b"ok\nok\n\x80 continuation\n", 3, 1),
    (b"line1\n  caf\xc3\xa9 \xc3(\n", 2, 8),      # the col counts characters: 'caf\xe9' is 4
    (b"\xe2\x82\xac\xe2\x82\xac\xe2\x82\n", 1, 3),  # truncated 3-byte sequence after two euro signs
    (b"x = 1\n\xed\xa0\x80\n", 2, 1),              # an encoded surrogate
    (b"\xc0\xaf", 1, 1),                           # overlong encoding of '/'
])
def test_non_utf8_is_located_at_the_bad_byte(repo, data, line, col):
    (repo / "bad.py").write_bytes(data)
    assert refused(read_text, repo, "bad.py", what="test file") == (
        "bad.py", line, col, "test file bad.py is not valid UTF-8", "save the file as UTF-8")


@pytest.mark.parametrize("rel, message, hint", [
    ("/etc/passwd", "file: '/etc/passwd' is absolute; paths are relative to the repository root",
     "drop the leading '/'"),
    ("../outside/secret.txt", "file: '../outside/secret.txt' leaves the repository ('..' is not allowed)",
     "name a path inside the repository"),
    ("tests/../../outside/secret.txt",
     "file: 'tests/../../outside/secret.txt' leaves the repository ('..' is not allowed)",
     "name a path inside the repository"),
    ("", "file: expected a repo-relative path, got ''", "write a path such as tests/e2e"),
])
def test_read_text_refuses_paths_leaving_the_root(repo, outside, rel, message, hint):
    assert refused(read_text, repo, rel) == (rel, None, None, message, hint)


# -- check_no_symlinks ----------------------------------------------------------------------


def test_check_no_symlinks_returns_the_stat_of_the_last_component(repo):
    st_dir = check_no_symlinks(repo, "tests/unit", what="discovery root")
    assert stat.S_ISDIR(st_dir.st_mode)
    st_file = check_no_symlinks(repo, "tests/unit/test_a.py", what="file")
    assert stat.S_ISREG(st_file.st_mode)
    assert stat.S_ISDIR(check_no_symlinks(repo, ".", what="discovery root").st_mode)
    assert check_no_symlinks(repo, "tests/missing/x", what="file") is None
    assert check_no_symlinks(repo, "README/x", what="file") is None


def test_check_no_symlinks_names_the_symlinked_component(repo, outside):
    os.symlink(outside, repo / "tests" / "ext")
    assert refused(check_no_symlinks, repo, "tests/ext", what="discovery root") == (
        "tests/ext", None, None, "discovery root tests/ext is a symlink; ci-policy refuses symlinks in a checkout",
        SYMLINK_HINT)
    assert refused(check_no_symlinks, repo, "tests/ext/deeper", what="discovery root") == (
        "tests/ext/deeper", None, None, "discovery root tests/ext/deeper: directory tests/ext is a symlink; "
        "ci-policy refuses symlinks in a checkout", SYMLINK_HINT)


def test_where_missing_names_the_deepest_existing_directory_and_what_is_in_it(tmp_path):
    (tmp_path / "tests" / "e2e").mkdir(parents=True)
    (tmp_path / "tests" / "e2e" / "test_a.py").write_text("")
    (tmp_path / "tests" / "link").symlink_to(tmp_path / "tests" / "e2e")
    assert where_missing(tmp_path, "tests/e2e/test_b.py") == ("tests/e2e", "test_b.py", ("test_a.py",))
    assert where_missing(tmp_path, "tests/e2f/test_b.py") == ("tests", "e2f", ("e2e", "link"))
    assert where_missing(tmp_path, "tests/e2e/test_a.py/x.py") == ("tests/e2e", "test_a.py", ("test_a.py",))
    # A symlinked directory is not followed: the path stops at it.
    assert where_missing(tmp_path, "tests/link/test_b.py") == ("tests", "link", ("e2e", "link"))


def test_the_file_reader_reads_what_read_text_accepts_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "tests" / "e2e").mkdir(parents=True)
    (tmp_path / "tests" / "e2e" / "test_a.py").write_bytes(b"x = 1\n")
    (tmp_path / "tests" / "big.py").write_bytes(b"#" * 11)
    (tmp_path / "tests" / "latin1.py").write_bytes(b"\xe9\n")  # bytes: read_text refuses them when decoding
    os.symlink(tmp_path / "tests" / "e2e", tmp_path / "tests" / "alias")
    os.symlink(tmp_path / "tests" / "e2e" / "test_a.py", tmp_path / "tests" / "link.py")
    os.mkfifo(tmp_path / "tests" / "fifo.py")  # opened without waiting for a writer
    (tmp_path / "tests" / "dir.py").mkdir()
    reader = FileReader(tmp_path, max_bytes=10)
    read = reader.read("tests/e2e/test_a.py")
    assert read is not None and read[0] == b"x = 1\n"
    assert reader.read("tests/latin1.py") is not None and reader.read("tests/latin1.py")[0] == b"\xe9\n"
    for refused in ("tests/big.py", "tests/alias/test_a.py", "tests/link.py", "tests/fifo.py", "tests/dir.py",
                    "tests/missing.py", "tests/../tests/e2e/test_a.py", "/etc/passwd", "tests//e2e/test_a.py"):
        assert reader.read(refused) is None, refused
    # The directory found to be a symlink stays refused for every file below it.
    assert reader.read("tests/alias/test_a.py") is None
