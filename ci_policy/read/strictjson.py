"""Strict JSON: the hooks every JSON input of ci_policy is parsed with.

- In: JSON text (`loads`), or the pairs and constants `json.loads` hands its hooks.
- Out: the decoded value, as `json.loads` gives it.
- Refused: a key given twice in one object (`DuplicateKey`, carrying the key), and the
  non-standard constants NaN, Infinity and -Infinity (Python's json accepts both).
- `loads()` applies both; readers that report non-finite numbers themselves use
  `no_duplicates` alone.
- `lone_surrogate(text, value)`: whether decoded JSON holds a string (or key) with a lone
  surrogate escape (`"\\ud800"`): valid JSON, but no UTF-8 output (a report, a file, a log
  line) can carry it, so each reader refuses it. `holds_lone_surrogate(value)` checks any
  literal value (a marker's arguments too).
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from ci_policy.errors import CiPolicyError
from ci_policy.read.lazyregex import LazyRegex


class DuplicateKey(CiPolicyError, ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = dict(pairs)
    if len(out) == len(pairs):
        return out  # no key twice: the common case, decided without a loop in Python
    out = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def no_constants(name: str) -> NoReturn:
    raise ValueError(f"{name} is not allowed")


def loads(text: str) -> Any:
    return json.loads(text, object_pairs_hook=no_duplicates, parse_constant=no_constants)


_SURROGATE_ESCAPE = LazyRegex(r"\\u[dD][89a-fA-F]")


def lone_surrogate(text: str, value: Any) -> bool:
    """Whether `value`, decoded from the JSON `text`, holds a lone surrogate anywhere (a pair,
    for a character outside the BMP, decodes to that character). The walk runs only when the
    text has a surrogate escape at all."""
    return _SURROGATE_ESCAPE.search(text) is not None and holds_lone_surrogate(value)


def holds_lone_surrogate(value: Any) -> bool:
    """Whether a string (or key) anywhere in a value of strings, lists, tuples and dicts holds
    a lone surrogate (U+D800 to U+DFFF), which UTF-8 cannot encode. A walk with its own stack:
    a value nested as deep as `json.loads` allows must not exhaust Python's."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return False
