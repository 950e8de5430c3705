"""`report`: CI health over the store's test history.

- In: a `ReportRequest`: the store (`--store`, `--store-file`, else `$CI_POLICY_DATABASE_URL`,
  else the checkout's default SQLite file), `--since` (`30d`, `4w`), the last day (default
  today, UTC), the repository and server the run links name, whether to propose quarantines
  (the flake-rate threshold and the fewest runs), and the configuration (`--config`, else the
  checkout's `.github/ci-policy.yml` when there is one; trusted: the report runs from the
  default branch), whose `accelerators:` give each planned stage its GPUs and cost per hour
  through `plan.hours.runner_of`, the matching the plans use; `costs` given in the request
  wins over the configuration's. Its `quarantine:` entries are checked over the last
  `release_after` days (`--release-after`, default 14d): ready to leave, failing or not run.
- Out: the `model.health.HealthReport` of the window (the attempts and the plans' hours it
  holds); without a configuration (or costs),
  runner-hours only, and a note saying so.
- Refused: a configuration that does not parse (its located errors), a `--config` that does
  not exist; a bad `--since` or `--release-after` (CP702), a `--today` that is not a date (`UsageError`); a store that
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
from ci_policy.config.load import load_config
from ci_policy.config.path import DEFAULT_CONFIG
from ci_policy.config.top import Config
from ci_policy.model.health import HealthReport, RunnerCost, health_report, parse_since
from ci_policy.plan.hours import runner_of


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
    release_after: str = "14d"                 # `--release-after`: the days a quarantined file must pass
    costs: Mapping[str, RunnerCost] | None = None
    config: str | None = None                  # `--config FILE`; None: the checkout's, if any


def configuration(repo: Path, config: str | None) -> Config | None:
    """The configuration named, else the checkout's own, else None (a store read elsewhere)."""
    if config is None and not (repo / DEFAULT_CONFIG).is_file():
        return None
    return load_config(repo, config)


def runner_costs(config: Config) -> dict[str, RunnerCost]:
    """Each planned stage's runner (by stage key): its GPUs and cost per hour, as its plans count them."""
    costs = {}
    for stage in config.planned_stages:
        runner = runner_of(stage, config)
        costs[stage.key] = RunnerCost(gpus=runner.gpus, cost_per_hour=runner.cost_per_hour)
    return costs


def report(request: ReportRequest) -> HealthReport:
    days = parse_since(request.since)
    release_days = parse_since(request.release_after, "--release-after")
    config = configuration(request.repo, request.config)
    costs = request.costs
    if costs is None and config is not None:
        costs = runner_costs(config)
    until = request.today or datetime.datetime.now(datetime.timezone.utc).date()
    since = until - datetime.timedelta(days=days - 1)
    url = store_url(request.store, request.store_file)
    with open_store(url, default_path=default_store_path(request.repo), read_only=True) as store:
        store.check_history()
        # The quarantine's window may reach back further than the report's.
        rows = store.attempts(since=min(since, until - datetime.timedelta(days=release_days - 1)).isoformat())
        plans = store.plans(since=since.isoformat())
    repository = request.repository or os.environ.get("GITHUB_REPOSITORY") or None
    server = request.server or os.environ.get("GITHUB_SERVER_URL") or "https://github.com"
    return health_report(rows, since=since, until=until, plans=plans, repository=repository, server=server, costs=costs,
                         threshold=request.threshold, min_runs=request.min_runs,
                         quarantine=None if config is None else config.quarantine, release_days=release_days)
