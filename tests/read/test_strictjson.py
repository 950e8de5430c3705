"""read.strictjson: a key twice in one object and the NaN/Infinity constants are refused."""

from __future__ import annotations

import json

import pytest

from ci_policy.errors import CiPolicyError
from ci_policy.read.strictjson import DuplicateKey, loads, lone_surrogate, no_duplicates


def test_standard_json_loads_as_usual():
    text = '{"a": [1, 2.5, -3e2, "x", true, null], "b": {"a": 1}, "c": 1e400}'
    assert loads(text) == json.loads(text)
    assert loads('"a"') == "a"


@pytest.mark.parametrize("text, key", [
    ('{"a": 1, "a": 2}', "a"),
    ('{"a": 1, "a": 1}', "a"),  # the same value twice is still a duplicate
    ('[{"x": {"b": 1, "c": 2, "b": 3}}]', "b"),
    ('{"": 1, "": 2}', ""),
])
def test_a_duplicate_key_is_refused_naming_the_key(text, key):
    with pytest.raises(DuplicateKey) as err:
        loads(text)
    assert err.value.key == key
    assert str(err.value) == f"duplicate key {key!r}"
    assert isinstance(err.value, CiPolicyError) and isinstance(err.value, ValueError)


def test_the_same_key_in_two_objects_is_not_a_duplicate():
    assert loads('[{"a": 1}, {"a": 2}, {"b": {"a": 3}, "a": 4}]') == [{"a": 1}, {"a": 2}, {"b": {"a": 3}, "a": 4}]


@pytest.mark.parametrize("text, name", [
    ("NaN", "NaN"),
    ('{"v": Infinity}', "Infinity"),
    ("[1, -Infinity]", "-Infinity"),
])
def test_the_non_standard_constants_are_refused(text, name):
    with pytest.raises(ValueError) as err:
        loads(text)
    assert type(err.value) is ValueError
    assert str(err.value) == f"{name} is not allowed"


def test_no_duplicates_alone_accepts_the_constants():
    """For readers that report a non-finite number themselves, with its place."""
    value = json.loads('{"v": NaN}', object_pairs_hook=no_duplicates)
    assert list(value) == ["v"] and value["v"] != value["v"]
    with pytest.raises(DuplicateKey, match=r"^duplicate key 'v'$"):
        json.loads('{"v": NaN, "v": 1}', object_pairs_hook=no_duplicates)
    assert no_duplicates([("a", 1), ("b", 2)]) == {"a": 1, "b": 2}


@pytest.mark.parametrize("text, lone", [
    ('"\\ud800"', True),
    ('{"k": ["a", "\\udfff x"]}', True),
    ('{"\\udc00": 1}', True),
    ('"\\ud83d\\ude00"', False),            # a pair: one character outside the BMP
    ('"\\u00e9 \\u2215"', False),
    ('"plain"', False),
    ('["\\\\ud800"]', False),              # an escaped backslash, then the letters
])
def test_lone_surrogate(text, lone):
    assert lone_surrogate(text, json.loads(text)) is lone
