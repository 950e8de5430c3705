"""The evidence model (`ci_policy.adapters.tuning.evidence`): statuses and their precedence,
a job name's stage and shard, and a row's `passed`."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tuning_cases import ev

from ci_policy.adapters.tuning.evidence import JOB_NAME_RE, PRECEDENCE, STATUSES, stage_and_shard, strongest

# -- statuses ---------------------------------------------------------------------------------------------

def test_statuses_and_their_precedence_are_the_documented_order():
    assert STATUSES == ("passed", "timeout", "unknown", "failed", "cancelled", "not_run")
    assert PRECEDENCE == {s: i for i, s in enumerate(STATUSES)}


def stronger(a: str, b: str) -> bool:
    return strongest([a, b]) == a and a != b


@given(st.sampled_from(STATUSES), st.sampled_from(STATUSES), st.sampled_from(STATUSES))
def test_strongest_is_a_total_order_matching_statuses(a, b, c):
    # total and antisymmetric: exactly one of a>b, b>a, a==b
    assert [stronger(a, b), stronger(b, a), a == b].count(True) == 1
    # it is the order of STATUSES
    assert stronger(a, b) == (STATUSES.index(a) < STATUSES.index(b))
    # transitive
    if stronger(a, b) and stronger(b, c):
        assert stronger(a, c)
    assert strongest([a, b]) == strongest([b, a]) in (a, b)
    assert strongest([a, a]) == a


@given(st.lists(st.sampled_from(STATUSES), min_size=1), st.randoms())
def test_strongest_of_any_list_is_its_first_status_in_statuses_order(statuses, rnd):
    expected = next(s for s in STATUSES if s in statuses)
    assert strongest(statuses) == expected
    shuffled = list(statuses)
    rnd.shuffle(shuffled)
    assert strongest(shuffled) == expected
    assert strongest(iter(statuses)) == expected
    half = len(statuses) // 2
    if 0 < half:
        assert strongest([strongest(statuses[:half]), strongest(statuses[half:])]) == expected


def test_strongest_refuses_nothing_and_unknown_statuses():
    with pytest.raises(ValueError):
        strongest([])
    with pytest.raises(KeyError):
        strongest(["passed", "PASS"])


# -- a job name's stage and shard -------------------------------------------------------------------------

@pytest.mark.parametrize("job_name, expected", [
    # the forms a stage's jobs are named in
    ("stage-c-4-gpu-h200 (shard 1)", ("stage-c-4-gpu-h200", 1)),
    ("stage-c-4-gpu-h200 (1)", ("stage-c-4-gpu-h200", 1)),
    ("stage-c-4-gpu-h200 / shard 1", ("stage-c-4-gpu-h200", 1)),
    ("stage-a-cpu", ("stage-a-cpu", None)),
    # spacing is free
    ("  gpu ( shard  12 )  ", ("gpu", 12)),
    ("gpu(3)", ("gpu", 3)),
    ("gpu/shard2", ("gpu", 2)),
    # a reusable workflow's "caller / job": the job is the last part, unless that is "shard N"
    ("pr-test / stage-c-4-gpu-h200 (2)", ("stage-c-4-gpu-h200", 2)),
    ("caller / inner / gpu (4)", ("gpu", 4)),
    ("pr-test / stage-b / shard 3", ("stage-b", 3)),
    ("pr-test / stage-b", ("stage-b", None)),
    # a shard that is not a number is no shard
    ("gpu (x)", ("gpu", None)),
    # no name to start with
    ("(1)", (None, None)),
    ("-x", (None, None)),
    ("ä", (None, None)),
    ("", (None, None)),
    ("   ", (None, None)),
])
def test_stage_and_shard(job_name, expected):
    assert stage_and_shard(job_name) == expected


def test_job_name_re_names_its_groups():
    m = JOB_NAME_RE.fullmatch("gpu (shard 7)")
    assert m is not None and (m["stage"], m["shard"], m["shard2"]) == ("gpu", "7", None)
    m = JOB_NAME_RE.fullmatch("gpu / shard 8")
    assert m is not None and (m["stage"], m["shard"], m["shard2"]) == ("gpu", None, "8")


# -- rows -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("status", STATUSES)
def test_a_row_passed_only_with_status_passed(status):
    row = ev("tests/a.py", status, 1.0, 2.0, 3, source="s", stage="gpu", shard=0)
    assert row.passed is (status == "passed")
