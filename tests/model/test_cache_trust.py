"""The scan cache believes only what it read: two checkouts sharing one cache, one of them
lying in its own metadata (`.git/index`), and a test that writes the cache directory."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

from helpers import MAIN_BLOCK, MINIMAL_CONFIG, MINIMAL_LABELS, run_cli

TRUSTED = 'from ci_policy import register_cuda_ci\n\nregister_cuda_ci(60, "gpu-a", labels=["megatron"])\n' + MAIN_BLOCK
POISONED = TRUSTED.replace('labels=["megatron"])', 'labels=["megatron"], disabled="poisoned-by-A")')


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
                           "-c", "commit.gpgsign=false", *args], check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}).stdout


def _checkout(repo: Path, test_file: str) -> None:
    for rel, text in {".github/ci-policy.yml": MINIMAL_CONFIG, "labels.py": MINIMAL_LABELS,
                      "tests/e2e/test_a.py": test_file}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")


def _lying_checkout(repo: Path) -> None:
    """A checkout whose index names the trusted file's blob id for the poisoned bytes, with the
    poisoned file's own stat data, so that git lists it unmodified under the trusted id."""
    _checkout(repo, TRUSTED)
    trusted = _git(repo, "rev-parse", "HEAD:tests/e2e/test_a.py").strip()
    path = repo / "tests/e2e/test_a.py"
    path.write_text(POISONED)
    past = path.stat().st_mtime_ns - 10 * 10**9  # older than the index: git does not compare the bytes
    os.utime(path, ns=(past, past))
    _git(repo, "add", "tests/e2e/test_a.py")
    poisoned = _git(repo, "rev-parse", ":tests/e2e/test_a.py").strip()
    index = repo / ".git" / "index"
    body = index.read_bytes()[:-20]
    assert body.count(bytes.fromhex(poisoned)) == 1
    body = body.replace(bytes.fromhex(poisoned), bytes.fromhex(trusted))
    index.write_bytes(body + hashlib.sha1(body).digest())
    # What the attack needs: git lists the poisoned bytes as the trusted blob, unmodified.
    assert _git(repo, "ls-files", "-s", "-v", "tests/e2e/test_a.py").startswith(f"H 100644 {trusted} 0")
    assert _git(repo, "ls-files", "-m") == ""


def test_a_checkout_whose_index_lies_cannot_poison_another_sharing_the_cache(tmp_path: Path, capsys: Any) -> None:
    lying, trusted = tmp_path / "a", tmp_path / "b"
    _lying_checkout(lying)
    _checkout(trusted, TRUSTED)
    cache = ["--cache", str(tmp_path / "cache")]
    truth = run_cli(["registry", "--repo", str(trusted), "--no-cache"], capsys)
    assert truth[0] == 0 and "poisoned-by-A" not in truth[1]
    # The lying checkout's own scan is of the bytes it holds, cached or not.
    lied = run_cli(["registry", "--repo", str(lying), *cache], capsys)
    assert lied == run_cli(["registry", "--repo", str(lying), "--no-cache"], capsys)
    assert "disabled: poisoned-by-A" in lied[1]
    # The trusted checkout, warm or cold, shows its own file.
    assert run_cli(["registry", "--repo", str(trusted), *cache], capsys) == truth
    assert run_cli(["registry", "--repo", str(trusted), *cache], capsys) == truth
    # And in the other order: the trusted scan stored first is not the lying checkout's.
    assert run_cli(["registry", "--repo", str(lying), *cache], capsys) == lied
