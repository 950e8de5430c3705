"""`ci-policy report` over the synthetic history of tests/data/history (six weeks of nightly runs with
retried flakes, a slow drift and a stage skipped at weekends), imported through `history import`
into a real SQLite store: its report in every format is a golden file. Then the report's errors:
CP701 (a store from before the test history) and CP702 (a bad --since).
"""

from __future__ import annotations

import json
import sys
from contextlib import closing
from pathlib import Path

import pytest
from helpers import ROOT, assert_golden, run_cli
from schema_check import assert_valid

from ci_policy.adapters.store import SQLiteStore, open_store
from ci_policy.cli.main import main

HISTORY = ROOT / "tests" / "data" / "history"
# The checkout whose configuration prices gpu-a (8 GPUs, 24/h) and gpu-b (2 GPUs, 6.5/h); gpu-c
# has no entry (1 GPU, no price).
CHECKOUT = HISTORY / "checkout"
WINDOW = ["--today", "2026-11-29", "--since", "6w", "--repository", "octo/gpu-repo", "--repo", str(CHECKOUT)]


def generated() -> dict[str, str]:
    sys.path.insert(0, str(HISTORY))
    try:
        import generate  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(HISTORY))
    return generate.files()


def test_the_history_fixture_is_what_its_script_writes():
    files = generated()
    on_disk = {str(p.relative_to(HISTORY)): p.read_text(encoding="utf-8")
               for p in sorted((HISTORY / "runs").rglob("*")) if p.is_file()}
    assert on_disk == files


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report") / "history.sqlite"
    assert main(["history", "import", "--store", str(path), str(HISTORY / "runs")]) == 0
    return path


@pytest.mark.parametrize("fmt, suffix", [("text", "txt"), ("json", "json"), ("markdown", "md")])
def test_the_report_of_the_history_in_every_format(store, fmt, suffix, capsys, monkeypatch):
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    rc, out, err = run_cli(["report", "--store", str(store), *WINDOW, "--propose-quarantine", "--format", fmt],
                           capsys)
    assert (rc, err) == (0, "")
    assert_golden(f"cli/report/history.{suffix}", out)
    if fmt == "json":
        assert_valid("report", out)


def test_the_reports_numbers(store, capsys):
    rc, out, _ = run_cli(["report", "--store", str(store), *WINDOW, "--propose-quarantine", "--format", "json"],
                         capsys)
    doc = json.loads(out)
    # 42 nightly runs and the re-run of day 20; the three runs before the window are left out.
    assert (doc["since"], doc["until"], doc["runs"]) == ("2026-10-19", "2026-11-29", 43)
    # gpu-c runs on weekdays only: 5 runs a week, none at weekends.
    assert {w["runs"] for w in doc["weeks"] if w["stage"] == "gpu-c"} == {5}
    flaky = {f["file"]: (f["flaky_runs"], f["runs"], f["retried"], f["same_commit"]) for f in doc["flaky"]}
    assert flaky == {"tests/e2e/test_rollout.py": (8, 42, 8, 0), "tests/e2e/test_server.py": (6, 43, 6, 0),
                     "tests/e2e/test_eval.py": (1, 43, 0, 1)}
    assert [(p["file"], p["stage"]) for p in doc["proposals"]] == [
        ("tests/e2e/test_rollout.py", "gpu-a"), ("tests/e2e/test_server.py", "gpu-b")]
    [drift] = doc["drift"]
    assert (drift["file"], drift["est_time"], drift["first_week"], drift["last_week"]) == (
        "tests/e2e/test_ckpt.py", 300, 315.0, 490.0)
    bars = doc["slowest_run"]["bars"]
    assert doc["slowest_run"]["stage"] == "gpu-a"
    # Each bar of a shard starts where the previous one ended.
    for before, after in zip(bars, bars[1:], strict=False):
        if before["shard"] == after["shard"]:
            assert after["start"] == round(before["start"] + before["elapsed"], 1)
        else:
            assert after["start"] == 0


def test_the_configuration_gives_each_stage_its_gpus_and_cost(store, capsys):
    _, out, _ = run_cli(["report", "--store", str(store), *WINDOW, "--format", "json"], capsys)
    doc = json.loads(out)
    assert [(s["stage"], s["runner_hours"], s["gpu_hours"], s["cost"]) for s in doc["stages"]] == [
        ("gpu-a", 22.802, 182.419, 547.25), ("gpu-b", 2.188, 4.379, 14.23), ("gpu-c", 14.834, 14.834, None)]
    [week] = [w for w in doc["weeks"] if (w["week"], w["stage"]) == ("2026-11-23", "gpu-a")]
    # 14,250.2 s of attempts: 3.958 runner-hours, on 8 GPUs at 24 per runner-hour.
    assert (week["runner_hours"], week["gpu_hours"], week["cost"]) == (3.958, 31.667, 95.0)
    assert doc["notes"] == ["cost: no cost_per_hour given for gpu-c"]


def test_the_hours_saved_by_skipping_come_from_every_runs_plan_pull_requests_included(store, capsys):
    _, out, _ = run_cli(["report", "--store", str(store), *WINDOW, "--format", "json"], capsys)
    doc = json.loads(out)
    # 42 nightly plans and 30 pull request plans (weekdays) in the window; a nightly schedules 4.6 h (4 on
    # gpu-a's 8 GPUs, 0.1 on gpu-b's 2, 0.5 on gpu-c's 1) on weekdays and skips gpu-c at weekends (cadence).
    assert (doc["scheduled_hours"], doc["skipped_hours"]) == (188.2, 143.0)
    assert doc["skipped_by_group"] == {"diff": 86.0, "labels": 5.0, "cadence": 6.0, "trust": 46.0}
    # The first week: 7 nightly plans and 5 pull requests (docs only, code, fork, docs only, code).
    assert doc["plan_weeks"][0] == {"week": "2026-10-19", "plans": 12, "scheduled_hours": 31.4,
                                    "skipped_hours": 23.8,
                                    "by_group": {"diff": 17.2, "labels": 1.0, "cadence": 1.0, "trust": 4.6}}
    assert [w["week"] for w in doc["plan_weeks"]] == [w["week"] for w in doc["flaky_weeks"]]


def quarantine(store: Path, capsys, *args: str) -> list[tuple]:
    _, out, _ = run_cli(["report", "--store", str(store), *WINDOW, *args, "--format", "json"], capsys)
    return [(q["file"], q["stage"], q["line"], q["status"], q["runs"], q["failed_runs"], q["last_failure"])
            for q in json.loads(out)["quarantine"]]


def test_a_quarantined_file_that_passed_every_run_of_the_window_is_ready_to_leave(store, capsys):
    # The last 14 days by default (2026-11-16 to 2026-11-29: runs 7028 to 7041).
    assert quarantine(store, capsys) == [
        ("tests/e2e/test_eval.py", None, 18, "ready", 14, 0, None),
        ("tests/e2e/test_rollout.py", "gpu-a", 22, "failing", 14, 2, "7037"),
        ("tests/e2e/test_retired.py", None, 27, "not-run", 0, 0, None)]
    # Four weeks reach back to day 20, whose run of test_eval.py failed (its re-run 7100 passed).
    assert quarantine(store, capsys, "--release-after", "4w")[0] == (
        "tests/e2e/test_eval.py", None, 18, "failing", 29, 1, "7020")
    _, out, _ = run_cli(["report", "--store", str(store), *WINDOW, "--format", "json"], capsys)
    [ready] = [q for q in json.loads(out)["quarantine"] if q["status"] == "ready"]
    assert ready["entry"] == ('- file: tests/e2e/test_eval.py\n  reason: "fails without a retry (run 7020)"\n'
                              '  issue: "https://github.com/octo/gpu-repo/issues/31"\n  until: 2026-12-31\n')


def test_a_bad_release_after_is_cp702(store, capsys):
    rc, out, err = run_cli(["report", "--store", str(store), *WINDOW, "--release-after", "2 weeks"], capsys)
    assert (rc, out) == (1, "")
    assert err == ("--release-after: CP702 since-invalid: '2 weeks' is not a time span: write a number of days or "
                   "weeks, e.g. 30d or 4w\n    hint: a report reads the attempts started in the last N days (Nd) or "
                   "weeks (Nw), at most 9999\nci-policy: 1 error\n")


def test_a_report_without_a_configuration_counts_runner_hours_only(store, tmp_path, capsys):
    _, out, _ = run_cli(["report", "--store", str(store), *WINDOW[:-1], str(tmp_path), "--format", "json"],
                        capsys)
    doc = json.loads(out)
    assert {(s["gpu_hours"], s["cost"]) for s in doc["stages"]} == {(None, None)}
    assert doc["notes"] == ["GPU-hours and cost: no runner cost given; runner-hours only"]
    assert (doc["quarantine"], doc["release_after"]) == (None, 14)


def test_a_stage_the_configuration_does_not_plan_has_no_gpu_hours(store, tmp_path, capsys):
    config = tmp_path / "other.yml"
    config.write_text("version: 1\ndiscovery: {roots: [tests]}\nstages:\n"
                      "  - {name: gpu-a, backend: cuda, runs_on: [h200]}\n  - {name: lint, backend: cpu}\n",
                      encoding="utf-8")
    _, out, _ = run_cli(["report", "--store", str(store), *WINDOW, "--config", str(config), "--format", "json"],
                        capsys)
    doc = json.loads(out)
    # gpu-a's runner holds the default 1 GPU without a price; gpu-b and gpu-c are not configured.
    assert [(s["stage"], s["gpu_hours"], s["cost"]) for s in doc["stages"]] == [
        ("gpu-a", 22.802, None), ("gpu-b", None, None), ("gpu-c", None, None)]
    assert doc["notes"] == ["GPU-hours and cost: no runner cost given for gpu-b, gpu-c",
                                "cost: no cost_per_hour given for gpu-a"]


def test_a_configuration_that_does_not_parse_is_its_located_error(store, tmp_path, capsys):
    config = tmp_path / "bad.yml"
    config.write_text("version: 1\ndiscovery: {roots: [tests]}\nstages:\n"
                      "  - {name: gpu-a, backend: cuda, runs_on: [h200]}\n"
                      "accelerators:\n  - {backend: cuda, gpus: 0}\n", encoding="utf-8")
    rc, out, err = run_cli(["report", "--store", str(store), *WINDOW, "--config", str(config)], capsys)
    assert (rc, out) == (1, "")
    assert err == (f"{config}:6:27: CP105 config-invalid-value: accelerators[0].gpus: must be at least 1, got 0\n"
                   "ci-policy: 1 error\n")


def test_the_gantt_chart_chains_each_bar_after_the_previous_one(store, capsys):
    _, out, _ = run_cli(["report", "--store", str(store), *WINDOW, "--format", "markdown"], capsys)
    chart = out[out.index("```mermaid\ngantt"):]
    chart = chart[:chart.index("```\n", 4)]
    assert chart.splitlines()[1:] == [
        "gantt", "    title gpu-a run 7041 (seconds)", "    dateFormat X", "    axisFormat %s",
        "    section shard 0",
        "    test_train.py :b0, 0, 588s",
        "    test_ckpt.py :b1, after b0, 505s",
        "    section shard 1",
        "    test_rollout.py :b2, 0, 910s"]


def test_a_store_from_before_the_test_history_is_cp701(tmp_path, capsys):
    path = tmp_path / "old.sqlite"
    with closing(SQLiteStore(path)) as old:
        old.migrate(target=2)
    rc, out, err = run_cli(["report", "--store", str(path)], capsys)
    assert (rc, out) == (1, "")
    assert err == (f"SQLite metric history {path}: CP701 history-schema-old: the store holds schema version 2, "
                   "older than the test history (version 3); a read never migrates a store\n"
                   "    hint: migrate it once with a writer: `ci-policy history import --store URL` (no file "
                   "needed), or the next nightly `ci-policy run` that records into it\n"
                   "ci-policy: 1 error\n")
    with open_store(str(path), default_path=tmp_path / "unused.db", read_only=True) as store:
        assert store.schema_versions() == [1, 2]
    assert run_cli(["history", "import", "--store", str(path)], capsys)[0] == 0
    assert run_cli(["report", "--store", str(path), "--today", "2026-11-29"], capsys)[0] == 0


@pytest.mark.parametrize("since", ["30", "3x", "0d", "-1w", "10000d", "1.5w"])
def test_a_bad_since_is_cp702(store, since, capsys):
    rc, out, err = run_cli(["report", "--store", str(store), f"--since={since}"], capsys)
    assert (rc, out) == (1, "")
    assert err == (f"--since: CP702 since-invalid: '{since}' is not a time span: write a number of days or weeks, "
                   "e.g. 30d or 4w\n    hint: a report reads the attempts started in the last N days (Nd) or weeks "
                   "(Nw), at most 9999\nci-policy: 1 error\n")


def test_a_store_that_does_not_exist_is_not_created(tmp_path, capsys):
    path = tmp_path / "none.sqlite"
    rc, out, err = run_cli(["report", "--store", str(path)], capsys)
    assert (rc, out) == (1, "")
    assert err.startswith(f"ci-policy report: error: SQLite metric history {path}: does not exist")
    assert not path.exists()
