"""Evidence paths (`ci_policy.adapters.tuning.sources`): files and directories -> FileEvidence rows.

Directories are walked in sorted order without following links; a run archive's job name
and run id come from its layout; every problem is reported, and then no row is returned.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from tuning_cases import DATA, SGLANG_JOB, sglang_retry_timeout_rows

from ci_policy.adapters.tuning.sources import collect, job_name_of, run_id_of
from ci_policy.errors import InputErrors


def test_job_name_and_run_id_from_the_archive_layout(tmp_path: Path):
    assert job_name_of("logs/12_stage-c-4-gpu-h200 (1).txt") == "stage-c-4-gpu-h200 (1)"
    assert job_name_of("job.log") == job_name_of("3_x.log") == job_name_of("x_y.txt") == ""
    assert run_id_of(str(tmp_path / "run-77" / "a" / "run-88" / "0_j.txt")) == "88"
    assert run_id_of(str(tmp_path / "run-77" / "0_j.txt")) == "77"
    assert run_id_of(str(tmp_path / "running" / "run-x" / "0_j.txt")) is None


def test_collect_walks_a_run_archive(tmp_path: Path):
    run = tmp_path / "evidence" / "run-19"
    (run / SGLANG_JOB).mkdir(parents=True)
    shutil.copy(DATA / "sglang_retry_timeout.txt", run / f"3_{SGLANG_JOB}.txt")
    # the same job's log cut into steps: not read a second time
    shutil.copy(DATA / "sglang_retry_timeout.txt", run / SGLANG_JOB / "4_Run tests.txt")
    (run / SGLANG_JOB / "system.txt").write_text("junk\n")
    (run / "artifacts" / "timings-c-1").mkdir(parents=True)
    shutil.copy(DATA / "timings.jsonl", run / "artifacts" / "timings-c-1" / "ci-policy-timings.jsonl")
    shutil.copy(DATA / "sglang_no_summary.txt", run / "saved.log")

    rows = collect([tmp_path / "evidence"])

    log_source = os.path.join(str(tmp_path / "evidence"), "run-19", f"3_{SGLANG_JOB}.txt")
    records_source = os.path.join(str(tmp_path / "evidence"), "run-19", "artifacts", "timings-c-1",
                                  "ci-policy-timings.jsonl")
    saved = os.path.join(str(tmp_path / "evidence"), "run-19", "saved.log")
    # sorted walk: "3_..." < "artifacts" < "saved.log" < the (skipped) step directory
    assert [r.source for r in rows] == [log_source] * 4 + [records_source] * 5 + [saved] * 2
    assert rows[:4] == sglang_retry_timeout_rows(log_source, run_id="19")
    assert {r.run_id for r in rows[4:9]} == {"123456789"}  # the records' own run id wins
    assert [(r.run_id, r.job_name, r.stage, r.status) for r in rows[9:]] == [("19", "", None, "unknown")] * 2


def test_collect_reads_given_files_in_order(tmp_path: Path):
    log = tmp_path / "0_stage-a-cpu.txt"
    shutil.copy(DATA / "ci_policy_crashed.txt", log)
    rows = collect([str(DATA / "timings_local.jsonl"), str(log)])
    assert [(r.file, r.status, r.job_name) for r in rows] == [
        ("tests/fast/test_config.py", "passed", ""), ("tests/fast/test_partition.py", "failed", ""),
        ("tests/fast/test_config.py", "passed", ""), ("tests/fast/test_partition.py", "passed", ""),
        ("tests/fast/test_config.py", "unknown", "stage-a-cpu"),
        ("tests/fast/test_partition.py", "not_run", "stage-a-cpu")]


def test_collect_reports_every_problem_and_reads_no_rows(tmp_path: Path):
    d = tmp_path / "ev"
    d.mkdir()
    (d / "notes.md").write_text("# notes\n")
    (d / "logs.zip").write_bytes(b"PK\x03\x04")
    shutil.copy(DATA / "timings_bad.jsonl", d / "t.jsonl")
    (d / "real").mkdir()
    (d / "real" / "0_job.txt").write_text("")
    os.symlink(d / "real", d / "linked-dir")
    os.symlink(d / "real" / "0_job.txt", d / "linked.txt")
    with pytest.raises(InputErrors) as info:
        collect([d, tmp_path / "missing"])
    got = [(os.path.relpath(e.path, tmp_path), e.line, e.message) for e in info.value.errors]
    link = "a symbolic link; evidence directories are walked without following links"
    unknown = "unknown evidence file type (expected *.jsonl timing records, or *.txt/*.log job logs)"
    assert got[:4] == [
        ("ev/linked-dir", None, link), ("ev/linked.txt", None, link),
        ("ev/logs.zip", None, unknown), ("ev/notes.md", None, unknown)]
    assert [g[:2] for g in got[4:-1]] == [("ev/t.jsonl", n) for n in (2, 3, 4, 5, 6, 6, 7, 7, 8, 9, 10, 11, 14)]
    assert got[-1] == ("missing", None, "no such evidence file or directory")


def test_collect_follows_a_path_given_explicitly(tmp_path: Path):
    (tmp_path / "real").mkdir()
    shutil.copy(DATA / "ci_policy_cancelled.txt", tmp_path / "real" / "1_gpu (2).txt")
    os.symlink(tmp_path / "real", tmp_path / "latest")
    rows = collect([tmp_path / "latest"])
    assert [(r.status, r.job_name, r.source) for r in rows] == [
        ("cancelled", "gpu (2)", os.path.join(str(tmp_path / "latest"), "1_gpu (2).txt"))] * 3


def test_collect_of_nothing():
    assert collect([]) == []
