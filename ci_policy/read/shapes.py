"""The shapes of JSON values, stated once for every reader of a JSON input.

- In: a value `json.loads` produced (dict, list, str, int, float, bool or None).
- Out: `json_type(value)`: the JSON name of its type ("object", "array", "string",
  "number", "boolean", "null"); `a_json_type(value)`: that name as a message says it
  ("an object", "a number", "null"); `fields(obj, required, optional)`: the unknown and
  the missing fields of an object, for the caller to word; the predicates a reader
  needs: `is_integer` (optionally >= a minimum), `is_non_empty_string`,
  `is_non_negative_number` (finite), `is_strings` (an array of strings), `is_distinct`,
  and `or_null` (a predicate that also accepts null).
- A bool is never a number or an integer here, although Python's `True == 1`.
- Refused: `json_type` raises `TypeError` for a value no JSON text gives (a tuple, a set).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeGuard

from ci_policy.read.numbers import is_finite_number

JsonType = Literal["object", "array", "string", "number", "boolean", "null"]

_WITH_ARTICLE: dict[JsonType, str] = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def json_type(value: object) -> JsonType:
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: bool is a subclass of int
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def a_json_type(value: object) -> str:
    return _WITH_ARTICLE[json_type(value)]


@dataclass(frozen=True)
class FieldProblems:
    unknown: tuple[str, ...]  # in the object's order
    missing: tuple[str, ...]  # in the order of `required`

    @property
    def ok(self) -> bool:
        return not self.unknown and not self.missing


def fields(obj: Mapping[str, object], required: Sequence[str], optional: Collection[str] = ()) -> FieldProblems:
    """What is wrong with an object that must have `required` and may have `optional`, nothing else."""
    return FieldProblems(unknown=tuple(k for k in obj if k not in required and k not in optional),
                         missing=tuple(k for k in required if k not in obj))


def is_integer(value: object, minimum: int | None = None) -> TypeGuard[int]:
    """An integer (not a bool, not 1.0), at least `minimum` if given."""
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return minimum is None or value >= minimum


def is_non_empty_string(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and value != ""


def is_non_negative_number(value: object) -> TypeGuard[float]:
    """A finite number >= 0 (an integer counts)."""
    return is_finite_number(value) and value >= 0


def is_strings(value: object) -> TypeGuard[list[str]]:
    """An array of strings (maybe empty)."""
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def is_distinct(items: Sequence[Hashable]) -> bool:
    return len(set(items)) == len(items)


def or_null(check: Callable[[object], bool]) -> Callable[[object], bool]:
    """`check`, also accepting null (None)."""
    return lambda value: value is None or check(value)
