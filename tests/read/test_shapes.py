"""The shapes of JSON values: type names for messages, field sets, value predicates
(ci_policy/read/shapes.py)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ci_policy.read import shapes

# -- json_type / a_json_type ----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "name", "with_article"), [
    ("{}", "object", "an object"),
    ('{"a": 1}', "object", "an object"),
    ("[]", "array", "an array"),
    ('""', "string", "a string"),
    ("0", "number", "a number"),
    ("-1.5", "number", "a number"),
    ("1e400", "number", "a number"),
    ("NaN", "number", "a number"),
    ("true", "boolean", "a boolean"),
    ("false", "boolean", "a boolean"),
    ("null", "null", "null"),
])
def test_json_type_names_every_kind_of_json_value(text, name, with_article):
    value = json.loads(text)
    assert shapes.json_type(value) == name
    assert shapes.a_json_type(value) == with_article


@pytest.mark.parametrize("value", [(), {1}, b"x", 1j, object()])
def test_json_type_refuses_what_no_json_text_gives(value):
    with pytest.raises(TypeError, match=f"^{type(value).__name__} is not a JSON value$"):
        shapes.json_type(value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@given(json_values)
def test_json_type_is_defined_for_every_value_json_loads_gives(value):
    parsed = json.loads(json.dumps(value))  # what json.loads gives, NaN and Infinity included
    assert shapes.json_type(parsed) in ("object", "array", "string", "number", "boolean", "null")
    assert shapes.a_json_type(parsed).endswith(shapes.json_type(parsed))


# -- fields ---------------------------------------------------------------------------------------

def test_fields_of_an_object_with_exactly_the_required_and_some_optional_fields():
    problems = shapes.fields({"group": "a", "ref": "main"}, required=("group",), optional=("ref", "pins"))
    assert problems == shapes.FieldProblems(unknown=(), missing=())
    assert problems.ok


def test_fields_lists_unknown_fields_in_the_objects_order_and_missing_ones_in_the_required_order():
    problems = shapes.fields({"zeta": 1, "group": "a", "alpha": 2}, required=("workflow", "group", "file"),
                             optional=("ref",))
    assert problems == shapes.FieldProblems(unknown=("zeta", "alpha"), missing=("workflow", "file"))
    assert not problems.ok


def test_fields_of_an_empty_object():
    assert shapes.fields({}, required=("schema",)) == shapes.FieldProblems(unknown=(), missing=("schema",))
    assert shapes.fields({}, required=()).ok


# -- predicates -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "minimum", "expected"), [
    (0, None, True),
    (-3, None, True),
    (10**400, None, True),
    (0, 0, True),
    (-1, 0, False),
    (1, 1, True),
    (0, 1, False),
    (True, None, False),
    (False, 0, False),
    (1.0, None, False),
    ("1", None, False),
    (None, None, False),
])
def test_is_integer(value, minimum, expected):
    assert shapes.is_integer(value, minimum) is expected


@pytest.mark.parametrize(("value", "expected"), [
    ("a", True), (" ", True), ("", False), (None, False), (["a"], False), (1, False),
])
def test_is_non_empty_string(value, expected):
    assert shapes.is_non_empty_string(value) is expected


@pytest.mark.parametrize(("value", "expected"), [
    (0, True), (0.0, True), (2.5, True), (10**300, True),
    (-0.5, False), (-1, False), (math.inf, False), (math.nan, False), (10**400, False),
    (True, False), ("1", False), (None, False),
])
def test_is_non_negative_number(value, expected):
    assert shapes.is_non_negative_number(value) is expected


@pytest.mark.parametrize(("value", "expected"), [
    ([], True), (["a", "a"], True), (["a", ""], True),
    (["a", 1], False), ("ab", False), (("a",), False), ({"a": "b"}, False), (None, False),
])
def test_is_strings(value, expected):
    assert shapes.is_strings(value) is expected


@pytest.mark.parametrize(("items", "expected"), [
    ([], True), (["a", "b"], True), ([1, 2, 3], True), (["a", "b", "a"], False), ([7, 7], False),
])
def test_is_distinct(items, expected):
    assert shapes.is_distinct(items) is expected


def test_or_null_accepts_null_and_what_the_check_accepts():
    check = shapes.or_null(shapes.is_non_empty_string)
    assert [check(v) for v in (None, "a", "", 0)] == [True, True, False, False]
