"""Shards (`ci_policy.plan.partition`): exact splits for small inputs, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_policy.plan.partition import Shard, imbalance, makespan, partition

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
