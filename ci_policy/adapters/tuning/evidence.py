"""The evidence of past runs: one `FileEvidence` per (run, job, test file).

- In: the runner's JSONL timing records (`records.py`) and raw GitHub Actions job logs
  of sglang-family runners (`logs.py`), local or downloaded (`download.py`).
- Out: `FileEvidence` rows, each with exactly one status, in this precedence: passed,
  timeout, unknown (a timing record but no final summary), failed, cancelled, not_run.
  With retries only the passing attempt's elapsed time counts.
- Refused: nothing: the readers that build the rows (`records.py`, `logs.py`) refuse bad input.
- Every row cites where it came from (`source` file and `line`), for the CSV, and the
  evidence it belongs to (`origin`): `local` for `--from` files, `github EVENT on BRANCH`
  for a downloaded run, marked `(untrusted)` when it was read with `--allow-untrusted-runs`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ci_policy.read.names import STAGE_KEY

STATUSES = ("passed", "timeout", "unknown", "failed", "cancelled", "not_run")
PRECEDENCE = {status: i for i, status in enumerate(STATUSES)}

# "stage-c-4-gpu-h200 (shard 1)", "stage-c-4-gpu-h200 (1)", "stage-c-4-gpu-h200 / shard 1", "stage-a-cpu"
JOB_NAME_RE = re.compile(rf"(?P<stage>{STAGE_KEY})"
                         r"(?:\s*(?:\(\s*(?:shard\s*)?(?P<shard>\d+)\s*\)|/\s*shard\s*(?P<shard2>\d+)))?")


@dataclass(frozen=True)
class Attempt:
    """One attempt of one file, as a record or a log line reported it."""

    status: str                 # pass | fail | timeout
    elapsed: float | None
    source: str
    line: int


@dataclass(frozen=True)
class FileEvidence:
    run_id: str
    job_id: str
    job_name: str
    stage: str | None
    shard: int | None
    file: str
    status: str                      # one of STATUSES
    elapsed: float | None         # the passing attempt's (or the last attempt's) seconds
    logged_est: float | None      # est_time the run itself logged
    source: str
    line: int
    note: str = ""
    origin: str = "local"

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def stage_and_shard(job_name: str) -> tuple[str | None, int | None]:
    # A reusable workflow's jobs are named "caller / job": the job is the last part
    # (unless that part is the "shard N" of "stage / shard N").
    parts = job_name.strip().split(" / ")
    keep = 2 if len(parts) > 1 and re.fullmatch(r"shard\s*\d+", parts[-1].strip()) else 1
    m = JOB_NAME_RE.match(" / ".join(parts[-keep:]).strip())
    if not m:
        return None, None
    shard = m.group("shard") or m.group("shard2")
    return m.group("stage"), int(shard) if shard is not None else None


def strongest(statuses: Iterable[str]) -> str:
    """The status that wins by precedence (passed beats everything)."""
    return min(statuses, key=PRECEDENCE.__getitem__)
