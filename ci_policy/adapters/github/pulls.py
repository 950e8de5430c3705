"""`ci-policy pull-request`: a pull request as the pipeline needs it (an adapter, through PyGithub).

- In: a `pull_request` event payload, or a PR number read through the API
  (`GET /repos/{o}/{r}/pulls/{n}`, so a dispatched run sees the PR's current head and
  labels); the configured repository; an `Api` client.
- Out: a `plan.trust.PullRequest` (number, head and base SHA, labels, head and base repository,
  `author_association`), its `TrustDecision` (`plan.trust`) and, on request, its diff.
- The approval is read only for a PR whose origin does not already make it trusted, with
  `GET /repos/{o}/{r}/commits/{head sha}/statuses` (per_page 100, page 1, 2, ...): the list
  GitHub returns newest first, each status naming its `creator`, where the combined status
  keeps one status per context and names no creator. Paging stops at the approver's first
  ok-to-test status, at a short page, or after `MAX_STATUS_PAGES` pages.
- The diff: the API's unified diff
  (`Accept: application/vnd.github.diff`) turned into the name-status bytes
  `plan --diff` reads (`read.unified`).
- A diff the API does not give (too large, an error) or cannot be read is unavailable
  with a reason, never an empty diff: the plan then runs every runnable stage. An empty
  diff is "no change" (`read.diff.NO_CHANGES`) only for a pull request whose own object
  counts 0 changed files (`changed_files`, in the REST answer and the event payload alike);
  without that count, or with another, it is unavailable.
- Refused: as an `InputError` naming the payload or request: a payload or API answer without a
  number, 40-hex head and base SHAs or base repository.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ci_policy.adapters.github.api import Api, ApiError
from ci_policy.errors import InputError
from ci_policy.plan.trust import (
    DEFAULT_APPROVER,
    Approval,
    CommitStatus,
    PullRequest,
    TrustDecision,
    approval_of,
    approval_warnings,
    decide_trust,
    trusted_origin,
)
from ci_policy.read.diff import NO_CHANGES
from ci_policy.read.unified import name_status_from_unified

SHA_RE = re.compile(r"[0-9a-f]{40}")
DIFF_MEDIA_TYPE = "application/vnd.github.diff"
STATUS_PAGE = 100       # GitHub's largest page
MAX_STATUS_PAGES = 10   # 1,000 statuses: GitHub keeps at most 1,000 per SHA and context


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def pull_request_of(data: Any, what: str, path: str | None = None) -> PullRequest:
    """The fields of a pull request object (an event's `pull_request`, or the API's answer)."""
    number, head, base = _get(data, "number"), _get(data, "head", "sha"), _get(data, "base", "sha")
    base_repository = _get(data, "base", "repo", "full_name")
    problems = []
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        problems.append("no pull request number")
    for name, sha in (("head", head), ("base", base)):
        if not isinstance(sha, str) or not SHA_RE.fullmatch(sha):
            problems.append(f"no 40-hex {name} SHA")
    if not isinstance(base_repository, str):
        problems.append("no base repository")
    listed = _get(data, "labels")
    if listed is not None and not isinstance(listed, list):
        problems.append("labels is not a list")
    if problems:
        raise InputError(f"{what}: {', '.join(problems)}", path=path,
                         hint="pass the payload of a pull_request event, or --number N")
    labels = tuple(name for name in (_get(lab, "name") for lab in listed or []) if isinstance(name, str))
    head_repository = _get(data, "head", "repo", "full_name")
    association = _get(data, "author_association")
    changed = _get(data, "changed_files")
    return PullRequest(number=number, head_sha=head, base_sha=base, labels=labels,
                       head_repository=head_repository if isinstance(head_repository, str) else None,
                       base_repository=base_repository,
                       author_association=association if isinstance(association, str) else None,
                       changed_files=changed if isinstance(changed, int) and not isinstance(changed, bool) else None)


def fetch_pull_request(api: Api, repository: str, number: int) -> PullRequest:
    data = api.get(f"/repos/{repository}/pulls/{number}")
    return pull_request_of(data, f"the API's pull request {repository}#{number}")


def _status(data: Any) -> CommitStatus:
    sid, context, state, creator = (_get(data, "id"), _get(data, "context"), _get(data, "state"),
                                    _get(data, "creator", "login"))
    return CommitStatus(id=sid if isinstance(sid, int) and not isinstance(sid, bool) else None,
                        context=context if isinstance(context, str) else None,
                        state=state if isinstance(state, str) else None,
                        creator=creator if isinstance(creator, str) else None)


def approval(api: Api, repository: str, sha: str, approver: str = DEFAULT_APPROVER) -> Approval:
    """The approver's latest `ci-policy/ok-to-test` state on exactly `sha`, and the ok-to-test
    statuses others created (ignored), from the statuses listed newest first."""
    statuses: list[CommitStatus] = []
    for page in range(1, MAX_STATUS_PAGES + 1):
        data = api.get(f"/repos/{repository}/commits/{sha}/statuses", {"per_page": STATUS_PAGE, "page": page})
        if not isinstance(data, list):
            raise ApiError(0, f"the statuses of {sha} are not a list")
        read = [_status(item) for item in data]
        statuses.extend(read)
        # The newest of the approver's statuses decides: once a page holds one, no later page matters.
        if approval_of(read, approver).state is not None or len(data) < STATUS_PAGE:
            return approval_of(statuses, approver)
    found = approval_of(statuses, approver)
    return Approval(found.state, found.ignored, unread=len(statuses))


def decide(client: Callable[[], Api], pull: PullRequest, approver: str = DEFAULT_APPROVER) -> TrustDecision:
    """The PR's trust. `client` is called only when the approval status must be read: a PR
    trusted by its origin needs no request (and its pull_request run may have no token)."""
    origin = trusted_origin(pull.head_repository, pull.base_repository, pull.author_association)
    if origin is not None:
        return decide_trust(origin, None, pull.head_sha)
    found = approval(client(), pull.base_repository, pull.head_sha, approver)
    return decide_trust(None, found.state, pull.head_sha, approval_warnings(found, approver, pull.head_sha))


def fetch_diff(api: Api, repository: str, number: int, changed_files: int | None = None
               ) -> tuple[bytes | None, str]:
    """The PR's changes as name-status bytes (`NO_CHANGES` when the diff is empty and the pull
    request counts `changed_files` 0), or (None, why they are unavailable)."""
    try:
        text = api.get_text(f"/repos/{repository}/pulls/{number}", DIFF_MEDIA_TYPE)
    except ApiError as exc:
        return None, f"the API gave no diff for #{number}: {exc}"
    if text == "" and changed_files == 0:
        return NO_CHANGES, ""
    try:
        return name_status_from_unified(text, f"the diff of #{number}"), ""
    except InputError as exc:
        return None, exc.message
