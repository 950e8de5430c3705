"""The PyGithub requester both GitHub adapters use: PyGithub's pauses unless told otherwise."""

from __future__ import annotations

from github import Consts, GithubRetry

from ci_policy.adapters.github import client
from ci_policy.adapters.github.client import NO_THROTTLE, Throttle, github_requester


def pauses(requester) -> tuple:
    return requester.kwargs["seconds_between_requests"], requester.kwargs["seconds_between_writes"]


def test_production_keeps_pygithubs_own_pauses(monkeypatch):
    monkeypatch.setattr(client, "DEFAULT_THROTTLE", None)
    requester = github_requester("t0ken", "http://127.0.0.1:9", timeout=30)
    assert pauses(requester) == (Consts.DEFAULT_SECONDS_BETWEEN_REQUESTS, Consts.DEFAULT_SECONDS_BETWEEN_WRITES)
    assert pauses(requester) == (0.25, 1.0)
    retry = requester.kwargs["retry"]
    assert isinstance(retry, GithubRetry)  # PyGithub's own retry, bounded
    assert (retry.total, retry.backoff_factor, retry.max_wait) == (4, 1.0, 120.0)
    assert requester.kwargs["timeout"] == 30


def test_a_throttle_passed_wins_over_the_default(monkeypatch):
    monkeypatch.setattr(client, "DEFAULT_THROTTLE", Throttle(2.0, 3.0))
    assert pauses(github_requester("t0ken", "http://127.0.0.1:9", timeout=60)) == (2.0, 3.0)
    assert pauses(github_requester("t0ken", "http://127.0.0.1:9", timeout=60, throttle=NO_THROTTLE)) == (None, None)
    assert pauses(github_requester("t0ken", "http://127.0.0.1:9", timeout=60,
                                   throttle=Throttle(0.5, None))) == (0.5, None)


def test_the_tests_here_run_unthrottled():
    assert client.DEFAULT_THROTTLE == NO_THROTTLE
    assert pauses(github_requester("t0ken", "http://127.0.0.1:9", timeout=60)) == (None, None)
