"""Who may run code on the accelerator runners: the trust of a pull request's head.

- In: facts GitHub reports about a pull request (a `PullRequest`): the head and base repositories' full
  names, the author's `author_association`, and the commit statuses on the head SHA, newest
  first (`CommitStatus`: id, context, state, creator's login), with the approver: the login
  of the identity the gateway writes its approvals with (`DEFAULT_APPROVER`, the login of a
  workflow's `GITHUB_TOKEN`; an App's is `NAME[bot]`).
- Out: an `Approval` (the state of the approver's latest `ci-policy/ok-to-test` status, and
  the ok-to-test statuses by anyone else, ignored) and a frozen `TrustDecision`: `trust`
  (one of `plan.trust_values.TRUST_VALUES`), its reason and warnings naming each ignored status.
- Rules, in order: a head branch of the base repository, or an author whose association
  is OWNER, MEMBER or COLLABORATOR, is `trusted`; otherwise the head is `approved` when
  the latest `ci-policy/ok-to-test` status on exactly that SHA created by the approver is
  `success`, else `untrusted`. The status names a SHA, so a new push needs a new approval;
  a status by any other creator (any integration holding `statuses: write` can write one)
  neither approves nor revokes. Logins compare case-insensitively, as GitHub's do.
- Refused: an approver that is not a GitHub login, optionally with `[bot]`: `check_login` says
  why, for the caller to report against its option.
- Repository names compare case-insensitively, as GitHub's do; a deleted head
  repository (None) is never the base repository.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

TRUSTED_ASSOCIATIONS = ("OWNER", "MEMBER", "COLLABORATOR")
APPROVAL_CONTEXT = "ci-policy/ok-to-test"
DEFAULT_APPROVER = "github-actions[bot]"  # who writes a status with a workflow's GITHUB_TOKEN
# A GitHub login: up to 39 letters, digits and hyphens, not starting with a hyphen; an App's is its
# slug with `[bot]`.
LOGIN_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}(?:\[bot\])?")


def check_login(value: str) -> str | None:
    """Why `value` cannot be the approver's login, or None."""
    if not LOGIN_RE.fullmatch(value):
        return (f"{value!r} is not a GitHub login (up to 39 letters, digits and hyphens, not starting with a "
                "hyphen, optionally followed by [bot])")
    return None


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
    # How many files GitHub counts as changed (the pull request object's `changed_files`);
    # None when the answer lacks it. Only 0 lets an empty diff mean "no change".
    changed_files: int | None = None


@dataclass(frozen=True)
class CommitStatus:
    """One commit status as GitHub lists it (None: a field the answer lacks)."""

    id: int | None
    context: str | None
    state: str | None
    creator: str | None   # the login of the identity that created it


@dataclass(frozen=True)
class Approval:
    state: str | None                      # of the approver's latest ok-to-test status; None: none
    ignored: tuple[CommitStatus, ...] = ()  # ok-to-test statuses by other creators, newest first
    unread: int | None = None              # statuses read when more remained unread (the paging bound)


@dataclass(frozen=True)
class TrustDecision:
    trust: str
    reason: str
    warnings: tuple[str, ...] = ()


def trusted_origin(head_repository: str | None, base_repository: str, author_association: str | None) -> str | None:
    """Why the PR is trusted by where it comes from, or None: then an approval decides."""
    if head_repository is not None and head_repository.casefold() == base_repository.casefold():
        return f"the head is a branch of {base_repository}"
    if author_association in TRUSTED_ASSOCIATIONS:
        role = author_association.lower()
        return f"the author is {'an' if role[0] in 'aeiou' else 'a'} {role} of {base_repository}"
    return None


def approval_of(statuses: Iterable[CommitStatus], approver: str) -> Approval:
    """The approver's latest ok-to-test state among `statuses` (newest first), and the others'."""
    state: str | None = None
    found = False
    ignored = []
    for status in statuses:
        if status.context != APPROVAL_CONTEXT:
            continue
        if status.creator is not None and status.creator.casefold() == approver.casefold():
            if not found:
                state, found = status.state, True
        else:
            ignored.append(status)
    return Approval(state, tuple(ignored))


def approval_warnings(approval: Approval, approver: str, head_sha: str) -> tuple[str, ...]:
    """One line per ignored status, and one when the paging bound left statuses unread."""
    lines = [f"ignored the {APPROVAL_CONTEXT} status {status.id} on {head_sha} created by "
             f"{status.creator or 'an unknown creator'}: only one created by {approver} counts"
             for status in approval.ignored]
    if approval.unread is not None:
        lines.append(f"read the newest {approval.unread} commit statuses of {head_sha} and stopped; "
                     f"none of them is a {APPROVAL_CONTEXT} status created by {approver}")
    return tuple(lines)


def decide_trust(origin: str | None, approval_state: str | None, head_sha: str,
                 warnings: tuple[str, ...] = ()) -> TrustDecision:
    """`origin` from `trusted_origin`; `approval_state` of the approver's latest ok-to-test status on
    `head_sha`; `warnings` from `approval_warnings`."""
    if origin is not None:
        return TrustDecision("trusted", origin)
    if approval_state == "success":
        return TrustDecision("approved", f"{APPROVAL_CONTEXT} is success on {head_sha}", warnings)
    found = "has no" if approval_state is None else f"has {approval_state!r} as its"
    return TrustDecision("untrusted", f"an outside contributor's head: {head_sha} {found} {APPROVAL_CONTEXT} status",
                         warnings)
