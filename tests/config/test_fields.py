"""The field tables: each key declared once, and the read-only mappings the sections store."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import MINIMAL_CONFIG

from ci_policy.config.accelerators import ACCELERATOR, Accelerator
from ci_policy.config.backends import BACKEND
from ci_policy.config.cadences import CADENCES_TABLE, SCHEDULE, Cadences, Schedule
from ci_policy.config.discovery import DISCOVERY_TABLE, IMPLICIT, ROOT, Discovery, ImplicitRoot
from ci_policy.config.fields import REQUIRED, FrozenMap, Key, Table, boolean, freeze, integer
from ci_policy.config.file_run import FILE_RUN_TABLE, FileRunConfig
from ci_policy.config.gates import GATE_DEFAULT, GATES_TABLE, REQUIREMENT, GateRequirement, GatesConfig
from ci_policy.config.images import IMAGE, IMAGE_BUILD, ImageBuild, ImageBuilder
from ci_policy.config.lint import IGNORE_RULE, LINT_TABLE, IgnoreRule, LintConfig
from ci_policy.config.markers import MARKERS_TABLE, Markers
from ci_policy.config.pull_request import PULL_REQUEST_TABLE, PullRequest
from ci_policy.config.quarantine import QUARANTINE_ENTRY, Quarantine
from ci_policy.config.reference import _tables
from ci_policy.config.runner import ENV, FROM_EST_TIME, RETRY, RUNNER_TABLE, EnvRules, RunnerConfig
from ci_policy.config.runrules import RetryRules
from ci_policy.config.scopes import SCOPE, Scope
from ci_policy.config.selection import RULE, SELECTION_TABLE, Rule, Selection
from ci_policy.config.stages import MAX_PARALLEL_TABLE, STAGE, VARIANT, MaxParallel, Stage, Variant
from ci_policy.config.top import TOP, Config, parse_config
from ci_policy.config.tune import TUNE_TABLE, TuneConfig
from ci_policy.read.yamlnodes import Schema, compose

# table -> (its dataclass, the dataclass fields that are not configuration keys)
SECTIONS = [
    (TOP, Config, {"path", "lines"}),
    (MARKERS_TABLE, Markers, {"line"}),
    (PULL_REQUEST_TABLE, PullRequest, {"line"}),
    # wave, shared: computed from every stage's after, name; variant: the one a planned stage is
    (STAGE, Stage, {"line", "wave", "shared", "variant"}),
    (VARIANT, Variant, {"line", "image_line"}),
    (MAX_PARALLEL_TABLE, MaxParallel, set()),
    (DISCOVERY_TABLE, Discovery, {"root_patterns"}),
    (IMPLICIT, ImplicitRoot, {"line"}),
    (CADENCES_TABLE, Cadences, {"line"}),
    (SCHEDULE, Schedule, {"cron", "line"}),
    (SCOPE, Scope, {"name", "line"}),
    (SELECTION_TABLE, Selection, {"line"}),
    (RULE, Rule, {"line"}),
    (RUNNER_TABLE, RunnerConfig, set()),
    (RETRY, RetryRules, set()),
    (ENV, EnvRules, set()),
    (GATES_TABLE, GatesConfig, {"line"}),
    (REQUIREMENT, GateRequirement, {"line"}),
    (FILE_RUN_TABLE, FileRunConfig, set()),
    (IMAGE_BUILD, ImageBuilder, set()),
    (IMAGE, ImageBuild, set()),
    (ACCELERATOR, Accelerator, {"line"}),
    (TUNE_TABLE, TuneConfig, set()),
    (LINT_TABLE, LintConfig, {"line"}),
    (IGNORE_RULE, IgnoreRule, {"line"}),
    (QUARANTINE_ENTRY, Quarantine, {"line", "lines"}),
]


@pytest.mark.parametrize("table, cls, extra", SECTIONS, ids=[t.title for t, _c, _e in SECTIONS])
def test_a_dataclass_has_one_field_per_key_with_the_tables_default(table, cls, extra):
    fields = {f.name: f for f in dataclasses.fields(cls)}
    assert [k.name for k in table.keys if k.name in fields] == [k.name for k in table.keys]
    assert set(fields) - extra == {k.name for k in table.keys}
    for key in table.keys:
        f = fields[key.name]
        if key.required:
            assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        else:
            assert f.default == key.default


def test_every_table_is_reachable_from_the_top_level():
    reached = list(_tables(TOP))
    assert [t.title for t in reached] == [
        ".github/ci-policy.yml", "backends.<name>", "markers", "pull_request", "stages[]", "stages[].max_parallel",
        "stages[].variants[]", "discovery", "discovery.roots[]",
        "discovery.implicit[]",
        "cadences", "cadences.schedules.<cron>", "scopes.<run-ci-name>", "selection",
        "selection.rules[]", "runner", "runner.retry",
        "runner.timeout_from_est_time", "runner.env", "gates", "gates.defaults.<metric key>", "gates.require[]",
        "file_run", "image_build",
        "images.<backend>", "accelerators[]", "tune", "lint", "lint.ignore[]", "quarantine[]"]
    # Tables without a dataclass of their own: a `{path, pattern}` root is a pair in `Discovery`.
    # A declared backend is one entry of `Backends.accelerator`.
    without_class = {id(FROM_EST_TIME), id(GATE_DEFAULT), id(ROOT), id(BACKEND)}
    assert {id(t) for t in reached} == {id(t) for t, _c, _e in SECTIONS} | without_class


def test_every_key_is_described():
    for table in _tables(TOP):
        assert table.doc.endswith(".")
        for key in table.keys:
            assert key.doc.endswith(".") and key.parser.kind, (table.title, key.name)


def test_a_table_refuses_a_key_declared_twice():
    with pytest.raises(ValueError, match=r"t: a key is declared twice: \['a', 'a'\]"):
        Table("t", "T.", (Key("a", boolean(), False, "A."), Key("a", integer(1), 1, "A.")))


def test_a_required_key_has_no_default():
    table = Table("t", "T.", (Key("a", boolean(), REQUIRED, "A."), Key("b", integer(1), 1, "B.")))
    assert table.default("b") == 1
    with pytest.raises(KeyError, match="t.a is required and has no default"):
        table.default("a")


def test_read_parses_present_keys_and_falls_back_to_defaults():
    table = Table("t", "T.", (Key("a", boolean(), REQUIRED, "A."), Key("b", integer(1), 1, "B."),
                              Key("c", integer(1), 2, "C.")))
    s = Schema("f.yml")
    values = table.read(s, compose("a: true\nc: 0\n", "f.yml"), "t")
    assert values is not None
    assert [e.message for e in s.errors] == ["t.c: must be at least 1, got 0"]
    assert (values.get("a"), values.get("b"), values.get("b", 7)) == (True, 1, 7)
    assert "a" in values and "b" not in values
    assert values.any_invalid() and values.line == 1 and values.path("b") == "t.b"
    assert table.read(s, compose("[]", "f.yml"), "t") is None


def test_frozen_map_is_read_only_and_compares_like_a_dict():
    m = FrozenMap([("b", 1), ("a", 2)])
    assert list(m) == ["b", "a"] and m["a"] == 2 and m.get("c") is None and len(m) == 2
    assert m == {"a": 2, "b": 1} and {"a": 2, "b": 1} == m and m != {"a": 2}
    assert hash(m) == hash(FrozenMap({"a": 2, "b": 1}))
    with pytest.raises(TypeError):
        m["c"] = 3  # type: ignore[index]
    with pytest.raises(AttributeError):
        m.update({"c": 3})  # type: ignore[attr-defined]
    assert repr(m) == "FrozenMap({'b': 1, 'a': 2})"


def test_freeze_makes_plain_values_read_only():
    frozen = freeze({"steps": [1, 2], "constraint": {"rel_up": 1.0}})
    assert frozen == {"steps": (1, 2), "constraint": {"rel_up": 1.0}}
    assert isinstance(frozen, FrozenMap) and isinstance(frozen["constraint"], FrozenMap)


def test_a_config_and_its_sections_are_hashable():
    config = parse_config(MINIMAL_CONFIG + "cadences:\n  schedules: {'0 4 * * *': nightly}\n"
                          "file_run:\n  image: {cuda: ghcr.io/org/ci-cuda}\n"
                          "gates:\n  defaults: {train/grad_norm: {steps: [1, 0], constraint: {rel_up: 1, "
                          "rel_down: 1}}}\n")
    assert hash(config) == hash(parse_config(MINIMAL_CONFIG + "cadences:\n  schedules: {'0 4 * * *': nightly}\n"
                                             "file_run:\n  image: {cuda: ghcr.io/org/ci-cuda}\n"
                                             "gates:\n  defaults: {train/grad_norm: {steps: [1, 0], "
                                             "constraint: {rel_up: 1, rel_down: 1}}}\n"))
    assert config.cadences.for_cron("0 4 * * *") == "nightly"
    assert config.file_run.image_for("cuda") == "ghcr.io/org/ci-cuda"
    assert config.file_run.image_for("rocm") is None
    assert config.gates.defaults["train/grad_norm"] == {"steps": (1, 0), "constraint": {"rel_up": 1, "rel_down": 1}}
    for mapping in (config.cadences.schedules, config.file_run.image, config.gates.defaults, config.lines):
        assert isinstance(mapping, FrozenMap)
