"""`content_ids` outside a git work tree: SHA-256 of each file's bytes, symlinks and missing files absent."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ci_policy.adapters.git import content_ids


def test_plain_directory_gets_sha256_and_skips_symlinks_and_missing(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_bytes(b"print(1)\n")
    (tmp_path / "outside.py").write_bytes(b"secret\n")
    os.symlink(tmp_path / "outside.py", tmp_path / "tests" / "test_link.py")
    os.symlink(tmp_path / "tests", tmp_path / "linked")
    ids = content_ids(tmp_path, ["tests/test_a.py", "tests/test_link.py", "linked/test_a.py", "tests/gone.py"])
    assert ids == {"tests/test_a.py": "sha256:" + hashlib.sha256(b"print(1)\n").hexdigest()}
