"""Shards: splitting one stage's selected files across its runners by est_time.

- In: (file, est_time) pairs and the stage's `partitions`.
- Out: a `Split`: `min(partitions, len(files))` non-empty `Shard`s (none at all for no
  files) with the longest shard's est (`makespan`), the `lower_bound`
  `max(sum / shards, longest file)` and whether the split is proven `optimal`.
- How: est values in units of their greatest common divisor (every load is a whole number
  of units); files longest first (ties by file name); list scheduling (LPT: each file to the
  least-loaded shard, ties by lowest index) gives the first split; pairs of shards are
  then re-split as evenly as possible (`_local_search`: exact subset sums, listed for each half
  of the pair's files when that is cheaper than a bit per unit of load, as it is for small
  pairs and for est values in tenths or hundredths of a second; the pair re-splits stop
  once the makespan is at the lower bound); when that is not
  at a lower bound, the largest differencing method (Karmarkar-Karp for `shards` shards,
  `_differencing`) gives a second start, re-split by pairs too, kept when shorter. If that
  is not at a lower bound (`max(ceil(sum / shards), longest file)`, the pigeonhole bound on
  the longest files, the bin-packing bound L2 and, for stages of at most `APART_BOUND_FILES`
  files, the first three bounds on the files that cannot share a shard with the longest
  ones, which must fit in the shards left beside those; then a capacity is ruled out when
  too few files are not multiples of some small divisor that it is not: each other shard
  falls short of it by the remainder), an exact search looks for the shortest
  split: the makespan is tried at the lower bound, then just below the shortest split
  found (each split found is re-split by pairs first), again after each shorter split,
  each try deciding "do the files fit in `shards` shards of this capacity?" by bin
  completion (`_fits`: each shard gets the longest file left and one way to fill it up;
  only ways no file left out would fit in, none where a file left out could take the
  place of a shorter one, or of two, three or four (or of all its other files) at most as
  long together (dominance), within the room the other shards can still waste; when that
  room is tight, the ways are tried by how much they fill, most first (a partial way must
  leave room that a subset sum of the files after it fills), and the room that files
  longer than half a shard must leave unused (each filled at best by a subset sum of the
  shorter files) must fit in it; a way that holds a way tried before for an earlier shard,
  which failed, is not tried (nogoods); the last two shards by subset sums at once; the
  multisets of est values left that do not fit are remembered).
- Size bound: the exact search runs for stages of at most `SEARCH_DEPTH` files and shards
  (files + 2 x shards; it recurses once per file placed); a larger stage keeps the split
  list scheduling, pair re-splits and differencing found.
- Time bound: a stage's split is meant to take at most `SPLIT_BUDGET_MS` (150 ms of CPU time),
  the exact search `SEARCH_BUDGET_MS` (110 ms) of it: each search stops after a counted amount
  of work (`SEARCH_BUDGET`, the exact search's milliseconds at the slowest rate measured,
  `SEARCH_UNITS_PER_MS`; `LOCAL_SEARCH_BUDGET`; the pair re-splits of the splits the exact
  search finds share `POLISH_BUDGET`, a quarter of the latter). Only
  capacities that are sums of est values are tried (when those sums cost little to list):
  the try below a split is at the largest such sum under its makespan. Every try may spend
  all the work left, but the one at the lower bound leaves `1 / BOUND_RESERVE` of it: out
  of work there, the tries go on below the split found; another try out of work ends the
  search, which returns the shortest split it found (a split that fits just below the
  shortest found is usually quick to find, ruling one out is what costs: the tries go down
  from the top so that the one ruling out is the one that proves the split optimal, and
  multisets of est values that did not fit at a capacity are known not to fit at the lower
  ones). Work is counted, never timed, so every machine and Python version computes the
  same split, and the plan job and every shard job agree.
- Guarantees: never longer than LPT (LPT is kept when nothing is strictly shorter, so a
  stage LPT already splits optimally keeps LPT's split); deterministic, also under any
  order of the input; never an empty shard. Within a shard files come longest first (ties
  by name); shards are numbered by their longest file in that order.
- `optimal` is True when the makespan equals a lower bound or the exact search ruled out
  every shorter split within its budget. Stages whose shards hold three to five files each,
  with est values of 12 bits or more (whole seconds up to an hour, or finer), are often not
  settled: for such sizes splits into equal shards are rare, and ruling out every shorter
  split takes an exhaustive search (`optimal` false, the split usually within 0.5% of the
  lower bound).
- Cached (`cache`, a `SplitCache` an adapter passes in): the split of the same files with the
  same est values into the same number of shards by the same partitioner (`split_key`) is
  taken from the cache instead of being computed again, once checked (`_stored_split`): a
  split of exactly those files into that many non-empty shards, never longer than LPT (LPT's
  own split when not strictly shorter, as computed), proven whenever at the lower bound.
  Anything else is refused (`SplitCache.refuse`) and the split computed and stored again. A
  stored split passing the checks is taken as it is: one forged by someone able to write the
  cache is a valid split no longer than LPT, its `optimal` as stored.
- Exact: est values are decimals; they are scaled to integers (`Fraction` of their
  decimal form), so comparisons never suffer float rounding.
- `partitions: auto` (`stage_shards`): `clamp(ceil(sum / shard_seconds), 1, max_partitions)`
  shards for the selected files (disabled files are never selected, so they never count),
  then at most one per file; the count comes with its reason
  (`3 shards: 1730s selected / 600s per shard`). The division is exact on the decimal
  values (a sum of 1200s with 600s per shard is 2 shards, never 3 by rounding).
- Refused: `partitions < 1` (ValueError).
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import heapq
import json
import math
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Protocol

from ci_policy.errors import CiPolicyError
from ci_policy.read.declare import document, spec
from ci_policy.read.numbers import MAX_EST_TIME

if TYPE_CHECKING:
    from ci_policy.config.stages import Stage

# A stage's split takes at most SPLIT_BUDGET_MS of CPU time (bench/shards_bench.py prints the
# slowest stage's), the exact search SEARCH_BUDGET_MS of it. The budgets are counted work, never
# timed: a wall-clock limit would let a slow runner compute another split than the plan job, and
# a plan must be the same on every machine. SEARCH_UNITS_PER_MS is the slowest rate measured
# (units per ms of CPU time, two shared cores, CPython 3.11: the stages of bench/shards_bench.py
# that spend the whole budget do 470 to 900 a ms, 900 the median), so the search stays within
# its share on such a machine; a faster one finishes sooner with the same split.
# Exact search: a unit is one partial filling of a shard looked at, eight files looked at for a
# complete one, one file added to (or turned into bytes from) subset sums of 8192 bits, 64 sums
# looked at for a tight shard, or 16 nogoods checked. Local search: a unit is about one 64-bit
# word of subset-sum work, or one subset sum listed or looked up (a move or swap looked at costs 80).
SPLIT_BUDGET_MS = 150
SEARCH_BUDGET_MS = 110
SEARCH_UNITS_PER_MS = 470
SEARCH_BUDGET = SEARCH_BUDGET_MS * SEARCH_UNITS_PER_MS
LOCAL_SEARCH_BUDGET = 3_000_000
# The pair re-splits of the splits the exact search finds, all of them together (local search
# units): a quarter proves as many benchmark stages as the whole budget does.
POLISH_BUDGET = LOCAL_SEARCH_BUDGET // 4
# The try at the lower bound leaves 1 / BOUND_RESERVE of SEARCH_BUDGET to the tries below the split
# found: a stage none is found for at the bound still gets a shorter split.
BOUND_RESERVE = 32
# A try is tight when the room left to waste is at most this many est units a shard: then
# the long files' waste is bounded by subset sums, a partial filling of a shard must leave a
# room that a subset sum of the files after it fills (else only their sum is checked), and
# the fillings of a shard are tried by how much they fill, most first (else longest files first).
TIGHT_WASTE = 4
# The partitioner's version, part of every `split_key` with the budgets: raised whenever a change
# here can change a split, so that no split stored by another version is taken.
SPLIT_VERSION = 2
# Subset sums are kept as the bits of an integer for shards of at most this many units
# (est values scaled to integers); beyond it the search does without them.
BITSET_LIMIT = 1 << 24


@document
class Shard:
    # As a plan file records it (`plan.document`): numbered from 0, at most a million files of the longest est.
    index: int = spec(minimum=0)
    est_seconds: float = spec(minimum=0, maximum=MAX_EST_TIME * 10**6)
    files: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {"index": self.index, "est_seconds": self.est_seconds, "files": list(self.files)}


@dataclass(frozen=True)
class Split:
    """A stage's shards with the longest shard's est, the lower bound and whether it is proven optimal."""

    shards: tuple[Shard, ...]
    makespan: float
    lower_bound: float
    optimal: bool


class SplitCache(Protocol):
    """Splits computed before, by `split_key` (an adapter's store; the core never trusts it).

    `get` returns the stored value or None; `put` stores a split computed here; `refuse` is told
    of a stored value `split` would not take (damaged, forged or of another partitioner)."""

    def get(self, key: str) -> object: ...

    def put(self, key: str, value: list[int]) -> None: ...

    def refuse(self, key: str) -> None: ...


def partition(items: Iterable[tuple[str, float]], partitions: int) -> tuple[Shard, ...]:
    return split(items, partitions).shards


def split_key(exact: Sequence[tuple[str, int]], scale: Fraction, count: int) -> str:
    """What a split depends on, hashed: the files longest first with their est in units, the
    unit (`scale`), the shard count and the partitioner (`SPLIT_VERSION` and its budgets)."""
    text = json.dumps([SPLIT_VERSION, SEARCH_BUDGET, LOCAL_SEARCH_BUDGET, POLISH_BUDGET, BOUND_RESERVE, count,
                       scale.numerator, scale.denominator, exact], separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _stored_split(value: object, weights: Sequence[int], count: int, lpt_best: int,
                  ) -> tuple[list[int], int, bool] | None:
    """A stored `[proven, shard of each file...]` checked against the files it is for, or None.

    Taken only when it is a split of exactly these files into `count` non-empty shards, never
    longer than LPT (`lpt_best`), and its `proven` is 1 whenever its makespan is at the lower
    bound (as `split` computes it). A stored 1 above the bound cannot be checked without the
    search it saves: the split is checked, its `proven` is taken as stored."""
    n = len(weights)
    if type(value) is not list or len(value) != n + 1 or value[0] not in (0, 1) or type(value[0]) is not int:
        return None
    assign = value[1:]
    if not all(type(shard) is int and 0 <= shard < count for shard in assign) or len(set(assign)) != count:
        return None
    best = _makespan(weights, assign, count)
    if best > lpt_best or (not value[0] and best <= _lower_bound(weights, count)):
        return None
    return assign, best, bool(value[0])


def split(items: Iterable[tuple[str, float]], partitions: int, cache: SplitCache | None = None) -> Split:
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    # A whole est_time (the usual kind) is its own numerator, without a call of `_exact`.
    values = [(file, est, 1) if type(est) is int else (file, *_exact(est)) for file, est in items]
    count = min(partitions, len(values))
    if count == 0:
        return Split((), 0, 0, True)
    lcm = math.lcm(*{denominator for _, _, denominator in values})
    # Longest first, ties by name: sorted as (-weight, file) pairs, without a key function called
    # per file (a stage can hold thousands; a split taken from the cache sorts them too).
    order = sorted([(-(numerator * (lcm // denominator)), file) for file, numerator, denominator in values])
    # In units of the est values' greatest common divisor (30s when every est is a multiple of
    # 30s): every load, and so the makespan, is a whole number of units.
    unit = math.gcd(*[negative for negative, _ in order]) or 1
    exact = [(file, -negative // unit) for negative, file in order]
    scale = Fraction(lcm, unit)
    weights = [weight for _, weight in exact]
    total = sum(weights)
    assign = _lpt(weights, count)
    best = _makespan(weights, assign, count)
    if cache is None:
        proven, assign, best = _computed(weights, assign, best, count)
        return _made(exact, weights, assign, best, proven, count, scale, total)
    key = split_key(exact, scale, count)
    stored = cache.get(key)
    checked = _stored_split(stored, weights, count, best) if stored is not None else None
    if checked is not None:
        if checked[1] < best:  # else nothing strictly shorter than LPT: LPT's split, as computing it keeps
            assign, best = checked[0], checked[1]
        return _made(exact, weights, assign, best, checked[2], count, scale, total)
    if stored is not None:
        cache.refuse(key)
    proven, assign, best = _computed(weights, assign, best, count)
    cache.put(key, [int(proven), *assign])
    return _made(exact, weights, assign, best, proven, count, scale, total)


def _computed(weights: list[int], assign: list[int], best: int, count: int) -> tuple[bool, list[int], int]:
    """Whether the split is proven optimal, its assignment and makespan, from LPT's (`assign`, `best`)."""
    bound = _lower_bound(weights, count)
    if best > bound and len(weights) <= PACKING_BOUND_FILES:
        bound = _packing_bound(weights, count, bound, best)
    while bound < best and _residues_rule_out(weights, count, bound):
        bound += 1
    proven = best <= bound
    lpt_assign, lpt_best = assign, best
    if not proven:
        assign = _local_search(weights, assign, count, bound)
        best = _makespan(weights, assign, count)
        proven = best <= bound
    if not proven and len(weights) <= DIFFERENCING_FILES:
        differenced = _differencing(weights, count)
        if differenced is not None and _makespan(weights, differenced, count) < best:
            assign = _local_search(weights, differenced, count, bound)
            best = _makespan(weights, assign, count)
            proven = best <= bound
    positives = sum(1 for w in weights if w > 0)
    if not proven and positives + 2 * count <= SEARCH_DEPTH:
        with _deeper(SEARCH_DEPTH + 100):
            found, best, proven = _exact_search(weights[:positives], count, len(weights) - positives, best, bound)
        if found is not None:
            assign = _fill_zeros(found, weights, count)
    if best == lpt_best:  # nothing strictly shorter: keep list scheduling's split
        assign = lpt_assign
    return proven, assign, best


def _made(exact: Sequence[tuple[str, int]], weights: Sequence[int], assign: Sequence[int], best: int, proven: bool,
          count: int, scale: Fraction, total: int) -> Split:
    members: list[list[int]] = [[] for _ in range(count)]
    for index, shard in enumerate(assign):
        members[shard].append(index)  # in file order: longest first, ties by name
    members.sort(key=lambda m: m[0])
    files = [file for file, _ in exact]
    shards = tuple(Shard(index=i, est_seconds=_seconds_of(sum(map(weights.__getitem__, m)), scale),
                         files=tuple(map(files.__getitem__, m))) for i, m in enumerate(members))
    lower = max(Fraction(total, scale * count), Fraction(weights[0], scale))
    return Split(shards, _seconds_of(best, scale), _tidy(float(lower)), proven)


def _exact(est: float) -> tuple[int, int]:
    """The decimal value of an est_time as (numerator, denominator): 0.1 is 1/10, not the
    nearest binary fraction. Decimal parses in C, several times faster than Fraction(repr(est))."""
    if isinstance(est, float):
        return Decimal(repr(est)).as_integer_ratio()
    return int(est), 1


def _seconds_of(load: int, scale: Fraction) -> float:
    return _tidy(float(Fraction(load, scale)))


def _lpt(weights: Sequence[int], count: int) -> list[int]:
    """List scheduling: each file (longest first) to the least-loaded shard, ties by lowest index."""
    # The `count` longest files seed one shard each (what list scheduling does anyway when
    # every est_time is positive); with est_time 0 the least-loaded shard would otherwise
    # stay shard 0 and the others would be empty.
    assign = list(range(count))
    heap = [(weights[i], i) for i in range(count)]
    heapq.heapify(heap)
    for weight in weights[count:]:
        # Pop the least-loaded shard and push it back loaded, in one call: the entries differ by
        # index, so the least one is the same whichever way the heap holds equal loads.
        load, index = heap[0]
        assign.append(index)
        heapq.heapreplace(heap, (load + weight, index))
    return assign


# The largest differencing method runs on stages of at most this many files (each step sorts
# the shards of a partial split: O(files * shards log shards) in all).
DIFFERENCING_FILES = 2000


def _differencing(weights: Sequence[int], count: int) -> list[int] | None:
    """The largest differencing method (Karmarkar-Karp, for `count` shards): each file starts as
    a split of its own (the file on one shard, the others empty); the two splits whose longest
    and shortest shards differ most are merged, the longest shard of one with the shortest of
    the other, until one split is left. Far more even than list scheduling when shards hold
    several files each. None when it leaves a shard empty. Deterministic: ties by creation order."""
    heap: list[tuple[int, int, list[tuple[int, list[int]]]]] = []
    for index, weight in enumerate(weights):
        parts = [(weight, [index])] + [(0, []) for _ in range(count - 1)]
        heap.append((-weight, index, parts))
    heapq.heapify(heap)
    order = len(weights)
    while len(heap) > 1:
        _, _, first = heapq.heappop(heap)
        _, _, second = heapq.heappop(heap)
        merged = [(a[0] + b[0], a[1] + b[1]) for a, b in zip(first, reversed(second), strict=True)]
        merged.sort(key=lambda part: -part[0])
        heapq.heappush(heap, (merged[-1][0] - merged[0][0], order, merged))
        order += 1
    assign = [0] * len(weights)
    for shard, (_, members) in enumerate(heap[0][2]):
        if not members:
            return None
        for index in members:
            assign[index] = shard
    return assign


def _makespan(weights: Sequence[int], assign: Sequence[int], count: int) -> int:
    loads = [0] * count
    for weight, shard in zip(weights, assign, strict=True):
        loads[shard] += weight
    return max(loads)


def _lower_bound(weights: Sequence[int], count: int) -> int:
    """No split is shorter: the ceiling of the mean, the longest file, and the pigeonhole bound.

    Pigeonhole: of the `m * count + 1` longest files, some shard holds `m + 1`, so it
    carries at least the `m + 1` shortest of them.
    """
    bound = max(-(-sum(weights) // count), weights[0])
    prefix = [0]
    for weight in weights:
        prefix.append(prefix[-1] + weight)
    m = 1
    while m * count < len(weights):
        last = m * count  # index of the (m * count + 1)-th longest file
        bound = max(bound, prefix[last + 1] - prefix[last - m])
        m += 1
    return bound


def _residues_rule_out(weights: Sequence[int], count: int, limit: int) -> bool:
    """Whether no split has shards of at most `limit`, by the remainders of the est values.

    For a divisor `d` (2 to `RESIDUE_MODULI`) that does not divide `limit`, a shard whose
    files are all multiples of `d` is short of `limit` by at least `limit % d`; with `k`
    files that are not multiples of `d`, at least `count - k` shards are such shards, and
    their waste may be more than the room left to waste (`count * limit - sum`). That room
    grows by `count` with each unit of `limit`: only capacities within `RESIDUE_MODULI`
    units of the mean can be ruled out, so `split` tries it up from the other bounds.
    """
    waste = count * limit - sum(weights)
    if waste < 0:
        return True
    for d in range(2, RESIDUE_MODULI + 1):
        short = limit % d
        if short * count > waste and (count - sum(1 for w in weights if w % d)) * short > waste:
            return True
    return False


# The divisors the remainders of the est values are looked at for (`_residues_rule_out`).
RESIDUE_MODULI = 64


def _packing_bound(weights: Sequence[int], count: int, low: int, high: int) -> int:
    """The lowest makespan in [low, high] that the bin-packing bound L2 does not rule out.

    L2 (Martello and Toth) counts the shards files need under a limit T; when it exceeds
    `count`, no split reaches T; so does `_apart_needs_more` (stages of at most
    `APART_BOUND_FILES` files). Each test is O(n log n) (O(n^2) with the latter); a binary
    search between the other bounds and the best split found so far.
    """
    ascending = sorted(weights)
    prefix = [0]
    for weight in ascending:
        prefix.append(prefix[-1] + weight)
    while low < high:
        middle = (low + high) // 2
        if _needs_more_shards(ascending, prefix, middle, count):
            low = middle + 1
        else:
            high = middle
    return low


def _needs_more_shards(ascending: list[int], prefix: list[int], limit: int, count: int) -> bool:
    n = len(ascending)

    def above(x: int) -> int:  # how many files are longer than x
        return n - bisect.bisect_right(ascending, x)

    half = bisect.bisect_right(ascending, limit // 2)  # files of at most limit / 2: ascending[:half]
    longer_half = n - half
    if above(limit):
        return True
    alphas = sorted(set(ascending[:half])) or [0]
    for alpha in alphas:
        lo = bisect.bisect_left(ascending, alpha)  # J3: ascending[lo:half], alpha <= w <= limit / 2
        j3 = prefix[half] - prefix[lo]
        j1_start = n - above(limit - alpha)  # J1: longer than limit - alpha
        j2_count = max(0, j1_start - half)  # J2: limit / 2 < w <= limit - alpha
        j2_sum = prefix[j1_start] - prefix[half] if j1_start > half else 0
        free = j2_count * limit - j2_sum
        needed = longer_half + max(0, -(-(j3 - free) // limit))
        if needed > count:
            return True
    if n <= APART_BOUND_FILES:
        return _apart_needs_more(ascending, limit, count)
    return False


def _apart_needs_more(ascending: list[int], limit: int, count: int) -> bool:
    """Whether the files that cannot share a shard with the longest ones already need more
    shards than are left beside those.

    For a length `a` of at most half the limit, the files longer than `limit - a` (J1) are in
    shards of their own, and no file of `a` to `limit - a` fits beside any of them: those
    files must fit in the other `count - |J1|` shards, which the mean, the longest and the
    pigeonhole bounds (`_lower_bound`) on them alone can rule out.
    """
    n = len(ascending)
    # Only lengths beside which the longest file does not fit leave J1 non-empty.
    start = bisect.bisect_right(ascending, limit - ascending[-1])
    for alpha in sorted(set(ascending[start:])):
        if 2 * alpha > limit:
            break
        j1_start = bisect.bisect_right(ascending, limit - alpha)  # J1: ascending[j1_start:]
        bins = count - (n - j1_start)
        lo = bisect.bisect_left(ascending, alpha)
        apart = ascending[lo:j1_start]  # alpha <= w <= limit - alpha
        if not apart:
            continue
        if bins < 1 or _lower_bound(apart[::-1], bins) > limit:
            return True
    return False


# The exact search recurses once per file placed and twice per shard begun: a stage with
# more files (or shards) than this keeps the split the heuristics found.
SEARCH_DEPTH = 2500


@contextlib.contextmanager
def _deeper(frames: int) -> Iterator[None]:
    """Python's recursion limit raised by `frames` while the search runs: the frames above it
    stay within the limit as it was, so the search's own depth, bounded by `SEARCH_DEPTH`,
    never meets the limit, whatever the caller's depth (the split cannot depend on it)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(before + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


class _OutOfWork(CiPolicyError):
    """The search spent its `SEARCH_BUDGET` (caught in this module; never reaches a caller)."""


def _exact_search(weights: Sequence[int], count: int, zeros: int, best: int,
                  bound: int) -> tuple[list[int] | None, int, bool]:
    """The shortest split of the positive `weights` (longest first) strictly shorter than `best`, if any.

    Returns the assignment found (None when nothing beats `best`), its makespan and whether
    it is proven optimal within `SEARCH_BUDGET`. The makespan is searched for between the
    lower bound and `best - 1`: first at the bound itself (usually reached when shards hold
    many files), then just below the shortest split found; each step asks `_fits` whether
    the files fit in `count` shards of that capacity. A "yes" brings its split (and the next
    try goes just below its makespan), a "no" just below a split found proves that split
    optimal. `zeros` files of est 0 fill shards left empty.
    """
    n = len(weights)
    if n == 0:
        return None, best, True
    spent = [0, 0]  # the work done, and where the current try must stop
    polish = [0, POLISH_BUDGET]  # the work of the pair re-splits of the splits found
    dead: dict[tuple[int, ...], int] = {}  # files left (as est values) and shards: the largest capacity they do not fit
    found: list[int] | None = None
    # A makespan is the load of a shard, a sum of some files: only such sums are tried.
    sums = 0
    if n * (best // 8192 + 1) <= SEARCH_BUDGET // 20:  # when that costs at most a twentieth of the work
        sums, limit = 1, (1 << (best + 1)) - 1
        for weight in weights:
            sums = (sums | (sums << weight)) & limit
        spent[0] += n * (best // 8192 + 1)

    def made(at: int) -> int:
        """The least sum of files of at least `at` (`best` itself is one)."""
        if not sums or at >= best:
            return max(at, 0) if not sums else best
        above = sums >> at
        return at + (above & -above).bit_length() - 1

    def below(at: int) -> int:
        """The largest sum of files less than `at` (`at - 1` without the sums): a capacity
        that is no sum fits exactly the splits the largest sum under it fits."""
        if not sums:
            return at - 1
        return (sums & ((1 << at) - 1)).bit_length() - 1

    high = best  # the makespan of the shortest split found
    refuted = probe = made(bound)  # no split is shorter than `refuted`; the capacity tried
    at_bound = True  # the first try, at the lower bound
    while probe < high:
        # Every try may spend all the work left, but the one at the lower bound leaves a
        # reserve: when it neither finds nor rules out a split there, a split just below the
        # one found is often quick to find. Another try out of work ends the search.
        spent[1] = SEARCH_BUDGET - (SEARCH_BUDGET // BOUND_RESERVE if at_bound else 0)
        try:
            fit = _fits(weights, count, probe, spent, dead)
        except _OutOfWork:
            if not at_bound:
                break
            at_bound = False
            probe = max(below(high), refuted)
            continue
        at_bound = False
        if fit is None:
            refuted = made(probe + 1)
        else:
            found = _fill_empty(fit, weights, count, zeros)
            if len(set(found)) == count:
                # A split that fits is often uneven below the capacity tried: re-split by
                # pairs, it is often several tries shorter, each try saved costing as much
                # as the one that found it.
                found = _local_search(weights, found, count, refuted, polish)
            high = _makespan(weights, found, count)
        # Then just below the shortest split found: a split there lowers `high` again (the
        # multisets of est values that did not fit stay dead at every lower capacity); none
        # there proves the split optimal.
        probe = max(below(high), refuted)
    return found, high, refuted >= high


def _fill_empty(assign: list[int], weights: Sequence[int], count: int, zeros: int) -> list[int]:
    """No more empty shards than files of est 0 to fill them: the shortest file of a shard of
    two or more files moves to an empty one (no shard gets longer)."""
    sizes = [0] * count
    for shard in assign:
        sizes[shard] += 1
    empty = [s for s in range(count) if sizes[s] == 0]
    for index in range(len(weights) - 1, -1, -1):  # shortest files first
        if len(empty) <= zeros:
            break
        if sizes[assign[index]] > 1:
            sizes[assign[index]] -= 1
            assign[index] = empty.pop(0)
            sizes[assign[index]] = 1
    return assign


def _fits(weights: Sequence[int], count: int, capacity: int, spent: list[int],
          dead: dict[tuple[int, ...], int]) -> list[int] | None:
    """A split of `weights` (longest first) into at most `count` shards of at most `capacity`, or None.

    Bin completion: the next shard gets the longest file left, then one of the ways to fill
    it up (subsets of the files left, none of which fits in what remains, so every file that
    could still join is in; files of equal est are taken in order), whose waste keeps the
    total waste within `count * capacity - sum`; the last two shards are settled at once by
    subset sums (the bits of an integer). When the waste left is tight (at most
    `TIGHT_WASTE` units a shard), the ways are tried by their sum, largest first, and the
    waste files longer than half a shard force (`_big_waste`) must fit in it; only then are
    partial ways checked against the subset sums of the files after them. A way that
    holds all of a way tried before for an earlier shard (which failed), with room for the
    difference, is skipped: the two could be traded (nogoods). Multisets of est values left
    that cannot be packed are remembered, also when a nogood cut their search: every packing
    of them would complete the shards before into a split, which the nogood traded into
    one searched before, and found none there. Work is counted in `spent[0]` (units: see
    `SEARCH_BUDGET`) and stops at `spent[1]` (`_OutOfWork`).
    """
    n = len(weights)
    total = sum(weights)
    if weights[0] > capacity or total > count * capacity:
        return None
    if sum(1 for w in weights if 2 * w > capacity) > count:
        return None
    assign = [0] * n
    bits = capacity <= BITSET_LIMIT

    def pack(left: list[int], bins: int, waste: int, shard: int, nogoods: list[tuple[int, int]]) -> bool:
        if not left:
            return True
        if bins == 1:
            for i in left:
                assign[i] = shard
            return True
        # Files of equal est are interchangeable: the files left are remembered as a multiset.
        key = (bins, *[weights[i] for i in left])
        if dead.get(key, -1) >= capacity:
            return False
        # Files longer than half a shard are in shards of their own; a file that no other
        # file left can join wastes all the room beside it.
        smallest = weights[left[-1]]
        forced = 0
        for i in left:
            if 2 * weights[i] <= capacity:
                break
            if weights[i] + smallest > capacity:
                forced += capacity - weights[i]
        if forced > waste:
            dead[key] = capacity
            return False
        tight = waste <= TIGHT_WASTE * bins
        if bits and tight and _big_waste(weights, left, capacity, spent) > waste:
            dead[key] = capacity
            return False
        if bins == 2 and bits:
            ok = _two_shards(weights, left, capacity, assign, shard, spent)
            if not ok:
                dead[key] = capacity
            return ok
        first, rest = left[0], left[1:]
        room = capacity - weights[first]
        suffix = [0] * (len(rest) + 1)
        for p in range(len(rest) - 1, -1, -1):
            suffix[p] = suffix[p + 1] + weights[rest[p]]
        # reach[p]: the sums (as bits, up to `room`) that files of rest[p:] make up.
        reach: list[int] = []
        sums: list[bytes] = []

        def has(p: int, at: int) -> int:
            """Whether files of rest[p:] make up the sum `at` (at most `room`)."""
            made = sums[p]
            if not made:
                made = sums[p] = reach[p].to_bytes(width, "little")
                spent[0] += room // 8192 + 1
            return (made[at >> 3] >> (at & 7)) & 1

        # Only when tight: with more room to waste, the window of sums the shard may still
        # take is wide and nearly always holds one, so the bits cost far more than they prune.
        sieve = bits and tight
        if sieve:
            limit = (1 << (room + 1)) - 1
            reach = [1] * (len(rest) + 1)
            spent[0] += len(rest) * (room // 8192 + 1)
            for p in range(len(rest) - 1, -1, -1):
                reach[p] = (reach[p + 1] | (reach[p + 1] << weights[rest[p]])) & limit
            # The same bits as bytes, made when first needed (tight shards only): testing one
            # bit of a byte string is O(1), of an integer O(size).
            width = room // 8 + 1
            sums = [b""] * (len(rest) + 1)
        # Files longest first: the first file of rest that fits in `free` is found by bisection
        # on the negated est values; after file p, the next of another est is following[p].
        negated = [-weights[i] for i in rest]
        following = [len(rest)] * len(rest)
        for p in range(len(rest) - 2, -1, -1):
            following[p] = p + 1 if weights[rest[p + 1]] != weights[rest[p]] else following[p + 1]
        chosen: list[int] = []

        def fill(pos: int, free: int) -> bool:
            """Completions of the shard from rest[pos:] with `free` room left, most filled first."""
            spent[0] += 1
            if spent[0] > spent[1]:
                raise _OutOfWork
            # Some files of rest[pos:] must fill the room up to at most `waste`.
            if free - suffix[pos] > waste:
                return False
            if sieve and not (reach[pos] >> max(free - waste, 0)) & ((1 << (min(free, waste) + 1)) - 1):
                return False
            p = max(pos, bisect.bisect_left(negated, -free))
            if p == len(rest):
                return complete(free)
            # A file left that fits: this filling is not complete (not maximal), it goes on.
            while p < len(rest) and free - suffix[p] <= waste:  # (else nor with any later file)
                chosen.append(p)
                if fill(p + 1, free - weights[rest[p]]):
                    return True
                chosen.pop()
                p = following[p]  # files of equal est: the first of them only
            return False

        def exact(pos: int, need: int, free: int) -> bool:
            """Fillings of the shard from rest[pos:] that add exactly `need` (a sum they make up)."""
            spent[0] += 1
            if spent[0] > spent[1]:
                raise _OutOfWork
            if need == 0:
                return complete(free)
            p = max(pos, bisect.bisect_left(negated, -need))
            while p < len(rest):
                weight = weights[rest[p]]
                if has(p + 1, need - weight):
                    chosen.append(p)
                    if exact(p + 1, need - weight, free):
                        return True
                    chosen.pop()
                p = following[p]  # files of equal est: the first of them only
            return False

        def complete(free: int) -> bool:
            """The filling `chosen` with `free` room left: nothing more joins. It must be maximal
            (no file left out fits), waste no more than is left to waste, and not be ruled out
            by a longer file left out or a nogood; then the other shards are packed."""
            if free > waste:
                return False
            spent[0] += len(rest) // 8
            taken = set(chosen)
            for p in range(len(rest) - 1, -1, -1):
                if p not in taken:
                    if weights[rest[p]] <= free:
                        return False
                    break
            inside = [rest[p] for p in chosen]
            others = [rest[p] for p in range(len(rest)) if p not in taken]
            if _dominated(weights, inside, others, free, spent):
                return False
            mask = 1 << first
            for i in inside:
                mask |= 1 << i
            if nogoods:
                spent[0] += len(nogoods) // 16
                for nogood, extra in nogoods:
                    if nogood & mask == nogood and free >= extra:
                        return False
            filled = capacity - free - weights[first]
            # Nogoods: the fillings of this shard tried before that failed. A later shard that
            # holds all of such a filling A (and room for the difference) could trade it for
            # this one, giving a split whose shard here is filled with A: there is none.
            below = nogoods + [(other, filled - other_sum) for other, other_sum in tried
                               if not other & mask]
            if pack(others, bins - 1, waste - free, shard + 1, below):
                assign[first] = shard
                for i in inside:
                    assign[i] = shard
                return True
            tried.append((mask & ~(1 << first), filled))
            return False

        tried: list[tuple[int, int]] = []
        if bits and tight:
            # The fillings by how much they fill, most first: each sum in reach (within the
            # waste left) in turn, the fillings that make it up exactly, longest files first.
            ok = False
            spent[0] += min(room, waste) // 64
            for target in range(room, max(room - waste, 0) - 1, -1):
                if has(0, target) and exact(0, target, room - target):
                    ok = True
                    break
        else:
            ok = fill(0, room)
        if not ok:
            dead[key] = capacity
        return ok

    if pack(list(range(n)), count, count * capacity - total, 0, []):
        return assign
    return None


def _big_waste(weights: Sequence[int], left: list[int], capacity: int, spent: list[int]) -> int:
    """The room files longer than half a shard must leave unused: each is in a shard of its own,
    filled at best by the largest sum of shorter files (of at most half a shard) that fits."""
    big = [i for i in left if 2 * weights[i] > capacity]
    if not big:
        return 0
    top = capacity - weights[big[-1]]  # the largest room beside a long file
    limit = (1 << (top + 1)) - 1
    reach = 1
    small = 0
    for i in left[len(big):]:
        reach = (reach | (reach << weights[i])) & limit
        small += 1
    spent[0] += small * (top // 8192 + 1) + len(big) // 8
    waste = 0
    for i in big:
        room = capacity - weights[i]
        waste += room - ((reach & ((1 << (room + 1)) - 1)).bit_length() - 1)
    return waste


def _dominated(weights: Sequence[int], inside: list[int], others: list[int], free: int,
               spent: list[int]) -> bool:
    """Whether a file left out could take the place of a shorter file in the shard, or of two,
    three or four, or of all of them (besides the shard's first, longest file), and fit: the
    shard with the longer file is as good (the files it replaces fit where it was), so this
    one need not be tried; several files may be replaced by one just as long, also in a shard
    with no room left. Replacing several files by one lowers the shard's count of files,
    replacing one by a longer one keeps it and raises the sum, so no way dominates itself
    through a chain of such swaps."""
    outside = [weights[i] for i in others]  # longest first, as the files left are
    outside.reverse()
    for i in inside:
        w = weights[i]
        at = bisect.bisect_right(outside, w)
        if at < len(outside) and outside[at] <= w + free:
            return True
    if len(inside) < 2 or not outside:
        return False
    count = len(inside)
    # The pairs, triples and fours looked at, 64 a unit.
    spent[0] += (count * (count - 1) // 128 + count * (count - 1) * (count - 2) // 384
                 + count * (count - 1) * (count - 2) * (count - 3) // 1536)
    longest = outside[-1]
    each = [weights[i] for i in inside]  # longest first
    for a in range(count - 1):
        for b in range(a + 1, count):
            pair = each[a] + each[b]
            if pair > longest:
                continue  # (and so is every triple with these two)
            at = bisect.bisect_left(outside, pair)
            if outside[at] <= pair + free:
                return True
            for c in range(count - 1, b, -1):  # the shortest third file first: the sum grows
                triple = pair + each[c]
                if triple > longest:
                    break
                at = bisect.bisect_left(outside, triple, at)
                if outside[at] <= triple + free:
                    return True
                for d in range(count - 1, c, -1):  # the shortest fourth file first
                    four = triple + each[d]
                    if four > longest:
                        break
                    within = bisect.bisect_left(outside, four, at)
                    if outside[within] <= four + free:
                        return True
    whole = sum(each)
    if count > 4 and whole <= longest:
        at = bisect.bisect_left(outside, whole)
        if outside[at] <= whole + free:
            return True
    return False


def _two_shards(weights: Sequence[int], left: list[int], capacity: int, assign: list[int], shard: int,
                spent: list[int]) -> bool:
    """Whether the files `left` fit in two shards of `capacity` (subset sums as the bits of an
    integer); if so, they are assigned to `shard` and `shard + 1`."""
    rest = sum(weights[i] for i in left)
    need = rest - capacity  # the first shard's load: in [need, capacity]
    if need > capacity:
        return False
    limit = (1 << (capacity + 1)) - 1
    reach = [1]
    for i in left:
        spent[0] += capacity // 8192 + 1
        if spent[0] > spent[1]:
            raise _OutOfWork
        reach.append((reach[-1] | (reach[-1] << weights[i])) & limit)
    window = reach[-1] >> max(need, 0)
    if not window:
        return False
    target = max(need, 0) + (window & -window).bit_length() - 1
    for k in range(len(left) - 1, -1, -1):
        i = left[k]
        if (reach[k] >> target) & 1:
            assign[i] = shard + 1
        else:
            assign[i] = shard
            target -= weights[i]
    return True


def _fill_zeros(found: Sequence[int], weights: Sequence[int], count: int) -> list[int]:
    """The files of est 0 (after the positive ones): to the empty shards first, in index
    order, then each to the least-loaded shard (ties by lowest index), as list scheduling does."""
    assign = list(found)
    loads = [0] * count
    for weight, shard in zip(weights, assign, strict=False):
        loads[shard] += weight
    empties = [s for s in range(count) if s not in set(assign)]
    for _ in range(len(assign), len(weights)):
        assign.append(empties.pop(0) if empties else min(range(count), key=lambda s: (loads[s], s)))
    return assign


def _local_search(weights: Sequence[int], assign: list[int], count: int, bound: int,
                  spent: list[int] | None = None) -> list[int]:
    """Balance pairs of shards while that makes a pair more even; never longer.

    Rounds over every pair of shards (i < j, in index order): the files of the two are split
    again as evenly as possible, exactly (a subset sum: listed for each half of the pair's
    files when it has at most `HALVES_FILES` files and that costs less, else as bits when
    the pair's load is at most `PAIR_LIMIT` units; when the work fits the budget) or else
    by the best move of one file or swap of two; the new split is kept when the pair's
    difference shrinks. A pair's longer shard never gets longer, so neither does the
    makespan; the sum of squared loads falls at every change, so the rounds end, at the
    latest after `LOCAL_SEARCH_BUDGET` units of work, or as soon as no shard is longer than
    `bound` (a lower bound: nothing is left to gain). With `spent` (the work done so far and
    where it must stop), the work goes on from there and is added to it. Never leaves a
    shard empty. Deterministic: pairs, files and ties in a fixed order.
    """
    assign = list(assign)
    loads = [0] * count
    members: list[list[int]] = [[] for _ in range(count)]
    for index, shard in enumerate(assign):
        loads[shard] += weights[index]
        members[shard].append(index)
    work, stop = (0, LOCAL_SEARCH_BUDGET) if spent is None else (spent[0], spent[1])
    changed = max(loads) > bound
    while changed and work < stop:
        changed = False
        for i in range(count):
            for j in range(i + 1, count):
                if abs(loads[i] - loads[j]) <= 1 or work >= stop:
                    continue
                high, low = (i, j) if (loads[i], -i) >= (loads[j], -j) else (j, i)
                pair = sorted(members[high] + members[low])
                cost, halves = _split_pair(weights, pair, members[high], members[low], loads[high], loads[low],
                                           stop - work)
                work += cost
                if halves is None:
                    continue
                first, second = sum(weights[k] for k in halves[0]), sum(weights[k] for k in halves[1])
                if abs(first - second) >= loads[high] - loads[low]:
                    continue
                members[high], members[low] = halves
                loads[high], loads[low] = first, second
                for k in halves[0]:
                    assign[k] = high
                for k in halves[1]:
                    assign[k] = low
                if max(loads) <= bound:
                    changed = False
                    break
                changed = True
            else:
                continue
            break
    if spent is not None:
        spent[0] = work
    return assign


# The bound from the files that cannot share a shard with the longest ones costs O(n^2) per
# capacity tried: only for stages of at most this many files.
APART_BOUND_FILES = 120

# The bin-packing bound costs O(n^2 log n) per stage: only for stages of at most this many
# files (with more files per shard, the mean is the bound that matters).
PACKING_BOUND_FILES = 500

# Pairs of shards whose load together is at most this many units are re-split exactly.
PAIR_LIMIT = 1 << 22


def _split_pair(weights: Sequence[int], pair: list[int], top: list[int], other: list[int], peak: int,
                other_load: int, allowance: int) -> tuple[int, tuple[list[int], list[int]] | None]:
    """The work done and a better split of two shards' files (both non-empty), or None.

    Exact by the subset sums of each half of the files (`_split_by_halves`) when that is
    the cheaper way and fits the allowance, else by subset sums as the bits of an integer
    when the pair's load is at most `PAIR_LIMIT` and its cost fits the allowance; else the
    best move or swap, looked for until the allowance is spent.
    """
    total = peak + other_load
    cost = len(pair) * (total // 64 + 16)
    halves_cost = _halves_cost(len(pair))
    if halves_cost < cost and halves_cost <= allowance:
        return halves_cost, _split_by_halves(weights, pair, total)
    if total <= PAIR_LIMIT and cost <= allowance:
        # Subset sums as the bits of an integer; `reach[i]` before file pair[i] is added.
        reach = [1]
        for index in pair:
            reach.append(reach[-1] | (reach[-1] << weights[index]))
        sums = reach[-1] & ((1 << (total // 2 + 1)) - 1)
        # The largest reachable sum that leaves both sides non-empty (a side of 0 est
        # files is non-empty too, so a sum of 0 or total alone is not enough).
        target = sums.bit_length() - 1
        chosen: list[int] = []
        rest = target
        for i in range(len(pair) - 1, -1, -1):
            if not (reach[i] >> rest) & 1:  # `rest` needs file pair[i]
                chosen.append(pair[i])
                rest -= weights[pair[i]]
        return cost, _sides(pair, set(chosen))
    # Too large to split exactly: the best move of one file or swap of two.
    best: tuple[int, list[int], list[int]] | None = None
    work = 0
    for a in top:
        if work >= allowance:
            break
        for b in [None, *other]:
            work += 80
            delta = weights[a] - (0 if b is None else weights[b])
            if (b is None and len(top) == 1) or delta <= 0 or other_load + delta >= peak:
                continue
            value = max(peak - delta, other_load + delta)
            if best is None or value < best[0]:
                mine = [i for i in top if i != a] + ([] if b is None else [b])
                theirs = [i for i in other if i != b] + [a]
                best = (value, sorted(mine), sorted(theirs))
    return work, None if best is None else (best[1], best[2])


# Pairs of at most this many files can be re-split by listing the subset sums of each half.
HALVES_FILES = 26


def _halves_cost(files: int) -> int:
    """The work of `_split_by_halves` on `files` files (a sum listed or looked up is four
    units: it takes about four times as long as a 64-bit word of the bit subset sums), or
    more than any allowance when the pair has too many files."""
    if files > HALVES_FILES:
        return LOCAL_SEARCH_BUDGET + 1
    low, high = files // 2, files - files // 2
    return 4 * ((1 << low) * (low + 2) + (1 << high) * (high + 2)) + 16


def _split_by_halves(weights: Sequence[int], pair: list[int],
                     total: int) -> tuple[list[int], list[int]] | None:
    """The pair's files split as evenly as possible (the largest sum of at most half the load,
    as the subset sums find it), by listing the subset sums of each half of the files (meet in
    the middle): `2^(k/2)` sums instead of a bit per unit of load. Deterministic: the first
    half's subsets in the order listed, for each the first subset of the second half of the
    sum it needs (ties by the lowest bit mask). None when a side would be empty."""
    half = total // 2
    cut = len(pair) // 2

    def listed(files: list[int]) -> list[tuple[int, int]]:
        sums = [(0, 0)]
        for bit, index in enumerate(files):
            weight = weights[index]
            sums += [(value + weight, mask | (1 << bit)) for value, mask in sums]
        return sums

    first, second = listed(pair[:cut]), sorted(listed(pair[cut:]))
    values = [value for value, _ in second]
    best, pick = -1, (0, 0)
    for value, mask in first:
        if value > half:
            continue
        at = bisect.bisect_right(values, half - value) - 1
        other = values[at]  # the empty subset (0) is always there
        if value + other > best:
            first_at = bisect.bisect_left(values, other)
            best, pick = value + other, (mask, second[first_at][1])
    chosen = {pair[bit] for bit in range(cut) if pick[0] >> bit & 1}
    chosen |= {pair[cut + bit] for bit in range(len(pair) - cut) if pick[1] >> bit & 1}
    return _sides(pair, chosen)


def _sides(pair: list[int], chosen: set[int]) -> tuple[list[int], list[int]] | None:
    """The pair split into (the files not chosen, the chosen ones), both non-empty: an empty
    side takes the other's shortest (or longest) file; None when the pair has one file."""
    small = [i for i in pair if i in chosen]
    large = [i for i in pair if i not in chosen]
    if not small:
        small, large = large[-1:], large[:-1]
    if not large:
        large, small = small[:1], small[1:]
    if small and large:
        return large, small
    return None


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
    """A stage's shards of the selected (file, est_time) pairs, and why that many when `partitions: auto`."""
    shards_split, reason = stage_split(stage, items)
    return shards_split.shards, reason


def stage_split(stage: Stage, items: Iterable[tuple[str, float]],
                cache: SplitCache | None = None) -> tuple[Split, str | None]:
    """A stage's `Split` of the selected (file, est_time) pairs, and why that many shards when `partitions: auto`.

    A fixed `partitions` needs no reason (the configuration states it): the reason is None.
    """
    items = list(items)
    if stage.partitions != "auto":
        return split(items, stage.partitions, cache), None
    if stage.shard_seconds is None:
        raise ValueError(f"stage {stage.name}: partitions: auto needs shard_seconds")
    total = _tidy(math.fsum(est for _, est in items))
    raw = math.ceil(Fraction(repr(total)) / Fraction(repr(stage.shard_seconds)))
    count = auto_count(total, stage.shard_seconds, stage.max_partitions)
    result = split(items, count, cache)
    shards = result.shards
    if not shards:
        return result, None
    reason = f"{_shards_word(len(shards))}: {_seconds(total)}s selected / {_seconds(stage.shard_seconds)}s per shard"
    if raw < 1:
        reason += " (at least 1)"
    elif count < raw:
        reason += f" = {raw}, capped by max_partitions {stage.max_partitions}"
    elif len(shards) < count:
        reason += f" = {count}, but only {len(items)} selected " + ("file" if len(items) == 1 else "files")
    return result, reason
