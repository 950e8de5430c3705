"""`ci-policy report-status` (ci_policy/adapters/github/status.py through the CLI) against the local fake
of the GitHub REST API (tests/github_fake.py): exactly one request, the status GitHub then shows."""

from __future__ import annotations

import json
import secrets

import pytest
from schema_check import assert_valid

from ci_policy.cli import main

REPO = "acme/minirl"
SHA = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
RUN = "https://github.com/acme/minirl/actions/runs/9001"


@pytest.fixture
def token(monkeypatch) -> str:
    value = "ghs_" + secrets.token_hex(18)
    monkeypatch.setenv("GITHUB_TOKEN", value)
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    return value


def report(capsys, gh, *args: str) -> tuple[int, str, str]:
    rc = main(["report-status", "--api-url", gh.url, *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_result_is_reported_on_the_head_with_a_link_to_the_run(capsys, gh, token):
    rc, out, err = report(capsys, gh, "--sha", SHA, "--context", "ci-policy/rerun-test", "--state", "failure",
                          "--description", "tests/e2e/test_megatron_sft.py failed", "--target-url", RUN,
                          "--format", "json")
    assert (rc, err) == (0, "")
    assert_valid("report-status", out)
    assert json.loads(out) == {"schema": 1, "sha": SHA, "context": "ci-policy/rerun-test", "state": "failure",
                               "description": "tests/e2e/test_megatron_sft.py failed", "target_url": RUN}
    assert gh.calls() == [("POST", f"/repos/{REPO}/statuses/{SHA}", {}, {
        "state": "failure", "context": "ci-policy/rerun-test", "description": "tests/e2e/test_megatron_sft.py failed",
        "target_url": RUN})]
    assert gh.requests[0].authorization == f"token {token}"
    assert [(s["context"], s["state"], s["target_url"]) for s in gh.statuses[SHA]] == [
        ("ci-policy/rerun-test", "failure", RUN)]


def test_pending_then_success_the_latest_is_what_github_shows(capsys, gh, token):
    for state in ("pending", "success"):
        assert report(capsys, gh, "--sha", SHA, "--context", "ci-policy/result", "--state", state,
                      "--description", f"the pipeline: {state}", "--repository", REPO)[0] == 0
    assert capsys.readouterr() == ("", "")
    assert [r.body["state"] for r in gh.requests] == ["pending", "success"]
    assert "target_url" not in gh.requests[0].body
    assert [s["state"] for s in gh.statuses[SHA]] == ["pending", "success"]


def test_text_output_and_a_long_description_cut_to_githubs_limit(capsys, gh, token):
    rc, out, _err = report(capsys, gh, "--sha", SHA, "--context", "ci-policy/result", "--state", "success",
                           "--description", "x" * 200 + "\nline")
    assert (rc, out) == (0, f"ci-policy report-status: success ci-policy/result on {SHA}: {'x' * 137}...\n")
    assert gh.requests[0].body["description"] == "x" * 137 + "..."


@pytest.mark.parametrize("args, message", [
    (["--sha", SHA[:12]], f"argument --sha: '{SHA[:12]}' is not a 40-hex commit SHA"),
    (["--sha", SHA.upper()], f"argument --sha: '{SHA.upper()}' is not a 40-hex commit SHA"),
    (["--context", "ci-policy/result\n::error::x"], "argument --context: 'ci-policy/result\\n::error::x' is not a "
                                                    "status context"),
    (["--context", ""], "argument --context: '' is not a status context"),
    (["--state", "skipped"], "argument --state: invalid choice: 'skipped' (choose from "),  # quoting: Python's
    (["--target-url", "javascript:alert(1)"], "argument --target-url: 'javascript:alert(1)' is not an http(s) URL"),
])
def test_bad_arguments_are_usage_errors_before_any_request(capsys, gh, token, args, message):
    base = {"--sha": SHA, "--context": "ci-policy/result", "--state": "success", "--description": "ok"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    with pytest.raises(SystemExit) as info:
        main(["report-status", "--api-url", gh.url, *[x for kv in base.items() for x in kv]])
    assert info.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == f"ci-policy report-status: error: {message}" or (
        message.endswith("(choose from ") and last.startswith(f"ci-policy report-status: error: {message}"))
    assert gh.calls() == []


def test_no_repository_or_token(capsys, gh, token, monkeypatch):
    args = ("--sha", SHA, "--context", "ci-policy/result", "--state", "success", "--description", "ok")
    monkeypatch.delenv("GITHUB_REPOSITORY")
    assert report(capsys, gh, *args) == (2, "", "ci-policy report-status: error: --repository: the repository is "
                                                "unknown\n    hint: pass --repository OWNER/REPO, or set "
                                                "$GITHUB_REPOSITORY\n")
    monkeypatch.setenv("GITHUB_TOKEN", "")
    assert report(capsys, gh, *args, "--repository", REPO) == (
        2, "", "ci-policy report-status: error: $GITHUB_TOKEN: is empty: reporting a status needs a token\n"
               "    hint: set GITHUB_TOKEN, or name another variable with --token-env\n")
    assert gh.calls() == []


def test_an_api_error_exits_1(capsys, gh, token):
    gh.fail("POST", f"/repos/{REPO}/statuses/{SHA}", 403, "Resource not accessible by integration")
    assert report(capsys, gh, "--sha", SHA, "--context", "ci-policy/result", "--state", "success",
                  "--description", "ok") == (1, "", "ci-policy report-status: error: GitHub API error 403: Resource "
                                                    "not accessible by integration\n")


def test_a_502_to_the_post_is_not_repeated_since_the_status_may_have_been_created(capsys, gh, token, github_sleeps):
    gh.fail_next("POST", f"/repos/{REPO}/statuses/{SHA}", 502, message="Server Error")
    assert report(capsys, gh, "--sha", SHA, "--context", "ci-policy/result", "--state", "success",
                  "--description", "ok") == (1, "", "ci-policy report-status: error: GitHub API error 502: Server "
                                                    "Error\n")
    assert [c[:2] for c in gh.calls()] == [("POST", f"/repos/{REPO}/statuses/{SHA}")]
    assert github_sleeps == []


def test_a_secondary_rate_limit_on_the_post_is_waited_out_then_the_status_is_created(capsys, gh, token,
                                                                                     github_sleeps):
    gh.rate_limit_next("POST", f"/repos/{REPO}/statuses/{SHA}", 30)
    rc, out, err = report(capsys, gh, "--sha", SHA, "--context", "ci-policy/result", "--state", "success",
                          "--description", "ok")
    assert (rc, err) == (0, f"ci-policy: GitHub API request POST /repos/{REPO}/statuses/{SHA} answered HTTP 403, "
                            "Retry-After 30; attempt 2 of 5 after 30s\n")
    body = {"state": "success", "context": "ci-policy/result", "description": "ok"}
    assert gh.calls() == [("POST", f"/repos/{REPO}/statuses/{SHA}", {}, body)] * 2
    assert github_sleeps == [30.0]
