"""`report-status`: one commit status created on a commit (a result reported on a PR's head).

- In: a `StatusRequest`: the repository (None: `$GITHUB_REPOSITORY`), the SHA, context, state,
  description and target URL, the token and the API URL.
- Out: the status GitHub created (its `context`, `state`, `description`, `target_url`). A
  description longer than GitHub's 140 characters is cut to 137 and "...".
- Refused: a missing repository (`UsageError`); an API error (exit 1).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ci_policy.adapters.github.api import github_api
from ci_policy.adapters.github.status import MAX_DESCRIPTION, create_status
from ci_policy.errors import UsageError


@dataclass(frozen=True)
class StatusRequest:
    repository: str | None
    sha: str
    context: str
    state: str
    description: str
    target_url: str | None
    token: Callable[[], str]   # asked for once the request is otherwise sound
    api_url: str


def report_status(request: StatusRequest) -> dict[str, Any]:
    repository = request.repository or os.environ.get("GITHUB_REPOSITORY")
    if not repository:
        raise UsageError("the repository is unknown", source="--repository",
                         hint="pass --repository OWNER/REPO, or set $GITHUB_REPOSITORY")
    description = " ".join(request.description.split())
    if len(description) > MAX_DESCRIPTION:
        description = description[:MAX_DESCRIPTION - 3] + "..."
    api = github_api(request.token(), request.api_url, dry_run=False, out=sys.stdout)
    return dict(create_status(api, repository, request.sha, context=request.context, state=request.state,
                              description=description, target_url=request.target_url))
