"""The GitHub Actions workflows: linted by zizmor and the workflow JSON schema, and the
example's pr-test.yml checked structurally against its ci-policy configuration."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ci_policy.config import load_config

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gpu-repo"
PR_TEST = EXAMPLE / ".github" / "workflows" / "pr-test.yml"
BIN = Path(sys.executable).parent


def workflows() -> list[Path]:
    found = []
    for directory in (EXAMPLE / ".github" / "workflows", ROOT / ".github" / "workflows"):
        if directory.is_dir():
            found += sorted(p for p in directory.iterdir() if p.suffix in (".yml", ".yaml"))
    return found


WORKFLOWS = [pytest.param(p, id=p.relative_to(ROOT).as_posix()) for p in workflows()]


def tool(name: str) -> str:
    path = BIN / name
    assert path.exists(), f"{name} is not installed next to the test interpreter"
    return str(path)


def tool_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("ZIZMOR_")}


def test_the_example_workflow_is_collected():
    assert PR_TEST in workflows()


@pytest.mark.parametrize("workflow", WORKFLOWS)
def test_zizmor_offline_finds_nothing(workflow):
    proc = subprocess.run([tool("zizmor"), "--offline", "--no-progress", "--color", "never", str(workflow)],
                          capture_output=True, text=True, timeout=300, check=False, env=tool_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings to report." in proc.stdout
    # The same audit without configuration or ignore comments, as machine-readable findings.
    proc = subprocess.run([tool("zizmor"), "--offline", "--no-progress", "--no-config", "--no-ignores",
                           "--format", "json", str(workflow)],
                          capture_output=True, text=True, timeout=300, check=False, env=tool_env(), cwd=ROOT)
    findings = sorted(f["ident"] for f in json.loads(proc.stdout)) if proc.stdout.strip() else []
    assert findings == ACCEPTED_BY_DESIGN.get(workflow.relative_to(ROOT).as_posix(), []), proc.stdout + proc.stderr


# The only findings silenced by an inline `# zizmor: ignore[...]`, each justified there:
# issue_comment is the trigger comment commands need (nothing from the PR or the comment
# is executed), a rerun's container tag is a validated pin that cannot be a digest, and the
# setup action runs from ci_policy's own checkout (.ci-policy-src), not this repository.
ACCEPTED_BY_DESIGN = {
    "examples/gpu-repo/.github/workflows/comment-command.yml": ["dangerous-triggers"],
    ".github/workflows/comment-gateway.yml": ["self-repository"] * 4,
    ".github/workflows/rerun-test.yml": ["self-repository", "self-repository", "unpinned-images"],
}


@pytest.mark.parametrize("workflow", WORKFLOWS)
def test_workflow_matches_the_github_workflow_schema(workflow):
    proc = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(workflow)],
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "ok -- validation done"


# -- pr-test.yml, structurally -------------------------------------------------------------

@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(PR_TEST.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def config():
    return load_config(EXAMPLE)


def steps(workflow: dict):
    for job_id, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            yield job_id, step


def stage_jobs(workflow: dict) -> dict:
    return {job_id: job for job_id, job in workflow["jobs"].items() if "strategy" in job}


def test_top_level_permissions_are_empty(workflow):
    assert workflow["permissions"] == {}


def test_every_job_grants_only_read_permissions(workflow):
    for job_id, job in workflow["jobs"].items():
        assert "permissions" in job, job_id
        assert isinstance(job["permissions"], dict), job_id
        assert set(job["permissions"].values()) <= {"read"}, job_id


def test_every_action_is_pinned_to_a_commit_sha(workflow):
    uses = [step["uses"] for _, step in steps(workflow) if "uses" in step]
    uses += [job["uses"] for job in workflow["jobs"].values() if "uses" in job]
    assert uses, "the workflow uses no actions at all"
    for ref in uses:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}", ref), ref


def test_every_checkout_does_not_persist_credentials(workflow):
    checkouts = [(job_id, step) for job_id, step in steps(workflow)
                 if step.get("uses", "").startswith("actions/checkout@")]
    # The result job reads only the other jobs' results: it checks nothing out.
    assert {job_id for job_id, _ in checkouts} == set(workflow["jobs"]) - {"result"}
    for job_id, step in checkouts:
        assert step.get("with", {}).get("persist-credentials") is False, job_id


def test_no_expression_inside_a_run_step(workflow):
    runs = [(job_id, step["run"]) for job_id, step in steps(workflow) if "run" in step]
    assert runs
    for job_id, script in runs:
        assert "${{" not in script, (job_id, script)


def test_shell_variables_in_run_steps_come_from_env(workflow):
    """What a run step reads from the event reaches it through `env:`, never inline."""
    defaults = {"GITHUB_JOB"}
    for job_id, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            if "run" not in step:
                continue
            defined = set(workflow.get("env", {})) | set(job.get("env", {})) | set(step.get("env", {})) | defaults
            defined |= set(re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_]*)=", step["run"], re.MULTILINE))  # its own
            used = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", step["run"]))
            assert used <= defined, (job_id, used - defined)


def ci_policy_command(step: dict) -> list[str]:
    return shlex.split(step["run"])


def plan_inputs(argv: list[str]) -> list[str]:
    return argv[argv.index("--event"):]


def test_plan_job_runs_ci_policy_plan_with_github_format(workflow):
    plan = workflow["jobs"]["plan"]
    commands = [ci_policy_command(s) for s in plan["steps"] if "run" in s and "ci-policy plan" in s["run"]]
    assert len(commands) == 1
    argv = commands[0]
    assert argv[:2] == ["ci-policy", "plan"]
    assert argv[argv.index("--format") + 1] == "github"
    assert argv[argv.index("--repo") + 1] == "."
    step = next(s for s in plan["steps"] if "run" in s and "ci-policy plan" in s["run"])
    outputs = ("cadence", "raw_labels", "bypass_fastfail", "write_baseline", "skipped_stages", "matrix",
               "max_parallel", "cuda_image", "rocm_image", "invalid_files", "plan_complete")
    assert plan["outputs"] == {name: f"${{{{ steps.{step['id']}.outputs.{name} }}}}" for name in outputs}


def test_stage_jobs_are_the_planned_stages(workflow, config):
    planned = {s.name for s in config.stages if not s.external}
    assert set(stage_jobs(workflow)) == planned
    assert not {s.name for s in config.stages if s.external} & set(workflow["jobs"])


def test_each_stage_job_reads_the_plan(workflow, config):
    plan_argv = next(ci_policy_command(s) for s in workflow["jobs"]["plan"]["steps"]
                     if "run" in s and "ci-policy plan" in s["run"])
    for name, job in stage_jobs(workflow).items():
        stage = config.stage(name)
        needs = job["needs"] if isinstance(job["needs"], list) else [job["needs"]]
        assert "plan" in needs, name
        assert "skipped_stages" in job["if"], name
        assert job["if"] == f"${{{{ !contains(fromJSON(needs.plan.outputs.skipped_stages), '{name}') }}}}"
        assert job["strategy"]["matrix"]["shard"] == f"${{{{ fromJSON(needs.plan.outputs.matrix)['{name}'] }}}}"
        # The plan's parallelism, from its own output: `matrix` keeps the shape workflows read.
        assert job["strategy"]["max-parallel"] == (
            f"${{{{ fromJSON(needs.plan.outputs.max_parallel)['{name}'] }}}}")
        if stage.backend == "cpu":
            assert job["runs-on"] == "ubuntu-latest", name
        else:
            assert f"prepare-{stage.backend}-image" in needs, name
            assert job["runs-on"] == ["self-hosted", *stage.runs_on], name
        # The shard job recomputes its shard (`ci-policy run` or `list`) from exactly the plan job's
        # inputs, so its split is the one the plan job printed.
        shard_steps = [ci_policy_command(s) for s in job["steps"]
                       if "run" in s and re.match(r"ci-policy (run|list) ", s["run"])]
        assert len(shard_steps) == 1, name
        argv = shard_steps[0]
        assert argv[0] == "ci-policy" and argv[1] in ("run", "list"), name
        assert argv[argv.index("--stage") + 1] == "$GITHUB_JOB"
        assert argv[argv.index("--shard") + 1] == "$SHARD"
        assert plan_inputs(argv) == plan_inputs(plan_argv), name


def test_image_jobs_follow_the_plan(workflow):
    for backend in ("cuda", "rocm"):
        job = workflow["jobs"][f"prepare-{backend}-image"]
        assert job["needs"] == "plan"
        assert job["if"] == f"needs.plan.outputs.{backend}_image == 'build'"


def test_the_result_job_fails_on_an_incomplete_plan_or_any_job_that_did_not_succeed(workflow):
    result = workflow["jobs"]["result"]
    # Every other job, so a failed, cancelled or skipped-by-failure job cannot go unnoticed.
    assert set(result["needs"]) == set(workflow["jobs"]) - {"result"}
    assert (result["if"], result["permissions"], result["runs-on"]) == ("always()", {}, "ubuntu-latest")
    [step] = result["steps"]
    assert "uses" not in step
    # What the plan job decided reaches the script only through env:.
    assert step["env"] == {"PLAN_COMPLETE": "${{ needs.plan.outputs.plan_complete }}",
                           "INVALID_FILES": "${{ needs.plan.outputs.invalid_files }}",
                           "NEEDS": "${{ toJSON(needs) }}"}
    script = step["run"]
    assert 'if [ "$PLAN_COMPLETE" != "true" ]; then' in script
    assert "$INVALID_FILES" in script.split('if [ "$PLAN_COMPLETE"', 1)[1].split("\nfi\n", 1)[0]
    assert 'select(.value.result == "failure" or .value.result == "cancelled")' in script
    assert script.rstrip().endswith('exit "$status"')


@pytest.mark.parametrize("plan_complete, results, code, errors", [
    ("true", {"stage-a-cpu": "success", "stage-b-1-gpu-h200": "skipped"}, 0, []),
    ("false", {"stage-a-cpu": "success"}, 1,
     ["::error::the plan is incomplete (plan_complete='false'); invalid test files, not run: "
      '["tests/e2e/test_bad.py"]']),
    ("true", {"stage-a-cpu": "failure", "stage-b-1-gpu-h200": "cancelled"}, 1,
     ["::error::needed jobs did not succeed: stage-a-cpu failure,stage-b-1-gpu-h200 cancelled,"]),
    # The plan job itself failed: no outputs at all.
    ("", {"plan": "failure"}, 1,
     ["::error::the plan is incomplete (plan_complete=''); invalid test files, not run: ",
      "::error::needed jobs did not succeed: plan failure,"]),
])
def test_the_result_script(workflow, tmp_path, plan_complete, results, code, errors):
    script = workflow["jobs"]["result"]["steps"][0]["run"]
    env = {"PATH": os.environ["PATH"], "PLAN_COMPLETE": plan_complete,
           "INVALID_FILES": '["tests/e2e/test_bad.py"]' if plan_complete == "false" else "",
           "NEEDS": json.dumps({job: {"result": r, "outputs": {}} for job, r in results.items()})}
    # As GitHub runs a bash step: bash --noprofile --norc -eo pipefail.
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                          capture_output=True, text=True, env=env, check=False, timeout=60)
    assert (proc.returncode, proc.stdout.splitlines(), proc.stderr) == (code, errors, "")


def ci_policy_commands(path: Path) -> list[list[str]]:
    """Every `ci-policy ...` command line of a workflow's run steps, split as the shell would."""
    data = yaml.safe_load(path.read_text())
    found = []
    for job in data["jobs"].values():
        for step in job.get("steps", []):
            for line in step.get("run", "").replace(">-", "").split("\n\n"):
                argv = shlex.split(line)
                if argv[:1] == ["ci-policy"]:
                    found.append(argv)
    return found


@pytest.mark.parametrize("workflow", WORKFLOWS)
def test_every_ci_policy_command_in_a_workflow_parses(workflow):
    """A renamed or removed flag breaks the workflows that pass it: caught here, not in CI."""
    from ci_policy.cli.main import build_parser

    # Typed options get a value of their type in place of the step's variable.
    values = {"$SHARD": "0", "$TEST_FILE": "tests/e2e/test_x.py", "$IMAGE_TAG": "v1", "$TOKEN_KIND": "app",
              "$PULL_REQUEST": "7", "$HEAD_SHA": "a" * 40, "$RUN_URL": "https://github.com/o/r/actions/runs/1"}
    commands = ci_policy_commands(workflow)
    for argv in commands:
        args = build_parser().parse_args([values.get(a, a) for a in argv[1:]])  # exits 2 on a bad flag
        assert args.command == argv[1]
    expected = {"pr-test.yml": 5, "ci.yml": 3}
    assert len(commands) == expected.get(workflow.name, len(commands)), commands
