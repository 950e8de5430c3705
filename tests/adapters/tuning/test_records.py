"""JSONL timing records (`ci_policy.adapters.tuning.records`) -> FileEvidence rows."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_policy.adapters.runner.timings import TimingsWriter
from ci_policy.adapters.tuning.evidence import STATUSES, FileEvidence
from ci_policy.adapters.tuning.records import read_records
from ci_policy.errors import Diagnostic, InputErrors
from ci_policy.model.registry import Registration
from ci_policy.plan.results import Attempt, Verdict
from ci_policy.read.codec import schema
from ci_policy.read.timings import Located, TimingRecord, line_of, read_timings

DATA = Path(__file__).resolve().parents[2] / "data" / "tuning"
H200 = "stage-c-4-gpu-h200"


def ev(file, status, elapsed, est, line, *, source, note="", run_id="123456789", stage=H200, shard=1,
       job_id="", job_name=""):
    return FileEvidence(run_id=run_id, job_id=job_id, job_name=job_name, stage=stage, shard=shard, file=file,
                        status=status, elapsed=elapsed, logged_est=est, source=source, line=line, note=note)


def record(**fields) -> dict:
    base = {"schema": 1, "file": "tests/e2e/test_a.py", "stage": H200, "shard": 1, "attempt": 1,
            "status": "pass", "elapsed": 10.0, "est_time": 30, "failure_kind": None, "retriable": None,
            "started_at": "2026-11-30T04:40:00Z", "commit": None, "run_id": "5", "run_attempt": "1"}
    base.update(fields)
    return base


def write_jsonl(path: Path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


# -- golden files ---------------------------------------------------------------------------------------

def test_golden_run_with_a_retry_a_timeout_and_a_rerun_job():
    source = str(DATA / "timings.jsonl")
    assert read_records(source, run_id="999", job_id="31337", job_name="ignored for stage (2)") == [
        ev("tests/e2e/test_fsdp_grpo.py", "passed", 612.412, 600.0, 1, source=source, job_id="31337",
           job_name="ignored for stage (2)"),
        # attempt 1 failed (infra), attempt 2 passed: only the passing attempt's time counts
        ev("tests/e2e/test_megatron_sft.py", "passed", 870.004, 900.0, 3, source=source, job_id="31337",
           job_name="ignored for stage (2)", note="retried: 2 attempts"),
        # timeout then fail: timeout wins, cited and timed by the timed-out attempt
        ev("tests/e2e/test_long_rollout.py", "timeout", 1800.31, 1200.0, 4, source=source, job_id="31337",
           job_name="ignored for stage (2)", note="retried: 2 attempts"),
        ev("tests/e2e/test_eval.py", "failed", 41.0, 500.5, 6, source=source, job_id="31337",
           job_name="ignored for stage (2)"),
        # the re-run of the job (run_attempt 2) is a row of its own
        ev("tests/e2e/test_eval.py", "passed", 433.25, 500.5, 7, source=source, job_id="31337",
           job_name="ignored for stage (2)", note="run attempt 2"),
    ]


def test_golden_local_runs_without_run_ids_take_the_given_one_and_stay_apart():
    source = str(DATA / "timings_local.jsonl")  # CRLF line ends, two runs appended to one file
    run1, run2 = "run 1 of 2 without distinct run ids in this file", "run 2 of 2 without distinct run ids in this file"
    expected = [
        ev("tests/fast/test_config.py", "passed", 28.118, 30.5, 1, source=source, note=run1),
        ev("tests/fast/test_partition.py", "failed", 3.5, 100.0, 2, source=source, note=run1),
        ev("tests/fast/test_config.py", "passed", 27.9, 30.5, 3, source=source, note=run2),
        ev("tests/fast/test_partition.py", "passed", 96.0, 100.0, 4, source=source, note=run2),
    ]
    assert read_records(source, run_id="777") == [
        FileEvidence(**{**e.__dict__, "run_id": "777", "stage": "stage-a-cpu", "shard": 0}) for e in expected]
    assert [r.run_id for r in read_records(source)] == ["", "", "", ""]


def test_golden_malformed_lines_are_all_reported_with_file_line_and_field():
    source = str(DATA / "timings_bad.jsonl")
    with pytest.raises(InputErrors) as info:
        read_records(source)
    assert [(e.path, e.line, e.message) for e in info.value.errors] == [
        (source, 2, "not valid JSON: Expecting property name enclosed in double quotes (column 80)"),
        (source, 3, "a timing record must be a JSON object, got array [1, 2]"),
        (source, 4, "field 'schema': unsupported timing record schema 2 (this ci_policy reads schema 1)"),
        (source, 5, "field 'schema': missing"),
        (source, 6, "field 'elapsed': expected a number in [0, 604800], got string \"612.4\""),
        (source, 6, "field 'status': expected one of pass, fail, timeout, got string \"passed\""),
        (source, 7, "field 'attempt': expected an integer >= 1, got number 0"),
        (source, 7, "field 'shard': expected an integer >= 0 or null, got boolean true"),
        (source, 8, "field 'elapsed': expected a number in [0, 604800], got number NaN"),
        (source, 9, "field 'status': missing"),
        (source, 10, "field 'elapsed': given twice"),
        (source, 11, "not valid UTF-8 (byte 0xff at column 39)"),
        (source, 14, "field 'run_id': expected a string or null, got number 123456789"),
    ]
    assert str(info.value.errors[1]) == (
        f"{source}:3: a timing record must be a JSON object, got array [1, 2] (hint: each line of a "
        "timing-records file is one JSON object written by `ci-policy run`)")
    assert all(isinstance(e, Diagnostic) for e in info.value.errors)


# -- the writer's own output ------------------------------------------------------------------------------

def test_records_written_by_the_runner_read_back(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("GITHUB_RUN_ID", "4242")
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "1")
    monkeypatch.setenv("GITHUB_SHA", "abc123")
    path = tmp_path / "ci-policy-timings.jsonl"
    writer = TimingsWriter(path, "gpu", 0)
    a = Registration(file="tests/gpu/test_a.py", line=3, backend="cuda", suite="gpu", est_time=30, labels=("x",))
    b = Registration(file="tests/gpu/test_b.py", line=3, backend="cuda", suite="gpu", est_time=7.5, labels=("x",))
    flaky = Verdict("flaky", True, "output matches retriable pattern 'x'")
    writer.write(a, Attempt(1, "timeout", 61.23456, "2026-11-30T04:40:00Z", None, Verdict("timeout", True, "t")))
    writer.write(a, Attempt(2, "pass", 24.5, "2026-11-30T04:41:01Z", 0))
    writer.write(b, Attempt(1, "fail", 3.0, "2026-11-30T04:41:26Z", 1, flaky))
    writer.close()
    source = str(path)
    assert read_records(path) == [
        ev("tests/gpu/test_a.py", "passed", 24.5, 30.0, 2, source=source, run_id="4242", stage="gpu", shard=0,
           note="retried: 2 attempts"),
        ev("tests/gpu/test_b.py", "failed", 3.0, 7.5, 3, source=source, run_id="4242", stage="gpu", shard=0),
    ]


# -- details ------------------------------------------------------------------------------------------------

def test_a_records_own_run_id_wins_over_the_given_one(tmp_path: Path):
    path = write_jsonl(tmp_path / "t.jsonl", [record(run_id="1"), record(run_id=None, file="tests/e2e/test_b.py")])
    assert [(r.run_id, r.file) for r in read_records(path, run_id="2")] == [
        ("1", "tests/e2e/test_a.py"), ("2", "tests/e2e/test_b.py")]


def test_stage_and_shard_from_the_job_name_when_a_record_has_none(tmp_path: Path):
    path = write_jsonl(tmp_path / "t.jsonl", [record(stage=None, shard=None), record(file="tests/e2e/b.py")])
    rows = read_records(path, job_name="stage-b-1-gpu (3)")
    assert [(r.stage, r.shard) for r in rows] == [("stage-b-1-gpu", 3), (H200, 1)]
    assert [(r.stage, r.shard) for r in read_records(path)] == [(None, None), (H200, 1)]


def test_shards_and_stages_are_separate_rows(tmp_path: Path):
    path = write_jsonl(tmp_path / "t.jsonl", [record(shard=0), record(shard=1, status="fail"),
                                               record(stage="other", status="timeout")])
    assert [(r.stage, r.shard, r.status) for r in read_records(path)] == [
        (H200, 0, "passed"), (H200, 1, "failed"), ("other", 1, "timeout")]


def test_several_passing_attempts_count_the_last(tmp_path: Path):
    path = write_jsonl(tmp_path / "t.jsonl", [record(attempt=1, elapsed=5), record(attempt=2, elapsed=6),
                                               record(attempt=3, status="fail", elapsed=7)])
    [row] = read_records(path)
    assert (row.status, row.elapsed, row.line, row.note) == ("passed", 6.0, 2, "retried: 3 attempts")


def test_est_time_null_and_unknown_extra_fields_are_accepted(tmp_path: Path):
    path = write_jsonl(tmp_path / "t.jsonl", [record(est_time=None, gpu="h200")])
    assert read_records(path)[0].logged_est is None


def test_empty_and_blank_files_give_no_rows(tmp_path: Path):
    (tmp_path / "e.jsonl").write_text("")
    (tmp_path / "b.jsonl").write_text("\n  \n\r\n")
    assert read_records(tmp_path / "e.jsonl") == [] and read_records(tmp_path / "b.jsonl") == []


@pytest.mark.parametrize("line, message", [
    ("{", "not valid JSON: Expecting property name enclosed in double quotes (column 2)"),
    ("null", "a timing record must be a JSON object, got null null"),
    ('"x"', 'a timing record must be a JSON object, got string "x"'),
    ("[" * 100000, "not valid JSON: nested too deeply"),
    # valid JSON, but a file name (or stage, run id, ...) no report or CSV could write
    ('{"\\ud800": 1, ' + json.dumps(record())[1:],
     "not valid JSON for a record: a string holds a lone surrogate escape (\\ud800 to \\udfff)"),
    ("[" * 900 + '"\\ud800"' + "]" * 900,  # as deep as json.loads goes: the check must not overflow
     "not valid JSON for a record: a string holds a lone surrogate escape (\\ud800 to \\udfff)"),
    (json.dumps(record(schema=True)), "field 'schema': unsupported timing record schema true "
                                      "(this ci_policy reads schema 1)"),
    (json.dumps(record(schema="1")), "field 'schema': unsupported timing record schema \"1\" "
                                     "(this ci_policy reads schema 1)"),
    (json.dumps(record(file="")), "field 'file': expected a non-empty string, got string \"\""),
    (json.dumps(record(elapsed=-1)), "field 'elapsed': expected a number in [0, 604800], got number -1"),
    (json.dumps(record(elapsed=float("inf"))),
     "field 'elapsed': expected a number in [0, 604800], got number Infinity"),
    # Forged: finite, but longer than any timeout (it would become an estimate).
    (json.dumps(record(elapsed=1e308)), "field 'elapsed': expected a number in [0, 604800], got number 1e+308"),
    (json.dumps(record(elapsed=604801)), "field 'elapsed': expected a number in [0, 604800], got number 604801"),
    (json.dumps(record(est_time="30")),
     "field 'est_time': expected a number in [0, 604800] or null, got string \"30\""),
    (json.dumps(record(retriable="yes")), "field 'retriable': expected a boolean or null, got string \"yes\""),
    (json.dumps(record(run_attempt=2)), "field 'run_attempt': expected a string or null, got number 2"),
    (json.dumps(record(attempt=1.0)), "field 'attempt': expected an integer >= 1, got number 1.0"),
    (json.dumps(record(file=["a" * 60])), "field 'file': expected a non-empty string, got array "
                                          "[\"" + "a" * 35 + "..."),
])
def test_each_malformed_line_is_a_located_error(tmp_path: Path, line, message):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(record()) + "\n" + line + "\n")
    with pytest.raises(InputErrors) as info:
        read_records(path)
    assert [(e.path, e.line, e.message) for e in info.value.errors] == [(str(path), 2, message)]


def test_an_integer_too_long_to_convert_is_an_error_not_a_crash(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    path.write_text("1" * 5000 + "\n")
    with pytest.raises(InputErrors) as info:  # Python >= 3.11 refuses the conversion; 3.10 reads a number
        read_records(path)
    [error] = info.value.errors
    assert error.line == 1
    assert error.message.startswith(("not valid JSON: Exceeds the limit", "a timing record must be a JSON object"))


def test_every_missing_field_is_reported(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"schema": 1}\n')
    with pytest.raises(InputErrors) as info:
        read_records(path)
    assert [e.message for e in info.value.errors] == [
        f"field {name!r}: missing" for name in sorted(["file", "stage", "shard", "attempt", "status", "elapsed"])]


def test_an_unreadable_file_is_a_policy_error(tmp_path: Path):
    with pytest.raises(InputErrors) as info:
        read_records(tmp_path / "missing.jsonl")
    assert [(e.path, e.line, e.message) for e in info.value.errors] == [
        (str(tmp_path / "missing.jsonl"), None, "cannot read timing records: No such file or directory")]


# -- properties ---------------------------------------------------------------------------------------------

JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=3),
                           max_leaves=8)
NEAR_RECORDS = st.builds(
    lambda changes: json.dumps({**record(), **changes}),
    st.dictionaries(st.sampled_from(sorted(record())), JSON_VALUES, max_size=3))
LINES = st.lists(st.one_of(st.binary(max_size=40), st.text(max_size=40).map(lambda t: t.encode("utf-8", "replace")),
                           NEAR_RECORDS.map(str.encode), JSON_VALUES.map(lambda v: json.dumps(v).encode())),
                 max_size=6)


@settings(max_examples=300, deadline=None)
@given(LINES)
def test_arbitrary_lines_raise_only_policy_errors(lines):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.jsonl")
        with open(path, "wb") as fh:
            fh.write(b"\n".join(lines))
        try:
            rows = read_records(path)
        except InputErrors as exc:
            assert exc.errors and all(isinstance(e, Diagnostic) and e.path == path and e.line for e in exc.errors)
        else:
            assert all(r.status in ("passed", "timeout", "failed") and r.source == path for r in rows)


ATTEMPTS = st.lists(st.tuples(st.sampled_from(["pass", "fail", "timeout"]),
                              st.floats(min_value=0, max_value=1e5, allow_nan=False)), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(ATTEMPTS)
def test_one_row_per_run_with_the_strongest_status(attempts):
    with tempfile.TemporaryDirectory() as tmp:
        path = write_jsonl(Path(tmp, "t.jsonl"), [record(attempt=i, status=s, elapsed=e)
                                                  for i, (s, e) in enumerate(attempts, start=1)])
        [row] = read_records(path)
    statuses = [s for s, _ in attempts]
    expected = "passed" if "pass" in statuses else "timeout" if "timeout" in statuses else "failed"
    wanted = {"passed": "pass", "timeout": "timeout", "failed": statuses[-1]}[expected]
    decided = max(i for i, s in enumerate(statuses) if s == wanted)
    assert row.status == expected and row.status in STATUSES
    assert (row.line, row.elapsed) == (decided + 1, attempts[decided][1])


# -- one declaration, one reader -----------------------------------------------------------------------

def test_a_record_written_through_the_codec_reads_back_equal_and_as_the_runner_wrote_it(tmp_path: Path):
    rec = TimingRecord(schema=1, file="tests/a.py", stage="gpu", shard=0, attempt=2, status="fail", elapsed=1.5,
                       est_time=30, failure_kind="flaky", retriable=True, started_at="2026-11-30T04:40:00Z",
                       commit="abc", run_id="7", run_attempt="1")
    assert line_of(rec) == (b'{"schema": 1, "file": "tests/a.py", "stage": "gpu", "shard": 0, "attempt": 2, '
                            b'"status": "fail", "elapsed": 1.5, "est_time": 30, "failure_kind": "flaky", '
                            b'"retriable": true, "started_at": "2026-11-30T04:40:00Z", "commit": "abc", "run_id": '
                            b'"7", "run_attempt": "1"}\n')
    path = tmp_path / "t.jsonl"
    path.write_bytes(line_of(rec))
    assert read_timings(path) == [Located(1, rec)]
    assert schema(TimingRecord)["required"] == ["schema", "file", "stage", "shard", "attempt", "status", "elapsed"]


def test_a_shard_or_attempt_beyond_any_documents_whole_number_names_the_bound(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(record(shard=10**12, attempt=10**10)) + "\n")
    with pytest.raises(InputErrors) as info:
        read_records(path)
    assert [e.message for e in info.value.errors] == [
        "field 'attempt': expected an integer in [1, 1000000000], got number 10000000000",
        "field 'shard': expected an integer in [0, 1000000000] or null, got number 1000000000000"]
