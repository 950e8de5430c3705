"""The requests several use cases share: how to scan a checkout, the plan inputs, where a plan comes from.

- In: what the command line parsed, as plain values (None: not given).
- Out: frozen dataclasses, built without importing any use case (a command line builds them
  before it knows which path it takes: `list --plan` never scans).
- Refused: nothing here; each use case checks what it reads (`github_repository`: a repository
  that is not `OWNER/REPO`, for the use cases that call GitHub).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ci_policy.errors import UsageError


def _ignore(_message: str) -> None:
    pass


def github_repository(given: str | None, needed_for: str) -> str:
    """`OWNER/REPO` as given (`--repository`), else `$GITHUB_REPOSITORY`; a `UsageError` naming
    the option that needs it when neither is one."""
    value = given or os.environ.get("GITHUB_REPOSITORY") or ""
    parts = value.split("/")
    if len(parts) != 2 or not all(parts) or any(p in (".", "..") for p in parts):
        raise UsageError(f"{needed_for} needs OWNER/REPO, got {value!r}", source="--repository",
                         hint="pass --repository OWNER/REPO, or run in GitHub Actions ($GITHUB_REPOSITORY)")
    return value


@dataclass(frozen=True)
class ScanRequest:
    """How the test files of a checkout are read: `--cache DIR` / `--no-cache`, `--jobs N`."""
    repo: Path
    cache: str | None = None        # "" is not given (a workflow passes every input on one line)
    no_cache: bool = False
    jobs: int | None = None         # None: `$CI_POLICY_JOBS`, else the CPUs this process may use
    default_cache: bool = True      # without `--cache`, the default directory (else no cache)
    warn: Callable[[str], None] = _ignore   # where a warning goes (the cache cannot be used)


@dataclass(frozen=True)
class CheckoutRequest:
    """What `lint` and `registry` read: the checkout, its configuration, how to scan it."""
    repo: Path
    config: str | None
    scan: ScanRequest
    today: datetime.date | None = None  # the day quarantines are judged on; None: today in UTC


@dataclass(frozen=True)
class PlanInputs:
    """What triggered the workflow, as the plan inputs give it; None (or "") is not given."""
    event: str
    labels_json: str | None = None
    labels: tuple[str, ...] = ()
    schedule: str | None = None
    cadence: str | None = None
    diff: str | None = None
    base: str | None = None
    head: str | None = None
    trust: str | None = None
    forced: str | None = None


@dataclass(frozen=True)
class PlanRequest:
    repo: Path
    config: str | None
    inputs: PlanInputs
    scan: ScanRequest = field(default_factory=lambda: ScanRequest(Path(".")))


@dataclass(frozen=True)
class PlanSource:
    """Where `list` and `run` take their plan from: `--plan FILE|DIR`, else the plan inputs."""
    repo: Path
    config: str | None
    stage: str
    plan_file: str | None = None            # `--plan FILE|DIR`
    inputs: PlanRequest | None = None       # the plan inputs, without `--plan`
    given: tuple[str, ...] = ()             # the plan inputs' options given besides `--plan`
