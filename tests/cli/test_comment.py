"""`ci-policy comment`: the options, the JSON format and the usage errors.

What the gateway does with a command (who may do what, which requests it sends) is tested
in tests/adapters/github/test_gateway.py; the fixtures `gh` and `world` come from tests/github_world.py.
"""

from __future__ import annotations

import json

import pytest
from github_world import COMMENT_ID, HEAD, PR, REPO, REPO_ID, P, inputs
from schema_check import assert_valid

from ci_policy.cli import main

SFT = "tests/e2e/test_megatron_sft.py"


def test_json_of_a_command_carried_out(world):
    run = world.gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="success")
    result = world.run("/run-ci-megatron", "--format", "json", login="maria")
    assert (result.rc, result.err) == (0, "")
    assert json.loads(result.out) == {
        "schema": 1, "status": "done",
        "message": f"added run-ci-megatron; re-running run {run['id']} of ci-policy.yml for {HEAD}", "exit_code": 0}
    assert result.out == json.dumps(json.loads(result.out), indent=2) + "\n"
    assert_valid("comment", result.out)


def test_json_of_a_refusal(world):
    result = world.run("/run-ci-megatron", "--format", "json", login="rita")
    assert (result.rc, result.err) == (0, "")
    assert json.loads(result.out) == {"schema": 1, "status": "refused",
                                      "message": "rita (read) is not in group ci-helpers", "exit_code": 0}
    assert_valid("comment", result.out)


def test_json_of_a_dry_run_lists_the_requests_not_sent(world):
    result = world.run(f"/rerun-test {SFT}", "--dry-run", "--format", "json", login="maria")
    assert (result.rc, result.err) == (0, "")
    data = json.loads(result.out)
    assert_valid("comment", data)
    assert list(data) == ["schema", "status", "message", "exit_code", "requests"]
    assert (data["status"], data["message"]) == ("done", f"dispatched ci-policy.yml for {SFT} at {HEAD}")
    assert [(r["method"], r["path"]) for r in data["requests"]] == [
        ("POST", f"{P}/actions/workflows/ci-policy.yml/dispatches"),
        ("POST", f"{P}/issues/comments/{COMMENT_ID}/reactions"),
        ("POST", f"{P}/issues/{PR}/comments")]
    assert data["requests"][0]["body"] == {"ref": "main", "inputs": inputs(SFT)}
    assert world.gh.dispatches == [] and world.gh.comments == [] and world.gh.reactions == []


def test_text_of_a_dry_run_keeps_requests_on_stdout_and_the_result_on_stderr(world):
    result = world.run("/run-ci-megatron", "--dry-run", login="maria")
    assert result.err == (f"ci-policy comment: done: added run-ci-megatron; dispatched ci-policy.yml for #{PR} "
                          f"(no run for {HEAD})\n")
    assert [(json.loads(line)["method"], json.loads(line)["path"]) for line in result.out.splitlines()] == [
        ("POST", f"{P}/issues/{PR}/labels"), ("POST", f"{P}/actions/workflows/ci-policy.yml/dispatches"),
        ("POST", f"{P}/issues/comments/{COMMENT_ID}/reactions"), ("POST", f"{P}/issues/{PR}/comments")]


# -- usage errors: exit 2, before any request ----------------------------------------------------------------

def comment(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["comment", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_no_event_payload(world, capsys):
    assert comment(capsys, "--trusted-repo", str(world.trusted), "--repository", REPO,
                   "--repository-id", str(REPO_ID)) == (
        2, "", "ci-policy comment: error: --event-path: no event payload\n"
               "    hint: pass --event-path FILE, or set $GITHUB_EVENT_PATH\n")
    assert world.calls() == []


@pytest.mark.parametrize("env, args, message", [
    ({}, [], "--repository: the configured repository is unknown\n"
             "    hint: pass --repository OWNER/NAME, or set $GITHUB_REPOSITORY\n"),
    ({"GITHUB_REPOSITORY": REPO}, [], "--repository-id: the configured repository's id is unknown\n"
                                      "    hint: pass --repository-id ID, or set $GITHUB_REPOSITORY_ID\n"),
    ({"GITHUB_REPOSITORY": REPO, "GITHUB_REPOSITORY_ID": "x1"}, [],
     "$GITHUB_REPOSITORY_ID: is not a number: 'x1'\n"),
    ({"GITHUB_TOKEN": ""}, ["--repository", REPO, "--repository-id", str(REPO_ID)],
     "$GITHUB_TOKEN: is empty: the comment gateway needs a token\n"
     "    hint: set GITHUB_TOKEN, or name another variable with --token-env\n"),
])
def test_missing_repository_or_token(world, capsys, monkeypatch, env, args, message):
    (world.tmp / "event.json").write_text("{}")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert comment(capsys, "--trusted-repo", str(world.trusted), "--event-path", str(world.tmp / "event.json"),
                   "--api-url", world.gh.url, *args) == (2, "", "ci-policy comment: error: " + message)
    assert world.calls() == []


def test_an_event_payload_nested_too_deeply_is_its_error(world, capsys):
    event = world.tmp / "event.json"
    event.write_text("[" * 100_000 + "]" * 100_000)
    assert comment(capsys, "--trusted-repo", str(world.trusted), "--event-path", str(event),
                   "--repository", REPO, "--repository-id", str(REPO_ID), "--api-url", world.gh.url) == (
        1, "", f"{event}: event payload {event} cannot be read as JSON: nested too deeply\nci-policy: 1 error\n")
    assert world.calls() == []


def test_the_old_flags_are_gone(world, capsys):
    for old in (["--repo", "."], ["--event", "event.json"]):
        with pytest.raises(SystemExit) as info:
            main(["comment", *old])
        assert info.value.code == 2
        assert f"unrecognized arguments: {' '.join(old)}" in capsys.readouterr().err
