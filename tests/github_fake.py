"""A local, in-process stand-in for the GitHub REST API endpoints `ci-policy comment` uses.

- It serves HTTP on 127.0.0.1 (an ephemeral port) from a thread, with the response shapes
  of the real API for exactly these endpoints (`{o}/{r}` is the configured repository):

    GET    /repos/{o}/{r}/collaborators/{user}/permission
    GET    /repos/{o}/{r}/labels/{name}
    GET    /repos/{o}/{r}/issues/{n}/labels         POST /repos/{o}/{r}/issues/{n}/labels
    DELETE /repos/{o}/{r}/issues/{n}/labels/{name}
    POST   /repos/{o}/{r}/issues/{n}/comments
    POST   /repos/{o}/{r}/issues/comments/{id}/reactions
    GET    /repos/{o}/{r}/pulls/{n}                 (Accept: application/vnd.github.diff: the unified
                                                    diff, or 406 when the PR has none: too large)
    POST   /repos/{o}/{r}/statuses/{sha}
    GET    /repos/{o}/{r}/commits/{sha}/statuses    (per_page, page; newest first, each with its creator)
    GET    /repos/{o}/{r}/actions/workflows/{wf}/runs
    POST   /repos/{o}/{r}/actions/runs/{id}/rerun-failed-jobs   (a completed run only, else 403)
    POST   /repos/{o}/{r}/actions/runs/{id}/rerun                (a completed run only, else 403)
    POST   /repos/{o}/{r}/actions/runs/{id}/approve              (a run awaiting approval only, else 403)
    POST   /repos/{o}/{r}/actions/workflows/{wf}/dispatches
    GET    /repos/{o}/{r}/git/trees/{sha}?recursive=1
    GET    /repos/{o}/{r}/git/blobs/{sha}
    GET    /repos/{o}/{r}                                (default_branch)
    GET    /repos/{o}/{r}/actions/runs/{id}              (a run added with add_run: event, head_branch)
    GET    /repos/{o}/{r}/actions/runs/{id}/jobs         (?filter=latest|all, per_page, page)
    GET    /repos/{o}/{r}/actions/jobs/{job_id}/logs     -> 302 to a signed /_blob/logs/... URL
    GET    /repos/{o}/{r}/actions/runs/{id}/artifacts    (per_page, page)
    GET    /repos/{o}/{r}/actions/artifacts/{id}/zip     -> 302 to a signed /_blob/artifacts/... URL
                                                            (410 once the artifact expired)
    GET    /_blob/logs/{job_id}, /_blob/artifacts/{id}.zip   the raw bytes, without authentication,
                                                            for a valid signature only

  The two redirects stand for GitHub's redirects to its blob storage: the Location is an
  absolute URL on this same server, under the host name `blob_host` (default: the API's own
  host; "localhost" makes it a different host for the client, as blob storage is).
  Anything else is a 404 (and recorded), so an unexpected request shows up in a test's
  exact request sequence.
- State is plain attributes a test sets up: repository roles per user, repository labels,
  labels per issue, pull requests (head SHA, body) with a hook called on every read of a
  pull request (so the head can move after the comment), workflow runs per workflow file,
  workflows accepting `workflow_dispatch` (their inputs, and the run name a dispatch
  gets), commits whose trees are built from a directory (symlinks become mode 120000
  entries, as git stores them), and injected failures per (method, path).
- Actions runs (`add_job`, `add_artifact`): jobs per run id with their raw text logs, and
  artifacts per run id with their zip bytes (any bytes: a test may serve a non-zip).
- Every request is recorded: method, raw path, decoded query, JSON body, Authorization,
  the Host header and the Accept header.
- Pull requests carry their head repository (a fork unless set to the base), the author's
  association and a unified diff; commit statuses are kept per SHA, listed newest first as GitHub
  lists them. A status the API creates names `status_creator` (default
  `github-actions[bot]`, the identity of a workflow's token) as its creator; `add_status`
  adds one by any other creator (another integration holding `statuses: write`).
- Bounded: request bodies over 1 MiB are refused, at most `max_requests` requests are
  served (then 503), every socket has a timeout, and `stop()` (the fixture) shuts the
  server down and joins its thread.

The fake stands in for GitHub only; the code under test talks to it through PyGithub.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import itertools
import json
import os
import re
import shutil
import stat
import sys
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MAX_BODY_BYTES = 1024 * 1024
SECONDARY_RATE_LIMIT = ("You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
                        "If you reach out to GitHub Support for help, please include the request ID "
                        "DEAD:BEEF:1234567:89ABCDE:6745A1B2.")
LEGACY_PERMISSION = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read",
                     "read": "read", "none": "none"}
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_REPO = ROOT / "examples" / "gpu-repo"


@dataclass(frozen=True)
class Request:
    method: str
    path: str                      # as sent, percent-encoding kept, without the query
    query: dict[str, list[str]]
    body: Any                      # the decoded JSON body, None without one
    authorization: str | None
    host: str | None = None     # the Host header as sent
    accept: str | None = None   # the Accept header as sent (a diff is asked for by media type)

    @property
    def mutating(self) -> bool:
        return self.method != "GET"

    def short(self) -> tuple:
        """(method, path, query as a flat dict, body): what tests compare."""
        return (self.method, self.path, {k: v[0] if len(v) == 1 else v for k, v in self.query.items()},
                self.body)


@dataclass
class Pull:
    number: int
    head_sha: str
    body: str | None = ""
    head_ref: str = "feature"
    reads: int = 0
    head_repository: str | None = None   # None: a fork ("contributor/<repo>"); set to the base for a branch
    author_association: str = "CONTRIBUTOR"
    diff: str | None = None              # the unified diff; None: GitHub refuses it (406, too large)
    head_repo_deleted: bool = False
    changed_files: int | None = None     # the pull request object's count; None: left out of the answer


@dataclass
class Workflow:
    """A workflow_dispatch workflow: its inputs {name: required} and the run name a dispatch gets."""
    inputs: dict[str, bool]
    run_name: Callable[[dict[str, str]], str]
    name: str = "Rerun test"


@dataclass
class Blob:
    data: bytes


@dataclass(frozen=True)
class Raw:
    """A response that is not JSON: bytes with their headers (a redirect has a Location, no body)."""
    data: bytes
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class TreeEntry:
    path: str
    mode: str
    type: str
    sha: str
    size: int | None = None


def git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
        # A client that hangs up (after a 5xx it retries on a new connection) is not the fake's
        # fault; socketserver would print a traceback on stderr, where tests assert exact output.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class FakeGitHub:
    def __init__(self, owner: str = "acme", repo: str = "minirl", *, max_requests: int = 200) -> None:
        self.owner, self.repo = owner, repo
        self.max_requests = max_requests
        self.lock = threading.Lock()
        self.requests: list[Request] = []
        # login -> repository role (admin, maintain, write, triage, read); others: default_role.
        self.roles: dict[str, str] = {}
        self.user_ids: dict[str, int] = {}
        self.default_role = "read"   # what GitHub answers for a non-collaborator of a public repository
        self.missing_users: set[str] = set()  # logins the permission endpoint 404s for
        self.repo_labels: set[str] = set()
        self.issue_labels: dict[int, list[str]] = {}
        self.pulls: dict[int, Pull] = {}
        self.on_pull_read: Callable[[FakeGitHub, Pull], None] | None = None
        self.on_dispatch: Callable[[FakeGitHub, dict], None] | None = None  # after the run was created
        self.runs: dict[str, list[dict]] = {}  # workflow file -> runs, any order
        self.workflows: dict[str, Workflow] = {}  # workflow file -> workflow_dispatch definition
        self.branches: dict[str, str] = {"main": "0" * 40}
        self.default_branch = "main"
        self.trees: dict[str, list[TreeEntry]] = {}  # commit sha -> recursive tree
        self.blobs: dict[str, Blob] = {}
        self.truncated: set[str] = set()
        self.failures: dict[tuple[str, str], tuple[int, str]] = {}  # (method, raw path) -> (status, message)
        # (method, raw path) -> answers served once each, in order, before the real one.
        self.transient: dict[tuple[str, str], list[tuple[int, dict, tuple[tuple[str, str], ...]]]] = {}
        self.comments: list[dict] = []
        self.reactions: list[dict] = []
        self.dispatches: list[dict] = []
        self.reruns: list[int] = []          # run ids whose failed jobs were re-run
        self.full_reruns: list[int] = []     # run ids re-run whole
        self.approved_runs: list[int] = []   # held fork runs approved
        self.statuses: dict[str, list[dict]] = {}  # commit sha -> commit statuses, oldest first
        self.status_creator = "github-actions[bot]"  # the login of whoever calls this API
        # GitHub Actions runs: run id -> jobs (GitHub's job objects), job id -> raw log,
        # run id -> artifacts (GitHub's artifact objects), artifact id -> zip bytes.
        self.run_jobs: dict[int, list[dict]] = {}
        self.job_logs: dict[int, bytes] = {}
        self.run_artifacts: dict[int, list[dict]] = {}
        self.artifact_zips: dict[int, bytes] = {}
        self.blob_host: str | None = None  # host name of the redirects' Location; None: the API's
        self._blob_secret = hashlib.sha1(os.urandom(16)).hexdigest()
        self._ids = itertools.count(900001)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None, "the fake is not running"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeGitHub:
        fake = self

        class Handler(_Handler):
            github = fake

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.timeout = 5
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-github", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            assert self._thread is not None
            self._thread.join(timeout=10)
            self._server = None

    # -- state helpers --------------------------------------------------------------------------
    def add_pull(self, number: int, head_sha: str, body: str | None = "", labels: tuple[str, ...] = ()) -> Pull:
        self.pulls[number] = Pull(number, head_sha, body)
        self.issue_labels[number] = list(labels)
        return self.pulls[number]

    def add_run(self, workflow: str, *, head_sha: str, conclusion: str | None, status: str = "completed",
                event: str = "pull_request", display_title: str = "", run_id: int | None = None,
                head_branch: str | None = None) -> dict:
        """Runs are listed newest first; a run added later is newer."""
        run_id = run_id or next(self._ids)
        run = {"id": run_id, "name": workflow, "display_title": display_title or f"run {run_id}",
               "event": event, "status": status, "conclusion": conclusion, "head_sha": head_sha,
               "run_attempt": 1, "path": f".github/workflows/{workflow}",
               "html_url": f"https://github.com/{self.owner}/{self.repo}/actions/runs/{run_id}",
               "created_at": f"2026-01-01T00:00:{len(self.runs.get(workflow, [])):02d}Z"}
        if head_branch is not None:
            run["head_branch"] = run["branch"] = head_branch
        self.runs.setdefault(workflow, []).append(run)
        return run

    def add_commit(self, sha: str, directory: Path) -> None:
        """The commit's recursive tree, built from `directory` as git would store it."""
        entries: list[TreeEntry] = []
        root = Path(directory)
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = [d for d in dirnames if d not in ("__pycache__", ".pytest_cache")]
            for name in sorted(dirnames + filenames):
                full = Path(dirpath, name)
                rel = full.relative_to(root).as_posix()
                st = os.lstat(full)
                if stat.S_ISLNK(st.st_mode):
                    data = os.readlink(full).encode()
                    entries.append(self._blob_entry(rel, "120000", data))
                elif stat.S_ISDIR(st.st_mode):
                    entries.append(TreeEntry(rel, "040000", "tree",
                                             hashlib.sha1(f"tree {sha} {rel}".encode()).hexdigest()))
                elif stat.S_ISREG(st.st_mode):
                    mode = "100755" if st.st_mode & 0o111 else "100644"
                    entries.append(self._blob_entry(rel, mode, full.read_bytes()))
        self.trees[sha] = sorted(entries, key=lambda e: e.path)

    def _blob_entry(self, rel: str, mode: str, data: bytes) -> TreeEntry:
        sha = git_blob_sha(data)
        self.blobs[sha] = Blob(data)
        return TreeEntry(rel, mode, "blob", sha, len(data))

    def add_job(self, run_id: int, name: str, log: bytes | str, *, job_id: int | None = None,
                status: str = "completed", conclusion: str | None = "success", run_attempt: int = 1,
                workflow_name: str = "PR Test", head_sha: str = "0" * 40) -> dict:
        """A job of run `run_id` (listed in the order added) whose raw log is `log`."""
        job_id = job_id or next(self._ids)
        api = f"https://api.github.com/repos/{self.owner}/{self.repo}/actions"
        job = {"id": job_id, "run_id": run_id, "run_url": f"{api}/runs/{run_id}", "run_attempt": run_attempt,
               "node_id": f"CR_{job_id}", "head_sha": head_sha, "head_branch": "feature",
               "url": f"{api}/jobs/{job_id}",
               "html_url": f"https://github.com/{self.owner}/{self.repo}/actions/runs/{run_id}/job/{job_id}",
               "status": status, "conclusion": conclusion, "created_at": "2026-11-30T06:00:00Z",
               "started_at": "2026-11-30T06:00:05Z",
               "completed_at": "2026-11-30T07:00:00Z" if status == "completed" else None,
               "name": name, "steps": [], "check_run_url": f"{api}/check-runs/{job_id}",
               "labels": ["self-hosted", "h200"], "runner_id": 17, "runner_name": "gpu-runner-17",
               "runner_group_id": 1, "runner_group_name": "Default", "workflow_name": workflow_name}
        self.run_jobs.setdefault(run_id, []).append(job)
        self.job_logs[job_id] = log.encode("utf-8") if isinstance(log, str) else bytes(log)
        return job

    def add_artifact(self, run_id: int, name: str, data: bytes, *, artifact_id: int | None = None,
                     expired: bool = False) -> dict:
        """An artifact of run `run_id` (listed in the order added) whose archive is `data`."""
        artifact_id = artifact_id or next(self._ids)
        artifact = {"id": artifact_id, "node_id": f"MDg6QXJ0aWZhY3Q{artifact_id}", "name": name,
                    "size_in_bytes": len(data), "expired": expired, "created_at": "2026-11-30T07:00:00Z",
                    "updated_at": "2026-11-30T07:00:00Z", "expires_at": "2027-02-28T07:00:00Z",
                    "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
                    "workflow_run": {"id": run_id, "repository_id": 424242, "head_repository_id": 424242,
                                     "head_branch": "feature", "head_sha": "0" * 40}}
        self.run_artifacts.setdefault(run_id, []).append(artifact)
        self.run_jobs.setdefault(run_id, [])
        self.artifact_zips[artifact_id] = bytes(data)
        return artifact

    def signature(self, blob_path: str) -> str:
        """The `sig` query parameter the redirect to `blob_path` carries."""
        return hashlib.sha256(f"{self._blob_secret}:{blob_path}".encode()).hexdigest()[:32]

    def blob_url(self, blob_path: str) -> str:
        """The absolute, signed URL a redirect to `blob_path` (`/_blob/...`) points to."""
        assert self._server is not None, "the fake is not running"
        port = self._server.server_address[1]
        host = self.blob_host or self._server.server_address[0]
        query = f"sv=2021-08-06&se=2026-11-30T08%3A00%3A00Z&sig={self.signature(blob_path)}"
        return f"http://{host}:{port}{blob_path}?{query}"

    def fail(self, method: str, path: str, status: int = 500, message: str = "Internal Server Error") -> None:
        self.failures[(method, path)] = (status, message)

    def fail_next(self, method: str, path: str, *statuses: int, message: str = "Server Error") -> None:
        """The next len(statuses) requests of (method, path) get these error answers, then the real one."""
        self.transient.setdefault((method, path), []).extend((status, {"message": message}, ()) for status in statuses)

    def rate_limit_next(self, method: str, path: str, retry_after: int | None = None, *, status: int = 403) -> None:
        """The next request of (method, path) hits GitHub's secondary rate limit (with `Retry-After`
        seconds when given), as GitHub answers it."""
        headers = (("Retry-After", str(retry_after)),) if retry_after is not None else ()
        self.transient.setdefault((method, path), []).append((status, {
            "message": SECONDARY_RATE_LIMIT,
            "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}, headers))

    @property
    def mutating(self) -> list[Request]:
        return [r for r in self.requests if r.mutating]

    def calls(self) -> list[tuple]:
        return [r.short() for r in self.requests]

    # -- the API ---------------------------------------------------------------------------------
    def handle(self, method: str, raw_path: str, query: dict, body: Any) -> tuple[int, Any]:
        prefix = f"/repos/{self.owner}/{self.repo}/"
        if method == "GET" and raw_path.startswith("/_blob/"):
            return self._blob(raw_path, query)
        if method == "GET" and raw_path == prefix[:-1]:
            return 200, {"id": 424242, "full_name": f"{self.owner}/{self.repo}", "default_branch": self.default_branch}
        if not raw_path.startswith(prefix):
            return 404, _not_found()
        parts = [urllib.parse.unquote(p) for p in raw_path[len(prefix):].split("/")]
        route = _match(method, parts)
        if route is None:
            return 404, _not_found()
        name, args = route
        return getattr(self, f"api_{name}")(*args, query=query, body=body)

    def _label(self, name: str) -> dict:
        number = int(hashlib.sha1(name.encode()).hexdigest()[:8], 16)
        return {"id": number, "node_id": f"LA_{number}",
                "url": f"https://api.github.com/repos/{self.owner}/{self.repo}/labels/{urllib.parse.quote(name)}",
                "name": name, "color": "ededed", "default": False, "description": None}

    def _user(self, login: str) -> dict:
        uid = self.user_ids.get(login, 1000 + sum(map(ord, login)))
        return {"login": login, "id": uid, "node_id": f"U_{uid}", "type": "User", "site_admin": False,
                "html_url": f"https://github.com/{login}"}

    def api_permission(self, login, *, query, body):
        if login in self.missing_users:
            return 404, _not_found()
        role = self.roles.get(login, self.default_role)
        return 200, {"permission": LEGACY_PERMISSION[role], "role_name": role,
                     "user": {**self._user(login), "permissions": {}}}

    def api_get_label(self, name, *, query, body):
        if name not in self.repo_labels:
            return 404, _not_found()
        return 200, self._label(name)

    def _issue(self, number: str) -> list[str] | None:
        return self.issue_labels.get(int(number)) if number.isdigit() else None

    def api_issue_labels(self, number, *, query, body):
        labels = self._issue(number)
        if labels is None:
            return 404, _not_found()
        return 200, [self._label(n) for n in labels]

    def api_add_labels(self, number, *, query, body):
        labels = self._issue(number)
        if labels is None:
            return 404, _not_found()
        names = body.get("labels") if isinstance(body, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return 422, {"message": "Invalid request.", "errors": [{"field": "labels"}]}
        for n in names:
            self.repo_labels.add(n)  # GitHub creates a label that does not exist yet
            if n not in labels:
                labels.append(n)
        return 200, [self._label(n) for n in labels]

    def api_remove_label(self, number, name, *, query, body):
        labels = self._issue(number)
        if labels is None or name not in labels:
            return 404, {"message": "Label does not exist",
                         "documentation_url": "https://docs.github.com/rest/issues/labels"}
        labels.remove(name)
        return 200, [self._label(n) for n in labels]

    def api_comment(self, number, *, query, body):
        if self._issue(number) is None:
            return 404, _not_found()
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            return 422, {"message": "Invalid request."}
        cid = next(self._ids)
        comment = {"id": cid, "node_id": f"IC_{cid}", "body": body["body"],
                   "html_url": f"https://github.com/{self.owner}/{self.repo}/pull/{number}#issuecomment-{cid}",
                   "user": {**self._user("github-actions[bot]"), "type": "Bot"}}
        self.comments.append(comment)
        return 201, comment

    def api_reaction(self, comment_id, *, query, body):
        if not isinstance(body, dict) or body.get("content") not in ("+1", "-1", "laugh", "confused", "heart",
                                                                      "hooray", "rocket", "eyes"):
            return 422, {"message": "Invalid request."}
        rid = next(self._ids)
        reaction = {"id": rid, "node_id": f"REA_{rid}", "content": body["content"], "comment_id": int(comment_id),
                    "user": {**self._user("github-actions[bot]"), "type": "Bot"}}
        self.reactions.append(reaction)
        return 201, reaction

    def api_pull(self, number, *, query, body):
        pull = self.pulls.get(int(number)) if number.isdigit() else None
        if pull is None:
            return 404, _not_found()
        if self.requests[-1].accept == "application/vnd.github.diff":  # the request being served
            if pull.diff is None:
                return 406, {"message": "Sorry, the diff exceeded the maximum number of files (300). Consider "
                             "using 'List pull requests files' API or locally cloning the repository instead.",
                             "errors": [{"resource": "PullRequest", "field": "diff", "code": "too_large"}],
                             "documentation_url": "https://docs.github.com/rest/pulls/pulls#list-pull-requests-files",
                             "status": "406"}
            return 200, Raw(pull.diff.encode(), (("Content-Type", "text/plain; charset=utf-8"),))
        pull.reads += 1
        head_repo = None if pull.head_repo_deleted else {
            "full_name": pull.head_repository or f"contributor/{self.repo}"}
        data = {"number": pull.number, "state": "open", "title": "a change", "body": pull.body,
                "html_url": f"https://github.com/{self.owner}/{self.repo}/pull/{pull.number}",
                "head": {"sha": pull.head_sha, "ref": pull.head_ref, "label": f"contributor:{pull.head_ref}",
                         "repo": head_repo},
                "base": {"sha": self.branches["main"], "ref": "main",
                         "repo": {"full_name": f"{self.owner}/{self.repo}"}},
                "labels": [self._label(n) for n in self.issue_labels.get(pull.number, [])],
                "author_association": pull.author_association,
                "user": self._user("contributor")}
        if pull.changed_files is not None:
            data["changed_files"] = pull.changed_files
        if self.on_pull_read is not None:
            self.on_pull_read(self, pull)  # the head may move after this read
        return 200, data

    def api_runs(self, workflow, *, query, body):
        if workflow not in self.runs and workflow not in self.workflows:
            return 404, _not_found()
        runs = list(reversed(self.runs.get(workflow, [])))  # newest first
        for key in ("head_sha", "event", "status", "branch"):
            if key in query:
                runs = [r for r in runs if r.get(key) == query[key][0]]
        per_page = min(int(query.get("per_page", ["30"])[0]), 100)
        page = int(query.get("page", ["1"])[0])
        return 200, {"total_count": len(runs),
                     "workflow_runs": copy.deepcopy(runs[(page - 1) * per_page: page * per_page])}

    def api_run(self, run_id, *, query, body):
        for runs in self.runs.values():
            for run in runs:
                if run["id"] == int(run_id):
                    return 200, copy.deepcopy(run)
        return 404, _not_found()

    def _find_run(self, run_id: str) -> dict | None:
        return next((r for rs in self.runs.values() for r in rs if run_id.isdigit() and r["id"] == int(run_id)), None)

    def _rerun(self, run_id: str, done: list[int]) -> tuple[int, Any]:
        run = self._find_run(run_id)
        if run is None:
            return 404, _not_found()
        if run["status"] != "completed" or run["conclusion"] == "action_required":
            # GitHub: a run in progress (or one held for approval) cannot be re-run.
            return 403, {"message": f"This workflow run is not completed: {run['status']}"}
        done.append(run["id"])
        # A re-run is a new attempt of the same run: same id, event and head.
        run.update(status="queued", conclusion=None, run_attempt=run["run_attempt"] + 1)
        return 201, {}

    def api_rerun_failed(self, run_id, *, query, body):
        return self._rerun(run_id, self.reruns)

    def api_rerun(self, run_id, *, query, body):
        return self._rerun(run_id, self.full_reruns)

    def api_approve(self, run_id, *, query, body):
        run = self._find_run(run_id)
        if run is None:
            return 404, _not_found()
        if "action_required" not in (run["status"], run["conclusion"]):
            return 403, {"message": "This run is not waiting for approval"}
        self.approved_runs.append(run["id"])
        run.update(status="queued", conclusion=None)
        return 201, {}

    def api_dispatch(self, workflow, *, query, body):
        wf = self.workflows.get(workflow)
        if wf is None:
            return 404, _not_found()
        if not isinstance(body, dict) or body.get("ref") not in self.branches:
            return 422, {"message": f"No ref found for: {body.get('ref') if isinstance(body, dict) else None}"}
        inputs = body.get("inputs") or {}
        unexpected = sorted(set(inputs) - set(wf.inputs))
        if unexpected:
            return 422, {"message": f"Unexpected inputs provided: {json.dumps(unexpected)}"}
        missing = sorted(n for n, required in wf.inputs.items() if required and not inputs.get(n))
        if missing:
            return 422, {"message": f"Required input '{missing[0]}' not provided"}
        if not all(isinstance(v, str) for v in inputs.values()):
            return 422, {"message": "inputs must be strings"}
        self.dispatches.append({"workflow": workflow, **body})
        run = self.add_run(workflow, head_sha=self.branches[body["ref"]], conclusion=None, status="queued",
                           event="workflow_dispatch", display_title=wf.run_name(inputs))
        if self.on_dispatch is not None:
            self.on_dispatch(self, run)
        return 204, None

    def api_create_status(self, sha, *, query, body):
        if not isinstance(body, dict) or body.get("state") not in ("error", "failure", "pending", "success"):
            return 422, {"message": "Validation Failed",
                         "errors": [{"resource": "Status", "field": "state", "code": "custom"}]}
        return 201, copy.deepcopy(self.add_status(sha, body["state"], body.get("context") or "default",
                                                  creator=self.status_creator,
                                                  description=body.get("description"),
                                                  target_url=body.get("target_url")))

    def add_status(self, sha: str, state: str, context: str, *, creator: str, description: str | None = None,
                   target_url: str | None = None) -> dict:
        """A commit status on `sha` created by `creator` (a `NAME[bot]` login is a Bot), newest of all."""
        sid = next(self._ids)
        status = {"id": sid, "node_id": f"SC_{sid}", "state": state, "context": context,
                  "description": description, "target_url": target_url,
                  "url": f"https://api.github.com/repos/{self.owner}/{self.repo}/statuses/{sha}",
                  "created_at": "2026-11-30T07:00:00Z", "updated_at": "2026-11-30T07:00:00Z",
                  "creator": {**self._user(creator), "type": "Bot" if creator.endswith("[bot]") else "User"}}
        self.statuses.setdefault(sha, []).append(status)
        return status

    def api_list_statuses(self, sha, *, query, body):
        """Every status on `sha`, newest first (GitHub's reverse chronological order), paged."""
        return 200, self._page(list(reversed(self.statuses.get(sha, []))), query)

    def api_tree(self, sha, *, query, body):
        tree = self.trees.get(sha)
        if tree is None:
            return 404, _not_found()
        if query.get("recursive") != ["1"]:
            tree = [e for e in tree if "/" not in e.path]
        url = f"https://api.github.com/repos/{self.owner}/{self.repo}/git"
        return 200, {"sha": sha, "url": f"{url}/trees/{sha}", "truncated": sha in self.truncated,
                     "tree": [{"path": e.path, "mode": e.mode, "type": e.type, "sha": e.sha,
                               **({"size": e.size} if e.size is not None else {}),
                               "url": f"{url}/{e.type}s/{e.sha}"} for e in tree]}

    def api_blob(self, sha, *, query, body):
        blob = self.blobs.get(sha)
        if blob is None:
            return 404, _not_found()
        encoded = base64.b64encode(blob.data).decode()
        content = "\n".join(encoded[i:i + 60] for i in range(0, len(encoded), 60)) + "\n"
        return 200, {"sha": sha, "node_id": f"B_{sha[:8]}", "size": len(blob.data), "encoding": "base64",
                     "url": f"https://api.github.com/repos/{self.owner}/{self.repo}/git/blobs/{sha}",
                     "content": content}

    # -- GitHub Actions: jobs, logs, artifacts ------------------------------------------------------
    @staticmethod
    def _page(items: list, query: dict) -> list:
        per_page = max(1, min(int(query.get("per_page", ["30"])[0]), 100))
        page = max(1, int(query.get("page", ["1"])[0]))
        return copy.deepcopy(items[(page - 1) * per_page: page * per_page])

    def _find_job(self, job_id: str) -> dict | None:
        return next((j for jobs in self.run_jobs.values() for j in jobs if str(j["id"]) == job_id), None)

    def api_run_jobs(self, run_id, *, query, body):
        jobs = self.run_jobs.get(int(run_id))
        if jobs is None:
            return 404, _not_found()
        wanted = query.get("filter", ["latest"])[0]
        if wanted not in ("latest", "all"):
            return 422, {"message": f"Invalid filter: {wanted}"}
        if wanted == "latest" and jobs:
            latest = max(j["run_attempt"] for j in jobs)
            jobs = [j for j in jobs if j["run_attempt"] == latest]
        return 200, {"total_count": len(jobs), "jobs": self._page(jobs, query)}

    def api_job_logs(self, job_id, *, query, body):
        if self._find_job(job_id) is None:
            return 404, _not_found()
        return 302, Raw(b"", (("Location", self.blob_url(f"/_blob/logs/{job_id}")),))

    def api_run_artifacts(self, run_id, *, query, body):
        artifacts = self.run_artifacts.get(int(run_id))
        if artifacts is None:
            if int(run_id) not in self.run_jobs:
                return 404, _not_found()
            artifacts = []
        page = self._page(artifacts, query)
        for a in page:
            a["url"] = f"{self.url}/repos/{self.owner}/{self.repo}/actions/artifacts/{a['id']}"
            a["archive_download_url"] = f"{a['url']}/zip"
        return 200, {"total_count": len(artifacts), "artifacts": page}

    def api_artifact_zip(self, artifact_id, *, query, body):
        artifact = next((a for arts in self.run_artifacts.values() for a in arts if str(a["id"]) == artifact_id),
                        None)
        if artifact is None:
            return 404, _not_found()
        if artifact["expired"]:
            return 410, {"message": "Artifact has expired",
                         "documentation_url": "https://docs.github.com/rest/actions/artifacts"}
        return 302, Raw(b"", (("Location", self.blob_url(f"/_blob/artifacts/{artifact_id}.zip")),))

    def _blob(self, raw_path: str, query: dict) -> tuple[int, Any]:
        """Blob storage: no Authorization needed, but the redirect's signature is."""
        if query.get("sig") != [self.signature(raw_path)]:
            return 403, Raw(b"<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>AuthenticationFailed</Code>"
                            b"</Error>", (("Content-Type", "application/xml"),))
        m = re.fullmatch(r"/_blob/logs/(\d+)", raw_path)
        if m and int(m.group(1)) in self.job_logs:
            return 200, Raw(self.job_logs[int(m.group(1))], (("Content-Type", "text/plain; charset=utf-8"),))
        m = re.fullmatch(r"/_blob/artifacts/(\d+)\.zip", raw_path)
        if m and int(m.group(1)) in self.artifact_zips:
            return 200, Raw(self.artifact_zips[int(m.group(1))], (("Content-Type", "application/zip"),))
        return 404, Raw(b"<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>BlobNotFound</Code></Error>",
                        (("Content-Type", "application/xml"),))


ROUTES: list[tuple[str, str, str]] = [
    ("GET", r"collaborators/(.+)/permission", "permission"),
    ("GET", r"labels/(.+)", "get_label"),
    ("GET", r"issues/(\d+)/labels", "issue_labels"),
    ("POST", r"issues/(\d+)/labels", "add_labels"),
    ("DELETE", r"issues/(\d+)/labels/(.+)", "remove_label"),
    ("POST", r"issues/(\d+)/comments", "comment"),
    ("POST", r"issues/comments/(\d+)/reactions", "reaction"),
    ("GET", r"pulls/(\d+)", "pull"),
    ("GET", r"actions/workflows/(.+)/runs", "runs"),
    ("POST", r"actions/runs/(\d+)/rerun-failed-jobs", "rerun_failed"),
    ("POST", r"actions/runs/(\d+)/rerun", "rerun"),
    ("POST", r"actions/runs/(\d+)/approve", "approve"),
    ("POST", r"actions/workflows/(.+)/dispatches", "dispatch"),
    ("POST", r"statuses/([0-9a-f]{40})", "create_status"),
    ("GET", r"commits/([0-9a-f]{40})/statuses", "list_statuses"),
    ("GET", r"git/trees/([0-9a-f]{40})", "tree"),
    ("GET", r"git/blobs/([0-9a-f]{40})", "blob"),
    ("GET", r"actions/runs/(\d+)", "run"),
    ("GET", r"actions/runs/(\d+)/jobs", "run_jobs"),
    ("GET", r"actions/jobs/(\d+)/logs", "job_logs"),
    ("GET", r"actions/runs/(\d+)/artifacts", "run_artifacts"),
    ("GET", r"actions/artifacts/(\d+)/zip", "artifact_zip"),
]


def _match(method: str, parts: list[str]) -> tuple[str, tuple] | None:
    # Match decoded segments, so an encoded '/' inside a label name stays one segment.
    for verb, pattern, name in ROUTES:
        pat_parts = pattern.split("/")
        if verb != method or len(pat_parts) != len(parts):
            continue
        args = []
        for pat, part in zip(pat_parts, parts, strict=True):
            m = re.fullmatch(pat, part, flags=re.DOTALL)
            if not m:
                break
            args.extend(m.groups())
        else:
            return name, tuple(args)
    return None


def _not_found() -> dict:
    return {"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}


class _Handler(BaseHTTPRequestHandler):
    github: FakeGitHub
    timeout = 10
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - keep test output clean
        pass

    def _serve(self) -> None:
        fake = self.github
        split = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._send(413, {"message": "request body too large"})
            return
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            self._send(400, {"message": "Problems parsing JSON"})
            return
        with fake.lock:
            if len(fake.requests) >= fake.max_requests:
                self._send(503, {"message": "the fake GitHub served too many requests"})
                return
            fake.requests.append(Request(self.command, split.path, query, body, self.headers.get("Authorization"),
                                         self.headers.get("Host"), self.headers.get("Accept")))
            failure = fake.failures.get((self.command, split.path))
            transient = fake.transient.get((self.command, split.path))
            if transient:
                status, message, headers = transient.pop(0)
                payload = json.dumps(message).encode()
                data = Raw(payload, (("Content-Type", "application/json; charset=utf-8"), *headers))
            elif failure is not None:
                status, data = failure[0], {"message": failure[1]}
            else:
                try:
                    status, data = fake.handle(self.command, split.path, query, body)
                except Exception as exc:  # a bug in the fake must not look like GitHub's answer
                    status, data = 599, {"message": f"fake GitHub crashed: {type(exc).__name__}: {exc}"}
        self._send(status, data)

    def _send(self, status: int, data: Any) -> None:
        if isinstance(data, Raw):
            self.send_response(status)
            for name, value in data.headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data.data)))
            self.end_headers()
            self.wfile.write(data.data)
            return
        payload = b"" if data is None else json.dumps(data).encode()
        self.send_response(status)
        if data is not None:
            self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("X-GitHub-Media-Type", "github.v3; format=json")
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_DELETE = do_PATCH = do_PUT = _serve


# -- helpers for tests that drive `ci-policy comment` ---------------------------------------------------

def copy_example(dest: Path) -> Path:
    shutil.copytree(EXAMPLE_REPO, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return dest


def comment_event(body: str, *, action: str = "created", login: str = "alice", user_id: int = 5001,
                  user_type: str = "User", sender_id: int | None = None, repository: str = "acme/minirl",
                  repository_id: int = 424242, number: int = 7, comment_id: int = 3141592,
                  on_pull_request: bool = True, author_association: str = "NONE") -> dict:
    """An `issue_comment` event payload as GitHub delivers it (the fields that matter, plus some)."""
    owner, name = repository.split("/")
    issue: dict[str, Any] = {"number": number, "title": "a change", "state": "open",
                             "user": {"login": "contributor", "id": 777, "type": "User"}}
    if on_pull_request:
        issue["pull_request"] = {"url": f"https://api.github.com/repos/{repository}/pulls/{number}",
                                 "html_url": f"https://github.com/{repository}/pull/{number}"}
    return {
        "action": action,
        "issue": issue,
        "comment": {"id": comment_id, "body": body, "author_association": author_association,
                    "user": {"login": login, "id": user_id, "type": user_type},
                    "html_url": f"https://github.com/{repository}/pull/{number}#issuecomment-{comment_id}"},
        "repository": {"id": repository_id, "full_name": repository, "name": name,
                       "owner": {"login": owner, "id": 99, "type": "Organization"},
                       "default_branch": "main", "private": False},
        "sender": {"login": login, "id": user_id if sender_id is None else sender_id, "type": user_type},
    }


def workflow_dispatch_definition(workflow_file: Path, run_name: str | None = None) -> Workflow:
    """The `workflow_dispatch` inputs and `run-name` of a real workflow file, as GitHub applies them.

    The run-name is evaluated (tests/workflow_eval.py) with the `inputs` context of the dispatch:
    the values sent over each input's default. A name that is empty or only whitespace is
    replaced by GitHub's own, here the workflow's name. `run_name` overrides the file's
    `run-name` template (as YAML parses it).
    """
    import yaml
    from workflow_eval import interpolate, to_string

    doc = yaml.safe_load(workflow_file.read_text(encoding="utf-8"))
    on = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` key as True
    declared = on["workflow_dispatch"]["inputs"]
    inputs = {name: bool(spec.get("required")) for name, spec in declared.items()}
    template = doc.get("run-name", "") if run_name is None else run_name
    name = doc.get("name", workflow_file.name)

    def render(values: dict[str, str]) -> str:
        context = {n: spec.get("default", "") for n, spec in declared.items()} | values
        shown = to_string(interpolate(template, {"inputs": context, "github": {"event_name": "workflow_dispatch"}}))
        return shown if shown.strip() else name

    return Workflow(inputs=inputs, run_name=render, name=name)
