"""`render.jsondoc.dumps` with `indent=2`: the text `json.dumps` writes, exactly."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ci_policy.render.jsondoc import dumps

_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
_values = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                       | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=30)


@given(_values)
def test_indented_dumps_is_json_dumps(value) -> None:
    assert dumps(value, indent=2) == json.dumps(value, indent=2, allow_nan=False)


def test_values_it_leaves_to_json_dumps_are_still_written_or_refused_as_json_dumps_does() -> None:
    class Text(str):
        pass

    # A list of texts is written in one join (the plan's test files): a str's subclass or another
    # value in it, first or later, gives the same text as `json.dumps`.
    for value in ({1: "a", None: [2]}, {"k": Text("v")}, [True, 1.5, {"a": ()}], ["a", Text("v\n")],
                  [Text("v"), "a"], ("a", "b\u202e", 1, None), ["a", ["b", 2.5]], ["a", {"k": "v"}]):
        assert dumps(value, indent=2) == json.dumps(value, indent=2)
    for bad in (math.nan, [math.inf], {"x": -math.inf}):
        with pytest.raises(ValueError):
            dumps(bad, indent=2)
