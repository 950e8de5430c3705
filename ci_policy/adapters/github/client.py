"""One way to build PyGithub's requester, shared by the comment gateway, `pull-request`,
`report-status` and `tune`.

- In: a token, the API base URL, a timeout and optionally a `Throttle`.
- Out: `call(requester, method, path)`: one call's JSON data, GitHub's refusal an `InputError`
  naming the call (the weekly report's issue and the scheduled runs' listings use it).
- Out: PyGithub's requester (`requestJsonAndCheck`), retrying with PyGithub's own
  `GithubRetry` (a urllib3 `Retry`), bounded (`bounded_retry`):
  - a 5xx answer or a connection error: at most `MAX_ATTEMPTS` attempts of an idempotent
    request (GET, HEAD, PUT, DELETE, OPTIONS), with exponential backoff (0 s, 2 s, 4 s,
    8 s); a POST or PATCH answered 5xx is not repeated (it may have been carried out);
  - a rate limit (403 or 429 with `Retry-After`, or a 403 whose message says "rate limit"):
    any method, after the `Retry-After` seconds (PyGithub's 60 s for a secondary rate limit
    without one, the reset time for the primary one);
  - every request waits at most `$CI_POLICY_GITHUB_MAX_WAIT` seconds in all between its
    attempts (default `DEFAULT_MAX_WAIT`, 120; 0 retries only what needs no wait): a wait
    that would pass it is not begun.
- Refused: a `$CI_POLICY_GITHUB_MAX_WAIT` that is not a number of seconds in range
  (`UsageError` naming the variable).
- Giving up raises `GitHubUnavailable` (a `CiPolicyError`: exit 1, no traceback) naming the
  request, the attempts made and the last answer: `GitHub API request GET /repos/o/r/...
  gave up after 5 attempts (last answer: HTTP 502); ...`. Any other error answer is
  PyGithub's `GithubException`, as before.
- Each retry is one line on stderr (`NOTICE`): `ci-policy: GitHub API request GET /path
  answered HTTP 502; attempt 2 of 5 now` (`after 2s`); urllib3's own retry warnings are
  silenced. The waits go through `SLEEP` (time.sleep), which the tests replace to record them.
- Throttle: the pauses PyGithub keeps between requests and between writes. Without one
  (`throttle=None` and `DEFAULT_THROTTLE` None, as in production) PyGithub keeps its own
  pauses; a caller talking to a local server (the tests' fake GitHub) passes
  `NO_THROTTLE`, or sets `DEFAULT_THROTTLE` for the clients the CLI builds.
- PyGithub is imported only when a requester is built.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from github import Auth, Github, GithubException, GithubRetry
from urllib3.exceptions import MaxRetryError

from ci_policy.errors import CiPolicyError, InputError, UsageError


@dataclass(frozen=True)
class Throttle:
    """Seconds between any two requests and between two writes; None is no pause."""

    between_requests: float | None
    between_writes: float | None


NO_THROTTLE = Throttle(None, None)
DEFAULT_THROTTLE: Throttle | None = None  # None: PyGithub's own pauses

MAX_ATTEMPTS = 5
BACKOFF_FACTOR = 1.0  # urllib3: no wait before the first retry, then 2 s, 4 s, 8 s
DEFAULT_MAX_WAIT = 120.0
MAX_WAIT_ENV = "CI_POLICY_GITHUB_MAX_WAIT"
MAX_WAIT_LIMIT = 3600.0
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})
SLEEP: Callable[[float], None] = time.sleep


def _notice(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


NOTICE: Callable[[str], None] = _notice  # one line on stderr per retry


class GitHubUnavailable(CiPolicyError):
    """A request retried until its attempts or its wait ran out; `status` the last answer (0: none)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Waited:
    """The seconds one request has waited between its attempts so far."""

    seconds: float = 0.0


def max_wait() -> float:
    """`$CI_POLICY_GITHUB_MAX_WAIT`, else `DEFAULT_MAX_WAIT`; a bad value is a usage error."""
    text = os.environ.get(MAX_WAIT_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_WAIT
    try:
        value = float(text) if len(text) <= 32 else -1.0
    except ValueError:
        value = -1.0
    if not 0 <= value <= MAX_WAIT_LIMIT:
        raise UsageError(f"must be a number of seconds in [0, {MAX_WAIT_LIMIT:g}], got {text[:40]!r}",
                         source=f"${MAX_WAIT_ENV}",
                         hint="the longest a GitHub API request may wait in all between its attempts")
    return value


def _seconds(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".") + "s"


@cache
def _bounded_retry_class() -> type:
    class BoundedRetry(GithubRetry):
        """PyGithub's retry, with a bounded wait per request and a clear error when it gives up."""

        def __init__(self, *, max_wait: float, sleep: Callable[[float], None], waited: _Waited | None = None,
                     last: str = "", **kwargs: Any) -> None:
            self.max_wait = max_wait
            self.sleeper = sleep
            self.waited = waited if waited is not None else _Waited()
            self.last = last
            super().__init__(**kwargs)

        def new(self, **kw: Any) -> Any:
            # A request's first retry starts its own count of the seconds waited.
            kw.update(max_wait=self.max_wait, sleep=self.sleeper, last=self.last,
                      waited=self.waited if self.history else _Waited())
            return super().new(**kw)

        def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
            if status_code == 403 or (status_code == 429 and has_retry_after):
                # Maybe a rate limit (GithubRetry.increment reads the answer): the request was not served.
                return bool(self.total)
            if status_code >= 500 and method.upper() not in IDEMPOTENT:
                return False  # a POST answered 5xx may have been carried out: never repeated
            return bool(super().is_retry(method, status_code, has_retry_after))

        def increment(self, method: str | None = None, url: str | None = None, response: Any = None,
                      error: Exception | None = None, _pool: Any = None, _stacktrace: Any = None) -> Any:
            last = _answer(response, error)
            try:
                retry: Any = super().increment(method, url, response, error, _pool, _stacktrace)
            except MaxRetryError:
                raise self._give_up(method, url, len(self.history) + 1, last, "") from None
            retry.last = last
            retry.request = (method, url)
            return retry

        def sleep(self, response: Any = None) -> None:
            wait = None
            if self.respect_retry_after_header and response is not None:
                wait = self.get_retry_after(response)
            if not wait:
                wait = self.get_backoff_time()
            method, url = getattr(self, "request", (None, None))
            if wait > 0 and self.waited.seconds + wait > self.max_wait:
                raise self._give_up(method, url, len(self.history), self.last,
                                    f"; waiting {_seconds(wait)} more would pass the limit of "
                                    f"{_seconds(self.max_wait)} in all (${MAX_WAIT_ENV})")
            attempt, attempts = len(self.history) + 1, len(self.history) + 1 + (self.total or 0)
            NOTICE(f"ci-policy: GitHub API request {method or '?'} {_path(url)} answered {self.last}; attempt "
                   f"{attempt} of {attempts} " + (f"after {_seconds(wait)}" if wait > 0 else "now"))
            if wait > 0:
                self.sleeper(wait)
                self.waited.seconds += wait

        def _give_up(self, method: str | None, url: str | None, attempts: int, last: str,
                     why: str) -> GitHubUnavailable:
            path = _path(url)
            waited = f"; waited {_seconds(self.waited.seconds)} between them" if self.waited.seconds else ""
            status = int(last[5:8]) if last.startswith("HTTP ") else 0
            return GitHubUnavailable(f"GitHub API request {method or '?'} {path} gave up after {attempts} "
                                     f"attempt{'s' if attempts != 1 else ''} (last answer: {last}){waited}{why}",
                                     status)

    return BoundedRetry


def _path(url: str | None) -> str:
    return urllib.parse.urlsplit(url or "").path or "?"


def _answer(response: Any, error: Exception | None) -> str:
    if response is not None:
        retry_after = response.headers.get("Retry-After") if response.headers is not None else None
        return f"HTTP {response.status}" + (f", Retry-After {retry_after}" if retry_after else "")
    return f"no answer, {type(error).__name__}" if error is not None else "no answer"


def bounded_retry(*, wait: float | None = None, attempts: int = MAX_ATTEMPTS) -> Any:
    """PyGithub's `GithubRetry`, bounded: `attempts` per request, `wait` seconds of waiting in all
    per request (default `max_wait()`), the waits through `SLEEP`."""
    cls = _bounded_retry_class()
    # urllib3 and PyGithub log each retry themselves (a raw warning after a connection error);
    # NOTICE says it in one line.
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    logging.getLogger("github.GithubRetry").setLevel(logging.WARNING)
    return cls(max_wait=max_wait() if wait is None else wait, sleep=lambda seconds: SLEEP(seconds),
               total=attempts - 1, backoff_factor=BACKOFF_FACTOR, allowed_methods=IDEMPOTENT, raise_on_status=True)


def github_requester(token: str, base_url: str, *, timeout: int, throttle: Throttle | None = None) -> Any:
    chosen = throttle or DEFAULT_THROTTLE
    pauses: dict[str, float | None] = {}
    if chosen is not None:
        pauses = {"seconds_between_requests": chosen.between_requests,
                  "seconds_between_writes": chosen.between_writes}
    gh = Github(auth=Auth.Token(token), base_url=base_url, retry=bounded_retry(), timeout=timeout,
                **pauses)  # type: ignore[arg-type]
    return gh.requester


def call(requester: Any, method: str, path: str, **kw: Any) -> Any:
    """One REST call through `requester`, its JSON data; a refusal is an `InputError` naming the
    call and GitHub's message."""
    try:
        return requester.requestJsonAndCheck(method, path, **kw)[1]
    except GithubException as exc:
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        raise InputError(f"GitHub API error {exc.status} on {method} {path}: {message or 'request failed'}") from None
