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


def perm(login: str) -> tuple:
    return ("GET", f"{P}/collaborators/{login}/permission", {}, None)


def reply(body: str) -> tuple:
    return ("POST", f"{P}/issues/{PR}/comments", {}, {"body": body})


def status_of(sha: str) -> tuple:
    return ("GET", f"{P}/commits/{sha}/statuses", {"per_page": "100", "page": "1"}, None)


def approval(sha: str, login: str) -> tuple:
    return ("POST", f"{P}/statuses/{sha}", {}, {"state": "success", "context": "ci-policy/ok-to-test",
                                                "description": f"approved by {login}", "target_url": COMMENT_URL})


def approved_reply(sha: str, prefix: str) -> tuple:
    return reply(f"> /ok-to-test {prefix}\n\nApproved `{sha}` for CI (`ci-policy/ok-to-test` on that commit; a new "
                 "push needs a new approval). Started `ci-policy.yml`.")


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
def test_a_writer_approves_exactly_the_head_and_starts_the_pipeline(fork, capsys, login, prefix):
    assert trust(fork, capsys) == "untrusted"
    fork.gh.requests.clear()
    result = fork.run(f"/ok-to-test {prefix}", login=login)
    assert (result.rc, result.err) == (0, "")
    assert result.out == f"ci-policy comment: done: approved {HEAD}; dispatched ci-policy.yml for #{PR}\n"
    assert fork.calls() == [perm(login), PULL, approval(HEAD, login), START, REACT, approved_reply(HEAD, prefix)]
    assert [(s["context"], s["state"]) for s in fork.gh.statuses[HEAD]] == [("ci-policy/ok-to-test", "success")]
    assert trust(fork, capsys) == "approved"


def test_an_app_token_also_dispatches_the_pipeline_no_label_event_carries_an_approval(fork):
    result = fork.run(f"/ok-to-test {HEAD[:16]}", "--token-kind", "app", login="maria")
    assert result.out == f"ci-policy comment: done: approved {HEAD}; dispatched ci-policy.yml for #{PR}\n"
    assert fork.calls() == [perm("maria"), PULL, approval(HEAD, "maria"), START, REACT,
                            approved_reply(HEAD, HEAD[:16])]


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
    assert fork.run(f"/ok-to-test {HEAD[:16]}", login="maria").rc == 0
    assert trust(fork, capsys) == "approved"
    fork.gh.pulls[PR].head_sha = MOVED  # the contributor pushes again
    fork.gh.requests.clear()
    assert trust(fork, capsys) == "untrusted"
    assert fork.calls() == [PULL, status_of(MOVED)]
    assert fork.run(f"/ok-to-test {MOVED[:16]}", login="maria").rc == 0
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
    assert result.out == f"ci-policy comment: done: approved {HEAD}; dispatched ci-policy.yml for #{PR}\n"
    assert fork.calls() == [perm("maria"), PULL, approval(HEAD, "maria"), START, REACT,
                            approved_reply(HEAD, HEAD[:16])]


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
