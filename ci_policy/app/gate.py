"""`gate`: one test file's metric gates, evaluated on a run's metric record against the metric history.

- In: a `GateRequest`: the checkout and configuration, how to scan, the file, the record, the
  stage, the store URL, the cadence, the event and the run's identity (None: what GitHub Actions
  sets, `$GITHUB_EVENT_NAME`, `$GITHUB_RUN_ID`, `$GITHUB_RUN_ATTEMPT`, `$GITHUB_SHA`).
- Out: the file's `GateOutcome`. `run_identity(...)`: the run a metric record belongs to.
- Refused: an unknown cadence, a malformed `$GITHUB_RUN_ATTEMPT`, a store location that is not
  one, a baseline-writing run without an explicit shared store or into a SQLite file under
  GitHub Actions (`UsageError`); an unreadable record, an unregistered file, an invalid file (its
  own diagnostics), a configuration or label-registry error (exit 1). Another test file's errors
  do not stop this file's gates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ci_policy.adapters.gate import (
    RunIdentity,
    baseline_store_problem,
    check_store_location,
    opener,
    registration_for,
    run_gate,
)
from ci_policy.app.attempts import attempt_of
from ci_policy.app.requests import ScanRequest
from ci_policy.app.scanning import start_scan
from ci_policy.app.stores import store_url
from ci_policy.config.cadences import CADENCES
from ci_policy.errors import InputError, InputErrors, UsageError
from ci_policy.gates.baseline import writes_baseline
from ci_policy.plan.results import GateOutcome
from ci_policy.read.records import load_record


def run_identity(run_id: str | None = None, run_attempt: int | None = None,
                 commit: str | None = None) -> RunIdentity:
    """The run a metric record belongs to: the options, else what GitHub Actions sets."""
    return RunIdentity(run_id=run_id or os.environ.get("GITHUB_RUN_ID") or None, run_attempt=attempt_of(run_attempt),
                       commit=commit or os.environ.get("GITHUB_SHA") or None)


@dataclass(frozen=True)
class GateRequest:
    repo: Path
    config: str | None
    scan: ScanRequest
    file: str
    record: str
    stage: str | None = None
    store: str | None = None          # `--store URL`
    store_file: str | None = None     # `--store-file FILE`
    cadence: str = "regular"
    event: str | None = None
    run_id: str | None = None
    run_attempt: int | None = None
    commit: str | None = None


def gate(request: GateRequest) -> GateOutcome:
    if request.cadence not in CADENCES:
        raise UsageError(f"unknown cadence {request.cadence!r}; expected one of {', '.join(CADENCES)}",
                         source="--cadence")
    store = store_url(request.store, request.store_file)
    check_store_location(store)
    event = request.event or os.environ.get("GITHUB_EVENT_NAME")
    identity = run_identity(request.run_id, request.run_attempt, request.commit)
    if identity.run_id is not None and writes_baseline(request.cadence, event)[0]:
        problem = baseline_store_problem(store)
        if problem is not None:
            raise problem
    # Another file's error does not stop this file's gates (one broken file never stops CI
    # for the rest); the file's own errors do, with its diagnostics, unless they only dropped
    # some of its registrations: a partly read file runs, and its gates are read in full.
    snapshot = start_scan(request.scan).load(request.config).usable()
    for invalid in snapshot.invalid_files:
        if invalid.file == request.file and not invalid.kept:
            raise InputErrors(invalid.diagnostics)
    reg = registration_for(snapshot, request.file, request.stage)
    try:
        series, problems = load_record(Path(request.record))
    except (OSError, ValueError) as exc:
        raise InputError(f"--record: {request.record} is not a readable metric record: {exc}",
                         path=request.record, hint="pass the record ci-policy run merged for this file") from None
    return run_gate(snapshot, reg, series, opener(store, request.repo), cadence=request.cadence, event=event,
                    run=identity, problems=problems)
