"""`TimingsWriter` (ci_policy/adapters/runner/timings.py): the timing file holds exactly what the
runner wrote (and what was there before it), whatever a test did to it in between.

Finding 4 of issue 14: a PR's test appended 150 forged records to the timing file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ci_policy.adapters.runner.timings import TimingsWriter, default_timings_path
from ci_policy.model.registry import Registration
from ci_policy.plan.results import Attempt

REG = Registration(file="tests/gpu/test_a.py", line=3, backend="cuda", suite="gpu", est_time=5)
BEFORE = b'{"an": "earlier run"}\n'


def attempt(n: int) -> Attempt:
    return Attempt(attempt=n, status="pass", elapsed=1.5, started_at="2026-12-01T00:00:00Z", returncode=0)


def attempts_in(path: Path) -> list:
    return [json.loads(line).get("attempt") for line in path.read_bytes().splitlines()]


def forge_append(path: Path) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"schema": 1, "file": "tests/gpu/test_a.py", "attempt": 9}\n' * 150)


def forge_edit_in_place(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"elapsed": 1.5', b'"elapsed": 9.5'))  # the same size


def forge_replace(path: Path) -> None:
    tmp = path.with_name("forged")
    tmp.write_text('{"attempt": 9}\n', encoding="utf-8")
    os.replace(tmp, path)


def forge_symlink(path: Path) -> None:
    target = path.with_name("elsewhere")
    target.write_text('{"attempt": 9}\n', encoding="utf-8")
    path.unlink()
    path.symlink_to(target)


def forge_delete(path: Path) -> None:
    path.unlink()


@pytest.mark.parametrize("forge", [forge_append, forge_edit_in_place, forge_replace, forge_symlink, forge_delete])
def test_whatever_a_test_did_to_the_file_is_undone_before_the_next_record(tmp_path, forge):
    path = tmp_path / "t.jsonl"
    path.write_bytes(BEFORE)
    writer = TimingsWriter(path, "gpu", 0)
    writer.write(REG, attempt(1))
    forge(path)
    writer.write(REG, attempt(2))
    assert writer.close() is True
    assert writer.restored == 1
    assert not path.is_symlink()
    assert path.read_bytes().startswith(BEFORE)
    assert attempts_in(path) == [None, 1, 2]
    assert json.loads(path.read_bytes().splitlines()[1])["elapsed"] == 1.5


@pytest.mark.parametrize("forge", [forge_append, forge_replace, forge_delete])
def test_what_the_last_test_did_is_undone_on_close(tmp_path, forge):
    path = tmp_path / "t.jsonl"
    writer = TimingsWriter(path, "gpu", 0)
    writer.write(REG, attempt(1))
    forge(path)
    assert writer.close() is False
    assert (writer.restored, attempts_in(path)) == (1, [1])


def test_an_untouched_file_is_only_appended_to(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(BEFORE)
    writer = TimingsWriter(path, "gpu", 0)
    inode = path.stat().st_ino
    writer.write(REG, attempt(1))
    assert writer.close() is True
    assert (writer.restored, path.stat().st_ino, attempts_in(path)) == (0, inode, [None, 1])


def test_a_timing_file_that_is_a_symlink_at_start_is_replaced_not_followed(tmp_path):
    target = tmp_path / "target"
    target.write_text("not ours\n", encoding="utf-8")
    path = tmp_path / "t.jsonl"
    path.symlink_to(target)
    writer = TimingsWriter(path, "gpu", 0)
    writer.write(REG, attempt(1))
    writer.close()
    assert (path.is_symlink(), target.read_text(encoding="utf-8"), attempts_in(path)) == (False, "not ours\n", [1])


def test_the_default_path_is_never_in_the_checkout(tmp_path, monkeypatch):
    monkeypatch.delenv("RUNNER_TEMP", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_timings_path(tmp_path / "repo") == tmp_path / "cache" / "ci-policy" / "timings.jsonl"
    monkeypatch.setenv("RUNNER_TEMP", str(tmp_path / "rt"))
    assert default_timings_path(tmp_path / "repo") == tmp_path / "rt" / "ci-policy-timings.jsonl"
