"""Strict JSON: the hooks every JSON input of ci_policy is parsed with.

- Refused: a key given twice in one object (`DuplicateKey`, carrying the key), and the
  non-standard constants NaN, Infinity and -Infinity (Python's json accepts both).
- `loads()` applies both; readers that report non-finite numbers themselves use
  `no_duplicates` alone.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from ci_policy.errors import CiPolicyError


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
