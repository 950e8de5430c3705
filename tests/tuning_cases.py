"""Shared by the tuning tests: the evidence files under `tests/data/tuning`, and their rows.

`ev()` builds an expected `FileEvidence` row; `sglang_retry_timeout_rows()` is what the
golden sglang log yields, wherever it is read from (a file given, or a run archive walked).
"""

from __future__ import annotations

from pathlib import Path

from ci_policy.adapters.tuning.evidence import FileEvidence

DATA = Path(__file__).resolve().parent / "data" / "tuning"
H200 = "stage-c-4-gpu-h200"
SGLANG_JOB = "stage-b-test-small-1-gpu (2)"


def text_of(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def ev(file, status, elapsed, est, line, *, source, stage, shard, note="", run_id="", job_id="", job_name=""):
    return FileEvidence(run_id=run_id, job_id=job_id, job_name=job_name, stage=stage, shard=shard, file=file,
                        status=status, elapsed=elapsed, logged_est=est, source=source, line=line, note=note)


def sglang_retry_timeout_rows(source: str, run_id: str = "", job_id: str = "") -> list[FileEvidence]:
    kw = dict(source=source, stage="stage-b-test-small-1-gpu", shard=2, run_id=run_id, job_id=job_id,
              job_name=SGLANG_JOB)
    return [
        ev("tests/e2e/test_sampling.py", "passed", 135.0, 120.0, 107, **kw),
        # failed once (End block 1), passed on attempt 2: only the second End block's time counts
        ev("tests/e2e/test_lora.py", "passed", 290.25, 300.5, 108, note="retried: 2 attempts", **kw),
        # sglang's own FAILED reason says timeout
        ev("tests/e2e/test_long_context.py", "timeout", 1800.0, 900.0, 111, **kw),
        ev("tests/e2e/test_spec_decode.py", "failed", 61.0, 60.0, 112, **kw),
    ]
