"""The test history's rows from what a run leaves: the runner's JSONL timing records (an adapter).

- In: paths given to `ci-policy history import`: timing-record files (`*.jsonl`), or
  directories (such as run artifacts `gh run download RUN_ID --dir run-RUN_ID` extracted, one
  `run-<id>/` per run) walked as `tuning.sources.walk` walks (sorted, symbolic links refused),
  where only `*.jsonl` files and plan artifacts are read (job logs hold no attempts; a zip
  archive met is a warning: it is not extracted here).
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
  unreadable file, a malformed record (`read.timings.read_timings`, the reader `tune` uses), a
  `run_attempt` that is not a number >= 1 (the history keys rows by it).
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
from typing import Any, cast

from ci_policy.adapters.plan_history import is_plan_file, plan_hours_of
from ci_policy.adapters.tuning.sources import run_id_of, walk
from ci_policy.errors import Diagnostic, InputError, InputErrors
from ci_policy.model.outcomes import RETRY_CLASSES, TIMESTAMP, Outcome, PlanHours, attempt_status
from ci_policy.read.timings import HINT, Located, TimingRecord, read_timings

_STARTED = re.compile(TIMESTAMP)


def _run_attempt(located: Located, source: str, errors: list[InputError]) -> int | None:
    """A record's run attempt as a number (the history keys rows by it); None: not given."""
    text = located.record.run_attempt
    if text is None or text == "":
        return None
    if not (text.isascii() and text.isdigit() and int(text)):
        shown = json.dumps(text, ensure_ascii=True)
        errors.append(InputError(f"field 'run_attempt': expected a run attempt (a number >= 1), got "
                                 f"{shown if len(shown) <= 40 else shown[:37] + '...'}", path=source,
                                 line=located.line, hint=HINT))
        return None
    return int(text)


def outcomes_of(source: str, warnings: list[Diagnostic]) -> list[Outcome]:
    """The attempts of one timing-records file."""
    records = read_timings(source, warnings)
    errors: list[InputError] = []
    attempts = [_run_attempt(located, source, errors) for located in records]
    if errors:
        raise InputErrors(errors)
    enclosing = run_id_of(source)
    left_out: dict[str, int] = {}
    kept: list[tuple[TimingRecord, str, int]] = []
    for located, run_attempt in zip(records, attempts, strict=True):
        r = located.record
        run_id = r.run_id or enclosing
        why = ("no run id (a local run)" if not run_id else
               "no stage or shard" if r.stage is None or r.shard is None else
               "no start time" if r.started_at is None or not _STARTED.fullmatch(r.started_at)
               else None)
        if why is not None:
            left_out[why] = left_out.get(why, 0) + 1
            continue
        assert run_id is not None
        kept.append((r, run_id, run_attempt or 1))
    if left_out:
        warnings.append(Diagnostic("left out " + ", ".join(f"{n} record(s) with {why}" for why, n in left_out.items()),
                                   path=source, severity="warning",
                                   hint="the test history keeps the attempts of workflow runs (GITHUB_RUN_ID set)"))

    def place(r: TimingRecord, run_id: str, run_attempt: int) -> tuple:
        return (run_id, run_attempt, r.stage, r.shard, r.file)

    passes: dict[tuple, list[int]] = {}
    for r, run_id, run_attempt in kept:
        if r.status == "pass":
            passes.setdefault(place(r, run_id, run_attempt), []).append(r.attempt)
    out = []
    for r, run_id, run_attempt in kept:
        assert r.stage is not None and r.shard is not None and r.started_at is not None  # left out above
        later = any(n > r.attempt for n in passes.get(place(r, run_id, run_attempt), ()))
        kind = r.failure_kind
        retry_class = kind if r.status != "pass" and kind in RETRY_CLASSES else None
        out.append(Outcome(run_id=run_id, run_attempt=run_attempt, commit=r.commit, stage=r.stage,
                           shard=r.shard, file=r.file, attempt=r.attempt,
                           status=attempt_status(r.status, retry_class, signal=None, passed_later=later),
                           retry_class=cast(Any, retry_class), started_at=r.started_at, elapsed=float(r.elapsed),
                           est_time=None if r.est_time is None else float(r.est_time)))
    return out


def _walk(directory: str, found: list[str], errors: list[InputError], warnings: list[Diagnostic],
          plans: list[str]) -> None:
    for path in walk(directory, errors):
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        if path.lower().endswith(".jsonl"):
            found.append(path)
        elif is_plan_file(path):
            plans.append(path)
        elif path.lower().endswith(".zip"):
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
