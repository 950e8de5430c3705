"""Who may run code on the accelerator runners: the trust of a pull request's head.

- In: facts GitHub reports about a pull request (a `PullRequest`): the head and base repositories' full
  names, the author's `author_association`, and the state of the latest
  `ci-policy/ok-to-test` commit status on the head SHA (None when it has none).
- Out: a frozen `TrustDecision`: `trust` (one of `TRUST_VALUES`) and its reason.
- Rules, in order: a head branch of the base repository, or an author whose association
  is OWNER, MEMBER or COLLABORATOR, is `trusted`; otherwise the head is `approved` when
  the latest `ci-policy/ok-to-test` status on exactly that SHA is `success`, else
  `untrusted`. The status names a SHA, so a new push needs a new approval.
- Repository names compare case-insensitively, as GitHub's do; a deleted head
  repository (None) is never the base repository.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Trust = Literal["trusted", "untrusted", "approved"]
TRUST_VALUES: tuple[str, ...] = get_args(Trust)
TRUSTED_ASSOCIATIONS = ("OWNER", "MEMBER", "COLLABORATOR")
APPROVAL_CONTEXT = "ci-policy/ok-to-test"


@dataclass(frozen=True)
class PullRequest:
    """What the pipeline reads of a pull request (the event's or the API's)."""

    number: int
    head_sha: str
    base_sha: str
    labels: tuple[str, ...]
    head_repository: str | None   # None: the fork was deleted
    base_repository: str
    author_association: str | None


@dataclass(frozen=True)
class TrustDecision:
    trust: str
    reason: str


def trusted_origin(head_repository: str | None, base_repository: str, author_association: str | None) -> str | None:
    """Why the PR is trusted by where it comes from, or None: then an approval decides."""
    if head_repository is not None and head_repository.casefold() == base_repository.casefold():
        return f"the head is a branch of {base_repository}"
    if author_association in TRUSTED_ASSOCIATIONS:
        role = author_association.lower()
        return f"the author is {'an' if role[0] in 'aeiou' else 'a'} {role} of {base_repository}"
    return None


def decide_trust(origin: str | None, approval_state: str | None, head_sha: str) -> TrustDecision:
    """`origin` from `trusted_origin`; `approval_state` of the latest ok-to-test status on `head_sha`."""
    if origin is not None:
        return TrustDecision("trusted", origin)
    if approval_state == "success":
        return TrustDecision("approved", f"{APPROVAL_CONTEXT} is success on {head_sha}")
    found = "has no" if approval_state is None else f"has {approval_state!r} as its"
    return TrustDecision("untrusted", f"an outside contributor's head: {head_sha} {found} {APPROVAL_CONTEXT} status")
