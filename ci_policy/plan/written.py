"""The plan file's value, built from a `Plan`: everything the document shows, computed here.

- In: a `Plan`, the head commit's SHA (None: no image is tagged or built) and the plan's
  `inputs` (`plan.inputs.inputs_dict`, or None when the caller computed no content id).
- Out: `plan_document`: the `PlanDocument` (`plan.document`) of the whole plan, with its
  stage jobs (`plan.jobs.stage_jobs`: their waves where the configuration orders stages,
  the stages whose lanes were merged) and each stage's tests as `TestRow`s;
  `stage_documents`: each stage's own plan (`plan --stage-plans`), by stage name: that
  stage alone, `inputs` without `files` (a per-stage plan holds for the clean tree it
  recorded only) and its `run_settings` (`plan.stagejob.run_settings`, resolved from the
  configuration). `render.jsondoc` only writes them.
- Refused: nothing: its input is a built `Plan`, checked when its parts were read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ci_policy.errors import Diagnostic
from ci_policy.gates.declarations import GateDeclaration
from ci_policy.model.registration import Registration
from ci_policy.model.snapshot import InvalidFile
from ci_policy.plan.build import Plan, StagePlan
from ci_policy.plan.document import (
    DiagnosticDoc,
    DiffDoc,
    GateDoc,
    HoursDoc,
    ImageDoc,
    InputsDoc,
    InvalidDoc,
    JobDoc,
    MergeDoc,
    PlanDocument,
    StageDoc,
    StageHoursDoc,
    TestRow,
)
from ci_policy.plan.hours import Hours
from ci_policy.plan.jobs import StageJobs, stage_jobs


def test_rows(tests: Iterable[Registration]) -> tuple[TestRow, ...]:
    return tuple(TestRow(r.file, r.est_time, r.est_source, r.line, r.marker) for r in tests)


def ordered(plan: Plan) -> bool:
    """Whether the configuration orders its stages in waves (`after`): only then do documents show waves."""
    return any(stage.after for stage in plan.config.stages)


def stage_doc(s: StagePlan, waves: bool = False) -> StageDoc:
    return StageDoc(name=s.name, backend=s.stage.backend, decision=s.decision, reasons=s.reasons,
                    runs_on=tuple(s.stage.runs_on), tests=test_rows(s.tests), shards=s.shards, makespan=s.makespan,
                    lower_bound=s.lower_bound, optimal=s.optimal, invalid=s.invalid, shards_reason=s.shards_reason,
                    max_parallel=s.max_parallel,
                    max_parallel_reason=s.max_parallel_reason if s.max_parallel is not None else None,
                    wave=s.stage.wave if waves else None, command=s.stage.command or None,
                    working_directory=s.stage.working_directory if s.stage.command else None)


def diagnostic_doc(d: Diagnostic) -> DiagnosticDoc:
    return DiagnosticDoc(code=d.code, name=d.name if d.code is not None else None, path=d.path, line=d.line,
                         col=d.col, message=d.message, hint=d.hint)


def invalid_docs(invalid: Iterable[InvalidFile]) -> tuple[InvalidDoc, ...]:
    return tuple(InvalidDoc(f.file, tuple(map(diagnostic_doc, f.diagnostics)), f.kept or None) for f in invalid)


def gate_doc(g: GateDeclaration) -> GateDoc:
    steps = tuple(g.steps) if isinstance(g.steps, list) else g.steps
    return GateDoc(file=g.file, line=g.line, col=g.col, metric_key=g.metric_key, steps=steps,
                   constraint=None if g.constraint is None else dict(g.constraint), enforce=g.enforce,
                   allowlist_reason=g.allowlist_reason, written=tuple(g.written))


def inputs_doc(inputs: Mapping[str, Any]) -> InputsDoc:
    """`inputs` (`plan.inputs.inputs_dict`) as the document's value, taken as given (not read)."""
    return InputsDoc(config=inputs.get("config"), labels=inputs.get("labels"), files=inputs.get("files"),
                     tree=inputs.get("tree"), digest=inputs.get("digest", ""))


def plan_document(plan: Plan, head_sha: str | None = None, inputs: InputsDoc | None = None,
                  jobs: StageJobs | None = None) -> PlanDocument:
    """The plan document; `inputs` when the caller computed the content ids; `jobs` when it
    already has the plan's stage jobs for `head_sha`."""
    policy, diff = plan.policy, plan.diff
    jobs = stage_jobs(plan, head_sha) if jobs is None else jobs
    waves = ordered(plan)
    return PlanDocument(
        schema=1, event=policy.event, cadence=policy.cadence, trust=policy.trust,  # type: ignore[arg-type]
        raw_labels=tuple(policy.raw_labels), pr_labels=tuple(policy.pr_labels),
        include_labels=tuple(policy.include_labels),
        bypass_fastfail=policy.bypass_fastfail, write_baseline=policy.write_baseline,
        diff=DiffDoc(diff.available, tuple(diff.files), None if diff.available else diff.reason),
        stages=tuple(stage_doc(s, waves) for s in plan.stages), skipped_stages=plan.skipped_stages,
        images=dict(plan.images),
        jobs=tuple(JobDoc(stage=e.stage, lane=e.lane, shards=" ".join(str(i) for i in e.shards), backend=e.backend,
                          runs_on=tuple(e.runs_on), image=e.image, container_options=e.container_options,
                          timeout_minutes=e.timeout_minutes, wave=e.wave if waves else None)
                   for e in jobs.entries),
        images_to_build=tuple(ImageDoc(b.backend, b.image, b.dockerfile, b.context) for b in jobs.images_to_build),
        warnings=tuple(plan.warnings), plan_complete=plan.complete, invalid=invalid_docs(plan.invalid),
        not_fully_read=tuple(plan.not_fully_read), gates=tuple(map(gate_doc, plan.snapshot.gates)), inputs=inputs,
        merged_lanes=tuple(MergeDoc(m.stage, m.wave, m.lanes_from, m.lanes_to, m.reason) for m in jobs.merges)
        or None, accelerator_hours=hours_doc(plan.hours))


def _rounded(value: float) -> float:
    """Hours to the second's precision (6 places): the document holds no float noise."""
    return round(value, 6)


def hours_doc(h: Hours) -> HoursDoc:
    return HoursDoc(
        scheduled_hours=_rounded(h.scheduled), skipped_hours={r: _rounded(v) for r, v in h.by_reason},
        scheduled_cost=None if h.scheduled_cost is None else _rounded(h.scheduled_cost),
        skipped_cost=None if h.skipped_cost is None else _rounded(h.skipped_cost),
        stages=tuple(StageHoursDoc(stage=s.stage, gpus=s.gpus, entry=s.entry, cost_per_hour=s.cost_per_hour,
                                   scheduled_hours=_rounded(s.scheduled),
                                   skipped_hours={r: _rounded(s.skipped(r)) for r, _ in s.skipped_seconds})
                     for s in h.stages))


def stage_documents(plan: Plan, doc: PlanDocument) -> dict[str, PlanDocument]:
    """Each stage's own plan, by name: `doc` with that stage alone, its inputs without `files`,
    and the settings its files run with."""
    # Imported here: only per-stage plans carry settings; a plan that writes none does not import
    # what a stage job runs with (tests/cli/test_startup.py::test_a_plan_imports_no_module_of_running_it).
    from ci_policy.plan.stagejob import run_settings, settings_doc

    inputs = None if doc.inputs is None else replace(doc.inputs, files=None)
    return {stage.name: replace(doc, stages=(stage,), inputs=inputs,
                                run_settings=settings_doc(run_settings(plan.config, planned.stage)))
            for stage, planned in zip(doc.stages, plan.stages, strict=True)}
