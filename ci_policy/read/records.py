"""Metric records, as the recorders of a test run wrote them (the runner and `gate` side).

- In: a directory of per-process files `metrics-<pid>-<hex>.jsonl` written by
  `ci_policy.sdk.MetricRecorder` inside the test process (untrusted: the code under test
  controls them), or one merged record file.
- Out: series `{metric key: [(step, value), ...]}` and problems `{metric key: [message,
  ...]}` (key `""`: a problem of the whole record, e.g. a file that is not a record).
  `merge_record_dir(dir)`: one attempt's per-process files concatenated per key and sorted
  by step (stable), with every problem found; `write_record` / `load_record`: the merged
  record as one strict-JSON document (schema `RECORD_SCHEMA`, problems under `"problems"`).
- A problem is a value, never an exception: a per-process file that is not a regular file
  (a FIFO, which would block a read, a symbolic link, a directory), a file that is not JSON, a line that is not an
  object (`[1]`, `"x"`), nesting too deep, an integer too long to convert, NaN/Infinity
  as JSON constants (non-finite values are the strings "NaN", "Infinity", "-Infinity"),
  an unknown schema, a point that is not `[step, number]`: each is located (file name,
  line) and the rest of the directory is still read. An error marker the recorder wrote
  for a bad logged value (`"errors": [[step, reason]]`) is a problem naming the key and
  the step. The gate turns a key's problems into an ERROR verdict for that key (and a
  whole-record problem into ERROR for every gate of the file).
- Duplicate steps are kept as recorded (parent and child processes may log the same
  step); the one rule that judges them lives in `gates.evaluate.select`.
- `read_record_file` / `merge_records` / `read_record`: the series alone, raising `ValueError` with the first
  problem (for callers that accept no partial record).
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

from ci_policy.read.shapes import json_type
from ci_policy.sdk.metrics import RECORD_SCHEMA, encode_value

Series = dict[str, list[tuple[int, float]]]
Problems = dict[str, list[str]]
WHOLE_RECORD = ""  # the problems key of a problem that is not one metric's
MAX_RECORD_BYTES = 64 * 1024 * 1024  # a process file or a merged record larger than this is not read
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def decode_value(value: object) -> float:
    """The inverse of `sdk.metrics.encode_value`."""
    if isinstance(value, str) and value in _NON_FINITE:
        return _NON_FINITE[value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not a metric value: {_shown(value)}")
    try:
        return float(value)
    except OverflowError:  # an integer beyond a float
        raise ValueError(f"not a metric value: {_shown(value)} is out of range") from None


def _shown(value: object) -> str:
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _step(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"a step must be an integer, got {_shown(value)}")
    return value


def _strict_constant(name: str) -> NoReturn:
    raise ValueError(f"non-standard JSON constant {name}")


def _json(text: str) -> object:
    """Strict JSON, every failure a `ValueError` (never a RecursionError escaping)."""
    try:
        return json.loads(text, parse_constant=_strict_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as exc:
        if "digits" in str(exc):  # Python's own wording names an interpreter setting
            raise ValueError("an integer with too many digits") from None
        raise


def _read_text(path: Path, *, follow: bool = True) -> str:
    """A record file's text. Only a regular file is read: a FIFO (opened without blocking)
    would block a plain read forever; without `follow`, a symbolic link is refused too."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise ValueError("a symbolic link, not a record file") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):  # as a plain open() says it, naming the path
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise ValueError("not a regular file")
    except BaseException:
        os.close(fd)
        raise
    with open(fd, "rb") as fh:
        data = fh.read(MAX_RECORD_BYTES + 1)
    if len(data) > MAX_RECORD_BYTES:
        raise ValueError(f"larger than {MAX_RECORD_BYTES} bytes")
    return data.decode("utf-8")


def _add(problems: Problems, key: str, message: str) -> None:
    problems.setdefault(key, []).append(message)


def read_process_file(path: Path) -> tuple[Series, Problems]:
    """One recorder's file: its series and every problem, each `NAME:LINE: message`."""
    series: Series = {}
    problems: Problems = {}
    name = Path(path).name
    try:
        # The code under test writes the directory: a FIFO or a link there is not a record.
        text = _read_text(path, follow=False)
    except UnicodeDecodeError as exc:
        _add(problems, WHOLE_RECORD, f"{name}: not valid UTF-8 (byte {exc.start + 1})")
        return series, problems
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        _add(problems, WHOLE_RECORD, f"{name}: unreadable: {reason}")
        return series, problems
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{name}:{n}"
        try:
            obj = _json(line)
        except ValueError as exc:
            _add(problems, WHOLE_RECORD, f"{where}: not valid JSON: {exc}")
            continue
        if not isinstance(obj, dict):
            _add(problems, WHOLE_RECORD, f"{where}: expected a JSON object, got {json_type(obj)} {_shown(obj)}")
            continue
        if n == 1:
            if obj.get("schema") != RECORD_SCHEMA or isinstance(obj.get("schema"), bool):
                _add(problems, WHOLE_RECORD, f"{where}: unsupported record schema {_shown(obj.get('schema'))}")
                return {}, problems
            continue
        key = obj.get("key")
        if not isinstance(key, str) or not key:
            _add(problems, WHOLE_RECORD, f"{where}: 'key' must be a non-empty string, got {_shown(key)}")
            continue
        _read_points(obj.get("points", []), key, where, series, problems)
        _read_markers(obj.get("errors", []), key, where, problems)
    return series, problems


def _read_points(points: object, key: str, where: str, series: Series, problems: Problems) -> None:
    if not isinstance(points, list):
        _add(problems, key, f"{where}: {key}: 'points' must be an array, got {_shown(points)}")
        return
    for point in points:
        try:
            if not (isinstance(point, list) and len(point) == 2):
                raise ValueError(f"a point must be [step, value], got {_shown(point)}")
            step, value = _step(point[0]), decode_value(point[1])
        except ValueError as exc:
            _add(problems, key, f"{where}: {key}: {exc}")
            continue
        series.setdefault(key, []).append((step, value))


def _read_markers(markers: object, key: str, where: str, problems: Problems) -> None:
    """The recorder's error markers: `[step or null, reason]` for a value it could not record."""
    if not isinstance(markers, list):
        _add(problems, key, f"{where}: {key}: 'errors' must be an array, got {_shown(markers)}")
        return
    for marker in markers:
        if (isinstance(marker, list) and len(marker) == 2 and isinstance(marker[1], str)
                and (marker[0] is None or (isinstance(marker[0], int) and not isinstance(marker[0], bool)))):
            at = "" if marker[0] is None else f" at step {marker[0]}"
            _add(problems, key, f"{where}: {key}{at} was not recorded: {marker[1][:200]}")
        else:
            _add(problems, key, f"{where}: {key}: an error marker must be [step, reason], got {_shown(marker)}")


def read_record_file(path: Path) -> Series:
    """`read_process_file`'s series; the first problem raised as `ValueError`."""
    series, problems = read_process_file(path)
    _raise_first(problems)
    return series


def merge_record_dir(directory: Path) -> tuple[Series, Problems]:
    """Merge one attempt's per-process files: series concatenated, sorted by step (stable);
    the problems of every file."""
    merged: Series = {}
    problems: Problems = {}
    for path in sorted(Path(directory).glob("metrics-*.jsonl")):
        series, found = read_process_file(path)
        for key, points in series.items():
            merged.setdefault(key, []).extend(points)
        for key, messages in found.items():
            problems.setdefault(key, []).extend(messages)
    return ({key: sorted(points, key=lambda p: p[0]) for key, points in sorted(merged.items())},
            dict(sorted(problems.items())))


def merge_records(directory: Path) -> Series:
    """`merge_record_dir`'s series; the first problem raised as `ValueError`."""
    series, problems = merge_record_dir(directory)
    _raise_first(problems)
    return series


def _raise_first(problems: Problems) -> None:
    for messages in problems.values():
        raise ValueError(messages[0])


def write_record(series: Mapping[str, Sequence[tuple[int, float]]], path: Path,
                 problems: Mapping[str, Sequence[str]] | None = None) -> None:
    """A merged record: one strict-JSON document."""
    doc: dict[str, object] = {"schema": RECORD_SCHEMA,
                              "series": {k: [[s, encode_value(v)] for s, v in pts] for k, pts in series.items()}}
    if problems:
        doc["problems"] = {k: list(v) for k, v in problems.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, allow_nan=False, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def load_record(path: Path) -> tuple[Series, Problems]:
    """A merged record's series and problems; a file that is not one raises `ValueError`
    (the whole record is unusable), as does an unreadable one (`OSError`)."""
    try:
        doc = _json(_read_text(Path(path)))
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not valid UTF-8") from None
    if (not isinstance(doc, dict) or doc.get("schema") != RECORD_SCHEMA or isinstance(doc.get("schema"), bool)
            or not isinstance(doc.get("series"), dict) or not isinstance(doc.get("problems", {}), dict)):
        raise ValueError(f"{path}: not a ci-policy metric record (schema {RECORD_SCHEMA})")
    series: Series = {}
    problems: Problems = {}
    for key, messages in doc.get("problems", {}).items():
        if not (isinstance(messages, list) and all(isinstance(m, str) for m in messages)):
            raise ValueError(f"{path}: problems of {key!r} must be a list of strings")
        problems[key] = list(messages)
    for key, points in doc["series"].items():
        _read_points(points, key, Path(path).name, series, problems)
    return series, problems


def read_record(path: Path) -> Series:
    """`load_record`'s series; the first problem raised as `ValueError`."""
    series, problems = load_record(path)
    _raise_first(problems)
    return series
