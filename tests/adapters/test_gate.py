"""`ci_policy/adapters/gate.py`: one file's gates, evaluated and recorded, called in process.

The checkout is generated with `make_repo` and read with `load_snapshot`; the store is real
(a SQLite file, or a database on a throwaway PostgreSQL server), opened through `opener`.
Faults are real too: a server stopped or killed after the store was opened, a schema newer
than this code, a trigger that refuses the samples.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from ci_policy.adapters.gate import MAX_STEP, RunIdentity, opener, registration_for, run_gate, specs_for
from ci_policy.adapters.store import DATABASE_URL_ENV, default_store_path, open_store
from ci_policy.errors import InputError, UsageError
from ci_policy.model.snapshot import load_snapshot
from ci_policy.render.github import gate_annotations
from ci_policy.render.markdown import gate_markdown
from ci_policy.render.text import gate_text

CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: gpu-a, backend: cuda, runs_on: [h200]}
  - {name: gpu-b, backend: cuda, runs_on: [h200]}
  - {name: amd, backend: rocm, runs_on: [mi350]}
"""

MAIN = '\nif __name__ == "__main__":\n    main()\n'
TRAIN = "tests/gpu/test_train.py"
GRAD, KL = "train/grad_norm", "train/ppo_kl"
V1 = "rollout/tito_session_mismatch_rate/v1/assistant_text"

TRAIN_SOURCE = """\
from ci_policy import register_ci_gate, register_cuda_ci

register_cuda_ci(est_time=60, suite="gpu-a", labels=["megatron"])
register_ci_gate(metric_key="train/grad_norm", steps="last", enforce=True)
register_ci_gate(metric_key="train/ppo_kl", steps=[1, 2])
register_ci_gate(metric_key="rollout/tito_session_mismatch_rate/v1/assistant_text", enforce=True,
                 allowlist_reason="known trailing-newline drift")
""" + MAIN

PASSWORD = "s3cr3t/Pa55@word"
PASSWORD_IN_URL = "s3cr3t%2FPa55%40word"


def series(grad: float, kl: float = 0.02, v1: float = 0.25) -> dict:
    return {GRAD: [(0, 3.0), (1, grad)], KL: [(0, 0.01), (1, kl), (2, kl)], V1: [(0, 0.5), (4, v1)]}


@pytest.fixture(autouse=True)
def _no_database_url(monkeypatch):
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)


@pytest.fixture
def repo(make_repo) -> Path:
    return make_repo({TRAIN: TRAIN_SOURCE}, config=CONFIG)


@pytest.fixture
def snapshot(repo):
    return load_snapshot(repo).require_valid()


def create(url) -> str:
    """An empty store at `url`, created as a baseline-writing run would (a read never creates one)."""
    open_store(url, default_path=Path("unused.sqlite")).close()
    return url


def gate(snapshot, values: dict, url, *, cadence="nightly", event="schedule", run_id="1", attempt=1,
         file=TRAIN, open_store_=None):
    reg = registration_for(snapshot, file, None)
    return run_gate(snapshot, reg, values, open_store_ or opener(url, snapshot.repo), cadence=cadence, event=event,
                    run=RunIdentity(run_id=run_id, run_attempt=attempt, commit="abc"))


def verdicts(outcome) -> list[tuple]:
    return [(r.spec.metric_key, r.step, r.value, r.verdict) for r in outcome.results]


def build_baseline(snapshot, url) -> None:
    for i, (grad, kl, v1) in enumerate([(1.0, 0.01, 0.25), (1.2, 0.02, 0.25), (0.8, 0.03, 0.25)]):
        outcome = gate(snapshot, series(grad, kl, v1), url, run_id=f"10{i}")
        assert outcome.baseline == "written (4 value(s))"


# -- the registration -----------------------------------------------------------------------------------

def test_registration_for(make_repo):
    repo = make_repo({
        TRAIN: TRAIN_SOURCE,
        "tests/gpu/test_both.py": "from ci_policy import register_cuda_ci, register_rocm_ci\n\n"
                                  'register_cuda_ci(est_time=5, suite="gpu-b", labels=["megatron"])\n'
                                  'register_rocm_ci(est_time=5, suite="amd", labels=["megatron"])\n' + MAIN,
    }, config=CONFIG)
    snapshot = load_snapshot(repo).require_valid()
    reg = registration_for(snapshot, TRAIN, None)
    assert (reg.file, reg.backend, reg.suite) == (TRAIN, "cuda", "gpu-a")
    assert registration_for(snapshot, TRAIN, "gpu-a") == reg
    with pytest.raises(InputError) as err:
        registration_for(snapshot, TRAIN, "gpu-b")
    assert (err.value.message, err.value.path) == (f"--file: {TRAIN} has no registration for stage gpu-b", TRAIN)
    with pytest.raises(InputError) as err:
        registration_for(snapshot, "tests/gpu/test_both.py", None)
    assert err.value.message == ("--file: tests/gpu/test_both.py is registered for several stages (gpu-b, amd); "
                                 "pass --stage")
    rocm = registration_for(snapshot, "tests/gpu/test_both.py", "amd")
    assert (rocm.backend, rocm.suite) == ("rocm", "amd")
    with pytest.raises(InputError) as err:
        registration_for(snapshot, "tests/gpu/test_nope.py", None)
    assert err.value.message == "--file: tests/gpu/test_nope.py has no registration"
    assert err.value.hint == "pass a registered test file (see ci-policy registry)"


def test_registration_for_a_suite_two_backends_share_takes_its_key(make_repo):
    repo = make_repo({
        "tests/gpu/test_both.py": "from ci_policy import register_cuda_ci, register_rocm_ci\n\n"
                                  'register_cuda_ci(est_time=5, suite="gpu-b", labels=["megatron"])\n'
                                  'register_rocm_ci(est_time=5, suite="gpu-b", labels=["megatron"])\n' + MAIN,
    }, config=CONFIG + "  - {name: gpu-b, backend: rocm, runs_on: [mi350]}\n")
    snapshot = load_snapshot(repo).require_valid()
    for stage in (None, "gpu-b"):
        with pytest.raises(InputError) as err:
            registration_for(snapshot, "tests/gpu/test_both.py", stage)
        assert err.value.message == ("--file: tests/gpu/test_both.py is registered for several stages "
                                     "(gpu-b@cuda, gpu-b@rocm); pass --stage")
    rocm = registration_for(snapshot, "tests/gpu/test_both.py", "gpu-b@rocm")
    assert (rocm.backend, rocm.suite, rocm.line) == ("rocm", "gpu-b", 4)


def test_specs_fill_defaults_and_identify_their_series(snapshot):
    specs = specs_for(snapshot, TRAIN, registration_for(snapshot, TRAIN, None))
    assert [(s.metric_key, s.steps, dict(s.constraint), s.enforce, s.allowlist_reason, s.identity) for s in specs] == [
        (GRAD, "last", {"rel_up": 0.5, "abs_floor_up": 0.05, "rel_down": 0.5, "abs_floor_down": 0.05}, True, None,
         (TRAIN, "cuda", "gpu-a", GRAD, '{"constraint":null,"steps":"last"}')),
        (KL, [1, 2], {"rel_up": 1.0, "abs_floor_up": 0.001, "rel_down": 1.0, "abs_floor_down": 0.001}, False, None,
         (TRAIN, "cuda", "gpu-a", KL, '{"constraint":null,"steps":[1,2]}')),
        (V1, "last", {"rel_up": 1.0, "abs_floor_up": 0.1, "rel_down": 1.0}, True, "known trailing-newline drift",
         (TRAIN, "cuda", "gpu-a", V1, '{"constraint":null,"steps":null}')),
    ]


# -- evaluating and recording ---------------------------------------------------------------------------

def test_verdicts_trust_blocking_and_what_is_recorded(snapshot, tmp_path):
    url = str(tmp_path / "h.sqlite")
    first = gate(snapshot, series(1.0), url)
    assert verdicts(first) == [(GRAD, -1, 1.0, "NO_BASELINE"), (KL, 1, 0.02, "NO_BASELINE"),
                               (KL, 2, 0.02, "NO_BASELINE"), (V1, -1, 0.25, "NO_BASELINE")]
    assert [r.message for r in first.results] == ["0 baseline value(s), 3 needed"] * 4
    assert (first.trusted, first.blocking, first.baseline) == (True, [], "written (4 value(s))")
    gate(snapshot, series(1.2, 0.02), url, run_id="2")
    gate(snapshot, series(0.8, 0.02), url, run_id="3")

    passing = gate(snapshot, series(1.1), url, cadence="regular", event="workflow_dispatch", run_id="4")
    assert verdicts(passing) == [(GRAD, -1, 1.1, "PASS"), (KL, 1, 0.02, "PASS"), (KL, 2, 0.02, "PASS"),
                                 (V1, -1, 0.25, "PASS")]
    grad = passing.results[0]
    assert (grad.band.ref, grad.band.lo, grad.band.hi, grad.band.n) == (1.0, 0.5, 1.5, 3)
    assert passing.baseline == "not written: the regular cadence does not write baselines"

    # The enforced grad_norm FAILs (blocking); the allowlisted v1 rate FAILs (not blocking).
    failing = gate(snapshot, series(2.0, v1=0.9), url, run_id="5")
    assert verdicts(failing) == [(GRAD, -1, 2.0, "FAIL"), (KL, 1, 0.02, "PASS"), (KL, 2, 0.02, "PASS"),
                                 (V1, -1, 0.9, "FAIL")]
    assert failing.results[0].message == "2 is above the band [0.5, 1.5] (baseline mean 1 of 3)"
    assert failing.results[3].message == "0.9 is above the band [0, 0.5] (baseline mean 0.25 of 3)"
    assert [r.spec.metric_key for r in failing.blocking] == [GRAD]
    assert (failing.trusted, failing.baseline) == (
        False, "not written: the run is not trusted (a gate FAILed or ERRORed)")

    with open_store(url, default_path=tmp_path / "unused.db") as store:
        assert [(r["run_id"], r["cadence"], r["commit"], r["trusted"], r["outcome"], r["samples"])
                for r in store.runs()] == [
            ("1", "nightly", "abc", True, "written", 4), ("2", "nightly", "abc", True, "written", 4),
            ("3", "nightly", "abc", True, "written", 4), ("5", "nightly", "abc", False, "not_trusted", 0)]
        spec_id = first.results[0].spec.identity
        assert store.baseline(spec_id, -1, 10) == [1.0, 1.2, 0.8]
    assert not (tmp_path / "unused.db").exists()


def test_no_run_id_records_nothing(snapshot, tmp_path):
    url = create(str(tmp_path / "h.sqlite"))
    outcome = gate(snapshot, series(1.0), url, run_id=None)
    assert outcome.baseline == "not written: no run id (pass --run-id, or run in GitHub Actions)"
    with open_store(url, default_path=tmp_path / "unused.db") as store:
        assert store.runs() == []


def test_a_file_without_gates_never_opens_the_store(make_repo):
    repo = make_repo({"tests/gpu/test_plain.py": "from ci_policy import register_cuda_ci\n\n"
                      'register_cuda_ci(est_time=5, suite="gpu-a", labels=["megatron"])\n' + MAIN}, config=CONFIG)
    snapshot = load_snapshot(repo).require_valid()

    def never(**_):
        raise AssertionError("the store was opened for a file without gates")

    outcome = gate(snapshot, {}, None, file="tests/gpu/test_plain.py", open_store_=never)
    assert (outcome.results, outcome.baseline, outcome.trusted) == ([], "no gates declared", True)
    assert gate_text(outcome) == "ci-policy gate: tests/gpu/test_plain.py (cuda, gpu-a): no gates declared"


def test_identical_declarations_are_one_stored_value(make_repo, tmp_path):
    line = 'register_ci_gate(metric_key="train/grad_norm", steps="last")\n'
    repo = make_repo({TRAIN: "from ci_policy import register_ci_gate, register_cuda_ci\n\n"
                      'register_cuda_ci(est_time=5, suite="gpu-a", labels=["megatron"])\n' + line + line + MAIN},
                     config=CONFIG)
    snapshot = load_snapshot(repo).require_valid()
    url = str(tmp_path / "h.sqlite")
    outcome = gate(snapshot, {GRAD: [(0, 1.5)]}, url)
    assert verdicts(outcome) == [(GRAD, -1, 1.5, "NO_BASELINE")] * 2
    assert outcome.baseline == "written (1 value(s))"
    with open_store(url, default_path=tmp_path / "unused.db") as store:
        assert [r["samples"] for r in store.runs()] == [1]
        assert store.baseline(outcome.results[0].spec.identity, -1, 10) == [1.5]


def test_steps_the_store_cannot_hold_are_errors(snapshot, tmp_path):
    # A record written by other tools may hold a negative step or one beyond 64 bits; with a
    # step list such a step is never selected, with "last" it is shown (and stored) as step -1.
    url = str(tmp_path / "h.sqlite")
    values = {GRAD: [(-4, 1.0)], KL: [(1, 0.02), (2, 0.02), (MAX_STEP + 1, 0.5)], V1: [(-2, 0.25)]}
    outcome = gate(snapshot, values, url)
    assert verdicts(outcome) == [(GRAD, -1, 1.0, "NO_BASELINE"), (KL, 1, 0.02, "NO_BASELINE"),
                                 (KL, 2, 0.02, "NO_BASELINE"), (V1, -1, 0.25, "NO_BASELINE")]
    assert outcome.baseline == "written (4 value(s))"

    repo = snapshot.repo
    (repo / TRAIN).write_text(TRAIN_SOURCE.replace('steps=[1, 2]', 'steps="all"'))
    snapshot = load_snapshot(repo).require_valid()
    outcome = gate(snapshot, values, url, run_id="2")
    assert verdicts(outcome) == [(GRAD, -1, 1.0, "NO_BASELINE"), (KL, 1, 0.02, "NO_BASELINE"),
                                 (KL, 2, 0.02, "NO_BASELINE"), (KL, MAX_STEP + 1, 0.5, "ERROR"),
                                 (V1, -1, 0.25, "NO_BASELINE")]
    assert outcome.results[3].message == ("step 9223372036854775808 is not a step index the metric history can "
                                          "hold (0 to 9223372036854775807)")
    assert outcome.blocking == []  # ppo_kl is report-only
    assert outcome.baseline == "not written: the run is not trusted (a gate FAILed or ERRORed)"


# -- faults ---------------------------------------------------------------------------------------------

def test_a_url_that_is_not_a_store_location_is_a_usage_error(snapshot, tmp_path):
    with pytest.raises(UsageError) as caught:
        gate(snapshot, series(1.0), "mysql://ci:hunter2@db.example/metrics")
    assert (caught.value.source, caught.value.message) == (
        "--store", "unsupported metric history URL scheme 'mysql'")
    assert "hunter2" not in f"{caught.value.message} {caught.value.hint}"


def test_a_schema_newer_than_this_code_is_an_error_for_every_coordinate(snapshot, tmp_path):
    path = tmp_path / "h.sqlite"
    open_store(str(path), default_path=tmp_path / "unused.db").close()
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("INSERT INTO schema_migrations (version) VALUES (7)")
    outcome = gate(snapshot, series(1.0), str(path))
    assert {(r.verdict, r.message) for r in outcome.results} == {
        ("ERROR", "metric history unavailable: the metric history store has schema version 7, newer than the 3 "
                  "this ci_policy knows")}
    assert outcome.baseline == "not written: metric history unavailable"


def test_a_write_that_fails_keeps_the_verdicts_and_says_so(snapshot, tmp_path):
    path = tmp_path / "h.sqlite"
    build_baseline(snapshot, str(path))
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON gate_samples "
                     "BEGIN SELECT RAISE(ABORT, 'disk full (simulated)'); END")
    outcome = gate(snapshot, series(1.1), str(path), run_id="200")
    assert [r.verdict for r in outcome.results] == ["PASS"] * 4
    assert outcome.baseline == (f"not written: metric history unavailable: SQLite metric history {path}: "
                                "disk full (simulated)")
    with open_store(str(path), default_path=tmp_path / "unused.db") as store:
        assert [r["run_id"] for r in store.runs()] == ["100", "101", "102"]  # the write was one transaction


def test_the_default_store_is_read_from_the_state_directory_unless_the_environment_names_one(
        snapshot, tmp_path, monkeypatch, state_home):
    default = default_store_path(snapshot.repo)
    assert default.parent.parent == state_home / "ci-policy"
    # Read, never created: a missing default store is an ERROR naming it.
    outcome = gate(snapshot, series(1.0), None, cadence="regular", event="workflow_dispatch")
    assert {(r.verdict, r.message) for r in outcome.results} == {
        ("ERROR", f"metric history unavailable: SQLite metric history {default}: does not exist (a read never "
                  "creates one; point --store or $CI_POLICY_DATABASE_URL at the shared store)")}
    assert not default.exists() and not default.parent.exists()
    default.parent.mkdir(parents=True)
    create(str(default))
    outcome = gate(snapshot, series(1.0), None, cadence="regular", event="workflow_dispatch")
    assert ([r.verdict for r in outcome.results], outcome.baseline) == (
        ["NO_BASELINE"] * 4, "not written: the regular cadence does not write baselines")
    monkeypatch.setenv(DATABASE_URL_ENV, f"sqlite://{tmp_path / 'env.sqlite'}")
    outcome = gate(snapshot, series(1.0), None, run_id="2")
    assert outcome.baseline == "written (4 value(s))"
    with open_store(None, default_path=tmp_path / "unused.db") as store:
        assert [r["run_id"] for r in store.runs()] == ["2"]
    with open_store(str(default), default_path=tmp_path / "unused.db") as store:
        assert store.runs() == []


@pytest.mark.parametrize("fault", ["stop", "kill"])
def test_a_postgres_server_lost_after_the_store_opened(fault, snapshot, postgres_server, tmp_path):
    postgres_server.create_database("history")
    url = postgres_server.url("history", password=PASSWORD_IN_URL)
    shown = f"PostgreSQL metric history postgresql://postgres:***@127.0.0.1:{postgres_server.port}/history: "
    build_baseline(snapshot, url)
    assert [r.verdict for r in gate(snapshot, series(1.1), url, run_id=None).results] == ["PASS"] * 4

    lost = []

    def open_then_lose(*, write):
        store = opener(url, snapshot.repo)(write=write)  # opened and migrated: the server was up
        getattr(postgres_server, fault)()
        lost.append(fault)
        return store

    outcome = gate(snapshot, series(1.1), url, run_id="200", open_store_=open_then_lose)
    assert lost == [fault]
    assert [r.verdict for r in outcome.results] == ["ERROR"] * 4
    for result in outcome.results:
        assert result.message.startswith(f"metric history unavailable: {shown}")
        assert len(result.message) > len(f"metric history unavailable: {shown}") + 10
        assert result.band is None and "\n" not in result.message
    assert outcome.baseline.startswith(f"not written: metric history unavailable: {shown}")
    assert not outcome.trusted
    assert [r.spec.metric_key for r in outcome.blocking] == [GRAD]
    shown_text = gate_text(outcome) + gate_markdown(outcome) + gate_annotations(outcome)
    assert "PASS" not in shown_text
    assert PASSWORD not in shown_text and PASSWORD_IN_URL not in shown_text

    # Back up: nothing of run 200 was recorded, so it may still write.
    postgres_server.start()
    with open_store(url, default_path=tmp_path / "unused.db") as store:
        assert [r["run_id"] for r in store.runs()] == ["100", "101", "102"]
    again = gate(snapshot, series(1.1), url, run_id="200")
    assert ([r.verdict for r in again.results], again.baseline) == (["PASS"] * 4, "written (4 value(s))")
