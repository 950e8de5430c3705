"""`pull-request`: the pull request a pipeline run is for, its trust and its diff.

- In: a `PullRequestRequest`: the event payload's path or the PR number (with the head the run
  is for, `expect_head`, when a pull_request run reads its PR through the API), the repository (None:
  `$GITHUB_REPOSITORY`, else the payload's base repository), the token (asked for only when the
  API is needed), the API URL, where to write the diff, and the approver: the login whose
  `ci-policy/ok-to-test` statuses count (None: `plan.trust.DEFAULT_APPROVER`).
- Out: a `PullRequestResult`: the pull request, its trust decision (`plan.trust`, with a warning
  for each approval status another identity created), the diff file written ("" for none) and,
  when the API gave no usable diff, why (a warning to print). For a pull request with no
  changed file the file holds `read.diff.NO_CHANGES`, which `plan --diff` reads as no change.
- Refused: an approver that is not a GitHub login, an expected head that is not 40 hex digits, a
  missing token or repository when the API is needed (`UsageError`); a payload that is not a
  pull request's, a PR to another repository, an API error, a PR whose head is no longer the
  expected one (a re-run of an older head's run: its checks attach to that head, so planning
  the new one there would report the new head's result on the old commit) (exit 1).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_policy.adapters.github.api import Api, github_api
from ci_policy.adapters.github.pulls import SHA_RE, decide, fetch_diff, fetch_pull_request, pull_request_of
from ci_policy.errors import InputError, UsageError
from ci_policy.plan.trust import DEFAULT_APPROVER, PullRequest, TrustDecision, check_login


@dataclass(frozen=True)
class PullRequestRequest:
    event_path: str | None
    number: int | None
    repository: str | None
    token: Callable[[], str]
    api_url: str
    diff_out: str | None = None
    approver: str | None = None
    expect_head: str | None = None


@dataclass(frozen=True)
class PullRequestResult:
    pull: PullRequest
    decision: TrustDecision
    diff_file: str
    diff_unavailable: str | None = None   # why the diff could not be written


def _payload_pull(path: str) -> dict[str, Any]:
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"event payload {path} cannot be read as JSON: {exc}", path=path) from None
    except RecursionError:
        raise InputError(f"event payload {path} cannot be read as JSON: nested too deeply", path=path) from None
    pull = event.get("pull_request") if isinstance(event, dict) else None
    if not isinstance(pull, dict):
        raise InputError(f"event payload {path} is not a pull_request event's (no pull_request object)", path=path,
                         hint="pass --number N outside a pull_request event")
    return pull


def approver_of(value: str | None) -> str:
    """The approver's login (`--approver`), checked before any request."""
    if value is None:
        return DEFAULT_APPROVER
    problem = check_login(value)
    if problem is not None:
        raise UsageError(problem, source="--approver",
                         hint="name the identity the comment gateway writes ci-policy/ok-to-test with: "
                              "github-actions[bot] for a workflow's GITHUB_TOKEN (the default), NAME[bot] "
                              "for a GitHub App")
    return value


def pull_request(request: PullRequestRequest) -> PullRequestResult:
    approver = approver_of(request.approver)
    if request.expect_head is not None and not SHA_RE.fullmatch(request.expect_head):
        raise UsageError(f"expected a 40-hex commit SHA, got {request.expect_head[:80]!r}", source="--expect-head",
                         hint="pass ${{ github.event.pull_request.head.sha }}")
    repository = request.repository or os.environ.get("GITHUB_REPOSITORY") or None
    api: Api | None = None

    def client() -> Api:
        nonlocal api
        if api is None:
            if not repository:
                raise UsageError("the repository is unknown", source="--repository",
                                 hint="pass --repository OWNER/REPO, or set $GITHUB_REPOSITORY")
            api = github_api(request.token(), request.api_url, dry_run=False, out=sys.stdout)
        return api

    if request.number is not None:
        pull = fetch_pull_request(client(), repository or "", request.number)
        if request.expect_head is not None and pull.head_sha != request.expect_head:
            raise InputError(f"its head is now {pull.head_sha}, not {request.expect_head}, the commit this run is for",
                             path=f"pull request #{pull.number}",
                             hint="the run of the new head decides the pull request; re-run that one "
                                  "(`/rerun-failed-ci`), not this one")
    else:
        assert request.event_path is not None
        pull = pull_request_of(_payload_pull(request.event_path), "the event payload's pull_request",
                               request.event_path)
        if repository and repository.casefold() != pull.base_repository.casefold():
            raise InputError(f"the pull request is to {pull.base_repository}, not to {repository}",
                             path=request.event_path)
        repository = repository or pull.base_repository
    decision = decide(client, pull, approver)
    if not request.diff_out:
        return PullRequestResult(pull, decision, "")
    data, why = fetch_diff(client(), pull.base_repository, pull.number, pull.changed_files)
    if data is None:
        return PullRequestResult(pull, decision, "", why)
    Path(request.diff_out).write_bytes(data)
    return PullRequestResult(pull, decision, request.diff_out)
