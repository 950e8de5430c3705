"""The reusable PR pipeline (pr-pipeline.yml) checked for the project's workflow rules, and the
ci-policy command lines of every workflow. The generic lint of every workflow and action is
tests/test_workflow_lint.py; how the pipeline's jobs run for each plan is tests/test_pipeline.py's."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gpu-repo"
CALLER = EXAMPLE / ".github" / "workflows" / "ci-policy.yml"
PIPELINE = ROOT / ".github" / "workflows" / "pr-pipeline.yml"


def workflows() -> list[Path]:
    found = []
    for directory in (EXAMPLE / ".github" / "workflows", ROOT / ".github" / "workflows"):
        if directory.is_dir():
            found += sorted(p for p in directory.iterdir() if p.suffix in (".yml", ".yaml"))
    return found


WORKFLOWS = [pytest.param(p, id=p.relative_to(ROOT).as_posix()) for p in workflows()]


def test_the_example_workflow_and_the_pipeline_are_collected():
    assert {CALLER, PIPELINE} <= set(workflows())


# -- the reusable PR pipeline, by the project's workflow rules ------------------------------

@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(PIPELINE.read_text(encoding="utf-8"))


def steps(workflow: dict):
    for job_id, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            yield job_id, step


SETUP_ACTION = "./.ci-policy-src/.github/actions/setup"

# No job declares a write grant: the two that write run with the caller job's grants.
WRITES: dict[str, set[str]] = {}
# Run with the caller job's grants (packages: write to push to ghcr.io; statuses: write for a
# dispatched run's ci-policy/result): GitHub checks a declared grant against the caller's before
# the run starts, even for a skipped job, and a caller grants those only where it uses them.
CALLER_GRANTED = {"images", "report"}


def test_no_top_level_permissions_so_the_image_and_report_jobs_have_the_callers(workflow):
    assert "permissions" not in workflow
    assert {job_id for job_id, job in workflow["jobs"].items() if "permissions" not in job} == CALLER_GRANTED


def test_every_job_grants_read_permissions_and_only_the_writes_it_needs(workflow):
    for job_id, job in workflow["jobs"].items():
        if job_id in CALLER_GRANTED:
            continue
        assert "permissions" in job, job_id
        assert isinstance(job["permissions"], dict), job_id
        writes = {scope for scope, grant in job["permissions"].items() if grant != "read"}
        assert set(job["permissions"].values()) <= {"read", "write"}, job_id
        assert writes == WRITES.get(job_id, set()), job_id


def test_every_action_is_pinned_to_a_commit_sha(workflow):
    uses = [step["uses"] for _, step in steps(workflow) if "uses" in step]
    assert uses, "the workflow uses no actions at all"
    for ref in uses:
        if ref == SETUP_ACTION:
            continue  # ci-policy's own action, from the checkout of the pinned ci-policy-ref
        assert re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}", ref), ref


def test_the_setup_action_comes_from_the_pinned_ci_policy_checkout(workflow):
    for job_id, job in workflow["jobs"].items():
        names = [s.get("uses", "") for s in job["steps"]]
        if SETUP_ACTION not in names:
            continue
        checkout = job["steps"][names.index(SETUP_ACTION) - 1]
        assert checkout["uses"].startswith("actions/checkout@"), job_id
        assert checkout["with"] == {"repository": "${{ inputs.ci-policy-repository }}",
                                    "ref": "${{ inputs.ci-policy-ref }}", "path": ".ci-policy-src",
                                    "persist-credentials": False}, job_id


def test_every_checkout_does_not_persist_credentials(workflow):
    checkouts = [(job_id, step) for job_id, step in steps(workflow)
                 if step.get("uses", "").startswith("actions/checkout@")]
    # Every job checks out ci-policy, the repository under test, or both; but the pipeline's
    # fast-fail job, which only names the waves a failed wave skipped.
    assert {job_id for job_id, _ in checkouts} == set(workflow["jobs"]) - {"fast-fail"}
    for job_id, step in checkouts:
        assert step.get("with", {}).get("persist-credentials") is False, job_id


def test_no_expression_inside_a_run_step(workflow):
    runs = [(job_id, step["run"]) for job_id, step in steps(workflow) if "run" in step]
    assert runs
    for job_id, script in runs:
        assert "${{" not in script, (job_id, script)


# Variables the runner sets in every step (GitHub's default environment variables; the run's id
# and attempt are numbers GitHub assigns, nothing an event's author chooses).
RUNNER_VARIABLES = {"GITHUB_JOB", "GITHUB_OUTPUT", "GITHUB_EVENT_PATH", "GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT"}


def test_shell_variables_in_run_steps_come_from_env(workflow):
    """What a run step reads from the event reaches it through `env:`, never inline."""
    for job_id, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            if "run" not in step:
                continue
            defined = set(workflow.get("env", {})) | set(job.get("env", {})) | set(step.get("env", {}))
            defined |= RUNNER_VARIABLES
            defined |= set(re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_]*)=", step["run"], re.MULTILINE))  # its own
            defined |= set(re.findall(r"\bfor ([A-Za-z_][A-Za-z0-9_]*) in\b", step["run"]))
            used = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", step["run"]))
            assert used <= defined, (job_id, used - defined)


def ci_policy_commands(path: Path) -> list[list[str]]:
    """Every `ci-policy ...` command line of a workflow's run steps, split as the shell would."""
    data = yaml.safe_load(path.read_text())
    found = []
    for job in data["jobs"].values():
        for step in job.get("steps", []):
            for line in step.get("run", "").replace(">-", "").split("\n\n"):
                argv = shlex.split(line)
                if argv[:2] == ["exec", "ci-policy"]:
                    argv = argv[1:]
                if argv[:1] == ["ci-policy"]:
                    found.append(argv)
    return found


@pytest.mark.parametrize("workflow", WORKFLOWS)
def test_every_ci_policy_command_in_a_workflow_parses(workflow):
    """A renamed or removed flag breaks the workflows that pass it: caught here, not in CI."""
    from ci_policy.cli.main import build_parser

    # Typed options get a value of their type in place of the step's variable.
    values = {"$SHARD": "0", "$TEST_FILE": "tests/e2e/test_x.py", "$IMAGE_TAG": "v1", "$TEST_STAGE": "gpu",
              "$PULL_NUMBER": "7",
              "$STATE": "failure", "$TOKEN_KIND": "app", "$PULL_REQUEST": "7", "$HEAD_SHA": "a" * 40,
              "$RUN_URL": "https://github.com/o/r/actions/runs/1", "$RUNS": "10"}
    commands = ci_policy_commands(workflow)
    for argv in commands:
        args = build_parser().parse_args([values.get(a, a) for a in argv[1:]])  # exits 2 on a bad flag
        assert args.command == argv[1]
    expected = {"ci-policy.yml": 0, "pr-pipeline.yml": 9, "ci.yml": 3}  # pr-pipeline: `run` in each of 4 wave jobs
    assert len(commands) == expected.get(workflow.name, len(commands)), commands


@pytest.mark.parametrize("path", WORKFLOWS)
def test_a_step_that_runs_tests_execs_ci_policy(path):
    """The step's shell would stay the tests' ancestor, with the step's env (the store URL) and
    stdout open to them through /proc: `ci-policy run` replaces it (and hides from the tests)."""
    data = yaml.safe_load(path.read_text())
    scripts = [step["run"] for job in data["jobs"].values() for step in job.get("steps", [])
               if "ci-policy run " in step.get("run", "")]
    assert len(scripts) == {"pr-pipeline.yml": 4, "ci.yml": 1}.get(path.name, 0)  # pr-pipeline: its 4 wave jobs
    for script in scripts:
        assert script.startswith("exec ci-policy run "), script


# -- installers never run inside a checkout (issue 14, finding 10) ----------------------------

INSTALLER_RE = re.compile(r"-m (?:pip|venv)\b")
SETUP_ACTION_FILE = ROOT / ".github" / "actions" / "setup" / "action.yml"


def run_steps_of(path: Path) -> list[tuple[str, dict]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if "runs" in data:  # a composite action
        return [("runs", step) for step in data["runs"]["steps"]]
    return [(job_id, step) for job_id, job in data["jobs"].items() for step in job.get("steps", [])]


@pytest.mark.parametrize("path", [*workflows(), SETUP_ACTION_FILE],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_installers_run_isolated_from_outside_the_checkout(path):
    """`python -m pip` in a checkout imports its `pip/` package: run from RUNNER_TEMP, with -I."""
    for job_id, step in run_steps_of(path):
        script = step.get("run", "")
        lines = script.splitlines()
        for i, line in enumerate(lines):
            if line.lstrip().startswith("#") or not INSTALLER_RE.search(line):
                continue
            assert re.search(r"\s-I -m (?:pip|venv)\b", line), (path.name, job_id, line)
            outside = step.get("working-directory") == "${{ runner.temp }}"
            cds = [entry for entry in lines[:i] if re.match(r"\s*cd ", entry)]
            if cds:
                outside = re.match(r'\s*cd "\$(?:RUNNER_TEMP|root)"', cds[-1]) is not None
            assert outside, (path.name, job_id, line)


def test_the_installer_rule_sees_every_installer():
    found = [(p.name, line.strip()) for p in [*workflows(), SETUP_ACTION_FILE] for _job, step in run_steps_of(p)
             for line in step.get("run", "").splitlines()
             if INSTALLER_RE.search(line) and not line.lstrip().startswith("#")]
    assert sorted(name for name, _line in found) == ["action.yml", "action.yml", "ci.yml", "release.yml",
                                                     "release.yml", "rerun-test.yml", "rerun-test.yml"]
