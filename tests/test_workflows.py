"""The example's pr-test.yml checked structurally against its ci-policy configuration, and the
ci-policy command lines of every workflow (the generic lint of every workflow and action is
tests/test_workflow_lint.py)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from ci_policy.config import load_config

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gpu-repo"
PR_TEST = EXAMPLE / ".github" / "workflows" / "pr-test.yml"


def workflows() -> list[Path]:
    found = []
    for directory in (EXAMPLE / ".github" / "workflows", ROOT / ".github" / "workflows"):
        if directory.is_dir():
            found += sorted(p for p in directory.iterdir() if p.suffix in (".yml", ".yaml"))
    return found


WORKFLOWS = [pytest.param(p, id=p.relative_to(ROOT).as_posix()) for p in workflows()]


def test_the_example_workflow_is_collected():
    assert PR_TEST in workflows()


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


def test_every_job_grants_only_read_permissions(workflow):
    for job_id, job in workflow["jobs"].items():
        assert "permissions" in job, job_id
        assert isinstance(job["permissions"], dict), job_id
        assert set(job["permissions"].values()) <= {"read"}, job_id


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
    values = {"$SHARD": "0", "$TEST_FILE": "tests/e2e/test_x.py", "$IMAGE_TAG": "v1"}
    commands = ci_policy_commands(workflow)
    for argv in commands:
        args = build_parser().parse_args([values.get(a, a) for a in argv[1:]])  # exits 2 on a bad flag
        assert args.command == argv[1]
    expected = {"comment-command.yml": 3, "rerun-test.yml": 1, "pr-test.yml": 5, "ci.yml": 3}
    assert len(commands) == expected.get(workflow.name, len(commands)), commands


def test_the_workflows_name_the_checkout_with_repo_and_the_trusted_one_with_trusted_repo():
    by_command: dict[str, list[list[str]]] = {}
    for path in workflows():
        for argv in ci_policy_commands(path):
            by_command.setdefault(argv[1], []).append(argv)
    assert sorted(by_command) == ["comment", "file-run", "lint", "plan", "run"]
    for argv in by_command["comment"]:
        assert argv[argv.index("--trusted-repo") + 1] == "." and "--repo" not in argv
    [file_run] = by_command["file-run"]
    assert file_run[file_run.index("--repo") + 1] == "pr"
    assert file_run[file_run.index("--config") + 1] == "trusted/.github/ci-policy.yml"



ACCEPTED_PATHS = ["tests/e2e/test_x.py", "test/registered/core/test_srt_engine.py",
                  "python/pkg/jit_kernel/benchmark/bench_rmsnorm.py", "test_top.py",
                  "tests/" + "a" * 239 + "/test_x.py"]  # 255 characters
REFUSED_PATHS = ["tests/../labels.py", "/etc/test_x.py", ".github/test_x.py", "tests/.hidden/test_x.py",
                 "tests//test_x.py", "tests/e2e/$(id)/test_x.py", "tests/e2e/test_x.py;id", "tests/e2e/test_x.sh", "",
                 "tests/" + "a" * 240 + "/test_x.py", "tests/e2e/test_\u00fcn.py", "tests/e2e/test_x.py\nid"]


@pytest.mark.parametrize("path, accepted", [(p, True) for p in ACCEPTED_PATHS] + [(p, False) for p in REFUSED_PATHS])
def test_the_rerun_workflow_accepts_exactly_the_paths_file_run_accepts(path, accepted):
    """The workflow checks its input before anything runs; it agrees with check_test_path."""
    from ci_policy.errors import InputError
    from ci_policy.plan.filerun import check_test_path

    jobs = yaml.safe_load((EXAMPLE / ".github" / "workflows" / "rerun-test.yml").read_text())["jobs"]
    [step] = [s for j in jobs.values() for s in j.get("steps", []) if s.get("name") == "Validate the inputs"]
    env = {"PATH": os.environ["PATH"], "PULL_NUMBER": "7", "HEAD_SHA": "a" * 40, "TEST_FILE": path,
           "IMAGE_TAG": "", "SGLANG_PR": "", "MEGATRON_PR": ""}
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                          capture_output=True, text=True, env=env, check=False, timeout=60)
    assert (proc.returncode, proc.stdout) == ((0, "") if accepted else (1, "::error::invalid test_file\n"))
    if accepted:
        assert check_test_path(path) == path
    else:
        with pytest.raises(InputError):
            check_test_path(path)
