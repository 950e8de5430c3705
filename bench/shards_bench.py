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

Then the stages of up to 60 files (the issue's "proven optimal on every stage of up to 60
files"), with three to six files a shard on 2 to 20 shards (every shard count with at most
60 files), in four shapes: est_time in whole seconds, in tenths, in hundredths (1..3600 s),
and `real` (most files on a few common values such as 60 s or 300 s, the rest in whole
seconds or tenths, and a few long files of 20..60 min). One row per (shape, files a shard),
over every shard count, prints the stages, how many were proven optimal and how many not,
the mean and the largest gap to the lower bound, and the time ratio to LPT.

Last, the slowest split of any stage above, in milliseconds of CPU time (the issue's bound:
150 ms; `plan.partition.SPLIT_BUDGET_MS`), and the slowest split of the same stages taken from a
split cache (`split(..., cache)`, a dict here; the least of three tries; the bound: 5 ms): the
absolute times printed, the rest are ratios.

Usage: python bench/shards_bench.py [--stages N] [--small-stages N]
[--small-max-files N] [--seed S] (`--small-max-files`, default 60: the largest stage of those rows;
tests/test_bench.py runs the script on the smallest inputs with 12).
"""

from __future__ import annotations

import argparse
import heapq
import random
import time
from fractions import Fraction

from ci_policy.plan.partition import SPLIT_BUDGET_MS, Split, split

SLOWEST: list[tuple[float, str]] = []  # (ms, stage) of every split timed alone

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


SMALL_SHAPES = ("seconds", "tenths", "hundredths", "real")
COMMON = [30, 60, 90, 120, 180, 300, 600, 900]


def small_stage(shape: str, files: int, rnd: random.Random) -> list[tuple[str, float]]:
    """A stage of at most 60 files for the exact rows."""
    values: list[float]
    if shape == "seconds":
        values = [rnd.randint(1, 3600) for _ in range(files)]
    elif shape == "tenths":
        values = [rnd.randint(10, 36000) / 10 for _ in range(files)]
    elif shape == "hundredths":
        values = [rnd.randint(100, 360000) / 100 for _ in range(files)]
    else:
        long = rnd.randint(0, max(1, files // 10))
        values = [rnd.randint(1200, 3600) for _ in range(long)]
        for _ in range(files - long):
            pick = rnd.random()
            if pick < 0.6:
                values.append(rnd.choice(COMMON))
            elif pick < 0.8:
                values.append(rnd.randint(5, 900))
            else:
                values.append(rnd.randint(50, 9000) / 10)
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
    parser.add_argument("--small-stages", type=int, default=3,
                        help="stages per (shape, files a shard, shards) in the rows of up to 60 files")
    parser.add_argument("--small-max-files", type=int, default=60,
                        help="the largest stage of the exact rows (at least 12: six files on two shards)")
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    if args.small_max_files < 12:
        parser.error("--small-max-files: at least 12 (every row of the exact stages needs six files on two shards)")
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
            splits, planner_time = timed([(items, shards) for items in stages], f"{shape} {files}/{shards}")
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
    small_rows(args.small_stages, args.small_max_files, random.Random(args.seed))
    ms, where = max(SLOWEST)
    print(f"slowest split: {ms:.1f} ms CPU ({where}); slowest cached split: {max(CACHED):.2f} ms "
          f"(bounds {SPLIT_BUDGET_MS} ms and 5 ms)")


class DictSplits(dict):  # type: ignore[type-arg]
    """A split cache in memory (`plan.partition.SplitCache`)."""

    def put(self, key: str, value: list[int]) -> None:
        self[key] = value

    def refuse(self, key: str) -> None:
        raise AssertionError(f"a split this run stored was refused: {key}")


CACHED: list[float] = []


def timed(stages: list[tuple[list[tuple[str, float]], int]], where: str) -> tuple[list[Split], float]:
    """Each stage's split and the time of them all; each split timed alone (SLOWEST), then again
    from a split cache holding it (CACHED)."""
    splits, total = [], 0.0
    cache = DictSplits()
    for items, count in stages:
        started, cpu = time.perf_counter(), time.process_time()
        splits.append(split(items, count, cache))
        total += time.perf_counter() - started
        SLOWEST.append(((time.process_time() - cpu) * 1000, f"{where}, {len(items)} files"))
    for (items, count), cold in zip(stages, splits, strict=True):
        spent = []
        for _ in range(3):  # the least of three: what the split costs, not what a busy machine adds
            cpu = time.process_time()
            warm = split(items, count, cache)
            spent.append((time.process_time() - cpu) * 1000)
            assert warm == cold, "a cached split differs"
        CACHED.append(min(spent))
    return splits, total


def small_rows(per_count: int, max_files: int, rnd: random.Random) -> None:
    """Stages of at most `max_files` (60) files, 3 to 6 files a shard on 2 to 20 shards: how many are
    proven optimal."""
    print()
    print(f"{'shape':10} {'files/shard':>11} {'shards':>6} {'stages':>6} {'proven':>6} {'unproven':>8} "
          f"{'gap %':>7} {'max gap %':>9} {'time ratio':>10}")
    unproven_total = stages_total = 0
    gaps: list[float] = []
    for shape in SMALL_SHAPES:
        for per_shard in (3, 4, 5, 6):
            counts = [c for c in range(2, 21) if c * per_shard <= max_files]
            stages = [(small_stage(shape, c * per_shard, rnd), c) for c in counts for _ in range(per_count)]
            started = time.perf_counter()
            lpt_splits = [lpt(items, c) for items, c in stages]
            lpt_time = time.perf_counter() - started
            splits, planner_time = timed(stages, f"{shape} {per_shard} a shard")
            for (items, _), s, files in zip(stages, splits, lpt_splits, strict=True):
                assert Fraction(repr(float(s.makespan))) <= makespan(items, files), "longer than LPT"
            row = [float(Fraction(repr(float(s.makespan))) / Fraction(repr(float(s.lower_bound))) - 1) * 100
                   for s in splits]
            proven = sum(s.optimal for s in splits)
            unproven_total += len(splits) - proven
            stages_total += len(splits)
            gaps.extend(row)
            print(f"{shape:10} {per_shard:>11} {f'{counts[0]}-{counts[-1]}':>6} {len(splits):>6} {proven:>6} "
                  f"{len(splits) - proven:>8} {sum(row) / len(row):>7.3f} {max(row):>9.3f} "
                  f"{planner_time / lpt_time:>10.1f}")
    print(f"stages of up to {max_files} files: {stages_total - unproven_total}/{stages_total} proven optimal, "
          f"{unproven_total} not; mean gap to the lower bound {sum(gaps) / len(gaps):.3f}%")


if __name__ == "__main__":
    main()
