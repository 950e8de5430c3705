"""The top level of `.github/ci-policy.yml` (`ci_policy.config.top`): parse_config over whole files,
the top-level keys, and every error of a file reported at once.
"""

from __future__ import annotations

import dataclasses
import textwrap

import pytest
from config_cases import CPU_STAGE, STAGE_KEYS_HINT, VALID, P, coded, coded_err, err, errors, stages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_policy import __version__
from ci_policy.config.codes import CONFIG_CODES
from ci_policy.config.discovery import Discovery, ImplicitRoot
from ci_policy.config.stages import Stage
from ci_policy.config.top import Config, parse_config
from ci_policy.errors import InputError, InputErrors

OWN_TOP_LEVEL_KEYS = ["discovery", "gpu_requires_labels", "labels_file", "requires", "stages", "version"]


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


def test_gpu_requires_labels_accepts_booleans():
    assert parse_config("gpu_requires_labels: false\n" + VALID).gpu_requires_labels is False
    assert parse_config("gpu_requires_labels: true\n" + VALID).gpu_requires_labels is True


def test_config_objects_are_frozen():
    config = parse_config(VALID)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.version = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.stages[0].backend = "cuda"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.discovery.roots = ()  # type: ignore[misc]


def test_config_finds_a_stage_by_name_and_the_stages_of_a_backend():
    config = parse_config(stages("{name: cpu, backend: cpu}", "{name: g1, backend: cuda, runs_on: [a]}",
                                 "{name: g2, backend: cuda, external: true}"))
    g1, g2 = config.stages[1], config.stages[2]
    assert config.stage("g1") == g1
    assert config.stage("G1") is None
    assert config.stages_of("cuda") == (g1, g2)
    assert config.stages_of("rocm") == ()


def test_label_references_name_every_label_with_its_field_and_line():
    text = VALID + textwrap.dedent("""\
        cadences:
          nightly_exclude: [slow]
        scopes:
          run-ci-all: {exclude: [big, slow]}
        selection:
          rules:
            - {paths: [docs/**], labels: [docs]}
        """)
    assert parse_config(text).label_references() == (
        ("slow", "cadences.nightly_exclude", 7),
        ("big", "scopes.run-ci-all.exclude", 9),
        ("slow", "scopes.run-ci-all.exclude", 9),
        ("docs", "selection.rules[0].labels", 12),
    )
    assert parse_config(VALID).label_references() == ()


def test_estimates_file_is_a_normalised_repo_relative_path():
    assert parse_config(VALID).estimates_file is None
    assert parse_config(VALID + "estimates_file: ./.github//ci-estimates.json\n").estimates_file == (
        ".github/ci-estimates.json")
    text = VALID + "estimates_file: /tmp/estimates.json\n"
    assert coded(text) == [coded_err(text, "/tmp", "estimates_file: '/tmp/estimates.json' is absolute; paths "
                                     "are relative to the repository root", "CP105", "drop the leading '/'")]


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
    assert len(got) == 13  # no consequential error: implicit[0].root is not checked against invalid roots
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
        err(text, "tpu", "discovery.implicit[0].backend: expected one of cpu, cuda, rocm, got 'tpu'",
            "did you mean 'cpu'? Otherwise, declare it in the configuration: backends: {tpu: {accelerator: true}}"),
        err(text, "-1", "discovery.implicit[0].est_time: must be at least 0, got -1"),
        err(text, "0}", "stages[0].partitions: must be at least 1, got 0"),
        err(text, "{name: cpu, backend: cuda", "stages[1].runs_on: required for cuda stages that are not external",
            "list the runner labels, e.g. runs_on: [h200, 4gpu]"),
        # A name of another backend is a stage of its own (cpu@cpu, cpu@cuda), not a duplicate.
        err(text, "shell", "stages[2].runner: expected one of python, pytest, got 'shell'"),
        err(text, "colour", "stages[2].colour: unknown key", STAGE_KEYS_HINT),
    ]
    assert got[-1][:4] == (P, 14, 1, "extra: unknown key")


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
