"""The codec derived from dataclass fields: write, read strictly (errors located), and the schema."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ci_policy.read.codec import decode, decode_each, decode_fields, encode, schema
from ci_policy.read.declare import DecodeError, KeyFault, document, spec


@document
class Leaf:
    path: str = spec(pattern=r"[a-z]+(?:/[a-z]+)*")
    count: int = spec(minimum=1)
    seconds: float = spec(minimum=0, maximum=100)
    flag: bool = spec()
    mode: Literal["run", "skip"] = spec(expected="expected run or skip")
    note: str | None = spec(default=None, omit_none=True)


@document
class Branch:
    name: str
    leaves: tuple[Leaf, ...]
    ids: Mapping[str, str] = spec(pattern="[0-9a-f]{4}", key_check=lambda k: None if "/" not in k
                                  else f"{json.dumps(k)} holds a slash")
    limit: float | None = spec(minimum=0, maximum=10, exclusive_minimum=True)
    tags: tuple[str, ...] = spec(unique=True, min_items=1)
    spare: Leaf | None = None
    steps: Literal["last", "all"] | tuple[int, ...] | None = spec(default=None, minimum=0)
    renamed: int = spec(default=0, key="json-name")


@document
class Tree:
    schema: Literal[1]
    branches: tuple[Branch, ...]


WORD = st.text("abcdefgh", min_size=1, max_size=4)
LEAVES = st.builds(Leaf, path=st.lists(WORD, min_size=1, max_size=3).map("/".join), count=st.integers(1, 10**9),
                   seconds=st.floats(0, 100) | st.integers(0, 100), flag=st.booleans(),
                   mode=st.sampled_from(["run", "skip"]), note=st.none() | st.text(max_size=5))
BRANCHES = st.builds(
    Branch, name=st.text(max_size=5), leaves=st.lists(LEAVES, max_size=3).map(tuple),
    ids=st.dictionaries(WORD, st.text("0123456789abcdef", min_size=4, max_size=4), max_size=3),
    limit=st.none() | st.floats(0, 10, exclude_min=True), tags=st.lists(WORD, min_size=1, max_size=3, unique=True)
    .map(tuple), spare=st.none() | LEAVES,
    steps=st.none() | st.sampled_from(["last", "all"]) | st.lists(st.integers(0, 50), max_size=3).map(tuple),
    renamed=st.integers(0, 5))
TREES = st.builds(Tree, schema=st.just(1), branches=st.lists(BRANCHES, max_size=3).map(tuple))


@given(TREES)
def test_write_read_equal_and_the_schema_accepts_what_is_written(tree):
    data = json.loads(json.dumps(encode(tree)))
    assert decode(Tree, data) == tree
    assert list(Draft202012Validator(schema(Tree)).iter_errors(data)) == []


@given(TREES)
def test_keys_are_written_in_declared_order_and_none_left_out_where_asked(tree):
    data = encode(tree)
    assert list(data) == ["schema", "branches"]
    for branch, written in zip(tree.branches, data["branches"], strict=True):
        assert list(written) == ["name", "leaves", "ids", "limit", "tags", "spare", "steps", "json-name"]
        for leaf, shown in zip(branch.leaves, written["leaves"], strict=True):
            assert list(shown) == ["path", "count", "seconds", "flag", "mode"] + (["note"] if leaf.note is not None
                                                                                   else [])


def _leaves(data: Any, at: str = ""):
    """Every (location, container, key) of a scalar in `data`."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, f"{at}.{key}" if at else key) if isinstance(value, (dict, list)) else [
                (f"{at}.{key}" if at else key, data, key)]
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _leaves(value, f"{at}[{i}]") if isinstance(value, (dict, list)) else [(f"{at}[{i}]", data, i)]


WRONG = [{"a": 1}, [[1]]]


@given(TREES, st.data())
def test_a_value_of_another_kind_is_refused_where_it_is(tree, data):
    written = json.loads(json.dumps(encode(tree)))
    leaves = [leaf for leaf in _leaves(written) if ".ids" not in leaf[0]]
    if not leaves:
        return
    where, container, key = data.draw(st.sampled_from(leaves))
    container[key] = data.draw(st.sampled_from(WRONG))
    with pytest.raises(DecodeError) as refused:
        decode(Tree, written)
    # At the value, or inside it where its field takes an array or an object of another kind.
    assert refused.value.where in (where, f"{where}[0]", f"{where}.a"), refused.value


def test_errors_say_what_is_expected_and_where():
    leaf = {"path": "a/b", "count": 1, "seconds": 5, "flag": True, "mode": "run"}
    branch = {"name": "x", "leaves": [leaf], "ids": {"a": "00ff"}, "limit": None, "tags": ["t"]}

    def refused(**changes: Any) -> str:
        with pytest.raises(DecodeError) as info:
            decode(Tree, {"schema": 1, "branches": [{**branch, **changes}]})
        return str(info.value)

    assert refused(leaves=[{**leaf, "seconds": 101}]) == (
        "branches[0].leaves[0].seconds: expected a number in [0, 100], got 101")
    assert refused(leaves=[{**leaf, "count": True}]) == "branches[0].leaves[0].count: expected a whole number >= 1, " \
                                                        "got true"
    assert refused(leaves=[{**leaf, "mode": "maybe"}]) == (
        'branches[0].leaves[0].mode: expected run or skip, got "maybe"')
    assert refused(leaves=[{**leaf, "flag": "yes"}]) == (
        "branches[0].leaves[0].flag: expected true or false, got a string")
    assert refused(leaves=[{**leaf, "path": "/x"}]) == (
        "branches[0].leaves[0].path: expected a string matching '[a-z]+(?:/[a-z]+)*', got \"/x\"")
    assert refused(leaves=[{**leaf, "extra": 1}]) == 'branches[0].leaves[0]: unknown key "extra"'
    assert refused(leaves=[{k: v for k, v in leaf.items() if k != "flag"}]) == (
        "branches[0].leaves[0]: missing key 'flag'")
    assert refused(ids={"a": "00ff", "b": "xyz"}) == 'branches[0].ids["b"]: expected a string matching ' \
                                                     "'[0-9a-f]{4}', got \"xyz\""
    assert refused(ids={"a/b": "00ff"}) == 'branches[0].ids: "a/b" holds a slash'
    assert refused(limit=0) == "branches[0].limit: expected null or a number in (0, 10], got 0"
    assert refused(tags=[]) == "branches[0].tags: must not be empty"
    assert refused(tags=["a", "b", "a"]) == "branches[0].tags[2]: duplicate entry 'a'"
    assert refused(steps="first") == 'branches[0].steps: expected one of last, all, got "first"'
    assert refused(steps=[1, -1]) == "branches[0].steps[1]: expected a whole number >= 0, got -1"
    assert refused(**{"json-name": 1.5}) == "branches[0].json-name: expected a whole number, got 1.5"
    assert refused(renamed=1) == 'branches[0]: unknown key "renamed"'


def test_decode_fields_leaves_the_skipped_fields_as_read():
    fields = decode_fields(Tree, {"schema": 1, "branches": "anything"}, skip=("branches",))
    assert fields == {"schema": 1, "branches": "anything"}
    with pytest.raises(DecodeError) as refused:
        decode_fields(Tree, {"schema": 2, "branches": []}, skip=("branches",))
    assert str(refused.value) == "schema: expected one of 1, got 2"


def test_the_schema_is_derived_from_the_fields():
    derived = schema(Leaf)
    assert derived["required"] == ["path", "count", "seconds", "flag", "mode"]
    assert derived["additionalProperties"] is False
    assert derived["properties"]["mode"] == {"enum": ["run", "skip"]}
    assert derived["properties"]["seconds"] == {"type": "number", "minimum": 0, "maximum": 100}
    assert derived["properties"]["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert schema(Tree)["properties"]["schema"] == {"const": 1}
    assert "json-name" in schema(Branch)["properties"]


# -- decode_each: every problem of one object, each located at its key -----------------------------

@given(BRANCHES)
def test_decode_each_of_a_written_object_reads_every_field_and_finds_nothing(branch):
    fields, errors = decode_each(Branch, json.loads(json.dumps(encode(branch))))
    assert errors == []
    assert Branch(**fields) == branch


@given(BRANCHES, st.data())
def test_decode_each_reports_one_error_per_faulty_field_and_reads_the_others(branch, data):
    written = json.loads(json.dumps(encode(branch)))
    spoiled = data.draw(st.sets(st.sampled_from(["name", "leaves", "ids", "tags", "json-name"]), min_size=1))
    for key in spoiled:
        written[key] = True  # no field of these takes a boolean
    fields, errors = decode_each(Branch, written)
    assert sorted(e.where for e in errors) == sorted(spoiled)
    assert all(not isinstance(e, KeyFault) for e in errors)
    read = {key for key in written if key not in spoiled}
    assert set(fields) == {"renamed" if key == "json-name" else key for key in read}
    # Each error says what `decode` says of that field alone.
    for e in errors:
        with pytest.raises(DecodeError) as alone:
            decode(Branch, {**json.loads(json.dumps(encode(branch))), e.where: True})
        assert (alone.value.where, alone.value.message) == (e.where, e.message)


@given(BRANCHES, st.sets(st.sampled_from(["name", "leaves", "ids", "limit", "tags"])),
       st.sets(st.text("xyz", min_size=1, max_size=3)))
def test_decode_each_reports_every_key_missing_and_every_key_unknown(branch, missing, unknown):
    written = {key: value for key, value in json.loads(json.dumps(encode(branch))).items() if key not in missing}
    written.update(dict.fromkeys(unknown, 0))
    fields, errors = decode_each(Branch, written)
    assert all(isinstance(e, KeyFault) for e in errors)
    assert sorted((e.where, e.message) for e in errors) == sorted(
        [(key, "required field is missing") for key in missing]
        + [(key, "unknown field; allowed: name, leaves, ids, limit, tags, spare, steps, json-name")
           for key in unknown])
    assert {e.key for e in errors if e.missing} == missing  # type: ignore[attr-defined]
    assert set(fields) == {"renamed" if key == "json-name" else key for key in written if key not in unknown}


@document
class Checked:
    items: Mapping[str, int] = spec(check=lambda v: None if type(v) is dict else
                                    f"expected an object of items, got {type(v).__name__}")


def test_decode_each_leaves_skipped_fields_as_read_once_their_own_check_holds():
    assert decode_each(Tree, {"schema": 1, "branches": "anything"}, skip=("branches",)) == (
        {"schema": 1, "branches": "anything"}, [])
    assert decode_each(Checked, {"items": {"a": 1}}, skip=("items",)) == ({"items": {"a": 1}}, [])
    fields, errors = decode_each(Checked, {"items": []}, skip=("items",))
    assert fields == {} and [str(e) for e in errors] == ["items: expected an object of items, got list"]
    _, errors = decode_each(Tree, [])
    assert [(e.where, e.message) for e in errors] == [("", "expected an object, got an array")]


@document
class Pairs:
    points: tuple[tuple[int, float | Literal["NaN"]], ...]


@given(st.lists(st.tuples(st.integers(0, 10**9), st.floats(-1e6, 1e6) | st.just("NaN")), max_size=4))
def test_a_fixed_array_is_written_as_a_list_and_read_back_as_a_tuple(points):
    pairs = Pairs(tuple(points))
    data = json.loads(json.dumps(encode(pairs)))
    assert data == {"points": [list(p) for p in points]}
    assert decode(Pairs, data) == pairs
    assert list(Draft202012Validator(schema(Pairs)).iter_errors(data)) == []


@pytest.mark.parametrize("point, where, message", [
    ([1], "points[0]", "expected an array of 2 items, got 1"),
    ([1, 2.0, 3], "points[0]", "expected an array of 2 items, got 3"),
    ({"a": 1}, "points[0]", "expected an array, got an object"),
    ([True, 1.0], "points[0][0]", "expected a whole number, got true"),
    ([1, "Inf"], "points[0][1]", 'expected one of NaN, got "Inf"'),
])
def test_a_fixed_array_is_refused_where_it_is_wrong(point, where, message):
    with pytest.raises(DecodeError) as refused:
        decode(Pairs, {"points": [point]})
    assert (refused.value.where, refused.value.message) == (where, message)
    assert schema(Pairs)["properties"]["points"]["items"]["prefixItems"][0] == {"type": "integer", "maximum": 10**9}
