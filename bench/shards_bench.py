"""Benchmark: how much shorter are the planner's shards than list scheduling, and at what cost?

Generates stages (seeded, so every run sees the same suites) of several sizes and shard
counts, in three shapes:

- uniform: est_time integers 1..3600 seconds;
- decimal: est_time with one decimal, 1.0..3600.0 seconds;
- e2e:     suites shaped like real GPU suites: a few long end-to-end tests (20..60 min)
           and many short ones (10 s..5 min).

For each (shape, files, shards) it splits every stage with the planner
(`ci_policy.plan.partition.split`) and with plain list scheduling (LPT, longest first to
the least-loaded shard), both in this run and process, and prints:

- planner/LPT:   mean makespan ratio (1.0 = no gain; never above 1.0);
- LPT/LB, planner/LB: mean ratio to the lower bound max(sum / shards, longest file);
- gap:           the planner's mean gap to the lower bound, in percent;
- optimal:       the stages proven optimal;
- time ratio:    the planner's time over LPT's time (the float list scheduling the planner
                 used before) on the same stages.

No absolute time is printed. Usage: python bench/shards_bench.py [--stages N] [--seed S]
"""

from __future__ import annotations

import argparse
import heapq
import random
import time
from fractions import Fraction

from ci_policy.plan.partition import split

SIZES = [(20, 2), (20, 4), (60, 2), (60, 4), (60, 8), (200, 8), (200, 16), (1000, 32)]


def stage(shape: str, files: int, rnd: random.Random) -> list[tuple[str, float]]:
    if shape == "uniform":
        values: list[float] = [rnd.randint(1, 3600) for _ in range(files)]
    elif shape == "decimal":
        values = [rnd.randint(10, 36000) / 10 for _ in range(files)]
    else:
        long = max(1, files // 20)
        values = [rnd.randint(1200, 3600) for _ in range(long)] + [rnd.randint(10, 300) for _ in range(files - long)]
    return [(f"tests/test_{i:04d}.py", v) for i, v in enumerate(values)]


def lpt(items: list[tuple[str, float]], shards: int) -> list[list[str]]:
    """Plain list scheduling on floats, as the planner did before: the time baseline."""
    ordered = sorted(items, key=lambda item: (-item[1], item[0]))
    count = min(shards, len(ordered))
    files: list[list[str]] = [[] for _ in range(count)]
    heap = [(0.0, i) for i in range(count)]
    for file, est in ordered:
        load, index = heapq.heappop(heap)
        files[index].append(file)
        heapq.heappush(heap, (load + est, index))
    return files


def makespan(items: list[tuple[str, float]], files: list[list[str]]) -> Fraction:
    """The longest shard, exact on the decimal values."""
    est = {file: Fraction(repr(value)) for file, value in items}
    return max(sum((est[f] for f in shard), Fraction(0)) for shard in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=10, help="stages per (shape, files, shards)")
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    rnd = random.Random(args.seed)
    header = (f"{'shape':8} {'files':>5} {'shards':>6} {'planner/LPT':>11} {'LPT/LB':>7} {'planner/LB':>10} "
              f"{'gap %':>7} {'optimal':>8} {'time ratio':>10}")
    print(header)
    gaps: list[float] = []
    for shape in ("uniform", "decimal", "e2e"):
        for files, shards in SIZES:
            stages = [stage(shape, files, rnd) for _ in range(args.stages)]
            started = time.perf_counter()
            lpt_splits = [lpt(items, shards) for items in stages]
            lpt_time = time.perf_counter() - started
            lpt_spans = [makespan(items, files) for items, files in zip(stages, lpt_splits, strict=True)]
            started = time.perf_counter()
            splits = [split(items, shards) for items in stages]
            planner_time = time.perf_counter() - started
            planner = [Fraction(repr(float(s.makespan))) for s in splits]
            bounds = [Fraction(repr(float(s.lower_bound))) for s in splits]
            assert all(p <= q for p, q in zip(planner, lpt_spans, strict=True)), "longer than LPT"
            n = len(stages)
            ratio = sum(float(p / q) for p, q in zip(planner, lpt_spans, strict=True)) / n
            lpt_lb = sum(float(q / b) for q, b in zip(lpt_spans, bounds, strict=True)) / n
            planner_lb = sum(float(p / b) for p, b in zip(planner, bounds, strict=True)) / n
            gap = (planner_lb - 1) * 100
            gaps.append(gap)
            optimal = sum(s.optimal for s in splits)
            print(f"{shape:8} {files:>5} {shards:>6} {ratio:>11.4f} {lpt_lb:>7.4f} {planner_lb:>10.4f} "
                  f"{gap:>7.3f} {optimal:>4}/{n:<3} {planner_time / lpt_time:>10.1f}")
    print(f"mean gap to the lower bound over every row: {sum(gaps) / len(gaps):.3f}%")


if __name__ == "__main__":
    main()
