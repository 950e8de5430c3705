"""The trust of a pull request's head (ci_policy/plan/trust.py)."""

from __future__ import annotations

import pytest

from ci_policy.plan.trust import TrustDecision, decide_trust, trusted_origin

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
