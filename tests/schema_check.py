"""Validating a JSON output against the schema ci-policy ships for it (`ci_policy/schemas/NAME.schema.json`)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from ci_policy.render.schemas import SCHEMA_DIR, file_name


@cache
def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / file_name(name)).read_text(encoding="utf-8"))
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def schema_errors(name: str, doc: Any) -> list[tuple[str, str]]:
    """(JSON path, message) of every way `doc` (a value, or JSON text) breaks the schema `name`."""
    if isinstance(doc, str):
        doc = json.loads(doc)
    return sorted((e.json_path, e.message) for e in validator(name).iter_errors(doc))


def assert_valid(name: str, doc: Any) -> None:
    assert schema_errors(name, doc) == [], name
