"""How a JSON document ci-policy writes and reads back is declared: frozen dataclasses and their fields' metadata.

- In: a class decorated with `document` (a frozen dataclass), each field a plain annotation or a
  `spec(...)` carrying the codec's metadata (`Spec`: pattern, bounds, description, the JSON key
  when it differs, what an error says is expected, a check of its own, of each item or key,
  items distinct or at least one, left out when None).
- Out: the declaration, which `read.codec` derives the writer, the strict reader and the JSON
  Schema from; `DecodeError` (and `KeyFault`, a key missing or unknown), the reader's refusal
  located by path; `kind_of` and `shown`, a JSON value as errors name and quote it.
- Refused: nothing here; a `Spec` option that is not one of its fields is a TypeError where it is declared.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ci_policy.errors import CiPolicyError
from ci_policy.read.numbers import MAX_NUMBER

T = TypeVar("T")
Schema = dict[str, Any]
# What a field's own check says of a value (read as JSON, before its type is checked): None when it holds.
Check = Callable[[Any], "str | None"]
MISSING = dataclasses.MISSING
# A whole number's largest value, unless its field says otherwise: every range is stated in read.numbers.
MAX_WHOLE = int(MAX_NUMBER)


class DecodeError(CiPolicyError, ValueError):
    """A value that is not the document: where (the path into it) and what is wrong."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self._segments: list[str] = []  # innermost first, each `.key`, `[index]` or `["map key"]`

    def inside(self, segment: str) -> DecodeError:
        self._segments.append(segment)
        return self

    @property
    def where(self) -> str:
        return "".join(reversed(self._segments)).removeprefix(".")

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self._segments else self.message


class KeyFault(DecodeError):
    """A key of an object that is missing (a field without a default) or not one of its fields,
    located at the key; `allowed` lists the object's keys in declared order."""

    def __init__(self, message: str, key: str, allowed: tuple[str, ...], *, missing: bool) -> None:
        super().__init__(message)
        self.key, self.allowed, self.missing = key, allowed, missing


@dataclasses.dataclass(frozen=True)
class Spec:
    key: str | None = None
    pattern: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    description: str | None = None
    expected: str | None = None  # what the error says is expected (`expected run or skip`)
    check: Check | None = None
    key_check: Check | None = None  # a mapping's keys
    each: Check | None = None  # each item of a list, once read (located at its index)
    omit_none: bool = False
    unique: bool = False
    min_items: int | None = None
    schema: Schema | None = None  # for the field's JSON Schema, in place of the derived one


if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_options):
        return lambda decorated: decorated


def spec(*, default: Any = MISSING, **options: Any) -> Any:
    """A dataclass field with the codec's metadata (`Spec`'s fields) and an optional default."""
    if default is MISSING:
        return dataclasses.field(metadata={"codec": Spec(**options)})
    return dataclasses.field(default=default, metadata={"codec": Spec(**options)})


@dataclass_transform(frozen_default=True, field_specifiers=(spec,))
def document(cls: type[T] | None = None, /, *, kw_only: bool = False) -> Any:
    """`dataclass(frozen=True)` whose fields may be `spec(...)`s (a type checker takes `spec` for a field)."""
    def make(cls: type[T]) -> type[T]:
        return dataclasses.dataclass(frozen=True, kw_only=kw_only)(cls)
    return make if cls is None else make(cls)


def kind_of(value: Any) -> str:
    """A JSON value's kind, as errors name it."""
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
            dict: "an object"}.get(type(value), type(value).__name__)


def shown(value: Any) -> str:
    """A JSON value as errors quote it: a scalar as JSON (at most 80 characters), else its kind."""
    text = json.dumps(value, allow_nan=True) if not isinstance(value, (dict, list)) else kind_of(value)
    return text if len(text) <= 80 else text[:77] + "..."
