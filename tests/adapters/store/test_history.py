"""The test history in the store (`test_attempts` and `plan_hours`, schema version 3), on SQLite and
PostgreSQL alike.

Every test runs on both backends (a SQLite file, and a database on a real throwaway PostgreSQL
server): rows round-trip exactly, recording and importing again adds nothing, concurrent
writers lose nothing, a store of schema version 2 with baselines in it migrates, and a read of
a version-2 store is refused with CP701.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import queue
import time
import traceback
from contextlib import closing
from pathlib import Path

import pytest
from helpers import ROOT
from store_cases import GRAD, key, raw, unmigrated, write

from ci_policy.adapters.store import DATABASE_URL_ENV, Sample, open_store
from ci_policy.app.history import ImportRequest, import_history
from ci_policy.errors import InputError
from ci_policy.model.outcomes import TIMESTAMP, Outcome, PlanHours
from ci_policy.read.declare import DecodeError


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path: Path, monkeypatch) -> str:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'history.db'}"
    return request.getfixturevalue("postgres_database")


def outcome(run_id: str = "100", attempt: int = 1, status: str = "pass", **changes) -> Outcome:
    base = Outcome(run_id=run_id, run_attempt=1, commit="c0ffee", event="schedule", cadence="nightly",
                   stage="gpu-a", shard=0, runner_labels=("h200", "8-gpu"), file="tests/e2e/test_a.py",
                   attempt=attempt, status=status, retry_class=None if status == "pass" else "flaky",
                   started_at="2026-11-02T03:00:00Z", elapsed=12.5, est_time=10.0)
    return dataclasses.replace(base, **changes)


def test_attempts_round_trip_exactly_in_start_order(store_url, tmp_path):
    rows = [outcome("2", started_at="2026-11-03T00:00:00Z"),
            outcome("1", 1, "flaky", elapsed=0.125, est_time=None, runner_labels=()),
            outcome("1", 2, "pass", started_at="2026-11-02T03:00:09Z", commit=None, event=None, cadence=None),
            outcome("3", 1, "killed", retry_class="unknown", shard=2, stage="gpu-b", run_attempt=2)]
    with open_store(store_url, default_path=tmp_path / "unused.db") as store:
        assert store.record_attempts(rows) == 4
        # By start, then run: run 1's first attempt and run 3 started at the same second.
        assert store.attempts() == [rows[1], rows[3], rows[2], rows[0]]
        assert store.attempts(since="2026-11-02T03:00:05Z") == [rows[2], rows[0]]
        assert store.attempts(since="2026-11-04T00:00:00Z") == []


def test_recording_the_same_attempts_again_adds_nothing(store_url, tmp_path):
    first = [outcome("1", 1, "flaky"), outcome("1", 2)]
    with open_store(store_url, default_path=tmp_path / "unused.db") as store:
        assert store.record_attempts(first) == 2
        # The same places with other values: the row recorded first stays.
        again = [dataclasses.replace(first[0], elapsed=99.0), first[1], outcome("1", 3, "pass")]
        assert store.record_attempts(again) == 1
        assert store.record_attempts([]) == 0
        assert store.attempts() == [*first, outcome("1", 3, "pass")]
    assert raw(store_url, "SELECT COUNT(*) FROM test_attempts") == [(3,)]


def test_a_malformed_row_is_refused_before_anything_is_written(store_url, tmp_path):
    with open_store(store_url, default_path=tmp_path / "unused.db") as store:
        with pytest.raises(ValueError, match=r"^status must be one of pass, fail, timeout, killed, infra, flaky, "
                                             r"got 'passed'$"):
            store.record_attempts([outcome("1"), outcome("2", status="passed")])
        with pytest.raises(ValueError, match=r"^elapsed must be a finite number >= 0, got nan$"):
            store.record_attempts([outcome("1", elapsed=float("nan"))])
        with pytest.raises(TypeError, match=r"^outcomes must be Outcome values, got \('1',\)$"):
            store.record_attempts([("1",)])  # type: ignore[list-item]
        assert store.attempts() == []


def test_a_version_2_store_with_baselines_migrates_to_the_history(store_url, tmp_path):
    with closing(unmigrated(store_url)) as old:
        old.migrate(target=2)
        assert write(old, key("7"), [Sample(GRAD, -1, 1.5)]) == "written"
    # A read never migrates: the report is refused with CP701, the store unchanged.
    with open_store(store_url, default_path=tmp_path / "unused.db", read_only=True) as reader:
        with pytest.raises(InputError) as err:
            reader.check_history()
        assert err.value.code == "CP701"
        assert err.value.message == ("the store holds schema version 2, older than the test history (version 3); "
                                     "a read never migrates a store")
        assert err.value.hint == ("migrate it once with a writer: `ci-policy history import --store URL` (no file "
                                  "needed), or the next nightly `ci-policy run` that records into it")
        assert reader.schema_versions() == [1, 2]
    with open_store(store_url, default_path=tmp_path / "unused.db") as store:
        assert store.schema_versions() == [1, 2, 3]
        store.check_history()
        assert store.baseline(GRAD, -1, 5) == [1.5]
        assert store.record_attempts([outcome("7")]) == 1
        assert store.attempts() == [outcome("7")]
        # The plans' hours came with version 3 too.
        assert (store.plans(), store.record_plans([plan("7")]), store.plans()) == ([], 1, [plan("7")])


WORKERS = 4
RUNS = 10


def _writer(url: str, default_path: str, worker: int, barrier, results) -> None:
    """Open (and so migrate) the fresh store with the others, record its own runs' attempts, then all
    record the same run's attempts at once."""
    try:
        barrier.wait(120)
        added = []
        with open_store(url, default_path=Path(default_path)) as store:
            for i in range(RUNS):
                added.append(store.record_attempts([outcome(f"w{worker}-{i}", 1, "flaky"),
                                                    outcome(f"w{worker}-{i}", 2)]))
            barrier.wait(120)
            added.append(store.record_attempts([outcome("shared", n) for n in (1, 2, 3)]))
            added.append(store.record_plans([plan(f"w{worker}"), plan("shared")]))
        results.put((worker, added, None))
    except BaseException:
        results.put((worker, None, traceback.format_exc()))


def test_concurrent_writers_lose_nothing_and_record_a_shared_run_once(store_url, tmp_path):
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(store_url, str(tmp_path / "unused.db"), w, barrier, results))
             for w in range(WORKERS)]
    for proc in procs:
        proc.start()
    reported: dict[int, list[int]] = {}
    deadline = time.monotonic() + 300
    while len(reported) < WORKERS and time.monotonic() < deadline:
        try:
            worker, added, error = results.get(timeout=1)
        except queue.Empty:
            if not any(p.is_alive() for p in procs):
                break
            continue
        assert error is None, f"worker {worker} failed:\n{error}"
        reported[worker] = added
    for proc in procs:
        proc.join(60)
        if proc.is_alive():
            proc.kill()
    assert [p.exitcode for p in procs] == [0] * WORKERS
    assert all(added[:RUNS] == [2] * RUNS for added in reported.values())
    assert sorted(added[RUNS] for added in reported.values()) == [0] * (WORKERS - 1) + [3]
    # Each worker's own plan, and the shared run's plan once.
    assert sorted(added[RUNS + 1] for added in reported.values()) == [1] * (WORKERS - 1) + [2]
    with open_store(store_url, default_path=tmp_path / "unused.db") as store:
        assert store.schema_versions() == [1, 2, 3]
        places = sorted((o.run_id, o.attempt) for o in store.attempts())
        assert sorted(p.run_id for p in store.plans()) == sorted([f"w{w}" for w in range(WORKERS)] + ["shared"])
    assert places == sorted([(f"w{w}-{i}", n) for w in range(WORKERS) for i in range(RUNS) for n in (1, 2)]
                            + [("shared", n) for n in (1, 2, 3)])


def test_a_stored_row_that_is_no_outcome_is_refused_when_read(store_url, tmp_path):
    with open_store(store_url, default_path=tmp_path / "unused.db") as store:
        store.record_attempts([outcome("1")])
        raw(store_url, "UPDATE test_attempts SET started_at = 'yesterday'")
        with pytest.raises(DecodeError) as err:
            store.attempts()
    assert str(err.value) == f"started_at: expected a string matching {TIMESTAMP!r}, got \"yesterday\""


def test_importing_the_history_fixture_twice_adds_it_once(store_url, tmp_path, monkeypatch):
    runs = str(ROOT / "tests" / "data" / "history" / "runs")
    monkeypatch.setenv(DATABASE_URL_ENV, store_url)  # as the workflows pass it: never on the command line
    first = import_history(ImportRequest(tmp_path, (runs,)))
    again = import_history(ImportRequest(tmp_path, (runs,)))
    assert (first.read, first.added, first.warnings) == (again.read, first.read, ())
    assert again.added == 0
    # 45 nightly runs' plans and 31 pull request runs' (one each weekday), added once.
    assert (first.plans_read, first.plans_added, again.plans_read, again.plans_added) == (76, 76, 76, 0)
    with open_store(store_url, default_path=tmp_path / "unused.db") as store:
        assert len(store.plans()) == 76
        assert len(store.plans(since="2026-10-19")) == 76 - 4
        assert [p.event for p in store.plans(since="2026-11-27")] == ["schedule", "pull_request", "schedule",
                                                                      "schedule"]
        assert len(store.attempts()) == first.read
        # The three runs before the window: 7 attempts on a Friday (gpu-c, a retried flake), 5 and 5 at the weekend.
        assert len(store.attempts(since="2026-10-19")) == first.read - 17


def plan(run_id: str = "500", **changes) -> PlanHours:
    base = PlanHours(run_id=run_id, run_attempt=1, event="pull_request", commit="c0ffee",
                     created="2026-11-02T03:00:00Z", scheduled=0.25, skipped={"diff": 4.0, "trust": 0.125})
    return dataclasses.replace(base, **changes)


def test_plans_hours_round_trip_exactly_and_recording_them_again_adds_nothing(store_url, tmp_path):
    rows = [plan("2", created="2026-11-03T00:00:00Z", skipped={}, event=None, commit=None),
            plan("1"), plan("1", run_attempt=2, created="2026-11-02T04:00:00Z", scheduled=0.0,
                            skipped={"labels": 1.5, "cadence": 2.0})]
    with open_store(store_url, default_path=tmp_path / "unused.db") as store:
        assert store.record_plans(rows) == 3
        assert store.record_plans([dataclasses.replace(rows[1], scheduled=9.0), rows[0]]) == 0
        assert store.record_plans([]) == 0
        assert store.plans() == [rows[1], rows[2], rows[0]]
        assert store.plans(since="2026-11-02T03:30:00Z") == [rows[2], rows[0]]
        with pytest.raises(ValueError, match=r"^skipped groups must be among diff, labels, cadence, trust, "
                                             r"got \['weekend'\]$"):
            store.record_plans([plan("3", skipped={"weekend": 1.0})])
        with pytest.raises(ValueError, match=r"^scheduled must be a finite number >= 0, got -1.0$"):
            store.record_plans([plan("3", scheduled=-1.0)])
        assert len(store.plans()) == 3
    assert raw(store_url, "SELECT COUNT(*) FROM plan_hours") == [(3,)]


def test_a_stored_plan_row_that_is_no_plan_is_refused_when_read(store_url, tmp_path):
    with open_store(store_url, default_path=tmp_path / "unused.db") as store:
        store.record_plans([plan("1")])
        raw(store_url, "UPDATE plan_hours SET created_at = 'yesterday'")
        with pytest.raises(DecodeError) as err:
            store.plans()
    assert str(err.value) == f"created: expected a string matching {TIMESTAMP!r}, got \"yesterday\""
