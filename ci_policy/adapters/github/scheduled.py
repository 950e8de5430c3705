"""`tune --github-runs N --workflow FILE`: the evidence of a workflow's scheduled runs, and
the one pull request that proposes the estimates (an adapter, through PyGithub's requester).

- In: the repository, workflow file, branch, run count or run id, an `Api` client; for
  `open_or_update_pr`, the changed files' texts.
- Out: `ScheduledRun`s, a `RunTrust`, or the pull request opened or updated, as below.
- `scheduled_runs(...)`: the last N completed runs of `FILE` on the branch (default: the
  repository's default branch) whose event is `schedule` (`push` too only when asked),
  newest first (in pages of 100). The API is asked with the `event`, `branch` and `status` filters; every
  run it answers is checked again here: a `pull_request` run is never read, whatever the
  API returns (a PR's code must not move the estimates of the default branch).
- `completed_runs(...)`: for `history import --github-runs`, the last N completed runs of
  `FILE` of every event and branch, newest first: the history is data for a report (a pull
  request's hours saved count), never evidence that changes an estimate.
- `run_trust(...)`: what `tune --github-run` may read, by the run's own metadata
  (`GET /repos/{repo}/actions/runs/{id}`): a `schedule` or `push` run on the default branch
  is trusted; any other (a pull request's, a branch's, a dispatch's) ran code nobody
  reviewed, whose tests could have written its timing artifacts, so tune refuses it unless
  told `--allow-untrusted-runs`.
- `open_or_update_pr(...)`: commits the changed files on top of the default branch's head
  through the git data API (blobs, a tree on the head's tree, a commit), points the fixed
  branch `ci-policy/tune-estimates` at it (created, or force-updated), then edits the open
  pull request of that branch or opens one. Returns ("opened" | "updated", number, url).
- Refused: an API failure, as an `InputError` naming the request; nothing is retried. A
  `pull_request` run the API answers is dropped, never read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from github import GithubException

from ci_policy.adapters.github.client import call
from ci_policy.errors import InputError

PR_BRANCH = "ci-policy/tune-estimates"
READ_EVENTS = ("schedule",)
PUSH = "push"


@dataclass(frozen=True)
class ScheduledRun:
    id: int
    event: str
    head_sha: str
    created_at: str


def default_branch(requester: Any, repository: str) -> str:
    return str(call(requester, "GET", f"/repos/{repository}")["default_branch"])


def scheduled_runs(requester: Any, repository: str, workflow: str, branch: str, count: int, *,
                   include_push: bool = False) -> list[ScheduledRun]:
    events = (*READ_EVENTS, PUSH) if include_push else READ_EVENTS
    found: list[ScheduledRun] = []
    per_page = min(count, 100)
    for event in events:
        kept = 0
        for page in range(1, -(-count // per_page) + 1):
            data = call(requester, "GET", f"/repos/{repository}/actions/workflows/{quote(workflow, safe='')}/runs",
                         parameters={"branch": branch, "event": event, "status": "completed",
                                     "per_page": per_page, "page": page})
            batch = data.get("workflow_runs") or []
            for run in batch:
                # Checked again: only the asked event, on the asked branch, completed.
                if (run.get("event") == event and run.get("head_branch") == branch
                        and run.get("status") == "completed"):
                    found.append(ScheduledRun(int(run["id"]), event, str(run.get("head_sha", "")),
                                              str(run.get("created_at", ""))))
                    kept += 1
            if len(batch) < per_page or kept >= count:
                break
    found.sort(key=lambda r: (r.created_at, r.id), reverse=True)
    return found[:count]


def completed_runs(requester: Any, repository: str, workflow: str, count: int) -> list[ScheduledRun]:
    """The last `count` completed runs of `workflow`, of every event and branch (pull requests
    included: `history import` reads their plans and timings as data), newest first."""
    found: list[ScheduledRun] = []
    per_page = min(count, 100)
    for page in range(1, -(-count // per_page) + 1):
        data = call(requester, "GET", f"/repos/{repository}/actions/workflows/{quote(workflow, safe='')}/runs",
                     parameters={"status": "completed", "per_page": per_page, "page": page})
        batch = data.get("workflow_runs") or []
        # Checked again: only completed runs.
        found += [ScheduledRun(int(run["id"]), str(run.get("event", "")), str(run.get("head_sha", "")),
                               str(run.get("created_at", ""))) for run in batch if run.get("status") == "completed"]
        if len(batch) < per_page or len(found) >= count:
            break
    found.sort(key=lambda r: (r.created_at, r.id), reverse=True)
    return found[:count]


TRUSTED_EVENTS = ("schedule", PUSH)


@dataclass(frozen=True)
class RunTrust:
    id: int
    event: str
    branch: str
    trusted: bool

    @property
    def origin(self) -> str:
        """Where a sample of this run came from, for the evidence CSV."""
        return f"github {self.event} on {self.branch or '?'}" + ("" if self.trusted else " (untrusted)")


def run_trust(requester: Any, repository: str, run_id: int, default: str) -> RunTrust:
    run = call(requester, "GET", f"/repos/{repository}/actions/runs/{run_id}")
    event, branch = str(run.get("event") or ""), str(run.get("head_branch") or "")
    return RunTrust(run_id, event, branch, event in TRUSTED_EVENTS and branch == default)


def open_or_update_pr(requester: Any, repository: str, base: str, files: Sequence[tuple[str, str]], *,
                      title: str, body: str, message: str) -> tuple[str, int, str]:
    """Commit `files` ((repo-relative path, text)) on `base`'s head, on `PR_BRANCH`, with one PR."""
    owner = repository.split("/", 1)[0]
    head = call(requester, "GET", f"/repos/{repository}/git/ref/heads/{quote(base)}")["object"]["sha"]
    base_tree = call(requester, "GET", f"/repos/{repository}/git/commits/{head}")["tree"]["sha"]
    entries = []
    for path, text in files:
        blob = call(requester, "POST", f"/repos/{repository}/git/blobs",
                     input={"content": text, "encoding": "utf-8"})
        entries.append({"path": path, "mode": "100644", "type": "blob", "sha": blob["sha"]})
    tree = call(requester, "POST", f"/repos/{repository}/git/trees", input={"base_tree": base_tree, "tree": entries})
    commit = call(requester, "POST", f"/repos/{repository}/git/commits",
                   input={"message": message, "tree": tree["sha"], "parents": [head]})

    ref_path = f"/repos/{repository}/git/ref/heads/{PR_BRANCH}"
    try:
        requester.requestJsonAndCheck("GET", ref_path)
    except GithubException as exc:
        if exc.status != 404:
            raise InputError(f"GitHub API error {exc.status} on GET {ref_path}") from None
        call(requester, "POST", f"/repos/{repository}/git/refs",
              input={"ref": f"refs/heads/{PR_BRANCH}", "sha": commit["sha"]})
    else:
        # The branch holds only this job's commits: force-updated onto the new head.
        call(requester, "PATCH", f"/repos/{repository}/git/refs/heads/{PR_BRANCH}",
              input={"sha": commit["sha"], "force": True})
    pulls = call(requester, "GET", f"/repos/{repository}/pulls",
                  parameters={"state": "open", "head": f"{owner}:{PR_BRANCH}", "base": base})
    if pulls:
        number = int(pulls[0]["number"])
        pull = call(requester, "PATCH", f"/repos/{repository}/pulls/{number}", input={"title": title, "body": body})
        return "updated", number, str(pull.get("html_url", ""))
    pull = call(requester, "POST", f"/repos/{repository}/pulls",
                 input={"title": title, "head": PR_BRANCH, "base": base, "body": body})
    return "opened", int(pull["number"]), str(pull.get("html_url", ""))
