"""The metric-history store contract (`adapters/store/base.py`), on SQLite and PostgreSQL alike.

Every test here runs on both backends (`store_url` is parametrised: a SQLite file and a
database on a real throwaway PostgreSQL server). Nothing stands in for a store: faults are
real (a trigger that refuses rows), and `raw()` reads the database directly to check what
the store wrote.
"""

from __future__ import annotations

import multiprocessing
import queue
import sqlite3
import time
import traceback
from contextlib import closing
from pathlib import Path

import pytest
from store_cases import (
    BACKEND,
    FILE,
    GRAD,
    GRAD_OTHER_SUITE,
    GRAD_REWRITTEN,
    KL,
    OTHER_SUITE,
    SUITE,
    key,
    raw,
    row,
    runs,
    unmigrated,
    write,
)

from ci_policy.adapters.store import DATABASE_URL_ENV, RunKey, Sample, open_store
from ci_policy.adapters.store.base import lock_key, one_line
from ci_policy.errors import InputError, StoreUnavailable


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path: Path) -> str:
    """The URL of a fresh, empty store of each backend."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'history.db'}"
    return request.getfixturevalue("postgres_database")


@pytest.fixture
def store(store_url: str, tmp_path: Path, monkeypatch):
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    opened = open_store(store_url, default_path=tmp_path / "unused" / "history.db")
    yield opened
    opened.close()
    assert not (tmp_path / "unused").exists()


# -- migrations -----------------------------------------------------------------------------------

def test_opening_applies_every_migration_once(store, store_url):
    assert store.schema_versions() == [1, 2, 3]
    applied = raw(store_url, "SELECT version, applied_at FROM schema_migrations ORDER BY version")
    assert [version for version, _ in applied] == [1, 2, 3]
    assert all(at is not None for _, at in applied)
    assert store.runs() == []
    assert store.baseline(GRAD, -1, 5) == []


def test_migrate_is_idempotent_and_keeps_the_data(store, store_url, tmp_path):
    assert write(store, key("100"), [Sample(GRAD, -1, 0.5)]) == "written"
    before = raw(store_url, "SELECT version, applied_at FROM schema_migrations ORDER BY version")
    store.migrate()
    store.migrate()
    open_store(store_url, default_path=tmp_path / "unused" / "history.db").close()
    assert raw(store_url, "SELECT version, applied_at FROM schema_migrations ORDER BY version") == before
    assert store.baseline(GRAD, -1, 5) == [0.5]
    assert runs(store) == [row("100", 1, "written", 1)]


def test_migrate_brings_an_older_schema_to_the_latest_version(store_url):
    indexes = "SELECT COUNT(*) FROM {} WHERE {} IN ('gate_samples_series', 'gate_samples_run')"
    indexes = (indexes.format("sqlite_master", "name") if store_url.startswith("sqlite:")
               else indexes.format("pg_indexes", "indexname"))
    with closing(unmigrated(store_url)) as old:
        old.migrate(target=1)
        assert old.schema_versions() == [1]
        assert raw(store_url, indexes) == [(0,)]
        assert write(old, key("1"), [Sample(GRAD, -1, 1.5)]) == "written"
        old.migrate(target=2)
        assert old.schema_versions() == [1, 2]
        assert raw(store_url, indexes) == [(2,)]
        old.migrate()
        assert old.schema_versions() == [1, 2, 3]
        assert old.baseline(GRAD, -1, 3) == [1.5]
        with pytest.raises(ValueError, match=r"^schema version 4 does not exist \(latest is 3\)$"):
            old.migrate(target=4)


def test_a_schema_newer_than_this_code_is_refused(store, store_url, tmp_path):
    raw(store_url, "INSERT INTO schema_migrations (version) VALUES (7)")
    with pytest.raises(InputError) as err:
        open_store(store_url, default_path=tmp_path / "unused" / "history.db")
    assert err.value.message == ("the metric history store has schema version 7, newer than the 3 this "
                                 "ci_policy knows")
    assert err.value.hint == "upgrade ci-policy on every job that uses this store"
    assert [v for (v,) in raw(store_url, "SELECT version FROM schema_migrations ORDER BY version")] == [1, 2, 3, 7]


# -- baseline -------------------------------------------------------------------------------------

def test_baseline_is_the_last_window_values_in_insertion_order(store):
    # Run ids and values deliberately out of order: only insertion order counts.
    values = [5.0, 1.5, 3.25, -2.0, 0.125]
    for run_id, value in zip(["run-9", "run-10", "run-11", "run-8", "run-1"], values, strict=True):
        assert write(store, key(run_id), [Sample(GRAD, -1, value), Sample(GRAD, 10, value * 2),
                                          Sample(KL, -1, value + 100)]) == "written"
    assert store.baseline(GRAD, -1, 3) == [3.25, -2.0, 0.125]
    assert store.baseline(GRAD, -1, 1) == [0.125]
    assert store.baseline(GRAD, -1, 5) == values
    assert store.baseline(GRAD, -1, 500) == values
    assert store.baseline(GRAD, -1, 0) == []
    assert store.baseline(GRAD, 10, 2) == [-4.0, 0.25]
    assert store.baseline(GRAD, 11, 5) == []
    assert store.baseline(KL, -1, 2) == [98.0, 100.125]
    assert store.baseline(GRAD_REWRITTEN, -1, 5) == []
    assert store.baseline(GRAD_OTHER_SUITE, -1, 5) == []


def test_values_round_trip_exactly(store):
    values = [0.1 + 0.2, 1e300, -5e-324, 123456789.123456789, 2.0, -1.7976931348623157e308]
    samples = [Sample(GRAD, step, value) for step, value in enumerate(values)]
    assert write(store, key("1"), samples) == "written"
    for step, value in enumerate(values):
        [stored] = store.baseline(GRAD, step, 1)
        assert stored == value and type(stored) is float
    assert Sample(GRAD, 0, 3).value == 3.0 and type(Sample(GRAD, 0, 3).value) is float


def test_baseline_refuses_malformed_arguments(store):
    with pytest.raises(ValueError, match=r"^window must be >= 0, got -1$"):
        store.baseline(GRAD, -1, -1)
    with pytest.raises(ValueError, match=r"^step must be >= -1, got -2$"):
        store.baseline(GRAD, -2, 5)
    with pytest.raises(TypeError, match=r"^identity must be a tuple"):
        store.baseline(GRAD[:4], -1, 5)
    with pytest.raises(TypeError, match=r"^window must be an int, got True$"):
        store.baseline(GRAD, -1, True)


# -- write outcomes -------------------------------------------------------------------------------

def test_a_trusted_first_attempt_that_writes_baselines_is_written(store):
    samples = [Sample(GRAD, -1, 1.25), Sample(GRAD, 3, 2.5), Sample(KL, -1, 0.001)]
    assert write(store, key("7"), samples, commit="deadbeef") == "written"
    assert runs(store) == [row("7", 1, "written", 3, commit="deadbeef")]
    assert store.baseline(GRAD, -1, 5) == [1.25]
    assert store.baseline(GRAD, 3, 5) == [2.5]
    assert store.baseline(KL, -1, 5) == [0.001]


def test_pr_and_release_cadences_record_the_run_without_samples(store):
    samples = [Sample(GRAD, -1, 1.0)]
    assert write(store, key("8"), samples, write_baseline=False, cadence="regular") == "not_allowed"
    # not_allowed is decided before trust: an untrusted release run is still not_allowed
    assert write(store, key("9"), samples, write_baseline=False, trusted=False, cadence="release",
                 commit=None) == "not_allowed"
    assert runs(store) == [row("8", 1, "not_allowed", 0, write_baseline=False, cadence="regular"),
                           row("9", 1, "not_allowed", 0, write_baseline=False, trusted=False, cadence="release",
                               commit=None)]
    assert store.baseline(GRAD, -1, 5) == []


def test_an_untrusted_run_is_recorded_without_samples(store):
    assert write(store, key("10"), [Sample(GRAD, -1, 9.0)], trusted=False) == "not_trusted"
    assert runs(store) == [row("10", 1, "not_trusted", 0, trusted=False)]
    assert store.baseline(GRAD, -1, 5) == []


def test_the_same_run_key_again_is_a_duplicate_and_changes_nothing(store):
    assert write(store, key("11"), [Sample(GRAD, -1, 9.0)], trusted=False) == "not_trusted"
    assert write(store, key("12"), [Sample(GRAD, -1, 2.0)]) == "written"
    before = store.runs()
    # A rerun of the same attempt cannot add samples, whatever it now claims.
    assert write(store, key("11"), [Sample(GRAD, -1, 1.0)]) == "duplicate"
    assert write(store, key("12"), [Sample(GRAD, -1, 3.0), Sample(GRAD, 1, 3.0)]) == "duplicate"
    assert write(store, key("12"), [], write_baseline=False, cadence="regular") == "duplicate"
    assert store.runs() == before
    assert store.baseline(GRAD, -1, 5) == [2.0]
    assert store.baseline(GRAD, 1, 5) == []


def test_a_rerun_cannot_shop_for_a_passing_baseline(store):
    assert write(store, key("50", 1), [Sample(GRAD, -1, 7.0)], trusted=False) == "not_trusted"
    assert write(store, key("50", 2), [Sample(GRAD, -1, 1.0)]) == "not_first_attempt"
    assert write(store, key("50", 3), [Sample(GRAD, -1, 1.0)]) == "not_first_attempt"
    assert write(store, key("50", 1), [Sample(GRAD, -1, 1.0)]) == "duplicate"
    assert write(store, key("50", 4), [Sample(GRAD, -1, 1.0)], write_baseline=False) == "not_allowed"
    assert write(store, key("50", 5), [Sample(GRAD, -1, 1.0)], trusted=False) == "not_trusted"
    # The attempt history is per (run_id, file, backend, suite): another suite's first record writes.
    assert write(store, key("50", 2, OTHER_SUITE), [Sample(GRAD_OTHER_SUITE, -1, 4.0)]) == "written"
    assert store.baseline(GRAD, -1, 5) == []
    assert store.baseline(GRAD_OTHER_SUITE, -1, 5) == [4.0]
    assert runs(store) == [
        row("50", 1, "not_trusted", 0, trusted=False),
        row("50", 2, "not_first_attempt", 0),
        row("50", 3, "not_first_attempt", 0),
        row("50", 4, "not_allowed", 0, write_baseline=False),
        row("50", 5, "not_trusted", 0, trusted=False),
        row("50", 2, "written", 1, suite=OTHER_SUITE),
    ]


def test_samples_are_unique_on_identity_step_and_run_id(store, store_url):
    # Attempt 2's record arrives first (attempt 1's report was delayed): it writes; attempt 1 then
    # has no earlier attempt, but can add only what attempt 2 did not already store for the run.
    assert write(store, key("60", 2), [Sample(GRAD, -1, 1.0)]) == "written"
    assert write(store, key("60", 1), [Sample(GRAD, -1, 9.0), Sample(GRAD, 4, 4.0)]) == "written"
    assert store.baseline(GRAD, -1, 10) == [1.0]
    assert store.baseline(GRAD, 4, 10) == [4.0]
    assert [(r["run_attempt"], r["outcome"], r["samples"]) for r in store.runs()] == [
        (2, "written", 1), (1, "written", 1)]
    # The database itself refuses a second value for (identity, step, run_id).
    if store_url.startswith("sqlite:"):
        refused = sqlite3.IntegrityError
    else:
        import psycopg

        refused = psycopg.errors.UniqueViolation
    with pytest.raises(refused):
        raw(store_url, "INSERT INTO gate_samples (gate_run, file, backend, suite, metric_key, written_json, step, "
                       "run_id, value) VALUES (1, ?, ?, ?, ?, ?, -1, '60', 3.0)", GRAD)
    assert store.baseline(GRAD, -1, 10) == [1.0]


def test_the_same_sample_twice_in_one_write_is_stored_once(store):
    # e.g. two identical register_ci_gate declarations in one file
    assert write(store, key("65"), [Sample(GRAD, -1, 1.5), Sample(KL, -1, 0.5), Sample(GRAD, -1, 1.5)]) == "written"
    assert store.baseline(GRAD, -1, 10) == [1.5]
    assert runs(store) == [row("65", 1, "written", 2)]


def test_write_refuses_malformed_input_before_touching_the_store(store):
    with pytest.raises(ValueError, match=r"step -1 is given twice, with different values \(1\.0 and 2\.0\)$"):
        write(store, key("70"), [Sample(GRAD, -1, 1.0), Sample(GRAD, -1, 2.0)])
    with pytest.raises(ValueError, match=r"does not belong to the run's"):
        write(store, key("70"), [Sample(GRAD_OTHER_SUITE, -1, 1.0)])
    with pytest.raises(TypeError, match=r"^trusted must be a bool, got 'yes'$"):
        write(store, key("70"), [], trusted="yes")
    with pytest.raises(TypeError, match=r"^samples must be Sample objects"):
        write(store, key("70"), [(GRAD, -1, 1.0)])
    assert store.runs() == []
    for bad, error in ((float("nan"), ValueError), (float("inf"), ValueError), (-float("inf"), ValueError),
                       (True, TypeError), ("1.0", TypeError)):
        with pytest.raises(error):
            Sample(GRAD, -1, bad)
    with pytest.raises(ValueError, match=r"^step must be >= -1, got -2$"):
        Sample(GRAD, -2, 1.0)
    with pytest.raises(ValueError, match=r"^run_attempt must be >= 1, got 0$"):
        RunKey("70", 0, FILE, BACKEND, SUITE)
    with pytest.raises(ValueError, match=r"NUL"):
        RunKey("7\x000", 1, FILE, BACKEND, SUITE)


def test_a_write_is_one_transaction(store, store_url):
    # A real failure half-way through (a trigger refusing the samples) leaves no trace at all:
    # the run row is rolled back with them, so the same RunKey is not a duplicate afterwards.
    if store_url.startswith("sqlite:"):
        raw(store_url, "CREATE TRIGGER refuse BEFORE INSERT ON gate_samples "
                       "BEGIN SELECT RAISE(ABORT, 'disk full (simulated)'); END")
        drop = "DROP TRIGGER refuse"
    else:
        raw(store_url, "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                       "$$ BEGIN RAISE EXCEPTION 'disk full (simulated)'; END $$")
        raw(store_url, "CREATE TRIGGER refuse BEFORE INSERT ON gate_samples FOR EACH ROW EXECUTE FUNCTION refuse()")
        drop = "DROP TRIGGER refuse ON gate_samples"
    with pytest.raises(StoreUnavailable, match=r"disk full \(simulated\)"):
        write(store, key("80"), [Sample(GRAD, -1, 1.0)])
    assert store.runs() == []
    raw(store_url, drop)
    assert write(store, key("80"), [Sample(GRAD, -1, 1.0)]) == "written"
    assert runs(store) == [row("80", 1, "written", 1)]


def test_runs_lists_every_recorded_run_in_recording_order(store):
    assert write(store, key("3"), [Sample(GRAD, -1, 1.0)], cadence="weekly", commit="c3") == "written"
    assert write(store, key("1"), [], write_baseline=False, cadence="regular", commit="c1") == "not_allowed"
    assert write(store, key("2"), [Sample(GRAD, -1, 1.0), Sample(KL, 0, 2.0)], trusted=False) == "not_trusted"
    assert write(store, key("3", 2), [Sample(GRAD, -1, 2.0)], cadence="weekly", commit="c3") == "not_first_attempt"
    assert write(store, key("4"), [], commit=None) == "written"
    recorded = store.runs()
    assert [r["recorded_at"] for r in recorded] == sorted(r["recorded_at"] for r in recorded)
    assert runs(store) == [
        row("3", 1, "written", 1, cadence="weekly", commit="c3"),
        row("1", 1, "not_allowed", 0, write_baseline=False, cadence="regular", commit="c1"),
        row("2", 1, "not_trusted", 0, trusted=False),
        row("3", 2, "not_first_attempt", 0, cadence="weekly", commit="c3"),
        row("4", 1, "written", 0, commit=None),
    ]


def test_a_closed_store_is_unavailable(store):
    store.close()
    store.close()
    with pytest.raises(StoreUnavailable, match=r"the store is closed$"):
        store.baseline(GRAD, -1, 5)
    with pytest.raises(StoreUnavailable, match=r"the store is closed$"):
        write(store, key("1"), [])


# -- concurrency ----------------------------------------------------------------------------------

WORKERS = 4


RUNS_PER_WORKER = 12


def _concurrent_writer(url: str, default_path: str, worker: int, barrier, results) -> None:
    """One process: open (and so migrate) the fresh store at the same moment as the others, write
    its own runs, then report the same run and competing attempts of one run at once."""
    try:
        barrier.wait(120)
        store = open_store(url, default_path=Path(default_path))
        outcomes = []
        try:
            for i in range(RUNS_PER_WORKER):
                outcomes.append(write(store, key(f"w{worker}-{i}"),
                                      [Sample(GRAD, -1, worker * 100.0 + i), Sample(GRAD, i, float(worker))]))
                store.baseline(GRAD, -1, 5)
            barrier.wait(120)
            outcomes.append(write(store, key("shared"), [Sample(KL, -1, float(worker))]))
            barrier.wait(120)
            outcomes.append(write(store, key("attempts", worker + 1), [Sample(KL, 0, float(worker))]))
        finally:
            store.close()
        results.put((worker, outcomes, None))
    except BaseException:
        results.put((worker, None, traceback.format_exc()))


def test_parallel_processes_lose_nothing(store_url, tmp_path):
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [ctx.Process(target=_concurrent_writer,
                         args=(store_url, str(tmp_path / "unused.db"), worker, barrier, results))
             for worker in range(WORKERS)]
    for proc in procs:
        proc.start()
    reported: dict[int, list[str]] = {}
    deadline = time.monotonic() + 300
    while len(reported) < WORKERS and time.monotonic() < deadline:
        try:
            worker, outcomes, error = results.get(timeout=1)
        except queue.Empty:
            if not any(p.is_alive() for p in procs):
                break
            continue
        assert error is None, f"worker {worker} failed:\n{error}"
        reported[worker] = outcomes
    for proc in procs:
        proc.join(60)
        if proc.is_alive():
            proc.kill()
    assert sorted(reported) == list(range(WORKERS)), [p.exitcode for p in procs]
    assert [p.exitcode for p in procs] == [0] * WORKERS

    for outcomes in reported.values():
        assert outcomes[:RUNS_PER_WORKER] == ["written"] * RUNS_PER_WORKER
    assert sorted(o[RUNS_PER_WORKER] for o in reported.values()) == ["duplicate"] * (WORKERS - 1) + ["written"]
    attempts = [o[RUNS_PER_WORKER + 1] for o in reported.values()]
    assert "written" in attempts and set(attempts) <= {"written", "not_first_attempt"}

    with open_store(store_url, default_path=tmp_path / "unused.db") as store:
        assert store.schema_versions() == [1, 2, 3]
        recorded = store.runs()
        assert sorted((r["run_id"], r["run_attempt"]) for r in recorded) == sorted(
            [(f"w{w}-{i}", 1) for w in range(WORKERS) for i in range(RUNS_PER_WORKER)]
            + [("shared", 1)] + [("attempts", w + 1) for w in range(WORKERS)])
        # Serialised per run: an attempt writes iff no lower attempt was recorded before it, and
        # only the first to write stores the run's samples.
        order = [(r["run_attempt"], r["outcome"], r["samples"]) for r in recorded if r["run_id"] == "attempts"]
        lowest = None
        for attempt, outcome, samples in order:
            first = lowest is None or attempt < lowest
            assert outcome == ("written" if first else "not_first_attempt"), order
            assert samples == (1 if lowest is None else 0), order
            lowest = attempt if first else lowest
        history = store.baseline(GRAD, -1, 1000)
        assert sorted(history) == sorted(w * 100.0 + i for w in range(WORKERS) for i in range(RUNS_PER_WORKER))
        for w in range(WORKERS):  # each process's values in the order it wrote them
            assert [v for v in history if w * 100 <= v < w * 100 + 100] == [w * 100.0 + i
                                                                           for i in range(RUNS_PER_WORKER)]
        for i in range(RUNS_PER_WORKER):
            assert sorted(store.baseline(GRAD, i, 10)) == [float(w) for w in range(WORKERS)]
        assert len(store.baseline(KL, -1, 10)) == 1
        assert len(store.baseline(KL, 0, 10)) == 1
    assert not (tmp_path / "unused.db").exists()


# -- helpers every backend uses -------------------------------------------------------------------

def test_one_line_collapses_whitespace_and_hides_every_secret():
    assert one_line("  connection\n failed:\tpassword s3cr3t  ", ["s3cr3t"]) == "connection failed: password ***"
    # The longest secret first, so a secret containing another is hidden whole.
    assert one_line("pw pwd", ["pw", "pwd"]) == "*** ***"
    assert one_line("x", ["", "y"]) == "x"
    assert one_line(" \n\t ") == "unknown error"


def test_lock_key_is_a_stable_signed_32_bit_key():
    # Pinned: every job locking the same run group must compute the same key, whichever
    # version of ci-policy it runs.
    assert lock_key(["run-1", "tests/t.py", "cuda", "gpu"]) == -1261696965
    assert lock_key(["a", "b"]) == 476898525
    assert lock_key(["ab"]) == 988321703
    assert lock_key([]) == 309448485
    keys = {lock_key([f"run-{i}", "tests/t.py", "cuda", "gpu"]) for i in range(200)}
    assert len(keys) == 200 and all(-2**31 <= k < 2**31 for k in keys)
