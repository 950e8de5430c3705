"""Fixtures of the command-line tests: a checkout with one problem of each kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli.expected import IMPORT, MAIN, write_repo


@pytest.fixture
def broken_repo(tmp_path) -> Path:
    return write_repo(tmp_path / "repo", {
        "tests/e2e/test_bad_label.py":
            IMPORT + 'register_cuda_ci(est_time=60, suite="gpu-a", labels=["megatrn"])\n' + MAIN,
        "tests/e2e/test_bad_suite.py": IMPORT + 'register_cuda_ci(60, "gpu-x", labels=["fsdp"])\n' + MAIN,
        "tests/e2e/test_no_main.py": IMPORT + 'register_cuda_ci(60, "gpu-b", labels=["long"])\n',
        "tests/e2e/test_unregistered.py": "x = 1\n",
        "tests/unit/test_ok.py": "def test_ok():\n    assert True\n",
    })
