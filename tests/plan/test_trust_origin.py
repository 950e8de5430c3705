"""The trust of a pull request's head (ci_policy/plan/trust.py)."""

from __future__ import annotations

import pytest

from ci_policy.plan.trust import (
    DEFAULT_APPROVER,
    Approval,
    CommitStatus,
    TrustDecision,
    approval_of,
    approval_warnings,
    check_login,
    decide_trust,
    trusted_origin,
)

SHA = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
OUTSIDE = f"an outside contributor's head: {SHA}"


@pytest.mark.parametrize("head, association, expected", [
    ("acme/minirl", "NONE", "the head is a branch of acme/minirl"),
    ("Acme/MiniRL", "FIRST_TIME_CONTRIBUTOR", "the head is a branch of acme/minirl"),
    ("someone/minirl", "OWNER", "the author is an owner of acme/minirl"),
    ("someone/minirl", "MEMBER", "the author is a member of acme/minirl"),
    ("someone/minirl", "COLLABORATOR", "the author is a collaborator of acme/minirl"),
    (None, "MEMBER", "the author is a member of acme/minirl"),
    ("someone/minirl", "CONTRIBUTOR", None),
    ("someone/minirl", "member", None),
    ("acme/minirl-fork", None, None),
    (None, "NONE", None),
])
def test_trusted_origin(head, association, expected):
    assert trusted_origin(head, "acme/minirl", association) == expected


def test_an_origin_decides_whatever_the_approval():
    for state in (None, "success", "failure"):
        assert decide_trust("the head is a branch of acme/minirl", state, SHA) == TrustDecision(
            "trusted", "the head is a branch of acme/minirl")


@pytest.mark.parametrize("state, expected", [
    ("success", TrustDecision("approved", f"ci-policy/ok-to-test is success on {SHA}")),
    (None, TrustDecision("untrusted", f"{OUTSIDE} has no ci-policy/ok-to-test status")),
    ("pending", TrustDecision("untrusted", f"{OUTSIDE} has 'pending' as its ci-policy/ok-to-test status")),
    ("failure", TrustDecision("untrusted", f"{OUTSIDE} has 'failure' as its ci-policy/ok-to-test status")),
])
def test_without_an_origin_only_a_success_approval_on_the_head_approves(state, expected):
    assert decide_trust(None, state, SHA) == expected


def ok(sid: int, state: str, creator: str | None, context: str = "ci-policy/ok-to-test") -> CommitStatus:
    return CommitStatus(sid, context, state, creator)


@pytest.mark.parametrize("statuses, expected", [
    ([], Approval(None)),
    ([ok(3, "success", "github-actions[bot]")], Approval("success")),
    ([ok(3, "failure", "GitHub-Actions[bot]"), ok(2, "success", "github-actions[bot]")], Approval("failure")),
    ([ok(3, "success", "mallory"), ok(2, "failure", "github-actions[bot]"), ok(1, "success", None)],
     Approval("failure", (ok(3, "success", "mallory"), ok(1, "success", None)))),
    ([ok(4, "success", "github-actions[bot]", "ci-policy/result"), ok(3, "success", "ci-app[bot]")],
     Approval(None, (ok(3, "success", "ci-app[bot]"),))),
])
def test_only_the_approvers_latest_ok_to_test_status_counts(statuses, expected):
    assert approval_of(statuses, "github-actions[bot]") == expected


def test_each_ignored_status_is_a_warning_and_so_is_the_paging_bound():
    found = Approval(None, (ok(7, "success", "mallory"), ok(5, "success", None)), unread=1000)
    assert approval_warnings(found, "acme-ci[bot]", SHA) == (
        f"ignored the ci-policy/ok-to-test status 7 on {SHA} created by mallory: only one created by acme-ci[bot] "
        "counts",
        f"ignored the ci-policy/ok-to-test status 5 on {SHA} created by an unknown creator: only one created by "
        "acme-ci[bot] counts",
        f"read the newest 1000 commit statuses of {SHA} and stopped; none of them is a ci-policy/ok-to-test status "
        "created by acme-ci[bot]")
    assert decide_trust(None, "success", SHA, ("w",)) == TrustDecision(
        "approved", f"ci-policy/ok-to-test is success on {SHA}", ("w",))
    assert decide_trust("the head is a branch of acme/minirl", None, SHA, ("w",)).warnings == ()


@pytest.mark.parametrize("login, valid", [
    (DEFAULT_APPROVER, True), ("acme-ci[bot]", True), ("octocat", True), ("a" * 39, True), ("x1", True),
    ("", False), ("-x", False), ("a" * 40, False), ("a b", False), ("acme[bot][bot]", False),
    ("acme[BOT]", False), ("acme_ci", False), ("acme/ci", False), ("acme\n", False),
])
def test_an_approver_is_a_github_login(login, valid):
    assert (check_login(login) is None) == valid
