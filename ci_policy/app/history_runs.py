"""`history import --github-run(s)`: the test history of workflow runs, fetched from their artifacts.

- In: an `app.history.ImportRequest` naming runs: `--github-run OWNER/REPO/RUN_ID` (or a run
  URL; repeatable) and/or `--github-runs N --workflow FILE` (the workflow's last N completed
  runs of every event, pull requests included, of `--repository`, else `$GITHUB_REPOSITORY`),
  with the API URL and how to get the token; local paths too, if given.
- Out: an `Imported` (as `app.history.import_history`), `runs_read` naming the runs fetched.
  Each run's timing and plan artifacts are checked and read as `tune`'s downloads are
  (`adapters.github.history_runs`); importing the same runs again adds nothing.
- A fork's pull request can put anything in its artifacts: every value passes the strict
  readers (bounded numbers, patterned ids), a record naming another run than its own is
  skipped, and the hours only inform the report (docs/adopting/metric-store.md).
- Refused: as a `UsageError` naming the option, before any request: no store named,
  `--github-runs` without `--workflow` (and back), a malformed run, no repository, a missing
  token; an API error (`InputError`, nothing imported).
"""

from __future__ import annotations

from ci_policy.adapters.github.client import github_requester
from ci_policy.adapters.github.download import parse_run
from ci_policy.adapters.github.history_runs import read_runs
from ci_policy.adapters.github.scheduled import completed_runs
from ci_policy.adapters.history import read_history
from ci_policy.app.history import Imported, ImportRequest, import_url, store_imported
from ci_policy.app.requests import github_repository
from ci_policy.errors import Diagnostic, UsageError


def import_runs(request: ImportRequest) -> Imported:
    url = import_url(request)
    if (request.last_runs is None) != (request.workflow is None):
        raise UsageError("--github-runs and --workflow go together", source="--workflow" if request.workflow is None
                         else "--github-runs", hint="e.g. --github-runs 50 --workflow ci.yml")
    if request.repository is not None and request.last_runs is None:
        raise UsageError("only applies to --github-runs", source="--repository")
    named = [parse_run(spec) for spec in request.runs]  # every run is checked before any request
    repository = github_repository(request.repository, "--github-runs") if request.last_runs is not None else None
    secret = request.token("--github-runs" if request.last_runs is not None else "--github-run")
    warnings: list[Diagnostic] = []
    rows, plans = read_history(request.paths, warnings)
    requester = github_requester(secret, request.api_url, timeout=60)
    runs = list(named)
    if repository is not None:
        assert request.workflow is not None and request.last_runs is not None  # checked above
        listed = completed_runs(requester, repository, request.workflow, request.last_runs)
        request.announce(f"ci-policy history import: {len(listed)} completed run(s) of {request.workflow}"
                         + (f": {', '.join(str(r.id) for r in listed)}" if listed else ""))
        runs += [(repository, r.id) for r in listed if (repository, r.id) not in named]
    fetched_rows, fetched_plans = read_runs(requester, runs, warnings)
    return store_imported(request, url, rows + fetched_rows, plans + fetched_plans, warnings,
                          runs_read=tuple(run_id for _, run_id in runs))
