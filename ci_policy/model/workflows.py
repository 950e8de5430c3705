"""`lint`'s checks of the GitHub Actions workflows against the configuration (CP6xx).

- In: the validated `Config`, whether the checkout declares metric gates, and the
  `Workflow`s read as data by `ci_policy.read.workflows`.
- Out: `workflow_diagnostics(...)`: sorted error `Diagnostic`s, each with file, line and
  the field at fault:
  - a job calling a ci_policy reusable workflow (`OWNER/ci-policy/.github/workflows/NAME.yml@REF`):
    REF is a full 40-hex commit SHA (CP602), `with.ci-policy-ref` equals it (CP603), every
    `with` input is one the workflow declares (CP604) and every required one is given
    (CP609), and a `pr-pipeline.yml` call of a
    checkout that declares gates passes the store secrets it needs (CP605):
    `metrics-store-read-url`, plus `metrics-store-url` when the caller runs on `schedule`
    or `push` (the runs that write baselines); a `pr-pipeline.yml` call whose images are in
    a registry other than ghcr.io (`image_build.registry`) passes `registry-username` and
    `registry-password` (CP605);
  - the same calls' grants (CP610, one per scope, at the caller job): GitHub checks every job
    of a called workflow against the caller job's `permissions:` before the run starts, and
    a called workflow can only downgrade the caller's GITHUB_TOKEN permissions, never
    elevate them (GitHub's "Reusing workflows", access and permissions; the run fails with
    "The nested job 'X' is requesting 'S: write', but is only allowed 'S: none'", and an
    `if:` that skips the job does not help, actions/runner#4151). Needed: each callee job's own
    `permissions:` (`GRANTS`), plus what a job that declares none (and so runs with the
    caller's grants, `INHERITING`) needs for what the configuration uses: `packages: write`
    for the `images` job only when a backend has an image and `image_build.registry` is
    ghcr.io (another registry logs in with the caller's secrets). Granted: the job's
    `permissions:`, else the caller workflow's, else the repository's default, taken as
    GitHub's restricted one (`contents: read`, `packages: read`), which lint cannot see;
  - hand-written stage jobs (a `run:` step with `ci-policy run --stage X`): X is a
    configured stage (CP607), the job's `runs-on` equals the stage's `runs_on` as a set,
    `self-hosted` aside (CP608), and, when no workflow calls the reusable pipeline and
    every `--stage` is static, every non-external stage has a job (CP606, at the stage).
- Refused: nothing raised: every finding is one of the located diagnostics above; the
  workflow files were read by `read.workflows`, which reports one it cannot read.
- A `runs-on` or `--stage` decided at run time (an expression, a variable) is not compared.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ci_policy.config.images import GHCR
from ci_policy.config.top import Config
from ci_policy.errors import Diagnostic
from ci_policy.read.workflows import Job, Located, Workflow

REF_NOT_SHA = "CP602"
REF_MISMATCH = "CP603"
INPUT_UNKNOWN = "CP604"
INPUT_MISSING = "CP609"
SECRET_MISSING = "CP605"
STAGE_JOB_MISSING = "CP606"
STAGE_UNKNOWN = "CP607"
RUNS_ON_MISMATCH = "CP608"
GRANT_MISSING = "CP610"

_REUSABLE = re.compile(r"^[^/@\s]+/ci-policy/\.github/workflows/([A-Za-z0-9_.-]+)\.ya?ml@(.*)$")
_SHA = re.compile(r"[0-9a-f]{40}")
COMMON_INPUTS = ("ci-policy-ref", "ci-policy-repository")
# The inputs each reusable workflow of this repository declares (.github/workflows/NAME.yml;
# tests/model/test_lint_workflows.py compares them), and which of them are required.
INPUTS: dict[str, tuple[str, ...]] = {
    "pr-pipeline": (*COMMON_INPUTS, "pull-request", "cadence", "python", "concurrency-group"),
    "comment-gateway": (*COMMON_INPUTS, "app-id", "python", "pipeline-workflow", "rerun-test-workflow"),
    "rerun-test": (*COMMON_INPUTS, "pull-request", "file", "head-sha", "stage", "image-tag", "python"),
    "tune": (*COMMON_INPUTS, "workflow", "runs", "history-runs", "estimates-file", "python"),
}
REQUIRED_INPUTS: dict[str, tuple[str, ...]] = {
    "pr-pipeline": ("ci-policy-ref",),
    "comment-gateway": ("ci-policy-ref",),
    "rerun-test": ("ci-policy-ref", "pull-request", "file"),
    "tune": ("ci-policy-ref", "workflow"),
}
READ_SECRET, WRITE_SECRET = "metrics-store-read-url", "metrics-store-url"

# The `permissions:` each job of a reusable workflow of this repository declares
# (.github/workflows/NAME.yml, jobs.<id>.permissions; tests/model/test_lint_workflows.py
# compares them), in file order. GitHub checks all of them when the caller's run starts.
GRANTS: dict[str, tuple[tuple[str, tuple[tuple[str, str], ...]], ...]] = {
    "pr-pipeline": (
        ("plan", (("contents", "read"), ("pull-requests", "read"), ("statuses", "read"))),
        ("stages-0", (("contents", "read"), ("packages", "read"))),
        ("stages-1", (("contents", "read"), ("packages", "read"))),
        ("stages-2", (("contents", "read"), ("packages", "read"))),
        ("stages-3", (("contents", "read"), ("packages", "read"))),
        ("fast-fail", ()),
        ("result", (("contents", "read"),)),
    ),
    "comment-gateway": (
        ("labels", (("contents", "read"), ("issues", "write"), ("pull-requests", "write"), ("actions", "write"))),
        ("approve", (("contents", "read"), ("issues", "write"), ("pull-requests", "read"), ("statuses", "write"),
                     ("actions", "write"))),
        ("rerun-failed", (("contents", "read"), ("issues", "write"), ("pull-requests", "read"), ("actions", "write"))),
        ("rerun-test", (("contents", "read"), ("issues", "write"), ("pull-requests", "read"), ("statuses", "read"),
                        ("actions", "write"))),
    ),
    "rerun-test": (
        ("resolve", (("contents", "read"), ("pull-requests", "read"), ("statuses", "write"))),
        ("run", (("contents", "read"),)),
        ("report", (("contents", "read"), ("statuses", "write"))),
    ),
    "tune": (
        ("tune", (("actions", "read"), ("contents", "write"), ("pull-requests", "write"))),
        ("history", (("actions", "read"),)),
        ("report", (("contents", "read"), ("issues", "write"))),
    ),
}


def _image_job_needs(config: Config, gateway: bool) -> tuple[tuple[str, str], ...]:
    """The image job checks out the head and, on ghcr.io, pushes with the job's token."""
    if not config.images:
        return ()  # `images_to_build` is always empty: the job never runs
    return (("contents", "read"), *((("packages", "write"),) if config.image_build.registry == GHCR else ()))


def _report_job_needs(config: Config, gateway: bool) -> tuple[tuple[str, str], ...]:
    """The report job runs only in a pipeline run the comment gateway dispatched: it checks out
    ci-policy and writes the commit status ci-policy/result."""
    return (("contents", "read"), ("statuses", "write")) if gateway else ()


# The jobs that declare no `permissions:` (in a workflow without top-level ones): they run
# with the caller job's grants, so GitHub checks nothing for them at startup, and a caller
# grants what they need only when its configuration (or its use of the comment gateway, the
# `bool`) uses them.
INHERITING: dict[str, dict[str, Callable[[Config, bool], tuple[tuple[str, str], ...]]]] = {
    "pr-pipeline": {"images": _image_job_needs, "report": _report_job_needs},
}
# Why an inheriting job needs its grants, and what fails without them, for the message.
INHERITING_WHY = {("pr-pipeline", "images"): ("for the images it pushes to ghcr.io (image_build.registry)",
                                              "the image push would fail"),
                  ("pr-pipeline", "report"): ("to report ci-policy/result on the PR head of a run the comment "
                                              "gateway dispatched", "that report would fail")}
LEVELS = {"none": 0, "read": 1, "write": 2}
# GitHub's restricted default for the GITHUB_TOKEN (a job and its workflow without
# `permissions:` get the repository's default, which lint cannot see; permissive is read/write).
RESTRICTED_DEFAULT = (("contents", "read"), ("packages", "read"))
REGISTRY_SECRETS = ("registry-username", "registry-password")
WRITING_TRIGGERS = ("schedule", "push")


def workflow_diagnostics(config: Config, has_gates: bool, workflows: Sequence[Workflow]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    calls_pipeline = False
    # The comment gateway may dispatch the pipeline, whose report job then writes a status.
    gateway = any(match.group(1) == "comment-gateway" for workflow in workflows for job in workflow.jobs
                  if job.uses is not None and (match := _REUSABLE.match(job.uses.value)) is not None)
    for workflow in workflows:
        for job in workflow.jobs:
            if job.uses is not None:
                match = _REUSABLE.match(job.uses.value)
                if match is not None:
                    calls_pipeline |= match.group(1) == "pr-pipeline"
                    out += _reusable_call(workflow, job, match.group(1), match.group(2), has_gates)
                    out += _registry_secrets(config, workflow, job, match.group(1))
                    out += _grants_missing(config, workflow, job, match.group(1), gateway)
    stages = {stage.key: stage for stage in config.planned_stages}
    runs = [(workflow, job, run) for workflow in workflows for job in workflow.jobs for run in job.stage_runs]
    for workflow, job, run in runs:
        if run.stage is None:
            continue
        stage = stages.get(run.stage)
        if stage is None:
            out.append(Diagnostic(
                f"jobs.{job.id}: `ci-policy run --stage {run.stage}` names no configured stage "
                f"(configured: {', '.join(stages)})", path=workflow.path, line=run.line, col=run.col,
                code=STAGE_UNKNOWN, hint="rename the job or the --stage to a stage of the configuration"))
            continue
        if stage.external or not stage.runs_on or job.runs_on is None or job.runs_on_at is None:
            continue
        if set(job.runs_on) - {"self-hosted"} != set(stage.runs_on) - {"self-hosted"}:
            expected = ", ".join(["self-hosted", *stage.runs_on])
            out.append(Diagnostic(
                f"jobs.{job.id}.runs-on: [{', '.join(job.runs_on)}] does not match stage {stage.key}'s runs_on "
                f"[{', '.join(stage.runs_on)}]", path=workflow.path, line=job.runs_on_at.line,
                col=job.runs_on_at.col, code=RUNS_ON_MISMATCH,
                hint=f"write runs-on: [{expected}], or change the stage's runs_on"))
    static = [run.stage for _w, _j, run in runs]
    if runs and not calls_pipeline and None not in static:
        where = sorted({workflow.path for workflow, _j, _r in runs})
        for stage in config.planned_stages:
            if not stage.external and stage.key not in static:
                out.append(Diagnostic(
                    f"stage {stage.key} has no job running `ci-policy run --stage {stage.key}` in "
                    f"{', '.join(where)}", path=config.path, line=stage.line, code=STAGE_JOB_MISSING,
                    hint=f"add a job for it (runs-on: [{', '.join(['self-hosted', *stage.runs_on])}]), call the "
                         "reusable pr-pipeline.yml, or mark the stage external"))
    return sorted(out, key=Diagnostic.sort_key)


def _reusable_call(workflow: Workflow, job: Job, name: str, ref: str, has_gates: bool) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    uses = job.uses
    assert uses is not None
    field = f"jobs.{job.id}"
    if not _SHA.fullmatch(ref):
        out.append(Diagnostic(
            f"{field}.uses: {name}.yml is called at {ref!r}, not a full commit SHA", path=workflow.path,
            line=uses.line, col=uses.col, code=REF_NOT_SHA,
            hint="pin the reusable workflow by its 40-hex commit SHA (a tag or branch can move)"))
    inputs = dict(job.with_)
    pinned: Located | None = inputs.get("ci-policy-ref")
    if pinned is None:
        out.append(Diagnostic(
            f"{field}.with.ci-policy-ref: missing; {name}.yml needs the commit it was called at", path=workflow.path,
            line=uses.line, col=uses.col, code=REF_MISMATCH,
            hint=f'add with: {{ci-policy-ref: "{ref}"}} (quoted), the same SHA as in uses'))
    elif pinned.value != ref:
        out.append(Diagnostic(
            f"{field}.with.ci-policy-ref: {pinned.value!r} differs from the ref {name}.yml is called at ({ref!r})",
            path=workflow.path, line=pinned.line, col=pinned.col, code=REF_MISMATCH,
            hint="pass the same SHA as in uses, so the workflow installs the ci_policy it was written for"))
    known = INPUTS.get(name)
    if known is not None:
        for key, located in job.with_:
            if key not in known:
                out.append(Diagnostic(
                    f"{field}.with.{key}: {name}.yml has no input {key!r} (inputs: {', '.join(known)})",
                    path=workflow.path, line=located.line, col=located.col, code=INPUT_UNKNOWN,
                    hint="remove it or correct its name"))
        for key in REQUIRED_INPUTS.get(name, ()):
            if key != "ci-policy-ref" and key not in inputs:
                out.append(Diagnostic(
                    f"{field}.with.{key}: missing; {name}.yml requires it", path=workflow.path, line=uses.line,
                    col=uses.col, code=INPUT_MISSING, hint=f"add with: {{{key}: ...}}"))
    if name == "pr-pipeline" and has_gates and not isinstance(job.secrets, str):
        passed = dict(job.secrets)
        needed = [READ_SECRET] + ([WRITE_SECRET] if set(workflow.triggers) & set(WRITING_TRIGGERS) else [])
        for secret in needed:
            if secret not in passed:
                why = ("gates read their baselines from it" if secret == READ_SECRET
                       else f"its {'/'.join(sorted(set(workflow.triggers) & set(WRITING_TRIGGERS)))} runs write "
                            "the baselines")
                out.append(Diagnostic(
                    f"{field}.secrets.{secret}: missing; the checkout declares metric gates and {why}",
                    path=workflow.path, line=job.line, col=job.col, code=SECRET_MISSING,
                    hint=f"pass secrets: {{{secret}: ${{{{ secrets.YOUR_SECRET }}}}}} (see "
                         "docs/adopting/metric-store.md)"))
    return out


def needed_grants(config: Config, name: str, gateway: bool = False) -> dict[str, tuple[str, str]]:
    """scope -> (level, the callee job that asks it) a caller of reusable workflow NAME must grant;
    `gateway`: the repository calls the comment gateway, which may dispatch the pipeline."""
    needed: dict[str, tuple[str, str]] = {}

    def need(scope: str, level: str, job: str) -> None:
        if LEVELS[level] > LEVELS[needed.get(scope, ("none", ""))[0]]:
            needed[scope] = (level, job)

    for job, scopes in GRANTS.get(name, ()):
        for scope, level in scopes:
            need(scope, level, job)
    for job, needs in INHERITING.get(name, {}).items():
        for scope, level in needs(config, gateway):
            need(scope, level, job)
    return needed


def _granted(workflow: Workflow, job: Job) -> tuple[dict[str, str], str]:
    """The caller job's grants (scope -> level; absent: none) and who grants them, for the message."""
    grants, source = job.permissions, "the job grants"
    if grants is None and workflow.permissions is not None:
        grants = workflow.permissions
        source = f"the job sets none and the workflow's (line {grants.line}) grant"
    if grants is None:
        return dict(RESTRICTED_DEFAULT), ("the job and the workflow set none, and the repository's default (taken as "
                                          "GitHub's restricted one: contents and packages read) grants")
    if grants.shorthand is not None:
        level = {"read-all": "read", "write-all": "write"}.get(grants.shorthand, "none")
        # id-token takes only write or none: read-all leaves it out.
        return {scope: level for scope in ALL_SCOPES if (scope, level) != ("id-token", "read")}, source
    return {scope: level for scope, level in grants.scopes if level in LEVELS}, source


# Every scope a `permissions:` mapping may name (GitHub's workflow syntax; `read-all`/`write-all` cover them).
ALL_SCOPES = ("actions", "attestations", "checks", "contents", "deployments", "discussions", "id-token", "issues",
              "models", "packages", "pages", "pull-requests", "repository-projects", "security-events", "statuses")


def _grants_missing(config: Config, workflow: Workflow, job: Job, name: str, gateway: bool) -> list[Diagnostic]:
    needed = needed_grants(config, name, gateway)
    granted, source = _granted(workflow, job)
    missing = [(scope, level, callee) for scope, (level, callee) in sorted(needed.items())
               if LEVELS[granted.get(scope, "none")] < LEVELS[level]]
    if not missing:
        return []
    merged = dict(granted)
    for scope, (level, _callee) in needed.items():
        if LEVELS[level] > LEVELS[merged.get(scope, "none")]:
            merged[scope] = level
    block = ", ".join(f"{scope}: {level}" for scope, level in sorted(merged.items()) if level != "none")
    return [Diagnostic(
        _missing_message(job, name, callee, scope, level, f"{source} {scope}: {granted.get(scope, 'none')}"),
        path=workflow.path, line=job.line, col=job.col, code=GRANT_MISSING,
        hint=f"give jobs.{job.id} the permissions: {{{block}}}")
        for scope, level, callee in missing]


def _missing_message(job: Job, name: str, callee: str, scope: str, level: str, granted: str) -> str:
    inherited = INHERITING_WHY.get((name, callee))
    if inherited is not None:  # no startup check: the step that needs the grant fails
        why, failure = inherited
        return (f"jobs.{job.id}.permissions: {name}.yml's job {callee} runs with the caller job's grants and needs "
                f"{scope}: {level} {why}, but {granted}; {failure}")
    return (f"jobs.{job.id}.permissions: {name}.yml's job {callee} requests {scope}: {level}, but {granted}; GitHub "
            "refuses to start the run (a called workflow's jobs can only reduce the caller job's permissions, never "
            "elevate them)")


def _registry_secrets(config: Config, workflow: Workflow, job: Job, name: str) -> list[Diagnostic]:
    """A pipeline whose images are in a registry other than ghcr.io logs in with the caller's secrets."""
    registry = config.image_build.registry
    if name != "pr-pipeline" or not config.images or registry == GHCR or isinstance(job.secrets, str):
        return []
    passed = dict(job.secrets)
    return [Diagnostic(
        f"jobs.{job.id}.secrets.{secret}: missing; the images are pushed to and pulled from {registry} "
        "(image_build.registry), which the pipeline logs in to with it", path=workflow.path, line=job.line,
        col=job.col, code=SECRET_MISSING,
        hint=f"pass secrets: {{{secret}: ${{{{ secrets.YOUR_SECRET }}}}}} (see docs/adopting/pr-pipeline.md)")
        for secret in REGISTRY_SECRETS if secret not in passed]
