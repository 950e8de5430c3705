"""`.github/ci-policy.yml`: parse_config / load_config behaviour, every error located exactly."""

from __future__ import annotations

import dataclasses
import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_policy import __version__
from ci_policy.config import (
    MAX_CONFIG_BYTES,
    Config,
    Discovery,
    ImplicitRoot,
    Stage,
    load_config,
    parse_config,
)
from ci_policy.config.codes import CONFIG_CODES
from ci_policy.errors import InputError, InputErrors

P = ".github/ci-policy.yml"
STAGE_KEYS_HINT = ("allowed keys here: backend, diff_pruned, external, name, partitions, runner, "
                   "runs_on, timeout_per_file")
OWN_TOP_LEVEL_KEYS = ["discovery", "gpu_requires_labels", "labels_file", "requires", "stages", "version"]

HEAD = "version: 1\ndiscovery:\n  roots: [tests]\n"
CPU_STAGE = "stages:\n  - {name: cpu, backend: cpu}\n"
VALID = HEAD + CPU_STAGE


def caught(fn, *args, **kwargs) -> list[tuple]:
    """(path, line, col, message, hint) of every error `fn` raises; fails if it raises none."""
    try:
        fn(*args, **kwargs)
    except InputErrors as exc:
        return [(e.path, e.line, e.col, e.message, e.hint) for e in exc.errors]
    except InputError as exc:
        return [(exc.path, exc.line, exc.col, exc.message, exc.hint)]
    pytest.fail("no InputError raised")


def errors(text: str) -> list[tuple]:
    return caught(parse_config, text, P)


def at(text: str, needle: str, nth: int = 1) -> tuple[int, int]:
    """1-based (line, col) of the nth occurrence of `needle` in `text`."""
    pos = -1
    for _ in range(nth):
        pos = text.index(needle, pos + 1)
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def err(text: str, needle: str, message: str, hint: str | None = None, nth: int = 1) -> tuple:
    return (P, *at(text, needle, nth), message, hint)


def stages(*items: str) -> str:
    return HEAD + "stages:\n" + "".join(f"  - {item}\n" for item in items)


def discovery(body: str) -> str:
    return "version: 1\n" + body + CPU_STAGE


def cpu_stage(line: int, **overrides) -> Stage:
    return dataclasses.replace(Stage(name="cpu", backend="cpu", line=line), **overrides)


# -- accepted forms -------------------------------------------------------------------------


def test_minimal_config_has_every_default():
    config = parse_config(VALID)
    assert config == Config(
        path=P,
        version=1,
        discovery=Discovery(roots=("tests",), pattern="test_*.py", implicit=()),
        stages=(Stage(name="cpu", backend="cpu", runs_on=(), partitions=1, runner="pytest",
                      timeout_per_file=None, diff_pruned=False, external=False, line=5),),
        requires=None,
        labels_file="labels.py",
        gpu_requires_labels=True,
    )
    assert config.line_of("version") == 1
    assert config.line_of("discovery") == 2
    assert config.line_of("stages") == 4
    assert config.line_of("requires") is None


def test_every_key_set_explicitly():
    text = textwrap.dedent(f"""\
        version: 1
        requires: ">={__version__}"
        labels_file: ci/labels.py
        discovery:
          roots: [tests, tools/tests]
          pattern: "check_*.py"
          implicit:
            - {{root: tests/unit, backend: cpu, suite: unit, est_time: 2.5, cpu_only: true}}
            - {{root: tools/tests, backend: cuda, suite: gpu, est_time: 30}}
        gpu_requires_labels: false
        stages:
          - name: unit
            backend: cpu
            runner: python
            partitions: 3
            timeout_per_file: 120.5
            diff_pruned: true
            external: false
          - {{name: gpu, backend: cuda, runs_on: [h200, 4gpu], runner: pytest, timeout_per_file: 60,
              diff_pruned: false}}
          - {{name: amd.v2_x-1, backend: rocm, external: true, partitions: 4}}
        """)
    assert parse_config(text, "custom.yml") == Config(
        path="custom.yml",
        version=1,
        requires=f">={__version__}",
        labels_file="ci/labels.py",
        discovery=Discovery(
            roots=("tests", "tools/tests"),
            pattern="check_*.py",
            implicit=(
                ImplicitRoot(root="tests/unit", backend="cpu", suite="unit", est_time=2.5,
                             cpu_only=True, line=8),
                ImplicitRoot(root="tools/tests", backend="cuda", suite="gpu", est_time=30,
                             cpu_only=False, line=9),
            ),
        ),
        gpu_requires_labels=False,
        stages=(
            Stage(name="unit", backend="cpu", runs_on=(), partitions=3, runner="python",
                  timeout_per_file=120.5, diff_pruned=True, external=False, line=12),
            Stage(name="gpu", backend="cuda", runs_on=("h200", "4gpu"), partitions=1, runner="pytest",
                  timeout_per_file=60, diff_pruned=False, external=False, line=19),
            Stage(name="amd.v2_x-1", backend="rocm", runs_on=(), partitions=4, runner="python",
                  timeout_per_file=None, diff_pruned=True, external=True, line=21),
        ),
    )


@pytest.mark.parametrize("backend, runner, diff_pruned", [
    ("cpu", "pytest", False),
    ("cuda", "python", True),
    ("rocm", "python", True),
])
def test_runner_and_diff_pruned_defaults_depend_on_backend(backend, runner, diff_pruned):
    config = parse_config(stages(f"{{name: s, backend: {backend}, runs_on: [r1]}}"))
    assert config.stages == (Stage(name="s", backend=backend, runs_on=("r1",), partitions=1, runner=runner,
                                   timeout_per_file=None, diff_pruned=diff_pruned, external=False,
                                   line=5),)


@pytest.mark.parametrize("backend", ["cuda", "rocm"])
def test_external_gpu_stage_needs_no_runs_on(backend):
    config = parse_config(stages(f"{{name: ext, backend: {backend}, external: true}}"))
    assert config.stages == (Stage(name="ext", backend=backend, runs_on=(), runner="python",
                                   diff_pruned=True, external=True, line=5),)


def test_cpu_stage_may_name_runners():
    config = parse_config(stages("{name: cpu, backend: cpu, runs_on: [ubuntu-latest]}"))
    assert config.stages == (cpu_stage(5, runs_on=("ubuntu-latest",)),)


def test_block_and_flow_styles_are_equivalent():
    flow = parse_config(stages("{name: g, backend: cuda, runs_on: [a, b], partitions: 2}"))
    block = parse_config(HEAD + textwrap.dedent("""\
        stages:
          - name: g
            backend: cuda
            runs_on:
              - a
              - b
            partitions: 2
        """))
    assert flow == block


@pytest.mark.parametrize("spec", [">=0.1", f"=={__version__}", "==0.1.*", "~=0.1", ">=0.1,<1",
                                  f"==={__version__}", "!=0.0.1"])
def test_satisfied_requires_is_kept_verbatim(spec):
    assert parse_config(f"requires: '{spec}'\n" + VALID).requires == spec


@pytest.mark.parametrize("written, stored", [
    ("ci/labels.py", "ci/labels.py"),
    ("./ci/labels.py", "ci/labels.py"),
    ("ci//labels.py", "ci/labels.py"),
    ("ci/./labels.py", "ci/labels.py"),
])
def test_labels_file_is_normalised(written, stored):
    assert parse_config(f"labels_file: {written}\n" + VALID).labels_file == stored


@pytest.mark.parametrize("written, stored", [
    ("[tests]", ("tests",)),
    ("[tests/]", ("tests",)),
    ("[./tests, e2e]", ("tests", "e2e")),
    ("[.]", (".",)),
    ("[b, a]", ("b", "a")),
])
def test_discovery_roots_are_normalised_and_keep_their_order(written, stored):
    assert parse_config(discovery(f"discovery:\n  roots: {written}\n")).discovery.roots == stored


def test_gpu_requires_labels_accepts_booleans():
    assert parse_config("gpu_requires_labels: false\n" + VALID).gpu_requires_labels is False
    assert parse_config("gpu_requires_labels: true\n" + VALID).gpu_requires_labels is True


def test_implicit_defaults_and_most_specific_root():
    text = discovery(textwrap.dedent("""\
        discovery:
          roots: [tests]
          implicit:
            - {root: tests, backend: cpu, suite: cpu, est_time: 0}
            - {root: tests/unit, backend: cpu, suite: cpu, est_time: 1, cpu_only: true}
        """))
    disc = parse_config(text).discovery
    broad = ImplicitRoot(root="tests", backend="cpu", suite="cpu", est_time=0, cpu_only=False, line=5)
    narrow = ImplicitRoot(root="tests/unit", backend="cpu", suite="cpu", est_time=1, cpu_only=True, line=6)
    assert disc.implicit == (broad, narrow)
    assert disc.implicit_for("tests/unit/test_a.py") == narrow
    assert disc.implicit_for("tests/unitx/test_a.py") == broad
    assert disc.implicit_for("tests/test_a.py") == broad
    assert disc.implicit_for("other/test_a.py") is None


def test_config_objects_are_frozen():
    config = parse_config(VALID)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.version = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.stages[0].backend = "cuda"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.discovery.roots = ()  # type: ignore[misc]


# -- whole-file problems --------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "   \n# c\n"])
def test_empty_file(text):
    assert errors(text) == [(P, 1, 1, "configuration is empty", "start with 'version: 1'")]


def test_a_document_marker_alone_is_a_null_document():
    assert errors("---\n") == [(P, 2, 1, "expected a mapping, got null", None)]


@pytest.mark.parametrize("text, described", [
    ("- version: 1\n", "a list"),
    ("just text\n", "a string ('just text')"),
    ("42\n", "an integer ('42')"),
    ("null\n", "null"),
    ("!!binary aGVsbG8=\n", "binary data ('aGVsbG8=')"),
])
def test_top_level_must_be_a_mapping(text, described):
    assert errors(text) == [(P, 1, 1, f"expected a mapping, got {described}", None)]


@pytest.mark.parametrize("text, line, col, problem", [
    ("version: [1\n", 2, 1, "expected ',' or ']', but got '<stream end>'"),
    ("version: 1\n  bad: indent\n", 2, 6, "mapping values are not allowed here"),
    ("\tversion: 1\n", 1, 1, "found character '\\t' that cannot start any token"),
    ("version: 1\nstages: {a: 1\n", 3, 1, "expected ',' or '}', but got '<stream end>'"),
    ("version: 'open\n", 2, 1, "found unexpected end of stream"),
    (VALID + "---\nversion: 1\n", 6, 1, "but found another document"),
])
def test_yaml_syntax_errors(text, line, col, problem):
    assert errors(text) == [(P, line, col, f"invalid YAML: {problem}", "fix the YAML syntax")]


def test_anchors_and_aliases_are_rejected():
    anchored = VALID.replace("roots: [tests]", "roots: &r [tests]")
    assert errors(anchored) == [err(anchored, "&r", "invalid YAML: anchors are not allowed in ci-policy "
                                    "configuration", "write each value out in full")]
    # An alias is refused as such, even when it names no anchor.
    aliased = VALID + "labels_file: *nowhere\n"
    assert errors(aliased) == [err(aliased, "*nowhere", "invalid YAML: aliases are not allowed in "
                                   "ci-policy configuration", "write each value out in full")]


def test_billion_laughs_is_refused_at_the_first_anchor():
    text = 'a: &a ["lol","lol"]\nb: &b [*a,*a]\nc: &c [*b,*b]\n'
    assert errors(text) == [(P, 1, 4, "invalid YAML: anchors are not allowed in ci-policy configuration",
                             "write each value out in full")]


def test_duplicate_keys_are_errors_at_every_level():
    text = textwrap.dedent("""\
        version: 1
        discovery:
          roots: [tests]
          roots: [e2e]
        stages:
          - {name: cpu, backend: cpu, backend: cuda}
        version: 1
        """)
    assert errors(text) == [
        err(text, "roots", "discovery.roots: duplicate key (first defined on line 3)", "keep one definition",
            nth=2),
        err(text, "backend", "stages[0].backend: duplicate key (first defined on line 6)",
            "keep one definition", nth=2),
        err(text, "version", "version: duplicate key (first defined on line 1)", "keep one definition", nth=2),
    ]


@pytest.mark.parametrize("entry, col, described", [
    ("1: x\n", 1, "an integer ('1')"),
    ("~: x\n", 1, "null"),
    ("true: x\n", 1, "a boolean ('true')"),
    ("1.5: x\n", 1, "a number ('1.5')"),
    ("? [a, b]\n: x\n", 3, "a list"),
    ("? !!python/name:os.system y\n: x\n", 3, "a value tagged tag:yaml.org,2002:python/name:os.system ('y')"),
])
def test_keys_must_be_strings(entry, col, described):
    assert errors(VALID + entry) == [(P, 6, col, f"(top level): keys must be strings, got {described}", None)]


def test_unsafe_tags_are_never_constructed():
    scalar = "version: !!python/object/apply:os.system ['true']\n" + VALID.replace("version: 1\n", "")
    assert errors(scalar) == [err(scalar, "!!python", "invalid YAML: tag tag:yaml.org,2002:python/object/apply:"
                                  "os.system is not allowed in ci-policy configuration", "remove the tag")]
    name = VALID.replace("version: 1", "version: !!python/name:os.system x")
    assert errors(name) == [err(name, "!!python", "version: unsupported YAML value: could not determine a "
                                "constructor for the tag 'tag:yaml.org,2002:python/name:os.system'")]
    local = VALID.replace("roots: [tests]", "roots: !local [tests]")
    assert errors(local) == [err(local, "!local", "invalid YAML: tag !local is not allowed in ci-policy "
                                 "configuration", "remove the tag")]


def test_deep_nesting_is_refused_not_a_crash():
    text = "version: " + "[" * 10_000 + "]" * 10_000 + "\n"
    # The top mapping is level 1; the 64th bracket would be level 65.
    assert errors(text) == [(P, 1, len("version: ") + 64, "invalid YAML: nesting deeper than 64 levels is "
                             "not allowed", "flatten the structure")]


# -- top-level keys -------------------------------------------------------------------------


def test_unknown_top_level_key_suggests_the_closest():
    text = "versoin: 1\n" + VALID
    (error,) = errors(text)
    assert error[:4] == (P, 1, 1, "versoin: unknown key; did you mean 'version'?")
    hint = error[4]
    assert hint.startswith("allowed keys here: ")
    listed = hint[len("allowed keys here: "):].split(", ")
    assert listed == sorted(listed)
    assert set(OWN_TOP_LEVEL_KEYS) <= set(listed)


def test_unknown_key_without_a_close_match_has_no_suggestion():
    text = VALID + "colour: red\n"
    (error,) = errors(text)
    assert error[:4] == (P, 6, 1, "colour: unknown key")


@pytest.mark.parametrize("missing", ["version", "discovery", "stages"])
def test_required_top_level_keys(missing):
    parts = {"version": "version: 1\n", "discovery": "discovery:\n  roots: [tests]\n", "stages": CPU_STAGE}
    text = "".join(v for k, v in parts.items() if k != missing)
    assert errors(text) == [(P, 1, 1, f"{missing}: required key is missing", None)]


def test_only_version_reports_both_missing_sections():
    assert errors("version: 1\n") == [
        (P, 1, 1, "discovery: required key is missing", None),
        (P, 1, 1, "stages: required key is missing", None),
    ]


@pytest.mark.parametrize("value, message", [
    ("true", "version: expected an integer, got a boolean ('true')"),
    ("false", "version: expected an integer, got a boolean ('false')"),
    ("'1'", "version: expected an integer, got a string ('1')"),
    ("1.0", "version: expected an integer, got a number ('1.0')"),
    ("~", "version: expected an integer, got null"),
    ("[1]", "version: expected an integer, got a list"),
    ("2020-01-01", "version: expected an integer, got a date ('2020-01-01')"),
    ("2020-02-30", "version: unsupported YAML value: '2020-02-30' is not a valid timestamp"),
    ("!!int x", "version: unsupported YAML value: 'x' is not a valid int"),
    ("2", "version: unsupported version 2; this ci_policy reads version 1"),
    ("0", "version: unsupported version 0; this ci_policy reads version 1"),
])
def test_version_must_be_the_integer_1(value, message):
    text = VALID.replace("version: 1", f"version: {value}")
    assert errors(text) == [(P, 1, 10, message, None)]


@pytest.mark.parametrize("spec", ["banana", "0.1", "", " ", ">=", ">= 0.1 ||"])
def test_invalid_requires_specifier(spec):
    text = f"requires: '{spec}'\n" + VALID
    assert errors(text) == [(P, 1, 11, f"requires: {spec!r} is not a valid version specifier",
                             "write a PEP 440 specifier such as '>=0.1'")]


@pytest.mark.parametrize("spec", [">=9", "<0.1", f"!={__version__}", ">=0.1,<0.1"])
def test_unsatisfied_requires(spec):
    text = f'requires: "{spec}"\n' + VALID
    assert errors(text) == [(P, 1, 11, f"requires: this repository requires ci_policy {spec}, but ci_policy "
                             f"{__version__} is installed", f"install a ci_policy version matching {spec}")]


def test_requires_must_be_a_string():
    text = "requires: 1\n" + VALID
    assert errors(text) == [(P, 1, 11, "requires: expected a string, got an integer ('1')", None)]


@pytest.mark.parametrize("value, message, hint", [
    ("/etc/labels.py", "labels_file: '/etc/labels.py' is absolute; paths are relative to the repository root",
     "drop the leading '/'"),
    ("../labels.py", "labels_file: '../labels.py' leaves the repository ('..' is not allowed)",
     "name a path inside the repository"),
    ("ci/../../labels.py", "labels_file: 'ci/../../labels.py' leaves the repository ('..' is not allowed)",
     "name a path inside the repository"),
    ("''", "labels_file: expected a repo-relative path, got ''", "write a path such as tests/e2e"),
    ("' labels.py'", "labels_file: expected a repo-relative path, got ' labels.py'",
     "write a path such as tests/e2e"),
    ("'ci\\labels.py'", "labels_file: 'ci\\\\labels.py' must use forward slashes and no NUL bytes",
     "write a POSIX path such as tests/e2e"),
    ("1", "labels_file: expected a string, got an integer ('1')", None),
])
def test_invalid_labels_file(value, message, hint):
    text = f"labels_file: {value}\n" + VALID
    assert errors(text) == [(P, 1, 14, message, hint)]


@pytest.mark.parametrize("value, described", [
    ("1", "an integer ('1')"),
    ("0", "an integer ('0')"),
    ("'true'", "a string ('true')"),
    ("~", "null"),
])
def test_gpu_requires_labels_must_be_a_boolean(value, described):
    text = f"gpu_requires_labels: {value}\n" + VALID
    assert errors(text) == [(P, 1, 22, f"gpu_requires_labels: expected a boolean, got {described}", None)]


# -- stages ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value, message", [
    ("[]", "stages: must not be empty"),
    ("{}", "stages: expected a list, got a mapping"),
    ("cpu", "stages: expected a list, got a string ('cpu')"),
])
def test_stages_must_be_a_non_empty_list(value, message):
    text = HEAD + f"stages: {value}\n"
    assert errors(text) == [(P, 4, 9, message, None)]


def test_stages_null():
    text = HEAD + "stages:\n"
    assert errors(text) == [(P, 4, 8, "stages: expected a list, got null", None)]


def test_stage_must_be_a_mapping():
    text = stages("cpu", "[cpu]")
    assert errors(text) == [
        (P, 5, 5, "stages[0]: expected a mapping, got a string ('cpu')", None),
        (P, 6, 5, "stages[1]: expected a mapping, got a list", None),
    ]


def test_stage_requires_name_and_backend():
    text = stages("{runs_on: [x]}")
    assert errors(text) == [
        (P, 5, 5, "stages[0].backend: required key is missing", None),
        (P, 5, 5, "stages[0].name: required key is missing", None),
    ]


def test_unknown_stage_key_suggests_the_closest():
    text = stages("{name: cpu, backend: cpu, partiton: 2}")
    assert errors(text) == [err(text, "partiton", "stages[0].partiton: unknown key; did you mean "
                                "'partitions'?", STAGE_KEYS_HINT)]


@pytest.mark.parametrize("name", ["-cpu", "_cpu", ".cpu", "a b", "cpu!", "ümlaut", "''"])
def test_stage_name_must_match_the_pattern(name):
    text = stages(f"{{name: {name}, backend: cpu}}")
    shown = repr(name.strip("'"))
    assert errors(text) == [(P, 5, 12, f"stages[0].name: {shown} is not a valid name "
                             "(expected [A-Za-z0-9][A-Za-z0-9_.-]*)", None)]


def test_stage_name_must_be_a_string():
    text = stages("{name: 1, backend: cpu}")
    assert errors(text) == [(P, 5, 12, "stages[0].name: expected a string, got an integer ('1')", None)]


def test_stage_names_are_unique():
    text = stages("{name: a, backend: cpu}", "{name: b, backend: cpu}", "{name: a, backend: cpu}",
                  "{name: a, backend: cpu}")
    assert errors(text) == [
        (P, 7, 12, "stages[2].name: duplicate stage name 'a' (also stages[0])", None),
        (P, 8, 12, "stages[3].name: duplicate stage name 'a' (also stages[0])", None),
    ]


@pytest.mark.parametrize("value, shown", [
    ("tpu", "'tpu'"),
    ("CUDA", "'CUDA'"),
    ("1", "an integer ('1')"),
    ("[cpu]", "a list"),
    ("~", "null"),
    ("2020-13-45", "an invalid timestamp ('2020-13-45')"),
])
def test_stage_backend_must_be_known(value, shown):
    text = stages(f"{{name: s, backend: {value}}}")
    assert errors(text) == [(P, 5, 24, f"stages[0].backend: expected one of cpu, cuda, rocm, got {shown}", None)]


def test_the_error_names_the_stage_index():
    text = stages("{name: a, backend: cpu}", "{name: b, backend: cpu}", "{name: c, backend: cpu}",
                  "{name: d, backend: gpu}")
    assert errors(text) == [err(text, "gpu", "stages[3].backend: expected one of cpu, cuda, rocm, got 'gpu'")]


@pytest.mark.parametrize("backend", ["cuda", "rocm"])
@pytest.mark.parametrize("external", ["", ", external: false"])
def test_runs_on_is_required_for_non_external_gpu_stages(backend, external):
    text = stages(f"{{name: g, backend: {backend}{external}}}")
    assert errors(text) == [(P, 5, 5, f"stages[0].runs_on: required for {backend} stages that are not external",
                             "list the runner labels, e.g. runs_on: [h200, 4gpu]")]


@pytest.mark.parametrize("value, needle, message", [
    ("[]", "[]", "stages[0].runs_on: must not be empty"),
    ("h200", "h200", "stages[0].runs_on: expected a list, got a string ('h200')"),
    ("[h200, 1]", "1]", "stages[0].runs_on[1]: expected a string, got an integer ('1')"),
    ("[h200, h200]", "h200]", "stages[0].runs_on[1]: duplicate entry 'h200'"),
])
def test_invalid_runs_on(value, needle, message):
    text = stages(f"{{name: g, backend: cuda, runs_on: {value}}}")
    assert errors(text) == [err(text, needle, message)]


@pytest.mark.parametrize("value, message", [
    ("0", "stages[0].partitions: must be at least 1, got 0"),
    ("-2", "stages[0].partitions: must be at least 1, got -2"),
    ("true", "stages[0].partitions: expected an integer, got a boolean ('true')"),
    ("1.5", "stages[0].partitions: expected an integer, got a number ('1.5')"),
    ("2.0", "stages[0].partitions: expected an integer, got a number ('2.0')"),
    ("'2'", "stages[0].partitions: expected an integer, got a string ('2')"),
])
def test_invalid_partitions(value, message):
    text = stages(f"{{name: s, backend: cpu, partitions: {value}}}")
    assert errors(text) == [(P, 5, 41, message, None)]


@pytest.mark.parametrize("value, message", [
    ("bash", "stages[0].runner: expected one of python, pytest, got 'bash'"),
    ("Pytest", "stages[0].runner: expected one of python, pytest, got 'Pytest'"),
    ("true", "stages[0].runner: expected one of python, pytest, got a boolean ('true')"),
])
def test_invalid_runner(value, message):
    text = stages(f"{{name: s, backend: cpu, runner: {value}}}")
    assert errors(text) == [(P, 5, 37, message, None)]


@pytest.mark.parametrize("value, message", [
    ("0", "stages[0].timeout_per_file: must be greater than 0, got 0"),
    ("0.0", "stages[0].timeout_per_file: must be greater than 0, got 0.0"),
    ("-5", "stages[0].timeout_per_file: must be greater than 0, got -5"),
    ("true", "stages[0].timeout_per_file: expected a number, got a boolean ('true')"),
    ("'60'", "stages[0].timeout_per_file: expected a number, got a string ('60')"),
    (".inf", "stages[0].timeout_per_file: expected a finite number, got '.inf'"),
    (".nan", "stages[0].timeout_per_file: expected a finite number, got '.nan'"),
])
def test_invalid_timeout_per_file(value, message):
    text = stages(f"{{name: s, backend: cpu, timeout_per_file: {value}}}")
    assert errors(text) == [(P, 5, 47, message, None)]


@pytest.mark.parametrize("key", ["diff_pruned", "external"])
@pytest.mark.parametrize("value, described", [("1", "an integer ('1')"), ("'true'", "a string ('true')")])
def test_boolean_stage_keys(key, value, described):
    text = stages(f"{{name: s, backend: cpu, {key}: {value}}}")
    assert errors(text) == [err(text, f"{value}}}", f"stages[0].{key}: expected a boolean, got {described}")]


def test_every_problem_of_one_stage_is_reported():
    text = stages("{name: -x, backend: cuda, partitions: 0, runner: sh, timeout_per_file: 0, diff_pruned: 2}")
    assert errors(text) == [
        (P, 5, 5, "stages[0].runs_on: required for cuda stages that are not external",
         "list the runner labels, e.g. runs_on: [h200, 4gpu]"),
        err(text, "-x", "stages[0].name: '-x' is not a valid name (expected [A-Za-z0-9][A-Za-z0-9_.-]*)"),
        err(text, "0,", "stages[0].partitions: must be at least 1, got 0"),
        err(text, "sh", "stages[0].runner: expected one of python, pytest, got 'sh'"),
        err(text, "0, diff", "stages[0].timeout_per_file: must be greater than 0, got 0"),
        err(text, "2}", "stages[0].diff_pruned: expected a boolean, got an integer ('2')"),
    ]


# -- discovery ------------------------------------------------------------------------------


@pytest.mark.parametrize("body, line, col, message", [
    ("discovery: [tests]\n", 2, 12, "discovery: expected a mapping, got a list"),
    ("discovery:\n", 2, 11, "discovery: expected a mapping, got null"),
    ("discovery: {}\n", 2, 12, "discovery.roots: required key is missing"),
    ("discovery:\n  pattern: '*.py'\n", 3, 3, "discovery.roots: required key is missing"),
    ("discovery:\n  roots: []\n", 3, 10, "discovery.roots: must not be empty"),
    ("discovery:\n  roots: tests\n", 3, 10, "discovery.roots: expected a list, got a string ('tests')"),
    ("discovery:\n  roots: [tests, 1]\n", 3, 18, "discovery.roots[1]: expected a string, got an integer ('1')"),
    ("discovery:\n  roots: [tests, tests/]\n", 3, 18, "discovery.roots[1]: duplicate root 'tests'"),
    ("discovery:\n  roots: [tests]\n  pattern: 'a/test_*.py'\n", 4, 12,
     "discovery.pattern: 'a/test_*.py' must be a basename glob such as 'test_*.py' (no '/')"),
    ("discovery:\n  roots: [tests]\n  pattern: 'a\\test_*.py'\n", 4, 12,
     "discovery.pattern: 'a\\\\test_*.py' must be a basename glob such as 'test_*.py' (no '/')"),
    ("discovery:\n  roots: [tests]\n  pattern: ''\n", 4, 12,
     "discovery.pattern: '' must be a basename glob such as 'test_*.py' (no '/')"),
    ("discovery:\n  roots: [tests]\n  pattern: 1\n", 4, 12,
     "discovery.pattern: expected a string, got an integer ('1')"),
    ("discovery:\n  roots: [tests]\n  implicit: {}\n", 4, 13, "discovery.implicit: expected a list, got a mapping"),
    ("discovery:\n  roots: [tests]\n  implicit: [tests]\n", 4, 14,
     "discovery.implicit[0]: expected a mapping, got a string ('tests')"),
])
def test_invalid_discovery(body, line, col, message):
    assert errors(discovery(body)) == [(P, line, col, message, None)]


@pytest.mark.parametrize("root, message, hint", [
    ("/tests", "discovery.roots[0]: '/tests' is absolute; paths are relative to the repository root",
     "drop the leading '/'"),
    ("../tests", "discovery.roots[0]: '../tests' leaves the repository ('..' is not allowed)",
     "name a path inside the repository"),
    ("tests/../..", "discovery.roots[0]: 'tests/../..' leaves the repository ('..' is not allowed)",
     "name a path inside the repository"),
    ("''", "discovery.roots[0]: expected a repo-relative path, got ''", "write a path such as tests/e2e"),
])
def test_discovery_roots_must_be_repo_relative(root, message, hint):
    assert errors(discovery(f"discovery:\n  roots: [{root}]\n")) == [(P, 3, 11, message, hint)]


def test_unknown_discovery_key():
    text = discovery("discovery:\n  roots: [tests]\n  patern: '*.py'\n")
    assert errors(text) == [(P, 4, 3, "discovery.patern: unknown key; did you mean 'pattern'?",
                             "allowed keys here: implicit, pattern, roots")]


def implicit(*items: str, roots: str = "[tests]", stage_list: str = CPU_STAGE) -> str:
    return ("version: 1\ndiscovery:\n  roots: " + roots + "\n  implicit:\n"
            + "".join(f"    - {item}\n" for item in items) + stage_list)


def test_implicit_requires_its_keys():
    text = implicit("{cpu_only: true}")
    assert errors(text) == [(P, 5, 7, f"discovery.implicit[0].{key}: required key is missing", None)
                            for key in ("backend", "est_time", "root", "suite")]


def test_unknown_implicit_key():
    text = implicit("{root: tests, backend: cpu, suite: cpu, est_time: 1, estimate: 2}")
    assert errors(text) == [err(text, "estimate", "discovery.implicit[0].estimate: unknown key; did you mean "
                                "'est_time'?", "allowed keys here: backend, cpu_only, est_time, root, suite")]


@pytest.mark.parametrize("item, needle, message, hint", [
    ("{root: other, backend: cpu, suite: cpu, est_time: 1}", "other",
     "discovery.implicit[0].root: 'other' is not inside any discovery root",
     "list it (or a parent) under discovery.roots"),
    ("{root: testsuite, backend: cpu, suite: cpu, est_time: 1}", "testsuite",
     "discovery.implicit[0].root: 'testsuite' is not inside any discovery root",
     "list it (or a parent) under discovery.roots"),
    ("{root: /tests, backend: cpu, suite: cpu, est_time: 1}", "/tests",
     "discovery.implicit[0].root: '/tests' is absolute; paths are relative to the repository root",
     "drop the leading '/'"),
    ("{root: tests, backend: tpu, suite: cpu, est_time: 1}", "tpu",
     "discovery.implicit[0].backend: expected one of cpu, cuda, rocm, got 'tpu'", None),
    ("{root: tests, backend: cpu, suite: nope, est_time: 1}", "nope",
     "discovery.implicit[0].suite: 'nope' is not a configured cpu stage (configured cpu stages: cpu)", None),
    ("{root: tests, backend: cpu, suite: 7, est_time: 1}", "7",
     "discovery.implicit[0].suite: expected a string, got an integer ('7')", None),
    ("{root: tests, backend: cpu, suite: cpu, est_time: -1}", "-1",
     "discovery.implicit[0].est_time: must be at least 0, got -1", None),
    ("{root: tests, backend: cpu, suite: cpu, est_time: true}", "true",
     "discovery.implicit[0].est_time: expected a number, got a boolean ('true')", None),
    ("{root: tests, backend: cpu, suite: cpu, est_time: 1, cpu_only: 1}", "1}",
     "discovery.implicit[0].cpu_only: expected a boolean, got an integer ('1')", None),
])
def test_invalid_implicit_entry(item, needle, message, hint):
    text = implicit(item)
    assert errors(text) == [err(text, needle, message, hint)]


def test_implicit_suite_must_be_a_stage_of_its_backend():
    two = "stages:\n  - {name: cpu, backend: cpu}\n  - {name: g, backend: cuda, runs_on: [x]}\n"
    text = implicit("{root: tests, backend: cuda, suite: cpu, est_time: 1}", stage_list=two)
    assert errors(text) == [err(text, "cpu,", "discovery.implicit[0].suite: 'cpu' is not a configured cuda "
                                "stage (configured cuda stages: g)")]
    text = implicit("{root: tests, backend: rocm, suite: g, est_time: 1}", stage_list=two)
    assert errors(text) == [err(text, "g,", "discovery.implicit[0].suite: 'g' is not a configured rocm "
                                "stage (configured rocm stages: none)")]


def test_cpu_only_implicit_root_must_be_cpu():
    two = "stages:\n  - {name: cpu, backend: cpu}\n  - {name: g, backend: cuda, runs_on: [x]}\n"
    text = implicit("{root: tests, backend: cuda, suite: g, est_time: 1, cpu_only: true}", stage_list=two)
    assert errors(text) == [err(text, "cuda", "discovery.implicit[0].backend: a cpu_only root must have "
                                "backend cpu")]


def test_an_invalid_root_causes_no_error_about_implicit_roots():
    text = implicit("{root: tests, backend: cpu, suite: cpu, est_time: 1}", roots="[/tests]")
    assert errors(text) == [err(text, "/tests", "discovery.roots[0]: '/tests' is absolute; paths are relative "
                                "to the repository root", "drop the leading '/'")]


def test_duplicate_implicit_root():
    text = implicit("{root: tests, backend: cpu, suite: cpu, est_time: 1}",
                    "{root: tests/, backend: cpu, suite: cpu, est_time: 2}")
    assert errors(text) == [(P, 6, 7, "discovery.implicit[1].root: duplicate implicit root 'tests'", None)]


# -- every error at once --------------------------------------------------------------------


def test_all_errors_of_a_file_are_reported_together_in_file_order():
    text = textwrap.dedent("""\
        version: 2
        requires: "banana"
        labels_file: /abs/labels.py
        gpu_requires_labels: yes please
        discovery:
          roots: [../up]
          pattern: "x/*.py"
          implicit:
            - {root: tests, backend: tpu, suite: cpu, est_time: -1}
        stages:
          - {name: cpu, backend: cpu, partitions: 0}
          - {name: cpu, backend: cuda}
          - {name: ok, backend: rocm, runs_on: [mi300], runner: shell, colour: red}
        extra: 1
        """)
    got = errors(text)
    assert len(got) == 14  # no consequential error: implicit[0].root is not checked against invalid roots
    assert got[:-1] == [
        err(text, "2", "version: unsupported version 2; this ci_policy reads version 1"),
        err(text, '"banana"', "requires: 'banana' is not a valid version specifier",
            "write a PEP 440 specifier such as '>=0.1'"),
        err(text, "/abs", "labels_file: '/abs/labels.py' is absolute; paths are relative to the repository root",
            "drop the leading '/'"),
        err(text, "yes please", "gpu_requires_labels: expected a boolean, got a string ('yes please')"),
        err(text, "../up", "discovery.roots[0]: '../up' leaves the repository ('..' is not allowed)",
            "name a path inside the repository"),
        err(text, '"x/', "discovery.pattern: 'x/*.py' must be a basename glob such as 'test_*.py' (no '/')"),
        err(text, "tpu", "discovery.implicit[0].backend: expected one of cpu, cuda, rocm, got 'tpu'"),
        err(text, "-1", "discovery.implicit[0].est_time: must be at least 0, got -1"),
        err(text, "0}", "stages[0].partitions: must be at least 1, got 0"),
        err(text, "{name: cpu, backend: cuda", "stages[1].runs_on: required for cuda stages that are not external",
            "list the runner labels, e.g. runs_on: [h200, 4gpu]"),
        err(text, "cpu, backend: cuda", "stages[1].name: duplicate stage name 'cpu' (also stages[0])"),
        err(text, "shell", "stages[2].runner: expected one of python, pytest, got 'shell'"),
        err(text, "colour", "stages[2].colour: unknown key", STAGE_KEYS_HINT),
    ]
    assert got[-1][:4] == (P, 14, 1, "extra: unknown key")


# -- load_config ----------------------------------------------------------------------------


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return path


def padded(size: int) -> str:
    """A valid configuration of exactly `size` bytes."""
    text = VALID + "#"
    return text + "x" * (size - len(text) - 1) + "\n"


def test_load_default_config(tmp_path):
    write(tmp_path / P, VALID)
    assert load_config(tmp_path) == parse_config(VALID, P)


def test_load_reports_errors_at_the_config_path(tmp_path):
    write(tmp_path / P, VALID.replace("version: 1", "version: 3"))
    assert caught(load_config, tmp_path) == [
        (P, 1, 10, "version: unsupported version 3; this ci_policy reads version 1", None)]


def test_missing_config(tmp_path):
    assert caught(load_config, tmp_path) == [(P, None, None, f"configuration file {P} does not exist",
                                              "create it or point the configuration at the right "
                                              "configuration file")]


def test_config_at_the_size_cap_is_read_and_one_byte_more_is_refused(tmp_path):
    write(tmp_path / P, padded(MAX_CONFIG_BYTES))
    assert load_config(tmp_path).version == 1
    write(tmp_path / P, padded(MAX_CONFIG_BYTES + 1))
    assert caught(load_config, tmp_path) == [(P, None, None, f"configuration file {P} is larger than "
                                              f"{MAX_CONFIG_BYTES} bytes",
                                              "ci-policy reads checkout files as data and caps their size")]


def test_config_that_is_not_utf8(tmp_path):
    write(tmp_path / P, b"version: 1\n# caf\xc3\xa9 \xff\n")
    assert caught(load_config, tmp_path) == [(P, 2, 8, f"configuration file {P} is not valid UTF-8",
                                              "save the file as UTF-8")]


def test_config_that_is_a_directory(tmp_path):
    (tmp_path / P).mkdir(parents=True)
    assert caught(load_config, tmp_path) == [(P, None, None, f"configuration file {P} is not a regular file",
                                              None)]


SYMLINK_HINT = "replace the symlink with the real file or directory"


def test_config_symlink_to_etc_passwd_is_refused(tmp_path):
    (tmp_path / ".github").mkdir()
    os.symlink("/etc/passwd", tmp_path / P)
    expected = [(P, None, None, f"configuration file {P} is a symlink; ci-policy refuses symlinks in a checkout",
                 SYMLINK_HINT)]
    assert caught(load_config, tmp_path) == expected
    # Naming the same file explicitly does not bypass the check, however it is spelled.
    assert caught(load_config, tmp_path, tmp_path / P) == expected
    assert caught(load_config, tmp_path, str(tmp_path / ".github" / ".." / P)) == expected


def test_config_symlink_named_relative_to_the_current_directory(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / ".github").mkdir(parents=True)
    os.symlink("/etc/passwd", repo / P)
    monkeypatch.chdir(tmp_path)
    assert caught(load_config, Path("repo"), f"repo/{P}") == [
        (P, None, None, f"configuration file {P} is a symlink; ci-policy refuses symlinks in a checkout",
         SYMLINK_HINT)]


def test_config_through_a_symlinked_directory_is_refused(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    write(tmp_path / "elsewhere" / "ci-policy.yml", VALID)
    os.symlink(tmp_path / "elsewhere", repo / ".github")
    expected = [(P, None, None, f"configuration file {P}: directory .github is a symlink; ci-policy refuses "
                 "symlinks in a checkout", SYMLINK_HINT)]
    assert caught(load_config, repo) == expected
    assert caught(load_config, repo, repo / P) == expected


def test_config_reached_through_a_symlink_to_the_repo_is_still_checked(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".github").mkdir(parents=True)
    os.symlink("/etc/passwd", repo / P)
    os.symlink(repo, tmp_path / "alias")
    assert caught(load_config, repo, tmp_path / "alias" / P) == [
        (P, None, None, f"configuration file {P} is a symlink; ci-policy refuses symlinks in a checkout",
         SYMLINK_HINT)]


def test_config_below_a_symlink_loop_is_refused(tmp_path):
    os.symlink("loop", tmp_path / "loop")
    assert caught(load_config, tmp_path, tmp_path / "loop" / "x.yml") == [
        ("loop/x.yml", None, None, "configuration file loop/x.yml: directory loop is a symlink; ci-policy "
         "refuses symlinks in a checkout", SYMLINK_HINT)]


def test_explicit_config_inside_the_repo_is_shown_repo_relative(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    write(repo / "ci" / "policy.yml", VALID.replace("version: 1", "version: 5"))
    message = "version: unsupported version 5; this ci_policy reads version 1"
    assert caught(load_config, repo, repo / "ci" / "policy.yml") == [("ci/policy.yml", 1, 10, message, None)]
    monkeypatch.chdir(repo)
    assert caught(load_config, repo, "ci/policy.yml") == [("ci/policy.yml", 1, 10, message, None)]
    assert caught(load_config, Path("."), "ci/../ci/policy.yml") == [("ci/policy.yml", 1, 10, message, None)]


def test_explicit_config_inside_the_repo_obeys_the_size_cap(tmp_path):
    write(tmp_path / "policy.yml", padded(MAX_CONFIG_BYTES + 1))
    assert caught(load_config, tmp_path, tmp_path / "policy.yml") == [
        ("policy.yml", None, None, f"configuration file policy.yml is larger than {MAX_CONFIG_BYTES} bytes",
         "ci-policy reads checkout files as data and caps their size")]


def test_config_outside_the_repo_is_read_and_shown_as_given(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    outside = write(tmp_path / "maintainer" / "policy.yml", VALID)
    config = load_config(repo, outside)
    assert config == parse_config(VALID, str(outside))
    assert config.path == str(outside)
    write(outside, VALID + "extra: 1\n")
    monkeypatch.chdir(tmp_path)
    (error,) = caught(load_config, repo, "maintainer/policy.yml")
    assert error[:4] == ("maintainer/policy.yml", 6, 1, "extra: unknown key")


def test_config_outside_the_repo_via_dotdot(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    write(tmp_path / "policy.yml", VALID)
    given_path = str(repo / ".." / "policy.yml")
    assert load_config(repo, given_path).path == given_path


def test_missing_config_outside_the_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    missing = str(tmp_path / "nowhere.yml")
    assert caught(load_config, repo, missing) == [
        (missing, None, None, f"configuration file {missing} cannot be read: No such file or directory", None)]


def test_oversized_config_outside_the_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    big = str(write(tmp_path / "big.yml", padded(MAX_CONFIG_BYTES + 1)))
    assert caught(load_config, repo, big) == [
        (big, None, None, f"configuration file {big} is larger than {MAX_CONFIG_BYTES} bytes", None)]
    write(tmp_path / "big.yml", padded(MAX_CONFIG_BYTES))
    assert load_config(repo, big).version == 1


def test_non_utf8_config_outside_the_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    bad = str(write(tmp_path / "bad.yml", b"version: \xff\n"))
    assert caught(load_config, repo, bad) == [(bad, None, None, f"configuration file {bad} is not valid UTF-8",
                                               None)]


# -- properties -----------------------------------------------------------------------------

YAMLISH = st.lists(
    st.sampled_from(["version", "discovery", "stages", "roots", "name", "backend", "cuda", "runs_on",
                     "partitions", ":", " ", "\n", "  ", "- ", "[", "]", "{", "}", ",", "&a", "*a", "!!",
                     "!!python/name:os.system", "'", '"', "#", "|", ">", "?", "~", "1", "-1", "1.5", ".inf",
                     "true", "x", "é", "\t", "\0", "\x85", "\ufeff", "---", "...", "%YAML 1.1"]),
    max_size=40,
).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=200), YAMLISH))
def test_parse_config_raises_only_policy_errors(text):
    try:
        config = parse_config(text)
    except (InputError, InputErrors) as exc:
        located = exc.errors if isinstance(exc, InputErrors) else (exc,)
        assert located and all(e.path == P for e in located)
        assert all(e.code in CONFIG_CODES for e in located)
    else:
        assert isinstance(config, Config)
