"""Generated checkouts the benchmarks share: GPU test files across stages and labels.

- `gpu_checkout(root, n)`: a configuration of three accelerator stages, a label registry,
  and `n` test files each registering one stage with an est_time and a label, with twenty
  small test functions each (so a parse costs what a real test file's does).
- `git_commit(root)`: makes the checkout a git work tree with one commit, as a CI checkout is
  (content ids then come from git), without reading the user's git configuration.
- `miles_checkout(root, n)`: a checkout shaped like radixark/miles's: `n` (382 there) e2e test
  files under `tests/e2e/<area>/`, each registering a CUDA stage (and a third of them a ROCm
  one too) with miles's marker dialect and a domain label, in the stages and label file miles
  has, with the body miles's e2e tests have (a `prepare` and an `execute` building long
  argument strings from literals and f-strings, a `__main__` block). Sizes are spread evenly
  from 0.4 to 6 KB (3.2 KB on average): five of miles's e2e files read 0.4, 2.2, 3.2, 3.4 and
  4.8 KB, against the 1 KB of `gpu_checkout`'s, so a parse weighs there what it weighs in miles.
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


MILES_AREAS = ["ckpt", "fsdp", "megatron", "sglang", "ft", "deploy", "agentic", "lora", "rl", "short", "long",
               "vlm", "session_server", "r3"]
MILES_CUDA = ["stage-b-2-gpu-h200", "stage-c-2-gpu-h200", "stage-c-4-gpu-h200", "stage-c-8-gpu-h100",
              "stage-c-8-gpu-h200"]
MILES_ROCM = ["stage-c-4-gpu-mi350"]
MILES_CONFIG = """\
version: 1
labels_file: tests/ci/labels.py
discovery: {roots: [tests/e2e], pattern: "test_*.py"}
gpu_requires_labels: true
stages:
%s
selection:
  no_gpu_paths: ["docs/**", "**/*.md"]
  rules:
    - {paths: ["miles/backends/megatron_utils/**"], labels: [megatron]}
    - {paths: ["miles/backends/fsdp_utils/**"], labels: [fsdp]}
"""


def miles_checkout(root: Path, n: int = 382) -> list[str]:
    """Writes a checkout shaped like radixark/miles's (see the module doc); returns its test files."""
    (root / ".github").mkdir(parents=True)
    (root / "tests" / "ci").mkdir(parents=True)
    (root / "tests" / "ci" / "labels.py").write_text(
        "KNOWN_LABELS = {" + ", ".join(f'"{a}": "{a} tests"' for a in MILES_AREAS) + "}\n")
    parts = {"stage-c-4-gpu-h200": 3, "stage-c-8-gpu-h200": 2, "stage-c-4-gpu-mi350": 2}
    stages = "\n".join(f"  - {{name: {name}, backend: {'rocm' if name in MILES_ROCM else 'cuda'}, "
                       f"runs_on: [{name.rsplit('-', 1)[1]}], partitions: {parts.get(name, 1)}}}"
                       for name in MILES_CUDA + MILES_ROCM)
    (root / ".github" / "ci-policy.yml").write_text(MILES_CONFIG % stages)
    files = []
    for i in range(n):
        area = MILES_AREAS[i % len(MILES_AREAS)]
        rel = f"tests/e2e/{area}/test_{area}_case_{i}.py"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_miles_test(i, area, 400 + (i * 2654435761) % 5600))
        files.append(rel)
    return files


def _miles_test(i: int, area: str, size: int) -> str:
    """One e2e test file of about `size` bytes, in miles's dialect and shape."""
    markers = "register_cuda_ci, register_rocm_ci" if i % 3 == 0 else "register_cuda_ci"
    head = (f"import os\n\nfrom tests.ci.ci_register import {markers}\n\n"
            f"import miles.utils.external_utils.command_utils as U\n\n"
            f'register_cuda_ci(est_time={120 + (i * 37) % 1800}, suite="{MILES_CUDA[i % len(MILES_CUDA)]}", '
            f'labels=["{area}"])\n')
    if i % 3 == 0:
        head += f'register_rocm_ci(est_time={100 + (i * 53) % 1500}, suite="{MILES_ROCM[0]}", labels=["{area}"])\n'
    head += (f'\nMODEL_NAME = "Qwen3-{i % 8}B"\nNUM_GPUS = {2 ** (i % 4)}\n\n\n'
             "def prepare():\n"
             '    U.exec_command_cpu("mkdir -p /root/models /root/datasets")\n'
             '    U.exec_command_cpu(f"hf download Qwen/{MODEL_NAME} --local-dir /root/models/{MODEL_NAME}")\n'
             '    U.hf_download_dataset("zhuzilin/dapo-math-17k")\n\n\n'
             "def execute(mode: str = \"\"):\n")
    tail = ('    U.execute_train(train_args=train_args, num_gpus_per_node=NUM_GPUS, extra_env_vars={"CI": "1"})\n'
            '\n\nif __name__ == "__main__":\n    prepare()\n    execute()\n')
    blocks, body, k = [], 0, 0
    while len(head) + body + len(tail) < size or not blocks:
        lines = "".join(f'        "--option-{k}-{j} {j * 7 % 97} "\n' for j in range(6))
        block = f"    args_{k} = (\n{lines}        f\"--actor-num-gpus-per-node {{NUM_GPUS}} \"\n    )\n"
        if k % 3 == 2:
            block += f'    if mode == "save":\n        args_{k} += f"--save /root/models/{{MODEL_NAME}}_{k} "\n'
        blocks.append(block)
        body += len(block)
        k += 1
    joined = " ".join(f"{{args_{j}}}" for j in range(k))
    return head + "".join(blocks) + f'    train_args = f"{joined}"\n' + tail


def git_commit(root: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
                                                 "-c", "commit.gpgsign=false", "commit", "-q", "-m", "bench"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env, stdin=subprocess.DEVNULL)


def compile_bytecode() -> None:
    compileall.compile_dir(Path(ci_policy.__file__).parent, quiet=1)
