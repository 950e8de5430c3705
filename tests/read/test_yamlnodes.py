"""ci_policy.read.yamlnodes: strict YAML composition and the located-error `Schema` helper."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_policy.errors import InputError
from ci_policy.read import yamlnodes
from ci_policy.read.yamlnodes import INVALID, MAX_DEPTH, Schema, compose

F = "conf.yml"


def shape(node: yaml.Node | None, *, plain_style: bool = False) -> object:
    """Everything of a node tree ci-policy reads: kinds, tags, values, styles and start marks (no
    end mark is read: libyaml ends a block collection where its next token starts; nor whether a
    block sequence is indented: libyaml's flow_style is False where the pure-Python one is None)."""
    if node is None:
        return None
    marks = (node.start_mark.line, node.start_mark.column)
    if isinstance(node, yaml.ScalarNode):
        # libyaml's own composer (workflows) writes a plain scalar's style as "", Python's as None.
        return ("scalar", node.tag, node.value, (node.style or None) if plain_style else node.style, marks)
    if isinstance(node, yaml.SequenceNode):
        return ("seq", node.tag, bool(node.flow_style), marks, [shape(n, plain_style=plain_style) for n in node.value])
    return ("map", node.tag, bool(node.flow_style), marks,
            [(shape(k, plain_style=plain_style), shape(v, plain_style=plain_style)) for k, v in node.value])


def node(text: str) -> yaml.Node:
    result = compose(text, F)
    assert result is not None
    assert shape(result) == shape(compose(text, F, fast=False))  # libyaml and pure Python agree
    return result


def value_node(text: str) -> yaml.Node:
    """The value of the single key of a one-entry mapping."""
    ((_key, value),) = node(text).value
    return value


def located(errors: list[InputError]) -> list[tuple]:
    return [(e.path, e.line, e.col, e.message, e.hint) for e in errors]


def compose_error(text: str) -> tuple:
    found = []
    for fast in (True, False):  # libyaml and pure Python give the same error
        with pytest.raises(InputError) as info:
            compose(text, F, fast=fast)
        e = info.value
        found.append((e.path, e.line, e.col, e.message, e.hint))
    assert found[0] == found[1]
    return found[0]


# -- compose --------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n", "# comment\n", "  \n  # indented comment\n"])
def test_empty_documents_compose_to_none(text):
    assert compose(text, F) is None


def test_nodes_keep_their_location():
    root = node("a: 1\nb:\n  - x\n  - {c: d}\n")
    assert isinstance(root, yaml.MappingNode)
    (ka, va), (kb, vb) = root.value
    assert (ka.value, ka.start_mark.line, ka.start_mark.column) == ("a", 0, 0)
    assert (va.value, va.start_mark.line, va.start_mark.column) == ("1", 0, 3)
    assert isinstance(vb, yaml.SequenceNode)
    assert [(n.start_mark.line, n.start_mark.column) for n in vb.value] == [(2, 4), (3, 4)]


@pytest.mark.parametrize("text, line, col, problem", [
    ("a: [1\n", 2, 1, "expected ',' or ']', but got '<stream end>'"),
    ("a: {b: 1\n", 2, 1, "expected ',' or '}', but got '<stream end>'"),
    ("a: 1\n b: 2\n", 2, 3, "mapping values are not allowed here"),
    ("a: 1\n- b\n", 2, 1, "expected <block end>, but found '-'"),
    ("\tversion: 1\n", 1, 1, "found character '\\t' that cannot start any token"),
    ("a: 'x\n", 2, 1, "found unexpected end of stream"),
    ("a: @x\n", 1, 4, "found character '@' that cannot start any token"),
    ("a: 1\n---\nb: 2\n", 2, 1, "but found another document"),
    ("%TAG ! tag:x,2000:\n%TAG ! tag:y,2000:\n--- a\n", 2, 1, "duplicate tag handle '!'"),
])
def test_syntax_errors_are_located(text, line, col, problem):
    assert compose_error(text) == (F, line, col, f"invalid YAML: {problem}", "fix the YAML syntax")


@pytest.mark.parametrize("text, line, col, what", [
    ("a: &x 1\n", 1, 4, "anchors"),
    ("- 1\n- &x [2]\n", 2, 3, "anchors"),
    ("a:\n  b: &x {c: 1}\n", 2, 6, "anchors"),
    ("a: *x\n", 1, 4, "aliases"),
    ("- 1\n- *undefined\n", 2, 3, "aliases"),
    ("&x a: 1\n", 1, 1, "anchors"),
])
def test_anchors_and_aliases_are_refused(text, line, col, what):
    assert compose_error(text) == (F, line, col, f"invalid YAML: {what} are not allowed in ci-policy "
                                   "configuration", "write each value out in full")


def test_nesting_limit():
    # The outermost node is level 1.
    deepest = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert isinstance(compose(deepest, F), yaml.SequenceNode)
    too_deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert compose_error(too_deep) == (F, 1, MAX_DEPTH + 1, f"invalid YAML: nesting deeper than {MAX_DEPTH} "
                                       "levels is not allowed", "flatten the structure")
    block = "".join("  " * i + "- \n" for i in range(200))
    assert compose_error(block)[:2] == (F, MAX_DEPTH + 1)


@pytest.mark.parametrize("text, tag", [
    ("a: !!python/object:os.system {x: 1}\n", "tag:yaml.org,2002:python/object:os.system"),
    ("a: !!python/object/apply:os.system [ls]\n", "tag:yaml.org,2002:python/object/apply:os.system"),
    ("a: !custom [1]\n", "!custom"),
])
def test_collections_with_unknown_tags_are_refused(text, tag):
    assert compose_error(text) == (F, 1, 4, f"invalid YAML: tag {tag} is not allowed in ci-policy configuration",
                                   "remove the tag")


@pytest.mark.parametrize("text", ["a: !!map {x: 1}\n", "a: !!seq [1]\n", "a: ! {x: 1}\n", "a: !!set {x}\n",
                                  "a: !!omap [x: 1]\n"])
def test_collections_with_core_schema_tags_compose(text):
    assert isinstance(value_node(text), (yaml.MappingNode, yaml.SequenceNode))


# -- Schema.mapping -------------------------------------------------------------------------


def test_mapping_returns_key_and_value_nodes():
    s = Schema(F)
    fields = s.mapping(node("a: 1\nb: x\n"), "top", required=("a",), optional=("b", "c"))
    assert {k: (kn.value, vn.value) for k, (kn, vn) in fields.items()} == {"a": ("a", "1"), "b": ("b", "x")}
    assert s.errors == []


def test_mapping_reports_unknown_missing_and_duplicate_keys_together():
    s = Schema(F)
    text = "nmae: 1\nb: 2\nb: 3\n"
    fields = s.mapping(node(text), "stage", required=("name",), optional=("b",))
    assert set(fields) == {"b"}
    assert located(s.errors) == [
        (F, 1, 1, "stage.nmae: unknown key; did you mean 'name'?", "allowed keys here: b, name"),
        (F, 3, 1, "stage.b: duplicate key (first defined on line 2)", "keep one definition"),
        (F, 1, 1, "stage.name: required key is missing", None),
    ]


def test_mapping_at_the_top_level_has_no_prefix():
    s = Schema(F)
    s.mapping(node("zzz: 1\n1: 2\n"), "", optional=("a",))
    assert located(s.errors) == [
        (F, 1, 1, "zzz: unknown key", "allowed keys here: a"),
        (F, 2, 1, "(top level): keys must be strings, got an integer ('1')", None),
    ]


def test_open_mapping_accepts_any_string_key():
    s = Schema(F)
    fields = s.mapping(node("anything: 1\nelse: 2\n"), "table", open_keys=True)
    assert set(fields) == {"anything", "else"}
    assert s.errors == []


@pytest.mark.parametrize("text, described", [("[1]", "a list"), ("x", "a string ('x')"), ("~", "null")])
def test_mapping_of_a_non_mapping(text, described):
    s = Schema(F)
    assert s.mapping(node(text), "discovery") is None
    assert located(s.errors) == [(F, 1, 1, f"discovery: expected a mapping, got {described}", None)]


# -- Schema.sequence / string_list ----------------------------------------------------------


def test_sequence():
    s = Schema(F)
    assert [n.value for n in s.sequence(node("[a, b]"), "xs")] == ["a", "b"]
    assert s.sequence(node("[]"), "xs") == []
    assert s.sequence(node("[]"), "ys", non_empty=True) is None
    assert s.sequence(node("{a: 1}"), "zs") is None
    assert located(s.errors) == [(F, 1, 1, "ys: must not be empty", None),
                                 (F, 1, 1, "zs: expected a list, got a mapping", None)]


def test_string_list():
    s = Schema(F)
    assert s.string_list(node("[a, b]"), "xs") == ("a", "b")
    assert s.errors == []
    assert s.string_list(node("[a, 1, a, -b]"), "xs",
                         check=lambda v: "must not start with '-'" if v.startswith("-") else None) is INVALID
    assert located(s.errors) == [
        (F, 1, 5, "xs[1]: expected a string, got an integer ('1')", None),
        (F, 1, 8, "xs[2]: duplicate entry 'a'", None),
        (F, 1, 11, "xs[3]: must not start with '-'", None),
    ]


# -- scalars --------------------------------------------------------------------------------


@pytest.mark.parametrize("text, types, expected", [
    ("a: 3", (int,), 3),
    ("a: -3", (int,), -3),
    ("a: 0x10", (int,), 16),
    ("a: 2.5", (float,), 2.5),
    ("a: 3", (float,), 3),
    ("a: true", (bool,), True),
    ("a: 'x'", (str,), "x"),
    ("a: 3", (str, int), 3),
])
def test_scalar_accepts(text, types, expected):
    s = Schema(F)
    got = s.scalar(value_node(text), "a", *types)
    assert got == expected and type(got) is type(expected)
    assert s.errors == []


@pytest.mark.parametrize("text, types, message", [
    ("a: true", (int,), "a: expected an integer, got a boolean ('true')"),
    ("a: false", (int, float), "a: expected a number, got a boolean ('false')"),
    ("a: 1.5", (int,), "a: expected an integer, got a number ('1.5')"),
    ("a: '3'", (int,), "a: expected an integer, got a string ('3')"),
    ("a: 3", (bool,), "a: expected a boolean, got an integer ('3')"),
    ("a: 3", (str,), "a: expected a string, got an integer ('3')"),
    ("a: ~", (str,), "a: expected a string, got null"),
    ("a: [3]", (int,), "a: expected an integer, got a list"),
    ("a: {b: 3}", (str, int), "a: expected a string or an integer, got a mapping"),
    ("a: 2001-02-03", (str,), "a: expected a string, got a date ('2001-02-03')"),
    ("a: 2001-02-03 04:05:06", (str,), "a: expected a string, got a timestamp ('2001-02-03 04:05:06')"),
    ("a: !!binary aGk=", (str,), "a: expected a string, got binary data ('aGk=')"),
    ("a: !!python/name:os.system x", (str,),
     "a: unsupported YAML value: could not determine a constructor for the tag "
     "'tag:yaml.org,2002:python/name:os.system'"),
    # SafeConstructor raises ValueError, KeyError, AttributeError, IndexError for these.
    ("a: !!int x", (int,), "a: unsupported YAML value: 'x' is not a valid int"),
    ("a: !!int ''", (int,), "a: unsupported YAML value: '' is not a valid int"),
    ("a: !!float x", (float,), "a: unsupported YAML value: 'x' is not a valid float"),
    ("a: !!bool x", (bool,), "a: unsupported YAML value: 'x' is not a valid bool"),
    ("a: !!timestamp x", (str,), "a: unsupported YAML value: 'x' is not a valid timestamp"),
    ("a: 2020-13-45", (int,), "a: unsupported YAML value: '2020-13-45' is not a valid timestamp"),
])
def test_scalar_rejects(text, types, message):
    s = Schema(F)
    assert s.scalar(value_node(text), "a", *types) is INVALID
    assert located(s.errors) == [(F, 1, 4, message, None)]


@pytest.mark.parametrize("kwargs, text, expected", [
    ({}, "0", 0),
    ({}, "0.5", 0.5),
    ({"minimum": 1, "integer": True}, "1", 1),
    ({"minimum": 0, "strict": True}, "0.001", 0.001),
])
def test_number_accepts(kwargs, text, expected):
    s = Schema(F)
    assert s.number(value_node(f"n: {text}"), "n", **kwargs) == expected
    assert s.errors == []


@pytest.mark.parametrize("kwargs, text, message", [
    ({}, "-0.5", "n: must be at least 0, got -0.5"),
    ({"minimum": 1, "integer": True}, "0", "n: must be at least 1, got 0"),
    ({"minimum": 0, "strict": True}, "0", "n: must be greater than 0, got 0"),
    ({"minimum": 2.5, "strict": True}, "2.5", "n: must be greater than 2.5, got 2.5"),
    ({"integer": True}, "1.0", "n: expected an integer, got a number ('1.0')"),
    ({}, ".inf", "n: expected a finite number, got '.inf'"),
    ({}, "-.inf", "n: expected a finite number, got '-.inf'"),
    ({}, ".NaN", "n: expected a finite number, got '.NaN'"),
    ({}, "yes", "n: expected a number, got a boolean ('yes')"),
])
def test_number_rejects(kwargs, text, message):
    s = Schema(F)
    assert s.number(value_node(f"n: {text}"), "n", **kwargs) is INVALID
    assert located(s.errors) == [(F, 1, 4, message, None)]


def test_choice():
    s = Schema(F)
    assert s.choice(value_node("b: cuda"), "b", ["cpu", "cuda"]) == "cuda"
    assert s.errors == []


@pytest.mark.parametrize("text, shown", [
    ("CUDA", "'CUDA'"),
    ("'cpu '", "'cpu '"),
    ("1", "an integer ('1')"),
    ("yes", "a boolean ('yes')"),
    ("~", "null"),
    ("[cpu]", "a list"),
    ("2020-13-45", "an invalid timestamp ('2020-13-45')"),
    ("!!python/name:os.system x", "a value tagged tag:yaml.org,2002:python/name:os.system ('x')"),
])
def test_choice_rejects(text, shown):
    s = Schema(F)
    assert s.choice(value_node(f"b: {text}"), "b", ["cpu", "cuda"]) is INVALID
    assert located(s.errors) == [(F, 1, 4, f"b: expected one of cpu, cuda, got {shown}", None)]


def test_string_with_check():
    s = Schema(F)
    check = lambda v: None if v.isupper() else f"{v!r} is not upper case"  # noqa: E731
    assert s.string(value_node("k: ABC"), "k", check=check) == "ABC"
    assert s.string(value_node("k: abc"), "k", check=check) is INVALID
    assert s.string(value_node("k: 5"), "k", check=check) is INVALID
    assert located(s.errors) == [(F, 1, 4, "k: 'abc' is not upper case", None),
                                 (F, 1, 4, "k: expected a string, got an integer ('5')", None)]


def test_error_without_a_node_or_a_field():
    s = Schema(F)
    s.error(None, "", "whole file", hint="h")
    s.error(None, "x", "problem")
    assert located(s.errors) == [(F, None, None, "whole file", "h"), (F, None, None, "x: problem", None)]


def test_invalid_is_falsy_and_named():
    assert not INVALID
    assert repr(INVALID) == "INVALID"


# -- diagnostic codes -----------------------------------------------------------------------

KIND_CODES = {"wrong-type": "X-TYPE", "unknown-key": "X-UNKNOWN", "missing-key": "X-MISSING",
              "duplicate": "X-DUP", "invalid-value": "X-VALUE"}


def test_compose_errors_carry_the_given_code():
    with pytest.raises(InputError) as info:
        compose("a: [1\n", F, code="X-YAML")
    assert info.value.code == "X-YAML"
    with pytest.raises(InputError) as info:
        compose("a: &x 1\n", F)
    assert info.value.code is None


def test_schema_errors_carry_the_code_of_their_kind():
    s = Schema(F, codes=KIND_CODES)
    fields = s.mapping(node("a: 1\na: 2\nb: [x, x]\nc: yes\nzz: 1\nn: 0\n"), "", required=("a", "m"),
                       optional=("b", "c", "n"))
    assert fields is not None
    s.string_list(fields["b"][1], "b")
    s.string(fields["c"][1], "c")
    s.number(fields["n"][1], "n", minimum=1)
    s.scalar(value_node("d: !!int x\n"), "d", int)
    s.mapping(value_node("e: [1]\n"), "e")
    s.sequence(value_node("f: {}\n"), "f")
    s.sequence(value_node("g: []\n"), "g", non_empty=True)
    s.choice(value_node("h: x\n"), "h", ("y",))
    s.mapping(node("1: x\n"), "")
    assert [(e.message, e.code) for e in s.errors] == [
        ("a: duplicate key (first defined on line 1)", "X-DUP"),
        ("zz: unknown key", "X-UNKNOWN"),
        ("m: required key is missing", "X-MISSING"),
        ("b[1]: duplicate entry 'x'", "X-DUP"),
        ("c: expected a string, got a boolean ('yes')", "X-TYPE"),
        ("n: must be at least 1, got 0", "X-VALUE"),
        ("d: unsupported YAML value: 'x' is not a valid int", "X-TYPE"),
        ("e: expected a mapping, got a list", "X-TYPE"),
        ("f: expected a list, got a mapping", "X-TYPE"),
        ("g: must not be empty", "X-VALUE"),
        ("h: expected one of y, got 'x'", "X-VALUE"),
        ("(top level): keys must be strings, got an integer ('1')", "X-TYPE"),
    ]


def test_an_explicit_code_wins_and_no_codes_means_none():
    s = Schema(F, codes=KIND_CODES)
    s.error(None, "a", "clash", kind="duplicate", code="X-OWN")
    s.error(None, "b", "bad")
    plain = Schema(F)
    plain.mapping(node("a: 1\n"), "")
    assert [(e.message, e.code) for e in s.errors + plain.errors] == [
        ("a: clash", "X-OWN"), ("b: bad", "X-VALUE"), ("a: unknown key", None)]


# -- libyaml and pure Python: the same nodes and the same errors (issue 33, item 4) ---------------

YAML_PIECES = ["a", "b", ":", ": ", "- ", "-", "\n", "  ", "\t", "#", "'", '"', "[", "]", "{", "}", ",", "&x ",
               "*x", "!!str ", "!!map ", "!t ", "|", ">", "|-", "---", "...", "? ", "%YAML 1.1\n", "1", "0x1f",
               "1e3", "~", "null", "true", "é", "\u2028", "\x85", "\\", "\\n", "\x00", "\x07", "\ufeff", "%"]


def outcome(text: str, *, strict: bool, fast: bool) -> object:
    try:
        return shape(yamlnodes.compose_any(text, strict=strict, fast=fast), plain_style=not strict)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return ("error", type(exc).__name__, str(exc), mark and (mark.line, mark.column))


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(YAML_PIECES), max_size=30).map("".join))
def test_libyaml_and_pure_python_give_the_same_nodes_and_errors(text):
    for strict in (True, False):
        assert outcome(text, strict=strict, fast=True) == outcome(text, strict=strict, fast=False)


REPO_ROOT = Path(__file__).resolve().parents[2]
YAML_FILES = sorted(p for pattern in ("*.yml", "*.yaml") for p in REPO_ROOT.rglob(pattern)
                    if not {"node_modules", ".venv", ".git"} & set(p.parts))


def test_every_yaml_file_of_the_project_reads_the_same_both_ways():
    assert len(YAML_FILES) >= 15  # the workflows, the example's and the fixtures' configurations
    for path in YAML_FILES:
        text = path.read_text(encoding="utf-8")
        for strict in (True, False):
            assert outcome(text, strict=strict, fast=True) == outcome(text, strict=strict, fast=False), path


def test_libyaml_is_what_reads_when_pyyaml_has_it(monkeypatch):
    # Not vacuous: the fast path is taken for accepted text, the pure-Python loader for refused text.
    assert yaml.__with_libyaml__  # the test environment's PyYAML is built with libyaml
    used = []
    real = yamlnodes._single_node
    monkeypatch.setattr(yamlnodes, "_single_node", lambda cls, text: used.append(cls.__name__) or real(cls, text))
    compose("a: 1\n", F)
    yamlnodes.compose_any("on: push\n", strict=False)
    assert used == ["_CStrictLoader", "_CComposer"]
    used.clear()
    with pytest.raises(InputError):
        compose("a: [1, 2\n", F)
    assert used == ["_CStrictLoader", "_StrictLoader"]
    used.clear()
    with pytest.raises(InputError):
        compose("a: \x07\n", F)  # a character the pure-Python reader refuses is never given to libyaml
    assert used == ["_StrictLoader"]


def test_text_nested_past_the_parser_is_refused_as_too_deep_both_ways():
    # Found by atheris in a workflow: 900 unclosed flow mappings made PyYAML's parser recurse past
    # Python's limit (libyaml refuses the text; the pure-Python loader then reads it again). The
    # configuration's own depth limit stops it first; a workflow (not strict) is refused too.
    for fast in (True, False):
        assert compose_error("{" * 900) == (F, 1, 65, "invalid YAML: nesting deeper than 64 levels is not allowed",
                                            "flatten the structure")
        with pytest.raises(yaml.MarkedYAMLError) as info:
            yamlnodes.compose_any("{" * 900, strict=False, fast=fast)
        assert (info.value.problem, info.value.problem_mark) == ("nesting deeper than the YAML parser can follow",
                                                                 None)
