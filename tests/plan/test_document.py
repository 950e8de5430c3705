"""The plan file declared once (`plan.document`): its shipped schema is the one derived from the
dataclasses, and any plan written is read back equal (and valid under that schema)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ci_policy.errors import CODES, code_name
from ci_policy.plan.document import (
    SKIP_GROUPS,
    DiagnosticDoc,
    DiffDoc,
    EnvDoc,
    EstTimeoutDoc,
    GateDoc,
    HoursDoc,
    ImageDoc,
    InputsDoc,
    InvalidDoc,
    JobDoc,
    PlanDocument,
    RetryDoc,
    SettingsDoc,
    StageDoc,
    StageHoursDoc,
)
from ci_policy.plan.document import TestRow as Row
from ci_policy.plan.partition import Shard
from ci_policy.plan.planfile import inputs_dict, read_plan_file
from ci_policy.read import codec
from ci_policy.render.jsondoc import document_jsons
from ci_policy.render.schemas import SCHEMA_DIR, schema, top

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=6)
NAME = st.text("abcxyz-", min_size=1, max_size=6)
FILES = st.lists(st.text("abcdef", min_size=1, max_size=4).map(lambda s: f"tests/test_{s}.py"), unique=True,
                 max_size=8)
SECONDS = st.integers(0, 604_800) | st.floats(0, 604_800)
def some(files: list[str], **options) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(files), **options) if files else st.just([])


CONTENT_ID = st.text("0123456789abcdef", min_size=40, max_size=40).map(lambda h: f"git:{h}")


def test_the_shipped_plan_schema_is_the_one_derived_from_the_dataclasses():
    shipped = json.loads((SCHEMA_DIR / "plan.schema.json").read_text(encoding="utf-8"))
    derived = top("plan", shipped["title"], shipped["description"], codec.schema(PlanDocument))
    assert shipped == derived == schema("plan")
    # Every field of the document, in the order it is written.
    assert list(derived["properties"]) == [f.name for f in PlanDocument.__dataclass_fields__.values()]


@st.composite
def stages(draw, files: list[str]) -> StageDoc:
    tests = draw(some(files, unique=True))
    rows = tuple(Row(f, draw(SECONDS), draw(st.sampled_from(["literal", "implicit", "estimates"])),
                         draw(st.none() | st.integers(1, 10**6)), draw(st.none() | TEXT)) for f in tests)
    count = draw(st.integers(0, len(rows))) if rows else 0
    shards = tuple(Shard(i, draw(SECONDS), tuple(tests[i::count])) for i in range(count))
    sized = draw(st.booleans())
    return StageDoc(name=draw(NAME), backend=draw(NAME), decision=draw(st.sampled_from(["run", "skip"])),
                    reasons=tuple(draw(st.lists(TEXT, max_size=2))), runs_on=tuple(draw(st.lists(NAME, max_size=2))),
                    tests=rows, shards=shards, makespan=draw(SECONDS), lower_bound=draw(SECONDS),
                    optimal=draw(st.booleans()), invalid=tuple(draw(some(files, max_size=2))),
                    shards_reason=draw(st.none() | TEXT),
                    max_parallel=draw(st.integers(1, 9)) if sized else None,
                    max_parallel_reason=draw(TEXT) if sized else None)


DIAGNOSTICS = st.builds(lambda code, path, line, col, message, hint: DiagnosticDoc(
    code=code, name=code_name(code), path=path, line=line, col=col, message=message, hint=hint),
    st.none() | st.sampled_from(sorted(CODES)), st.none() | TEXT, st.none() | st.integers(0, 99),
    st.none() | st.integers(0, 99), TEXT, st.none() | TEXT)


HOURS = st.floats(0, 10**6)
GROUPS = st.dictionaries(st.sampled_from(SKIP_GROUPS), HOURS, max_size=4)
ACCELERATOR_HOURS = st.builds(
    HoursDoc, scheduled_hours=HOURS, skipped_hours=GROUPS, scheduled_cost=st.none() | HOURS,
    skipped_cost=st.none() | HOURS,
    stages=st.lists(st.builds(StageHoursDoc, stage=NAME, gpus=st.integers(1, 64), entry=st.none() | st.integers(0, 9),
                              cost_per_hour=st.none() | HOURS, scheduled_hours=HOURS, skipped_hours=GROUPS),
                    max_size=2).map(tuple))


@st.composite
def plans(draw) -> PlanDocument:
    files = draw(FILES)
    ids = {f: draw(CONTENT_ID) for f in files}
    planned = draw(st.lists(stages(files), max_size=3, unique_by=lambda s: s.name))
    given = inputs_dict(draw(st.none() | CONTENT_ID), draw(st.none() | CONTENT_ID), ids,
                        draw(st.none() | st.text("0123456789abcdef", min_size=40, max_size=40)))
    gates = tuple(GateDoc(file=f, line=draw(st.integers(1, 99)), col=draw(st.integers(1, 99)), metric_key=draw(TEXT),
                          steps=draw(st.none() | st.sampled_from(["last", "all"])
                                     | st.lists(st.integers(0, 9), min_size=1, unique=True).map(tuple)),
                          constraint=draw(st.none() | st.just({"rel_up": 0.5, "abs_floor_down": 1})),
                          enforce=draw(st.booleans()), allowlist_reason=draw(st.none() | TEXT),
                          written=tuple(draw(st.lists(st.sampled_from(["metric_key", "steps", "constraint"]),
                                                      unique=True))))
                  for f in draw(some(files, max_size=2)))
    return PlanDocument(
        schema=1, event=draw(NAME), cadence=draw(NAME), trust=draw(st.sampled_from(["trusted", "untrusted",
                                                                                    "approved"])),
        raw_labels=tuple(draw(st.lists(TEXT, max_size=2))), pr_labels=tuple(draw(st.lists(TEXT, max_size=2))),
        include_labels=tuple(draw(st.lists(NAME, max_size=2))),
        bypass_fastfail=draw(st.booleans()), write_baseline=draw(st.booleans()),
        diff=draw(st.builds(DiffDoc, st.booleans(), st.lists(TEXT, max_size=2).map(tuple), st.none() | TEXT)),
        stages=tuple(planned), skipped_stages=tuple(s.name for s in planned if s.decision == "skip"),
        images=draw(st.dictionaries(NAME, st.sampled_from(["build", "skip"]), max_size=2)),
        jobs=tuple(draw(st.lists(st.builds(JobDoc, stage=NAME, lane=st.integers(0, 9),
                                           shards=st.lists(st.integers(0, 9), min_size=1).map(
                                               lambda xs: " ".join(map(str, xs))),
                                           backend=NAME, runs_on=st.lists(NAME, max_size=2).map(tuple), image=TEXT,
                                           container_options=TEXT, timeout_minutes=st.integers(0, 999)),
                                 max_size=2))),
        images_to_build=tuple(draw(st.lists(st.builds(ImageDoc, NAME, TEXT, TEXT, TEXT), max_size=1))),
        warnings=tuple(draw(st.lists(TEXT, max_size=2))), plan_complete=draw(st.booleans()),
        invalid=tuple(InvalidDoc(f, tuple(draw(st.lists(DIAGNOSTICS, max_size=2))))
                      for f in draw(some(files, max_size=2, unique=True))),
        not_fully_read=tuple(draw(some(files, max_size=2))),
        gates=gates, inputs=InputsDoc(**given), accelerator_hours=draw(st.none() | ACCELERATOR_HOURS))


SETTINGS = st.builds(
    SettingsDoc, ci_policy=st.just(__import__("ci_policy").__version__), runner=st.sampled_from(["python", "pytest"]),
    timeout_per_file=st.none() | st.floats(1, 600), timeout_from_est_time=st.none() | st.builds(
        EstTimeoutDoc, factor=st.floats(0.5, 100), floor=st.floats(1, 600)), kill_grace=st.floats(0, 3600),
    retry=st.builds(RetryDoc, *(st.lists(st.sampled_from(["a", "b.*", "^x$"]), unique=True).map(tuple)
                                for _ in range(3))),
    env=st.builds(EnvDoc, *(st.lists(st.sampled_from(["PATH", "CUDA_*", "HF_?"]), unique=True).map(tuple)
                            for _ in range(2))),
    capture=st.lists(NAME, min_size=1, unique=True).map(tuple),
    user=st.none() | st.sampled_from(["nobody", "ci-tests", "1001", "_runner.x"]))

VALIDATOR = Draft202012Validator(json.loads((SCHEMA_DIR / "plan.schema.json").read_text(encoding="utf-8")))


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(plans(), st.data())
def test_a_plan_written_is_read_back_equal(doc, data):
    settings_doc = data.draw(SETTINGS)
    per_stage = {s.name: replace(doc, stages=(s,), inputs=replace(doc.inputs, files=None), run_settings=settings_doc)
                 for s in doc.stages}
    text, stage_texts = document_jsons(doc, per_stage)
    assert codec.decode(PlanDocument, json.loads(text)) == doc
    assert list(VALIDATOR.iter_errors(json.loads(text))) == []
    read = read_plan_file(text, "plan.json")
    assert (read.stages, read.warnings, read.not_fully_read, read.trust) == (
        doc.stages, doc.warnings, doc.not_fully_read, doc.trust)
    assert [(f, [d.message for d in ds]) for f, ds in read.invalid] == [
        (i.file, [d.message for d in i.diagnostics]) for i in doc.invalid]
    assert [g.file for g in read.gates] == [g.file for g in doc.gates]
    for name, stage_text in stage_texts.items():
        assert codec.decode(PlanDocument, json.loads(stage_text)) == per_stage[name]
        assert list(VALIDATOR.iter_errors(json.loads(stage_text))) == []
        mine = read_plan_file(stage_text, f"{name}.json", name)
        assert mine.stage_plan and mine.stages == per_stage[name].stages and mine.settings is not None


def test_a_skip_group_the_plan_does_not_have_is_refused():
    hours = {"scheduled_hours": 0, "skipped_hours": {"labels": 1, "luck": 2}, "scheduled_cost": None,
             "skipped_cost": None, "stages": []}
    with pytest.raises(codec.DecodeError, match=r'skipped_hours.*"luck" is not one of diff, labels, cadence, trust'):
        codec.decode(HoursDoc, hours)
