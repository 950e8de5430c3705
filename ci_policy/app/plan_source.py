"""Where `list` and `run` take their plan from: a plan file of this run's plan job (`--plan FILE|DIR`),
checked against the checkout, or the plan inputs, planned here.

- In: a `PlanSource`: the checkout and configuration, the stage asked for, and either the plan
  file or directory, or a `PlanRequest` (the plan inputs).
- Out: `shard_plan(source)` the `Plan`; `stage_job(source, gated=...)` the stage a stage job runs
  (`plan.stagejob.StageJob`): from a per-stage plan that holds for the checkout, its stage and
  run settings alone when they suffice and no gate store is named (no configuration is parsed
  and nothing is planned). `checkout(source)` starts git's look at the checkout (`--plan` only),
  to run beside what the command does before it needs the answer.
- The configuration's content id is checked first, before it is parsed: under another
  configuration the discovered files and their stages mean something else. A checkout that is
  exactly the clean git tree the plan recorded is not listed, discovered or hashed at all.
  Only the stage asked for is read from the file.
- Refused: a plan file with plan inputs, or neither (`--event` is required), an unreadable,
  oversized or non-UTF-8 plan file (exit 2); a per-stage plan on any checkout but the clean tree
  it recorded, or a checkout that differs from the plan file (exit 1, naming what differs).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from ci_policy.adapters.git import CleanTree
from ci_policy.app.requests import PlanSource
from ci_policy.errors import UsageError

if TYPE_CHECKING:
    from ci_policy.plan.build import Plan
    from ci_policy.plan.stagejob import StageJob

def checkout(source: PlanSource) -> CleanTree | contextlib.nullcontext[None]:
    """With a plan file, git's look at the checkout (`adapters.git.CleanTree`), started now; else
    nothing (None). Either is a context manager: leaving it ends the git commands not waited for."""
    if source.plan_file is None:
        return contextlib.nullcontext()
    return CleanTree(source.repo)


def _planned_here(source: PlanSource) -> Plan:
    if source.inputs is None:
        raise UsageError("is required", source="--event",
                         hint="pass the plan inputs (--event ...), or --plan FILE from this run's plan job")
    # Imported here: a stage job given its plan scans nothing and plans nothing (tests/cli/
    # test_startup.py::test_a_stage_job_given_its_plan_loads_no_scan_store_or_github_module).
    from ci_policy.app.planning import plan

    return plan(source.inputs).plan


def _no_plan_inputs(source: PlanSource) -> None:
    if source.given:
        raise UsageError(f"the plan file holds the plan inputs; --{source.given[0].replace('_', '-')} is not "
                         "taken with it", source="--plan",
                         hint="pass either --plan FILE or the plan inputs (--event ...), not both")


def shard_plan(source: PlanSource, tree: CleanTree | None = None) -> Plan:
    """The plan `list` and `run` take their shard from; `tree`: `checkout(source)`, started by the caller."""
    if source.plan_file is None:
        return _planned_here(source)
    # Imported here: planning the plan inputs reads no plan file, nor the plan document's
    # classes (tests/cli/test_startup.py::test_list_planning_here_imports_no_plan_file_module).
    from ci_policy.app.plan_files import plan_of_file, read_plan

    _no_plan_inputs(source)
    with tree if tree is not None else checkout(source) as started:
        plan_file, changed = read_plan(source, started)
        return plan_of_file(source, plan_file, changed)


def stage_job(source: PlanSource, tree: CleanTree | None = None, *, gated: bool) -> StageJob:
    """The stage `run` runs: from a per-stage plan that holds, its stage and run settings alone
    when `plan.planfile.stage_job` finds them enough and no gate store is named (not `gated`)."""
    # Imported here, as in `shard_plan` (tests/cli/test_startup.py::
    # test_list_planning_here_imports_no_plan_file_module).
    from ci_policy.app.plan_files import plan_of_file, read_plan
    from ci_policy.plan.planfile import stage_job as planned_job
    from ci_policy.plan.stagejob import StageJob

    if source.plan_file is None:
        return StageJob.of(_planned_here(source), source.stage)
    _no_plan_inputs(source)
    with tree if tree is not None else checkout(source) as started:
        plan_file, changed = read_plan(source, started)
        if changed is None and not gated:
            job = planned_job(plan_file, source.stage)
            if job is not None:
                return job
        return StageJob.of(plan_of_file(source, plan_file, changed), source.stage)
