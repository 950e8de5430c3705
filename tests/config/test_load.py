"""`load_config` (`ci_policy.config.load`): reading the configuration file from disk: where it is,
symlinks, size caps, UTF-8.
"""

from __future__ import annotations

import os
from pathlib import Path

from config_cases import VALID, P, caught

from ci_policy.config.load import MAX_CONFIG_BYTES, load_config
from ci_policy.config.top import parse_config


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return path


def padded(size: int) -> str:
    """A valid configuration of exactly `size` bytes."""
    text = VALID + "#"
    return text + "x" * (size - len(text) - 1) + "\n"


def test_load_default_config(tmp_path):
    write(tmp_path / P, VALID)
    assert load_config(tmp_path) == parse_config(VALID, P)


def test_load_reports_errors_at_the_config_path(tmp_path):
    write(tmp_path / P, VALID.replace("version: 1", "version: 3"))
    assert caught(load_config, tmp_path) == [
        (P, 1, 10, "version: unsupported version 3; this ci_policy reads version 1", None)]


def test_missing_config(tmp_path):
    assert caught(load_config, tmp_path) == [(P, None, None, f"configuration file {P} does not exist",
                                              "create it or point the configuration at the right "
                                              "configuration file")]


def test_config_at_the_size_cap_is_read_and_one_byte_more_is_refused(tmp_path):
    write(tmp_path / P, padded(MAX_CONFIG_BYTES))
    assert load_config(tmp_path).version == 1
    write(tmp_path / P, padded(MAX_CONFIG_BYTES + 1))
    assert caught(load_config, tmp_path) == [(P, None, None, f"configuration file {P} is larger than "
                                              f"{MAX_CONFIG_BYTES} bytes",
                                              "ci-policy reads checkout files as data and caps their size")]


def test_config_that_is_not_utf8(tmp_path):
    write(tmp_path / P, b"version: 1\n# caf\xc3\xa9 \xff\n")
    assert caught(load_config, tmp_path) == [(P, 2, 8, f"configuration file {P} is not valid UTF-8",
                                              "save the file as UTF-8")]


def test_config_that_is_a_directory(tmp_path):
    (tmp_path / P).mkdir(parents=True)
    assert caught(load_config, tmp_path) == [(P, None, None, f"configuration file {P} is not a regular file",
                                              None)]


SYMLINK_HINT = "replace the symlink with the real file or directory"


def test_config_symlink_to_etc_passwd_is_refused(tmp_path):
    (tmp_path / ".github").mkdir()
    os.symlink("/etc/passwd", tmp_path / P)
    expected = [(P, None, None, f"configuration file {P} is a symlink; ci-policy refuses symlinks in a checkout",
                 SYMLINK_HINT)]
    assert caught(load_config, tmp_path) == expected
    # Naming the same file explicitly does not bypass the check, however it is spelled.
    assert caught(load_config, tmp_path, tmp_path / P) == expected
    assert caught(load_config, tmp_path, str(tmp_path / ".github" / ".." / P)) == expected


def test_config_symlink_named_relative_to_the_current_directory(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / ".github").mkdir(parents=True)
    os.symlink("/etc/passwd", repo / P)
    monkeypatch.chdir(tmp_path)
    assert caught(load_config, Path("repo"), f"repo/{P}") == [
        (P, None, None, f"configuration file {P} is a symlink; ci-policy refuses symlinks in a checkout",
         SYMLINK_HINT)]


def test_config_through_a_symlinked_directory_is_refused(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    write(tmp_path / "elsewhere" / "ci-policy.yml", VALID)
    os.symlink(tmp_path / "elsewhere", repo / ".github")
    expected = [(P, None, None, f"configuration file {P}: directory .github is a symlink; ci-policy refuses "
                 "symlinks in a checkout", SYMLINK_HINT)]
    assert caught(load_config, repo) == expected
    assert caught(load_config, repo, repo / P) == expected


def test_config_reached_through_a_symlink_to_the_repo_is_still_checked(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".github").mkdir(parents=True)
    os.symlink("/etc/passwd", repo / P)
    os.symlink(repo, tmp_path / "alias")
    assert caught(load_config, repo, tmp_path / "alias" / P) == [
        (P, None, None, f"configuration file {P} is a symlink; ci-policy refuses symlinks in a checkout",
         SYMLINK_HINT)]


def test_config_below_a_symlink_loop_is_refused(tmp_path):
    os.symlink("loop", tmp_path / "loop")
    assert caught(load_config, tmp_path, tmp_path / "loop" / "x.yml") == [
        ("loop/x.yml", None, None, "configuration file loop/x.yml: directory loop is a symlink; ci-policy "
         "refuses symlinks in a checkout", SYMLINK_HINT)]


def test_explicit_config_inside_the_repo_is_shown_repo_relative(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    write(repo / "ci" / "policy.yml", VALID.replace("version: 1", "version: 5"))
    message = "version: unsupported version 5; this ci_policy reads version 1"
    assert caught(load_config, repo, repo / "ci" / "policy.yml") == [("ci/policy.yml", 1, 10, message, None)]
    monkeypatch.chdir(repo)
    assert caught(load_config, repo, "ci/policy.yml") == [("ci/policy.yml", 1, 10, message, None)]
    assert caught(load_config, Path("."), "ci/../ci/policy.yml") == [("ci/policy.yml", 1, 10, message, None)]


def test_explicit_config_inside_the_repo_obeys_the_size_cap(tmp_path):
    write(tmp_path / "policy.yml", padded(MAX_CONFIG_BYTES + 1))
    assert caught(load_config, tmp_path, tmp_path / "policy.yml") == [
        ("policy.yml", None, None, f"configuration file policy.yml is larger than {MAX_CONFIG_BYTES} bytes",
         "ci-policy reads checkout files as data and caps their size")]


def test_config_outside_the_repo_is_read_and_shown_as_given(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    outside = write(tmp_path / "maintainer" / "policy.yml", VALID)
    config = load_config(repo, outside)
    assert config == parse_config(VALID, str(outside))
    assert config.path == str(outside)
    write(outside, VALID + "extra: 1\n")
    monkeypatch.chdir(tmp_path)
    (error,) = caught(load_config, repo, "maintainer/policy.yml")
    assert error[:4] == ("maintainer/policy.yml", 6, 1, "extra: unknown key")


def test_config_outside_the_repo_via_dotdot(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    write(tmp_path / "policy.yml", VALID)
    given_path = str(repo / ".." / "policy.yml")
    assert load_config(repo, given_path).path == given_path


def test_missing_config_outside_the_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    missing = str(tmp_path / "nowhere.yml")
    assert caught(load_config, repo, missing) == [
        (missing, None, None, f"configuration file {missing} cannot be read: No such file or directory", None)]


def test_oversized_config_outside_the_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    big = str(write(tmp_path / "big.yml", padded(MAX_CONFIG_BYTES + 1)))
    assert caught(load_config, repo, big) == [
        (big, None, None, f"configuration file {big} is larger than {MAX_CONFIG_BYTES} bytes", None)]
    write(tmp_path / "big.yml", padded(MAX_CONFIG_BYTES))
    assert load_config(repo, big).version == 1


def test_non_utf8_config_outside_the_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    bad = str(write(tmp_path / "bad.yml", b"version: \xff\n"))
    assert caught(load_config, repo, bad) == [(bad, None, None, f"configuration file {bad} is not valid UTF-8",
                                               None)]
