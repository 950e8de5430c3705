"""The pipeline's scan cache (`.github/workflows/pr-pipeline.yml`, plan job), in the simulator.

- Every run restores it (`actions/cache/restore`, pinned) before the plan, under a key of its own
  run that no entry has, falling back to the newest entry of its ci-policy ref (`restore-keys`);
  the plan line reads and writes it (`--cache`, outside the checkout).
- Only a schedule and a push to the default branch save it (`actions/cache/save`, pinned), under
  the key the restore step named: never a pull request's run (its cache would be its merge
  ref's anyway), nor a run the comment gateway dispatched for a pull request, nor a push to
  another branch.
"""

from __future__ import annotations

import dataclasses

import pytest
from test_pipeline import BASE, HEAD, SCENARIOS, Scenario, caller_event, pipeline
from workflow_eval import JobRun

RESTORE = "actions/cache/restore@5a3ec84eff668545956fd18022155c47e93e2684"
SAVE = "actions/cache/save@5a3ec84eff668545956fd18022155c47e93e2684"


def push(ref: str) -> Scenario:
    payload = {"before": BASE, "after": HEAD, "forced": False, "ref": ref,
               "repository": {"full_name": "octo/gpu-repo", "default_branch": "main"}}
    return Scenario("push", payload, {}, None, None, {}, github={"ref": ref})


RUNS = {**{name: SCENARIOS[name] for name in ("megatron", "fork-unapproved", "fork-approved", "nightly")},
        "push-main": push("refs/heads/main"), "push-branch": push("refs/heads/feature")}
SAVES = {"megatron": False, "fork-unapproved": False, "fork-approved": False, "nightly": True,
         "push-main": True, "push-branch": False}


def plan_job(sim) -> JobRun:  # type: ignore[no-untyped-def]
    [run] = sim.jobs["plan"].runs
    return run


@pytest.mark.parametrize("name", list(RUNS))
def test_every_run_restores_the_scan_cache_and_only_the_default_branchs_trusted_runs_save_it(name, tmp_path):
    s = RUNS[name]
    ref = caller_event(s).inputs["ci-policy-ref"]
    sim = pipeline(s, tmp_path)
    job = plan_job(sim)
    names = [step.name for step in job.steps]
    restore, save = job.step("Restore the scan cache"), job.step("Save the scan cache")
    assert names.index("Restore the scan cache") < names.index("Plan") < names.index("Save the scan cache")
    assert (restore.step["uses"], save.step["uses"]) == (RESTORE, SAVE)
    key = f"ci-policy-scan-Linux-{ref}-1001-1"
    assert restore.ran and restore.with_ == {"path": "ci-policy-scan-cache", "key": key,
                                             "restore-keys": f"ci-policy-scan-Linux-{ref}-"}
    assert save.ran is SAVES[name]
    if save.ran:
        assert save.with_ == {"path": "ci-policy-scan-cache", "key": key}
    # The plan read the checkout with that cache and stored its scans and splits there.
    assert "--cache ci-policy-scan-cache" in job.step("plan").step["run"]
    assert sorted(p.suffix for p in (tmp_path / "ci-policy-scan-cache").iterdir()) == [".json", ".json"]


def test_a_failed_plan_saves_no_scan_cache(tmp_path):
    sim = pipeline(dataclasses.replace(SCENARIOS["nightly"]), tmp_path, plan_fails=True)
    job = plan_job(sim)
    assert job.step("Restore the scan cache").ran and not job.step("Save the scan cache").ran


def test_a_rerun_saves_under_a_key_of_its_attempt(tmp_path):
    sim = pipeline(SCENARIOS["nightly"], tmp_path, run_attempt="2")
    ref = caller_event(SCENARIOS["nightly"]).inputs["ci-policy-ref"]
    assert plan_job(sim).step("Save the scan cache").with_["key"] == f"ci-policy-scan-Linux-{ref}-1001-2"
