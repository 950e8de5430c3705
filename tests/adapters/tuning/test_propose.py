"""est_time proposals (`ci_policy.adapters.tuning.propose`): bucket rounding, q, every action and skip
reason with exact `Proposal` values, grouping across runs/shards/backends, the balance report,
and property tests (rounding, monotonicity, non-passed samples). The status precedence itself
is in `test_evidence.py`."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import EXAMPLE_REPO, MAIN_BLOCK, MINIMAL_CONFIG, MINIMAL_LABELS
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ci_policy.adapters.tuning.evidence import STATUSES, FileEvidence
from ci_policy.adapters.tuning.propose import (
    Proposal,
    StageBalance,
    balance,
    bucket,
    propose,
    proposed_for,
    q_of,
    quantile_nearest_rank,
)
from ci_policy.cli import main
from ci_policy.config.tune import TuneConfig
from ci_policy.model.snapshot import load_snapshot

TUNE = TuneConfig()  # safety 1.25, quantile 0.9, min_samples_for_quantile 5, deadband 0.2

IMPLICIT_REASON = "implicit registration: its est_time is configuration, not a literal"
UNPLACED_REASON = "no stage in the evidence and the file is not registered for exactly one backend"

# (file, text); the registration lines matter for the "several registrations" reason.
FILES = {
    "tests/test_a.py": 'from ci_policy import register_cuda_ci\n'
                       'register_cuda_ci(est_time=300, suite="gpu-a", labels=["fsdp"])\n',
    "tests/test_b.py": 'from ci_policy import register_cuda_ci\n'
                       'register_cuda_ci(est_time=250, suite="gpu-a", labels=["fsdp"])\n',
    "tests/test_c.py": 'from ci_policy import register_cuda_ci\n'
                       'register_cuda_ci(est_time=240, suite="gpu-b", labels=["megatron"])\n',
    "tests/test_two.py": 'from ci_policy import register_cuda_ci\n'
                         'register_cuda_ci(100, "gpu-a", labels=["fsdp"])\n'
                         'register_cuda_ci(200, "gpu-b", labels=["fsdp"])\n',
    "tests/test_both.py": 'from ci_policy import register_cuda_ci, register_rocm_ci\n'
                          'register_cuda_ci(est_time=300, suite="gpu-a", labels=["fsdp"])\n'
                          'register_rocm_ci(est_time=480, suite="amd", labels=["fsdp"])\n',
    "tests/test_zero.py": 'from ci_policy import register_cuda_ci\n'
                          'register_cuda_ci(est_time=0, suite="gpu-b", labels=["fsdp"])\n',
    "tests/test_float.py": 'from ci_policy import register_cuda_ci\n'
                           'register_cuda_ci(est_time=1.8e3, suite="gpu-b", labels=["long"])\n',
    "tests/test_off.py": 'from ci_policy import register_cuda_ci\n'
                         'register_cuda_ci(est_time=120, suite="gpu-a", labels=["fsdp"], disabled="flaky")\n',
}


def write_repo(root: Path) -> Path:
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "ci-policy.yml").write_text(MINIMAL_CONFIG)
    (root / "labels.py").write_text(MINIMAL_LABELS)
    (root / "tests" / "unit").mkdir(parents=True)
    (root / "tests" / "unit" / "test_u.py").write_text("def test_u():\n    pass\n")
    for rel, text in FILES.items():
        (root / rel).write_text(text + MAIN_BLOCK)
    return root


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    return load_snapshot(write_repo(tmp_path_factory.mktemp("propose") / "repo")).require_valid()


def ev(file: str, status: str = "passed", elapsed=None, *, stage="gpu-a", shard=0, run_id="1", job_id="",
       job_name="", source="t.jsonl", line=1) -> FileEvidence:
    return FileEvidence(run_id=run_id, job_id=job_id, job_name=job_name, stage=stage, shard=shard, file=file,
                        status=status, elapsed=elapsed, logged_est=None, source=source, line=line)


def passed(file: str, *elapsed: float, stage: str = "gpu-a") -> list[FileEvidence]:
    return [ev(file, "passed", e, stage=stage, run_id=str(i), line=i) for i, e in enumerate(elapsed, start=1)]


A, B, C, TWO, BOTH, ZERO, FLOAT = ("tests/test_a.py", "tests/test_b.py", "tests/test_c.py", "tests/test_two.py",
                                   "tests/test_both.py", "tests/test_zero.py", "tests/test_float.py")
UNIT = "tests/unit/test_u.py"


# -- bucket and q -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    (0, 0), (0.2, 10), (1, 10), (9.99, 10), (10, 10), (10.01, 20), (11, 20), (155, 160), (190, 190),
    (199, 200), (199.5, 200), (200, 200), (200.001, 300), (201, 300), (299, 300), (300, 300), (301, 400),
    (1735, 1800), (3379, 3400), (10_000, 10_000), (10_001, 10_100),
])
def test_bucket_rounds_up_to_10s_to_200_then_100s(raw, expected):
    assert bucket(raw) == expected
    assert type(bucket(raw)) is int


def test_nearest_rank_quantile():
    values = [10.0, 1.0, 9.0, 2.0, 8.0, 3.0, 7.0, 4.0, 6.0, 5.0]
    assert quantile_nearest_rank(values, 0.9) == 9.0      # rank ceil(9.0) = 9
    assert quantile_nearest_rank(values, 0.91) == 10.0    # rank ceil(9.1) = 10
    assert quantile_nearest_rank(values, 0.5) == 5.0
    assert quantile_nearest_rank(values, 0.0) == 1.0      # rank at least 1
    assert quantile_nearest_rank(values, 1.0) == 10.0
    assert quantile_nearest_rank([42.0], 0.9) == 42.0


@pytest.mark.parametrize("samples, q", [
    ([120.0, 121.0, 122.0, 400.0], 400.0),                                   # 4 < 5: the max
    ([120.0, 121.0, 122.0, 123.0, 400.0], 400.0),                            # 5: p90 is rank 5 of 5
    ([120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0, 400.0], 400.0),  # 9: rank ceil(8.1) = 9
    ([120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0, 128.0, 400.0], 128.0),  # 10: rank 9
])
def test_q_is_the_max_below_min_samples_else_the_p90(samples, q):
    assert q_of(samples, TUNE) == q


@pytest.mark.parametrize("samples, tune, expected", [
    ([236.207], TUNE, (236.207, 300)),        # 295.25875 -> 296 -> 300
    ([160.0], TUNE, (160.0, 200)),            # exactly 200 stays 200
    ([160.8], TUNE, (160.8, 300)),            # 201 -> 300
    ([0.0], TUNE, (0.0, 0)),
    # ceil(q * safety) in decimal: 100 * 1.1 is 110, not the float 110.00000000000001 (-> 111 -> 120)
    ([100.0], TuneConfig(safety=1.1), (100.0, 110)),
    ([200.0], TuneConfig(safety=1.15), (200.0, 300)),   # 230 -> 300
    ([100.0, 200.0, 300.0], TuneConfig(quantile=0.5, min_samples_for_quantile=3), (200.0, 300)),
    ([100.0, 200.0, 300.0], TuneConfig(quantile=0.5, min_samples_for_quantile=4), (300.0, 400)),
    ([80.0], TuneConfig(safety=1.0), (80.0, 80)),
    ([80.0], TuneConfig(safety=2), (80.0, 160)),
    # finding 5: never above 7 days (lint's range), however long a sample claims to be
    ([604000.0], TUNE, (604000.0, 604800)),
    ([1e308], TUNE, (1e308, 604800)),
    ([1.7e308], TuneConfig(safety=100), (1.7e308, 604800)),
])
def test_proposed_for(samples, tune, expected):
    assert proposed_for(samples, tune) == expected


# -- every action and skip reason, exact Proposal values -----------------------------------------------------

CASES = {
    "raise": (passed(A, 380.5), True,
              [Proposal(A, "cuda", "gpu-a", (380.5,), 380.5, 300, 500, "raise")]),
    "lower": (passed(A, 100.0, 118.2, 96.5), True,
              [Proposal(A, "cuda", "gpu-a", (96.5, 100.0, 118.2), 118.2, 300, 150, "lower")]),
    "keep, unchanged": (passed(A, 230.0), True,
                        [Proposal(A, "cuda", "gpu-a", (230.0,), 230.0, 300, 300, "keep", "unchanged")]),
    "keep, at the dead-band's edge": (
        passed(B, 190.0), True,  # 237.5 -> 300: +50 of 250 is exactly 20%
        [Proposal(B, "cuda", "gpu-a", (190.0,), 190.0, 250, 300, "keep", "within the 20% dead-band")]),
    "raise, just outside the dead-band": (
        passed(C, 236.207, stage="gpu-b"), True,  # 300 vs 240: +25%
        [Proposal(C, "cuda", "gpu-b", (236.207,), 236.207, 240, 300, "raise")]),
    "keep, dead-band around a float literal": (
        passed(FLOAT, 1500.0, stage="gpu-b"), True,  # 1875 -> 1900 vs 1.8e3: +5.6%
        [Proposal(FLOAT, "cuda", "gpu-b", (1500.0,), 1500.0, 1800.0, 1900, "keep", "within the 20% dead-band")]),
    "report_only raise": (passed(A, 380.5), False,
                          [Proposal(A, "cuda", "gpu-a", (380.5,), 380.5, 300, 500, "report_only", "would raise")]),
    "report_only lower": (passed(A, 100.0, 118.2, 96.5), False,
                          [Proposal(A, "cuda", "gpu-a", (96.5, 100.0, 118.2), 118.2, 300, 150, "report_only",
                                    "would lower")]),
    "keep is keep when not applying": (
        passed(A, 230.0), False, [Proposal(A, "cuda", "gpu-a", (230.0,), 230.0, 300, 300, "keep", "unchanged")]),
    "raise from est_time 0 (no division by zero)": (
        passed(ZERO, 5.0, stage="gpu-b"), True, [Proposal(ZERO, "cuda", "gpu-b", (5.0,), 5.0, 0, 10, "raise")]),
    "0 stays 0": (passed(ZERO, 0.0, stage="gpu-b"), True,
                  [Proposal(ZERO, "cuda", "gpu-b", (0.0,), 0.0, 0, 0, "keep", "unchanged")]),
    "a disabled registration is still tuned": (
        passed("tests/test_off.py", 40.0), True,
        [Proposal("tests/test_off.py", "cuda", "gpu-a", (40.0,), 40.0, 120, 50, "lower")]),
    "skip: no passed sample": (
        [ev(A, "failed", 50.0), ev(A, "timeout", 3600.0, shard=1)], True,
        [Proposal(A, "cuda", "gpu-a", (), None, 300, None, "skip", "no passed sample (failed, timeout)")]),
    "skip: no passed sample, statuses of logs": (
        [ev(A, "not_run"), ev(A, "cancelled", 12.0), ev(A, "unknown", 20.0), ev(A, "cancelled")], True,
        [Proposal(A, "cuda", "gpu-a", (), None, 300, None, "skip", "no passed sample (cancelled, not_run, unknown)")]),
    "skip: a passed row without an elapsed time is no sample": (
        [ev(A, "passed", None), ev(A, "failed", 30.0)], True,
        [Proposal(A, "cuda", "gpu-a", (), None, 300, None, "skip",
                  "no passed sample (failed, passed without an elapsed time)")]),
    "skip: several registrations of the backend": (
        passed(TWO, 500.0), True,
        [Proposal(TWO, "cuda", None, (500.0,), None, None, None, "skip", "2 cuda registrations (lines 2, 3)")]),
    "skip: implicit registration": (
        passed(UNIT, 12.0, stage="cpu"), True,
        [Proposal(UNIT, "cpu", "cpu", (12.0,), None, 1, None, "skip", IMPLICIT_REASON)]),
    "skip: not registered for the stage's backend": (
        passed(A, 400.0, stage="amd"), True,
        [Proposal(A, "rocm", None, (400.0,), None, None, None, "skip", "not registered for rocm")]),
    "skip: a deleted file": (
        passed("tests/test_gone.py", 10.0), True,
        [Proposal("tests/test_gone.py", "cuda", None, (10.0,), None, None, None, "skip", "not registered for cuda")]),
    "skip: no stage and not registered": (
        [ev("tests/test_gone.py", "passed", 10.0, stage=None)], True,
        [Proposal("tests/test_gone.py", "?", None, (), None, None, None, "skip", UNPLACED_REASON)]),
    "skip: no stage and registered for two backends": (
        [ev(BOTH, "passed", 10.0, stage=None)], True,
        [Proposal(BOTH, "?", None, (), None, None, None, "skip", UNPLACED_REASON)]),
}


@pytest.mark.parametrize("rows, applying, expected", CASES.values(), ids=CASES.keys())
def test_every_action_and_skip_reason(snapshot, rows, applying, expected):
    assert propose(rows, snapshot, TUNE, applying=applying) == expected


def test_changes_is_true_exactly_for_raise_lower_and_report_only(snapshot):
    changes = {name: [p.changes for p in propose(rows, snapshot, TUNE, applying=applying)]
               for name, (rows, applying, _) in CASES.items()}
    assert {name for name, flags in changes.items() if any(flags)} == {
        "raise", "lower", "raise, just outside the dead-band", "report_only raise", "report_only lower",
        "raise from est_time 0 (no division by zero)", "a disabled registration is still tuned"}


def test_failed_timed_out_and_cancelled_samples_neither_block_a_lower_nor_cancel_a_raise(snapshot):
    noise = [ev(A, "failed", 5000.0, run_id="9"), ev(A, "timeout", 3600.4, run_id="9"),
             ev(A, "cancelled", 7000.0), ev(A, "unknown", 9000.0), ev(A, "not_run")]
    lower = propose(passed(A, 100.0, 118.2, 96.5) + noise, snapshot, TUNE, applying=True)
    assert lower == [Proposal(A, "cuda", "gpu-a", (96.5, 100.0, 118.2), 118.2, 300, 150, "lower")]
    tiny = [ev(A, "failed", 0.5, run_id="9"), ev(A, "timeout", 1.0, run_id="9"), ev(A, "cancelled", 2.0)]
    up = propose(passed(A, 380.5) + tiny, snapshot, TUNE, applying=True)
    assert up == [Proposal(A, "cuda", "gpu-a", (380.5,), 380.5, 300, 500, "raise")]


def test_p90_ignores_one_slow_outlier_among_ten_samples(snapshot):
    samples = (120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0, 128.0, 400.0)
    assert propose(passed(A, *samples), snapshot, TUNE, applying=True) == [
        Proposal(A, "cuda", "gpu-a", samples, 128.0, 300, 160, "lower")]
    # with one sample fewer the outlier is the p90 (rank 9 of 9)
    assert propose(passed(A, *samples[1:]), snapshot, TUNE, applying=True) == [
        Proposal(A, "cuda", "gpu-a", samples[1:], 400.0, 300, 500, "raise")]


def test_tune_config_is_used(snapshot):
    rows = passed(B, 100.0)
    assert propose(rows, snapshot, TuneConfig(safety=1.1), applying=True) == [
        Proposal(B, "cuda", "gpu-a", (100.0,), 100.0, 250, 110, "lower")]
    # a wide dead-band keeps the same proposal
    assert propose(rows, snapshot, TuneConfig(safety=1.1, deadband=0.6), applying=True) == [
        Proposal(B, "cuda", "gpu-a", (100.0,), 100.0, 250, 110, "keep", "within the 60% dead-band")]


# -- grouping -------------------------------------------------------------------------------------------------

def test_samples_are_pooled_across_runs_shards_jobs_and_sources(snapshot):
    rows = [
        ev(A, "passed", 250.0, shard=0, run_id="1", source="run-1/a.jsonl", line=3),
        ev(A, "passed", 260.0, shard=1, run_id="2", job_id="77", job_name="gpu-a (1)", source="run-2/3_gpu-a (1).txt",
           line=40),
        ev(A, "failed", 20.0, shard=1, run_id="2"),
        # registered for cuda only
        ev(A, "passed", 240.0, stage="old-stage-name", shard=None, run_id="", source="local.jsonl"),
        ev(A, "passed", 230.0, stage=None, shard=None, run_id="3"),
    ]
    assert propose(rows, snapshot, TUNE, applying=True) == [
        Proposal(A, "cuda", "gpu-a", (230.0, 240.0, 250.0, 260.0), 260.0, 300, 400, "raise")]


def test_cuda_and_rocm_timings_of_one_file_never_mix(snapshot):
    rows = passed(BOTH, 380.0, 390.0) + passed(BOTH, 700.0, stage="amd") + [ev(BOTH, "timeout", 3600.0, stage="amd")]
    assert propose(rows, snapshot, TUNE, applying=True) == [
        # 390 * 1.25 = 487.5 -> 500; 700 * 1.25 = 875 -> 900
        Proposal(BOTH, "cuda", "gpu-a", (380.0, 390.0), 390.0, 300, 500, "raise"),
        Proposal(BOTH, "rocm", "amd", (700.0,), 700.0, 480, 900, "raise"),
    ]


def test_rows_without_a_stage_are_dropped_when_the_file_has_placed_rows(snapshot):
    # test_both.py is registered for cuda and rocm, so a row without a stage cannot be placed;
    # the file's placed rows still give their proposal and no "?" proposal is added.
    rows = passed(BOTH, 380.0) + [ev(BOTH, "passed", 9999.0, stage=None)]
    assert propose(rows, snapshot, TUNE, applying=True) == [
        Proposal(BOTH, "cuda", "gpu-a", (380.0,), 380.0, 300, 500, "raise")]


def test_proposals_are_sorted_by_file_and_backend_then_the_unplaced(snapshot):
    rows = (passed(C, 100.0, stage="gpu-b") + [ev("tests/a_gone.py", "passed", 1.0, stage=None)]
            + passed(BOTH, 700.0, stage="amd") + passed(A, 230.0) + passed(BOTH, 100.0))
    assert [(p.file, p.backend) for p in propose(rows, snapshot, TUNE, applying=False)] == [
        (A, "cuda"), (BOTH, "cuda"), (BOTH, "rocm"), (C, "cuda"), ("tests/a_gone.py", "?")]


def test_no_evidence_no_proposals(snapshot):
    assert propose([], snapshot, TUNE, applying=True) == []


# -- balance ---------------------------------------------------------------------------------------------------

def test_balance_before_and_after_by_the_plans_partitioner(snapshot):
    # gpu-a (2 shards): test_a 300, test_b 250, test_both 300, test_two 100 (test_off is disabled)
    proposals = propose(passed(A, 100.0) + passed(B, 190.0) + passed(BOTH, 380.0) + passed(C, 20.0, stage="gpu-b"),
                        snapshot, TUNE, applying=False)
    assert [(p.file, p.action, p.proposed) for p in proposals] == [
        (A, "report_only", 130), (B, "keep", 300), (BOTH, "report_only", 500), (C, "report_only", 30)]
    assert balance(snapshot, proposals) == [
        StageBalance("cpu", 1, 1, 1.0, 1, 1.0),
        # before: [300 + 100, 300 + 250] -> 550 / 475; after: [500, 250 + 130 + 100] -> 500 / 490
        StageBalance("gpu-a", 2, 550, 550 / 475, 500, 500 / 490),
        # one shard: test_c 240 -> 30, test_float 1800, test_two 200, test_zero 0
        StageBalance("gpu-b", 1, 2240, 1.0, 2030, 1.0),
        StageBalance("amd", 1, 480, 1.0, 480, 1.0),
    ]
    # keep (dead-band) and skip proposals leave est_time as it is
    assert balance(snapshot, propose(passed(B, 190.0), snapshot, TUNE, applying=True)) == \
        balance(snapshot, [])


def test_balance_before_equals_the_weekly_plan_of_the_example(capsys):
    # Every enabled registration is balanced, which is what a weekly run (every label) plans.
    snap = load_snapshot(EXAMPLE_REPO).require_valid()
    assert main(["plan", "--repo", str(EXAMPLE_REPO), "--event", "schedule", "--schedule", "0 15 * * 6",
                 "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    planned = {s["name"]: [sh["est_seconds"] for sh in s["shards"]] for s in plan["stages"]}
    got = {b.stage: b for b in balance(snap, [])}
    assert sorted(got) == sorted(planned) == ["stage-a-cpu", "stage-b-1-gpu-h200", "stage-c-4-gpu-h200",
                                              "stage-c-4-gpu-mi350"]
    for name, loads in planned.items():
        assert got[name].partitions == len(loads)
        assert got[name].before_makespan == got[name].after_makespan == max(loads)
        assert got[name].before_imbalance == pytest.approx(max(loads) / (sum(loads) / len(loads)))


# -- properties ----------------------------------------------------------------------------------------------

def bucket_values():
    # Up to MAX_EST_TIME (604800 s, itself a bucket value): no proposal is ever above it.
    return st.one_of(st.integers(0, 20).map(lambda i: 10 * i), st.integers(2, 6048).map(lambda i: 100 * i))


def previous_bucket(b: int) -> int:
    return b - 10 if b <= 200 else b - 100


RAWS = st.floats(min_value=0, max_value=1e7, allow_nan=False, allow_infinity=False)


@settings(max_examples=500)
@given(RAWS)
def test_bucket_never_rounds_down_and_is_the_smallest_bucket_above(raw):
    b = bucket(raw)
    assert b >= raw
    assert (b % 10 == 0 and b <= 200) or (b % 100 == 0 and b > 200)
    assert b == 0 or previous_bucket(b) < raw


@given(bucket_values())
def test_bucket_is_idempotent_on_bucket_values(b):
    assert bucket(b) == b
    assert bucket(float(b)) == b
    assert bucket(bucket(b + 0.5)) == bucket(b + 0.5)


@settings(max_examples=500)
@given(RAWS, RAWS)
def test_bucket_is_monotone(x, y):
    x, y = min(x, y), max(x, y)
    assert bucket(x) <= bucket(y)


ELAPSED = st.floats(min_value=0, max_value=20_000, allow_nan=False).map(lambda v: round(v, 3))
SAMPLES = st.lists(ELAPSED, min_size=1, max_size=30)
CONFIGS = st.builds(TuneConfig,
                    safety=st.sampled_from([1, 1.1, 1.25, 1.5, 2]),
                    quantile=st.sampled_from([0.5, 0.8, 0.9, 0.95, 1]),
                    min_samples_for_quantile=st.integers(1, 12),
                    deadband=st.just(0.2))


def proposal_of(samples, tune=TUNE) -> int:
    return proposed_for(list(samples), tune)[1]


@settings(max_examples=500)
@given(SAMPLES, ELAPSED)
def test_adding_a_sample_never_lowers_the_proposal_while_q_is_the_max(samples, extra):
    # Default config: below 10 samples the p90 (nearest rank) is the max, so a group only grows.
    samples = samples[:8]
    assert proposal_of(samples + [extra]) >= proposal_of(samples)


@settings(max_examples=500)
@given(SAMPLES, st.floats(min_value=0, max_value=5_000, allow_nan=False))
def test_adding_a_sample_at_least_q_never_lowers_the_proposal(samples, above):
    # Default config, any group size: a new sample at or above the group's q never lowers it.
    q = q_of(samples, TUNE)
    assert proposal_of(samples + [q + above]) >= proposal_of(samples)


@settings(max_examples=500)
@given(CONFIGS, SAMPLES, st.data())
def test_a_slower_sample_never_lowers_the_proposal(tune, samples, data):
    i = data.draw(st.integers(0, len(samples) - 1))
    slower = list(samples)
    slower[i] += data.draw(st.floats(min_value=0, max_value=5_000, allow_nan=False))
    assert proposal_of(slower, tune) >= proposal_of(samples, tune)


def test_the_p90_drops_a_slow_outlier_once_the_tenth_sample_arrives():
    # A sample below q can lower the proposal: a tenth fast sample moves the p90 (rank 9 of 10)
    # off the outlier. q is the p90 by design, so one slow run does not inflate est_time forever.
    nine = [100.0] * 8 + [1000.0]
    assert proposed_for(nine, TUNE) == (1000.0, 1300)
    assert proposed_for(nine + [100.0], TUNE) == (100.0, 130)


NON_PASSED = st.sampled_from(STATUSES[1:])
FILES_PLACED = [(A, "gpu-a"), (B, "gpu-a"), (C, "gpu-b"), (BOTH, "gpu-a"), (BOTH, "amd"), (TWO, "gpu-b"),
                (UNIT, "cpu"), (FLOAT, "gpu-b"), ("tests/test_gone.py", "gpu-b"), ("tests/test_gone.py", None)]


def rows_strategy(statuses):
    return st.lists(st.builds(
        lambda fs, status, elapsed, shard, run: ev(fs[0], status, elapsed, stage=fs[1], shard=shard, run_id=run),
        st.sampled_from(FILES_PLACED), statuses, st.none() | ELAPSED, st.integers(0, 2), st.sampled_from("123")),
        max_size=25)


@settings(max_examples=300, deadline=None)
@given(rows_strategy(st.just("passed")), rows_strategy(NON_PASSED), st.booleans(), st.randoms())
def test_non_passed_samples_never_change_a_proposal(snapshot, good, other, applying, rnd):
    mixed = good + other
    rnd.shuffle(mixed)
    base = propose(good, snapshot, TUNE, applying=applying)
    with_other = propose(mixed, snapshot, TUNE, applying=applying)
    by_key = {(p.file, p.backend): p for p in with_other}
    for p in base:
        if p.samples:
            assert by_key[(p.file, p.backend)] == p
    # What the other rows add or change are skips without a proposed value.
    for p in with_other:
        if p not in base:
            assert (p.action, p.proposed, p.samples) == ("skip", None, base_samples(base, p))


def base_samples(base, p):
    return next((b.samples for b in base if (b.file, b.backend) == (p.file, p.backend)), ())


# Whole seconds make q * safety a whole number often (100 * 1.1, 20 * 1.15, ...), where float noise bites.
MILLIS = st.integers(0, 10_000_000) | st.integers(0, 20_000).map(lambda seconds: seconds * 1000)


@settings(max_examples=1000)
@given(MILLIS, st.sampled_from(["1", "1.1", "1.15", "1.2", "1.25", "1.3", "1.5", "2"]))
def test_the_safety_product_is_exact(millis, safety):
    # raw = ceil(q * safety) in exact arithmetic, q in milliseconds as the runner rounds it:
    # float noise (100 * 1.1 == 110.00000000000001) never pushes raw, or its bucket, up.
    q = millis / 1000
    raw = math.ceil(Fraction(millis, 1000) * Fraction(safety))
    assert proposed_for([q], TuneConfig(safety=float(safety))) == (q, bucket(raw))


@settings(max_examples=500)
@given(bucket_values(), st.sampled_from(["1.1", "1.15", "1.2", "1.25", "1.3", "1.5", "2"]))
def test_a_product_exactly_on_a_bucket_value_stays_in_that_bucket(b, safety):
    # q chosen so that q * safety is exactly the bucket value b (q in whole milliseconds)
    q = Fraction(b) / Fraction(safety)
    assume((q * 1000).denominator == 1)
    assert proposed_for([float(q)], TuneConfig(safety=float(safety))) == (float(q), b)


# -- one attempt, two descriptions: a job's log and its timing records -------------------------------------

def _row(source, elapsed, run_id="9", note=""):
    from ci_policy.adapters.tuning.evidence import FileEvidence

    return FileEvidence(run_id=run_id, job_id="", job_name="stage-b (0)", stage="stage-b", shard=0,
                        file="tests/e2e/test_x.py", status="passed", elapsed=elapsed, logged_est=None,
                        source=source, line=1, note=note)


def test_deduplicate_drops_a_log_row_when_records_cover_the_same_attempt_group():
    from ci_policy.adapters.tuning.propose import deduplicate

    log = _row("acme/r/runs/9/jobs/1", 100.0)
    record = _row("evidence/run-9/timings.jsonl", 100.4)
    rerun = _row("evidence/run-9/timings.jsonl", 130.0, note="run attempt 2")
    artifact = _row("acme/r/runs/9/artifacts/ci-policy-timings/t.jsonl", 99.0, run_id="10")
    log_only = _row("acme/r/runs/11/jobs/1", 120.0, run_id="11")
    no_run_id = _row("local/job.log", 90.0, run_id="")
    other_log = _row("acme/r/runs/10/jobs/2", 98.0, run_id="10")
    assert deduplicate([log, record, rerun, artifact, log_only, no_run_id, other_log]) == [
        record, rerun, artifact, log_only, no_run_id]


def test_a_stage_commands_samples_are_skipped_its_est_time_is_configuration(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".github").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / ".github" / "ci-policy.yml").write_text(
        "version: 1\ngpu_requires_labels: false\ndiscovery: {roots: [tests]}\nstages:\n"
        "  - {name: kernel, backend: cuda, runs_on: [h100], command: [pytest, tests/], working_directory: "
        "sgl-kernel, paths: ['sgl-kernel/**'], est_time: 600}\n")
    snap = load_snapshot(repo)
    assert propose(passed("kernel", 700.0, 710.0, stage="kernel"), snap, TUNE, applying=True) == [
        Proposal("kernel", "cuda", "kernel", (700.0, 710.0), None, 600, None, "skip",
                 "a stage's command: its est_time is configuration (stages[].est_time), not a literal")]
