"""The GitHub REST client the comment gateway, the pull-request trust check and the status
report share: a few calls through PyGithub's requester.

- In: a requester (`client.github_requester`), or a token and an API base URL.
- Out: the JSON (or text) answers of GET requests; mutating requests are sent, or with
  `dry_run` printed as one JSON line each (`{"method", "path", "body"}`) and not sent.
- Refused: an error status, no connection, a timeout or an answer that is not JSON is an
  `ApiError` with a one-line message, never a traceback.
"""

from __future__ import annotations

import json
from typing import IO, Any

from github import GithubException
from requests import RequestException

from ci_policy.adapters.github.client import GitHubUnavailable, Throttle, github_requester
from ci_policy.errors import CiPolicyError


class ApiError(CiPolicyError):
    def __init__(self, status: int, message: str, *, text: str | None = None) -> None:
        super().__init__(text or f"GitHub API error {status}: {message}")
        self.status = status

    @classmethod
    def gave_up(cls, exc: GitHubUnavailable) -> ApiError:
        """A request the client retried until it gave up: its own message says which and why."""
        return cls(exc.status, str(exc), text=str(exc))


class Api:
    """The few REST calls the gateway makes, through PyGithub's requester."""

    def __init__(self, requester, *, dry_run: bool = False, out: IO[str] | None = None) -> None:
        self._requester = requester
        self.dry_run = dry_run
        self.out = out

    def _call(self, method: str, path: str, *, params=None, body=None) -> Any:
        try:
            _headers, data = self._requester.requestJsonAndCheck(method, path, parameters=params, input=body)
        except GithubException as exc:
            message = exc.data.get("message") if isinstance(exc.data, dict) else None
            raise ApiError(exc.status, message or "request failed") from None
        except GitHubUnavailable as exc:
            raise ApiError.gave_up(exc) from None
        except (RequestException, ValueError) as exc:
            # No connection, a timeout, a body that is not JSON: a clear error, never a traceback.
            raise ApiError(0, f"no usable answer from the API ({type(exc).__name__})") from None
        return data

    def get(self, path: str, params: dict | None = None) -> Any:
        return self._call("GET", path, params=params)

    def get_text(self, path: str, accept: str) -> str:
        """A GET whose answer is not JSON (a diff): the text, or ApiError for an error status."""
        try:
            status, _headers, output = self._requester.requestJson("GET", path, headers={"Accept": accept})
        except GitHubUnavailable as exc:
            raise ApiError.gave_up(exc) from None
        except (RequestException, ValueError) as exc:
            raise ApiError(0, f"no usable answer from the API ({type(exc).__name__})") from None
        if status >= 400:
            try:
                message = json.loads(output).get("message")
            except (ValueError, AttributeError):
                message = None
            raise ApiError(status, message if isinstance(message, str) else "request failed")
        return output

    def mutate(self, method: str, path: str, body: dict | None = None) -> Any:
        if self.dry_run:
            print(json.dumps({"method": method, "path": path, "body": body}, sort_keys=True), file=self.out)
            return None
        return self._call(method, path, body=body)


def github_api(token: str, base_url: str, *, dry_run: bool, out: IO[str], throttle: Throttle | None = None) -> Api:
    """The gateway's client; `throttle` None keeps PyGithub's pauses (see `client`)."""
    return Api(github_requester(token, base_url, timeout=30, throttle=throttle), dry_run=dry_run, out=out)
