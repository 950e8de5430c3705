"""Files written whole (ci_policy/adapters/files.py)."""

from __future__ import annotations

import os
import stat

import pytest

from ci_policy.adapters.files import write_atomically


def test_the_bytes_and_mode_are_written_and_no_temporary_file_is_left(tmp_path) -> None:
    path = tmp_path / "plan.json"
    path.write_text("old")
    write_atomically(path, b"new\n", 0o644)
    assert path.read_bytes() == b"new\n" and stat.S_IMODE(path.stat().st_mode) == 0o644
    assert os.listdir(tmp_path) == ["plan.json"]


def test_a_symlink_at_the_path_is_replaced_never_written_through(tmp_path) -> None:
    """The bytes go to a new temporary file (mkstemp: O_EXCL, never an existing name) renamed over
    the path: a symlink planted at the path is replaced by the file, its target left untouched."""
    target = tmp_path / "target"
    target.write_text("untouched")
    (tmp_path / "plan.json").symlink_to(target)
    write_atomically(tmp_path / "plan.json", b"{}", 0o600)
    assert target.read_text() == "untouched" and (tmp_path / "plan.json").read_bytes() == b"{}"
    assert not (tmp_path / "plan.json").is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["plan.json", "target"]


def test_a_failed_write_removes_its_temporary_file(tmp_path) -> None:
    path = tmp_path / "plan.json"
    path.mkdir()
    (path / "inside").write_text("")  # a non-empty directory cannot be replaced by a file
    with pytest.raises(OSError):
        write_atomically(path, b"{}", 0o644)
    assert os.listdir(tmp_path) == ["plan.json"]


def test_a_long_name_keeps_its_temporary_name_short(tmp_path) -> None:
    path = tmp_path / ("p" * 250)
    write_atomically(path, b"x", 0o644)
    assert path.read_bytes() == b"x" and os.listdir(tmp_path) == [path.name]
