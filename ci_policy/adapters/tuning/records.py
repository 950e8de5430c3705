"""The runner's JSONL timing records -> `FileEvidence` rows.

- In: a timing-records file (`read.timings.TimingRecord`, one JSON object per attempt,
  read by `read.timings.read_timings`).
- Out: one row per (run_id, run_attempt, stage, shard, file): `passed` if any attempt
  passed (its elapsed), else `timeout` if any attempt timed out, else `failed` (the last
  attempt's). Each record is final for its attempt, so records never give `unknown`,
  `cancelled` or `not_run`. `line` is the record that decided the status.
- A file that appends several runs without run ids (local runs): attempt numbers that
  start again (attempt 1 after attempt 2) begin a new row.
- Refused: what `read.timings.read_timings` refuses (every malformed line, unknown schema and
  wrongly typed field, located, raised together as `InputErrors`); a torn last line is a
  warning into `warnings`, when given (without it the line is an error).
"""

from __future__ import annotations

import os

from ci_policy.adapters.tuning.evidence import FileEvidence, stage_and_shard
from ci_policy.errors import Diagnostic
from ci_policy.read.timings import Located, read_timings


def _decide(records: list[Located]) -> tuple[str, Located]:
    """(status, the record that decided it) of one file's attempts in one run."""
    for status, wanted in (("passed", "pass"), ("timeout", "timeout")):
        hits = [r for r in records if r.record.status == wanted]
        if hits:
            return status, hits[-1]
    return "failed", records[-1]


def read_records(path: str | os.PathLike[str], *, run_id: str | None = None, job_id: str = "",
                 job_name: str = "", warnings: list[Diagnostic] | None = None) -> list[FileEvidence]:
    """The rows of one timing-records file; `run_id` is used where a record has none."""
    source = os.fspath(path)
    records = read_timings(source, warnings)

    job_stage, job_shard = stage_and_shard(job_name) if job_name else (None, None)
    # key -> the runs of that key, each a list of records with increasing attempt numbers
    groups: dict[tuple, list[list[Located]]] = {}
    for located in records:
        r = located.record
        key = (r.run_id or run_id or "", r.run_attempt,
               r.stage if r.stage is not None else job_stage,
               r.shard if r.shard is not None else job_shard, r.file)
        runs = groups.setdefault(key, [])
        if runs and runs[-1][-1].record.attempt < r.attempt:
            runs[-1].append(located)
        else:
            runs.append([located])

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
                               file=file, status=status, elapsed=float(decided.record.elapsed),
                               logged_est=None if decided.record.est_time is None else float(decided.record.est_time),
                               source=source, line=decided.line, note="; ".join(notes))
            rows.append((attempts[0].line, row))
    rows.sort(key=lambda pair: pair[0])
    return [row for _, row in rows]
