"""`report`: CI health over the store's test history.

- In: a `ReportRequest`: the store (`--store`, `--store-file`, else `$CI_POLICY_DATABASE_URL`,
  else the checkout's default SQLite file), `--since` (`30d`, `4w`), the last day (default
  today, UTC), the repository and server the run links name, whether to propose quarantines
  (the flake-rate threshold and the fewest runs), and `costs` (runner cost by stage or runner
  label; the configuration does not state costs yet, so the command line passes none).
- Out: the `model.health.HealthReport` of the window.
- Refused: a bad `--since` (CP702), a `--today` that is not a date (`UsageError`); a store that
  does not exist or holds no metric history (`StoreUnavailable`); a store of a schema before the
  test history (CP701: a read never migrates).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_policy.adapters.store import default_store_path, open_store
from ci_policy.app.stores import store_url
from ci_policy.model.health import HealthReport, RunnerCost, health_report, parse_since


@dataclass(frozen=True)
class ReportRequest:
    repo: Path
    since: str = "30d"
    today: datetime.date | None = None         # the window's last day; None: today (UTC)
    repository: str | None = None              # OWNER/REPO; None: $GITHUB_REPOSITORY
    server: str | None = None                  # None: $GITHUB_SERVER_URL, else https://github.com
    store: str | None = None                   # `--store URL`
    store_file: str | None = None              # `--store-file FILE`
    threshold: float | None = None             # `--propose-quarantine`'s flake rate; None: no proposals
    min_runs: int = 5
    costs: Mapping[str, RunnerCost] | None = None


def report(request: ReportRequest) -> HealthReport:
    days = parse_since(request.since)
    until = request.today or datetime.datetime.now(datetime.timezone.utc).date()
    since = until - datetime.timedelta(days=days - 1)
    url = store_url(request.store, request.store_file)
    with open_store(url, default_path=default_store_path(request.repo), read_only=True) as store:
        store.check_history()
        rows = store.attempts(since=since.isoformat())
    repository = request.repository or os.environ.get("GITHUB_REPOSITORY") or None
    server = request.server or os.environ.get("GITHUB_SERVER_URL") or "https://github.com"
    return health_report(rows, since=since, until=until, repository=repository, server=server, costs=request.costs,
                         threshold=request.threshold, min_runs=request.min_runs)
