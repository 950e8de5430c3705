"""The estimates file: est_time proposals kept outside the test files.

- In: the JSON text of config `estimates_file` (written by `ci-policy tune
  --write-estimates`), read from the checkout like every checkout file.
- Out: {(test file, suite): est_time}; `apply()` overrides the literals of matching
  registrations (their `est_source` becomes "estimates"); a literal stays the fallback
  for every registration the file does not list.
- Format (schema 1): `{"schema": 1, "estimates": [{"file", "suite", "est_time"}]}`.
- Refused: invalid or non-strict JSON, another schema, unknown fields, wrong types, a
  negative or non-finite est_time, the same (file, suite) twice.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable

from ci_policy.errors import Diagnostic, InputError, InputErrors
from ci_policy.model.registry import Registration
from ci_policy.read import shapes, strictjson
from ci_policy.read.numbers import MAX_EST_TIME, number_range

SCHEMA = 1
DOCUMENT_FIELDS = ("schema", "estimates")
ENTRY_FIELDS = ("file", "suite", "est_time")


def parse_estimates(text: str, path: str) -> dict[tuple[str, str], float]:
    try:
        doc = strictjson.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"estimates file {path} is not valid strict JSON: {exc}", path=path,
                         code="CP420", hint="regenerate it with ci-policy tune --write-estimates") from None
    # `is_integer`: true and 1.0 compare equal to 1 but are no schema number.
    if not isinstance(doc, dict) or not shapes.fields(doc, DOCUMENT_FIELDS).ok \
            or not shapes.is_integer(doc["schema"]) or doc["schema"] != SCHEMA:
        raise InputError(f"estimates file {path} must be {{\"schema\": {SCHEMA}, \"estimates\": [...]}}",
                         path=path, code="CP421", hint="regenerate it with ci-policy tune --write-estimates")
    if not isinstance(doc["estimates"], list):
        raise InputError(f"estimates file {path}: estimates must be a list", path=path, code="CP421")
    out: dict[tuple[str, str], float] = {}
    errors: list[Diagnostic] = []
    for i, entry in enumerate(doc["estimates"]):
        where = f"estimates[{i}]"
        if not isinstance(entry, dict) or not shapes.fields(entry, ENTRY_FIELDS).ok:
            errors.append(Diagnostic(f"{where} must have exactly file, suite and est_time", path=path,
                                     code="CP422"))
            continue
        file, suite, est = entry["file"], entry["suite"], entry["est_time"]
        if not isinstance(file, str) or not isinstance(suite, str):
            errors.append(Diagnostic(f"{where}: file and suite must be strings", path=path, code="CP422"))
            continue
        if not shapes.is_non_negative_number(est):
            errors.append(Diagnostic(f"{where}.est_time must be a finite number >= 0, got {est!r}", path=path,
                                     code="CP422"))
            continue
        if est > MAX_EST_TIME:
            errors.append(Diagnostic(f"{where}.est_time must be at most {MAX_EST_TIME} seconds (7 days), "
                                     f"got {est!r}", path=path, code="CP422",
                                     hint=f"the range is {number_range(0, MAX_EST_TIME)}"))
            continue
        if (file, suite) in out:
            errors.append(Diagnostic(f"{where}: {file} / {suite} is listed twice", path=path, code="CP423"))
            continue
        out[(file, suite)] = est
    if errors:
        raise InputErrors(errors)
    return out


def apply(registrations: Iterable[Registration],
          estimates: dict[tuple[str, str], float]) -> tuple[list[Registration], list[tuple[str, str]]]:
    """(registrations with estimates applied, estimate keys that matched no registration)."""
    used = set()
    out = []
    for reg in registrations:
        key = (reg.file, reg.suite)
        if key in estimates:
            used.add(key)
            out.append(dataclasses.replace(reg, est_time=estimates[key], est_source="estimates"))
        else:
            out.append(reg)
    return out, sorted(set(estimates) - used)


def render(entries: Iterable[tuple[str, str, float]]) -> str:
    rows = [{"file": f, "suite": s, "est_time": e} for f, s, e in sorted(entries)]
    return json.dumps({"schema": SCHEMA, "estimates": rows}, indent=2) + "\n"
