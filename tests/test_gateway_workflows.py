"""The comment gateway's workflows: the reusable `.github/workflows/comment-gateway.yml` and
`rerun-test.yml`, and the example's one caller file, whose `comment` and `rerun-test` jobs call them.

Linted (zizmor with every persona, GitHub's workflow schema, shellcheck on every `run:` block)
and checked structurally: the grants of each job, the App-token step (pinned, and only when the
caller configures an App), values reaching shell steps only through `env:`, ci_policy checked out
at the caller's pinned commit and installed by its setup action, nothing of the PR checked out by
the gateway, and the callers pinning one placeholder commit consistently. The shell steps that
decide something (the rerun's input checks, its head and trust checks, how it runs a file and
the status it reports) are run for real with bash.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GATEWAY = ROOT / ".github" / "workflows" / "comment-gateway.yml"
RERUN = ROOT / ".github" / "workflows" / "rerun-test.yml"
CALLERS = ROOT / "examples" / "gpu-repo" / ".github" / "workflows"
CALLER = CALLERS / "ci-policy.yml"
FILES = [GATEWAY, RERUN, CALLER]
PARAMS = [pytest.param(p, id=p.relative_to(ROOT).as_posix()) for p in FILES]
# The commit of ci-policy the example callers pin (tests/test_workflow_lint.py checks it exists here).
PIN = re.search(r"@([0-9a-f]{40})", CALLER.read_text(encoding="utf-8")).group(1)
CHECKOUT = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683"
SETUP = "./.ci-policy-src/.github/actions/setup"

# Every inline `# zizmor: ignore[...]` of these files, each justified by the comment beside it:
# issue_comment is the trigger comment commands need; the setup action runs from ci_policy's own
# checkout (.ci-policy-src), which zizmor takes for this repository; a rerun's image tag is a
# validated pin that cannot be a digest.
SUPPRESSED = {
    ".github/workflows/comment-gateway.yml": ["self-repository"] * 4,
    ".github/workflows/rerun-test.yml": ["self-repository", "self-repository", "unpinned-images"],
    "examples/gpu-repo/.github/workflows/ci-policy.yml": ["dangerous-triggers"],
}


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def on(doc: dict) -> dict:
    return doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` key as True


def steps(doc: dict):
    for job_id, job in doc["jobs"].items():
        for step in job.get("steps", []):
            yield job_id, job, step


def tool(name: str) -> str:
    path = BIN / name
    assert path.exists(), f"{name} is not installed next to the test interpreter"
    return str(path)


def tool_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("ZIZMOR_")}


# -- lint ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("persona", ["regular", "pedantic", "auditor"])
@pytest.mark.parametrize("path", PARAMS)
def test_zizmor_finds_nothing_with_any_persona(path, persona):
    proc = subprocess.run([tool("zizmor"), "--offline", "--no-progress", "--color", "never", "--persona", persona,
                           str(path)], capture_output=True, text=True, timeout=300, check=False, env=tool_env(),
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings to report." in proc.stdout


@pytest.mark.parametrize("path", PARAMS)
def test_the_only_suppressed_findings_are_the_listed_ones_each_justified(path):
    proc = subprocess.run([tool("zizmor"), "--offline", "--no-progress", "--no-config", "--no-ignores",
                           "--persona", "auditor", "--format", "json", str(path)],
                          capture_output=True, text=True, timeout=300, check=False, env=tool_env(), cwd=ROOT)
    found = sorted(f["ident"] for f in json.loads(proc.stdout)) if proc.stdout.strip() else []
    assert found == sorted(SUPPRESSED[path.relative_to(ROOT).as_posix()]), proc.stdout + proc.stderr
    lines = path.read_text(encoding="utf-8").splitlines()
    ignores = [i for i, line in enumerate(lines) if "zizmor: ignore[" in line]
    assert len(ignores) == len(found)
    for i in ignores:
        # Justified: a comment before the suppression on the same line, or a comment line above.
        before = lines[i].split("# zizmor:")[0]
        assert "#" in before or lines[i - 1].strip().startswith("#"), lines[i]


@pytest.mark.parametrize("path", PARAMS)
def test_the_github_workflow_schema(path):
    proc = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(path)],
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert (proc.returncode, proc.stdout.strip()) == (0, "ok -- validation done"), proc.stdout + proc.stderr


RUN_STEPS = [pytest.param(path, job_id, step["name"], id=f"{path.name}:{job_id}:{step['name']}")
             for path in FILES for job_id, _job, step in steps(load(path)) if "run" in step]


def test_every_run_step_is_collected():
    assert len(RUN_STEPS) == 11


@pytest.mark.parametrize("path, job_id, name", RUN_STEPS)
def test_shellcheck_passes_on_every_run_step_and_no_expression_is_inside_one(path, job_id, name):
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "Debian's shellcheck package is not installed (apt-get install shellcheck)"
    step = next(s for j, _job, s in steps(load(path)) if j == job_id and s.get("name") == name)
    assert "${{" not in step["run"]
    proc = subprocess.run([shellcheck, "--shell", "bash", "-"], input=step["run"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# GitHub's own variables, and those a step assigns itself.
DEFAULT_VARIABLES = {"GITHUB_REPOSITORY", "GITHUB_WORKSPACE", "RUNNER_TEMP", "PYTHONPATH"}


@pytest.mark.parametrize("path", PARAMS)
def test_values_reach_shell_steps_only_through_env(path):
    doc = load(path)
    for job_id, job, step in steps(doc):
        if "run" not in step:
            continue
        defined = set(doc.get("env", {})) | set(job.get("env", {})) | set(step.get("env", {})) | DEFAULT_VARIABLES
        defined |= set(re.findall(r"(?:^|\s|;)(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=", step["run"]))
        used = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", step["run"]))
        assert used <= defined, (job_id, step.get("name"), used - defined)


# -- the callers ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("job_id, reusable", [("comment", "comment-gateway.yml"), ("rerun-test", "rerun-test.yml")])
def test_callers_pin_the_reusable_workflow_and_ci_policy_at_one_quoted_commit(job_id, reusable):
    doc = load(CALLER)
    job = doc["jobs"][job_id]
    m = re.fullmatch(rf"ci-policy/ci-policy/\.github/workflows/{re.escape(reusable)}@([0-9a-f]{{40}})", job["uses"])
    assert m and m.group(1) == PIN
    assert job["with"]["ci-policy-ref"] == m.group(1)
    # Quoted, so YAML never reads an all-digit SHA as a number.
    assert f'ci-policy-ref: "{m.group(1)}"' in CALLER.read_text(encoding="utf-8")
    assert doc["permissions"] == {}
    # The caller grants no more than the reusable workflow's jobs use.
    used: dict[str, str] = {}
    for called in load(ROOT / ".github" / "workflows" / reusable)["jobs"].values():
        for scope, level in called["permissions"].items():
            used[scope] = "write" if "write" in (level, used.get(scope)) else "read"
    assert job["permissions"] == used


def test_the_comment_job_runs_on_comments_and_passes_the_app_only_through_a_variable_and_a_secret():
    doc = load(CALLER)
    job = doc["jobs"]["comment"]
    assert on(doc)["issue_comment"] == {"types": ["created"]}
    assert job["if"] == "github.event_name == 'issue_comment'"
    # No pipeline-workflow or rerun-test-workflow: the gateway's defaults name this file.
    assert job["with"] == {"ci-policy-ref": PIN, "app-id": "${{ vars.CI_POLICY_APP_ID }}"}
    assert job["secrets"] == {"app-private-key": "${{ secrets.CI_POLICY_APP_PRIVATE_KEY }}"}
    assert CALLER.name == workflow_call(GATEWAY)["inputs"]["pipeline-workflow"]["default"] \
        == workflow_call(GATEWAY)["inputs"]["rerun-test-workflow"]["default"]


def test_the_rerun_job_takes_what_the_gateway_dispatches_and_keeps_the_run_name_it_looks_for():
    from github_fake import workflow_dispatch_definition
    from github_world import inputs

    from ci_policy.adapters.github.gateway import run_name

    definition = workflow_dispatch_definition(CALLER)
    sent = inputs("tests/e2e/test_x.py")
    # `stage` is sent only when the command names a backend or stage; the pipeline takes the other two.
    assert set(sent) | {"stage", "pull-request", "cadence"} == set(definition.inputs)
    assert not any(definition.inputs.values())
    assert definition.run_name(sent) == run_name(7, "tests/e2e/test_x.py", sent["head_sha"])
    job = load(CALLER)["jobs"]["rerun-test"]
    assert job["with"] == {"ci-policy-ref": PIN, "pull-request": "${{ inputs.pull_number }}",
                           "head-sha": "${{ inputs.head_sha }}", "file": "${{ inputs.test_file }}",
                           "stage": "${{ inputs.stage }}", "image-tag": "${{ inputs.image_tag }}"}


# -- the reusable workflows --------------------------------------------------------------------------------------

def workflow_call(path: Path) -> dict:
    return on(load(path))["workflow_call"]


@pytest.mark.parametrize("path", [GATEWAY, RERUN])
def test_the_contract_inputs(path):
    inputs = workflow_call(path)["inputs"]
    assert inputs["ci-policy-ref"] == {**inputs["ci-policy-ref"], "required": True, "type": "string"}
    assert inputs["ci-policy-repository"] == {**inputs["ci-policy-repository"], "required": False,
                                              "type": "string", "default": "ci-policy/ci-policy"}
    assert load(path)["permissions"] == {}


def test_each_gateway_job_passes_the_workflow_it_dispatches():
    jobs = load(GATEWAY)["jobs"]
    for job_id, option, variable, value in [
            ("labels", "--pipeline-workflow", "PIPELINE_WORKFLOW", "${{ inputs.pipeline-workflow }}"),
            ("approve", "--pipeline-workflow", "PIPELINE_WORKFLOW", "${{ inputs.pipeline-workflow }}"),
            ("rerun-failed", "--pipeline-workflow", "PIPELINE_WORKFLOW", "${{ inputs.pipeline-workflow }}"),
            ("rerun-test", "--rerun-test-workflow", "RERUN_TEST_WORKFLOW", "${{ inputs.rerun-test-workflow }}")]:
        [step] = [s for s in jobs[job_id]["steps"] if "ci-policy comment" in s.get("run", "")]
        argv = shlex.split(step["run"])
        assert argv[argv.index(option) + 1] == f"${variable}" and step["env"][variable] == value, job_id


def test_the_gateway_inputs_and_secret():
    call = workflow_call(GATEWAY)
    assert {k: (v["type"], v.get("default")) for k, v in call["inputs"].items()} == {
        "ci-policy-ref": ("string", None), "ci-policy-repository": ("string", "ci-policy/ci-policy"),
        "app-id": ("string", ""), "python": ("string", "python3"),
        # The workflows dispatched where .github/ci-commands.json names none: the one caller file.
        "pipeline-workflow": ("string", "ci-policy.yml"), "rerun-test-workflow": ("string", "ci-policy.yml")}
    assert set(call["secrets"]) == {"app-private-key"} and call["secrets"]["app-private-key"]["required"] is False


def test_the_rerun_inputs():
    call = workflow_call(RERUN)
    assert {k: (v["type"], v.get("required", False), v.get("default")) for k, v in call["inputs"].items()} == {
        "ci-policy-ref": ("string", True, None), "ci-policy-repository": ("string", False, "ci-policy/ci-policy"),
        "pull-request": ("string", True, None), "file": ("string", True, None), "head-sha": ("string", False, ""),
        "stage": ("string", False, ""), "image-tag": ("string", False, ""), "python": ("string", False, "python3")}


def test_approvals_are_written_and_counted_by_one_identity():
    """The approve job writes ci-policy/ok-to-test with the job's token (creator github-actions[bot]),
    and every command that counts approvals keeps the default --approver, that same identity."""
    assert load(GATEWAY)["jobs"]["approve"]["steps"][-1]["env"] == {
        "GITHUB_TOKEN": "${{ github.token }}", "PIPELINE_WORKFLOW": "${{ inputs.pipeline-workflow }}"}
    pipeline = ROOT / ".github" / "workflows" / "pr-pipeline.yml"
    runs = [step["run"] for path in (GATEWAY, RERUN, pipeline) for job in load(path)["jobs"].values()
            for step in job.get("steps", []) if "run" in step]
    counting = [run for run in runs if re.search(r"ci-policy (pull-request|comment) ", run)]
    assert len(counting) == 7 and not any("--approver" in run for run in counting)


GATEWAY_JOBS = {
    "labels": ({"contents": "read", "issues": "write", "pull-requests": "write", "actions": "write"},
               "add_label,clear_labels"),
    "approve": ({"contents": "read", "issues": "write", "pull-requests": "read", "statuses": "write",
                 "actions": "write"}, "ok_to_test"),
    "rerun-failed": ({"contents": "read", "issues": "write", "pull-requests": "read", "actions": "write"},
                     "rerun_failed_ci"),
    "rerun-test": ({"contents": "read", "issues": "write", "pull-requests": "read", "statuses": "read",
                    "actions": "write"}, "rerun_test"),
}


def test_each_gateway_job_holds_only_its_commands_grants_and_carries_out_only_them():
    jobs = load(GATEWAY)["jobs"]
    assert set(jobs) == set(GATEWAY_JOBS)
    for job_id, (permissions, kinds) in GATEWAY_JOBS.items():
        job = jobs[job_id]
        assert job["permissions"] == permissions, job_id
        assert job["if"].startswith("github.event.issue.pull_request && ")
        [run] = [s for s in job["steps"] if "run" in s]
        argv = shlex.split(run["run"])
        assert argv[:4] == ["ci-policy", "comment", "--trusted-repo", "repo"], job_id
        assert argv[argv.index("--commands") + 1] == kinds
        # Every kind is carried out by exactly one job, each marker routed to it by its `if`.
    assert sorted(k for _p, kinds in GATEWAY_JOBS.values() for k in kinds.split(",")) == sorted(
        ["add_label", "clear_labels", "ok_to_test", "rerun_failed_ci", "rerun_test"])


def test_the_app_token_is_minted_by_a_pinned_action_only_when_an_app_is_configured_and_only_for_labels():
    jobs = load(GATEWAY)["jobs"]
    minting = [(job_id, s) for job_id, _job, s in steps(load(GATEWAY))
               if s.get("uses", "").startswith("actions/create-github-app-token@")]
    [(job_id, step)] = minting
    assert job_id == "labels" and jobs["labels"]["steps"][0] == step
    assert re.fullmatch(r"actions/create-github-app-token@[0-9a-f]{40}", step["uses"])
    assert re.search(r"create-github-app-token@[0-9a-f]{40} # v\d+\.\d+\.\d+\n", GATEWAY.read_text())
    assert step["if"] == "inputs.app-id != ''"
    assert step["with"] == {"app-id": "${{ inputs.app-id }}", "private-key": "${{ secrets.app-private-key }}",
                            "permission-contents": "read", "permission-issues": "write",
                            "permission-pull-requests": "write"}
    [run] = [s for s in jobs["labels"]["steps"] if "run" in s]
    assert run["env"] == {"GITHUB_TOKEN": "${{ steps.app-token.outputs.token || github.token }}",
                          "TOKEN_KIND": "${{ inputs.app-id != '' && 'app' || 'github-token' }}",
                          "PIPELINE_WORKFLOW": "${{ inputs.pipeline-workflow }}"}
    assert shlex.split(run["run"])[-4:] == ["--token-kind", "$TOKEN_KIND", "--pipeline-workflow", "$PIPELINE_WORKFLOW"]
    assert "app-private-key" not in json.dumps({k: v for k, v in jobs.items() if k != "labels"})


@pytest.mark.parametrize("path", [GATEWAY, RERUN])
def test_every_job_needing_ci_policy_checks_it_out_at_the_pinned_commit_and_installs_it_with_its_action(path):
    for job_id, job in load(path)["jobs"].items():
        uses = [s.get("uses", "") for s in job["steps"]]
        runs = " ".join(s.get("run", "") for s in job["steps"])
        if "ci-policy " not in runs:
            continue
        i = uses.index(next(u for u in uses if u.startswith(CHECKOUT)))
        first = job["steps"][i]
        assert first["with"] == {"repository": "${{ inputs.ci-policy-repository }}",
                                 "ref": "${{ inputs.ci-policy-ref }}", "path": ".ci-policy-src",
                                 "persist-credentials": False}, job_id
        assert uses[i + 1] == SETUP, job_id
        assert job["steps"][i + 1]["with"]["extras"] == "github", job_id


@pytest.mark.parametrize("path", FILES)
def test_every_checkout_keeps_no_credentials_and_every_action_is_pinned(path):
    for job_id, _job, step in steps(load(path)):
        if "uses" not in step:
            continue
        assert step["uses"] == SETUP or re.fullmatch(r"[a-z-]+/[a-z-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
        if step["uses"].startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False, job_id


def test_the_gateway_checks_out_only_ci_policy_and_the_default_branch_never_the_pr():
    refs = sorted({s["with"]["ref"] for _j, _job, s in steps(load(GATEWAY)) if s.get("uses", "").startswith(CHECKOUT)})
    assert refs == ["${{ github.event.repository.default_branch }}", "${{ inputs.ci-policy-ref }}"]


def test_the_rerun_jobs_grants_the_pr_code_runs_with_none():
    jobs = load(RERUN)["jobs"]
    assert {job_id: job["permissions"] for job_id, job in jobs.items()} == {
        "resolve": {"contents": "read", "pull-requests": "read", "statuses": "write"},
        "run": {"contents": "read"},
        "report": {"contents": "read", "statuses": "write"},
    }
    run = jobs["run"]
    assert run["needs"] == "resolve"
    assert run["runs-on"] == "${{ fromJSON(needs.resolve.outputs.runs_on) }}"
    assert run["timeout-minutes"] == "${{ fromJSON(needs.resolve.outputs.timeout_minutes) }}"
    assert run["container"] == {"image": "${{ needs.resolve.outputs.container_image }}",
                                "options": "${{ needs.resolve.outputs.container_options }}"}
    assert [s["with"]["ref"] for s in run["steps"] if "with" in s] == ["${{ inputs.ci-policy-ref }}",
                                                                        "${{ needs.resolve.outputs.head_sha }}"]
    assert jobs["report"]["needs"] == ["resolve", "run"]
    assert jobs["report"]["if"] == "always() && needs.resolve.outputs.head_sha != ''"


def ci_policy_lines(script: str) -> list[str]:
    """Each `ci-policy ...` command of a script, continuation lines joined."""
    joined = script.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip().startswith("ci-policy ")]


def test_every_ci_policy_command_of_the_workflows_parses_with_the_values_it_gets():
    from ci_policy.cli.main import build_parser

    values = {"$TEST_FILE": "tests/e2e/test_x.py", "$IMAGE_TAG": "v1", "$TEST_STAGE": "",
              "$TOKEN_KIND": "app", "$PULL_REQUEST": "7",
              "$HEAD_SHA": "a" * 40, "${REQUESTED_SHA:-$HEAD_SHA}": "b" * 40, "$state": "success",
              "$RUN_URL": "https://github.com/acme/minirl/actions/runs/1"}
    found = []
    for path in (GATEWAY, RERUN):
        for _job_id, _job, step in steps(load(path)):
            for line in ci_policy_lines(step.get("run", "").replace(">-", "")):
                # Split as the shell would, keeping "$VAR" whole so each variable gets its value.
                argv = [a[1:-1] if a.startswith('"') and a.endswith('"') else a for a in shlex.split(line, posix=False)]
                argv = [values.get(a, a) for a in argv]
                args = build_parser().parse_args(argv[1:])  # exits 2 on a bad flag or value
                found.append(args.command)
    assert found == ["comment"] * 4 + ["pull-request", "file-run", "report-status", "report-status"]


# -- the rerun's shell steps, run --------------------------------------------------------------------------------

def rerun_step(name: str) -> str:
    return next(s["run"] for _j, _job, s in steps(load(RERUN)) if s.get("name") == name)


def bash(script: str, env: dict, cwd: Path | None = None) -> subprocess.CompletedProcess:
    # As GitHub runs a bash step: bash --noprofile --norc -eo pipefail.
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], capture_output=True,
                          text=True, env={"PATH": os.environ["PATH"], **env}, check=False, timeout=120, cwd=cwd)


ACCEPTED_PATHS = ["tests/e2e/test_x.py", "test/registered/core/test_srt_engine.py",
                  "python/pkg/jit_kernel/benchmark/bench_rmsnorm.py", "test_top.py",
                  "tests/" + "a" * 239 + "/test_x.py"]  # 255 characters
REFUSED_PATHS = ["tests/../labels.py", "/etc/test_x.py", ".github/test_x.py", "tests/.hidden/test_x.py",
                 "tests//test_x.py", "tests/e2e/$(id)/test_x.py", "tests/e2e/test_x.py;id", "tests/e2e/test_x.sh", "",
                 "tests/" + "a" * 240 + "/test_x.py", "tests/e2e/test_\u00fcn.py", "tests/e2e/test_x.py\nid"]


@pytest.mark.parametrize("path, accepted", [(p, True) for p in ACCEPTED_PATHS] + [(p, False) for p in REFUSED_PATHS])
def test_the_rerun_accepts_exactly_the_paths_file_run_accepts(path, accepted):
    from ci_policy.errors import InputError
    from ci_policy.plan.filerun import check_test_path

    proc = bash(rerun_step("Validate the inputs"),
                {"PULL_REQUEST": "7", "REQUESTED_SHA": "a" * 40, "TEST_FILE": path, "IMAGE_TAG": ""})
    assert (proc.returncode, proc.stdout) == ((0, "") if accepted else (1, "::error::invalid file\n"))
    if accepted:
        assert check_test_path(path) == path
    else:
        with pytest.raises(InputError):
            check_test_path(path)


@pytest.mark.parametrize("env, error", [
    ({"PULL_REQUEST": "0"}, "invalid pull-request"),
    ({"PULL_REQUEST": "7 "}, "invalid pull-request"),
    ({"REQUESTED_SHA": "A" * 40}, "invalid head-sha"),
    ({"REQUESTED_SHA": "a" * 39}, "invalid head-sha"),
    ({"IMAGE_TAG": "-v1"}, "invalid image-tag"),
    ({"IMAGE_TAG": "v1;id"}, "invalid image-tag"),
])
def test_the_rerun_refuses_malformed_inputs(env, error):
    base = {"PULL_REQUEST": "7", "REQUESTED_SHA": "", "TEST_FILE": "tests/e2e/test_x.py", "IMAGE_TAG": "v2.1"}
    assert bash(rerun_step("Validate the inputs"), base).returncode == 0
    proc = bash(rerun_step("Validate the inputs"), {**base, **env})
    assert (proc.returncode, proc.stdout) == (1, f"::error::{error}\n")


@pytest.mark.parametrize("requested, head, trust, outcome", [
    ("a" * 40, "a" * 40, "trusted", ""),
    ("a" * 40, "a" * 40, "approved", ""),
    ("", "a" * 40, "trusted", ""),
    ("a" * 40, "b" * 40, "trusted",
     f"::error::the PR's head is {'b' * 40}, not {'a' * 40} as the command named: comment again\n"),
    ("a" * 40, "a" * 40, "untrusted",
     f"::error::{'a' * 40} is an outside contributor's head without a ci-policy/ok-to-test approval\n"),
])
def test_the_rerun_refuses_a_moved_or_unapproved_head(requested, head, trust, outcome):
    proc = bash(rerun_step("Refuse a moved or unapproved head"),
                {"REQUESTED_SHA": requested, "HEAD_SHA": head, "TRUST": trust})
    assert (proc.returncode, proc.stdout) == (1 if outcome else 0, outcome)


def fake_ci_policy(tmp_path: Path) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ci-policy").write_text('#!/bin/bash\nprintf "%s\\n" "$@"\n')
    (bindir / "ci-policy").chmod(0o755)
    return bindir


@pytest.mark.parametrize("resolved, result, requested, state, description", [
    ("success", "success", "", "success", "tests/e2e/test_x.py passed"),
    ("success", "failure", "", "failure", "tests/e2e/test_x.py failed"),
    ("success", "cancelled", "c" * 40, "error", "the rerun of tests/e2e/test_x.py was cancelled"),
    ("failure", "skipped", "c" * 40, "error", "the rerun of tests/e2e/test_x.py did not run (failure/skipped)"),
])
def test_the_rerun_reports_its_result_on_the_head_the_command_named(tmp_path, resolved, result, requested, state,
                                                                    description):
    bindir = fake_ci_policy(tmp_path)
    run_url = "https://github.com/acme/minirl/actions/runs/77"
    proc = bash(rerun_step("Report the result"), {
        "PATH": f"{bindir}:{os.environ['PATH']}", "HEAD_SHA": "a" * 40, "REQUESTED_SHA": requested,
        "RESOLVED": resolved, "RESULT": result, "TEST_FILE": "tests/e2e/test_x.py", "RUN_URL": run_url,
        "GITHUB_REPOSITORY": "acme/minirl", "GITHUB_TOKEN": "t"})
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.splitlines() == [
        "report-status", "--sha", requested or "a" * 40, "--context", "ci-policy/rerun-test", "--state", state,
        "--description", description, "--target-url", run_url, "--repository", "acme/minirl"]


def workspace(tmp_path: Path, test: str) -> Path:
    ws = tmp_path / "ws"
    (ws / "repo" / "tests").mkdir(parents=True)
    (ws / ".ci-policy-src").symlink_to(ROOT)  # ci_policy at the pinned commit
    (ws / "repo" / "tests" / "test_x.py").write_text(textwrap.dedent(test))
    return ws


def test_a_gpu_file_runs_as_a_script_with_the_repositorys_interpreter_and_ci_policys_markers(tmp_path):
    ws = workspace(tmp_path, """\
        import os, sys
        from ci_policy import register_cuda_ci
        register_cuda_ci(est_time=60, suite="stage-b-1-gpu-h200", labels=["fsdp"])
        print("ran", os.getcwd().endswith("repo"), sys.executable)
        """)
    proc = bash(rerun_step("Run the file"), {"GITHUB_WORKSPACE": str(ws), "RUNNER_TEMP": str(tmp_path), "HW": "cuda",
                                             "TIMEOUT_SECONDS": "60", "PYTHON": sys.executable,
                                             "TEST_FILE": "tests/test_x.py"}, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert between_stopped_commands(proc.stdout) == f"ran True {sys.executable}\n"


def test_commands_resume_on_a_line_of_their_own_after_output_without_a_final_newline(tmp_path):
    ws = workspace(tmp_path, 'import sys\nsys.stdout.write("::error::half a line")\n')
    proc = bash(rerun_step("Run the file"), {"GITHUB_WORKSPACE": str(ws), "RUNNER_TEMP": str(tmp_path), "HW": "cuda",
                                             "TIMEOUT_SECONDS": "60", "PYTHON": sys.executable,
                                             "TEST_FILE": "tests/test_x.py"}, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert between_stopped_commands(proc.stdout) == "::error::half a line"


def between_stopped_commands(stdout: str) -> str:
    """The file's output, checked to be inside `::stop-commands::TOKEN` ... `::TOKEN::` (the
    latter on a line of its own, after a newline of its own)."""
    first, rest = stdout.split("\n", 1)
    token = first.removeprefix("::stop-commands::")
    assert re.fullmatch(r"[0-9a-f]{32}", token), first
    assert rest.endswith(f"\n::{token}::\n"), rest
    return rest.removesuffix(f"\n::{token}::\n")


def test_the_files_output_cannot_be_a_workflow_command_nor_write_the_runners_files(tmp_path):
    ws = workspace(tmp_path, """\
        import os
        print("::error file=x.py::forged")
        print("::add-mask::secret")
        print(sorted(k for k in os.environ if k in {"GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE",
                                                   "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"}))
        raise SystemExit(3)
        """)
    files = {name: str(tmp_path / name.lower()) for name in
             ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY")}
    runs = [bash(rerun_step("Run the file"), {"GITHUB_WORKSPACE": str(ws), "RUNNER_TEMP": str(tmp_path), "HW": "cuda",
                                              "TIMEOUT_SECONDS": "60", "PYTHON": sys.executable,
                                              "TEST_FILE": "tests/test_x.py", **files}, cwd=ws) for _ in range(2)]
    for proc in runs:
        assert proc.returncode == 3, proc.stderr  # the file's own status, after commands resume
        assert between_stopped_commands(proc.stdout) == (
            "::error file=x.py::forged\n::add-mask::secret\n['GITHUB_WORKSPACE']\n")
    assert runs[0].stdout.splitlines()[0] != runs[1].stdout.splitlines()[0]  # a new token each run


def test_a_cpu_file_runs_under_pytest_when_the_interpreter_has_it(tmp_path):
    ws = workspace(tmp_path, """\
        from ci_policy import register_cpu_ci
        register_cpu_ci(est_time=1, suite="stage-a-cpu")

        def test_ok():
            assert True
        """)
    proc = bash(rerun_step("Run the file"), {"GITHUB_WORKSPACE": str(ws), "RUNNER_TEMP": str(tmp_path), "HW": "cpu",
                                             "TIMEOUT_SECONDS": "60", "PYTHON": sys.executable,
                                             "TEST_FILE": "tests/test_x.py"}, cwd=ws)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    assert not (tmp_path / "rerun-venv").exists()  # pytest was there: nothing installed


def test_a_file_over_its_time_limit_is_stopped(tmp_path):
    ws = workspace(tmp_path, "import time\ntime.sleep(30)\n")
    proc = bash(rerun_step("Run the file"), {"GITHUB_WORKSPACE": str(ws), "RUNNER_TEMP": str(tmp_path), "HW": "rocm",
                                             "TIMEOUT_SECONDS": "1", "PYTHON": sys.executable,
                                             "TEST_FILE": "tests/test_x.py"}, cwd=ws)
    assert proc.returncode == 124  # timeout's status for a command it stopped
