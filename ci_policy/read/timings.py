"""The runner's timing record, declared once: one attempt of one test file, one JSON line.

- In: a timing-records file (JSON Lines) that `ci-policy run` writes (`--timings-out`, through
  `adapters.runner.timings.TimingsWriter`), one record per attempt: `{"schema": 1, "file",
  "stage", "shard", "attempt", "status", "elapsed", "est_time", "failure_kind", "retriable",
  "started_at", "commit", "run_id", "run_attempt"}`.
- Out: `TimingRecord`, a frozen document through `read.codec`: the writer's line is
  `line_of(record)`, the JSON Schema `timings` is `codec.schema(TimingRecord)`;
  `read_timings(path, warnings)`: the file's records, each with its line number, in file
  order; the one reader of these files (`tune`'s evidence, `history import`); `parse_line`:
  one line's.
- Refused: every malformed line, unknown schema and wrongly typed field, as an `InputError`
  naming the file, the line and the field (`HINT` says what a line is); all of them are
  raised together as `InputErrors`. A field this reader does not know is not refused (a newer
  runner may add one).
- Except a torn last line (no newline after it, and not a valid record: the runner was
  killed, or the disk filled, mid-write; the runner ends every record with a newline): it is
  dropped, every complete record before it is used, and a warning naming the file and the
  line says so (into `warnings`, when given; without it the line is an error).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ci_policy.errors import Diagnostic, InputError, InputErrors
from ci_policy.read import shapes
from ci_policy.read.codec import decode_each, encode
from ci_policy.read.declare import MAX_WHOLE, KeyFault, document, spec
from ci_policy.read.numbers import MAX_SECONDS, in_range, number_range
from ci_policy.read.strictjson import DuplicateKey, lone_surrogate, no_duplicates

SCHEMA = 1
ATTEMPT_STATUSES = ("pass", "fail", "timeout")
HINT = "each line of a timing-records file is one JSON object written by `ci-policy run`"
# Any non-empty string, in Python's regular expressions and in JSON Schema's.
NON_EMPTY = r"[\s\S]+"


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=True, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check(holds: Callable[[Any], bool], what: str) -> Callable[[Any], str | None]:
    """A field's check, as a record's errors say it: `expected WHAT, got KIND VALUE`."""
    return lambda v: None if holds(v) else f"expected {what}, got {shapes.json_type(v)} {_shown(v)}"


def _whole(minimum: int, null: bool) -> Callable[[Any], str | None]:
    or_null = " or null" if null else ""

    def check(v: Any) -> str | None:
        if (v is None and null) or (shapes.is_integer(v, minimum=minimum) and v <= MAX_WHOLE):
            return None
        # The bound every whole number of a document has (`read.declare.MAX_WHOLE`), named only when it is the fault.
        what = (f"an integer in [{minimum}, {MAX_WHOLE}]" if shapes.is_integer(v, minimum=minimum)
                else f"an integer >= {minimum}")
        return f"expected {what}{or_null}, got {shapes.json_type(v)} {_shown(v)}"
    return check


def _seconds(value: object) -> bool:
    return in_range(value, 0, MAX_SECONDS)


_SECONDS = f"a number in {number_range(0, MAX_SECONDS)}"
_TEXT = _check(lambda v: v is None or isinstance(v, str), "a string or null")


@document(kw_only=True)
class TimingRecord:
    """One attempt of one test file, as the runner appends it (`ci-policy run`)."""

    schema: Literal[1] = spec(description="The version of the record format.")
    file: str = spec(pattern=NON_EMPTY, check=_check(shapes.is_non_empty_string, "a non-empty string"),
                     description="The test file, repository-relative.")
    stage: str | None = spec(pattern=NON_EMPTY, description="The stage it ran in; null: not known to the runner.",
                             check=_check(shapes.or_null(shapes.is_non_empty_string), "a non-empty string or null"))
    shard: int | None = spec(minimum=0, check=_whole(0, True), description="The shard of the stage.")
    attempt: int = spec(minimum=1, check=_whole(1, False), description="The attempt of the file, from 1.")
    status: Literal["pass", "fail", "timeout"] = spec(
        check=_check(lambda v: isinstance(v, str) and v in ATTEMPT_STATUSES, "one of " + ", ".join(ATTEMPT_STATUSES)),
        description="What the attempt did.")
    # One attempt of one file lasts at most what any timeout may be (7 days): a forged 1e308
    # would otherwise become an estimate.
    elapsed: float = spec(minimum=0, maximum=MAX_SECONDS, check=_check(_seconds, _SECONDS),
                          description="Its wall time, in seconds.")
    est_time: float | None = spec(default=None, minimum=0, maximum=MAX_SECONDS,
                                  check=_check(shapes.or_null(_seconds), _SECONDS + " or null"),
                                  description="The file's est_time when it ran, in seconds.")
    failure_kind: str | None = spec(default=None, check=_TEXT,
                                    description="The retry verdict's kind of an attempt that did not pass.")
    retriable: bool | None = spec(default=None, check=_check(shapes.or_null(lambda v: isinstance(v, bool)),
                                                             "a boolean or null"),
                                  description="Whether the retry rules allowed another attempt.")
    started_at: str | None = spec(default=None, check=_TEXT, description="When the attempt started (UTC).")
    commit: str | None = spec(default=None, check=_TEXT, description="GITHUB_SHA.")
    run_id: str | None = spec(default=None, check=_TEXT, description="GITHUB_RUN_ID; null: a local run.")
    run_attempt: str | None = spec(default=None, check=_TEXT, description="GITHUB_RUN_ATTEMPT.")


def line_of(record: TimingRecord) -> bytes:
    """The record as the runner appends it: one JSON line, keys in declared order."""
    return (json.dumps(encode(record)) + "\n").encode("utf-8")


@dataclass(frozen=True)
class Located:
    """A record and the line of its file it was read from (from 1)."""

    line: int
    record: TimingRecord


def parse_line(raw: bytes, lineno: int, source: str, errors: list[InputError]) -> TimingRecord | None:
    """One line's record, or None: blank, or refused (each problem appended to `errors`)."""
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
    fields, problems = decode_each(TimingRecord, data)
    # Only the missing fields count: fields this reader does not know are not refused.
    problems = [p for p in problems if not (isinstance(p, KeyFault) and not p.missing)]
    for problem in problems:
        if isinstance(problem, KeyFault):
            err(f"field {problem.key!r}: missing")
        else:
            err(f"field {problem.where!r}: {problem.message}")
    return None if problems else TimingRecord(**fields)


def read_timings(path: str | os.PathLike[str], warnings: list[Diagnostic] | None = None) -> list[Located]:
    """The records of one timing-records file, in file order; raises `InputErrors` listing every problem."""
    source = os.fspath(path)
    try:
        with open(source, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputErrors([InputError(f"cannot read timing records: {exc.strerror or exc}", path=source)]) from None
    errors: list[InputError] = []
    records: list[Located] = []
    lines = data.split(b"\n")
    for lineno, raw in enumerate(lines[:-1], start=1):
        record = parse_line(raw.rstrip(b"\r"), lineno, source, errors)
        if record is not None:
            records.append(Located(lineno, record))
    # The piece after the last newline: empty for a complete file.
    last: list[InputError] = []
    record = parse_line(lines[-1].rstrip(b"\r"), len(lines), source, last)
    if record is not None:
        records.append(Located(len(lines), record))
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
    return records
