"""The JSON Schema (draft 2020-12) of `.github/ci-policy.yml`, generated from the field tables.

- In: the tables of `ci_policy.config` (`TOP` and every table nested in it), whose parsers
  carry the JSON Schema of the values they accept (`fields.Parser.schema`).
- Out: `config_schema()`, a JSON-ready dict: one object per table, with every key's
  `description` (its reference text), `default` (the value an absent key has, where it is a
  plain value the key itself accepts; none when it depends on other keys), `required` keys,
  and `additionalProperties: false` (the loader refuses unknown keys).
- Refused: a parser without a JSON Schema, or one naming a table it lacks (`ValueError`: a bug
  of the tables, caught by the schema's sync test, never by a user).
- What the schema cannot state, the loader still checks: cross-key rules (a stage's
  backend is declared, a suite names a stage of that backend, a glob matches a stage),
  glob and regular-expression syntax, the version `requires` names. A file the schema
  accepts may still be refused, with a located error; one it refuses, the loader refuses.
- `ci_policy.render.schemas` writes it, with the schemas of the JSON outputs, to
  `ci_policy/schemas/config.schema.json`; a test fails when the file differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_policy.config.fields import JsonSchema, Key, Table, TableObject
from ci_policy.config.top import TOP
from ci_policy.errors import CiPolicyError

DRAFT = "https://json-schema.org/draft/2020-12/schema"
# Where the shipped schemas are published: the files of `ci_policy/schemas/` on the main branch.
BASE_URL = "https://raw.githubusercontent.com/ci-policy/ci-policy/main/ci_policy/schemas/"


def schema_id(name: str) -> str:
    return f"{BASE_URL}{name}.schema.json"


class _NoDefault(CiPolicyError):
    """A default the schema does not state (not a plain JSON value); caught where raised."""


def _json_value(value: Any) -> Any:
    """A default as JSON: tuples become lists, read-only maps objects, integral floats integers."""
    if value is None:
        raise _NoDefault
    if isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, tuple):
        return [_json_value(item) for item in value]
    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    raise _NoDefault  # a section's dataclass: its keys state their own defaults


def _fits(value: Any, schema: JsonSchema) -> bool:
    """Whether the default is of the type (and list length) the key's schema states."""
    kind = schema.get("type")
    if kind == "array":
        return isinstance(value, list) and len(value) >= schema.get("minItems", 0)
    if kind == "object":
        return isinstance(value, dict)
    return True


def _resolve(fragment: Any, table: Table | None) -> Any:
    """`fragment` with every `TABLE` replaced by the object schema of `table`."""
    if isinstance(fragment, TableObject):
        if table is None:
            raise ValueError("a parser's schema names its table, but it has none")
        return {**table_schema(table), **fragment.extra}
    if isinstance(fragment, Mapping):
        return {k: _resolve(v, table) for k, v in fragment.items()}
    if isinstance(fragment, (list, tuple)):
        return [_resolve(v, table) for v in fragment]
    return fragment


def key_schema(key: Key) -> dict[str, Any]:
    """One key: its description, the schema of its values, and its default."""
    if key.parser.schema is None:
        raise ValueError(f"the parser of {key.name!r} ({key.parser.kind}) has no JSON Schema")
    value = _resolve(key.parser.schema, key.parser.table)
    default: Any = None
    stated = False
    if not key.required and not key.computed_default:
        try:
            default = _json_value(key.default)
            stated = _fits(default, value)
        except _NoDefault:
            pass
    description = key.doc
    if not key.required and not stated and key.shown_default is not None:
        description += f" Default: {key.shown_default}."
    out: dict[str, Any] = {"description": description}
    out.update((k, v) for k, v in value.items() if k != "description")
    if stated:
        out["default"] = default
    return out


def table_schema(table: Table) -> dict[str, Any]:
    """The object one table reads: its keys, the required ones, and no other key."""
    out: dict[str, Any] = {"type": "object", "description": table.doc,
                           "properties": {key.name: key_schema(key) for key in table.keys}}
    required = [key.name for key in table.keys if key.required]
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


def config_schema() -> dict[str, Any]:
    """The schema of the whole configuration file."""
    body = table_schema(TOP)
    return {
        "$schema": DRAFT,
        "$id": schema_id("config"),
        "title": "ci-policy configuration (.github/ci-policy.yml)",
        "description": "The CI policy of a repository, read by ci-policy (version 1). " + body.pop("description"),
        **body,
    }
