"""The documents a plan is written as: the plan file, the per-stage plans and the step outputs.

- In: a `Plan`, the head commit's SHA (the tag of the images it builds; None: none is built),
  and the plan's `inputs` (`plan.inputs.inputs_dict`) when the caller computed the content ids.
- Out: the plan document's JSON data or text and each stage's per-stage plan text
  (`plan.written` builds the documents, `render.jsondoc` writes them), and the
  `$GITHUB_OUTPUT` lines of the plan and its stage jobs (`plan.jobs.stage_jobs`,
  `render.github.plan_outputs`): computed in the plan layer, formatted by the renderers.
- Refused: nothing of its own; a delimiter found in an output value is the renderer's ValueError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_policy.plan.build import Plan
from ci_policy.plan.jobs import StageJobs, stage_jobs
from ci_policy.plan.written import inputs_doc, plan_document, stage_documents
from ci_policy.render.github import plan_outputs
from ci_policy.render.jsondoc import document_dict, document_jsons


def plan_dict(plan: Plan, head_sha: str | None = None, inputs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The plan document (`plan.written.plan_document`) as JSON data; `inputs` written as given."""
    return document_dict(plan_document(plan, head_sha, None if inputs is None else inputs_doc(inputs)), inputs)


def plan_json(plan: Plan, head_sha: str | None = None, inputs: Mapping[str, Any] | None = None) -> str:
    """The plan file's text (`plan --format json`): two-space indented, each stage's tests a row."""
    return plan_jsons(plan, head_sha, inputs)[0]


def stage_plan_jsons(plan: Plan, head_sha: str | None = None,
                     inputs: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Each stage's plan file (`plan --stage-plans`, `plan.written.stage_documents`), by stage name.
    A stage job reads its own stage's tests, shards and settings, not every other stage's,
    nor the ids of every test file, nor the configuration."""
    return plan_jsons(plan, head_sha, inputs, whole=False, stages=True)[1]


def plan_jsons(plan: Plan, head_sha: str | None = None, inputs: Mapping[str, Any] | None = None, *,
               whole: bool = True, stages: bool = False, jobs: StageJobs | None = None) -> tuple[str, dict[str, str]]:
    """`plan_json` (with `whole`, else "") and `stage_plan_jsons` (with `stages`, else {}) from one
    `plan_document`: the plan job writing both builds the plan's document once (with `jobs`, the
    plan's stage jobs for `head_sha` the caller already has)."""
    doc = plan_document(plan, head_sha, None if inputs is None else inputs_doc(inputs), jobs)
    return document_jsons(doc, stage_documents(plan, doc) if stages else {}, whole=whole, inputs=inputs)


def github_outputs(plan: Plan, delimiter: str, head_sha: str | None = None, jobs: StageJobs | None = None) -> str:
    """`$GITHUB_OUTPUT` lines of the plan and of its stage jobs for `head_sha` (`jobs`, when the
    caller already has them)."""
    return plan_outputs(plan, stage_jobs(plan, head_sha) if jobs is None else jobs, delimiter)
