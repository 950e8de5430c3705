"""The configuration's JSON Schema, generated from the field tables: every documented key is in it,
the real configurations validate, and what the loader refuses for a key's type, range or name the
schema refuses at the same place."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from config_cases import VALID
from helpers import EXAMPLE_REPO, MINIMAL_CONFIG, ROOT
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ci_policy.config.fields import REQUIRED, Key, Parser, Table
from ci_policy.config.reference import EXAMPLE, _tables, markdown
from ci_policy.config.schema import config_schema, key_schema, table_schema
from ci_policy.config.stages import STAGE as STAGE_TABLE
from ci_policy.config.top import TOP, parse_config
from ci_policy.errors import InputErrors

SCHEMA = config_schema()
VALIDATOR = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)

# Every configuration file of the repository: the example's, the fixture repositories', this repository's own.
CONFIG_FILES = [EXAMPLE_REPO / ".github" / "ci-policy.yml",
                *sorted((ROOT / "tests" / "data").glob("*/.github/ci-policy.yml")), ROOT / ".github" / "ci-policy.yml"]


class _DatesAsText(yaml.SafeLoader):
    """YAML as a JSON-Schema validator reads it (check-jsonschema, the YAML language server): a date
    such as `until: 2027-01-15` is the string it is written as, not a `datetime.date`."""


_DatesAsText.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)


def schema_errors(text: str) -> list[tuple[str, str]]:
    """(JSON path, failing keyword) of every error of the YAML text's value, in path order."""
    return sorted((e.json_path, e.validator) for e in VALIDATOR.iter_errors(yaml.load(text, _DatesAsText)))


def loader_codes(text: str) -> list[str] | None:
    """The codes of the loader's errors, None when it accepts the text."""
    try:
        parse_config(text)
    except InputErrors as exc:
        return [e.code for e in exc.errors]
    return None


def test_the_schema_is_a_valid_draft_2020_12_schema():
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["$id"] == ("https://raw.githubusercontent.com/ci-policy/ci-policy/main/ci_policy/schemas/"
                             "config.schema.json")
    assert SCHEMA["required"] == ["version", "stages", "discovery"]
    assert SCHEMA["additionalProperties"] is False


def test_a_key_states_its_description_type_range_and_default():
    assert SCHEMA["properties"]["gates"]["properties"]["window"] == {
        "description": "Number of recent baselines a value is compared with.",
        "type": "integer", "minimum": 1, "maximum": 10000, "default": 10}
    assert SCHEMA["properties"]["tune"]["properties"]["quantile"] == {
        "description": "Nearest-rank quantile of the passed samples, at most 1.",
        "type": "number", "exclusiveMinimum": 0, "maximum": 1000000000, "default": 0.9}
    assert SCHEMA["properties"]["selection"]["properties"]["explicit"]["enum"] == ["run", "prune"]
    stage = SCHEMA["properties"]["stages"]["items"]
    assert stage["required"] == ["name", "backend"] and stage["additionalProperties"] is False
    assert stage["properties"]["cadences"] == {
        "description": "The cadences the stage runs in; skipped in the others.",
        "type": "array", "items": {"type": "string", "enum": ["regular", "nightly", "weekly", "release"]},
        "minItems": 1, "uniqueItems": True, "default": ["regular", "nightly", "weekly", "release"]}


def test_a_default_that_depends_on_other_keys_is_described_not_stated():
    stage = SCHEMA["properties"]["stages"]["items"]["properties"]
    assert stage["runner"] == {
        "description": "How one test file is run: `python FILE` or `pytest FILE`. Default: `pytest` for "
                       "non-accelerator stages (cpu), `python` otherwise.",
        "type": "string", "enum": ["python", "pytest"]}
    assert "default" not in stage["diff_pruned"]
    # A section's default is its keys' defaults: stated on each key, not on the section.
    assert "default" not in SCHEMA["properties"]["runner"]
    assert SCHEMA["properties"]["runner"]["properties"]["kill_grace"]["default"] == 10


def _tables_with_keys() -> list[tuple[Table, Key]]:
    return [(table, key) for table in _tables(TOP) for key in table.keys]


@pytest.mark.parametrize("table, key", _tables_with_keys(), ids=lambda v: getattr(v, "title", getattr(v, "name", "")))
def test_every_stated_default_is_a_value_the_key_accepts(table, key):
    schema = key_schema(key)
    if "default" in schema:
        assert not key.required and not key.computed_default
        Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER).validate(schema["default"])


def _schema_paths(schema: dict, path: str, out: set[str]) -> set[str]:
    """Every key path the schema describes, written as the reference titles write them
    (`stages[].max_parallel.default`, `backends.<>.accelerator`)."""
    for member in (schema, *schema.get("anyOf", ())):
        for name, sub in member.get("properties", {}).items():
            here = f"{path}.{name}" if path else name
            out.add(here)
            _schema_paths(sub, here, out)
        if isinstance(member.get("additionalProperties"), dict):
            _schema_paths(member["additionalProperties"], f"{path}.<>", out)
        if isinstance(member.get("items"), dict):
            _schema_paths(member["items"], f"{path}[]", out)
    return out


def _documented_paths() -> set[str]:
    """Every key of the README's configuration reference (`markdown()`, which a test keeps in the README)."""
    out, title = set(), ""
    for line in markdown().splitlines():
        heading = re.fullmatch(r"### (?:Top level|`(.+)`)", line)
        if heading:
            title = re.sub(r"<[^>]*>", "<>", heading.group(1) or "")
            continue
        row = re.match(r"\| `([a-z_]+)` \|", line)
        if row and title is not None:
            out.add(f"{title}.{row.group(1)}" if title else row.group(1))
    return out


def test_every_documented_key_is_in_the_schema_and_no_other():
    documented = _documented_paths()
    assert len(documented) == sum(len(t.keys) for t in _tables(TOP)) == 136
    assert {"version", "stages[].max_parallel.default", "backends.<>.container_options",
            "cadences.schedules.<>.stages", "gates.defaults.<>.constraint", "lint.ignore[].codes",
            "selection.changed_tests", "stages[].variants", "stages[].variants[].image"} <= documented
    described = _schema_paths(SCHEMA, "", set())
    assert documented <= described
    # Beyond the tables: the bounds of a gate's constraint, which its row lists ("mapping of rel_up | ...").
    assert described - documented == {f"gates.defaults.<>.constraint.{bound}" for bound in
                                      ("rel_up", "abs_floor_up", "rel_down", "abs_floor_down")}


def test_a_parser_without_a_schema_is_refused():
    key = Key("odd", Parser("something", lambda s, n, w, c: None), REQUIRED, "A key.")
    with pytest.raises(ValueError, match="the parser of 'odd' \\(something\\) has no JSON Schema"):
        table_schema(Table("t", "A table.", (key,)))


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_configuration_of_the_repository_validates(path):
    text = path.read_text(encoding="utf-8")
    assert loader_codes(text) is None
    assert schema_errors(text) == []


@pytest.mark.parametrize("text", [EXAMPLE, VALID, MINIMAL_CONFIG], ids=["reference-example", "valid", "minimal"])
def test_the_configurations_of_the_docs_and_tests_validate(text):
    assert loader_codes(text) is None
    assert schema_errors(text) == []


HEAD = "version: 1\ndiscovery:\n  roots: [tests]\n"
CPU = "stages:\n  - {name: cpu, backend: cpu}\n"


def stage(extra: str) -> str:
    return HEAD + "stages:\n  - {name: cpu, backend: cpu, " + extra + "}\n"


# (configuration, the loader's codes, the schema's errors)
REFUSED = {
    "unknown top-level key": (VALID + "colour: red\n", ["CP102"], [("$", "additionalProperties")]),
    "unknown stage key": (stage("partition: 2"), ["CP102"], [("$.stages[0]", "additionalProperties")]),
    "version as a string": ("version: '1'\ndiscovery:\n  roots: [tests]\n" + CPU, ["CP104"],
                            [("$.version", "const"), ("$.version", "type")]),
    "boolean as a number": (VALID + "gpu_requires_labels: 1\n", ["CP104"], [("$.gpu_requires_labels", "type")]),
    "partitions as a word": (stage("partitions: many"), ["CP104"], [("$.stages[0].partitions", "anyOf")]),
    "partitions out of range": (stage("partitions: 0"), ["CP105"], [("$.stages[0].partitions", "anyOf")]),
    "no stage": (HEAD + "stages: []\n", ["CP105"], [("$.stages", "minItems")]),
    "missing discovery": ("version: 1\n" + CPU, ["CP103"], [("$", "required")]),
    "negative kill_grace": (VALID + "runner: {kill_grace: -1}\n", ["CP105"], [("$.runner.kill_grace", "minimum")]),
    "quantile 0": (VALID + "tune: {quantile: 0}\n", ["CP105"], [("$.tune.quantile", "exclusiveMinimum")]),
    "backend as a number": (HEAD + "stages:\n  - {name: cpu, backend: 3}\n", ["CP105"],
                            [("$.stages[0].backend", "anyOf")]),
    "pattern with a slash": ("version: 1\ndiscovery:\n  roots: [tests]\n  pattern: tests/test_*.py\n" + CPU, ["CP105"],
                             [("$.discovery.pattern", "anyOf")]),
    "unknown cadence": (VALID + "cadences: {merge_group: hourly}\n", ["CP105"], [("$.cadences.merge_group", "enum")]),
    "rule without labels or stages": (VALID + "selection:\n  rules:\n    - {paths: [docs/**]}\n", ["CP103"],
                                      [("$.selection.rules[0]", "anyOf")]),
    "absolute labels file": (VALID + "labels_file: /etc/labels.py\n", ["CP105"], [("$.labels_file", "pattern")]),
    "scope without run-ci-": (VALID + "scopes: {all: null}\n", ["CP105"], [("$.scopes", "pattern")]),
    "constraint bounding one side": (
        VALID + "gates:\n  defaults:\n    train/loss: {steps: all, constraint: {rel_up: 0.5}}\n", ["CP105"],
        [("$.gates.defaults['train/loss'].constraint", "anyOf")]),
    "stage name with a space": (HEAD + "stages:\n  - {name: bad name, backend: cpu}\n", ["CP105"],
                                [("$.stages[0].name", "pattern")]),
    "label with a leading space": (VALID + "pull_request: {require_labels: [' run-ci']}\n", ["CP105"],
                                   [("$.pull_request.require_labels[0]", "pattern")]),
    "bad image tag": (VALID + "file_run: {default_tag: 'bad tag!'}\n", ["CP105"],
                      [("$.file_run.default_tag", "pattern")]),
    "image with a tag": (VALID + "images: {cuda: {repository: ghcr.io/org/ci:latest, dockerfile: Dockerfile}}\n",
                         ["CP105"], [("$.images.cuda.repository", "pattern")]),
    "upper-case backend": (VALID + "backends: {NPU: null}\n", ["CP105"], [("$.backends", "pattern")]),
    "unknown argument type": (VALID + "markers: {extra_arguments: {stage: list}}\n", ["CP105"],
                              [("$.markers.extra_arguments.stage", "enum")]),
    "repeated runner label": (stage("runs_on: [h200, h200]"), ["CP106"], [("$.stages[0].runs_on", "uniqueItems")]),
    "workflows true": (VALID + "lint: {workflows: true}\n", ["CP105"], [("$.lint.workflows", "anyOf")]),
    "ignoring a configuration code": (VALID + "lint:\n  ignore:\n    - {paths: [tests/**], codes: [CP101]}\n",
                                      ["CP105"], [("$.lint.ignore[0].codes[0]", "enum")]),
    "quarantine without an issue or owner": (VALID + "quarantine:\n  - {file: a.py, reason: r, until: 2027-01-15}\n",
                                             ["CP103"], [("$.quarantine[0]", "anyOf")]),
    "quarantine until no date": (VALID + "quarantine:\n  - {file: a.py, reason: r, owner: x, until: 2027-02-30}\n",
                                 ["CP105"], [("$.quarantine[0].until", "format")]),
    "cron of four fields": (VALID + "cadences: {schedules: {'0 15 * *': nightly}}\n", ["CP105"],
                            [("$.cadences.schedules", "pattern")]),
}


@pytest.mark.parametrize("text, codes, errors", REFUSED.values(), ids=REFUSED.keys())
def test_what_the_loader_refuses_for_a_key_the_schema_refuses_there(text, codes, errors):
    assert loader_codes(text) == codes
    assert schema_errors(text) == errors


@pytest.mark.slow
def test_check_jsonschema_validates_every_configuration_against_the_shipped_file(tmp_path):
    """The CLI a repository would run in a hook or a CI step, with the file the package ships (which
    tests/render/test_output_schemas.py keeps equal to `config_schema()`)."""
    schema = ROOT / "ci_policy" / "schemas" / "config.schema.json"
    assert json.loads(schema.read_text(encoding="utf-8")) == SCHEMA
    tool = Path(sys.executable).parent / "check-jsonschema"
    ok = subprocess.run([str(tool), "--schemafile", str(schema), *map(str, CONFIG_FILES)], capture_output=True,
                        text=True, check=False, timeout=120)
    assert (ok.returncode, ok.stdout.strip()) == (0, "ok -- validation done"), ok.stdout + ok.stderr
    bad = tmp_path / "ci-policy.yml"
    bad.write_text(VALID + "stages_extra: 1\n", encoding="utf-8")
    refused = subprocess.run([str(tool), "--schemafile", str(schema), str(bad)], capture_output=True, text=True,
                             check=False, timeout=120)
    assert refused.returncode == 1
    assert "Additional properties are not allowed ('stages_extra' was unexpected)" in refused.stdout


# -- property: the schema never refuses a configuration the loader accepts ---------------------------

# Values tried for a key: each key's edges and defaults, the other types, and values some check refuses.
VALUES = st.sampled_from([
    0, 1, 2, 3, 10000, 10001, -1, 0.5, 604800, 604801, 1e9, True, False, None, "", " ", "x", "auto", "cpu", "cuda",
    "npu", "python", "pytest", "regular", "nightly", "all", "run", "prune", "mean", "last", "tests", "/abs",
    "a/../b", "./tests", "test_*.py", "a/b.py", "bad name", "v1", "CP201", "CP101", "latest", "bad tag!",
    "ghcr.io/org/ci", "ghcr.io/org/ci:1", "{stage}", "FOO_*", "[", [], ["x"], ["x", "x"], ["nightly", "weekly"],
    ["cpu"], ["v1", "v2"], [1, 2], ["tests/**"], {"default": 2}, {"default": 2, "schedule": 1}, {"x": 1},
    {"exclude": ["x"]}, {"accelerator": False}, {"run-ci-all": None}, {"npu": None}, {"factor": 2, "floor": 60},
    {"register_npu_ci": "cpu"}, {"stage": "string"}, {"0 15 * * *": "nightly"},
])
# Where a value goes: a stage's key, a top-level key, or a key of a section.
PLACES = st.sampled_from([
    *(("stages", 0, key.name) for key in STAGE_TABLE.keys),
    *((key.name,) for key in TOP.keys if key.name not in ("version", "stages", "discovery")),
    ("runner", "kill_grace"), ("runner", "timeout_from_est_time"), ("tune", "quantile"), ("tune", "deadband"),
    ("gates", "window"), ("gates", "reference"), ("gates", "capture"), ("cadences", "merge_group"),
    ("cadences", "nightly_exclude"), ("cadences", "schedules"), ("selection", "explicit"),
    ("selection", "no_gpu_paths"),
    ("lint", "workflows"), ("file_run", "default_tag"), ("file_run", "image"), ("markers", "suite"),
    ("markers", "names"), ("markers", "extra_arguments"), ("discovery", "pattern"), ("discovery", "exclude"),
    ("pull_request", "priority_labels"), ("backends",), ("scopes",),
])


def _put(doc: dict, place: tuple, value: object) -> None:
    """Set the key at `place`, unless an earlier change left no mapping (or list item) on the way."""
    here: object = doc
    *parents, last = place
    for step in parents:
        if isinstance(step, str) and isinstance(here, dict):
            here = here.setdefault(step, {})
        elif isinstance(step, int) and isinstance(here, list) and step < len(here):
            here = here[step]
        else:
            return
    if isinstance(here, dict) if isinstance(last, str) else isinstance(here, list):
        here[last] = value  # type: ignore[index]


def _key_schema(place: tuple) -> dict:
    schema = SCHEMA
    for step in place:
        schema = schema["items"] if isinstance(step, int) else schema["properties"][step]
    return schema


def _edges(schema: dict) -> list:
    """Values at the edges of what a key's schema accepts: its default, enum members, bounds."""
    out = [schema["default"]] if "default" in schema else []
    out += list(schema.get("enum", ())) + ([schema["const"]] if "const" in schema else [])
    if schema.get("type") in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + 0.5)
        out += [low, schema["maximum"]] if schema.get("type") == "number" else [int(low), schema["maximum"]]
    if schema.get("type") == "array":
        out += [[item] for item in _edges(schema["items"])[:3]]
    for member in schema.get("anyOf", ()):
        out += _edges(member)
    return out


# Mappings keyed by backend: the schema takes any backend name, the loader those `backends` declares.
BACKEND_KEYED = ("file_run.image.", "images.")


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PLACES.flatmap(lambda place: st.tuples(st.just(place), st.one_of(
    st.sampled_from(_edges(_key_schema(place)) or [None]), VALUES))), max_size=3))
@example(changes=[(("file_run", "image"), {"register_npu_ci": "cpu"})])
def test_the_schema_never_refuses_a_configuration_the_loader_accepts(changes):
    doc: dict = {"version": 1, "discovery": {"roots": ["tests"]}, "stages": [{"name": "cpu", "backend": "cpu"}]}
    for place, value in changes:
        _put(doc, place, copy.deepcopy(value))  # the pools' lists and mappings stay as they are
    text = json.dumps(doc)  # JSON is YAML
    if loader_codes(text) is None:
        assert schema_errors(text) == []
    elif schema_errors(text) == []:
        # The schema accepts what only a rule across keys (or a check it cannot state) refuses;
        # among them a key of a mapping by backend that `backends` does not declare, and the
        # order of the stages (`after`: CP109-CP111).
        try:
            parse_config(text)
        except InputErrors as exc:
            assert [e.code for e in exc.errors
                    if e.code not in {"CP103", "CP105", "CP106", "CP108", "CP109", "CP110", "CP111"}
                    and not (e.code == "CP102" and e.message.startswith(BACKEND_KEYED))] == []
