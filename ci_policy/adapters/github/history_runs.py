"""`history import --github-run(s)`: the test history of workflow runs, from their artifacts (an adapter).

- In: a PyGithub requester, (OWNER/REPO, run id) pairs, the expansion budget of one run.
- Out: `read_runs(...)`: every attempt (`model.outcomes.Outcome`) of the runs' timing artifacts
  and every plan's hours (`model.outcomes.PlanHours`) of their plan artifacts, read by the
  readers `history import PATH` uses (`adapters.history.read_history`), with each warning
  citing the artifact and member (`OWNER/REPO/runs/ID/artifacts/NAME/MEMBER`), never a
  temporary path. The artifacts are extracted one run at a time into a temporary directory,
  deleted before the next run is fetched.
- An artifact is data from whoever ran the workflow (a fork's pull request included): one that
  does not read (an archive check, a malformed record or plan, a record or `run.json` naming
  another run than the one it was downloaded from) is skipped whole with a warning naming it;
  the run's other artifacts, and the other runs, are imported.
- Refused: an API error, as an `InputError` naming the run (nothing is imported).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from github import GithubException

from ci_policy.adapters.github.download import ExpansionBudget, artifacts_of_run
from ci_policy.adapters.history import read_history
from ci_policy.errors import Diagnostic, InputError, InputErrors, warning
from ci_policy.model.outcomes import Outcome, PlanHours

# The problems of one artifact listed in its warning; the rest are counted (as `tune` shows a member's).
SHOWN_PROBLEMS = 3


def _cited(diagnostic: Diagnostic, cites: dict[str, str]) -> Diagnostic:
    path = diagnostic.path
    return dataclasses.replace(diagnostic, path=cites.get(path, path)) if path is not None else diagnostic


def read_runs(requester: Any, runs: Iterable[tuple[str, int]], warnings: list[Diagnostic], *,
              archive_max_bytes: int = 256 * 1024 * 1024,
              run_max_bytes: int = 1024 * 1024 * 1024) -> tuple[list[Outcome], list[PlanHours]]:
    outcomes: list[Outcome] = []
    plans: list[PlanHours] = []
    for repo_name, run_id in runs:
        budget = ExpansionBudget(archive_max_bytes=archive_max_bytes, run_max_bytes=run_max_bytes)
        with tempfile.TemporaryDirectory(prefix="ci-policy-history-") as tmp:
            found: list[Diagnostic] = []
            try:
                cites = artifacts_of_run(requester, repo_name, run_id, Path(tmp), budget=budget, warnings=found)
            except GithubException as exc:
                message = exc.data.get("message") if isinstance(exc.data, dict) else None
                raise InputError(f"GitHub API error {exc.status} while reading run {run_id} of {repo_name}: "
                                 f"{message or 'request failed'}") from None
            warnings += found
            run_dir = Path(tmp, f"run-{run_id}")
            for artifact in sorted(run_dir.iterdir()) if run_dir.is_dir() else ():
                cite = cites.get(str(artifact), str(artifact))
                read: list[Diagnostic] = []
                try:
                    rows, hours = read_history([artifact], read)
                    foreign = sorted({o.run_id for o in rows} - {str(run_id)})
                    if foreign:
                        raise InputErrors([InputError(f"records of run {', '.join(foreign)}, not of run {run_id} "
                                                      "they were downloaded from", path=str(artifact))])
                except InputErrors as exc:
                    problems = [_cited(e, cites) for e in exc.errors]
                    shown = "; ".join(f"{e.path}:{e.line}: {e.message}" if e.line else f"{e.path}: {e.message}"
                                      for e in problems[:SHOWN_PROBLEMS])
                    more = len(problems) - SHOWN_PROBLEMS
                    warnings.append(warning(f"artifact of run {run_id} skipped: {len(problems)} problem(s): {shown}"
                                            + (f"; and {more} more" if more > 0 else ""), path=cite,
                                            hint="none of it is imported; the run's other artifacts are"))
                    continue
                warnings += [_cited(w, cites) for w in read]
                outcomes += rows
                plans += hours
    return outcomes, plans
