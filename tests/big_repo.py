"""A generated repository of many test files, the same for the same size and seed.

Basenames repeat across directories (`srt/test_server.py`, `rl/test_server.py`, ...), as
in a real repository; most files are short and a few are long, so each shard holds a
few long files and many short ones. Three stages: 8 CUDA shards, 4 ROCm, 2 CPU.
"""

from __future__ import annotations

import random
from pathlib import Path

from ci_policy.model.snapshot import load_snapshot
from ci_policy.plan.build import Plan, build_plan
from ci_policy.plan.policy import Trigger
from ci_policy.read.diff import Diff

AREAS = ["srt", "rl", "serving", "lora", "models", "ops", "dist", "quant"]
SUBS = ["unit", "e2e", "sched", "cache", "kernels", "spec", "router", "moe", "vision", "io"]
NAMES = ["server", "engine", "sampler", "attention", "scheduler", "tokenizer", "radix_cache", "eagle",
         "fused_moe", "rope", "layernorm", "gemm", "all_reduce", "pipeline", "checkpoint", "reward",
         "rollout", "grpo", "ppo", "dpo", "sft", "kl", "advantages", "session", "openai_api", "metrics",
         "streaming", "batching", "quantize", "lora_adapter"]
STAGES = [("gpu-h200", "cuda", "register_cuda_ci", 8), ("gpu-mi350", "rocm", "register_rocm_ci", 4),
          ("cpu", "cpu", "register_cpu_ci", 2)]
CONFIG = "version: 1\ndiscovery: {roots: [tests]}\nstages:\n" + "".join(
    f"  - {{name: {name}, backend: {backend}, runs_on: [{name}], partitions: {parts}}}\n"
    for name, backend, _, parts in STAGES)


def big_files(n: int, seed: int = 16) -> list[tuple[str, str, int]]:
    """(path, stage, est_time) of n files: four in five take 1 to 30 s, the rest 2 to 40 min."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        area, sub = AREAS[i % len(AREAS)], SUBS[(i // len(AREAS)) % len(SUBS)]
        rounds, name = divmod(i // (len(AREAS) * len(SUBS)), len(NAMES))
        stem = NAMES[name] + (f"_{rounds}" if rounds else "")
        est = rng.randint(1, 30) if rng.random() < 0.8 else rng.randint(120, 2400)
        out.append((f"tests/{area}/{sub}/test_{stem}.py", STAGES[rng.randrange(len(STAGES))][0], est))
    return out


def write_big_repo(root: Path, n: int, seed: int = 16) -> Path:
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "ci-policy.yml").write_text(CONFIG)
    (root / "labels.py").write_text('KNOWN_LABELS = {"big": "the generated tests"}\n')
    marker = {name: m for name, _, m, _ in STAGES}
    for path, stage, est in big_files(n, seed):
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        call = f"{marker[stage]}({est}, {stage!r}, labels=['big'])"
        target.write_text(f"from ci_policy import {marker[stage]}\n\n{call}\n\n"
                          'if __name__ == "__main__":\n    main()\n')
    return root


def big_plan(root: Path, n: int, seed: int = 16) -> Plan:
    """The plan of a pull request labelled run-ci-big, without a diff: every stage runs."""
    repo = write_big_repo(root, n, seed)
    trigger = Trigger(event="pull_request", labels=("run-ci-big",))
    return build_plan(load_snapshot(repo), trigger, Diff.unavailable("no --diff or --base was given"))
