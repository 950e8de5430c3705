"""The local GitHub fake (tests/github_fake.py) plus what the scheduled tune job uses.

`GitFakeGitHub` adds, with the real API's response shapes:

    GET    /repos/{o}/{r}                                  (default_branch)
    GET    /repos/{o}/{r}/git/ref/heads/{branch}           (404 for a missing branch)
    GET    /repos/{o}/{r}/git/commits/{sha}
    POST   /repos/{o}/{r}/git/blobs | git/trees | git/commits | git/refs
    PATCH  /repos/{o}/{r}/git/refs/heads/{branch}          ({sha, force})
    GET    /repos/{o}/{r}/pulls?state=&head=OWNER:BRANCH&base=
    POST   /repos/{o}/{r}/pulls        PATCH /repos/{o}/{r}/pulls/{n}

State: `branches` (name -> commit sha), `commits` (sha -> {tree, parents, message}),
`created_trees` (sha -> the entries posted), `blobs` (shared with the base fake), and
`open_pulls` (the pull requests opened through the API). `add_scheduled_run` adds a
completed run with its branch (`head_branch`, which the runs filter matches) and one
timing artifact. Anything else is the base fake's.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import urllib.parse
import zipfile
from typing import Any

from github_fake import Blob, FakeGitHub, _not_found, git_blob_sha


def zip_of(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


class GitFakeGitHub(FakeGitHub):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.default_branch = "main"
        root_tree = "7" * 40
        self.commits: dict[str, dict] = {self.branches["main"]: {"tree": root_tree, "parents": [], "message": "init"}}
        self.created_trees: dict[str, dict] = {}
        self.open_pulls: list[dict] = []
        self._pull_numbers = iter(range(41, 1000))

    def add_scheduled_run(self, workflow: str, run_id: int, *, event: str = "schedule", branch: str = "main",
                          artifact: bytes | None = None) -> dict:
        run = self.add_run(workflow, head_sha=f"{run_id:040d}", conclusion="success", event=event, run_id=run_id)
        run["head_branch"] = run["branch"] = branch
        n = len(self.runs[workflow])  # a later run is newer, at any count
        run["created_at"] = f"2026-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z"
        self.run_jobs.setdefault(run_id, [])
        if artifact is not None:
            self.add_artifact(run_id, f"ci-policy-timings-{run_id}", artifact, artifact_id=run_id + 7)
        return run

    def handle(self, method: str, raw_path: str, query: dict, body: Any) -> tuple[int, Any]:
        repo = f"/repos/{self.owner}/{self.repo}"
        if method == "GET" and raw_path == repo:
            return 200, {"id": 424242, "full_name": f"{self.owner}/{self.repo}", "default_branch": self.default_branch}
        rest = raw_path[len(repo) + 1:] if raw_path.startswith(repo + "/") else None
        if rest is None:
            return super().handle(method, raw_path, query, body)
        rest = urllib.parse.unquote(rest)
        if method == "GET" and rest.startswith("git/ref/heads/"):
            return self._get_ref(rest[len("git/ref/heads/"):])
        if method == "PATCH" and rest.startswith("git/refs/heads/"):
            return self._update_ref(rest[len("git/refs/heads/"):], body)
        m = re.fullmatch(r"git/commits/([0-9a-f]{40})", rest)
        if method == "GET" and m:
            commit = self.commits.get(m.group(1))
            if commit is None:
                return 404, _not_found()
            return 200, {"sha": m.group(1), "tree": {"sha": commit["tree"]}, "message": commit["message"],
                         "parents": [{"sha": p} for p in commit["parents"]]}
        if method == "POST" and rest == "git/blobs":
            data = body["content"].encode("utf-8") if body.get("encoding") == "utf-8" else b""
            sha = git_blob_sha(data)
            self.blobs[sha] = Blob(data)
            return 201, {"sha": sha, "url": f"https://api.github.com{repo}/git/blobs/{sha}"}
        if method == "POST" and rest == "git/trees":
            sha = hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()
            self.created_trees[sha] = body
            return 201, {"sha": sha, "tree": body["tree"], "truncated": False}
        if method == "POST" and rest == "git/commits":
            sha = hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()
            self.commits[sha] = {"tree": body["tree"], "parents": body["parents"], "message": body["message"]}
            return 201, {"sha": sha, "tree": {"sha": body["tree"]}, "message": body["message"],
                         "parents": [{"sha": p} for p in body["parents"]]}
        if method == "POST" and rest == "git/refs":
            name = body["ref"].removeprefix("refs/heads/")
            if name in self.branches:
                return 422, {"message": "Reference already exists"}
            self.branches[name] = body["sha"]
            return 201, self._ref(name)
        if rest == "pulls" and method == "GET":
            pulls = [p for p in self.open_pulls
                     if p["state"] == query.get("state", ["open"])[0]
                     and ("head" not in query or f"{self.owner}:{p['head']['ref']}" == query["head"][0])
                     and ("base" not in query or p["base"]["ref"] == query["base"][0])]
            return 200, pulls
        if rest == "pulls" and method == "POST":
            number = next(self._pull_numbers)
            pull = {"number": number, "state": "open", "title": body["title"], "body": body["body"],
                    "head": {"ref": body["head"]}, "base": {"ref": body["base"]},
                    "html_url": f"https://github.com/{self.owner}/{self.repo}/pull/{number}"}
            self.open_pulls.append(pull)
            return 201, pull
        m = re.fullmatch(r"pulls/(\d+)", rest)
        if m and method == "PATCH":
            for pull in self.open_pulls:
                if pull["number"] == int(m.group(1)):
                    pull.update({k: body[k] for k in ("title", "body") if k in body})
                    return 200, pull
            return 404, _not_found()
        return super().handle(method, raw_path, query, body)

    def _ref(self, name: str) -> dict:
        return {"ref": f"refs/heads/{name}", "object": {"sha": self.branches[name], "type": "commit"}}

    def _get_ref(self, name: str) -> tuple[int, Any]:
        if name not in self.branches:
            return 404, _not_found()
        return 200, self._ref(name)

    def _update_ref(self, name: str, body: Any) -> tuple[int, Any]:
        if name not in self.branches:
            return 422, {"message": "Reference does not exist"}
        if not body.get("force") and body["sha"] not in self._ancestors_of(body["sha"], self.branches[name]):
            return 422, {"message": "Update is not a fast forward"}
        self.branches[name] = body["sha"]
        return 200, self._ref(name)

    def _ancestors_of(self, sha: str, wanted: str) -> set[str]:
        seen, todo = set(), [sha]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            todo += self.commits.get(current, {}).get("parents", [])
        return seen if wanted in seen else set()

    def file_at(self, branch: str, path: str) -> str | None:
        """The text of `path` in the tree a commit of `branch` was created with (None if absent)."""
        tree = self.created_trees.get(self.commits[self.branches[branch]]["tree"])
        if tree is None:
            return None
        for entry in tree["tree"]:
            if entry["path"] == path:
                return self.blobs[entry["sha"]].data.decode("utf-8")
        return None
