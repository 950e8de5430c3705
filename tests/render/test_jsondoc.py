"""render.jsondoc: the public JSON documents (`"schema": 1`), two-space indented, in a stable field order."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from render_cases import FILE_PLAN, REG, pr_plan, write_repo

from ci_policy.app import plan_documents
from ci_policy.app.plan_documents import plan_dict, plan_json
from ci_policy.errors import Diagnostic
from ci_policy.model.registry import Registration
from ci_policy.model.snapshot import InvalidFile
from ci_policy.render import jsondoc
from ci_policy.render.jsondoc import (
    JSON_SCHEMA_VERSION,
    _indented,
    _TestRows,
    comment_json,
    diagnostics_json,
    dumps,
    file_run_json,
    registry_json,
    shard_files_json,
)

DIFF_REASON = "no --diff or --base was given"
RUN_REASONS = [f"run: the diff is unavailable ({DIFF_REASON}), so every runnable stage runs",
               "run: requested by run-ci-megatron"]


def document(value: Any) -> str:
    """The exact text: field order included, since `json.dumps` keeps a dict's order."""
    return json.dumps(value, indent=2)


def test_the_schema_version():
    assert JSON_SCHEMA_VERSION == 1


def test_registry_json():
    assert registry_json([REG]) == document({"schema": 1, "registrations": [{
        "file": "tests/test_a|b.py", "line": 3, "backend": "cuda", "suite": "gpu", "est_time": 60, "labels": [],
        "nightly": False, "disabled": None, "implicit": False, "marker": "register_cuda_ci"}],
        "plan_complete": True, "invalid": []})
    assert registry_json([]) == document({"schema": 1, "registrations": [], "plan_complete": True, "invalid": []})
    bad = Diagnostic("x", path="tests/test_b.py", line=1, col=1, code="CP231")
    assert json.loads(registry_json([], [InvalidFile("tests/test_b.py", (bad,))])) == {
        "schema": 1, "registrations": [], "plan_complete": False,
        "invalid": [{"file": "tests/test_b.py", "diagnostics": [
            {"code": "CP231", "name": "test-file-unregistered", "path": "tests/test_b.py", "line": 1, "col": 1,
             "message": "x", "hint": None}]}]}


def test_plan_dict_and_plan_json(tmp_path):
    plan = pr_plan(write_repo(tmp_path / "repo"), "run-ci-megatron", "bug")
    expected = {
        "schema": 1, "event": "pull_request", "cadence": "regular", "trust": "trusted",
        "raw_labels": ["run-ci-megatron"],
        "pr_labels": ["bug", "run-ci-megatron"],
        "include_labels": ["megatron"], "bypass_fastfail": False, "write_baseline": False,
        "diff": {"available": False, "files": [], "reason": DIFF_REASON},
        "stages": [
            {"name": "gpu", "backend": "cuda", "decision": "run", "reasons": RUN_REASONS, "runs_on": ["h200"],
             "tests": [{"file": "tests/test_big_model.py", "est_time": 300, "est_source": "literal", "line": 3,
                        "marker": "register_cuda_ci"},
                       {"file": "tests/test_small.py", "est_time": 60, "est_source": "literal", "line": 3,
                        "marker": "register_cuda_ci"}],
             "shards": [{"index": 0, "est_seconds": 300, "files": ["tests/test_big_model.py"]},
                        {"index": 1, "est_seconds": 60, "files": ["tests/test_small.py"]}],
             "makespan": 300, "lower_bound": 300, "optimal": True, "invalid": []},
            {"name": "cpu", "backend": "cpu", "decision": "skip", "reasons": ["skip: no registered tests"],
             "runs_on": ["ubuntu-latest"], "tests": [], "shards": [], "makespan": 0, "lower_bound": 0,
             "optimal": True, "invalid": []}],
        "skipped_stages": ["cpu"], "images": {"cuda": "build", "rocm": "skip"},
        "jobs": [{"stage": "gpu", "lane": i, "shards": str(i), "backend": "cuda", "runs_on": ["h200"], "image": "",
                  "container_options": "--gpus all", "timeout_minutes": 360} for i in range(2)],
        "images_to_build": [],
        "warnings": [f"diff unavailable: {DIFF_REASON}",
                     "gpu: tests/test_big_model.py alone (est 300s) exceeds the stage's mean shard time (180s); "
                     "the stage cannot finish sooner than this file"],
        "plan_complete": True, "invalid": [], "not_fully_read": [], "gates": [],
        # 360 s of the gpu stage, 1 accelerator per runner (no `accelerators` entry): 0.1 h.
        "accelerator_hours": {"scheduled_hours": 0.1, "skipped_hours": {}, "scheduled_cost": None,
                              "skipped_cost": None,
                              "stages": [{"stage": "gpu", "gpus": 1, "entry": None, "cost_per_hour": None,
                                          "scheduled_hours": 0.1, "skipped_hours": {}}]}}
    assert plan_dict(plan) == expected
    assert plan_json(plan) == document(expected)
    inputs = {"config": None, "labels": None, "files": {}, "digest": "sha256:x"}
    assert plan_dict(plan, inputs=inputs) == {**expected, "inputs": inputs}


def test_shard_files_json(tmp_path):
    plan = pr_plan(write_repo(tmp_path / "repo"), "run-ci-megatron")
    gpu, cpu = plan.stages
    assert shard_files_json(gpu, gpu.shards[1]) == document({
        "schema": 1, "stage": "gpu", "decision": "run", "reasons": RUN_REASONS, "shard": 1,
        "files": ["tests/test_small.py"], "plan_complete": True, "invalid": []})
    assert shard_files_json(cpu, None) == document({
        "schema": 1, "stage": "cpu", "decision": "skip", "reasons": ["skip: no registered tests"], "shard": None,
        "files": [], "plan_complete": True, "invalid": []})


def test_file_run_json():
    assert file_run_json(FILE_PLAN) == document({
        "file": "tests/test_a.py", "hw": "h200", "suite": "gpu", "runs_on": ["self-hosted", "h200"],
        "container_image": "ghcr.io/x/img:1", "container_options": "--gpus all", "timeout_seconds": 61})


def test_comment_json_lists_the_requests_only_in_a_dry_run():
    assert comment_json("ok", "m", 0) == document({"schema": 1, "status": "ok", "message": "m", "exit_code": 0})
    assert comment_json("dry-run", "m", 0, iter([{"a": 1}])) == document(
        {"schema": 1, "status": "dry-run", "message": "m", "exit_code": 0, "requests": [{"a": 1}]})
    assert json.loads(comment_json("ok", "m", 0, []))["requests"] == []


def test_diagnostics_json_lists_errors_and_warnings_apart():
    errors = [Diagnostic("w", severity="warning"), Diagnostic("e", path="p.py", line=1, col=2, hint="h", code="CP201")]
    assert diagnostics_json(iter(errors)) == document({
        "schema": 1,
        "errors": [{"code": "CP201", "name": "marker-not-module-level", "path": "p.py", "line": 1, "col": 2,
                    "message": "e", "hint": "h"}],
        "warnings": [{"path": None, "line": None, "col": None, "message": "w", "hint": None}]})


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), {"est_time": [float("inf")]}])
def test_json_output_never_holds_nan_or_infinity(value):
    # finding 5: plan --format json printed Infinity, which no JSON parser accepts.
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        dumps(value)
    assert dumps({"est_time": 604800.0}) == '{"est_time": 604800.0}'


texts = st.text(max_size=12)
registrations = st.builds(
    Registration, file=texts, line=st.none() | st.integers(0, 10**6), backend=texts, suite=texts,
    est_time=st.integers(0, 604_800) | st.floats(0, 604_800, allow_nan=False),
    labels=st.lists(texts, max_size=3).map(tuple), nightly=st.booleans(), disabled=st.none() | texts,
    implicit=st.booleans(), marker=st.none() | texts)


@settings(max_examples=200)
@given(regs=st.lists(registrations, max_size=4), invalid=st.booleans())
def test_the_registry_is_what_json_dumps_writes(regs, invalid):
    # The registry's rows are written out by hand (a registry holds thousands): byte for byte
    # what the general encoder writes, whatever the strings hold.
    bad = [InvalidFile("tests/test_b.py", (Diagnostic("x\u2028\"", path="tests/test_b.py", line=1, col=1,
                                                      code="CP231"),))] if invalid else []
    assert registry_json(regs, bad) == document({
        "schema": 1, "registrations": [r.as_dict() for r in regs], "plan_complete": not invalid,
        "invalid": [{"file": f.file, "diagnostics": [d.as_dict() for d in f.diagnostics]} for f in bad]})


def test_a_registration_of_an_unusual_type_goes_to_the_general_encoder():
    # A value no registration is made with (a line that is a bool): written as json.dumps writes it.
    odd = Registration("tests/test_a.py", 3, "cuda", "gpu", 1.5, labels=("a",))
    object.__setattr__(odd, "line", True)
    assert registry_json([odd]) == document({"schema": 1, "registrations": [odd.as_dict()], "plan_complete": True,
                                             "invalid": []})
    assert '"line": true' in registry_json([odd])


def _test_dicts(regs: list[Registration]) -> list[dict[str, Any]]:
    return [{"file": r.file, "est_time": r.est_time, "est_source": r.est_source, "line": r.line, "marker": r.marker}
            for r in regs]


@settings(max_examples=200)
@given(regs=st.lists(st.builds(Registration, file=texts, line=st.none() | st.integers(0, 10**6), backend=texts,
                               suite=texts, est_time=st.integers(0, 604_800) | st.floats(0, 604_800, allow_nan=False),
                               est_source=texts, marker=st.none() | texts), max_size=4),
       depth=st.integers(0, 3))
def test_a_stages_tests_are_what_json_dumps_writes(regs, depth):
    # A plan's tests are written by template (a plan holds thousands), byte for byte what the
    # general encoder writes, at any depth.
    nested: Any = _TestRows(regs)
    expected: Any = _test_dicts(regs)
    for _ in range(depth):
        nested, expected = {"k": [nested]}, {"k": [expected]}
    assert _indented(nested, "\n") == document(expected)


def test_a_test_of_an_unusual_type_leaves_the_plan_to_the_general_encoder(tmp_path):
    plan = pr_plan(write_repo(tmp_path), "run-ci-megatron")
    stage = next(s for s in plan.stages if s.tests)
    odd = stage.tests[0]
    object.__setattr__(odd, "line", True)  # a value no registration is made with
    text = plan_json(plan)
    assert text == document(plan_dict(plan)) and '"line": true' in text
    with pytest.raises(jsondoc._Unusual):
        _TestRows([odd]).text("\n")
    # The per-stage plans of the same planning, too.
    from ci_policy.plan.stagejob import run_settings, settings_dict

    whole, per_stage = plan_documents.plan_jsons(plan, whole=True, stages=True)
    assert whole == text
    doc = plan_dict(plan)
    assert per_stage == {s.name: document({**doc, "stages": [stage_doc], "run_settings": settings_dict(
        run_settings(plan.config, s.stage))}) for s, stage_doc in zip(plan.stages, doc["stages"], strict=True)}
    assert '"line": true' in per_stage[stage.name]
