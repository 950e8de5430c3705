"""`ci-policy report-status`: one commit status on a SHA (an adapter, through PyGithub).

- In: an `Api` client, the repository, a 40-hex SHA, the context, state, description and
  an optional target URL (checked by the command line).
- Out: `POST /repos/{o}/{r}/statuses/{sha}` with exactly those fields (no `target_url`
  key without one); the answer's state and context.
- Refused: nothing here: the command line checked every field first; an API error is the
  client's `ApiError`.
- Used by the workflows for `ci-policy/result` (a dispatched pipeline's result on the PR
  head) and `ci-policy/rerun-test` (a /rerun-test's result); the gateway writes
  `ci-policy/ok-to-test` itself.
"""

from __future__ import annotations

from ci_policy.adapters.github.api import Api

MAX_DESCRIPTION = 140  # GitHub refuses a longer description


def create_status(api: Api, repository: str, sha: str, *, context: str, state: str, description: str,
                  target_url: str | None = None) -> dict:
    body = {"state": state, "context": context, "description": description}
    if target_url:
        body["target_url"] = target_url
    api.mutate("POST", f"/repos/{repository}/statuses/{sha}", body)
    return body
