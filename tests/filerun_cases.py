"""What the file-run tests of the core (tests/plan) and of the command line (tests/cli) share."""

from __future__ import annotations

from pathlib import Path

BAD_TAG = "is not a valid image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})"


def gpu_test(register: str) -> str:
    return (f"from ci_policy import *\n\n{register}\n\nimport unittest\n\n"
            'if __name__ == "__main__":\n    unittest.main()\n')


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
