"""Outside contributors' heads and `/ok-to-test <sha>`: the gateway's approvals
(ci_policy/adapters/github/gateway.py) and what `ci-policy pull-request` and `/rerun-test` make of them,
through the CLI against the local fake of the GitHub REST API (tests/github_fake.py).

The fixtures `gh` and `world` come from tests/github_world.py; here the world's pull request is an
outside contributor's fork PR (author_association CONTRIBUTOR).
"""

from __future__ import annotations

import json

import pytest
from github_fake import git_blob_sha
from github_world import COMMENT_ID, HEAD, PR, REPO, P, inputs

from ci_policy.adapters.github.gateway import run_name
from ci_policy.adapters.github.grammar import USAGE
from ci_policy.cli import main

MOVED = "feedfacecafebeef00112233445566778899aabb"
COMMENT_URL = f"https://github.com/{REPO}/pull/{PR}#issuecomment-{COMMENT_ID}"
PULL = ("GET", f"{P}/pulls/{PR}", {}, None)
REACT = ("POST", f"{P}/issues/comments/{COMMENT_ID}/reactions", {}, {"content": "+1"})
START = ("POST", f"{P}/actions/workflows/ci-policy.yml/dispatches", {},
         {"ref": "main", "inputs": {"pull-request": "7"}})


def find_run(sha: str = HEAD) -> tuple:
    return ("GET", f"{P}/actions/workflows/ci-policy.yml/runs", {"head_sha": sha, "event": "pull_request",
                                                               "per_page": "1"}, None)


def post_run(run: dict, what: str) -> tuple:
    return ("POST", f"{P}/actions/runs/{run['id']}/{what}", {}, None)


def perm(login: str) -> tuple:
    return ("GET", f"{P}/collaborators/{login}/permission", {}, None)


def reply(body: str) -> tuple:
    return ("POST", f"{P}/issues/{PR}/comments", {}, {"body": body})


def status_of(sha: str) -> tuple:
    return ("GET", f"{P}/commits/{sha}/statuses", {"per_page": "100", "page": "1"}, None)


def approval(sha: str, login: str) -> tuple:
    return ("POST", f"{P}/statuses/{sha}", {}, {"state": "success", "context": "ci-policy/ok-to-test",
                                                "description": f"approved by {login}", "target_url": COMMENT_URL})


def approved_reply(sha: str, prefix: str, started: str) -> tuple:
    return reply(f"> /ok-to-test {prefix}\n\nApproved `{sha}` for CI (`ci-policy/ok-to-test` on that commit; a new "
                 f"push needs a new approval). {started}")


def rerunning(run: dict, sha: str = HEAD) -> str:
    return f"Re-running [run {run['id']}]({run['html_url']}) for `{sha[:12]}`."


@pytest.fixture
def fork(world):
    world.gh.pulls[PR].author_association = "CONTRIBUTOR"
    return world


def trust(world, capsys) -> str:
    """What the pipeline of a run dispatched now decides: `ci-policy pull-request --number`."""
    world.capsys.readouterr()
    assert main(["pull-request", "--number", str(PR), "--repository", REPO, "--api-url", world.gh.url,
                 "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["trust"]


# -- /ok-to-test ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("login, prefix", [("maria", HEAD[:16]), ("wendy", HEAD[:24]), ("ada", HEAD)])
def test_a_writer_approves_exactly_the_head_and_reruns_its_pull_request_run(fork, capsys, login, prefix):
    # The head's pull_request run failed awaiting approval; re-run whole, its plan job reads the
    # approval through the API, and its checks (pr-test / result) land on the PR head again.
    run = fork.gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="failure")
    assert trust(fork, capsys) == "untrusted"
    fork.gh.requests.clear()
    result = fork.run(f"/ok-to-test {prefix}", login=login)
    assert (result.rc, result.err) == (0, "")
    assert result.out == f"ci-policy comment: done: approved {HEAD}; re-running run {run['id']} of ci-policy.yml " \
                         f"for {HEAD}\n"
    assert fork.calls() == [perm(login), PULL, approval(HEAD, login), find_run(), post_run(run, "rerun"), REACT,
                            approved_reply(HEAD, prefix, rerunning(run))]
    assert [(s["context"], s["state"]) for s in fork.gh.statuses[HEAD]] == [("ci-policy/ok-to-test", "success")]
    assert fork.gh.full_reruns == [run["id"]] and fork.gh.dispatches == []
    assert trust(fork, capsys) == "approved"


def test_an_app_token_also_reruns_the_run_no_label_event_carries_an_approval(fork):
    run = fork.gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="failure")
    result = fork.run(f"/ok-to-test {HEAD[:16]}", "--token-kind", "app", login="maria")
    assert result.out == f"ci-policy comment: done: approved {HEAD}; re-running run {run['id']} of ci-policy.yml " \
                         f"for {HEAD}\n"
    assert fork.calls() == [perm("maria"), PULL, approval(HEAD, "maria"), find_run(), post_run(run, "rerun"), REACT,
                            approved_reply(HEAD, HEAD[:16], rerunning(run))]


def test_a_first_time_contributors_held_run_is_approved_not_rerun(fork):
    # GitHub holds a first-time contributor's fork run (action_required) until a maintainer approves it.
    run = fork.gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="action_required")
    result = fork.run(f"/ok-to-test {HEAD[:16]}", login="maria")
    assert result.out == f"ci-policy comment: done: approved {HEAD}; approved run {run['id']} of ci-policy.yml " \
                         f"for {HEAD}\n"
    assert fork.calls() == [perm("maria"), PULL, approval(HEAD, "maria"), find_run(), post_run(run, "approve"),
                            REACT, approved_reply(HEAD, HEAD[:16], f"Approved the waiting [run {run['id']}]"
                                                  f"({run['html_url']}) for `{HEAD[:12]}`: it runs now.")]
    assert fork.gh.approved_runs == [run["id"]] and fork.gh.full_reruns == []


def test_with_no_run_for_the_head_the_pipeline_is_dispatched_and_reports_on_the_head(fork):
    fork.gh.add_run("ci-policy.yml", head_sha=MOVED, conclusion="failure")  # another head's run: left alone
    result = fork.run(f"/ok-to-test {HEAD[:16]}", login="maria")
    assert result.out == f"ci-policy comment: done: approved {HEAD}; dispatched ci-policy.yml for #{PR} " \
                         f"(no run for {HEAD})\n"
    assert fork.calls() == [perm("maria"), PULL, approval(HEAD, "maria"), find_run(), START, REACT,
                            approved_reply(HEAD, HEAD[:16], (
                                f"No `ci-policy.yml` run exists for `{HEAD[:12]}`, so one was dispatched on the "
                                f"default branch: its checks show on that branch's head, and it reports "
                                f"`ci-policy/result` on `{HEAD[:12]}`."))]


def test_a_run_still_in_progress_is_not_rerun_and_the_reply_asks_to_approve_again(fork):
    run = fork.gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion=None, status="in_progress")
    result = fork.run(f"/ok-to-test {HEAD[:16]}", login="maria")
    assert result.out == f"ci-policy comment: done: approved {HEAD}; run {run['id']} of ci-policy.yml for {HEAD} " \
                         "is still running; not re-run\n"
    assert fork.calls()[-2:] == [REACT, approved_reply(HEAD, HEAD[:16], (
        f"[run {run['id']}]({run['html_url']}) for `{HEAD[:12]}` is still running, so it was not re-run: comment "
        "again once it has finished."))]
    assert fork.gh.full_reruns == []


def test_a_moved_head_is_refused_naming_the_current_head_and_no_status_is_written(fork):
    fork.gh.pulls[PR].head_sha = MOVED  # pushed after the maintainer reviewed HEAD
    result = fork.run(f"/ok-to-test {HEAD[:16]}", login="maria")
    assert (result.rc, result.out) == (0, f"ci-policy comment: refused: {HEAD[:16]} is not the current head "
                                          f"{MOVED}\n")
    assert fork.calls() == [perm("maria"), PULL, reply(
        f"> /ok-to-test {HEAD[:16]}\n\n`{HEAD[:16]}` is not the pull request's current head, `{MOVED}`. Review the "
        f"new commits, then comment `/ok-to-test {MOVED}`.")]
    assert fork.gh.statuses == {} and fork.gh.dispatches == []


def test_githubs_short_sha_is_refused_even_when_the_current_head_shares_it(fork):
    """The head is read when the gateway runs, after the comment: a fork author who pushes a commit
    crafted to share the reviewed commit's 7-digit short SHA in between must not get it approved."""
    crafted = HEAD[:7] + "f" * 33  # shares HEAD's short SHA, not its content
    fork.gh.pulls[PR].head_sha = crafted
    result = fork.run(f"/ok-to-test {HEAD[:7]}", login="maria")
    assert (result.rc, result.out) == (0, "ci-policy comment: refused: not exactly one command\n")
    assert fork.calls() == [perm("maria"), reply(
        f"`{HEAD[:7]}` is not a commit SHA prefix (16 to 40 lower-case hex digits; the full SHA of the head you "
        f"reviewed). {USAGE}")]
    assert fork.gh.statuses == {} and fork.gh.dispatches == []


def test_a_new_push_needs_a_new_approval(fork, capsys):
    old = fork.gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="failure")
    assert fork.run(f"/ok-to-test {HEAD[:16]}", login="maria").rc == 0
    assert trust(fork, capsys) == "approved"
    fork.gh.pulls[PR].head_sha = MOVED  # the contributor pushes again: a new pull_request run
    new = fork.gh.add_run("ci-policy.yml", head_sha=MOVED, conclusion="failure")
    fork.gh.requests.clear()
    assert trust(fork, capsys) == "untrusted"
    assert fork.calls() == [PULL, status_of(MOVED)]
    fork.gh.requests.clear()
    assert fork.run(f"/ok-to-test {MOVED[:16]}", login="maria").rc == 0
    # The new head's run is re-run; the old head's run (approved, re-run once) is never re-run again.
    assert fork.calls()[3:5] == [find_run(MOVED), post_run(new, "rerun")]
    assert fork.gh.full_reruns == [old["id"], new["id"]]
    assert trust(fork, capsys) == "approved"
    assert sorted(fork.gh.statuses) == sorted([HEAD, MOVED])


@pytest.mark.parametrize("login, permission", [("tom", "triage"), ("hank", "read"), ("rita", "read"),
                                               ("mallory", "read")])
def test_only_write_maintain_or_admin_may_approve_whatever_the_groups_say(fork, login, permission):
    # hank is on the ci-helpers allowlist: enough to add labels, not to send a fork's code to a GPU.
    result = fork.run(f"/ok-to-test {HEAD[:16]}", login=login)
    assert (result.rc, result.out) == (0, f"ci-policy comment: refused: {login} ({permission}) may not approve\n")
    assert fork.calls() == [perm(login), reply(
        f"> /ok-to-test {HEAD[:16]}\n\n@{login} is not allowed to use `/ok-to-test` (it needs admin, maintain, write "
        f"permission; yours is {permission}).")]
    assert fork.gh.statuses == {}


def test_without_a_pipeline_workflow_in_the_policy_the_approval_starts_the_gateways_caller(fork):
    """The policy names no pipeline: the gateway dispatches its own (--pipeline-workflow, by
    default ci-policy.yml, the one caller file)."""
    data = fork.example_policy()
    del data["pipeline"]
    fork.policy(data)
    result = fork.run(f"/ok-to-test {HEAD[:16]}", login="maria")
    assert result.out == f"ci-policy comment: done: approved {HEAD}; dispatched ci-policy.yml for #{PR} " \
                         f"(no run for {HEAD})\n"
    assert fork.calls() == [perm("maria"), PULL, approval(HEAD, "maria"), find_run(), START, REACT,
                            approved_reply(HEAD, HEAD[:16], (
                                f"No `ci-policy.yml` run exists for `{HEAD[:12]}`, so one was dispatched on the "
                                f"default branch: its checks show on that branch's head, and it reports "
                                f"`ci-policy/result` on `{HEAD[:12]}`."))]


def test_ok_to_test_is_ignored_by_a_job_that_does_not_carry_it_out(fork):
    result = fork.run(f"/ok-to-test {HEAD[:16]}", "--commands", "add_label,clear_labels", login="maria")
    assert result.out == f"ci-policy comment: ignored: /ok-to-test {HEAD[:16]} is handled by another job\n"
    assert fork.calls() == []


# -- /rerun-test of an outside contributor's head ------------------------------------------------------------

SFT = "tests/e2e/test_megatron_sft.py"


def test_rerun_test_of_an_unapproved_fork_head_is_refused(fork):
    result = fork.run(f"/rerun-test {SFT}", login="maria")
    assert (result.rc, result.out) == (0, f"ci-policy comment: refused: untrusted head {HEAD} not approved\n")
    assert fork.calls() == [perm("maria"), PULL, status_of(HEAD), reply(
        f"> /rerun-test {SFT}\n\n`{HEAD}` is an outside contributor's head that is not approved for CI: a "
        f"maintainer reviews it and comments `/ok-to-test {HEAD}` first.")]
    assert fork.gh.dispatches == []


def test_rerun_test_of_an_approved_fork_head_is_dispatched(fork):
    assert fork.run(f"/ok-to-test {HEAD[:16]}", login="maria").rc == 0
    fork.gh.requests.clear()
    result = fork.run(f"/rerun-test {SFT}", login="maria")
    assert result.out == f"ci-policy comment: done: dispatched ci-policy.yml for {SFT} at {HEAD}\n"
    (run,) = [r for r in fork.gh.runs["ci-policy.yml"] if r["display_title"] == run_name(PR, SFT, HEAD)]
    assert fork.calls()[:6] == [
        perm("maria"), PULL, status_of(HEAD), ("GET", f"{P}/git/trees/{HEAD}", {"recursive": "1"}, None),
        ("GET", f"{P}/git/blobs/{git_blob_sha(fork.pr_bytes('labels.py'))}", {}, None),
        ("GET", f"{P}/git/blobs/{git_blob_sha(fork.pr_bytes(SFT))}", {}, None)]
    assert fork.gh.dispatches[-1] == {"workflow": "ci-policy.yml", "ref": "main", "inputs": inputs(SFT)}


def test_rerun_test_of_an_approval_on_an_older_head_is_refused(fork):
    assert fork.run(f"/ok-to-test {HEAD[:16]}", login="maria").rc == 0
    fork.gh.pulls[PR].head_sha = MOVED
    fork.gh.add_commit(MOVED, fork.pr)
    fork.gh.requests.clear()
    result = fork.run(f"/rerun-test {SFT}", login="maria")
    assert result.out == f"ci-policy comment: refused: untrusted head {MOVED} not approved\n"
    assert fork.calls() == [perm("maria"), PULL, status_of(MOVED), reply(
        f"> /rerun-test {SFT}\n\n`{MOVED}` is an outside contributor's head that is not approved for CI: a "
        f"maintainer reviews it and comments `/ok-to-test {MOVED}` first.")]


# -- approval by identity ------------------------------------------------------------------------------------

def test_rerun_test_ignores_an_approval_another_identity_created_and_says_so(fork):
    forged = fork.gh.add_status(HEAD, "success", "ci-policy/ok-to-test", creator="mallory",
                                description="approved by maria")
    result = fork.run(f"/rerun-test {SFT}", login="maria")
    assert (result.rc, result.out) == (0, f"ci-policy comment: refused: untrusted head {HEAD} not approved\n")
    assert result.err == (f"ci-policy comment: warning: ignored the ci-policy/ok-to-test status {forged['id']} on "
                          f"{HEAD} created by mallory: only one created by github-actions[bot] counts\n")
    assert fork.calls()[:3] == [perm("maria"), PULL, status_of(HEAD)]
    assert fork.gh.dispatches == []


def test_a_gateway_with_an_app_identity_counts_its_own_approvals_only(fork, capsys):
    fork.gh.status_creator = "acme-ci[bot]"  # the gateway's token is the App's
    assert fork.run(f"/ok-to-test {HEAD[:16]}", "--approver", "acme-ci[bot]", login="maria").rc == 0
    assert [s["creator"]["login"] for s in fork.gh.statuses[HEAD]] == ["acme-ci[bot]"]
    # A pipeline told the default identity does not take the App's approval ...
    assert trust(fork, capsys) == "untrusted"
    # ... and a gateway told the App's does.
    fork.gh.requests.clear()
    result = fork.run(f"/rerun-test {SFT}", "--approver", "acme-ci[bot]", login="maria")
    assert result.out == f"ci-policy comment: done: dispatched ci-policy.yml for {SFT} at {HEAD}\n"
    assert result.err == ""
    result = fork.run(f"/rerun-test {SFT}", login="maria")
    assert result.out == f"ci-policy comment: refused: untrusted head {HEAD} not approved\n"


def test_a_later_failure_by_the_gateways_identity_revokes_for_rerun_test(fork):
    assert fork.run(f"/ok-to-test {HEAD[:16]}", login="maria").rc == 0
    fork.gh.add_status(HEAD, "failure", "ci-policy/ok-to-test", creator="github-actions[bot]")
    result = fork.run(f"/rerun-test {SFT}", login="maria")
    assert result.out == f"ci-policy comment: refused: untrusted head {HEAD} not approved\n"


def test_the_gateway_refuses_an_approver_that_is_no_login(fork):
    result = fork.run(f"/rerun-test {SFT}", "--approver", "acme ci", login="maria")
    assert (result.rc, result.out) == (2, "")
    assert result.err.startswith("ci-policy comment: error: --approver: 'acme ci' is not a GitHub login")
    assert fork.calls() == []
