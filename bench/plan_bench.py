"""Benchmark: how long does planning a large checkout take, relative to parsing it?

Builds a synthetic checkout (N GPU test files across stages and labels, plus a diff),
then times, in the same run and process:

- baseline: reading and `ast.parse`-ing every test file (the least any planner must do);
- lint:     `ci_policy.model.lint.lint` (configuration, labels, discovery, every registration);
- plan:     `ci_policy.plan.build.build_plan` for a pull request with a diff (snapshot included);
- plan, large diff: the same for a diff of every fifth test file and 500 source files under
            a selection rule (each changed path is classified: this row shows whether that
            stays linear);
- shards:   `ci_policy.plan.partition.partition` of all files into 8 shards.

It prints the median of several repetitions and each step's ratio to the baseline, so
results compare across machines. Usage: python bench/plan_bench.py [--files N] [--repeat R]
"""

from __future__ import annotations

import argparse
import ast
import statistics
import tempfile
import time
from pathlib import Path

from synthetic import gpu_checkout

from ci_policy.model.lint import lint
from ci_policy.model.snapshot import load_snapshot
from ci_policy.plan.build import build_plan
from ci_policy.plan.partition import partition
from ci_policy.plan.policy import Trigger
from ci_policy.read.diff import Change, Diff


def make_checkout(root: Path, n: int) -> list[str]:
    return gpu_checkout(root, n, selection=True)


def timed(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = make_checkout(root, args.files)
        diff = Diff(available=True, changes=(Change("M", ("src/megatron/core.py",)), Change("M", (files[3],))))
        large = Diff(available=True, changes=(
            *(Change("M", (f,)) for f in files[::5]),
            *(Change("M", (f"src/megatron/part_{i}.py",)) for i in range(500))))
        trigger = Trigger(event="pull_request", labels=("run-ci-fsdp",))

        def baseline():
            for rel in files:
                ast.parse((root / rel).read_text())

        snapshot = load_snapshot(root)
        items = [(r.file, r.est_time) for r in snapshot.registrations]
        steps = {
            "baseline (read + ast.parse)": baseline,
            "lint": lambda: lint(root),
            "plan (snapshot + plan)": lambda: build_plan(load_snapshot(root), trigger, diff),
            "plan, large diff": lambda: build_plan(load_snapshot(root), trigger, large),
            "shards (partition only)": lambda: partition(items, 8),
        }
        results = {name: timed(fn, args.repeat) for name, fn in steps.items()}
    base = results["baseline (read + ast.parse)"]
    print(f"{args.files} test files, median of {args.repeat} runs")
    print(f"{'step':32} {'seconds':>9} {'x baseline':>11}")
    for name, seconds in results.items():
        print(f"{name:32} {seconds:9.4f} {seconds / base:11.2f}")


if __name__ == "__main__":
    main()
