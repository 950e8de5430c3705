"""The CI health report published as one issue per repository, through PyGithub (an adapter).

- In: a PyGithub requester (`client.github_requester`), the repository, the report's Markdown.
- Out: `publish_issue(...)` -> ("opened" or "updated", the issue's number, its URL). The issue
  is found by its label (`ISSUE_LABEL`) and exact title (`ISSUE_TITLE`) among the repository's
  open issues (`GET /repos/{o}/{r}/issues?state=open&labels=ci-health`, pull requests left
  out: the endpoint lists them too); found, its body is replaced (`PATCH .../issues/{n}`);
  else one is created with the label (`POST .../issues`). Each weekly report so replaces the
  last one: one issue per repository, never a new one each week.
- A body longer than GitHub's limit for an issue body (65,536 characters) is cut, with a line
  saying so, so that a long history never fails the publication.
- Refused: every API error is an `InputError` naming the status, the method and the path.
"""

from __future__ import annotations

from typing import Any

from ci_policy.adapters.github.client import call

ISSUE_TITLE = "CI health report"
ISSUE_LABEL = "ci-health"
# GitHub refuses an issue body over 65,536 characters ("body is too long (maximum is 65536 characters)").
MAX_BODY = 65536
CUT = "\n\n_The report was cut here: it is longer than an issue body may be. The step summary holds it whole._\n"


def fitted(body: str) -> str:
    """`body`, cut to an issue body's limit with a line saying so."""
    if len(body) <= MAX_BODY:
        return body
    return body[:MAX_BODY - len(CUT)] + CUT


def publish_issue(requester: Any, repository: str, body: str, *, title: str = ISSUE_TITLE,
                  label: str = ISSUE_LABEL) -> tuple[str, int, str]:
    body = fitted(body)
    issues = call(requester, "GET", f"/repos/{repository}/issues",
                   parameters={"state": "open", "labels": label, "per_page": 100})
    found = [i for i in issues or [] if i.get("title") == title and "pull_request" not in i]
    if found:
        number = min(int(i["number"]) for i in found)  # the oldest, should there be several
        issue = call(requester, "PATCH", f"/repos/{repository}/issues/{number}", input={"body": body})
        return "updated", number, str(issue.get("html_url", ""))
    issue = call(requester, "POST", f"/repos/{repository}/issues",
                  input={"title": title, "body": body, "labels": [label]})
    return "opened", int(issue["number"]), str(issue.get("html_url", ""))
