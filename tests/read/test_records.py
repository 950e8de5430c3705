"""Reading what the recorders wrote: per-process files merged into one record, and the
merged record written and read back as strict JSON (ci_policy/read/records.py)."""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ci_policy.read.codec import decode, schema
from ci_policy.read.records import (
    MergedRecord,
    load_record,
    merge_record_dir,
    merge_records,
    read_record,
    write_record,
)
from ci_policy.sdk.metrics import MetricRecorder

V1_TEXT = "rollout/tito_session_mismatch_rate/v1/assistant_text"
V2_TEXT = "rollout/tito_session_mismatch_rate/v2/assistant_text"


def strict_constant(name):
    raise AssertionError(f"non-standard JSON constant {name} in a record")


def shown(series) -> dict:
    """Series with each value as its repr, so NaN compares equal to NaN."""
    return {key: [(step, repr(value)) for step, value in points] for key, points in series.items()}


# -- merge_records / write_record / read_record ---------------------------------------------------

def write_process_file(path: Path, series: dict, schema=1) -> None:
    lines = [json.dumps({"schema": schema, "pid": 1})]
    lines += [json.dumps({"key": k, "points": pts}) for k, pts in series.items()]
    path.write_text("\n".join(lines) + "\n")


def test_merge_concatenates_sorts_by_step_and_keeps_duplicates_in_file_order(tmp_path):
    write_process_file(tmp_path / "metrics-1-aaaaaaaaaaaa.jsonl",
                       {"train/grad_norm": [[4, 4.0], [0, 0.0]], V2_TEXT: [[1, 0.5]]})
    write_process_file(tmp_path / "metrics-2-bbbbbbbbbbbb.jsonl",
                       {"train/grad_norm": [[2, 2.0], [4, 44.0]], V1_TEXT: [[1, "NaN"]]})
    # Neither a temporary file of a writer nor any other file is part of the record.
    write_process_file(tmp_path / ".tmp-x.jsonl", {"train/grad_norm": [[9, 9.0]]})
    write_process_file(tmp_path / "other.jsonl", {"train/grad_norm": [[9, 9.0]]})
    assert shown(merge_records(tmp_path)) == {
        V1_TEXT: [(1, "nan")],
        V2_TEXT: [(1, "0.5")],
        "train/grad_norm": [(0, "0.0"), (2, "2.0"), (4, "4.0"), (4, "44.0")],
    }


def test_merge_reads_only_regular_files_and_never_blocks(tmp_path):
    """The code under test writes the directory: a FIFO nobody writes would block a plain read
    forever, and a link could point anywhere. Each is a located problem; the rest is read."""
    write_process_file(tmp_path / "metrics-1-aaaaaaaaaaaa.jsonl", {"train/grad_norm": [[0, 1.0]]})
    os.mkfifo(tmp_path / "metrics-2-fifofifofifo.jsonl")
    (tmp_path / "elsewhere.jsonl").write_text('{"schema": 1, "pid": 3}\n')
    (tmp_path / "metrics-3-linklinklink.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    (tmp_path / "metrics-4-directoryxxx.jsonl").mkdir()
    merged: list = []
    reader = threading.Thread(target=lambda: merged.append(merge_record_dir(tmp_path)), daemon=True)
    reader.start()
    reader.join(30)
    assert merged, "merge_record_dir blocked"
    series, problems = merged[0]
    assert series == {"train/grad_norm": [(0, 1.0)]}
    assert problems == {"": ["metrics-2-fifofifofifo.jsonl: unreadable: not a regular file",
                             "metrics-3-linklinklink.jsonl: unreadable: a symbolic link, not a record file",
                             "metrics-4-directoryxxx.jsonl: unreadable: Is a directory"]}


def test_merge_of_an_empty_directory_is_empty(tmp_path):
    assert merge_records(tmp_path) == {}


def test_merge_refuses_non_standard_json_and_unknown_schemas(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "metrics-1-aaaaaaaaaaaa.jsonl").write_text(
        '{"schema": 1, "pid": 1}\n{"key": "train/grad_norm", "points": [[0, NaN]]}\n')
    with pytest.raises(ValueError, match="^metrics-1-aaaaaaaaaaaa.jsonl:2: not valid JSON: non-standard JSON "
                                         "constant NaN$"):
        merge_records(tmp_path / "a")
    (tmp_path / "b").mkdir()
    write_process_file(tmp_path / "b" / "metrics-1-aaaaaaaaaaaa.jsonl", {"train/grad_norm": [[0, 1.0]]}, schema=2)
    with pytest.raises(ValueError, match=r"^metrics-1-aaaaaaaaaaaa\.jsonl:1: unsupported record schema 2$"):
        merge_records(tmp_path / "b")
    (tmp_path / "c").mkdir()
    write_process_file(tmp_path / "c" / "metrics-1-aaaaaaaaaaaa.jsonl", {"train/grad_norm": [[0, True]]})
    with pytest.raises(ValueError, match="^metrics-1-aaaaaaaaaaaa.jsonl:2: train/grad_norm: not a metric value: "
                                         "true$"):
        merge_records(tmp_path / "c")


def test_write_and_read_record_round_trip_non_finite_values(tmp_path):
    series = {V1_TEXT: [(0, 0.0), (1, math.nan)], V2_TEXT: [(0, 0.25), (1, math.inf)],
              "train/grad_norm": [(0, -math.inf), (3, 1e-300), (7, -2.5)]}
    path = tmp_path / "deep" / "record.json"
    write_record(series, path)
    doc = json.loads(path.read_text(), parse_constant=strict_constant)
    assert doc == {"schema": 1, "series": {
        V1_TEXT: [[0, 0.0], [1, "NaN"]],
        V2_TEXT: [[0, 0.25], [1, "Infinity"]],
        "train/grad_norm": [[0, "-Infinity"], [3, 1e-300], [7, -2.5]],
    }}
    assert shown(read_record(path)) == shown(series)
    assert [p.name for p in path.parent.iterdir()] == ["record.json"]


@pytest.mark.parametrize("text", [
    '{"schema": 2, "series": {}}', '{"schema": 1}', '{"schema": 1, "series": []}', "[]",
])
def test_read_record_refuses_what_is_not_a_record(tmp_path, text):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        read_record(path)
    assert str(info.value) == f"{path}: not a ci-policy metric record (schema 1)"


def test_read_record_refuses_non_standard_constants(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"schema": 1, "series": {"train/grad_norm": [[0, Infinity]]}}')
    with pytest.raises(ValueError, match="^non-standard JSON constant Infinity$"):
        read_record(path)


# -- the record declared once: written, read back, equal --------------------------------------------

VALUES = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-10**6, 10**6).map(float)
KEYS = st.text("abcdefgh/_", min_size=1, max_size=12)
# A series without points is not written (the reader keeps a key only with a point).
SERIES = st.dictionaries(KEYS, st.lists(st.tuples(st.integers(0, 10**12), VALUES), min_size=1, max_size=5)
                         .map(lambda pts: sorted(pts, key=lambda p: p[0])), max_size=4)
PROBLEMS = st.dictionaries(st.just("") | KEYS, st.lists(st.text(max_size=20), min_size=1, max_size=3), max_size=3)


@settings(max_examples=60, deadline=None)
@given(SERIES, PROBLEMS)
def test_a_written_record_reads_back_equal(tmp_path_factory, series, problems):
    path = tmp_path_factory.mktemp("record") / "record.json"
    write_record(series, path, problems)
    read_series, read_problems = load_record(path)
    assert shown(read_series) == shown(series)
    assert read_problems == problems


@settings(max_examples=60, deadline=None)
@given(SERIES)
def test_what_a_recorder_writes_reads_back_equal(tmp_path_factory, series):
    directory = tmp_path_factory.mktemp("metrics")
    recorder = MetricRecorder(directory, capture=series)
    for key, points in series.items():
        for step, value in points:
            recorder.log({key: value}, step)
    merged, problems = merge_record_dir(directory)
    assert problems == {}
    assert shown(merged) == shown(series)


def test_the_merged_record_schema_accepts_what_is_written(tmp_path):
    path = tmp_path / "record.json"
    write_record({"k": [(0, math.nan), (1, 2.5)]}, path, {"": ["m.jsonl:1: x"]})
    doc = json.loads(path.read_text())
    assert list(Draft202012Validator(schema(MergedRecord)).iter_errors(doc)) == []
    assert decode(MergedRecord, doc) == MergedRecord(schema=1, series={"k": ((0, "NaN"), (1, 2.5))},
                                                     problems={"": ("m.jsonl:1: x",)})
