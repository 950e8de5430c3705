"""The one required check (`pr-test / result`) across events, end to end: the comment gateway
(`ci-policy comment`) and the pipeline's plan and result jobs (their own `run:` lines, in bash)
against one fake GitHub (tests/github_fake.py), the job graph evaluated by tests/workflow_eval.py.

A fork's pull request (outside contributor, labels added after its event):

1. its `pull_request` run plans it untrusted; its diff (megatron.py) calls for GPU tests,
   which may not run unapproved: the result fails with "awaiting `/ok-to-test <head>`" though
   every job that ran passed;
2. a maintainer's label command (the job's token: no labeled run) re-runs that run; its plan
   job reads the new label through the API, not from the re-run's old payload: the GPU
   stages it calls for are still held back for the approval;
3. `/ok-to-test <head>` records the approval and re-runs it again: approved, the GPU lanes
   run and the result passes; one failing lane fails it, and `/rerun-failed-ci` re-runs only
   the failed jobs, with the plan job's plan kept;
4. a new push is a new head and a new run, awaiting a new approval; a re-run of the old
   head's run is refused by its plan job, never planned for the new head.

With a GitHub App, a label command only adds the label: the App's `labeled` event is a new
pull_request run of its own, which plans the label's stages; nothing is re-run or dispatched.
"""

from __future__ import annotations

from pathlib import Path

from github_world import HEAD, PR, REPO
from test_pipeline import (
    CALLER,
    PIPELINE,
    SECRETS,
    WAVE_JOBS,
    prepare_workspace,
    result_step,
    run_step,
)
from workflow_eval import Event, Simulation, call_event, simulate

from ci_policy.plan.policy import UNTRUSTED_REASON

MOVED = "feedfacecafebeef00112233445566778899aabb"
GPU_STAGES = ("stage-b-1-gpu-h200", "stage-c-4-gpu-h200", "stage-c-4-gpu-mi350")
MEGATRON_DIFF = ("diff --git a/minirl/backends/megatron.py b/minirl/backends/megatron.py\n"
                 "index 1111111..2222222 100644\n--- a/minirl/backends/megatron.py\n"
                 "+++ b/minirl/backends/megatron.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n")


def payload(head: str, action: str = "synchronize") -> dict:
    """The pull_request event as GitHub delivered it: the labels of that moment (none)."""
    return {"action": action, "number": PR,
            "pull_request": {"number": PR, "head": {"sha": head, "repo": {"full_name": "contributor/minirl"}},
                             "base": {"sha": "0" * 40, "repo": {"full_name": REPO}},
                             "author_association": "CONTRIBUTOR", "labels": []},
            "repository": {"full_name": REPO, "default_branch": "main"}}


def event(head: str, attempt: int, action: str = "synchronize") -> Event:
    """The pull_request event as the caller file's `pipeline` job calls the pipeline for it."""
    github = {"ref": f"refs/pull/{PR}/merge", "sha": "e" * 40, "run_attempt": str(attempt), "repository": REPO}
    return call_event(yaml_load(CALLER), "pipeline", yaml_load(PIPELINE),
                      Event("pull_request", payload(head, action), {}, SECRETS, github=github))


def yaml_load(path: Path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))


class Pipeline:
    """Attempts of the PR pipeline run, each plan job reading the fake GitHub through the API."""

    def __init__(self, world, workspace: Path) -> None:
        self.world, self.workspace = world, workspace
        prepare_workspace_once(workspace)
        self.said: list[str] = []

    def api_step(self, step: dict) -> tuple[str, dict]:
        env = {**step["env"], "GITHUB_TOKEN": self.world.token, "GITHUB_REPOSITORY": REPO,
               "GITHUB_API_URL": self.world.gh.url}
        return run_step(step["step"], env, self.workspace)

    def run(self, head: str, attempt: int, *, lanes=None, kept: Simulation | None = None,
            action: str = "synchronize") -> Simulation:
        self.said.clear()
        hooks = {("result", "result"): result_step(self.workspace, self.said)}
        if kept is None:
            hooks |= {("plan", "pr-event"): self.api_step,
                      ("plan", "inputs"): lambda step: run_step(step["step"], step["env"], self.workspace),
                      ("plan", "plan"): lambda step: run_step(step["step"], step["env"], self.workspace)}
        return simulate(yaml_load(PIPELINE), event(head, attempt, action), hooks=hooks,
                        results={job: lanes for job in WAVE_JOBS} if lanes else None,
                        kept={job: kept.jobs[job] for job in ("plan", "images")} if kept else None)


def prepare_workspace_once(workspace: Path) -> None:
    from test_pipeline import SCENARIOS

    prepare_workspace(SCENARIOS["megatron"], workspace)


def stages_planned(sim: Simulation) -> set[str]:
    return {run.matrix["stage"] for job in WAVE_JOBS for run in sim.jobs[job].runs}


def finish(run: dict, sim: Simulation) -> None:
    """The fake's run record after the attempt: completed, with the result job's conclusion."""
    run.update(status="completed", conclusion="success" if sim.jobs["result"].result == "success" else "failure")


def awaiting(head: str) -> str:
    return (f"fail: awaiting `/ok-to-test {head}` from a maintainer: this head is an outside contributor's, not "
            "approved, so its accelerator stages did not run")


def test_a_fork_pr_from_its_first_run_to_approval_a_failed_lane_and_a_new_push(world, tmp_path):
    gh = world.gh
    gh.pulls[PR].author_association = "CONTRIBUTOR"
    gh.pulls[PR].diff = MEGATRON_DIFF
    gh.issue_labels[PR] = []
    pipeline = Pipeline(world, tmp_path / "runner")

    # 1. The pull_request run, no label yet: untrusted, and its diff calls for the megatron
    #    tests, which wait for an approval: the check fails though the cpu stage passed.
    run = gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion=None, status="in_progress")
    first = pipeline.run(HEAD, 1)
    assert first.jobs["plan"].outputs["trust"] == "untrusted"
    assert stages_planned(first) == {"stage-a-cpu"}
    assert first.jobs["result"].result == "failure"
    assert pipeline.said[0].splitlines()[7:11] == [awaiting(HEAD)] + [
        f"fail: stage {stage} did not run: {UNTRUSTED_REASON}" for stage in GPU_STAGES]
    finish(run, first)

    # 2. A label command with the job's token: the label, then a re-run of that run.
    gh.requests.clear()
    assert world.run("/run-ci-megatron", login="tom").rc == 0
    assert gh.full_reruns == [run["id"]] and gh.dispatches == []
    labelled = pipeline.run(HEAD, 2)
    assert labelled.jobs["plan"].outputs["labels_json"] == '["run-ci-megatron"]'  # read now, not the payload's []
    assert labelled.jobs["result"].result == "failure"
    assert pipeline.said[0].splitlines()[7:11] == [awaiting(HEAD)] + [
        f"fail: stage {stage} did not run: {UNTRUSTED_REASON}" for stage in GPU_STAGES]
    finish(run, labelled)

    # 3. /ok-to-test: the approval on the head, and a whole re-run; approved, the lanes run.
    assert world.run(f"/ok-to-test {HEAD}", login="maria").rc == 0
    assert gh.full_reruns == [run["id"], run["id"]] and gh.dispatches == []
    failing = pipeline.run(HEAD, 3, lanes=lambda e: "failure" if e["stage"] == "stage-c-4-gpu-mi350" else None)
    assert failing.jobs["plan"].outputs["trust"] == "approved"
    assert set(GPU_STAGES) <= stages_planned(failing)
    assert failing.jobs["result"].result == "failure"
    assert pipeline.said[0].splitlines()[7:] == ["fail: job stages-0 failed", "::error::job stages-0 failed"]
    finish(run, failing)

    # /rerun-failed-ci: only the failed jobs (the stages and the result that needs them).
    assert world.run("/rerun-failed-ci", login="maria").rc == 0
    assert gh.reruns == [run["id"]]
    passed = pipeline.run(HEAD, 4, kept=failing)
    assert passed.jobs["result"].result == "success"
    # A fork's pull_request run builds no image (read-only token): the lanes ran in the default tag.
    assert pipeline.said == ["ci-policy result: PASS\n  plan: success\n  images: skipped\n  stages-0: success\n"
                             "  stages-1: skipped\n  stages-2: skipped\n  stages-3: skipped\n"
                             "pass: every needed job succeeded (plan, stages-0) or was skipped (images, stages-1, "
                             "stages-2, stages-3)\n"]
    finish(run, passed)

    # 4. A new push: a new head and a new run, awaiting a new approval.
    gh.pulls[PR].head_sha = MOVED
    new_run = gh.add_run("ci-policy.yml", head_sha=MOVED, conclusion=None, status="in_progress")
    pushed = pipeline.run(MOVED, 1)
    assert pushed.jobs["plan"].outputs["trust"] == "untrusted"
    assert awaiting(MOVED) in pipeline.said[0]
    finish(new_run, pushed)
    # A re-run of the old head's run (say, from its page) is refused by its plan job.
    stale = pipeline.run(HEAD, 5)
    assert (stale.jobs["plan"].result, stale.jobs["stages-0"].result, stale.jobs["result"].result) == (
        "failure", "skipped", "failure")
    read = stale.jobs["plan"].runs[0].step("pr-event")
    assert (read.outcome, read.env["EVENT_HEAD_SHA"]) == ("failure", HEAD)
    assert not stale.jobs["plan"].runs[0].step("plan").ran
    assert pipeline.said[0].splitlines()[:9] == [
        "ci-policy result: FAIL", "  plan: failure", "  images: skipped", "  stages-0: skipped", "  stages-1: skipped",
        "  stages-2: skipped", "  stages-3: skipped",
        "fail: the plan is missing: the plan job wrote no plan_complete output, so nothing says which stages had "
        "to run", "fail: job plan failed"]
    # /rerun-failed-ci now finds the new head's run only.
    gh.requests.clear()
    assert world.run("/rerun-failed-ci", login="maria").rc == 0
    assert gh.reruns == [run["id"], new_run["id"]]


def test_the_jobs_results_are_named_as_the_result_job_needs_them():
    """Every job the result job needs has its result in NEEDS (built with format(), not toJSON)."""
    result = yaml_load(PIPELINE)["jobs"]["result"]
    [decide] = [s for s in result["steps"] if s.get("id") == "result"]
    for job in result["needs"]:
        assert f'"{job}":{{{{"result":"{{' in decide["env"]["NEEDS"]
    assert "toJSON(needs)" not in repr(yaml_load(PIPELINE)["jobs"]["result"])


def test_with_an_app_a_label_command_only_labels_and_its_labeled_run_is_the_check(world, tmp_path):
    """The App's token adds the label, and GitHub starts a `labeled` pull_request run for it: the
    gateway re-runs and dispatches nothing, and that new run plans the label's GPU stages."""
    gh = world.gh
    gh.pulls[PR].head_repository = REPO  # a branch of the repository: a trusted head
    gh.pulls[PR].author_association = "MEMBER"
    gh.pulls[PR].diff = MEGATRON_DIFF
    gh.issue_labels[PR] = []
    pipeline = Pipeline(world, tmp_path / "runner")
    earlier = gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="success")
    assert world.run("/run-ci-megatron", "--token-kind", "app", login="tom").rc == 0
    assert gh.full_reruns == gh.reruns == gh.approved_runs == [] and gh.dispatches == []
    assert earlier["run_attempt"] == 1
    labelled = pipeline.run(HEAD, 1, action="labeled")
    assert labelled.jobs["plan"].outputs["trust"] == "trusted"
    assert labelled.jobs["plan"].outputs["labels_json"] == '["run-ci-megatron"]'
    assert set(GPU_STAGES) <= stages_planned(labelled)
    assert labelled.jobs["result"].result == "success"
    assert pipeline.said[0].startswith("ci-policy result: PASS\n")
