"""`report --publish-issue`: the CI health report's Markdown as the repository's one health issue.

- In: a `PublishRequest`: the Markdown, the repository (`OWNER/REPO`), the GitHub API URL and how
  to get the token (`token()`, asked only here: a report that publishes nothing needs none).
- Out: a `Published`: "opened" or "updated", the issue's number and URL
  (`adapters.github.health_issue.publish_issue`).
- Refused: no repository (`UsageError`); an API error (`InputError`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ci_policy.adapters.github.client import github_requester
from ci_policy.adapters.github.health_issue import publish_issue
from ci_policy.errors import UsageError

TIMEOUT = 30


@dataclass(frozen=True)
class PublishRequest:
    markdown: str
    repository: str | None
    api_url: str
    token: Callable[[], str]


@dataclass(frozen=True)
class Published:
    action: str   # "opened" or "updated"
    number: int
    url: str


def publish(request: PublishRequest) -> Published:
    if not request.repository:
        raise UsageError("publishing the report needs the repository", source="--repository",
                         hint="pass --repository OWNER/REPO, or run in GitHub Actions ($GITHUB_REPOSITORY)")
    requester = github_requester(request.token(), request.api_url, timeout=TIMEOUT)
    action, number, url = publish_issue(requester, request.repository, request.markdown)
    return Published(action, number, url)
