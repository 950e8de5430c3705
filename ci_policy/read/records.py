"""Metric records, as the recorders of a test run wrote them (the runner and `gate` side).

- In: a directory of per-process files `metrics-<pid>-<hex>.jsonl` written by
  `ci_policy.sdk.MetricRecorder` inside the test process (untrusted: the code under test
  controls them), or one merged record file.
- Out: series `{metric key: [(step, value), ...]}`; `merge_records(dir)`: one attempt's
  per-process files concatenated per key and sorted by step (stable); `write_record` /
  `read_record`: the merged record as one strict-JSON document (schema `RECORD_SCHEMA`).
- Refused (`ValueError`): NaN/Infinity as JSON constants (non-finite values are the
  strings "NaN", "Infinity", "-Infinity"), an unknown schema, a value that is not a number.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

from ci_policy.sdk.metrics import RECORD_SCHEMA, encode_value

Series = dict[str, list[tuple[int, float]]]


def decode_value(value: object) -> float:
    """The inverse of `sdk.metrics.encode_value`."""
    if isinstance(value, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not a metric value: {value!r}")
    return float(value)


def read_record_file(path: Path) -> Series:
    series: Series = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            obj = json.loads(line, parse_constant=_strict_constant)
            if n == 1 and obj.get("schema") != RECORD_SCHEMA:
                raise ValueError(f"{path}: unsupported record schema {obj.get('schema')!r}")
            if "key" in obj:
                series.setdefault(obj["key"], []).extend((int(s), decode_value(v)) for s, v in obj["points"])
    return series


def _strict_constant(name: str) -> NoReturn:
    raise ValueError(f"non-standard JSON constant {name}")


def merge_records(directory: Path) -> Series:
    """Merge one attempt's per-process files: series concatenated, sorted by step (stable)."""
    merged: Series = {}
    for path in sorted(Path(directory).glob("metrics-*.jsonl")):
        for key, points in read_record_file(path).items():
            merged.setdefault(key, []).extend(points)
    return {key: sorted(points, key=lambda p: p[0]) for key, points in sorted(merged.items())}


def write_record(series: Mapping[str, Sequence[tuple[int, float]]], path: Path) -> None:
    """A merged record: one strict-JSON document."""
    doc = {"schema": RECORD_SCHEMA,
           "series": {k: [[s, encode_value(v)] for s, v in pts] for k, pts in series.items()}}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, allow_nan=False, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_record(path: Path) -> Series:
    doc = json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=_strict_constant)
    if not isinstance(doc, dict) or doc.get("schema") != RECORD_SCHEMA or not isinstance(doc.get("series"), dict):
        raise ValueError(f"{path}: not a ci-policy metric record (schema {RECORD_SCHEMA})")
    return {k: [(int(s), decode_value(v)) for s, v in pts] for k, pts in doc["series"].items()}
