"""The runner's JSONL timing records -> `FileEvidence` rows.

- In: a file written by `runner.TimingsWriter`, one JSON object per attempt:
  `{"schema": 1, "file", "stage", "shard", "attempt", "status", "elapsed", "est_time",
  "failure_kind", "retriable", "started_at", "commit", "run_id", "run_attempt"}`.
- Out: one row per (run_id, run_attempt, stage, shard, file): `passed` if any attempt
  passed (its elapsed), else `timeout` if any attempt timed out, else `failed` (the last
  attempt's). Each record is final for its attempt, so records never give `unknown`,
  `cancelled` or `not_run`. `line` is the record that decided the status.
- A file that appends several runs without run ids (local runs): attempt numbers that
  start again (attempt 1 after attempt 2) begin a new row.
- Refused: every malformed line, unknown schema and wrongly typed field, as an `InputError`
  naming the file, the line and the field; all of them are raised together as `InputErrors`.
- Except a torn last line (no newline after it, and not a valid record: the runner was
  killed, or the disk filled, mid-write; the runner ends every record with a newline):
  it is dropped, every complete record before it is used, and a warning naming the file
  and the line says so (into `warnings`, when given; without it the line is an error).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass

from ci_policy.adapters.tuning.evidence import FileEvidence, stage_and_shard
from ci_policy.errors import Diagnostic, InputError, InputErrors
from ci_policy.read import shapes
from ci_policy.read.numbers import MAX_SECONDS, in_range, number_range
from ci_policy.read.strictjson import DuplicateKey, lone_surrogate, no_duplicates

SCHEMA = 1
ATTEMPT_STATUSES = ("pass", "fail", "timeout")
REQUIRED = ("schema", "file", "stage", "shard", "attempt", "status", "elapsed")
HINT = "each line of a timing-records file is one JSON object written by `ci-policy run`"


@dataclass(frozen=True)
class _Record:
    line: int
    file: str
    stage: str | None
    shard: int | None
    attempt: int
    status: str
    elapsed: float
    est_time: float | None
    run_id: str | None
    run_attempt: str | None


def _shown(value) -> str:
    try:
        text = json.dumps(value, ensure_ascii=True, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_optional_string = shapes.or_null(lambda v: isinstance(v, str))


def _seconds(value: object) -> bool:
    return in_range(value, 0, MAX_SECONDS)

# field -> (check, what the field must be)
CHECKS: dict[str, tuple[Callable[[object], bool], str]] = {
    "file": (shapes.is_non_empty_string, "a non-empty string"),
    "stage": (shapes.or_null(shapes.is_non_empty_string), "a non-empty string or null"),
    "shard": (shapes.or_null(lambda v: shapes.is_integer(v, minimum=0)), "an integer >= 0 or null"),
    "attempt": (lambda v: shapes.is_integer(v, minimum=1), "an integer >= 1"),
    "status": (lambda v: isinstance(v, str) and v in ATTEMPT_STATUSES, "one of " + ", ".join(ATTEMPT_STATUSES)),
    # One attempt of one file lasts at most what any timeout may be (7 days): a forged 1e308
    # would otherwise become an estimate.
    "elapsed": (_seconds, f"a number in {number_range(0, MAX_SECONDS)}"),
    "est_time": (shapes.or_null(_seconds), f"a number in {number_range(0, MAX_SECONDS)} or null"),
    "failure_kind": (_optional_string, "a string or null"),
    "retriable": (shapes.or_null(lambda v: isinstance(v, bool)), "a boolean or null"),
    "started_at": (_optional_string, "a string or null"),
    "commit": (_optional_string, "a string or null"),
    "run_id": (_optional_string, "a string or null"),
    "run_attempt": (_optional_string, "a string or null"),
}


def _parse_line(raw: bytes, lineno: int, source: str, errors: list) -> _Record | None:
    def err(message: str) -> None:
        errors.append(InputError(message, path=source, line=lineno, hint=HINT))

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        err(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})")
        return None
    if not text.strip():
        return None
    try:
        # NaN/Infinity are parsed and then reported per field ("expected a finite number").
        data = json.loads(text, object_pairs_hook=no_duplicates)
    except DuplicateKey as exc:
        err(f"field {exc.key!r}: given twice")
        return None
    except json.JSONDecodeError as exc:
        err(f"not valid JSON: {exc.msg} (column {exc.colno})")
        return None
    except RecursionError:
        err("not valid JSON: nested too deeply")
        return None
    except ValueError as exc:  # e.g. an integer longer than Python converts
        err(f"not valid JSON: {exc}")
        return None
    if lone_surrogate(text, data):
        err("not valid JSON for a record: a string holds a lone surrogate escape (\\ud800 to \\udfff)")
        return None
    if not isinstance(data, dict):
        err(f"a timing record must be a JSON object, got {shapes.json_type(data)} {_shown(data)}")
        return None
    if "schema" not in data:
        err("field 'schema': missing")
        return None
    schema = data["schema"]
    if not (shapes.is_integer(schema) and schema == SCHEMA):
        err(f"field 'schema': unsupported timing record schema {_shown(schema)} "
            f"(this ci_policy reads schema {SCHEMA})")
        return None
    # Only the missing fields count: fields this reader does not know are not refused.
    missing = shapes.fields(data, REQUIRED).missing
    for name in missing:
        err(f"field {name!r}: missing")
    ok = not missing
    for name, (check, what) in CHECKS.items():
        if name in data and not check(data[name]):
            err(f"field {name!r}: expected {what}, got {shapes.json_type(data[name])} {_shown(data[name])}")
            ok = False
    if not ok:
        return None
    est = data.get("est_time")
    return _Record(line=lineno, file=data["file"], stage=data["stage"], shard=data["shard"],
                   attempt=data["attempt"], status=data["status"], elapsed=float(data["elapsed"]),
                   est_time=None if est is None else float(est), run_id=data.get("run_id"),
                   run_attempt=data.get("run_attempt"))


def _decide(records: list[_Record]) -> tuple[str, _Record]:
    """(status, the record that decided it) of one file's attempts in one run."""
    for status, wanted in (("passed", "pass"), ("timeout", "timeout")):
        hits = [r for r in records if r.status == wanted]
        if hits:
            return status, hits[-1]
    return "failed", records[-1]


def read_records(path: str | os.PathLike[str], *, run_id: str | None = None, job_id: str = "",
                 job_name: str = "", warnings: list[Diagnostic] | None = None) -> list[FileEvidence]:
    """The rows of one timing-records file; `run_id` is used where a record has none."""
    source = os.fspath(path)
    try:
        with open(source, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputErrors([InputError(f"cannot read timing records: {exc.strerror or exc}", path=source)]) from None
    errors: list[InputError] = []
    records = []
    lines = data.split(b"\n")
    for lineno, raw in enumerate(lines[:-1], start=1):
        record = _parse_line(raw.rstrip(b"\r"), lineno, source, errors)
        if record is not None:
            records.append(record)
    # The piece after the last newline: empty for a complete file.
    last: list[InputError] = []
    record = _parse_line(lines[-1].rstrip(b"\r"), len(lines), source, last)
    if record is not None:
        records.append(record)
    elif last and warnings is not None:
        warnings.append(Diagnostic(
            f"the last line has no newline and is not a valid record ({last[0].message}): a torn write; "
            f"dropped 1 line, used the {len(records)} complete record(s) before it", path=source,
            line=len(lines), severity="warning",
            hint="the runner was stopped while writing it; the records before it are complete"))
    else:
        errors += last
    if errors:
        raise InputErrors(errors)

    job_stage, job_shard = stage_and_shard(job_name) if job_name else (None, None)
    # key -> the runs of that key, each a list of records with increasing attempt numbers
    groups: dict[tuple, list[list[_Record]]] = {}
    for r in records:
        key = (r.run_id or run_id or "", r.run_attempt,
               r.stage if r.stage is not None else job_stage,
               r.shard if r.shard is not None else job_shard, r.file)
        runs = groups.setdefault(key, [])
        if runs and runs[-1][-1].attempt < r.attempt:
            runs[-1].append(r)
        else:
            runs.append([r])

    rows = []
    for (rid, run_attempt, stage, shard, file), runs in groups.items():
        for i, attempts in enumerate(runs):
            status, decided = _decide(attempts)
            notes = []
            if len(attempts) > 1:
                notes.append(f"retried: {len(attempts)} attempts")
            if run_attempt not in (None, "", "1"):
                notes.append(f"run attempt {run_attempt}")
            if len(runs) > 1:
                notes.append(f"run {i + 1} of {len(runs)} without distinct run ids in this file")
            row = FileEvidence(run_id=rid, job_id=job_id, job_name=job_name, stage=stage, shard=shard,
                               file=file, status=status, elapsed=decided.elapsed, logged_est=decided.est_time,
                               source=source, line=decided.line, note="; ".join(notes))
            rows.append((attempts[0].line, row))
    rows.sort(key=lambda pair: pair[0])
    return [row for _, row in rows]
