"""`ci-policy pull-request` end to end (ci_policy/adapters/github/pulls.py through the CLI), against the
local fake of the GitHub REST API (tests/github_fake.py): the exact requests, the trust decided and
the diff written, for pull_request payloads and for `--number` (a run a comment command dispatched).
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest
from github_fake import FakeGitHub
from schema_check import assert_valid

from ci_policy.cli import main

REPO = "acme/minirl"
P = f"/repos/{REPO}"
HEAD = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
OLD = "feedfacecafebeef00112233445566778899aabb"
BASE = "0" * 40
DIFF = (
    "diff --git a/docs/guide.md b/docs/guide.md\n"
    "index 1111111..2222222 100644\n"
    "--- a/docs/guide.md\n"
    "+++ b/docs/guide.md\n"
    "@@ -1 +1 @@\n"
    "-old\n"
    "+new\n"
    "diff --git a/tests/e2e/test_fsdp_grpo.py b/tests/e2e/test_fsdp_grpo.py\n"
    "new file mode 100644\n"
    "index 0000000..3333333\n"
    "--- /dev/null\n"
    "+++ b/tests/e2e/test_fsdp_grpo.py\n"
    "@@ -0,0 +1 @@\n"
    "+x = 1\n"
)
NAME_STATUS = b"M\0docs/guide.md\0A\0tests/e2e/test_fsdp_grpo.py\0"
PULL = ("GET", f"{P}/pulls/7", {}, None)
STATUS = ("GET", f"{P}/commits/{HEAD}/statuses", {"per_page": "100", "page": "1"}, None)


def diff_request() -> tuple:
    return ("GET", f"{P}/pulls/7", {}, None)


@pytest.fixture
def token(monkeypatch) -> str:
    value = "ghs_" + secrets.token_hex(18)
    monkeypatch.setenv("GITHUB_TOKEN", value)
    for name in ("GITHUB_REPOSITORY", "GITHUB_API_URL", "GITHUB_OUTPUT"):
        monkeypatch.delenv(name, raising=False)
    return value


@pytest.fixture
def fork_pr(gh: FakeGitHub):
    pull = gh.add_pull(7, HEAD, labels=("run-ci-megatron", "documentation"))
    pull.diff = DIFF
    return pull


def event(pull: dict | None = None, **fields) -> dict:
    base = {"number": 7, "head": {"sha": HEAD, "repo": {"full_name": "contributor/minirl"}},
            "base": {"sha": BASE, "repo": {"full_name": REPO}},
            "labels": [{"name": "run-ci-megatron"}, {"name": "documentation"}],
            "author_association": "CONTRIBUTOR", **fields}
    return {"action": "synchronize", "number": 7, "pull_request": base if pull is None else pull,
            "repository": {"full_name": REPO}}


def run(capsys, gh: FakeGitHub, tmp_path: Path, token: str, *args: str, payload: dict | None = None
        ) -> tuple[int, str, str]:
    argv = ["pull-request", "--api-url", gh.url, *args]
    if payload is not None:
        (tmp_path / "event.json").write_text(json.dumps(payload))
        argv += ["--event-path", str(tmp_path / "event.json")]
    capsys.readouterr()
    rc = main(argv)
    out, err = capsys.readouterr()
    assert token not in out + err and "Traceback" not in out + err
    assert all(r.authorization == f"token {token}" for r in gh.requests)
    return rc, out, err


def outputs(path: Path) -> dict[str, str]:
    """The `name<<DELIMITER` blocks of a $GITHUB_OUTPUT file."""
    lines, values = path.read_text().split("\n"), {}
    i = 0
    while i < len(lines) - 1:
        name, delimiter = lines[i].split("<<")
        end = lines.index(delimiter, i + 1)
        values[name] = "\n".join(lines[i + 1:end])
        i = end + 1
    return values


def as_json(out: str) -> dict:
    data = json.loads(out)
    assert_valid("pull-request", data)
    assert data.pop("schema") == 1
    return data


# -- trust ------------------------------------------------------------------------------------------------

def test_a_fork_pr_without_approval_is_untrusted(capsys, gh, fork_pr, tmp_path, token):
    rc, out, err = run(capsys, gh, tmp_path, token, "--format", "json", payload=event())
    assert (rc, err) == (0, "")
    assert as_json(out) == {
        "number": 7, "head_sha": HEAD, "base_sha": BASE, "labels": ["run-ci-megatron", "documentation"],
        "trust": "untrusted",
        "trust_reason": f"an outside contributor's head: {HEAD} has no ci-policy/ok-to-test status",
        "diff_file": ""}
    assert gh.calls() == [STATUS]


def test_a_branch_of_the_base_repository_is_trusted_without_a_request(capsys, gh, fork_pr, tmp_path, token):
    payload = event(head={"sha": HEAD, "repo": {"full_name": "ACME/minirl"}})
    rc, out, _err = run(capsys, gh, tmp_path, token, "--format", "json", payload=payload)
    assert (rc, as_json(out)["trust"], as_json(out)["trust_reason"]) == (
        0, "trusted", "the head is a branch of acme/minirl")
    assert gh.calls() == []


@pytest.mark.parametrize("association", ["OWNER", "MEMBER", "COLLABORATOR"])
def test_an_owner_member_or_collaborator_from_a_fork_is_trusted(capsys, gh, fork_pr, tmp_path, token, association):
    rc, out, _err = run(capsys, gh, tmp_path, token, "--format", "json",
                        payload=event(author_association=association))
    assert (rc, as_json(out)["trust"]) == (0, "trusted")
    article = "an" if association == "OWNER" else "a"
    assert as_json(out)["trust_reason"] == f"the author is {article} {association.lower()} of acme/minirl"
    assert gh.calls() == []


@pytest.mark.parametrize("association", ["CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "NONE",
                                         "MANNEQUIN", "member"])
def test_other_associations_are_not_trusted(capsys, gh, fork_pr, tmp_path, token, association):
    rc, out, _err = run(capsys, gh, tmp_path, token, "--format", "json",
                        payload=event(author_association=association))
    assert (rc, as_json(out)["trust"]) == (0, "untrusted")


def test_a_deleted_fork_is_not_the_base_repository(capsys, gh, fork_pr, tmp_path, token):
    payload = event(head={"sha": HEAD, "repo": None})
    rc, out, _err = run(capsys, gh, tmp_path, token, "--format", "json", payload=payload)
    assert (rc, as_json(out)["trust"]) == (0, "untrusted")


def approve(gh: FakeGitHub, sha: str, state: str = "success", creator: str = "github-actions[bot]") -> dict:
    return gh.add_status(sha, state, "ci-policy/ok-to-test", creator=creator, description="approved by maria")


def test_an_approval_on_the_head_makes_a_fork_pr_approved(capsys, gh, fork_pr, tmp_path, token):
    gh.add_status(HEAD, "failure", "ci-policy/result", creator="github-actions[bot]", description="x")
    approve(gh, HEAD)
    rc, out, _err = run(capsys, gh, tmp_path, token, "--format", "json", payload=event())
    assert (rc, as_json(out)["trust"], as_json(out)["trust_reason"]) == (
        0, "approved", f"ci-policy/ok-to-test is success on {HEAD}")
    assert gh.calls() == [STATUS]


def test_an_approval_on_an_old_head_does_not_approve_the_new_one(capsys, gh, fork_pr, tmp_path, token):
    approve(gh, OLD)  # the maintainer approved the commit before the last push
    rc, out, _err = run(capsys, gh, tmp_path, token, "--format", "json", payload=event())
    assert (rc, as_json(out)["trust"]) == (0, "untrusted")
    assert gh.calls() == [STATUS]


def test_a_later_non_success_approval_status_wins(capsys, gh, fork_pr, tmp_path, token):
    approve(gh, HEAD)
    approve(gh, HEAD, "failure")
    rc, out, _err = run(capsys, gh, tmp_path, token, "--format", "json", payload=event())
    assert (rc, as_json(out)["trust"]) == (0, "untrusted")
    assert as_json(out)["trust_reason"] == (f"an outside contributor's head: {HEAD} has 'failure' as its "
                                            "ci-policy/ok-to-test status")


# -- --number: the PR as it is now -----------------------------------------------------------------------------

def test_number_reads_the_current_head_and_labels_through_the_api(capsys, gh, fork_pr, tmp_path, token):
    gh.issue_labels[7].append("run-ci-fsdp")  # added by a comment command after the last push
    approve(gh, HEAD)
    rc, out, err = run(capsys, gh, tmp_path, token, "--number", "7", "--repository", REPO, "--format", "json")
    assert (rc, err) == (0, "")
    assert as_json(out) == {"number": 7, "head_sha": HEAD, "base_sha": BASE,
                            "labels": ["run-ci-megatron", "documentation", "run-ci-fsdp"], "trust": "approved",
                            "trust_reason": f"ci-policy/ok-to-test is success on {HEAD}", "diff_file": ""}
    assert gh.calls() == [PULL, STATUS]


def test_a_pull_request_run_reads_its_labels_through_the_api_for_its_own_head(capsys, gh, fork_pr, tmp_path,
                                                                               token):
    """A re-run keeps its event's payload (the labels then): the plan job reads them now, for
    the head the run is for."""
    gh.issue_labels[7].append("run-ci-fsdp")
    rc, out, err = run(capsys, gh, tmp_path, token, "--number", "7", "--expect-head", HEAD, "--repository", REPO,
                       "--format", "json")
    assert (rc, err) == (0, "")
    assert as_json(out)["labels"] == ["run-ci-megatron", "documentation", "run-ci-fsdp"]
    assert gh.calls() == [PULL, STATUS]


def test_a_rerun_of_an_older_heads_run_is_refused(capsys, gh, fork_pr, tmp_path, token):
    """The run's checks attach to its own head: it never plans (nor reads the approval of) the PR's new head."""
    rc, out, err = run(capsys, gh, tmp_path, token, "--number", "7", "--expect-head", OLD, "--repository", REPO)
    assert (rc, out) == (1, "")
    assert err == (f"pull request #7: its head is now {HEAD}, not {OLD}, the commit this run is for\n"
                   "    hint: the run of the new head decides the pull request; re-run that one (`/rerun-failed-ci`), "
                   "not this one\n"
                   "ci-policy: 1 error\n")
    assert gh.calls() == [PULL]


@pytest.mark.parametrize("args, message", [
    (["--number", "7", "--expect-head", "abc"],
     "--expect-head: expected a 40-hex commit SHA, got 'abc'\n"
     "    hint: pass ${{ github.event.pull_request.head.sha }}\n"),
    (["--event-path", "e.json", "--expect-head", HEAD],
     "--expect-head: is the head a PR read through the API must still have\n    hint: pass it with --number N\n"),
])
def test_a_bad_expected_head_is_a_usage_error_before_any_request(capsys, gh, tmp_path, token, args, message):
    assert run(capsys, gh, tmp_path, token, "--repository", REPO, *args) == (
        2, "", "ci-policy pull-request: error: " + message)
    assert gh.requests == []


def test_number_for_a_same_repository_branch(capsys, gh, fork_pr, tmp_path, token, monkeypatch):
    fork_pr.head_repository = REPO
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
    rc, out, _err = run(capsys, gh, tmp_path, token, "--number", "7", "--format", "json")
    assert (rc, as_json(out)["trust"]) == (0, "trusted")
    assert gh.calls() == [PULL]


def test_a_member_from_a_fork_through_the_api(capsys, gh, fork_pr, tmp_path, token):
    fork_pr.author_association = "MEMBER"
    rc, out, _err = run(capsys, gh, tmp_path, token, "--number", "7", "--repository", REPO, "--format", "json")
    assert (rc, as_json(out)["trust"]) == (0, "trusted")
    assert gh.calls() == [PULL]


# -- the diff --------------------------------------------------------------------------------------------------

def test_the_diff_is_written_as_plan_reads_it(capsys, gh, fork_pr, tmp_path, token, monkeypatch):
    output = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    fork_pr.author_association = "OWNER"
    diff = tmp_path / "pr.diff"
    rc, out, err = run(capsys, gh, tmp_path, token, "--diff-out", str(diff), "--format", "github",
                       payload=event(author_association="OWNER"))
    assert (rc, err) == (0, "")
    assert diff.read_bytes() == NAME_STATUS
    assert gh.calls() == [diff_request()]
    assert gh.requests[0].accept == "application/vnd.github.diff"
    assert outputs(output) == {
        "number": "7", "head_sha": HEAD, "base_sha": BASE, "labels_json": '["run-ci-megatron","documentation"]',
        "trust": "trusted", "diff_file": str(diff)}
    assert out.splitlines()[-1] == f"diff file: {diff}"


def test_the_plan_reads_the_written_diff(capsys, gh, fork_pr, tmp_path, token, example_repo):
    diff = tmp_path / "pr.diff"
    assert run(capsys, gh, tmp_path, token, "--diff-out", str(diff), payload=event())[0] == 0
    assert main(["plan", "--repo", str(example_repo), "--event", "pull_request", "--diff", str(diff),
                 "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["diff"] == {"available": True, "files": ["docs/guide.md", "tests/e2e/test_fsdp_grpo.py"]}


def test_an_unavailable_diff_writes_nothing_and_warns(capsys, gh, fork_pr, tmp_path, token, monkeypatch):
    output = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    fork_pr.diff = None  # GitHub answers 406: too large
    diff = tmp_path / "pr.diff"
    rc, out, err = run(capsys, gh, tmp_path, token, "--diff-out", str(diff), "--format", "github",
                       payload=event())
    assert (rc, err) == (0, "")
    assert not diff.exists()
    assert out.splitlines()[0] == (
        "::warning::ci-policy pull-request: the diff is unavailable, so every runnable stage runs: the API gave "
        "no diff for #7: GitHub API error 406: Sorry, the diff exceeded the maximum number of files (300). "
        "Consider using 'List pull requests files' API or locally cloning the repository instead.")
    assert outputs(output) == {"number": "7", "head_sha": HEAD, "base_sha": BASE,
                               "labels_json": '["run-ci-megatron","documentation"]', "trust": "untrusted",
                               "diff_file": ""}
    assert gh.calls() == [STATUS, diff_request()]


def test_an_empty_diff_is_unavailable_never_no_changes(capsys, gh, fork_pr, tmp_path, token):
    fork_pr.diff = ""
    diff = tmp_path / "pr.diff"
    rc, out, err = run(capsys, gh, tmp_path, token, "--diff-out", str(diff), "--format", "json", payload=event())
    assert (rc, as_json(out)["diff_file"]) == (0, "")
    assert err == ("ci-policy pull-request: warning: the diff is unavailable, so every runnable stage runs: "
                   "the diff of #7: the diff names no changed file\n")
    assert not diff.exists()


def test_a_pr_with_no_changed_file_writes_the_no_changes_line(capsys, gh, fork_pr, tmp_path, token, monkeypatch):
    output = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    fork_pr.diff, fork_pr.changed_files = "", 0
    diff = tmp_path / "pr.diff"
    rc, out, err = run(capsys, gh, tmp_path, token, "--number", "7", "--repository", REPO, "--diff-out", str(diff),
                       "--format", "github")
    assert (rc, err) == (0, "")
    assert diff.read_bytes() == b"ci-policy: no changed file\n"
    assert outputs(output)["diff_file"] == str(diff)
    assert gh.calls() == [PULL, STATUS, diff_request()]


@pytest.mark.parametrize("changed_files", [None, 2])
def test_an_empty_diff_of_a_pr_that_counts_changed_files_or_none_is_unavailable(capsys, gh, fork_pr, tmp_path,
                                                                                token, changed_files):
    fork_pr.diff, fork_pr.changed_files = "", changed_files
    diff = tmp_path / "pr.diff"
    rc, out, err = run(capsys, gh, tmp_path, token, "--number", "7", "--repository", REPO, "--diff-out", str(diff),
                       "--format", "json")
    assert (rc, as_json(out)["diff_file"]) == (0, "")
    assert err == ("ci-policy pull-request: warning: the diff is unavailable, so every runnable stage runs: "
                   "the diff of #7: the diff names no changed file\n")
    assert not diff.exists()


def test_the_event_payloads_count_of_no_changed_file_is_read_too(capsys, gh, fork_pr, tmp_path, token):
    fork_pr.diff = ""
    diff = tmp_path / "pr.diff"
    rc, _out, err = run(capsys, gh, tmp_path, token, "--diff-out", str(diff), payload=event(changed_files=0))
    assert (rc, err) == (0, "")
    assert diff.read_bytes() == b"ci-policy: no changed file\n"


def test_the_plan_of_a_pr_with_no_changed_file_skips_every_diff_pruned_stage(capsys, gh, fork_pr, tmp_path, token):
    fork_pr.diff = ""
    diff = tmp_path / "pr.diff"
    assert run(capsys, gh, tmp_path, token, "--diff-out", str(diff), payload=event(changed_files=0))[0] == 0
    # A repository whose tests need no label, so every GPU stage has tests the diff could run.
    sglang = Path(__file__).resolve().parents[2] / "data" / "sglang-repo"
    assert main(["plan", "--repo", str(sglang), "--event", "pull_request", "--diff", str(diff),
                 "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["diff"] == {"available": True, "files": []}
    unchanged = ["skip: no file changed (the diff is empty)"]
    assert [(s["name"], s["decision"], s["reasons"]) for s in plan["stages"]] == [
        ("stage-a-cpu-only", "run", ["run: stage is not diff-pruned (1 selected)"]),
        *[(name, "skip", unchanged) for name in (
            "stage-b-test-1-gpu-small", "stage-b-test-1-gpu-large", "base-b-test-1-gpu-large",
            "stage-b-kernel-benchmark-1-gpu-large", "stage-b-test-1-gpu-small-amd")],
        ("nightly-1-npu-a3", "skip", ["skip: no selected tests (its tests are nightly-only; the regular cadence "
                                      "does not admit them)"]),
        ("per-commit-xpu", "skip", unchanged),
    ]


# -- refusals ---------------------------------------------------------------------------------------------------

def test_a_payload_that_is_not_a_pull_requests(capsys, gh, tmp_path, token):
    (tmp_path / "event.json").write_text(json.dumps({"schedule": "0 15 * * *"}))
    rc, out, err = run(capsys, gh, tmp_path, token, "--event-path", str(tmp_path / "event.json"))
    assert (rc, out) == (1, "")
    assert err == (f"{tmp_path}/event.json: event payload {tmp_path}/event.json is not a pull_request event's "
                   "(no pull_request object)\n    hint: pass --number N outside a pull_request event\n"
                   "ci-policy: 1 error\n")
    assert gh.calls() == []


def test_a_payload_nested_too_deeply(capsys, gh, tmp_path, token):
    (tmp_path / "event.json").write_text("[" * 100_000 + "]" * 100_000)
    rc, out, err = run(capsys, gh, tmp_path, token, "--event-path", str(tmp_path / "event.json"))
    assert (rc, out) == (1, "")
    assert err == (f"{tmp_path}/event.json: event payload {tmp_path}/event.json cannot be read as JSON: nested too "
                   "deeply\nci-policy: 1 error\n")
    assert gh.calls() == []


def test_a_payload_without_shas(capsys, gh, tmp_path, token):
    rc, _out, err = run(capsys, gh, tmp_path, token, payload=event({"number": 7, "head": {"sha": "abc"}}))
    assert rc == 1
    assert err == (f"{tmp_path}/event.json: the event payload's pull_request: no 40-hex head SHA, no 40-hex base "
                   "SHA, no base repository\n    hint: pass the payload of a pull_request event, or --number N\n"
                   "ci-policy: 1 error\n")


@pytest.mark.parametrize("labels", [5, True, "run-ci-megatron", {"name": "run-ci-megatron"}])
def test_a_payload_whose_labels_are_not_a_list(capsys, gh, tmp_path, token, labels):
    # Found by fuzzing: a number or a boolean here raised TypeError.
    rc, out, err = run(capsys, gh, tmp_path, token, payload=event(labels=labels))
    assert (rc, out) == (1, "")
    assert err == (f"{tmp_path}/event.json: the event payload's pull_request: labels is not a list\n"
                   "    hint: pass the payload of a pull_request event, or --number N\nci-policy: 1 error\n")
    assert gh.calls() == []


def test_a_payload_for_another_repository(capsys, gh, tmp_path, token):
    rc, _out, err = run(capsys, gh, tmp_path, token, "--repository", "evil/minirl", payload=event())
    assert rc == 1
    assert "the pull request is to acme/minirl, not to evil/minirl" in err
    assert gh.calls() == []


def test_number_without_a_repository_is_a_usage_error(capsys, gh, tmp_path, token):
    rc, out, err = run(capsys, gh, tmp_path, token, "--number", "7")
    assert (rc, out) == (2, "")
    assert err == ("ci-policy pull-request: error: --repository: the repository is unknown\n"
                   "    hint: pass --repository OWNER/REPO, or set $GITHUB_REPOSITORY\n")


def test_an_untrusted_payload_without_a_token_is_a_usage_error(capsys, gh, fork_pr, tmp_path, token, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "")
    rc, out, err = run(capsys, gh, tmp_path, token, payload=event())
    assert (rc, out) == (2, "")
    assert err == ("ci-policy pull-request: error: $GITHUB_TOKEN: is empty: reading the pull request needs a "
                   "token\n    hint: set GITHUB_TOKEN, or name another variable with --token-env\n")
    assert gh.calls() == []


def test_an_unknown_pull_request_is_an_error(capsys, gh, tmp_path, token):
    rc, out, err = run(capsys, gh, tmp_path, token, "--number", "8", "--repository", REPO)
    assert (rc, out, err) == (1, "", "ci-policy pull-request: error: GitHub API error 404: Not Found\n")


@pytest.mark.parametrize("args", [[], ["--number", "7", "--event-path", "e.json"], ["--number", "0"]])
def test_exactly_one_source_is_required(capsys, args):
    with pytest.raises(SystemExit) as info:
        main(["pull-request", *args])
    assert info.value.code == 2


# -- approval by identity: only the gateway's own ok-to-test statuses count ------------------------------------

def pages(n: int = 1) -> list[tuple]:
    return [("GET", f"{P}/commits/{HEAD}/statuses", {"per_page": "100", "page": str(page)}, None)
            for page in range(1, n + 1)]


def test_a_success_created_by_another_identity_does_not_approve_and_is_reported(capsys, gh, fork_pr, tmp_path,
                                                                               token):
    # Any integration holding `statuses: write` can write this context; only the gateway's identity approves.
    forged = approve(gh, HEAD, creator="some-ci-app[bot]")
    rc, out, err = run(capsys, gh, tmp_path, token, "--format", "json", payload=event())
    assert (rc, as_json(out)["trust"]) == (0, "untrusted")
    assert as_json(out)["trust_reason"] == f"an outside contributor's head: {HEAD} has no ci-policy/ok-to-test status"
    assert err == (f"ci-policy pull-request: warning: ignored the ci-policy/ok-to-test status {forged['id']} on "
                   f"{HEAD} created by some-ci-app[bot]: only one created by github-actions[bot] counts\n")
    assert gh.calls() == pages(1)


def test_the_identitys_success_approves_whatever_others_wrote_after_it(capsys, gh, fork_pr, tmp_path, token,
                                                                      monkeypatch):
    output = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    approve(gh, HEAD)
    revoke = approve(gh, HEAD, "failure", creator="mallory")  # a user's token with statuses: write
    rc, out, err = run(capsys, gh, tmp_path, token, "--format", "github", payload=event())
    assert (rc, err, outputs(output)["trust"]) == (0, "", "approved")
    assert out.splitlines()[0] == (
        f"::warning::ci-policy pull-request: ignored the ci-policy/ok-to-test status {revoke['id']} on {HEAD} "
        "created by mallory: only one created by github-actions[bot] counts")


def test_a_later_failure_by_the_identity_revokes(capsys, gh, fork_pr, tmp_path, token):
    approve(gh, HEAD)
    approve(gh, HEAD, "failure")
    approve(gh, HEAD, creator="octo-bot[bot]")  # newer, but not the gateway's
    rc, out, err = run(capsys, gh, tmp_path, token, "--format", "json", payload=event())
    assert (rc, as_json(out)["trust"]) == (0, "untrusted")
    assert as_json(out)["trust_reason"] == (f"an outside contributor's head: {HEAD} has 'failure' as its "
                                            "ci-policy/ok-to-test status")
    assert "created by octo-bot[bot]" in err


def test_an_app_identity_when_configured(capsys, gh, fork_pr, tmp_path, token):
    approve(gh, HEAD, creator="github-actions[bot]")
    rc, out, err = run(capsys, gh, tmp_path, token, "--approver", "acme-ci[bot]", "--format", "json",
                       payload=event())
    assert (rc, as_json(out)["trust"]) == (0, "untrusted")
    assert "created by github-actions[bot]: only one created by acme-ci[bot] counts" in err
    approve(gh, HEAD, creator="ACME-CI[bot]")  # logins compare case-insensitively, as GitHub's do
    rc, out, err = run(capsys, gh, tmp_path, token, "--approver", "acme-ci[bot]", "--format", "json",
                       payload=event())
    assert (rc, as_json(out)["trust"]) == (0, "approved")


def test_the_statuses_are_paged_newest_first_until_the_identitys_approval(capsys, gh, fork_pr, tmp_path, token):
    approve(gh, HEAD)
    for i in range(150):  # newer statuses of other contexts push the approval onto page 2
        gh.add_status(HEAD, "success", f"build/{i}", creator="github-actions[bot]")
    rc, out, err = run(capsys, gh, tmp_path, token, "--format", "json", payload=event())
    assert (rc, err, as_json(out)["trust"]) == (0, "", "approved")
    assert gh.calls() == pages(2)


def test_paging_is_bounded_and_says_so(capsys, gh, fork_pr, tmp_path, token):
    approve(gh, HEAD)
    for i in range(1000):
        gh.add_status(HEAD, "pending", f"shard/{i}", creator="github-actions[bot]")
    rc, out, err = run(capsys, gh, tmp_path, token, "--format", "json", payload=event())
    assert (rc, as_json(out)["trust"]) == (0, "untrusted")
    assert gh.calls() == pages(10)
    assert err == (f"ci-policy pull-request: warning: read the newest 1000 commit statuses of {HEAD} and stopped; "
                   "none of them is a ci-policy/ok-to-test status created by github-actions[bot]\n")


def test_a_creators_login_is_escaped_in_the_warning(capsys, gh, fork_pr, tmp_path, token, monkeypatch):
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "github_output"))
    forged = approve(gh, HEAD, creator="x\n::error::pwned%")
    rc, out, _err = run(capsys, gh, tmp_path, token, "--format", "github", payload=event())
    assert rc == 0
    assert out.splitlines()[0] == (
        f"::warning::ci-policy pull-request: ignored the ci-policy/ok-to-test status {forged['id']} on {HEAD} "
        "created by x%0A::error::pwned%25: only one created by github-actions[bot] counts")


@pytest.mark.parametrize("approver", ["", "-bot", "a b", "acme[bot][bot]", "x" * 40, "app[BOT]", "octo/cat"])
def test_an_approver_that_is_no_login_is_refused_before_any_request(capsys, gh, fork_pr, tmp_path, token,
                                                                    approver):
    rc, out, err = run(capsys, gh, tmp_path, token, f"--approver={approver}", payload=event())
    assert (rc, out) == (2, "")
    assert err.startswith("ci-policy pull-request: error: --approver: ") and "is not a GitHub login" in err
    assert "hint: name the identity the comment gateway writes ci-policy/ok-to-test with" in err
    assert gh.calls() == []
