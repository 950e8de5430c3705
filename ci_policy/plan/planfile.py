"""One plan per CI run: the plan's `inputs`, and a plan file read back for `list` and `run`.

- In: a plan file's text and where it came from; for `plan_of` and `mismatches`, the
  checkout's snapshot and content ids.
- Out: a `PlanFile`, and from it a `Plan` or a `StageJob`, as below.
- `inputs_dict` and `Inputs`: a plan's `inputs` (`plan.inputs`, where they are declared).
- `read_plan_file(text, source, stage=None)`: a plan file (the plan job's `plan --format
  json`, untrusted: it crosses jobs as an artifact) parsed with the strict JSON reader and
  read as `plan.document` declares it (`read.codec`: every key and no other, every path a
  plain repo-relative path, every number in range) into a `PlanFile`; checked here what
  spans fields: every test file among `inputs.files`, every shard's file one of its stage's
  tests and in one shard, the digest; a stage with a `command` holds one test named by the
  stage (its command, no file of the checkout) or none. Given `stage` (what a stage job runs) and a plan that
  has it, the other stages are read for their names only and left out of the `PlanFile`:
  a stage job does not pay for the thousands of tests of the others.
- A per-stage plan (`plan --stage-plans`: `inputs` without `files`) is read as a `PlanFile`
  with `stage_plan` set and no file in its inputs: its tests and gates are checked as plain
  paths (no listing names them) and its digest, of the whole plan's inputs, for its form
  only. It holds for the clean tree it recorded and nothing else (`cli.options`). Its
  `run_settings` (`plan.document.SettingsDoc`) are read when this ci_policy version wrote
  them: every key and no other, each value as the configuration allows it (`settings`).
- `stage_job(plan_file, stage)`: the `StageJob` of a per-stage plan from its settings, with
  no configuration; None where the stage job needs the configuration (gates, invalid files,
  settings of another version).
- `mismatches(recorded, current, ...)`: what differs between the plan's inputs and the
  checkout's, in the words the refusal prints (`tests/a/test_x.py changed`).
- `plan_of(plan_file, snapshot)`: the `Plan` that `list` and `run` read, rebuilt from the
  file (stages, shards, registrations, gate declarations, invalid files, the policy's
  event, cadence, trust, labels, fast-fail and baseline switches) over a snapshot holding
  the configuration, the labels and the discovered files: no test file is parsed. Each
  stage carries the split's `lower_bound` and `optimal` and its sizing notes
  (`shards_reason`, `max_parallel`, `max_parallel_reason`) as the plan job computed them. Its
  registrations carry what `run` reads (file, line, backend, suite, est_time and its
  source, marker), not their labels or columns.
- Refused: a file that is not such a plan, as `UsageError` naming `--plan` and the
  location in the document (`stages[1].shards[0].files[2]`), among them one with a lone
  surrogate escape in any string (no UTF-8 output could carry it); in `plan_of`, a stage the
  configuration does not declare or declares external (`stage_job`, which reads no
  configuration, takes the plan's stage: the per-stage plan holds only with the
  configuration it was planned with).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ci_policy import __version__
from ci_policy.errors import Diagnostic, InputError, UsageError
from ci_policy.model.registration import Registration
from ci_policy.plan.document import (
    GateDoc,
    InputsDoc,
    InvalidDoc,
    PlanDocument,
    SettingsDoc,
    StageDoc,
)
from ci_policy.plan.inputs import Inputs
from ci_policy.plan.inputs import inputs_dict as inputs_dict  # importable here too, where it was declared before
from ci_policy.plan.stagejob import PlannedStage, RunSettings, StageJob, settings_of
from ci_policy.read.codec import decode, decode_fields
from ci_policy.read.declare import DecodeError, kind_of, shown
from ci_policy.read.diff import Diff
from ci_policy.read.names import suite_of_key
from ci_policy.read.strictjson import loads, lone_surrogate

if TYPE_CHECKING:  # what `plan_of` and the gates make: imported there, not by a stage job reading its plan
    from ci_policy.config.stages import Stage
    from ci_policy.gates.declarations import GateDeclaration
    from ci_policy.model.snapshot import Snapshot
    from ci_policy.plan.build import Plan

SCHEMA = 1
# A stage as the plan file records it (`plan.document.StageDoc`), each test a `TestRow`.
FileStage = StageDoc


# How many differences a refusal names before `and K more`.
NAMED = 5
HINT = ("re-run `ci-policy plan --format json` on this checkout and pass its output, "
        "or leave out --plan to plan here")


@dataclass(frozen=True)
class PlanFile:
    source: str
    inputs: Inputs
    event: str
    cadence: str
    trust: str
    raw_labels: tuple[str, ...]
    pr_labels: tuple[str, ...]
    include_labels: tuple[str, ...]
    bypass_fastfail: bool
    write_baseline: bool
    stages: tuple[FileStage, ...]
    gates: tuple[GateDeclaration, ...]
    invalid: tuple[tuple[str, tuple[Diagnostic, ...]], ...]
    warnings: tuple[str, ...]
    not_fully_read: tuple[str, ...]
    # A per-stage plan (`plan --stage-plans`): its inputs list no test file (`inputs.files` absent),
    # so it holds only for the clean tree it recorded (`app.plan_source.shard_plan`).
    stage_plan: bool = False
    # A per-stage plan's `run_settings`: how its stage's files run, resolved from the configuration.
    settings: RunSettings | None = None
    # file -> the stages a partly read invalid file is still scheduled in (`InvalidDoc.kept_stages`).
    kept: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Whether the plan job scheduled every test it was asked for (`plan_complete`).
    plan_complete: bool = True


class _Refusal:
    """The `UsageError` of a plan file that is not a plan: naming `--plan`, the file and the location."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __call__(self, where: str, message: str) -> UsageError:
        at = f" {where}:" if where else ""
        return UsageError(f"{self.source}:{at} {message}", source="--plan",
                          hint="pass the file `ci-policy plan --format json` wrote in this run's plan job")

    def of(self, exc: DecodeError, *outer: str) -> UsageError:
        """`exc` located inside `outer` (its segments, outermost first: `.stages`, `[1]`)."""
        for segment in reversed(outer):
            exc.inside(segment)
        return self(exc.where, exc.message)


def read_plan_file(text: str, source: str, stage: str | None = None) -> PlanFile:
    """Parse and check a plan file; `UsageError` (naming `--plan`) for anything that is not a plan.

    With `stage`, only that stage is read whole and kept, when the plan has it.
    """
    fail = _Refusal(source)
    try:
        raw = loads(text)
        lone = lone_surrogate(text, raw)
    except ValueError as exc:  # JSONDecodeError, a duplicate key, NaN/Infinity
        raise fail("", f"not a JSON plan: {exc}") from None
    except RecursionError:  # in `loads`: not "a file of the checkout"
        raise fail("", "not a JSON plan: nested too deeply") from None
    if lone:
        # `\ud800` alone decodes to a string that no UTF-8 output can carry; the plan writer
        # never writes one (a pair, for a character outside the BMP, decodes to that character).
        raise fail("", "not a JSON plan: a string holds a lone surrogate escape (\\ud800 to \\udfff)")
    if type(raw) is not dict:
        raise fail("", f"expected an object, got {kind_of(raw)}")
    if raw.get("schema") != SCHEMA:
        raise fail("schema", f"expected schema {SCHEMA}, got {shown(raw.get('schema'))}")
    if "inputs" not in raw:
        raise fail("", "missing key 'inputs'")
    try:
        # The stages are read below (only the one a stage job runs), the settings when they are this version's.
        fields = decode_fields(PlanDocument, raw, skip=("stages", "run_settings"))
    except DecodeError as exc:
        raise fail.of(exc) from None
    doc_inputs: InputsDoc | None = fields["inputs"]
    if doc_inputs is None:
        raise fail("inputs", "expected an object, got null")
    inputs = _inputs(fail, doc_inputs)
    stage_plan = doc_inputs.files is None
    # A per-stage plan names no test file in its inputs: its tests and gates are checked as paths only.
    known = None if stage_plan else doc_inputs.files
    stages = _stages(fail, fields["stages"], stage, known)
    gates = fields["gates"]
    for i, g in enumerate(gates):
        if known is not None and g.file not in known:
            raise fail(f"gates[{i}].file", f"{g.file} is not among inputs.files")
    invalid: tuple[InvalidDoc, ...] = fields["invalid"]
    return PlanFile(
        source=source, inputs=inputs, event=fields["event"], cadence=fields["cadence"], trust=fields["trust"],
        raw_labels=fields["raw_labels"], pr_labels=fields["pr_labels"], include_labels=fields["include_labels"],
        bypass_fastfail=fields["bypass_fastfail"], write_baseline=fields["write_baseline"], stages=stages,
        gates=tuple(map(_gate, gates)),
        invalid=tuple((entry.file, tuple(Diagnostic(message=d.message, path=d.path, line=d.line, col=d.col,
                                                     hint=d.hint, code=d.code) for d in entry.diagnostics))
                      for entry in invalid),
        warnings=fields["warnings"], not_fully_read=fields["not_fully_read"], stage_plan=stage_plan,
        settings=_run_settings(fail, raw["run_settings"]) if stage_plan and "run_settings" in raw else None,
        plan_complete=fields["plan_complete"],
        kept={entry.file: tuple(entry.kept_stages) for entry in invalid if entry.kept_stages},
    )


def _inputs(fail: _Refusal, doc: InputsDoc) -> Inputs:
    """The plan's inputs; a per-stage plan's (no `files`) with no file, its digest (of the whole
    plan's inputs) read for its form only."""
    if doc.files is None:  # a per-stage plan
        return Inputs(doc.config, doc.labels, (), doc.tree)
    if inputs_dict(doc.config, doc.labels, doc.files, doc.tree)["digest"] != doc.digest:
        raise fail("inputs.digest", "does not match the inputs it covers (the file was edited)")
    return Inputs(doc.config, doc.labels, tuple(sorted(doc.files.items())), doc.tree)


def _stages(fail: _Refusal, raw: Any, stage: str | None, known: Mapping[str, str] | None) -> tuple[StageDoc, ...]:
    """Every stage's name; the stages read whole: `stage` when the plan has it, else every one."""
    if type(raw) is not list:
        raise fail("stages", f"expected an array, got {kind_of(raw)}")
    names = []
    for i, s in enumerate(raw):
        if type(s) is not dict:
            raise fail(f"stages[{i}]", f"expected an object, got {kind_of(s)}")
        if "name" not in s:
            raise fail(f"stages[{i}]", "missing key 'name'")
        if type(s["name"]) is not str:
            raise fail(f"stages[{i}].name", f"expected a string, got {kind_of(s['name'])}")
        names.append(s["name"])
    # A stage the plan lacks: every stage is read, and the refusal lists them.
    whole = stage is None or stage not in names
    stages = []
    for i, s in enumerate(raw):
        if whole or names[i] == stage:
            try:
                read = decode(StageDoc, s)
            except DecodeError as exc:
                raise fail.of(exc, ".stages", f"[{i}]") from None
            _check_stage(fail, read, f"stages[{i}]", known)
            stages.append(read)
    if len(set(names)) != len(names):
        raise fail("stages", "a stage is planned twice")
    return tuple(stages)


def _check_stage(fail: _Refusal, stage: StageDoc, where: str, known: Mapping[str, str] | None) -> None:
    """What spans a stage's fields: a limit with its reason; its tests among the plan's files, each
    once; its shards numbered from 0, each file one of its tests, in one shard."""
    if stage.max_parallel is not None and stage.max_parallel_reason is None:
        raise fail(where, "missing key 'max_parallel_reason'")
    files = [t.file for t in stage.tests]
    if stage.command is not None:
        # Its one test is its command, named by the stage: no file of the checkout.
        if files not in ([], [stage.name]):
            raise fail(f"{where}.tests", f"a stage with a command has one test, named {stage.name}")
        known = None
    elif stage.working_directory is not None:
        raise fail(f"{where}.working_directory", "only a stage with a command has a working directory")
    if known is not None and not known.keys() >= set(files):
        j = next(j for j, file in enumerate(files) if file not in known)
        raise fail(f"{where}.tests[{j}].file", f"{files[j]} is not among inputs.files")
    test_files = set(files)  # a set: a stage may hold thousands of files
    if len(test_files) != len(files):
        raise fail(f"{where}.tests", "a test file is listed twice")
    placed: set[str] = set()
    for i, shard in enumerate(stage.shards):
        at = f"{where}.shards[{i}]"
        if shard.index != i:
            raise fail(f"{at}.index", f"expected {i}: shards are numbered from 0 in order")
        distinct = set(shard.files)
        if len(distinct) == len(shard.files) and distinct <= test_files and distinct.isdisjoint(placed):
            placed |= distinct
            continue
        for j, f in enumerate(shard.files):
            if f not in test_files or f in placed:
                raise fail(f"{at}.files[{j}]", f"{shown(f)} is not a test of the stage, or is in two shards")
            placed.add(f)


def _gate(g: GateDoc) -> GateDeclaration:
    # Imported here: the gates' modules (PyYAML among them), only for a plan with gates (tests/cli/
    # test_startup.py::test_a_stage_job_given_its_per_stage_plan_parses_no_configuration).
    from ci_policy.gates.declarations import GateDeclaration

    return GateDeclaration(file=g.file, line=g.line, col=g.col, metric_key=g.metric_key,
                           steps=list(g.steps) if isinstance(g.steps, tuple) else g.steps,
                           constraint=None if g.constraint is None else tuple(sorted(g.constraint.items())),
                           enforce=g.enforce, allowlist_reason=g.allowlist_reason, written=g.written)


def _run_settings(fail: _Refusal, raw: Any) -> RunSettings | None:
    """A per-stage plan's `run_settings` (`plan.document.SettingsDoc`): every key, no other, each
    value as the configuration allows it (no value it refuses reaches a test's run). None when
    another ci_policy version wrote them: its configuration's checks (`requires` among them) are
    not this version's, so the stage job reads the configuration itself."""
    if type(raw) is not dict:
        raise fail("run_settings", f"expected an object, got {kind_of(raw)}")
    if "ci_policy" not in raw:
        raise fail("run_settings", "missing key 'ci_policy'")
    if type(raw["ci_policy"]) is not str:
        raise fail("run_settings.ci_policy", f"expected a string, got {kind_of(raw['ci_policy'])}")
    if raw["ci_policy"] != __version__:
        return None
    try:
        settings = decode(SettingsDoc, raw)
    except DecodeError as exc:
        raise fail.of(exc, ".run_settings") from None
    from_est = settings.timeout_from_est_time
    if from_est is not None and (from_est.factor is None or from_est.floor is None):
        raise fail("run_settings.timeout_from_est_time", "expected a factor and a floor")
    return settings_of(settings)


def mismatches(recorded: Inputs, current: Inputs, config_name: str, labels_name: str) -> list[str]:
    """What differs, configuration and labels first, then the test files in path order."""
    if recorded == current:
        return []  # the common case, compared without a dict of either
    out = []
    if recorded.config != current.config:
        out.append(f"configuration {config_name} changed")
    if recorded.labels != current.labels:
        if current.labels is None:
            out.append(f"{labels_name} is missing")
        elif recorded.labels is None:
            out.append(f"{labels_name} is not in the plan")
        else:
            out.append(f"{labels_name} changed")
    was, now = dict(recorded.files), dict(current.files)
    for file in sorted(was.keys() | now.keys()):
        if file not in now:
            out.append(f"{file} is missing")
        elif file not in was:
            out.append(f"{file} is not in the plan")
        elif was[file] != now[file]:
            out.append(f"{file} changed")
    return out


def check_inputs(plan_file: PlanFile, current: Inputs, config_name: str, labels_name: str) -> None:
    """`InputError` (located at the plan file) naming at most `NAMED` differences, then how many more."""
    found = mismatches(plan_file.inputs, current, config_name, labels_name)
    if not found:
        return
    named = "; ".join(found[:NAMED]) + (f"; and {len(found) - NAMED} more" if len(found) > NAMED else "")
    raise InputError(f"the plan does not match the checkout: {named}", path=plan_file.source, hint=HINT)


def _stage_config(snapshot: Snapshot, name: str, source: str) -> Stage:
    stage = snapshot.config.stage(name)
    if stage is None or stage.external:
        raise UsageError(f"{source}: stage {name!r} is not a stage ci-policy plans in the configuration",
                         source="--plan", hint=HINT)
    return stage


def _registrations(fs: FileStage, backend: str) -> tuple[Registration, ...]:
    """A stage's tests as the registrations `run` reads (file, line, backend, suite, est_time and
    its source, marker), not their labels or columns. The suite is the stage's name: its key
    without `@BACKEND` (`config.stages`)."""
    suite = suite_of_key(fs.name)
    return tuple(Registration(file=t.file, line=t.line, backend=backend, suite=suite, est_time=t.est_time,
                              implicit=t.marker is None, est_source=t.est_source, marker=t.marker)
                 for t in fs.tests)


def plan_of(plan_file: PlanFile, snapshot: Snapshot) -> Plan:
    """The `Plan` of the file over `snapshot` (configuration, labels, discovered files, no registration)."""
    # Imported here: the planner's modules, which a stage job running from its per-stage plan never loads
    # (tests/cli/test_startup.py::test_a_stage_job_given_its_per_stage_plan_parses_no_configuration).
    from ci_policy.model.snapshot import InvalidFile, Snapshot, Validity
    from ci_policy.plan.build import Plan, StagePlan
    from ci_policy.plan.policy import Policy

    stages = []
    registrations: list[Registration] = []
    suites: dict[str, set[str]] = {}
    for fs in plan_file.stages:
        stage = _stage_config(snapshot, fs.name, plan_file.source)
        if (fs.command or ()) != stage.command or (fs.working_directory if fs.command else None) != (
                stage.working_directory if stage.command else None):
            raise UsageError(f"{plan_file.source}: stage {fs.name!r} runs another command in the configuration",
                             source="--plan", hint=HINT)
        tests = _registrations(fs, stage.backend)
        registrations.extend(tests)
        for file in fs.invalid:
            suites.setdefault(file, set()).add(stage.base_key)  # a variant's file is its stage's, as planned
        stages.append(StagePlan(stage=stage, decision=fs.decision, reasons=fs.reasons,
                                tests=tests, shards=fs.shards, invalid=fs.invalid, shards_reason=fs.shards_reason,
                                max_parallel=fs.max_parallel, max_parallel_reason=fs.max_parallel_reason,
                                lower_bound=fs.lower_bound, optimal=fs.optimal))
    invalid = tuple(InvalidFile(file, diagnostics, tuple(sorted(suites.get(file, ()))), plan_file.kept.get(file, ()))
                    for file, diagnostics in plan_file.invalid)
    snap = Snapshot(repo=snapshot.repo, config=snapshot.config, labels=snapshot.labels, files=snapshot.files,
                    registrations=tuple(sorted(registrations, key=Registration.sort_key)),
                    gates=plan_file.gates, errors=(),
                    validity=Validity(fatal=(), invalid=invalid, not_fully_read=plan_file.not_fully_read))
    policy = Policy(event=plan_file.event, cadence=plan_file.cadence, raw_labels=plan_file.raw_labels,
                    pr_labels=plan_file.pr_labels,
                    include_labels=plan_file.include_labels, sources=(), admit_nightly=False,
                    bypass_fastfail=plan_file.bypass_fastfail, write_baseline=plan_file.write_baseline,
                    trust=plan_file.trust)
    return Plan(snapshot=snap, policy=policy, diff=Diff.unavailable(f"planned in {plan_file.source}"),
                stages=tuple(stages), images=(), warnings=plan_file.warnings)


def stage_job(plan_file: PlanFile, stage: str) -> StageJob | None:
    """The job of a per-stage plan's stage `stage`, from its `run_settings`: no configuration read.

    None when running the stage needs more than that: another stage, no `run_settings`
    (written by an earlier version), invalid test files (their diagnostics are printed), a
    file of the stage that declares gates (evaluating them reads the configuration), or a
    baseline-writing run of a plan that declares gates (refused without a shared store
    before any test runs, `cli.run`). The caller also needs that no gate store is named.
    """
    gated = {g.file for g in plan_file.gates}
    if (plan_file.settings is None or plan_file.invalid or [s.name for s in plan_file.stages] != [stage]
            or (gated and plan_file.write_baseline) or any(t.file in gated for t in plan_file.stages[0].tests)):
        return None
    (fs,) = plan_file.stages
    return StageJob(stage=PlannedStage(name=fs.name, decision=fs.decision, reasons=fs.reasons,
                                       tests=_registrations(fs, fs.backend), shards=fs.shards),
                    settings=plan_file.settings, bypass_fastfail=plan_file.bypass_fastfail,
                    declares_gates=bool(gated))
