"""The test history: what `run` records into the store, and `history import`.

- In: `recorder(store, job)` for `run`: the store URL named (`--store`, `--store-file`, else
  `$CI_POLICY_DATABASE_URL`) and the stage job; `ImportRequest` for `history import`: the
  paths of timing records (files, or directories of downloaded run artifacts, whose plan
  artifacts give each run's planned and skipped accelerator hours) and the store; the runs
  whose artifacts `app.history_runs` fetches (`--github-run`, `--github-runs N --workflow F`).
- Out: `recorder` gives None when the run records nothing, else a function that records one
  shard's attempts (`model.outcomes.Outcome`, one per attempt) and returns a warning, or
  None; `import_history(request)` an `Imported`: the attempts read, how many were new, the
  plans' hours read and how many were new, the warnings of the read (`import_url` and
  `store_imported`: its first and last steps, which `app.history_runs` shares).
- A run records only where baselines may be written: a plan whose cadence and event write
  baselines (nightly, weekly; never a pull request or a release), a run id, an explicitly
  named store that a baseline may be written into (`adapters.gate.baseline_store_problem`).
  Everywhere else the JSONL timing records are the history, for `history import` later.
- A store that cannot be reached, or refuses the rows, is a warning of the shard's result;
  the shard's own result stands and its records stay in the JSONL file.
- Refused: by `import_history`: no store named (`UsageError`: importing into the default
  local file would hide the history from every other runner), a store location that is not
  one, unreadable or malformed records (`InputErrors`, nothing imported).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ci_policy.adapters.gate import baseline_store_problem
from ci_policy.adapters.history import read_history
from ci_policy.adapters.runner.shard import signal_name
from ci_policy.adapters.store import default_store_path, open_store
from ci_policy.app.attempts import attempt_of
from ci_policy.app.stores import DATABASE_URL_ENV, store_url
from ci_policy.errors import CiPolicyError, Diagnostic, UsageError
from ci_policy.model.outcomes import Outcome, PlanHours, attempt_status
from ci_policy.plan.results import ShardResult
from ci_policy.plan.stagejob import StageJob

Recorder = Callable[[ShardResult], "str | None"]


def outcomes_of(result: ShardResult, *, run_id: str, run_attempt: int, commit: str | None, event: str | None,
                cadence: str | None, runner_labels: tuple[str, ...]) -> list[Outcome]:
    """One row per attempt of one shard's files."""
    rows = []
    for file_result in result.results:
        passes = [a.attempt for a in file_result.attempts if a.status == "pass"]
        for a in file_result.attempts:
            kind = a.verdict.kind if a.verdict is not None else None
            status = attempt_status(a.status, kind, signal=signal_name(a.returncode),
                                    passed_later=any(n > a.attempt for n in passes))
            rows.append(Outcome(run_id=run_id, run_attempt=run_attempt, commit=commit, event=event, cadence=cadence,
                                stage=result.stage, shard=result.shard, runner_labels=runner_labels,
                                file=file_result.file, attempt=a.attempt, status=status,
                                retry_class=None if a.status == "pass" else kind, started_at=a.started_at,
                                elapsed=round(a.elapsed, 3), est_time=file_result.registration.est_time))
    return rows


def recorder(store: str | None, job: StageJob, repo: Path) -> Recorder | None:
    """What records a shard's attempts into `store`, or None where this run records nothing."""
    plan = job.plan
    url = store or os.environ.get(DATABASE_URL_ENV) or None
    run_id = os.environ.get("GITHUB_RUN_ID") or None
    if plan is None or not plan.policy.write_baseline or run_id is None or url is None:
        return None
    if baseline_store_problem(store) is not None:
        return None
    run_attempt, commit = attempt_of(), os.environ.get("GITHUB_SHA") or None
    labels = tuple(getattr(getattr(job.stage, "stage", None), "runs_on", None) or ())
    event, cadence = plan.policy.event, plan.policy.cadence

    def record(result: ShardResult) -> str | None:
        rows = outcomes_of(result, run_id=run_id, run_attempt=run_attempt, commit=commit, event=event,
                           cadence=cadence, runner_labels=labels)
        if not rows:
            return None
        try:
            with open_store(store, default_path=default_store_path(repo)) as opened:
                opened.record_attempts(rows)
        except CiPolicyError as exc:
            return (f"the test history of shard {result.shard} was not recorded: {exc}; the shard's result "
                    "stands, and its attempts stay in the timing records for `ci-policy history import`")
        return None
    return record


def _no_token(needed_for: str) -> str:
    raise UsageError(f"is empty: {needed_for} needs a token", source="$GITHUB_TOKEN")


@dataclass(frozen=True)
class ImportRequest:
    repo: Path
    paths: tuple[str, ...]
    store: str | None = None          # `--store URL`
    store_file: str | None = None     # `--store-file FILE`
    # The runs whose artifacts are fetched (`app.history_runs`): `--github-run`, `--github-runs N --workflow F`.
    runs: tuple[str, ...] = ()
    last_runs: int | None = None
    workflow: str | None = None
    repository: str | None = None     # None: $GITHUB_REPOSITORY
    api_url: str = "https://api.github.com"
    token: Callable[[str], str] = _no_token  # the token, given what needs it
    announce: Callable[[str], None] = lambda _line: None  # the runs read, before they are fetched


@dataclass(frozen=True)
class Imported:
    read: int                          # attempts read from the records
    added: int                         # of which the store did not hold yet
    warnings: tuple[Diagnostic, ...]
    plans_read: int = 0                # plans' hours read from plan artifacts
    plans_added: int = 0
    runs_read: tuple[int, ...] = ()    # the runs whose artifacts were fetched


def import_url(request: ImportRequest) -> str:
    """The store named for an import; a `UsageError` when none is (checked before anything is read)."""
    url = store_url(request.store, request.store_file) or os.environ.get(DATABASE_URL_ENV) or None
    if url is None:
        raise UsageError("no store named: the test history is imported into the shared store that the "
                         "report reads", source="--store",
                         hint=f"pass --store URL, --store-file FILE or set ${DATABASE_URL_ENV}")
    return url


def store_imported(request: ImportRequest, url: str, rows: list[Outcome], plans: list[PlanHours],
                   warnings: list[Diagnostic], runs_read: tuple[int, ...] = ()) -> Imported:
    """The rows and plans read, recorded into the store `url` (what it held already is kept)."""
    with open_store(url, default_path=default_store_path(request.repo)) as store:
        added = store.record_attempts(rows)
        plans_added = store.record_plans(plans)
    return Imported(read=len(rows), added=added, warnings=tuple(warnings), plans_read=len(plans),
                    plans_added=plans_added, runs_read=runs_read)


def import_history(request: ImportRequest) -> Imported:
    url = import_url(request)
    warnings: list[Diagnostic] = []
    rows, plans = read_history(request.paths, warnings)
    return store_imported(request, url, rows, plans, warnings)
