"""`ci-policy report --publish-issue`: the Markdown report as the repository's one health issue,
against the local GitHub fake with the issues endpoints (tests/github_issue_fake.py), through
PyGithub. The first publication opens the issue with its label; the next finds it by label and
title and replaces its body; a pull request or another issue with the label is never taken for
it. Requests are asserted exactly.
"""

from __future__ import annotations

import secrets

import pytest
from github_issue_fake import IssueFakeGitHub
from helpers import ROOT, run_cli

from ci_policy.adapters.github.health_issue import CUT, MAX_BODY, fitted
from ci_policy.cli.main import main

REPO = "acme/minirl"
P = f"/repos/{REPO}"
LIST = ("GET", f"{P}/issues", {"state": "open", "labels": "ci-health", "per_page": "100"}, None)


@pytest.fixture
def gh(monkeypatch):
    fake = IssueFakeGitHub("acme", "minirl").start()
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_" + secrets.token_hex(18))
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("publish") / "history.sqlite"
    assert main(["history", "import", "--store", str(path), str(ROOT / "tests" / "data" / "history" / "runs")]) == 0
    return path


def report(store, gh, capsys, *extra: str) -> tuple[int, str, str]:
    return run_cli(["report", "--store", str(store), "--today", "2026-11-29", "--since", "6w", "--repository", REPO,
                    "--format", "markdown", "--publish-issue", "--api-url", gh.url, *extra], capsys)


def test_the_first_report_opens_the_issue_and_the_next_replaces_its_body(store, gh, capsys):
    rc, markdown, err = report(store, gh, capsys)
    assert rc == 0
    assert err == "ci-policy report: opened issue #71 https://github.com/acme/minirl/issues/71\n"
    assert gh.calls() == [LIST, ("POST", f"{P}/issues", {}, {"title": "CI health report", "body": markdown,
                                                             "labels": ["ci-health"]})]
    gh.requests.clear()
    rc, again, err = report(store, gh, capsys, "--since", "1w")
    assert rc == 0
    assert err == "ci-policy report: updated issue #71 https://github.com/acme/minirl/issues/71\n"
    assert gh.calls() == [LIST, ("PATCH", f"{P}/issues/71", {}, {"body": again})]
    assert gh.issues[71]["body"] == again != markdown


def test_a_pull_request_or_another_titled_issue_with_the_label_is_not_the_report(store, gh, capsys):
    gh.add_issue("CI health report", "a pull request", labels=("ci-health",), pull=True)       # 71
    gh.add_issue("Flaky test_rollout", "an issue", labels=("ci-health",))                      # 72
    gh.add_issue("CI health report", "closed last month", labels=("ci-health",), state="closed")  # 73
    gh.add_issue("CI health report", "last week's", labels=("ci-health",))                     # 74
    rc, markdown, err = report(store, gh, capsys)
    assert (rc, err) == (0, "ci-policy report: updated issue #74 https://github.com/acme/minirl/issues/74\n")
    assert gh.calls() == [LIST, ("PATCH", f"{P}/issues/74", {}, {"body": markdown})]
    assert [gh.issues[n]["body"] for n in (71, 72, 73)] == ["a pull request", "an issue", "closed last month"]


def test_an_api_error_is_an_input_error_and_no_token_a_usage_error(store, gh, capsys, monkeypatch):
    gh.fail("GET", f"{P}/issues", 403, "Resource not accessible by integration")
    rc, _, err = report(store, gh, capsys)
    assert rc == 1
    assert err.endswith("GitHub API error 403 on GET /repos/acme/minirl/issues: Resource not accessible by "
                        "integration\nci-policy: 1 error\n")
    monkeypatch.delenv("GITHUB_TOKEN")
    gh.requests.clear()
    rc, _, err = report(store, gh, capsys)
    assert rc == 2
    assert "$GITHUB_TOKEN: is empty: publishing the report needs a token" in err
    assert gh.calls() == []


def test_a_body_past_githubs_limit_is_cut_with_a_line_saying_so():
    assert fitted("x" * MAX_BODY) == "x" * MAX_BODY
    cut = fitted("x" * (MAX_BODY + 1))
    assert len(cut) == MAX_BODY and cut.endswith(CUT)
