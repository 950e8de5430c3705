"""The metric store in CI, end to end through the installed `ci-policy` console script.

- A run that may not write (a pull request, the regular cadence) reads the store and never
  creates it: a missing store is an ERROR verdict naming it (password redacted).
- A baseline-writing run needs an explicit shared store (`--store` or
  `$CI_POLICY_DATABASE_URL`), and never a SQLite file while `GITHUB_ACTIONS=true`: exit 2,
  saying so and how to fix it, before any test runs; a PostgreSQL store is written.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import clean_env, console_script

from ci_policy.adapters.store import default_store_path, open_store
from ci_policy.read.records import write_record

CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: gpu, backend: cuda, runs_on: [h200]}
"""
TRAIN = "tests/gpu/test_train.py"
TRAIN_SOURCE = """\
from ci_policy import register_ci_gate, register_cuda_ci

register_cuda_ci(est_time=60, suite="gpu", labels=["megatron"])
register_ci_gate(metric_key="train/grad_norm", steps="last", enforce=True)

if __name__ == "__main__":
    open("ran", "w").close()
"""
PASSWORD_IN_URL = "s3cr3t%2FPa55%40word"
NO_STORE = ("ci-policy gate: error: --store: writing a baseline needs an explicit shared metric store, and none is "
            "configured (the default SQLite file is only read)\n"
            "    hint: pass --store URL or set $CI_POLICY_DATABASE_URL; in GitHub Actions, a PostgreSQL URL "
            "from a secret\n")


def sqlite_in_actions(source: str, shown: str, command: str = "gate") -> str:
    return (f"ci-policy {command}: error: {source}: writing a baseline into the local SQLite file {shown} while "
            "GITHUB_ACTIONS=true: the file is thrown away with the runner's workspace\n"
            "    hint: configure a PostgreSQL store: keep its URL in a repository secret and pass it as "
            "$CI_POLICY_DATABASE_URL (see docs/adopting/metric-store.md)\n")


def cli(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([console_script(), *args], cwd=cwd, env=clean_env(**env), capture_output=True,
                          text=True, timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "Pa55" not in proc.stdout + proc.stderr
    return proc


@pytest.fixture
def repo(make_repo) -> Path:
    return make_repo({TRAIN: TRAIN_SOURCE}, config=CONFIG)


@pytest.fixture
def record(tmp_path: Path) -> str:
    path = tmp_path / "record.json"
    write_record({"train/grad_norm": [(0, 1.0)]}, path)
    return str(path)


def gate(repo: Path, record: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    return cli(repo, "gate", "--file", TRAIN, "--record", record, *args, **env)


def test_a_read_of_a_missing_store_is_an_error_verdict_naming_it(repo, record, tmp_path):
    missing = tmp_path / "nowhere.sqlite"
    proc = gate(repo, record, "--store", str(missing))
    assert (proc.returncode, proc.stderr) == (1, "")
    assert proc.stdout == (
        "ci-policy gate: tests/gpu/test_train.py (cuda, gpu)\n"
        "METRIC           STEP  VALUE  BASELINE  BAND  VERDICT  DETAIL\n"
        f"train/grad_norm  last  1      -         -     ERROR    metric history unavailable: SQLite metric history "
        f"{missing}: does not exist (a read never creates one; point --store or $CI_POLICY_DATABASE_URL at the "
        "shared store)\n"
        "run: NOT trusted; baseline: not written: metric history unavailable\n"
        "FAILED: 1 enforced gate coordinate(s) failed\n")
    assert not missing.exists()
    # The default store of the checkout is read the same way, and not created either.
    proc = gate(repo, record, "--event", "pull_request", "--cadence", "nightly", "--run-id", "7")
    assert proc.returncode == 1
    assert f"SQLite metric history {default_store_path(repo)}: does not exist" in proc.stdout
    assert not (repo / ".ci-policy").exists() and not default_store_path(repo).parent.exists()


def test_a_read_of_a_postgres_database_without_history_names_it_redacted(repo, record, postgres_database):
    url = postgres_database.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD_IN_URL}@", 1)
    shown = postgres_database.replace("postgresql://postgres@", "postgresql://postgres:***@", 1)
    proc = gate(repo, record, "--event", "pull_request", CI_POLICY_DATABASE_URL=url)
    assert proc.returncode == 1
    assert (f"ERROR    metric history unavailable: PostgreSQL metric history {shown}: holds no metric history "
            "(no baseline was ever written to it; a read never creates one)\n") in proc.stdout


def test_a_baseline_write_needs_an_explicit_store(repo, record):
    proc = gate(repo, record, "--cadence", "nightly", "--run-id", "1")
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", NO_STORE)
    assert not (repo / ".ci-policy").exists()
    # Without a run id nothing is written, so nothing is refused: the read-only default store is read.
    proc = gate(repo, record, "--cadence", "nightly")
    assert (proc.returncode, proc.stderr) == (1, "")
    assert "does not exist" in proc.stdout


def test_a_baseline_write_into_sqlite_under_github_actions_is_refused(repo, record, tmp_path):
    store = tmp_path / "h.sqlite"
    actions = {"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "9", "GITHUB_EVENT_NAME": "schedule"}
    proc = gate(repo, record, "--cadence", "nightly", "--store", str(store), **actions)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", sqlite_in_actions("--store", str(store)))
    proc = gate(repo, record, "--cadence", "weekly", CI_POLICY_DATABASE_URL=f"sqlite://{store}", **actions)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", sqlite_in_actions("$CI_POLICY_DATABASE_URL", f"sqlite://{store}"))
    assert not store.exists()
    # A pull request in GitHub Actions reads it (it may never write): no refusal.
    open_store(str(store), default_path=tmp_path / "unused.sqlite").close()
    proc = gate(repo, record, "--cadence", "nightly", "--store", str(store),
                **{**actions, "GITHUB_EVENT_NAME": "pull_request"})
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.endswith("run: trusted; baseline: not written: pull request runs never write baselines\n")
    # Outside GitHub Actions an explicit SQLite file is a shared store like any other.
    proc = gate(repo, record, "--cadence", "nightly", "--store", str(store), "--run-id", "10")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.endswith("run: trusted; baseline: written (1 value(s))\n")


def test_ci_policy_run_refuses_before_any_test_runs(repo, tmp_path):
    store = tmp_path / "h.sqlite"
    proc = cli(repo, "run", "--stage", "gpu", "--event", "schedule", "--cadence", "nightly", "--store", str(store),
               "--records-out", str(tmp_path / "records"), "--timings-out", str(tmp_path / "t.jsonl"),
               GITHUB_ACTIONS="true", GITHUB_RUN_ID="9")
    assert (proc.returncode, proc.stderr) == (2, sqlite_in_actions("--store", str(store), "run"))
    assert not (repo / "ran").exists() and not store.exists()


def test_a_scheduled_write_into_postgres_under_github_actions(repo, record, postgres_database, tmp_path):
    url = postgres_database.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD_IN_URL}@", 1)
    actions = {"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "9", "GITHUB_EVENT_NAME": "schedule",
               "CI_POLICY_DATABASE_URL": url}
    proc = gate(repo, record, "--cadence", "nightly", **actions)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.endswith("run: trusted; baseline: written (1 value(s))\n")
    with open_store(postgres_database, default_path=tmp_path / "unused.sqlite", read_only=True) as store:
        assert [(r["run_id"], r["outcome"]) for r in store.runs()] == [("9", "written")]
