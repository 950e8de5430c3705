"""GitHub Actions, run in the tests: a workflow's job graph for one event, its expressions
evaluated by GitHub's own engine (tests/github_js.py: `@actions/expressions` and
`@actions/workflow-parser`, on node).

- In: `simulate(workflow, event, ...)`: a workflow (as PyYAML reads it) and an `Event` (the event
  name and payload, the caller's `workflow_call` inputs and secrets, vars, github overrides).
  `needs` in order; each job's `if:` as GitHub makes it a condition (its implicit `success() &&`
  when it names no status function), with the status functions answering for the job's needs
  (`Status.job`); its matrix expanded (a `fromJSON` of an output, `include`, `exclude`); per
  matrix entry its `name`, `runs-on`, `container`, `timeout-minutes` and steps (`if` with
  `Status.step`, `env`, `with`). What the steps do is given by the test: step outputs, or a hook
  per step that decides its outcome and outputs (running a bash step, `ci-policy result`'s rule).
- Each value is evaluated with only the contexts GitHub's own workflow schema allows where it
  stands (`github_js.only`: "job-if", "strategy", "runs-on", "job-env", "step-if", "step-env",
  "step-with", job outputs' "string-runner-context", ...): naming another context fails, as
  GitHub's parser does. `env`, `with`, `secrets` and job outputs are strings, as GitHub makes them.
- Out: a `Simulation`: per job its result (success, failure, cancelled, skipped), its runs (one
  per matrix entry, with each step's evaluated env/with, outcome and outputs) and outputs; and
  the workflow's evaluated `concurrency`.
- Refused, as `ExpressionError`: what GitHub's engine refuses (its message), an unknown job in
  `needs`, a cycle, a matrix GitHub would not start (no combination, over 256 jobs).
- Not modelled here (a scenario test asserts them itself): which commit a run's checks attach
  to, required checks, concurrency groups replacing runs, output and argv size limits, the
  caller's permission grants, artifacts, `fail-fast` cancelling a matrix's other entries, a
  job's own `concurrency:`; matrix expansion is this module's own (GitHub's packages do not
  expand matrices).
- `call_event(caller, job_id, callee, event)`: the `Event` a reusable workflow sees when a
  caller's job calls it (its `with:` and `secrets:` evaluated in the caller's context, checked
  against the callee's `workflow_call` as GitHub checks them; the caller's github context).
  Driving an event end to end: `simulate(callee, call_event(caller, job, callee, Event(...)))`,
  with hooks running the steps that decide something (tests/test_pipeline.py's `pipeline()`);
  a re-run of failed jobs is a second `simulate` with `kept=` the first attempt's other jobs.

Expressions alone: `evaluate`, `interpolate`, `condition`, `to_string`, `truthy`, `loose_equal`
(re-exported from tests/github_js.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from github_js import (
    ExpressionError,
    Status,
    condition,
    evaluate,
    interpolate,
    interpolate_strings,
    loose_equal,
    only,
    to_string,
    truthy,
)

__all__ = ["Event", "ExpressionError", "JobResult", "JobRun", "Simulation", "Status", "StepRun", "call_event",
           "call_inputs", "condition", "dispatch_inputs", "evaluate", "expand_matrix", "github_context",
           "interpolate", "interpolate_strings", "loose_equal", "simulate", "to_string", "truthy", "workflow_triggers"]


# -- the job graph ------------------------------------------------------------------------------

@dataclass
class Event:
    """What started the run: the event and its payload, the workflow's inputs and secrets (a
    called workflow's from its caller, see `call_event`; a dispatched workflow's own inputs),
    the repository's vars, overrides of the github context (ref, sha, run_attempt...), and
    whether the run was cancelled."""

    name: str
    payload: dict = field(default_factory=dict)
    inputs: dict = field(default_factory=dict)
    secrets: dict = field(default_factory=dict)
    vars: dict = field(default_factory=dict)
    github: dict = field(default_factory=dict)
    cancelled: bool = False


@dataclass
class StepRun:
    id: str | None
    name: str | None
    ran: bool
    outcome: str  # success, failure or skipped
    env: dict
    with_: dict
    outputs: dict
    step: dict


@dataclass
class JobRun:
    """One job, or one entry of its matrix."""

    matrix: dict | None
    name: str
    runs_on: Any
    container: Any
    timeout_minutes: Any
    steps: list[StepRun]
    result: str

    def step(self, key: str) -> StepRun:
        [found] = [s for s in self.steps if key in (s.id, s.name)]
        return found


@dataclass
class JobResult:
    job_id: str
    result: str  # success, failure, cancelled or skipped
    runs: list[JobRun]
    outputs: dict


@dataclass
class Simulation:
    jobs: dict[str, JobResult]
    concurrency: dict

    def ran(self) -> list[str]:
        return [j for j, r in self.jobs.items() if r.result != "skipped"]


StepHook = Callable[[dict], "tuple[str, dict]"]


def workflow_triggers(workflow: dict) -> dict:
    """`on:`, which YAML 1.1 (PyYAML) reads as the key True."""
    on = workflow.get("on", workflow.get(True))
    return on if isinstance(on, dict) else {}


def call_inputs(workflow: dict, given: Mapping[str, Any]) -> dict:
    """The `inputs` context of a called workflow: what the caller gave, else each input's default."""
    declared = workflow_triggers(workflow).get("workflow_call", {}).get("inputs", {})
    unknown = set(given) - set(declared)
    if unknown:
        raise ExpressionError(f"inputs not declared by the workflow: {sorted(unknown)}")
    out = {}
    for name, spec in declared.items():
        if name in given:
            out[name] = given[name]
        elif spec.get("required"):
            raise ExpressionError(f"required input {name!r} not given")
        else:
            out[name] = spec.get("default", "" if spec.get("type") == "string" else None)
    return out


def github_context(event: Event) -> dict:
    """The `github` context of a run for `event`: fixed defaults, then the event's overrides."""
    return {"event_name": event.name, "event": event.payload, "ref": "refs/heads/main", "sha": "f" * 40,
            "repository": "octo/gpu-repo", "run_id": "1001", "run_attempt": "1", "workflow": "PR Test",
            "server_url": "https://github.com", "actor": "octocat", "token": "***", **event.github}


def dispatch_inputs(workflow: dict, given: Mapping[str, Any]) -> dict:
    """The `inputs` context of a `workflow_dispatch` run: each declared input's default, then what
    was given; an undeclared one is refused, as GitHub refuses the dispatch."""
    declared = workflow_triggers(workflow).get("workflow_dispatch", {}).get("inputs") or {}
    unknown = set(given) - set(declared)
    if unknown:
        raise ExpressionError(f"workflow_dispatch inputs not declared by the workflow: {sorted(unknown)}")
    defaults = {name: spec.get("default", False if spec.get("type") == "boolean" else "")
                for name, spec in declared.items()}
    return {**defaults, **given}


def call_event(caller: dict, job_id: str, callee: dict, event: Event) -> Event:
    """The run a reusable workflow sees when `caller`'s job `job_id` calls it for `event`.

    - `event.inputs` are the caller's own inputs (a `workflow_dispatch`'s, completed with their
      defaults; no other event has any), `event.secrets` the caller's secrets.
    - The callee's `github` context is the caller's ("the github context is always associated
      with the caller workflow", Reusing workflows), `github.workflow` the caller's `name:`.
    - Its inputs: the job's `with:` evaluated in the caller's contexts that GitHub's schema allows
      there, checked by `call_inputs`; its secrets: the caller's with `secrets: inherit`, else
      each `secrets:` value evaluated (the secrets context allowed there too); a secret the
      callee does not declare, or a required one left out, is refused as GitHub refuses the call.
    """
    job = caller["jobs"][job_id]
    name = caller.get("name")
    github = {**github_context(event), **({"workflow": name} if name else {})}
    inputs = dispatch_inputs(caller, event.inputs) if event.name == "workflow_dispatch" else {}
    ctx = {"github": github, "inputs": inputs, "vars": event.vars, "needs": {}, "matrix": {},
           "strategy": {"fail-fast": True, "job-index": 0, "job-total": 1, "max-parallel": 1},
           "secrets": {"GITHUB_TOKEN": "***", **event.secrets}}
    given = interpolate(job.get("with", {}), only(ctx, "scalar-needs-context"))
    declared = workflow_triggers(callee).get("workflow_call", {}).get("secrets") or {}
    if job.get("secrets") == "inherit":
        secrets = dict(event.secrets)
    else:
        secrets = interpolate_strings(job.get("secrets", {}), only(ctx, "scalar-needs-context-with-secrets"))
        unknown = set(secrets) - set(declared)
        if unknown:
            raise ExpressionError(f"secrets not declared by the called workflow: {sorted(unknown)}")
        missing = {n for n, spec in declared.items() if (spec or {}).get("required")} - set(secrets)
        if missing:
            raise ExpressionError(f"required secrets not passed: {sorted(missing)}")
    return Event(event.name, event.payload, call_inputs(callee, given), secrets, event.vars, github,
                 event.cancelled)


def _needs(job: dict) -> list[str]:
    needs = job.get("needs", [])
    return [needs] if isinstance(needs, str) else list(needs)


def _order(jobs: dict) -> list[str]:
    for job_id, job in jobs.items():
        unknown = [n for n in _needs(job) if n not in jobs]
        if unknown:
            raise ExpressionError(f"job {job_id} needs unknown jobs {unknown}")
    done: list[str] = []
    pending = list(jobs)
    while pending:
        ready = [j for j in pending if all(n in done for n in _needs(jobs[j]))]
        if not ready:
            raise ExpressionError(f"needs form a cycle: {pending}")
        done += ready
        pending = [j for j in pending if j not in ready]
    return done


def expand_matrix(matrix: Any) -> list[dict]:
    """GitHub's expansion: the product of the vectors, minus `exclude`, with `include` merged
    into every combination whose original values it does not change, else added as its own."""
    if not isinstance(matrix, dict):
        raise ExpressionError(f"a matrix must be a mapping, got {matrix!r}")
    vectors = {k: v for k, v in matrix.items() if k not in ("include", "exclude")}
    include, exclude = matrix.get("include", []), matrix.get("exclude", [])
    for name, value in (("include", include), ("exclude", exclude), *vectors.items()):
        if not isinstance(value, list) or (name not in ("include", "exclude") and not value):
            raise ExpressionError(f"matrix {name} must be a non-empty list, got {value!r}")
    product = itertools.product(*vectors.values()) if vectors else ()
    combos = [dict(zip(vectors, values, strict=True)) for values in product]
    combos = [c for c in combos if not any(all(c.get(k) == v for k, v in e.items()) for e in exclude)]
    originals = len(combos)
    for entry in include:
        if not isinstance(entry, dict):
            raise ExpressionError(f"a matrix include entry must be a mapping, got {entry!r}")
        matched = False
        for combo in combos[:originals]:
            if all(combo[k] == v for k, v in entry.items() if k in vectors):
                combo.update(entry)
                matched = True
        if not matched:
            combos.append(dict(entry))
    if not combos:
        raise ExpressionError("the matrix has no combination: GitHub fails the job")
    if len(combos) > 256:
        raise ExpressionError(f"the matrix has {len(combos)} combinations; GitHub allows 256")
    return combos


def _container(container: Any, jctx: Mapping[str, Any]) -> Any:
    """A job's `container`; its `credentials` have contexts of their own in GitHub's schema
    (`container-registry-credentials`: github, inputs, vars, secrets, env; no matrix)."""
    if not isinstance(container, dict) or "credentials" not in container:
        return interpolate(container, only(jctx, "container"))
    rest = {key: value for key, value in container.items() if key != "credentials"}
    return {**interpolate(rest, only(jctx, "container")),
            "credentials": interpolate(container["credentials"], only(jctx, "container-registry-credentials"))}


def _rollup(results: list[str]) -> str:
    for r in ("failure", "cancelled"):
        if r in results:
            return r
    return "success" if results else "skipped"


def simulate(workflow: dict, event: Event, *,
             step_outputs: Mapping[str, Mapping[str, dict]] | None = None,
             hooks: Mapping[tuple[str, str], StepHook] | None = None,
             results: Mapping[str, Callable[[dict | None], str | None]] | None = None,
             kept: Mapping[str, JobResult] | None = None) -> Simulation:
    """Which jobs run, where, with what; see the module docstring.

    - step_outputs: job id -> step id -> outputs of that step (every matrix entry).
    - hooks: (job id, step id) -> f(step) -> (outcome, outputs), `step` holding the evaluated
      `env` and `with` and the job's `matrix`; it replaces step_outputs for that step.
    - results: job id -> f(matrix entry or None) -> a result forced on that entry
      (`failure`, `cancelled`) or None to keep what its steps gave.
    - kept: jobs of an earlier attempt that "Re-run failed jobs" does not run again: their
      results and outputs stand as they were.
    """
    step_outputs, hooks, results, kept = step_outputs or {}, hooks or {}, results or {}, kept or {}
    runner = {"os": "Linux", "arch": "X64", "name": "runner", "temp": "/tmp"}
    # Every context there is at each level; each value gets those GitHub's schema allows where it stands.
    base = {"github": github_context(event), "inputs": event.inputs, "vars": event.vars,
            "secrets": {"GITHUB_TOKEN": "***", **event.secrets}}
    concurrency = interpolate(workflow.get("concurrency", {}), only(base, "workflow-concurrency"))
    workflow_env = interpolate_strings(workflow.get("env", {}), only(base, "workflow-env"))
    jobs = workflow["jobs"]
    done: dict[str, JobResult] = {}

    def ancestors(job_id: str) -> set[str]:
        out: set[str] = set()
        for n in _needs(jobs[job_id]):
            out |= {n} | ancestors(n)
        return out

    for job_id in _order(jobs):
        job = jobs[job_id]
        if job_id in kept:
            done[job_id] = kept[job_id]
            continue
        status = Status.job([done[a].result for a in ancestors(job_id)], cancelled=event.cancelled)
        ctx = {**base, "needs": {n: {"result": done[n].result, "outputs": done[n].outputs} for n in _needs(job)}}
        if not condition(job.get("if"), only(ctx, "job-if"), status):
            done[job_id] = JobResult(job_id, "skipped", [], {})
            continue
        strategy = job.get("strategy", {})
        matrix_spec = strategy.get("matrix")
        entries: list[dict | None] = expand_matrix(interpolate(matrix_spec, only(ctx, "strategy"))) \
            if matrix_spec is not None else [None]
        runs, outputs = [], {}
        for index, entry in enumerate(entries):
            jctx = {**ctx, "matrix": entry or {},
                    "strategy": {"fail-fast": strategy.get("fail-fast", True), "job-index": index,
                                 "job-total": len(entries), "max-parallel": strategy.get("max-parallel", len(entries))}}
            job_env = {**workflow_env, **interpolate_strings(job.get("env", {}), only(jctx, "job-env"))}
            steps: list[StepRun] = []
            steps_ctx: dict = {}
            for step in job.get("steps", []):
                failed = any(s.outcome == "failure" and not s.step.get("continue-on-error") for s in steps)
                sctx = {**jctx, "steps": steps_ctx, "env": job_env, "runner": runner,
                        "job": {"status": "failure" if failed else "success"}}
                sid = step.get("id")
                if not condition(step.get("if"), only(sctx, "step-if"), Status.step(failed, cancelled=event.cancelled)):
                    run = StepRun(sid, step.get("name"), False, "skipped", {}, {}, {}, step)
                else:
                    env = interpolate_strings(step.get("env", {}), only(sctx, "step-env"))
                    wctx = only({**sctx, "env": {**job_env, **env}}, "step-with")
                    with_ = interpolate_strings(step.get("with", {}), wctx)
                    view = {"env": env, "with": with_, "matrix": entry, "step": step}
                    if (job_id, sid) in hooks:
                        outcome, outs = hooks[(job_id, sid)](view)
                    else:
                        outcome, outs = "success", dict(step_outputs.get(job_id, {}).get(sid, {}))
                    run = StepRun(sid, step.get("name"), True, outcome, env, with_, outs, step)
                steps.append(run)
                if sid:
                    steps_ctx[sid] = {"outcome": run.outcome, "conclusion": run.outcome, "outputs": run.outputs}
            forced = results[job_id](entry) if job_id in results else None
            failed = any(s.outcome == "failure" and not s.step.get("continue-on-error") for s in steps)
            result = forced or ("failure" if failed else "success")
            octx = {**jctx, "steps": steps_ctx, "env": job_env, "runner": runner, "job": {"status": result}}
            for name, value in interpolate_strings(job.get("outputs", {}), only(octx, "string-runner-context")).items():
                if value != "":
                    outputs[name] = value
                else:
                    outputs.setdefault(name, "")
            name = interpolate(job.get("name", job_id), only(jctx, "string-strategy-context"))
            runs.append(JobRun(entry, to_string(name),
                               interpolate(job.get("runs-on"), only(jctx, "runs-on")),
                               _container(job.get("container"), jctx),
                               interpolate(job.get("timeout-minutes"), only(jctx, "number-strategy-context")),
                               steps, result))
        done[job_id] = JobResult(job_id, _rollup([r.result for r in runs]), runs, outputs)
    return Simulation(done, concurrency)
