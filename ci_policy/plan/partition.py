"""Shards: splitting one stage's selected files across its runners by est_time.

- In: (file, est_time) pairs and the stage's `partitions`.
- Out: `min(partitions, len(files))` non-empty `Shard`s (none at all for no files),
  built by longest-processing-time list scheduling: files longest first (ties by file
  name), each to the least-loaded shard (ties by lowest index). Deterministic, so the
  plan job and every shard job compute exactly the same split.
- Bound (list scheduling): the most loaded shard carries at most
  `sum/shards + max(est_time)`.
- `partitions: auto` (`stage_shards`): `clamp(ceil(sum / shard_seconds), 1, max_partitions)`
  shards for the selected files (disabled files are never selected, so they never count),
  then at most one per file; the count comes with its reason
  (`3 shards: 1730s selected / 600s per shard`). The division is exact on the decimal
  values (a sum of 1200s with 600s per shard is 2 shards, never 3 by rounding).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from ci_policy.config import Stage


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


def auto_count(total: float, shard_seconds: float, max_partitions: int | None = None) -> int:
    """`clamp(ceil(total / shard_seconds), 1, max_partitions)`, exact on the decimal values."""
    if shard_seconds <= 0:
        raise ValueError(f"shard_seconds must be > 0, got {shard_seconds}")
    raw = math.ceil(Fraction(repr(_tidy(total))) / Fraction(repr(shard_seconds)))
    count = max(raw, 1)
    return count if max_partitions is None else min(count, max_partitions)


def _seconds(value: float) -> str:
    """Every digit of a sum or a configured value (`:g` would print 1234567 as 1.23457e+06)."""
    return repr(_tidy(value))


def _shards_word(n: int) -> str:
    return f"{n} shard" + ("" if n == 1 else "s")


def stage_shards(stage: Stage, items: Iterable[tuple[str, float]]) -> tuple[tuple[Shard, ...], str | None]:
    """A stage's shards of the selected (file, est_time) pairs, and why that many when `partitions: auto`.

    A fixed `partitions` needs no reason (the configuration states it): the reason is None.
    """
    items = list(items)
    if stage.partitions != "auto":
        return partition(items, stage.partitions), None
    if stage.shard_seconds is None:
        raise ValueError(f"stage {stage.name}: partitions: auto needs shard_seconds")
    total = _tidy(math.fsum(est for _, est in items))
    raw = math.ceil(Fraction(repr(total)) / Fraction(repr(stage.shard_seconds)))
    count = auto_count(total, stage.shard_seconds, stage.max_partitions)
    shards = partition(items, count)
    if not shards:
        return shards, None
    reason = f"{_shards_word(len(shards))}: {_seconds(total)}s selected / {_seconds(stage.shard_seconds)}s per shard"
    if raw < 1:
        reason += " (at least 1)"
    elif count < raw:
        reason += f" = {raw}, capped by max_partitions {stage.max_partitions}"
    elif len(shards) < count:
        reason += f" = {count}, but only {len(items)} selected " + ("file" if len(items) == 1 else "files")
    return shards, reason
