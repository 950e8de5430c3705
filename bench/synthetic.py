"""Generated checkouts the benchmarks share: GPU test files across stages and labels.

- `gpu_checkout(root, n)`: a configuration of three accelerator stages, a label registry,
  and `n` test files each registering one stage with an est_time and a label, with twenty
  small test functions each (so a parse costs what a real test file's does).
- `git_commit(root)`: makes the checkout a git work tree with one commit, as a CI checkout is
  (content ids then come from git), without reading the user's git configuration.
- `compile_bytecode()`: writes the bytecode of ci_policy's modules (as `pip install` of a wheel
  does), so a timed process loads it instead of compiling every module it imports: an editable
  install run with `PYTHONDONTWRITEBYTECODE` set never writes it, and each `ci-policy` process
  then spends about 120 ms compiling, which no bare loop (the standard library's bytecode is
  installed) pays.
"""

from __future__ import annotations

import compileall
import os
import subprocess
from pathlib import Path

import ci_policy

LABELS = ["megatron", "fsdp", "sglang", "session", "rocm", "long"]
STAGES = [("stage-b", "cuda", 4), ("stage-c", "cuda", 8), ("stage-r", "rocm", 4)]
SELECTION = ("selection:\n  no_gpu_paths: ['docs/**']\n"
             "  rules:\n    - {paths: ['src/megatron/**'], labels: [megatron]}\n")


def gpu_checkout(root: Path, n: int, *, groups: int = 37, selection: bool = False) -> list[str]:
    """Writes the checkout; returns its test files (repo-relative)."""
    (root / ".github").mkdir(parents=True)
    known = ", ".join(f'"{name}": "{name} tests"' for name in LABELS)
    (root / "labels.py").write_text("KNOWN_LABELS = {" + known + "}\n")
    stages = "\n".join(f"  - {{name: {name}, backend: {backend}, runs_on: [gpu], partitions: {parts}}}"
                       for name, backend, parts in STAGES)
    (root / ".github" / "ci-policy.yml").write_text(
        "version: 1\ndiscovery: {roots: [tests]}\nstages:\n" + stages + "\n" + (SELECTION if selection else ""))
    body = "\n".join(f"def test_{j}():\n    assert {j} + 1 == {j + 1}\n" for j in range(20))
    files = []
    for i in range(n):
        name, backend, _ = STAGES[i % len(STAGES)]
        marker = "register_rocm_ci" if backend == "rocm" else "register_cuda_ci"
        rel = f"tests/e2e/group{i % groups}/test_case_{i}.py"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Synthetic e2e test {i}."""\nfrom ci_policy import {marker}\n\n'
                        f'{marker}(est_time={60 + (i * 37) % 900}, suite="{name}", '
                        f'labels=["{LABELS[i % len(LABELS)]}"])\n\nimport unittest\n\n{body}\n'
                        'if __name__ == "__main__":\n    unittest.main()\n')
        files.append(rel)
    return files


def git_commit(root: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
                                                 "-c", "commit.gpgsign=false", "commit", "-q", "-m", "bench"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env, stdin=subprocess.DEVNULL)


def compile_bytecode() -> None:
    compileall.compile_dir(Path(ci_policy.__file__).parent, quiet=1)
