"""Shards: splitting one stage's selected files across its runners by est_time.

- In: (file, est_time) pairs and the stage's `partitions`.
- Out: `min(partitions, len(files))` non-empty `Shard`s (none at all for no files),
  built by longest-processing-time list scheduling: files longest first (ties by file
  name), each to the least-loaded shard (ties by lowest index). Deterministic, so the
  plan job and every shard job compute exactly the same split.
- Bound (list scheduling): the most loaded shard carries at most
  `sum/shards + max(est_time)`.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Shard:
    index: int
    est_seconds: float
    files: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {"index": self.index, "est_seconds": self.est_seconds, "files": list(self.files)}


def partition(items: Iterable[tuple[str, float]], partitions: int) -> tuple[Shard, ...]:
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    ordered = sorted(items, key=lambda item: (-item[1], item[0]))
    count = min(partitions, len(ordered))
    if count == 0:
        return ()
    # The `count` longest files seed one shard each (what list scheduling does anyway when
    # every est_time is positive); with est_time 0 the least-loaded shard would otherwise
    # stay shard 0 and the others would be empty.
    files: list[list[str]] = [[file] for file, _ in ordered[:count]]
    loads = [0.0 + est for _, est in ordered[:count]]
    heap = [(loads[index], index) for index in range(count)]
    heapq.heapify(heap)
    for file, est in ordered[count:]:
        load, index = heapq.heappop(heap)
        files[index].append(file)
        loads[index] = load + est
        heapq.heappush(heap, (loads[index], index))
    return tuple(Shard(index=i, est_seconds=_tidy(loads[i]), files=tuple(files[i])) for i in range(count))


def _tidy(value: float) -> float:
    """Integral sums print as integers (300, not 300.0)."""
    return int(value) if float(value).is_integer() else round(value, 3)


def makespan(shards: Iterable[Shard]) -> float:
    return max((s.est_seconds for s in shards), default=0)


def imbalance(shards: tuple[Shard, ...]) -> float:
    """max/mean shard time; 1.0 is perfectly balanced."""
    if not shards:
        return 1.0
    mean = sum(s.est_seconds for s in shards) / len(shards)
    return makespan(shards) / mean if mean else 1.0
