"""The local GitHub fake (tests/github_fake.py) plus the issues endpoints the health report uses.

`IssueFakeGitHub` adds, with the real API's response shapes:

    GET    /repos/{o}/{r}/issues?state=&labels=&per_page=   (pull requests listed too, with a
                                                            `pull_request` key, as GitHub lists them)
    POST   /repos/{o}/{r}/issues                             ({title, body, labels})
    PATCH  /repos/{o}/{r}/issues/{n}                         ({title, body, state})

State: `issues`, number -> GitHub's issue object (`add_issue` adds one, or a pull request with
`pull=True`). Anything else is the base fake's.
"""

from __future__ import annotations

import itertools
import re
import urllib.parse
from typing import Any

from github_fake import FakeGitHub, _not_found


class IssueFakeGitHub(FakeGitHub):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.issues: dict[int, dict] = {}
        self._numbers = itertools.count(71)

    def add_issue(self, title: str, body: str = "", *, labels: tuple[str, ...] = (), state: str = "open",
                  pull: bool = False) -> dict:
        number = next(self._numbers)
        issue = {"number": number, "title": title, "body": body, "state": state,
                 "labels": [{"name": name} for name in labels],
                 "html_url": f"https://github.com/{self.owner}/{self.repo}/issues/{number}"}
        if pull:
            issue["pull_request"] = {"url": f"https://api.github.com/repos/{self.owner}/{self.repo}/pulls/{number}"}
        self.issues[number] = issue
        return issue

    def handle(self, method: str, raw_path: str, query: dict, body: Any) -> tuple[int, Any]:
        prefix = f"/repos/{self.owner}/{self.repo}/"
        rest = urllib.parse.unquote(raw_path[len(prefix):]) if raw_path.startswith(prefix) else None
        if rest == "issues" and method == "GET":
            state = query.get("state", ["open"])[0]
            wanted = set(query["labels"][0].split(",")) if "labels" in query else set()
            found = [i for i in sorted(self.issues.values(), key=lambda i: -i["number"])
                     if state in ("all", i["state"]) and wanted <= {label["name"] for label in i["labels"]}]
            return 200, found
        if rest == "issues" and method == "POST":
            issue = self.add_issue(body["title"], body.get("body", ""), labels=tuple(body.get("labels", ())))
            return 201, issue
        m = re.fullmatch(r"issues/(\d+)", rest or "")
        if m and method == "PATCH":
            issue = self.issues.get(int(m.group(1)))
            if issue is None:
                return 404, _not_found()
            issue.update({k: body[k] for k in ("title", "body", "state") if k in body})
            return 200, issue
        return super().handle(method, raw_path, query, body)
