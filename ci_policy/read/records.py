"""Metric records, as the recorders of a test run wrote them (the runner and `gate` side).

- In: a directory of per-process files `metrics-<pid>-<hex>.jsonl` written by
  `ci_policy.sdk.MetricRecorder` inside the test process (untrusted: the code under test
  controls them), or one merged record file.
- Out: series `{metric key: [(step, value), ...]}` and problems `{metric key: [message,
  ...]}` (key `""`: a problem of the whole record, e.g. a file that is not a record).
  `merge_record_dir(dir)`: one attempt's per-process files concatenated per key and sorted
  by step (stable), with every problem found; `write_record` / `load_record`: the merged
  record as one strict-JSON document (schema `RECORD_SCHEMA`, problems under `"problems"`).
- The documents are declared once, through `read.codec`: `MergedRecord` (written by
  `encode`, its keys read by `decode_each`), and a process file's `ProcessHeader` and
  `SeriesLine` (the recorder in `sdk`, below this layer, writes them). Each point and
  error marker is read on its own, as a problem value, so that one bad point does not hide
  the next; keys a reader does not know are ignored (a newer recorder may add some).
- Refused: as a problem value, never an exception: a per-process file that is not a regular file
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
from typing import Any, Literal, NoReturn, cast

from ci_policy.read.codec import decode, decode_each, encode
from ci_policy.read.declare import DecodeError, KeyFault, document, spec
from ci_policy.read.shapes import json_type
from ci_policy.sdk.metrics import RECORD_SCHEMA, encode_value

Series = dict[str, list[tuple[int, float]]]
Problems = dict[str, list[str]]
WHOLE_RECORD = ""  # the problems key of a problem that is not one metric's
MAX_RECORD_BYTES = 64 * 1024 * 1024  # a process file or a merged record larger than this is not read
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


assert RECORD_SCHEMA == 1, "the record's dataclasses below declare schema 1"
# A point as written: a non-finite value as its name (strict JSON has no NaN).
Point = tuple[int, float | Literal["NaN", "Infinity", "-Infinity"]]


def _is_schema(value: object) -> bool:
    return value == RECORD_SCHEMA and not isinstance(value, bool)


def _array_problem(field: str) -> Any:
    return lambda value: None if isinstance(value, list) else f"'{field}' must be an array, got {_shown(value)}"


@document
class ProcessHeader:
    """The first line of a recorder's file."""

    schema: Literal[1] = spec(check=lambda v: None if _is_schema(v) else f"unsupported record schema {_shown(v)}")
    pid: int | None = spec(default=None, omit_none=True)  # not read: it names the writer only


@document
class SeriesLine:
    """Every other line: one metric's points and the recorder's error markers (`[step or null, reason]`)."""

    key: str = spec(check=lambda v: None if isinstance(v, str) and v
                    else f"'key' must be a non-empty string, got {_shown(v)}")
    points: tuple[Point, ...] = spec(default=(), check=_array_problem("points"))
    errors: tuple[tuple[int | None, str], ...] = spec(default=(), check=_array_problem("errors"))


@document
class MergedRecord:
    schema: Literal[1] = spec(check=lambda v: None if _is_schema(v) else "unsupported record schema")
    series: Mapping[str, tuple[Point, ...]] = spec(
        check=lambda v: None if isinstance(v, dict) else "expected an object of series")
    problems: Mapping[str, tuple[str, ...]] | None = spec(
        default=None, omit_none=True, check=lambda v: None if isinstance(v, dict) else "expected an object of problems")


def _known(errors: list[DecodeError]) -> list[DecodeError]:
    """The errors but unknown keys (ignored, see the module's docstring)."""
    return [e for e in errors if not (isinstance(e, KeyFault) and not e.missing)]


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
            _, errors = decode_each(ProcessHeader, obj, skip=("schema", "pid"))
            if _known(errors):
                _add(problems, WHOLE_RECORD, f"{where}: unsupported record schema {_shown(obj.get('schema'))}")
                return {}, problems
            continue
        fields, errors = decode_each(SeriesLine, obj, skip=("points", "errors"))
        key = fields.get("key")
        if key is None:  # missing, or not a non-empty string
            _add(problems, WHOLE_RECORD, f"{where}: 'key' must be a non-empty string, got {_shown(obj.get('key'))}")
            continue
        for error in _known(errors):
            _add(problems, key, f"{where}: {key}: {error.message}")
        _read_points(fields.get("points", []), key, where, series, problems)
        _read_markers(fields.get("errors", []), key, where, problems)
    return series, problems


def _read_points(points: list[object], key: str, where: str, series: Series, problems: Problems) -> None:
    for point in points:
        try:
            if not (isinstance(point, list) and len(point) == 2):
                raise ValueError(f"a point must be [step, value], got {_shown(point)}")
            step, value = _step(point[0]), decode_value(point[1])
        except ValueError as exc:
            _add(problems, key, f"{where}: {key}: {exc}")
            continue
        series.setdefault(key, []).append((step, value))


def _read_markers(markers: list[object], key: str, where: str, problems: Problems) -> None:
    """The recorder's error markers: `[step or null, reason]` for a value it could not record."""
    for marker in markers:
        # By hand, as a point is: a step has no bound here, where the codec's whole numbers have one.
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
    doc = encode(MergedRecord(
        schema=1, series={k: tuple(cast(Point, (s, encode_value(v))) for s, v in pts) for k, pts in series.items()},
        problems={k: tuple(v) for k, v in problems.items()} if problems else None))
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
    fields, errors = decode_each(MergedRecord, doc, skip=("schema", "series", "problems"))
    if _known(errors):
        raise ValueError(f"{path}: not a ci-policy metric record (schema {RECORD_SCHEMA})")
    series: Series = {}
    problems: Problems = {}
    for key, messages in fields.get("problems", {}).items():
        try:
            problems[key] = list(decode(tuple[str, ...], messages))
        except DecodeError:
            raise ValueError(f"{path}: problems of {key!r} must be a list of strings") from None
    for key, points in fields["series"].items():
        # A series that is not an array is a problem of its key, as in a process file.
        if not isinstance(points, list):
            _add(problems, key, f"{Path(path).name}: {key}: 'points' must be an array, got {_shown(points)}")
            continue
        _read_points(points, key, Path(path).name, series, problems)
    return series, problems


def read_record(path: Path) -> Series:
    """`load_record`'s series; the first problem raised as `ValueError`."""
    series, problems = load_record(path)
    _raise_first(problems)
    return series
