"""One way to build PyGithub's requester, shared by the comment gateway and `--github-run`.

- In: a token, the API base URL, a timeout and optionally a `Throttle`.
- Out: PyGithub's requester (`requestJsonAndCheck`), with PyGithub's retries off (a
  failed call is reported, never repeated behind the caller's back).
- Throttle: the pauses PyGithub keeps between requests and between writes. Without one
  (`throttle=None` and `DEFAULT_THROTTLE` None, as in production) PyGithub keeps its own
  pauses; a caller talking to a local server (the tests' fake GitHub) passes
  `NO_THROTTLE`, or sets `DEFAULT_THROTTLE` for the clients the CLI builds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Throttle:
    """Seconds between any two requests and between two writes; None is no pause."""

    between_requests: float | None
    between_writes: float | None


NO_THROTTLE = Throttle(None, None)
DEFAULT_THROTTLE: Throttle | None = None  # None: PyGithub's own pauses


def github_requester(token: str, base_url: str, *, timeout: int, throttle: Throttle | None = None) -> Any:
    from github import Auth, Github

    chosen = throttle or DEFAULT_THROTTLE
    pauses: dict[str, float | None] = {}
    if chosen is not None:
        pauses = {"seconds_between_requests": chosen.between_requests,
                  "seconds_between_writes": chosen.between_writes}
    gh = Github(auth=Auth.Token(token), base_url=base_url, retry=None, timeout=timeout, **pauses)  # type: ignore[arg-type]
    return gh.requester
