"""The suite's own conventions: which tests the `slow` marker selects (see conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def collected(marker: str, *paths: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
                           "-m", marker, *paths], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {line for line in proc.stdout.splitlines() if "::" in line}


def test_property_and_postgresql_tests_are_slow_and_nothing_else_is():
    paths = ("tests/read/test_labels.py", "tests/adapters/store/test_base.py")
    slow = collected("slow", *paths)
    fast = collected("not slow", *paths)
    assert "tests/read/test_labels.py::test_any_valid_registry_round_trips" in slow  # hypothesis
    assert "tests/adapters/store/test_base.py::test_parallel_processes_lose_nothing[postgresql]" in slow
    assert "tests/adapters/store/test_base.py::test_parallel_processes_lose_nothing[sqlite]" in fast
    assert not slow & fast
    assert all("postgresql" not in test for test in fast)
