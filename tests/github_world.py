"""The world of `ci-policy comment` tests: a fake GitHub (tests/github_fake.py) holding a pull
request, a trusted checkout and the PR's checkout, both copies of examples/gpu-repo.

- A pytest plugin (registered in conftest.py): the fixtures `gh` (the started fake) and `world`
  (a `World` whose `run(body, ...)` posts a comment through `ci-policy comment` and checks that
  the token appears nowhere but in the Authorization header).
- Test modules import the constants (REPO, PR, HEAD, ...) and `inputs` from here, never the fixtures.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from github_fake import FakeGitHub, comment_event, copy_example, workflow_dispatch_definition
from helpers import EXAMPLE_REPO

from ci_policy.cli import main

REPO, REPO_ID, PR, COMMENT_ID = "acme/minirl", 424242, 7, 3141592
P = f"/repos/{REPO}"
HEAD = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
USERS = {  # login -> (user id, repository role)
    "maria": (5001, "maintain"),
    "wendy": (5002, "write"),
    "ada": (5003, "admin"),
    "tom": (5004, "triage"),
    "rita": (5005, "read"),
    "hank": (40000001, "read"),  # in the ci-helpers user_ids allowlist
}
# The example's one caller workflow: the gateway dispatches it for the pipeline and for /rerun-test.
CALLER_WORKFLOW = EXAMPLE_REPO / ".github" / "workflows" / "ci-policy.yml"
# Its run-name as GitHub reads it (YAML-parsed; see tests/adapters/github/test_gateway.py,
# test_the_run_name_as_written_is_the_one_the_gateway_looks_for).
RUN_NAME_AS_WRITTEN = yaml.safe_load(CALLER_WORKFLOW.read_text())["run-name"]


def inputs(test_file: str, *, sha: str = HEAD, image_tag: str = "v2.1", sglang_pr: str = "4242",
           megatron_pr: str = "") -> dict:
    return {"pull_number": str(PR), "head_sha": sha, "test_file": test_file, "image_tag": image_tag,
            "sglang_pr": sglang_pr, "megatron_pr": megatron_pr}


# -- the world: a fake GitHub, a trusted checkout, a PR checkout ------------------------------------------

@dataclass
class Outcome:
    rc: int
    out: str
    err: str


class World:
    def __init__(self, gh: FakeGitHub, tmp: Path, token: str, capsys) -> None:
        self.gh, self.tmp, self.token, self.capsys = gh, tmp, token, capsys
        self.trusted = copy_example(tmp / "trusted")  # the default branch: policy, config, labels
        self.pr = copy_example(tmp / "pr")            # the PR head's files, served as its git tree
        self.commit_pr = True

    def policy(self, data: dict) -> None:
        (self.trusted / ".github/ci-commands.json").write_text(json.dumps(data))

    def example_policy(self) -> dict:
        return json.loads((self.trusted / ".github/ci-commands.json").read_text())

    def pr_bytes(self, rel: str) -> bytes:
        return (self.pr / rel).read_bytes()

    def run(self, body: str, *extra: str, login: str = "maria", **event) -> Outcome:
        uid = USERS.get(login, (6000, None))[0]
        event.setdefault("user_id", uid)
        self.gh.user_ids.setdefault(login, uid)
        (self.tmp / "event.json").write_text(json.dumps(
            comment_event(body, login=login, repository=event.pop("repository", REPO),
                          repository_id=event.pop("repository_id", REPO_ID), number=PR, comment_id=COMMENT_ID,
                          **event)))
        if self.commit_pr:
            self.gh.add_commit(HEAD, self.pr)
        self.capsys.readouterr()
        rc = main(["comment", "--trusted-repo", str(self.trusted), "--event-path", str(self.tmp / "event.json"),
                   "--repository", REPO, "--repository-id", str(REPO_ID), "--api-url", self.gh.url, *extra])
        out, err = self.capsys.readouterr()
        # The token goes to GitHub in the Authorization header, and nowhere else.
        assert self.token not in out and self.token not in err
        assert "Traceback" not in out + err
        for request in self.gh.requests:
            assert request.authorization == f"token {self.token}"
            assert self.token not in json.dumps(request.body) and self.token not in request.path
        assert self.token not in json.dumps(self.gh.comments)
        return Outcome(rc, out, err)

    def calls(self) -> list[tuple]:
        return self.gh.calls()


@pytest.fixture
def gh():
    fake = FakeGitHub("acme", "minirl").start()
    yield fake
    fake.stop()


@pytest.fixture
def world(gh: FakeGitHub, tmp_path: Path, monkeypatch, capsys) -> World:
    token = "ghs_" + secrets.token_hex(18)
    monkeypatch.setenv("GITHUB_TOKEN", token)
    for name in ("GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_REPOSITORY_ID", "GITHUB_API_URL"):
        monkeypatch.delenv(name, raising=False)
    for login, (uid, role) in USERS.items():
        gh.roles[login] = role
        gh.user_ids[login] = uid
    gh.default_role = "read"
    gh.repo_labels |= {"run-ci-megatron", "run-ci-fsdp", "run-ci-sglang", "run-ci-session", "run-ci-long",
                       "nightly", "bypass-fastfail", "documentation"}  # no run-ci-rocm
    gh.add_pull(PR, HEAD, body="Fixes the loss.\r\n\r\nci-image-tag: v2.1\r\nci-sglang-pr: 4242\r\n",
                labels=("documentation",))
    gh.pulls[PR].author_association = "MEMBER"  # a trusted author's fork: /rerun-test needs no approval
    # The one caller (ci-policy.yml): the inputs of its workflow_dispatch trigger and its run-name.
    gh.workflows["ci-policy.yml"] = workflow_dispatch_definition(CALLER_WORKFLOW)
    return World(gh, tmp_path, token, capsys)
