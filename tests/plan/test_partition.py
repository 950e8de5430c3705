"""Shards (`ci_policy.plan.partition`): exact splits for small inputs, and properties."""

from __future__ import annotations

import heapq
import itertools
import math
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_policy.config.stages import Stage
from ci_policy.plan import partition as partition_module
from ci_policy.plan.partition import (
    SEARCH_DEPTH,
    Shard,
    Split,
    _apart_needs_more,
    _dominated,
    _halves_cost,
    _local_search,
    _lower_bound,
    _packing_bound,
    _residues_rule_out,
    _split_by_halves,
    _tidy,
    auto_count,
    imbalance,
    makespan,
    partition,
    split,
    stage_shards,
    stage_split,
)

# (items, partitions, expected shards as (est_seconds, files))
EXACT = [
    pytest.param([("a", 5), ("b", 3), ("c", 3), ("d", 1)], 2,
                 [(6, ("a", "d")), (6, ("b", "c"))], id="longest-first-to-least-loaded"),
    pytest.param([("a", 7), ("b", 6), ("c", 5), ("d", 4), ("e", 3), ("f", 2)], 3,
                 [(9, ("a", "f")), (9, ("b", "e")), (9, ("c", "d"))], id="lpt-three-shards"),
    pytest.param([("z", 10), ("a", 10), ("m", 10)], 2,
                 [(20, ("a", "z")), (10, ("m",))], id="equal-times-ordered-by-name-ties-to-lowest-index"),
    pytest.param([("x", 1), ("y", 2)], 5,
                 [(2, ("y",)), (1, ("x",))], id="fewer-files-than-partitions"),
    pytest.param([("only", 42)], 3, [(42, ("only",))], id="one-file"),
    pytest.param([("a", 0), ("b", 0), ("c", 0)], 2,
                 [(0, ("a", "c")), (0, ("b",))], id="zero-times-still-fill-every-shard"),
    pytest.param([("big", 100), ("z0", 0), ("a0", 0)], 3,
                 [(100, ("big",)), (0, ("a0",)), (0, ("z0",))], id="zero-times-after-a-long-file"),
    pytest.param([("a", 150), ("b", 150)], 1, [(300, ("a", "b"))], id="one-partition"),
    pytest.param([("a", 0.1), ("b", 0.2)], 1, [(0.3, ("b", "a"))], id="float-sum-rounded"),
    pytest.param([("a", 1.5), ("b", 0.25)], 2, [(1.5, ("a",)), (0.25, ("b",))], id="float-times"),
]


@pytest.mark.parametrize("items, partitions, expected", EXACT)
def test_exact_shards(items, partitions, expected):
    shards = partition(items, partitions)
    assert [(s.est_seconds, s.files) for s in shards] == expected
    assert [s.index for s in shards] == list(range(len(expected)))


def test_integral_sums_are_ints():
    (shard,) = partition([("a", 150.0), ("b", 150.0)], 1)
    assert shard.est_seconds == 300 and type(shard.est_seconds) is int


def test_no_files_no_shards():
    assert partition([], 4) == ()


@pytest.mark.parametrize("partitions", [0, -1])
def test_partitions_must_be_positive(partitions):
    with pytest.raises(ValueError) as info:
        partition([("a", 1)], partitions)
    assert str(info.value) == f"partitions must be >= 1, got {partitions}"


def test_shard_as_dict_and_summaries():
    shards = partition([("a", 7), ("b", 6), ("c", 5), ("d", 4), ("e", 3), ("f", 2)], 3)
    assert shards[0].as_dict() == {"index": 0, "est_seconds": 9, "files": ["a", "f"]}
    assert makespan(shards) == 9
    assert imbalance(shards) == 1.0
    uneven = partition([("a", 30), ("b", 10)], 2)
    assert makespan(uneven) == 30
    assert imbalance(uneven) == 1.5
    assert makespan(()) == 0
    assert imbalance(()) == 1.0
    assert imbalance((Shard(index=0, est_seconds=0, files=("a",)),)) == 1.0


NAMES = st.text(alphabet="abcdefghij/_.", min_size=1, max_size=6)
# Small ranges make ties (and est_time 0) common.
INT_ITEMS = st.dictionaries(NAMES, st.one_of(st.integers(min_value=0, max_value=3),
                                             st.integers(min_value=0, max_value=10_000)), max_size=40)
FLOAT_ITEMS = st.dictionaries(
    NAMES, st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False), max_size=40)
PARTITIONS = st.integers(min_value=1, max_value=12)


def check_shards(items: dict, partitions: int, shards: tuple[Shard, ...]) -> None:
    count = min(partitions, len(items))
    assert len(shards) == count
    assert [s.index for s in shards] == list(range(count))
    assert all(s.files for s in shards), "a shard is empty"
    every = [f for s in shards for f in s.files]
    assert sorted(every) == sorted(items), "a file is missing or appears twice"
    for shard in shards:
        # Within a shard, files come longest first (ties by name), as they were assigned.
        assert list(shard.files) == sorted(shard.files, key=lambda f: (-items[f], f))


@settings(max_examples=300, deadline=None)
@given(INT_ITEMS, PARTITIONS, st.randoms(use_true_random=False))
def test_shard_properties_integer_times(items, partitions, rnd):
    pairs = list(items.items())
    shards = partition(pairs, partitions)
    check_shards(items, partitions, shards)
    for shard in shards:
        assert shard.est_seconds == sum(items[f] for f in shard.files)
    if shards:
        bound = sum(items.values()) / len(shards) + max(items.values())
        assert max(s.est_seconds for s in shards) <= bound
    rnd.shuffle(pairs)
    assert partition(pairs, partitions) == shards, "the same files in another order split differently"


@settings(max_examples=300, deadline=None)
@given(FLOAT_ITEMS, PARTITIONS, st.randoms(use_true_random=False))
def test_shard_properties_float_times(items, partitions, rnd):
    pairs = list(items.items())
    shards = partition(pairs, partitions)
    check_shards(items, partitions, shards)
    if shards:
        loads = [sum(items[f] for f in s.files) for s in shards]
        bound = sum(items.values()) / len(shards) + max(items.values())
        assert max(loads) <= bound * (1 + 1e-12)
        for shard, load in zip(shards, loads, strict=True):
            assert shard.est_seconds == pytest.approx(load, abs=5e-4)
    rnd.shuffle(pairs)
    assert partition(pairs, partitions) == shards


# -- optimal splits -------------------------------------------------------------------------------

def lpt_makespan(values: list, partitions: int) -> Fraction:
    """Reference list scheduling (longest first, to the least-loaded shard), exact on decimals."""
    exact = sorted((Fraction(repr(v)) if isinstance(v, float) else Fraction(v) for v in values), reverse=True)
    count = min(partitions, len(exact))
    heap = [(Fraction(0), i) for i in range(count)]
    for value in exact:
        load, index = heapq.heappop(heap)
        heapq.heappush(heap, (load + value, index))
    return max(load for load, _ in heap)


def lpt_files(items: dict, partitions: int) -> list[tuple[str, ...]]:
    """Reference list scheduling's shards (the `count` longest files seed one shard each)."""
    ordered = sorted(items, key=lambda f: (-as_fraction(float(items[f])), f))
    count = min(partitions, len(ordered))
    files = [[f] for f in ordered[:count]]
    heap = [(as_fraction(float(items[f])), i) for i, f in enumerate(ordered[:count])]
    heapq.heapify(heap)
    for f in ordered[count:]:
        load, index = heapq.heappop(heap)
        files[index].append(f)
        heapq.heappush(heap, (load + as_fraction(float(items[f])), index))
    return [tuple(shard) for shard in files]


def brute_force_makespan(values: list, partitions: int) -> Fraction:
    """Every assignment of files to shards with none empty (values in hundredths of a second)."""
    hundredths = [round(v * 100) for v in values]
    count = min(partitions, len(hundredths))
    best = sum(hundredths)
    for assign in itertools.product(range(count), repeat=len(hundredths)):
        loads = [0] * count
        for value, shard in zip(hundredths, assign, strict=True):
            loads[shard] += value
        if max(loads) < best and len(set(assign)) == count:
            best = max(loads)
    return Fraction(best, 100)


def as_fraction(value: float) -> Fraction:
    return Fraction(repr(value))


OPTIMAL = [
    # The classic list-scheduling worst case: LPT gives 11 (5+3+3 on one shard), the optimum 9.
    pytest.param([("a", 5), ("b", 5), ("c", 4), ("d", 4), ("e", 3), ("f", 3), ("g", 3)], 3,
                 Split((Shard(0, 9, ("a", "c")), Shard(1, 9, ("b", "d")), Shard(2, 9, ("e", "f", "g"))), 9, 9, True),
                 id="lpt-worst-case-three-shards"),
    # LPT: 3+2+2 against 3+2; the optimum pairs the threes.
    pytest.param([("a", 3), ("b", 3), ("c", 2), ("d", 2), ("e", 2)], 2,
                 Split((Shard(0, 6, ("a", "b")), Shard(1, 6, ("c", "d", "e"))), 6, 6, True),
                 id="lpt-seven-optimum-six"),
    # Already optimal under LPT: LPT's split is kept, the bound is the longest file.
    pytest.param([("long", 100), ("b", 30), ("c", 20)], 2,
                 Split((Shard(0, 100, ("long",)), Shard(1, 50, ("b", "c"))), 100, 100, True),
                 id="longest-file-bound"),
    # The mean is not a whole number: 3 shards of 10 seconds cannot beat 4 + 3 + 3.
    pytest.param([("a", 4), ("b", 3), ("c", 3)], 2,
                 Split((Shard(0, 4, ("a",)), Shard(1, 6, ("b", "c"))), 6, 5, True),
                 id="optimal-above-the-mean-proven-by-search"),
    pytest.param([("a", 0.1), ("b", 0.2), ("c", 0.3)], 2,
                 Split((Shard(0, 0.3, ("c",)), Shard(1, 0.3, ("b", "a"))), 0.3, 0.3, True),
                 id="decimals-exact"),
    pytest.param([], 3, Split((), 0, 0, True), id="no-files"),
]


@pytest.mark.parametrize("items, partitions, expected", OPTIMAL)
def test_optimal_splits(items, partitions, expected):
    assert split(items, partitions) == expected
    assert partition(items, partitions) == expected.shards


def test_a_split_the_local_search_leaves_above_the_bound_is_proven_by_the_exact_search():
    # 16 files on 4 shards: the local search brings LPT's 7393 seconds to 7138, 8 above the
    # lower bound; the exact search shows that no split of 7137 seconds or less exists.
    values = [975, 2428, 2230, 535, 1516, 2474, 1942, 2563, 2380, 269, 2481, 54, 3431, 1922, 1063, 2257]
    items = [(f"t{i:02d}", v) for i, v in enumerate(values)]
    result = split(items, 4)
    assert (result.makespan, result.lower_bound, result.optimal) == (7138, 7130, True)
    assert lpt_makespan(values, 4) == 7393
    assert split(list(reversed(items)), 4) == result


def test_a_stage_of_three_files_a_shard_is_proven_by_ruling_out_the_capacity_just_below():
    # 24 files in tenths of a second on 8 shards (three a shard): the search finds a split of
    # 503.6 s and rules out 503.5 s; a shard's way that a longer file left out could fill in
    # place of two of its files is not tried.
    values = [348.6, 241.6, 60.7, 101.4, 268.3, 266.9, 248.7, 35.3, 246.3, 249.8, 172.4, 30.3, 100.5, 29.0,
              238.0, 64.5, 128.6, 181.6, 69.0, 231.4, 58.2, 243.8, 136.3, 239.4]
    items = [(f"t{i:02d}", v) for i, v in enumerate(values)]
    result = split(items, 8)
    assert (result.makespan, result.lower_bound, result.optimal) == (503.6, 498.825, True)
    assert result.makespan <= lpt_makespan(values, 8)
    assert sorted(s.est_seconds for s in result.shards) == [492.2, 493.6, 495, 499.7, 501.6, 502, 502.9, 503.6]
    assert split(list(reversed(items)), 8) == result


def test_a_try_at_the_lower_bound_out_of_work_leaves_a_reserve_to_shorten_the_split(monkeypatch):
    # 40 files in whole seconds on 10 shards: no split of 6857s (the lower bound) is found or
    # ruled out within a budget of 90,000 units; the reserve it leaves takes the split the pair
    # re-splits and differencing found (6864s) down to 6861s. Without the reserve it stays at 6864s.
    monkeypatch.setattr(partition_module, "SEARCH_BUDGET", 90_000)
    values = [3573, 3548, 3457, 3354, 3278, 3097, 3095, 2968, 2909, 2763, 2686, 2448, 2344, 2290, 2072, 2061,
              1989, 1818, 1745, 1555, 1531, 1401, 1319, 1298, 1184, 1096, 1083, 1074, 913, 846, 816, 706, 640,
              490, 407, 287, 221, 185, 17, 3]
    items = [(f"t{i:02d}", v) for i, v in enumerate(values)]
    result = split(items, 10)
    assert (result.makespan, result.lower_bound, result.optimal) == (6861, 6856.7, False)
    assert split(list(reversed(items)), 10) == result
    monkeypatch.setattr(partition_module, "BOUND_RESERVE", partition_module.SEARCH_BUDGET + 1)  # no reserve
    assert split(items, 10).makespan == 6864


def test_search_budget_hit_keeps_the_best_split_found():
    # 30 files in tenths of a second on 10 shards (three a shard): the exact search cannot
    # settle it within its budget; the split is the best found and `optimal` says it is not proven.
    values = [276.3, 279.8, 202.4, 60.3, 130.5, 59.0, 268.0, 94.5, 158.6, 211.6, 99.0, 261.4, 88.2, 273.8,
              166.3, 269.4, 319.3, 114.0, 82.2, 278.2, 273.9, 301.6, 116.9, 192.5, 79.9, 264.3, 331.6, 65.7,
              271.1, 64.4]
    items = [(f"t{i:02d}", v) for i, v in enumerate(values)]
    result = split(items, 10)
    assert (result.makespan, result.lower_bound, result.optimal) == (570.8, 565.47, False)
    assert result.makespan <= lpt_makespan(values, 10)
    assert sorted(s.est_seconds for s in result.shards) == [553.7, 554.5, 565.9, 566.3, 567.9, 567.9, 569.1, 569.2,
                                                            569.4, 570.8]
    assert split(list(reversed(items)), 10) == result


@pytest.mark.parametrize("inside, others, free, expected", [
    pytest.param([2], [1], 2, True, id="a-longer-file-in-place-of-one"),
    pytest.param([2], [1], 1, False, id="no-room-for-the-longer-file"),
    pytest.param([1, 2], [0], 0, True, id="one-file-in-place-of-two-of-equal-sum"),
    pytest.param([2, 3], [0], 3, True, id="one-file-in-place-of-two-with-room"),
    pytest.param([2, 3], [0], 2, False, id="no-room-for-the-file-in-place-of-two"),
    pytest.param([1, 3], [5], 3, True, id="the-file-left-out-just-fits"),
    pytest.param([1, 2], [3, 4], 9, False, id="files-left-out-shorter"),
    pytest.param([], [0, 1], 9, False, id="nothing-inside"),
    pytest.param([2, 3, 4], [0], 1, True, id="one-file-in-place-of-three-with-room"),
    pytest.param([2, 3, 4], [0], 0, False, id="no-room-for-the-file-in-place-of-three"),
    pytest.param([1, 3, 4], [0], 0, False, id="three-files-longer-than-the-one-left-out"),
    pytest.param([1, 3, 4], [5], 1, True, id="the-file-left-out-just-fits-in-place-of-three"),
    pytest.param([2, 3, 4, 7], [0], 0, True, id="one-file-in-place-of-four-of-equal-sum"),
    pytest.param([2, 3, 4, 7], [5], 2, True, id="one-file-in-place-of-four-with-room"),
    pytest.param([2, 3, 4, 7], [5], 1, False, id="no-room-for-the-file-in-place-of-four"),
    pytest.param([2, 3, 4, 6, 7], [5], 0, True, id="one-file-in-place-of-all-five-of-equal-sum"),
])
def test_a_way_to_fill_a_shard_is_dominated_when_a_longer_file_left_out_can_take_a_place(inside, others, free,
                                                                                       expected):
    # est values by index: 0 -> 10, 1 -> 6, 2 -> 4, 3 -> 3, 4 -> 2, 5 -> 12, 6 -> 2, 7 -> 1
    weights = [10, 6, 4, 3, 2, 12, 2, 1]
    spent = [0, 10**9]
    assert _dominated(weights, inside, others, free, spent) is expected
    assert spent[0] == 0  # at most five files inside: fewer groups than a unit of work


def test_the_dominance_check_counts_the_groups_it_looks_at():
    # 16 files of 1 inside, one of 100 outside: no swap fits, so all 120 pairs, 560 triples and
    # 1820 fours are looked at.
    weights = [1] * 16 + [100]
    spent = [0, 10**9]
    assert _dominated(weights, list(range(16)), [16], 5, spent) is False
    assert spent[0] == 16 * 15 // 128 + 16 * 15 * 14 // 384 + 16 * 15 * 14 * 13 // 1536


def dominated_by_brute_force(weights: list[int], inside: list[int], others: list[int], free: int) -> bool:
    """Whether a file of `others` is longer than one file of `inside`, or at least as long as
    two, three or four of them together or all of them, and at most `free` longer."""
    for size in sorted({1, 2, 3, 4, len(inside)} - {0}):
        for group in itertools.combinations(inside, size):
            total = sum(weights[i] for i in group)
            for j in others:
                if (weights[j] > total if size == 1 else weights[j] >= total) and weights[j] <= total + free:
                    return True
    return False


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=10), st.data())
def test_the_dominance_check_finds_exactly_the_swaps_of_one_to_four_files_or_all(values, data):
    weights = sorted(values, reverse=True)  # files longest first, as the search holds them
    chosen = data.draw(st.sets(st.sampled_from(range(len(weights)))))
    inside = sorted(chosen)
    others = [i for i in range(len(weights)) if i not in chosen]
    free = data.draw(st.integers(min_value=0, max_value=20))
    spent = [0, 10**9]
    assert _dominated(weights, inside, others, free, spent) is dominated_by_brute_force(weights, inside, others,
                                                                                        free)


# Stages whose shards hold three to six files, several of them short: the ways to fill a shard
# often have three files or more besides its first, which one file may take the place of.
MANY_SHORT = st.one_of(st.integers(min_value=1, max_value=12), st.integers(min_value=20, max_value=60))


@settings(max_examples=200, deadline=None)
@given(st.lists(MANY_SHORT, min_size=8, max_size=13), st.integers(min_value=2, max_value=3),
       st.randoms(use_true_random=False))
def test_stages_of_many_short_files_are_proven_optimal_against_an_exact_search(values, partitions, rnd):
    items = [(f"tests/test_{i:02d}.py", v) for i, v in enumerate(values)]
    result = split(items, partitions)
    check_shards(dict(items), partitions, result.shards)
    assert result.optimal
    assert Fraction(repr(float(result.makespan))) == reference_makespan(values, partitions)
    rnd.shuffle(items)
    assert split(items, partitions) == result


def test_pairs_of_shards_in_hundredths_are_re_split_exactly_within_the_budget(monkeypatch):
    # 24 files in hundredths of a second on 6 shards: a pair's load is some 10^6 units, and
    # subset sums as bits would cost some 130,000 units of work a pair, so the rounds over
    # the pairs would spend the local search's budget; the subset sums of each half of the
    # pair's 8 files (16 sums each) split it as evenly for 208 units. The exact search then
    # finds a shorter split within its budget; with 90,000 units it also rules out every
    # shorter one.
    values = [958.71, 2351.61, 838.43, 1945.64, 1233.75, 1163.46, 903.42, 203.54, 1342.45, 1846.55, 311.78,
              2899.44, 146.67, 247.63, 1353.15, 2692.35, 3391.5, 2535.53, 293.38, 530.82, 760.15, 1666.57,
              31.29, 1044.07]
    items = [(f"t{i:02d}", v) for i, v in enumerate(values)]
    result = split(items, 6)
    assert (result.makespan, result.lower_bound, result.optimal) == (5120.79, 5115.315, False)
    assert sorted(s.est_seconds for s in result.shards) == [5110.36, 5111.61, 5115.85, 5116.44, 5116.84, 5120.79]
    assert lpt_makespan(values, 6) == Fraction("5148.04")
    assert split(list(reversed(items)), 6) == result
    monkeypatch.setattr(partition_module, "SEARCH_BUDGET", 90_000)
    result = split(items, 6)
    assert (result.makespan, result.lower_bound, result.optimal) == (5120.36, 5115.315, True)
    assert sorted(s.est_seconds for s in result.shards) == [5106.97, 5111.73, 5114.64, 5119.07, 5119.12, 5120.36]


def test_files_that_cannot_share_a_shard_with_the_longest_ones_raise_the_bound(monkeypatch):
    # Below 11, the 7 is alone (7 + 4 > 10) and the five 4s share the other two shards: one
    # holds three of them (12). The mean (9) and L2 (10: the 4s' sum fits in two shards) miss it.
    weights = [7, 4, 4, 4, 4, 4]
    assert _lower_bound(weights, 3) == 9
    assert _apart_needs_more(sorted(weights), 10, 3)
    assert not _apart_needs_more(sorted(weights), 11, 3)
    assert _packing_bound(weights, 3, 9, 11) == 11
    result = split([(f"t{i}", w) for i, w in enumerate(weights)], 3)
    assert (result.makespan, result.lower_bound, result.optimal) == (11, 9, True)
    monkeypatch.setattr(partition_module, "APART_BOUND_FILES", 0)
    assert _packing_bound(weights, 3, 9, 11) == 10


def test_a_stage_on_common_est_values_is_proven_by_the_files_apart_from_the_longest():
    # In units of 30s: the three 120s leave room for at most 59 beside them, so the 80s and
    # 60s (80, 80, 60, 60, 60) share the two other shards, and a third file in either is over
    # 179: no split is shorter than 180 units (5400s), the split found.
    values = [30, 60, 60, 60, 90, 90, 120, 60, 120, 120, 180, 180, 180, 60, 600, 300, 1200, 600, 1800, 1800,
              1800, 2400, 2400, 1200, 3600, 3600, 3600]
    weights = sorted((v // 30 for v in values), reverse=True)
    assert _packing_bound(weights, 5, _lower_bound(weights, 5), 180) == 180
    result = split([(f"t{i:02d}", v) for i, v in enumerate(values)], 5)
    assert (result.makespan, result.lower_bound, result.optimal) == (5400, 5262, True)


def test_a_capacity_is_ruled_out_by_the_remainders_of_the_est_values():
    # 27 in 3 shards of 9 would waste nothing, but 9 is odd and only one file (3) is: two
    # shards are even, 8 at most. Mean, longest, pigeonhole and L2 all allow 9.
    weights = [6, 6, 6, 3, 2, 2, 2]
    assert _packing_bound(weights, 3, _lower_bound(weights, 3), 10) == 9
    assert _residues_rule_out(weights, 3, 9)
    assert not _residues_rule_out(weights, 3, 10)
    result = split([(f"t{i}", w) for i, w in enumerate(weights)], 3)
    assert (result.makespan, result.lower_bound, result.optimal) == (10, 9, True)


def test_a_stage_on_common_est_values_is_proven_by_the_remainders():
    # In units of 30s: 354 on 5 shards, 71 would leave one unit to waste, but 71 is odd and
    # only two files (30s, 90s) are odd: three shards would be even, 70 at most.
    values = [30, 60, 60, 60, 90, 60, 120, 120, 120, 120, 120, 120, 120, 180, 180, 180, 180, 300, 300, 300, 300,
              300, 300, 300, 300, 600, 600, 600, 900, 900, 900, 900, 900]
    result = split([(f"t{i:02d}", v) for i, v in enumerate(values)], 5)
    assert (result.makespan, result.lower_bound, result.optimal) == (2160, 2124, True)


def optimum(weights: list[int], count: int) -> int:
    """The shortest makespan over every assignment (none empty when there are enough files)."""
    count = min(count, len(weights))
    return min(max(sum(w for w, s in zip(weights, assign, strict=True) if s == shard) for shard in range(count))
               for assign in itertools.product(range(count), repeat=len(weights)) if len(set(assign)) == count)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(min_value=1, max_value=30),
                          st.integers(min_value=1, max_value=8).map(lambda v: 6 * v)), min_size=2, max_size=7),
       st.integers(min_value=2, max_value=4))
def test_the_lower_bounds_never_exceed_the_optimum(values, count):
    weights = sorted(values, reverse=True)
    count = min(count, len(weights))
    best = optimum(weights, count)
    low = _lower_bound(weights, count)
    assert low <= best
    assert _packing_bound(weights, count, low, best + 5) <= best
    for limit in range(best, best + 5):
        assert not _apart_needs_more(sorted(weights), limit, count)
        assert not _residues_rule_out(weights, count, limit)


def test_the_pair_re_splits_go_on_from_the_work_given_and_add_theirs():
    weights = [5, 4, 3, 3, 2, 1]
    uneven = [0, 0, 0, 1, 1, 1]  # 12 and 6
    assert _local_search(weights, uneven, 2, 9, [10, 10]) == uneven  # no work left
    spent = [10, 10_000]
    even = _local_search(weights, uneven, 2, 9, spent)
    assert sorted(sum(w for w, s in zip(weights, even, strict=True) if s == shard) for shard in (0, 1)) == [9, 9]
    assert spent[0] > 10


def best_half(weights: list[int]) -> int:
    """The largest sum of a subset of `weights` of at most half their sum, by brute force."""
    half = sum(weights) // 2
    return max(s for r in range(len(weights) + 1) for c in itertools.combinations(weights, r)
               if (s := sum(c)) <= half)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=2, max_size=12))
def test_a_pair_split_by_halves_is_as_even_as_subset_sums_make_it(weights):
    weights.sort(reverse=True)  # files longest first, as the planner holds them
    pair = list(range(len(weights)))
    halves = _split_by_halves(weights, pair, sum(weights))
    assert halves is not None
    large, small = halves
    assert large and small
    assert sorted(large + small) == pair
    assert large == sorted(large) and small == sorted(small)
    assert sum(weights[i] for i in small) == best_half(weights)
    assert _split_by_halves(weights, pair, sum(weights)) == halves


def test_the_work_of_a_split_by_halves():
    assert _halves_cost(2) == 4 * (2 * 3 + 2 * 3) + 16
    assert _halves_cost(9) == 4 * (16 * 6 + 32 * 7) + 16
    assert _halves_cost(26) == 4 * 2 * (1 << 13) * 15 + 16
    assert _halves_cost(27) > 3_000_000


def test_stage_split_reports_the_split_and_the_reason():
    stage = Stage(name="s", backend="cuda", partitions=3)
    items = [("a", 5), ("b", 5), ("c", 4), ("d", 4), ("e", 3), ("f", 3), ("g", 3)]
    assert stage_split(stage, items) == (split(items, 3), None)
    result, why = stage_split(auto_stage(9), items)
    assert (result.makespan, result.lower_bound, result.optimal) == (9, 9, True)
    assert why == "3 shards: 27s selected / 9s per shard"


SMALL_VALUES = st.one_of(st.integers(min_value=0, max_value=12),
                         st.integers(min_value=0, max_value=400).map(lambda v: v / 10))
SMALL_ITEMS = st.dictionaries(NAMES, SMALL_VALUES, min_size=1, max_size=7)


@settings(max_examples=200, deadline=None)
@given(SMALL_ITEMS, st.integers(min_value=2, max_value=4), st.randoms(use_true_random=False))
def test_optimal_means_optimal_against_brute_force(items, partitions, rnd):
    result = split(list(items.items()), partitions)
    check_shards(items, partitions, result.shards)
    loads = [sum(as_fraction(float(items[f])) for f in s.files) for s in result.shards]
    assert result.makespan == _tidy(float(max(loads)))
    optimum = brute_force_makespan(list(items.values()), partitions)
    assert max(loads) >= optimum
    if result.optimal:
        assert max(loads) == optimum
    # Small inputs are always settled within the budget.
    assert result.optimal
    pairs = list(items.items())
    rnd.shuffle(pairs)
    assert split(pairs, partitions) == result


@settings(max_examples=200, deadline=None)
@given(st.one_of(INT_ITEMS, FLOAT_ITEMS), PARTITIONS)
def test_never_longer_than_lpt_and_bounds_hold(items, partitions):
    result = split(list(items.items()), partitions)
    check_shards(items, partitions, result.shards)
    if not items:
        return
    values = list(items.values())
    loads = [sum(as_fraction(float(items[f])) for f in s.files) for s in result.shards]
    assert max(loads) <= lpt_makespan(values, partitions), "longer than list scheduling"
    if max(loads) == lpt_makespan(values, partitions):
        assert [s.files for s in result.shards] == lpt_files(items, partitions), "not list scheduling's split"
    assert result.makespan == _tidy(float(max(loads)))
    count = len(result.shards)
    lower = max(sum(as_fraction(float(v)) for v in values) / count, max(as_fraction(float(v)) for v in values))
    assert result.lower_bound == _tidy(float(lower))
    assert max(loads) >= lower
    if max(loads) == lower:
        assert result.optimal


REALISTIC = st.one_of(st.integers(min_value=1, max_value=3600),
                      st.integers(min_value=10, max_value=36000).map(lambda v: v / 10))
# est_time in whole seconds 1..3600, in tenths or in hundredths of a second.
EST_VALUES = st.sampled_from([1, 10, 100]).flatmap(
    lambda unit: st.integers(min_value=unit, max_value=3600 * unit).map(lambda v: v if unit == 1 else v / unit))


@settings(max_examples=150, deadline=None)
@given(st.data(), st.integers(min_value=2, max_value=4))
def test_realistic_small_stages_are_proven_optimal_against_brute_force(data, partitions):
    unit = data.draw(st.sampled_from([1, 10, 100]))
    values = data.draw(st.lists(st.integers(min_value=unit, max_value=3600 * unit)
                                .map(lambda v: v if unit == 1 else v / unit), min_size=1, max_size=8 - partitions // 2))
    items = [(f"tests/test_{i:02d}.py", v) for i, v in enumerate(values)]
    result = split(items, partitions)
    loads = [sum(as_fraction(float(dict(items)[f])) for f in s.files) for s in result.shards]
    assert result.optimal
    assert max(loads) == brute_force_makespan(values, partitions)


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=2, max_value=16).flatmap(
    lambda shards: st.tuples(st.just(shards), st.lists(EST_VALUES, min_size=1, max_size=min(60, 2 * shards)))),
    st.randoms(use_true_random=False))
def test_stages_of_at_most_two_files_a_shard_are_proven_optimal(case, rnd):
    partitions, values = case
    items = [(f"tests/test_{i:02d}.py", v) for i, v in enumerate(values)]
    result = split(items, partitions)
    assert result.optimal
    rnd.shuffle(items)
    assert split(items, partitions) == result


@settings(max_examples=200, deadline=None)
@given(st.lists(REALISTIC, min_size=1, max_size=60), st.randoms(use_true_random=False))
def test_two_shards_of_up_to_sixty_files_are_proven_optimal(values, rnd):
    items = [(f"tests/test_{i:02d}.py", v) for i, v in enumerate(values)]
    result = split(items, 2)
    assert result.optimal
    rnd.shuffle(items)
    assert split(items, 2) == result


def reference_makespan(values: list, partitions: int) -> Fraction:
    """The shortest split of positive values, by a plain exact search (in hundredths of a
    second): files longest first, each to every shard it fits in below the best split so far,
    shards of equal load tried once. (A split with an empty shard is never shorter than every
    split without: a file moved to the empty shard lengthens nothing.)"""
    hundredths = sorted((round(v * 100) for v in values), reverse=True)
    count = min(partitions, len(hundredths))
    loads = [0] * count
    best = [sum(hundredths) + 1]

    def place(i: int) -> None:
        if i == len(hundredths):
            best[0] = min(best[0], max(loads))
            return
        seen = set()
        for shard in range(count):
            if loads[shard] in seen or loads[shard] + hundredths[i] >= best[0]:
                continue
            seen.add(loads[shard])
            loads[shard] += hundredths[i]
            place(i + 1)
            loads[shard] -= hundredths[i]

    place(0)
    return Fraction(best[0], 100)


@settings(max_examples=150, deadline=None)
@given(st.data(), st.integers(min_value=2, max_value=5), st.randoms(use_true_random=False))
def test_stages_of_up_to_twelve_files_are_proven_optimal_against_an_exact_search(data, partitions, rnd):
    # est in whole seconds, tenths or hundredths, or a few common values: proven and shortest.
    unit = data.draw(st.sampled_from([1, 10, 100, 0]))
    if unit == 0:
        est = st.sampled_from([30, 60, 90, 120, 300, 600, 1800])
    else:
        est = st.integers(min_value=unit, max_value=3600 * unit).map(lambda v: v if unit == 1 else v / unit)
    values = data.draw(st.lists(est, min_size=partitions, max_size=12))
    items = [(f"tests/test_{i:02d}.py", v) for i, v in enumerate(values)]
    result = split(items, partitions)
    check_shards(dict(items), partitions, result.shards)
    loads = [sum(as_fraction(float(dict(items)[f])) for f in s.files) for s in result.shards]
    assert result.optimal
    assert max(loads) == reference_makespan(values, partitions)
    rnd.shuffle(items)
    assert split(items, partitions) == result


COMMON = [30, 60, 90, 120, 180, 300, 600, 900, 1200, 1800, 2400, 3600]


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(COMMON), min_size=1, max_size=60).flatmap(
    lambda values: st.tuples(st.just(values), st.integers(min_value=1, max_value=min(len(values), 20)))),
    st.randoms(use_true_random=False))
def test_stages_of_up_to_sixty_files_on_common_est_values_are_never_longer_than_lpt_in_any_order(case, rnd):
    # Proven optimal or not (a few such stages are not: see below), never longer than list
    # scheduling, and the same split whatever the order of the files.
    values, partitions = case
    items = [(f"tests/test_{i:02d}.py", v) for i, v in enumerate(values)]
    result = split(items, partitions)
    assert result.makespan <= lpt_makespan(values, partitions)
    assert result.lower_bound <= result.makespan
    rnd.shuffle(items)
    assert split(items, partitions) == result


@pytest.mark.slow
def test_nearly_every_stage_of_up_to_sixty_files_on_common_est_values_is_proven_optimal():
    # 300 stages drawn with a fixed seed (est values multiples of 30s: the search works in
    # units of 30s); the work is counted, so the count is the same on every machine. Not
    # every one: 10 of them (on 4 to 15 shards) stay a few percent above every lower bound.
    rnd = random.Random(15)
    unproven = []
    for _ in range(300):
        n = rnd.randint(1, 60)
        values = [rnd.choice(COMMON) for _ in range(n)]
        partitions = rnd.randint(1, min(n, 20))
        result = split([(f"tests/test_{i:02d}.py", v) for i, v in enumerate(values)], partitions)
        if not result.optimal:
            unproven.append((n, partitions))
    assert len(unproven) <= 10, unproven


def test_est_values_with_a_common_divisor_are_split_in_its_units():
    # Every est a multiple of 30s: 26070s on 4 shards needs at least 6517.5s, so 6518s, but
    # loads are multiples of 30s: the split of 6540s is the shortest, and proven so at once.
    values = [2400, 2400, 2400, 1800, 1800, 1200, 1200, 1200] + [900] * 6 + [600] * 3 + [300] * 4 + \
        [180] * 7 + [120] * 7 + [90] * 7 + [60] * 6 + [30] * 6
    items = [(f"t{i:02d}", v) for i, v in enumerate(values)]
    result = split(items, 4)
    assert (result.makespan, result.lower_bound, result.optimal) == (6540, 6517.5, True)
    assert sorted(s.est_seconds for s in result.shards) == [6510, 6510, 6510, 6540]


# -- partitions: auto ----------------------------------------------------------------------------

def auto_stage(shard_seconds: float, max_partitions: int | None = None) -> Stage:
    return Stage(name="s", backend="cuda", partitions="auto", shard_seconds=shard_seconds,
                 max_partitions=max_partitions)


AUTO = [
    pytest.param([("a", 1000), ("b", 430), ("c", 300)], 600, None,
                 [(1000, ("a",)), (430, ("b",)), (300, ("c",))], "3 shards: 1730s selected / 600s per shard",
                 id="ceil-of-the-selected-sum"),
    pytest.param([("a", 120), ("b", 60)], 600, 8, [(180, ("a", "b"))], "1 shard: 180s selected / 600s per shard",
                 id="two-short-tests-get-one-runner-not-eight"),
    pytest.param([("a", 600), ("b", 600)], 600, None, [(600, ("a",)), (600, ("b",))],
                 "2 shards: 1200s selected / 600s per shard", id="an-exact-multiple-adds-no-shard"),
    pytest.param([("a", 0.1), ("b", 0.2)], 0.1, None, [(0.2, ("b",)), (0.1, ("a",))],
                 "2 shards: 0.3s selected / 0.1s per shard = 3, but only 2 selected files",
                 id="exact-on-decimals-and-at-most-one-shard-per-file"),
    pytest.param([("a", 0), ("b", 0)], 600, None, [(0, ("a", "b"))],
                 "1 shard: 0s selected / 600s per shard (at least 1)",
                 id="zero-seconds-is-still-one-shard"),
    pytest.param([(f"t{i}", 1000) for i in range(10)], 600, 4,
                 [(3000, ("t0", "t4", "t8")), (3000, ("t1", "t5", "t9")), (2000, ("t2", "t6")),
                  (2000, ("t3", "t7"))],
                 "4 shards: 10000s selected / 600s per shard = 17, capped by max_partitions 4", id="capped"),
    pytest.param([("a", 2000)], 600, None, [(2000, ("a",))],
                 "1 shard: 2000s selected / 600s per shard = 4, but only 1 selected file", id="one-long-file"),
]


@pytest.mark.parametrize("items, shard_seconds, max_partitions, expected, reason", AUTO)
def test_auto_shards_and_their_reason(items, shard_seconds, max_partitions, expected, reason):
    shards, why = stage_shards(auto_stage(shard_seconds, max_partitions), items)
    assert [(s.est_seconds, s.files) for s in shards] == expected
    assert why == reason


def test_no_selected_file_no_shard_and_no_reason():
    assert stage_shards(auto_stage(600), []) == ((), None)


def test_a_fixed_partition_count_has_no_reason():
    shards, why = stage_shards(Stage(name="s", backend="cpu", partitions=2), [("a", 5), ("b", 3)])
    assert (shards, why) == (partition([("a", 5), ("b", 3)], 2), None)


def test_auto_count_refuses_a_non_positive_shard_seconds():
    with pytest.raises(ValueError) as info:
        auto_count(10, 0)
    assert str(info.value) == "shard_seconds must be > 0, got 0"


@settings(max_examples=300, deadline=None)
@given(INT_ITEMS, st.integers(min_value=1, max_value=5000), st.one_of(st.none(), PARTITIONS))
def test_auto_count_properties(items, shard_seconds, max_partitions):
    total = sum(items.values())
    count = auto_count(total, shard_seconds, max_partitions)
    # clamp(ceil(sum / S), 1, max_partitions), in exact integer arithmetic.
    expected = max(1, -(-total // shard_seconds))
    assert count == (expected if max_partitions is None else min(expected, max_partitions))
    if max_partitions is None or count < max_partitions:
        # Enough shards: each carries at most S on average, and one fewer would not be.
        assert total <= count * shard_seconds
        assert count == 1 or total > (count - 1) * shard_seconds
    shards, why = stage_shards(auto_stage(shard_seconds, max_partitions), list(items.items()))
    check_shards(items, count, shards)
    assert (why is None) == (not items)
    if items:
        assert why.startswith(f"{len(shards)} shard{'' if len(shards) == 1 else 's'}: {total}s selected / "
                              f"{shard_seconds}s per shard")
    # More seconds per shard never means more shards.
    assert auto_count(total, shard_seconds + 1, max_partitions) <= count


@settings(max_examples=200, deadline=None)
@given(FLOAT_ITEMS, st.floats(min_value=0.001, max_value=1e5, allow_nan=False, allow_infinity=False))
def test_auto_count_with_float_times_is_the_ceiling_of_the_tidied_sum(items, shard_seconds):
    from fractions import Fraction

    total = _tidy(math.fsum(items.values()))
    count = auto_count(total, shard_seconds)
    exact = Fraction(repr(total)) / Fraction(repr(shard_seconds))
    assert count == max(1, math.ceil(exact))
    assert count - 1 < max(exact, 1) <= count


def test_large_sums_print_every_digit():
    items = [(f"t{i}", 123456.5) for i in range(10)]
    assert stage_shards(auto_stage(100000), items)[1] == ("10 shards: 1234565s selected / 100000s per shard = 13, "
                                                         "but only 10 selected files")


# -- stages larger than Python's default recursion depth -------------------------------------

def _at_depth(frames: int, fn):
    return fn() if frames <= 0 else _at_depth(frames - 1, fn)


def _stack_depth() -> int:
    import sys
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def test_the_exact_search_gives_the_same_split_however_deep_its_caller_is():
    import random
    import sys

    rng = random.Random(9)  # 48 files in 12 shards: settled by the exact search, not by a bound
    items = [(f"t{i:03d}.py", rng.randint(100, 3600)) for i in range(48)]
    result = split(items, 12)
    assert (result.makespan, result.optimal) == (7043, True) and result.lower_bound < 7043
    # Asked a few frames below Python's recursion limit, the search still runs to the end.
    room = sys.getrecursionlimit() - _stack_depth() - 40
    assert _at_depth(room, lambda: split(items, 12)) == result
    before = sys.getrecursionlimit()
    split(items, 12)
    assert sys.getrecursionlimit() == before


def test_a_stage_beyond_the_search_depth_keeps_the_heuristic_split():
    # The shape of a generated 20,000-file repository's largest stage: before the size bound,
    # its exact search recursed once per file placed, past Python's limit (RecursionError).
    items = [(f"tests/test_case_{i}.py", 60 + (i * 37) % 900) for i in range(0, 20_000, 6)]
    assert len(items) + 2 * 4 > SEARCH_DEPTH
    result = split(items, 4)
    assert (result.makespan, result.lower_bound, result.optimal) == (422946, 422920.5, False)
    assert sorted(s.est_seconds for s in result.shards) == [422892, 422922, 422922, 422946]


class _Splits:
    """A `SplitCache` over a dict, recording what `split` asked of it."""

    def __init__(self) -> None:
        self.entries: dict[str, object] = {}
        self.refused: list[str] = []

    def get(self, key: str) -> object:
        return self.entries.get(key)

    def put(self, key: str, value: list[int]) -> None:
        self.entries[key] = value

    def refuse(self, key: str) -> None:
        self.refused.append(key)


def test_a_cached_split_is_the_computed_one_and_is_not_computed_again(monkeypatch):
    import random

    rng = random.Random(9)
    stages = [([(f"t{i:03d}.py", rng.choice([rng.randint(100, 3600), rng.randint(10, 3600) / 10]))
                for i in range(files)], shards) for files, shards in [(48, 12), (27, 3), (12, 3), (5, 8), (1, 1)]]
    cache = _Splits()
    cold = [split(items, shards, cache) for items, shards in stages]
    assert cold == [split(items, shards) for items, shards in stages] and len(cache.entries) == 5
    monkeypatch.setattr(partition_module, "_computed", lambda *a: pytest.fail("computed again"))
    assert [split(list(reversed(items)), shards, cache) for items, shards in stages] == cold
    assert cache.refused == []


def test_a_split_of_another_partitioner_or_other_est_values_is_not_looked_up(monkeypatch):
    cache = _Splits()
    items = [("a.py", 30), ("b.py", 20), ("c.py", 20), ("d.py", 20), ("e.py", 10)]
    split(items, 2, cache)
    split([*items[:4], ("e.py", 11)], 2, cache)
    split(items, 3, cache)
    monkeypatch.setattr(partition_module, "SPLIT_VERSION", partition_module.SPLIT_VERSION + 1)
    split(items, 2, cache)
    assert len(cache.entries) == 4 and cache.refused == []


def test_a_stored_split_is_checked_against_the_files_it_is_for():
    items = [("a.py", 3), ("b.py", 3), ("c.py", 2), ("d.py", 2), ("e.py", 2)]  # LPT 7, optimal 6
    cold = split(items, 2)
    assert (cold.makespan, cold.optimal) == (6, True)
    cache = _Splits()
    split(items, 2, cache)
    (key,) = cache.entries
    assert cache.entries[key] == [1, 1, 1, 0, 0, 0]  # proven; a, b / c, d, e (files longest first)
    for bad in ([1, 1, 1, 0, 0], [1, 1, 1, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0], [2, 1, 1, 0, 0, 0], [True, 1, 1, 0, 0, 0],
                [1, 1, 1, 0, 0, 2], [1, 1, 1, 0, 0, -1], [1, 1, 1, 0, 0, 0.0], [1, 1, 1, 0, 0, "0"],
                [0, 1, 1, 0, 0, 0],  # at the lower bound, stored as not proven
                [1, 0, 0, 0, 0, 1],  # a, b, c, d / e: 10, longer than LPT's 7
                "x", {"a": 1}, []):
        cache.entries[key], cache.refused = bad, []
        assert split(items, 2, cache) == cold and cache.refused == [key], bad
    # A split no shorter than LPT is LPT's, as computing gives; a valid shorter one is taken as stored.
    cache.entries[key], cache.refused = [0, 0, 1, 0, 1, 1], []  # a, c / b, d, e: 5 and 7, as long as LPT's split
    forged = split(items, 2, cache)
    assert cache.refused == [] and forged.makespan == 7 and not forged.optimal
    assert [s.files for s in forged.shards] == [("a.py", "c.py", "e.py"), ("b.py", "d.py")]  # LPT's own split
    cache.entries[key] = [1, 0, 0, 1, 1, 1]  # the cold split with its shards numbered the other way
    assert split(items, 2, cache) == cold and cache.refused == []
