"""The test history: `run` recording attempts into the store, and `ci-policy history import`.

Real runs of tiny test files (`ci-policy run` as a subprocess) into a real SQLite store, read
back through the store; the JSONL records of the same run imported again add nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, clean_env, console_script

from ci_policy.adapters.plan_history import RunInfo
from ci_policy.adapters.store import open_store
from ci_policy.model.outcomes import TIMESTAMP, Outcome
from ci_policy.read.codec import decode

CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: gpu, backend: cuda, runs_on: [h200, 8-gpu], timeout_per_file: 20}
runner: {kill_grace: 1}
"""
PLAN_ARGS = ["--event", "workflow_dispatch", "--label", "run-ci-megatron"]
GITHUB = {"GITHUB_RUN_ID": "555", "GITHUB_RUN_ATTEMPT": "1", "GITHUB_SHA": "abc123"}


def cli(repo: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([console_script(), *args], cwd=repo, env=env or clean_env(), capture_output=True,
                          text=True, timeout=120)


def gpu_test(body: str, est: float = 1) -> str:
    return (f"import os, sys\nfrom ci_policy import register_cuda_ci\n\n"
            f"register_cuda_ci(est_time={est}, suite='gpu', labels=['megatron'])\n\n"
            "def main():\n" + "".join(f"    {line}\n" for line in body.strip("\n").splitlines())
            + '\n\nif __name__ == "__main__":\n    main()\n')


def flaky(state: Path) -> str:
    """Fails like an infrastructure problem on its first attempt, passes afterwards."""
    marker = str(state / "started")
    return gpu_test(f"if not os.path.exists({marker!r}):\n    open({marker!r}, 'w').close()\n"
                    "    print('Server failed to start')\n    sys.exit(1)\n", est=2)


@pytest.fixture
def repo(make_repo, tmp_path) -> Path:
    state = tmp_path / "state"
    state.mkdir()
    return make_repo({"tests/gpu/test_ok.py": gpu_test("pass", est=3),
                      "tests/gpu/test_server.py": flaky(state)}, config=CONFIG)


def masked(rows: list[Outcome]) -> list[tuple]:
    return [(o.run_id, o.run_attempt, o.commit, o.event, o.cadence, o.stage, o.shard, o.runner_labels, o.file,
             o.attempt, o.status, o.retry_class, o.est_time) for o in rows]


RECORDED = [
    ("555", 1, "abc123", "workflow_dispatch", "nightly", "gpu", 0, ("h200", "8-gpu"), "tests/gpu/test_ok.py",
     1, "pass", None, 3.0),
    ("555", 1, "abc123", "workflow_dispatch", "nightly", "gpu", 0, ("h200", "8-gpu"), "tests/gpu/test_server.py",
     1, "flaky", "infra", 2.0),
    ("555", 1, "abc123", "workflow_dispatch", "nightly", "gpu", 0, ("h200", "8-gpu"), "tests/gpu/test_server.py",
     2, "pass", None, 2.0),
]


def attempts(store: Path) -> list[Outcome]:
    with open_store(str(store), default_path=store.parent / "unused.db", read_only=True) as opened:
        return opened.attempts()


def test_a_nightly_run_records_each_attempt_and_importing_its_records_adds_none(repo, tmp_path):
    store, timings = tmp_path / "history.sqlite", tmp_path / "t.jsonl"
    proc = cli(repo, "run", "--stage", "gpu", *PLAN_ARGS, "--cadence", "nightly", "--max-attempts", "2",
               "--store", str(store), "--timings-out", str(timings), env=clean_env(**GITHUB))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "not recorded" not in proc.stdout + proc.stderr
    rows = attempts(store)
    assert masked(rows) == RECORDED
    assert all(o.elapsed > 0 and o.started_at.endswith("Z") for o in rows)
    # The same attempts from the JSONL records: the rows are there already.
    proc = cli(repo, "history", "import", "--store", str(store), str(timings))
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == "ci-policy history import: 3 attempt(s) read, 0 new, 3 already in the store\n"
    assert len(attempts(store)) == 3


def test_a_run_that_may_not_write_baselines_records_nothing(repo, tmp_path):
    store = tmp_path / "history.sqlite"
    proc = cli(repo, "run", "--stage", "gpu", *PLAN_ARGS, "--max-attempts", "2", "--store", str(store),
               "--timings-out", str(tmp_path / "t.jsonl"), env=clean_env(**GITHUB))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not store.exists()


def test_a_store_that_cannot_be_reached_is_a_warning_and_the_shard_result_stands(repo, tmp_path):
    store = tmp_path / "missing-dir" / "history.sqlite"
    timings = tmp_path / "t.jsonl"
    proc = cli(repo, "run", "--stage", "gpu", *PLAN_ARGS, "--cadence", "nightly", "--max-attempts", "2",
               "--store", str(store), "--timings-out", str(timings), env=clean_env(**GITHUB))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (f"the test history of shard 0 was not recorded: SQLite metric history {store}: directory "
            f"{store.parent} does not exist; the shard's result stands, and its attempts stay in the timing "
            "records for `ci-policy history import`") in proc.stdout
    assert proc.stdout.endswith("RESULT: PASS\n")
    assert len(timings.read_text().splitlines()) == 3


def record(file: str, attempt: int, status: str, *, run_id: str | None = None, kind: str | None = None,
           started: str = "2026-11-02T03:00:00Z", stage: str | None = "gpu") -> str:
    return json.dumps({"schema": 1, "file": file, "stage": stage, "shard": 0, "attempt": attempt, "status": status,
                       "elapsed": 4.5, "est_time": 4, "failure_kind": kind, "retriable": None if kind is None else True,
                       "started_at": started, "commit": "c1", "run_id": run_id, "run_attempt": None}) + "\n"


def test_import_reads_downloaded_run_artifacts_idempotently(repo, tmp_path):
    artifacts = tmp_path / "runs"
    (artifacts / "run-901" / "ci-policy-timings-gpu-0").mkdir(parents=True)
    (artifacts / "run-901" / "ci-policy-timings-gpu-0" / "timings.jsonl").write_text(
        record("tests/a.py", 1, "timeout", kind="timeout") + record("tests/a.py", 2, "pass")
        + record("tests/b.py", 1, "fail", kind="unknown"))
    (artifacts / "run-901" / "1_gpu (0).txt").write_text("a job log: not read\n")
    (artifacts / "run-901" / "ci-policy-timings-gpu-1.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    local = tmp_path / "local.jsonl"
    local.write_text(record("tests/a.py", 1, "pass") + record("tests/a.py", 1, "pass", run_id="902", stage=None)
                     + record("tests/c.py", 1, "pass", run_id="903"))
    store = tmp_path / "history.sqlite"
    proc = cli(repo, "history", "import", "--store", str(store), str(artifacts), str(local))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ci-policy history import: 4 attempt(s) read, 4 new, 0 already in the store\n"
    zipped = artifacts / "run-901" / "ci-policy-timings-gpu-1.zip"
    assert proc.stderr == (f"{zipped}: warning: a zip archive is not read\n    hint: extract it first (`gh run "
                           "download` extracts each artifact into a directory of its name)\n"
                           f"{local}: warning: left out 1 record(s) with no run id (a local run), 1 record(s) with "
                           "no stage or shard\n    hint: the test history keeps the attempts of workflow runs "
                           "(GITHUB_RUN_ID set)\n")
    assert [(o.run_id, o.file, o.attempt, o.status, o.retry_class) for o in attempts(store)] == [
        ("901", "tests/a.py", 1, "flaky", "timeout"), ("901", "tests/a.py", 2, "pass", None),
        ("901", "tests/b.py", 1, "fail", "unknown"), ("903", "tests/c.py", 1, "pass", None)]
    again = cli(repo, "history", "import", "--store", str(store), str(artifacts), str(local))
    assert again.stdout == "ci-policy history import: 4 attempt(s) read, 0 new, 4 already in the store\n"


def test_import_refuses_bad_input_located_and_imports_nothing(repo, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(record("tests/a.py", 1, "pass", run_id="1") + '{"schema": 1, "file": "x"}\n')
    store = tmp_path / "history.sqlite"
    proc = cli(repo, "history", "import", "--store", str(store), str(bad), str(tmp_path / "nope.jsonl"),
               str(repo / "labels.py"))
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert f"{bad}:2: field 'stage': missing" in lines
    assert f"{tmp_path / 'nope.jsonl'}: no such file or directory" in lines
    assert f"{repo / 'labels.py'}: not a timing-records file (*.jsonl) or a directory" in lines
    assert not store.exists()


def test_import_without_a_store_is_a_usage_error(repo, tmp_path):
    proc = cli(repo, "history", "import", str(tmp_path))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("ci-policy history: error: --store: no store named: the test history is imported into "
                           "the shared store that the report reads\n    hint: pass --store URL, --store-file FILE "
                           "or set $CI_POLICY_DATABASE_URL\n")


def test_import_reads_each_runs_plan_hours_from_its_plan_artifact(repo, tmp_path):
    artifacts = tmp_path / "runs"
    runs = {"910": ["--event", "workflow_dispatch", "--label", "run-ci-megatron"],
            "911": ["--event", "workflow_dispatch"]}
    for run_id, args in runs.items():
        kept = artifacts / f"run-{run_id}" / "ci-policy-plan-1"
        kept.mkdir(parents=True)
        planned = cli(repo, "plan", *args, "--format", "json", "--json-out", str(kept / "plan.json"))
        assert planned.returncode == 0, planned.stderr
        # What the pipeline's plan job writes beside the plan it uploads.
        (kept / "run.json").write_text(json.dumps({"run_id": run_id, "run_attempt": 1, "commit": "abc123",
                                                   "created": "2026-11-02T03:00:00Z"}) + "\n")
    earlier = artifacts / "run-912" / "ci-policy-plan-2"
    earlier.mkdir(parents=True)
    (earlier / "plan.json").write_text((artifacts / "run-911" / "ci-policy-plan-1" / "plan.json").read_text())
    store = tmp_path / "history.sqlite"
    proc = cli(repo, "history", "import", "--store", str(store), str(artifacts))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("ci-policy history import: 0 attempt(s) read, 0 new, 0 already in the store; "
                           "2 plan(s) read, 2 new\n")
    assert proc.stderr == (f"{earlier / 'plan.json'}: warning: no run.json beside the plan (an earlier pipeline's): "
                           "when it was made is unknown, its hours are not imported\n")
    with open_store(str(store), default_path=tmp_path / "unused.db", read_only=True) as opened:
        plans = opened.plans()
    # Two megatron tests of 3 s and 2 s on one accelerator (5 s: the plan rounds to 0.001389 h): scheduled with
    # the label, skipped for it without.
    assert [(p.run_id, p.event, p.commit, p.scheduled, dict(p.skipped)) for p in plans] == [
        ("910", "workflow_dispatch", "abc123", 0.001389, {}),
        ("911", "workflow_dispatch", "abc123", 0.0, {"labels": 0.001389})]
    again = cli(repo, "history", "import", "--store", str(store), str(artifacts), "--format", "json")
    assert {k: v for k, v in json.loads(again.stdout).items() if k != "warnings"} == {
        "schema": 1, "read": 0, "added": 0, "plans_read": 2, "plans_added": 0}


def test_a_plan_artifact_that_does_not_read_is_a_located_error_and_nothing_is_imported(repo, tmp_path):
    kept = tmp_path / "runs" / "run-920" / "ci-policy-plan-1"
    kept.mkdir(parents=True)
    (kept / "plan.json").write_text('{"schema": 1, "event": "pull_request", "accelerator_hours": '
                                    '{"scheduled_hours": 1, "skipped_hours": {"weekend": 2}, "scheduled_cost": null, '
                                    '"skipped_cost": null, "stages": []}}\n')
    (kept / "run.json").write_text('{"run_id": "921", "run_attempt": 1, "created": "2026-11-02T03:00:00Z"}\n')
    other = tmp_path / "runs" / "run-922" / "ci-policy-plan-1"
    other.mkdir(parents=True)
    (other / "plan.json").write_text('{"schema": 1, "accelerator_hours": {"scheduled_hours": 0, "skipped_hours": {},'
                                     ' "scheduled_cost": null, "skipped_cost": null, "stages": []}}\n')
    (other / "run.json").write_text('{"run_id": "921", "run_attempt": 1, "created": "2026-11-02T03:00:00Z"}\n')
    store = tmp_path / "history.sqlite"
    proc = cli(repo, "history", "import", "--store", str(store), str(tmp_path / "runs"))
    assert (proc.returncode, proc.stdout) == (1, "")
    hint = ("    hint: download the run's artifacts again (`gh run download RUN_ID --dir run-RUN_ID`), or leave this "
            "run out\n")
    assert proc.stderr == (
        f"{kept / 'plan.json'}: accelerator_hours: skipped_hours: \"weekend\" is not one of diff, labels, cadence, "
        f"trust\n{hint}"
        f"{other / 'run.json'}: run.json names run 921 attempt 1, its directories another\n{hint}"
        "ci-policy: 2 errors\n")
    assert not store.exists()


def test_the_plan_job_notes_its_run_beside_the_plan_as_import_reads_it(tmp_path):
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "pr-pipeline.yml").read_text(encoding="utf-8"))
    [step] = [s for s in workflow["jobs"]["plan"]["steps"] if s.get("name") == "Note the run the plan was made in"]
    assert step["env"] == {"HEAD_SHA": "${{ steps.inputs.outputs.head_sha }}"}
    (tmp_path / "ci-policy-plan").mkdir()
    head = "0123456789abcdef0123456789abcdef01234567"
    env = {**clean_env(), "GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "3", "HEAD_SHA": head}
    subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=env, check=True, timeout=30)
    run = decode(RunInfo, json.loads((tmp_path / "ci-policy-plan" / "run.json").read_text()))
    assert (run.run_id, run.run_attempt, run.commit) == ("4242", 3, head)
    assert re.fullmatch(TIMESTAMP, run.created)


def test_import_drops_a_torn_last_line_with_the_warning_tune_gives(repo, tmp_path):
    torn = tmp_path / "run-930" / "t.jsonl"
    torn.parent.mkdir()
    torn.write_text(record("tests/a.py", 1, "pass") + '{"schema": 1, "file": "tests/b.py", "sta')
    store = tmp_path / "history.sqlite"
    proc = cli(repo, "history", "import", "--store", str(store), str(tmp_path / "run-930"))
    assert (proc.returncode, proc.stdout) == (0, "ci-policy history import: 1 attempt(s) read, 1 new, 0 already in "
                                                 "the store\n")
    assert proc.stderr == (f"{torn}:2: warning: the last line has no newline and is not a valid record (not valid "
                           "JSON: Unterminated string starting at (column 37)): a torn write; dropped 1 line, used the "
                           "1 complete record(s) before it\n    hint: the runner was stopped while writing it; the "
                           "records before it are complete\n")
