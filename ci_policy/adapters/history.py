"""The test history's rows from what a run leaves: the runner's JSONL timing records (an adapter).

- In: paths given to `ci-policy history import`: timing-record files (`*.jsonl`), or
  directories (such as the run artifacts `ci-policy tune --github-run` downloads, one
  `run-<id>/` per run) walked in sorted order without following symbolic links, where only
  `*.jsonl` files are read (job logs hold no attempts; a zip archive met is a warning: it is
  not extracted here).
- Out: `read_outcomes(paths, warnings)`: one `model.outcomes.Outcome` per attempt, in file and
  line order; `read_history(paths, warnings)`: those and the plans' hours
  (`model.outcomes.PlanHours`) of the plan artifacts met while walking a directory
  (`adapters.plan_history`: `ci-policy-plan-<attempt>/plan.json` with its `run.json`). A
  record's own `run_id` wins, else the nearest enclosing `run-<id>` directory's.
  An attempt that did not pass and was followed by a passing attempt of the same file in the
  same run, stage and shard is `flaky` (`model.outcomes.attempt_status`).
- Left out, with one warning per file saying how many and why: records without a run id (a
  local run: the history keys every row by its run), without a stage or shard, or without a
  start time. A torn last line (no newline, not a record: the runner was stopped mid-write) is
  dropped with a warning, as `tune` does.
- Refused: as `InputErrors`, every problem located by file and line, nothing imported: a
  missing path, a symbolic link met while walking, a named file that is not `*.jsonl`, an
  unreadable file, a malformed record (the checks of `tuning.records.CHECKS`).
- A timing record does not say the run's event, cadence or runner labels, nor the signal that
  ended an attempt: imported rows leave the first three null (empty labels) and record an
  attempt killed by a signal as `fail`; `run` recording into a store says all of them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from ci_policy.adapters.plan_history import is_plan_file, plan_hours_of
from ci_policy.adapters.tuning.records import CHECKS, HINT, REQUIRED, SCHEMA
from ci_policy.adapters.tuning.sources import run_id_of
from ci_policy.errors import Diagnostic, InputError, InputErrors
from ci_policy.model.outcomes import TIMESTAMP, Outcome, PlanHours, attempt_status
from ci_policy.read import shapes
from ci_policy.read.strictjson import DuplicateKey, no_duplicates

_STARTED = re.compile(TIMESTAMP)


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=True, allow_nan=True, default=repr)
    return text if len(text) <= 40 else text[:37] + "..."


def _parse(raw: bytes, lineno: int, source: str, errors: list[InputError]) -> dict | None:
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
        data = json.loads(text, object_pairs_hook=no_duplicates)
    except DuplicateKey as exc:
        err(f"field {exc.key!r}: given twice")
        return None
    except (ValueError, RecursionError) as exc:
        err(f"not valid JSON: {getattr(exc, 'msg', None) or 'nested too deeply'}")
        return None
    if not isinstance(data, dict):
        err(f"a timing record must be a JSON object, got {shapes.json_type(data)} {_shown(data)}")
        return None
    if data.get("schema") != SCHEMA or isinstance(data.get("schema"), bool):
        err(f"field 'schema': unsupported timing record schema {_shown(data.get('schema'))} "
            f"(this ci_policy reads schema {SCHEMA})")
        return None
    ok = True
    for name in shapes.fields(data, REQUIRED).missing:
        err(f"field {name!r}: missing")
        ok = False
    for name, (check, what) in CHECKS.items():
        if name in data and not check(data[name]):
            err(f"field {name!r}: expected {what}, got {shapes.json_type(data[name])} {_shown(data[name])}")
            ok = False
    run_attempt = data.get("run_attempt")
    if isinstance(run_attempt, str) and not (run_attempt.isascii() and run_attempt.isdigit() and int(run_attempt)):
        err(f"field 'run_attempt': expected a run attempt (a number >= 1), got {_shown(run_attempt)}")
        ok = False
    return data if ok else None


def _records(source: str) -> tuple[list[tuple[int, dict]], Diagnostic | None]:
    try:
        with open(source, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputErrors([InputError(f"cannot read timing records: {exc.strerror or exc}", path=source)]) from None
    errors: list[InputError] = []
    records = []
    lines = data.split(b"\n")
    for lineno, raw in enumerate(lines[:-1], start=1):
        record = _parse(raw.rstrip(b"\r"), lineno, source, errors)
        if record is not None:
            records.append((lineno, record))
    last: list[InputError] = []
    record = _parse(lines[-1].rstrip(b"\r"), len(lines), source, last)
    torn = None
    if record is not None:
        records.append((len(lines), record))
    elif last:
        torn = Diagnostic(f"the last line has no newline and is not a valid record ({last[0].message}): a torn "
                          "write; dropped it", path=source, line=len(lines), severity="warning",
                          hint="the runner was stopped while writing it; the records before it are complete")
    if errors:
        raise InputErrors(errors)
    return records, torn


def outcomes_of(source: str, warnings: list[Diagnostic]) -> list[Outcome]:
    """The attempts of one timing-records file."""
    records, torn = _records(source)
    if torn is not None:
        warnings.append(torn)
    enclosing = run_id_of(source)
    left_out: dict[str, int] = {}
    kept: list[tuple[int, dict, str]] = []
    for lineno, r in records:
        run_id = r.get("run_id") or enclosing
        why = ("no run id (a local run)" if not run_id else
               "no stage or shard" if r.get("stage") is None or r.get("shard") is None else
               "no start time" if not isinstance(r.get("started_at"), str) or not _STARTED.fullmatch(r["started_at"])
               else None)
        if why is not None:
            left_out[why] = left_out.get(why, 0) + 1
            continue
        assert run_id is not None
        kept.append((lineno, r, run_id))
    if left_out:
        warnings.append(Diagnostic("left out " + ", ".join(f"{n} record(s) with {why}" for why, n in left_out.items()),
                                   path=source, severity="warning",
                                   hint="the test history keeps the attempts of workflow runs (GITHUB_RUN_ID set)"))

    def place(r: dict, run_id: str) -> tuple:
        return (run_id, int(r.get("run_attempt") or 1), r["stage"], r["shard"], r["file"])

    passes: dict[tuple, list[int]] = {}
    for _, r, run_id in kept:
        if r["status"] == "pass":
            passes.setdefault(place(r, run_id), []).append(r["attempt"])
    out = []
    for _, r, run_id in kept:
        where = place(r, run_id)
        later = any(n > r["attempt"] for n in passes.get(where, ()))
        kind = r.get("failure_kind")
        retry_class = kind if r["status"] != "pass" and kind in ("infra", "flaky", "code", "timeout", "unknown") \
            else None
        out.append(Outcome(run_id=run_id, run_attempt=where[1], commit=r.get("commit"), stage=r["stage"],
                           shard=r["shard"], file=r["file"], attempt=r["attempt"],
                           status=attempt_status(r["status"], retry_class, signal=None, passed_later=later),
                           retry_class=retry_class, started_at=r["started_at"], elapsed=float(r["elapsed"]),
                           est_time=None if r.get("est_time") is None else float(r["est_time"])))
    return out


def _walk(directory: str, found: list[str], errors: list[InputError], warnings: list[Diagnostic],
          plans: list[str]) -> None:
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        errors.append(InputError(f"cannot list directory: {exc.strerror or exc}", path=directory))
        return
    for entry in entries:
        path = os.path.join(directory, entry.name)
        if entry.is_symlink():
            errors.append(InputError("a symbolic link; directories are walked without following links", path=path,
                                     hint="give the link's target as a path of its own"))
        elif entry.is_dir(follow_symlinks=False):
            _walk(path, found, errors, warnings, plans)
        elif entry.is_file(follow_symlinks=False) and entry.name.lower().endswith(".jsonl"):
            found.append(path)
        elif entry.is_file(follow_symlinks=False) and is_plan_file(path):
            plans.append(path)
        elif entry.is_file(follow_symlinks=False) and entry.name.lower().endswith(".zip"):
            warnings.append(Diagnostic("a zip archive is not read", path=path, severity="warning",
                                       hint="extract it first (`gh run download` extracts each artifact into "
                                            "a directory of its name)"))


def read_outcomes(paths: Iterable[str | os.PathLike[str]], warnings: list[Diagnostic]) -> list[Outcome]:
    """Every attempt recorded under `paths`; raises `InputErrors` listing every problem."""
    return read_history(paths, warnings)[0]


def read_history(paths: Iterable[str | os.PathLike[str]],
                 warnings: list[Diagnostic]) -> tuple[list[Outcome], list[PlanHours]]:
    """Every attempt and every plan's hours under `paths`; raises `InputErrors` listing every problem."""
    files: list[str] = []
    plan_files: list[str] = []
    errors: list[InputError] = []
    for given in paths:
        path = os.fspath(given)
        if not os.path.lexists(path):
            errors.append(InputError("no such file or directory", path=path))
        elif os.path.isdir(path) and not os.path.islink(path):
            _walk(path, files, errors, warnings, plan_files)
        elif os.path.isfile(path) and Path(path).name.lower().endswith(".jsonl"):
            files.append(path)
        else:
            errors.append(InputError("not a timing-records file (*.jsonl) or a directory", path=path,
                                     hint="name the files `ci-policy run --timings-out` wrote, or the directory "
                                          "of downloaded run artifacts"))
    out: list[Outcome] = []
    for path in files:
        try:
            out += outcomes_of(path, warnings)
        except InputErrors as exc:
            errors += [InputError.of(d) for d in exc.errors]
    plans = []
    for path in plan_files:
        try:
            plan = plan_hours_of(path, warnings)
        except InputError as exc:
            errors.append(exc)
            continue
        if plan is not None:
            plans.append(plan)
    if errors:
        raise InputErrors(errors)
    return out, plans
