"""GitHub Actions renderers: workflow-command annotations and `$GITHUB_OUTPUT` values.

- In: a `Plan`, a shard's run results, gate outcomes.
- Out: `::error`/`::warning` lines whose values pass `escape_data`/`escape_property`, and
  `name<<DELIMITER` output blocks.
- Refused: an output value that contains the block's delimiter (`ValueError`): it would end
  the block early and let the rest of the value set other outputs.
- `max_parallel` (`{"stage": N}`, every planned stage) sits beside `matrix`, whose shape
  workflows read and which stays as it is.
- `trust`; the stage jobs given (`plan.jobs.stage_jobs`, computed by the caller): one matrix
  per wave, `stage_matrix_0` to `stage_matrix_<MAX_WAVES - 1>` (`{"include": [entry, ...]}`,
  one entry per lane, at most 256), `wave_jobs` (a JSON list: each wave's entry count),
  `merged_lanes` (a JSON list of `{stage, wave, lanes_from, lanes_to, reason}`),
  `has_stage_jobs` (`true`/`false`) and `images_to_build` (a JSON list), tagged with the
  head SHA they were made for (none: no image is built); the configuration's `image_build`:
  `image_runs_on` (a JSON list, the image job's `runs-on`) and `image_registry` (the registry
  host it logs in to).
- A stage whose lanes were merged (`plan.jobs`): a `::notice` saying which and why.
- A shard's run: an `::error` per failed file, a `::warning` (title `quarantined`) per
  quarantined file that failed, naming the quarantine, and a `::warning` per warning of the run.
- A partial plan: one `::error` per diagnostic of each invalid test file, and the outputs
  `invalid_files` (a compact JSON list of paths) and `plan_complete` (`true`/`false`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ci_policy.errors import Diagnostic, UsageError
from ci_policy.render.escape import escape_data, escape_property
from ci_policy.render.jsondoc import dumps
from ci_policy.render.text import code_title, excused_text, failure

if TYPE_CHECKING:  # the types of what is rendered; the modules that make them import them, and a
    # command imports none it does not make (tests/cli/test_startup.py::test_a_plan_imports_no_module_of_running_it)
    from ci_policy.model.snapshot import InvalidFile
    from ci_policy.plan.build import Plan
    from ci_policy.plan.filerun import FilePlan
    from ci_policy.plan.jobs import StageJobs
    from ci_policy.plan.results import GateOutcome, ShardResult


def plan_outputs(plan: Plan, jobs: StageJobs, delimiter: str) -> str:
    """`$GITHUB_OUTPUT` lines of `plan` and its stage jobs (`plan.jobs.stage_jobs`), in the
    multi-line-safe `name<<DELIMITER` syntax."""
    policy = plan.policy
    values = {
        "cadence": policy.cadence,
        "trust": policy.trust,
        "raw_labels": " ".join(policy.raw_labels),
        "bypass_fastfail": "true" if policy.bypass_fastfail else "false",
        "write_baseline": "true" if policy.write_baseline else "false",
        "skipped_stages": dumps(list(plan.skipped_stages), separators=(",", ":")),
        "matrix": dumps(plan.matrix, separators=(",", ":")),
        # For `strategy.max-parallel`: a separate output, so `matrix` keeps its shape.
        "max_parallel": dumps(plan.max_parallel, separators=(",", ":")),
        # One `<backend>_image` per accelerator backend (cuda_image and rocm_image always).
        **{f"{backend}_image": action for backend, action in plan.images},
        # One matrix per wave job of the pipeline (`stages-<wave>`), each within GitHub's 256 jobs.
        **{f"stage_matrix_{wave}": dumps(jobs.matrix(wave), separators=(",", ":"))
           for wave in range(len(jobs.waves))},
        "wave_jobs": dumps([len(entries) for entries in jobs.waves], separators=(",", ":")),
        "merged_lanes": dumps([m.as_dict() for m in jobs.merges], separators=(",", ":")),
        "has_stage_jobs": "true" if jobs.has_stage_jobs else "false",
        "images_to_build": dumps([b.as_dict() for b in jobs.images_to_build], separators=(",", ":")),
        # The image job's runner and registry travel as outputs of the plan, which read the trusted
        # configuration (the base commit's for an untrusted head), never the head's own file.
        "image_runs_on": dumps(list(plan.config.image_build.runs_on), separators=(",", ":")),
        "image_registry": plan.config.image_build.registry,
        "invalid_files": dumps([f.file for f in plan.invalid], separators=(",", ":")),
        "plan_complete": "true" if plan.complete else "false",
    }
    return github_output_lines(values, delimiter)


def github_output_lines(values: dict[str, str], delimiter: str) -> str:
    out = []
    for name, value in values.items():
        if delimiter in value:
            raise ValueError("delimiter occurs in an output value")
        out.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(out)


def plan_annotations(plan: Plan, jobs: StageJobs, path_of: Callable[[str], str] = lambda p: p) -> str:
    """An `::error` per diagnostic of each invalid test file, a `::warning` per plan warning, then a
    `::notice` per stage whose lanes were merged to fit GitHub's 256 jobs per matrix."""
    lines = [diagnostic_github(d, path_of) for f in plan.invalid for d in f.diagnostics]
    lines += [f"::warning::{escape_data(w)}" for w in plan.warnings]
    lines += [f"::notice title=lanes merged::{escape_data(f'{m.stage}: {m.reason}')}"
              for m in jobs.merges]
    return "\n".join(lines)


def invalid_annotations(invalid: Iterable[InvalidFile], path_of: Callable[[str], str] = lambda p: p) -> str:
    """One `::error file=..,line=..,col=..` annotation per diagnostic of each invalid test file."""
    return "\n".join(diagnostic_github(d, path_of) for f in invalid for d in f.diagnostics)


def run_annotations(result: ShardResult, *, command: bool = False) -> str:
    """`command`: the shard ran a stage's command, whose result is named by the stage, no file to annotate."""
    lines = []
    for r in result.results:
        if r.excused:
            # A warning, never an error: the quarantine says the failure is known and followed up.
            lines.append(("::warning title=quarantined::" if command
                          else f"::warning file={escape_property(r.file)},title=quarantined::")
                         + escape_data(excused_text(r) + ": reported, not failing the run"))
        elif not r.passed:
            status, why = failure(r)
            lines.append(("::error::" if command else f"::error file={escape_property(r.file)}::")
                         + escape_data(f"{r.file} {status.lower()} after {len(r.attempts)} attempt(s) ({why})"))
    lines += ["::warning::" + escape_data(w) for w in result.warnings]
    return "\n".join(lines)


def gate_annotations(outcome: GateOutcome) -> str:
    return "\n".join(
        f"::error file={escape_property(outcome.file)}::"
        + escape_data(f"gate {r.spec.metric_key} step {'last' if r.step == -1 else r.step}: {r.verdict}: {r.message}")
        for r in outcome.blocking)


def usage_error_github(command: str, err: UsageError) -> str:
    where = f"{err.source}: " if err.source else ""
    message = f"ci-policy {command}: {where}{err.message}" + (f" (hint: {err.hint})" if err.hint else "")
    return f"::error::{escape_data(message)}"


def file_run_outputs(plan: FilePlan, delimiter: str) -> str:
    """`$GITHUB_OUTPUT` for the job that reruns one file; its timeout is rounded up to minutes, plus 5."""
    values = {"hw": plan.hw, "suite": plan.suite, "runs_on": dumps(list(plan.runs_on)),
              "container_image": plan.container_image or "", "container_options": plan.container_options,
              "timeout_seconds": str(plan.timeout_seconds),
              "timeout_minutes": str(-(-plan.timeout_seconds // 60) + 5)}
    return github_output_lines(values, delimiter)


def diagnostic_github(err: Diagnostic, path_of: Callable[[str], str] = lambda p: p) -> str:
    """`::error file=..,line=..,col=..,title=CODE name::message (hint: ...)`."""
    props = []
    if err.path:
        props.append(f"file={escape_property(path_of(err.path))}")
    if err.line is not None:
        props.append(f"line={err.line}")
    if err.col is not None:
        props.append(f"col={err.col}")
    if err.code is not None:
        props.append(f"title={escape_property(code_title(err))}")
    message = err.message + (f" (hint: {err.hint})" if err.hint else "")
    command = "warning" if err.severity == "warning" else "error"
    head = f"::{command} {','.join(props)}" if props else f"::{command}"
    return f"{head}::{escape_data(message)}"
