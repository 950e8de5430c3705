"""The tune report (`ci_policy.adapters.tuning.report`): the CSV of every (run, job, file) row and the
summary of proposals and stage balance, as exact text."""

from __future__ import annotations

import csv
import io

from helpers import assert_golden
from hypothesis import given
from hypothesis import strategies as st

from ci_policy.adapters.tuning.evidence import STATUSES, FileEvidence
from ci_policy.adapters.tuning.propose import Proposal, StageBalance
from ci_policy.adapters.tuning.report import COLUMNS, csv_text, summary_text

UNPLACED = "no stage in the evidence and the file is not registered for exactly one backend"
A = "tests/test_a.py"


def ev(file, status, elapsed, *, stage="gpu-a", shard=0, run_id="101", job_id="", job_name="", logged_est=None,
       source="run-101/t.jsonl", line=1, note="") -> FileEvidence:
    return FileEvidence(run_id=run_id, job_id=job_id, job_name=job_name, stage=stage, shard=shard, file=file,
                        status=status, elapsed=elapsed, logged_est=logged_est, source=source, line=line, note=note)


PROPOSALS = [
    Proposal(A, "cuda", "gpu-a", (230.5, 1800.312), 1800.312, 300, 2300, "raise"),
    Proposal(A, "rocm", "amd", (), None, 480, None, "skip", "no passed sample (failed, timeout)"),
    Proposal("tests/test_k.py", "cuda", "gpu-a", (12.0,), 12.0, 20.5, 20, "keep", "within the 20% dead-band"),
    Proposal("tests/gone.py", "?", None, (), None, None, None, "skip", UNPLACED),
]
BACKENDS = {"gpu-a": "cuda", "amd": "rocm"}


def backend_of(row: FileEvidence) -> str:
    return BACKENDS.get(row.stage, "?")


def test_csv_golden():
    rows = [
        ev(A, "passed", 1800.312, shard=1, job_id="5501", job_name="gpu-a (1)", logged_est=300.0,
           source="run-101/3_gpu-a (1).txt", line=412, note="retried: 2 attempts"),
        ev(A, "passed", 230.5, run_id="", logged_est=300, source="local/timings.jsonl", line=7,
           note="run 2 of 2 without distinct run ids in this file"),
        ev(A, "timeout", 3600.0, stage="amd", shard=None, logged_est=None, line=3),
        ev(A, "not_run", None, stage="amd", line=4, note="fast-fail"),
        ev("tests/test_k.py", "passed", 12.0, logged_est=20.5, line=5),
        ev("tests/gone.py", "cancelled", 0.25, stage=None, shard=None, line=6, note="job cancelled; no final summary"),
        # no proposal for this file and backend: the proposal columns stay empty
        ev("tests/test_z.py", "failed", 1234567.891, line=8, note='quoted "note", with a comma'),
    ]
    assert_golden("adapters/tuning/report.csv", csv_text(rows, PROPOSALS, backend_of))


def test_csv_numbers_are_written_without_losing_digits():
    # The runner rounds elapsed to milliseconds; the CSV keeps every one of them (no 6-digit %g).
    values = [1800.312, 3600.208, 2702.561, 12345.678, 0.001, 600.0, 1e-05, 5.0e15, 2.5e16]
    rows = [ev(A, "failed", v, line=i) for i, v in enumerate(values, start=1)]
    parsed = list(csv.DictReader(io.StringIO(csv_text(rows, [], backend_of))))
    assert [r["elapsed_s"] for r in parsed] == ["1800.312", "3600.208", "2702.561", "12345.678", "0.001", "600",
                                                "1e-05", "5000000000000000", "2.5e+16"]
    assert [float(r["elapsed_s"]) for r in parsed] == values


@given(st.lists(st.builds(
    lambda status, elapsed, note: ev(A, status, elapsed, note=note),
    # A lone "\r" is left out: csv quotes only its "\n" line terminator, so "\r" would split the row.
    st.sampled_from(STATUSES), st.none() | st.floats(0, 1e9, allow_nan=False),
    st.text(st.characters(blacklist_characters="\r"), max_size=12)), max_size=8))
def test_csv_has_one_row_per_evidence_row_with_every_column(rows):
    parsed = list(csv.reader(io.StringIO(csv_text(rows, PROPOSALS, backend_of), newline="")))
    assert parsed[0] == list(COLUMNS)
    assert len(parsed) == len(rows) + 1
    for row, out in zip(rows, parsed[1:], strict=True):
        got = dict(zip(COLUMNS, out, strict=True))
        assert len(out) == len(COLUMNS)
        assert got["status"] == row.status
        if row.elapsed is None:
            assert got["elapsed_s"] == ""
        else:
            assert float(got["elapsed_s"]) == row.elapsed
        assert got["note"] == row.note  # the proposal (tests/test_a.py on cuda: a raise) has no reason
        assert (got["current_est_s"], got["proposed_est_s"], got["action"]) == ("300", "2300", "raise")


def test_summary_golden():
    balances = [StageBalance("gpu-a", 2, 550, 550 / 475, 2450.5, 2450.5 / 1450.25),
                StageBalance("amd", 1, 480, 1.0, 480, 1.0)]
    assert_golden("adapters/tuning/summary.txt", summary_text(PROPOSALS, balances))


def test_summary_without_evidence():
    assert summary_text([], []) == ("FILE  BACKEND  SAMPLES  Q  CURRENT -> PROPOSED  ACTION  REASON\n"
                                    "\n"
                                    "ci-policy tune: no evidence")


def test_summary_counts_every_action():
    proposals = [Proposal(f"t{i}.py", "cuda", "s", (1.0,), 1.0, 10, 10, action, "")
                 for i, action in enumerate(["report_only", "lower", "keep", "report_only", "skip", "raise", "lower"])]
    assert summary_text(proposals, []).splitlines()[-1] == \
        "ci-policy tune: 1 keep, 2 lower, 1 raise, 2 report_only, 1 skip"
