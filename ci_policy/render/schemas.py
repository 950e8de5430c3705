"""JSON Schemas (draft 2020-12): of the configuration, and of every JSON document ci-policy writes.

- In: `ci_policy.config.schema` (the configuration's, generated from its field tables), the
  plan file's, the timing record's and the report's (derived from their dataclasses by
  `read.codec.schema`), and the shapes of the other documents this package renders, stated
  here once each.
- Out: `SCHEMAS`, name -> schema dict, in the order `ci-policy schema` lists them;
  `document(name)`: the schema as text (two-space indented JSON, keys in the order
  written, a trailing newline), exactly the file `ci_policy/schemas/NAME.schema.json`
  shipped in the package, which a test compares with this module.
- Every output object lists all its fields (`additionalProperties: false`): a field added
  to an output without its schema fails the tests that validate real outputs. Each
  document keeps its `"schema": 1`; the schema files carry the `$id`, not the outputs.
- Refused: an unknown name (`schema(name)`: `KeyError`; `ci-policy schema` lists the names
  instead).
- Regenerate the shipped files with `python -m ci_policy.render.schemas --update`;
  without `--update`, the names are printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, get_args

from ci_policy.config.cadences import CADENCES
from ci_policy.config.schema import DRAFT, config_schema, schema_id
from ci_policy.model.health import HealthReport
from ci_policy.plan.document import PlanDocument
from ci_policy.plan.explain import Status
from ci_policy.plan.outcome import RESULTS
from ci_policy.plan.policy import EVENTS, TRUSTS
from ci_policy.read.codec import schema as derived_schema
from ci_policy.read.timings import TimingRecord

Schema = dict[str, Any]

# Where `--update` writes: the package's data directory.
SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"

# -- building blocks ---------------------------------------------------------------------------

STRING: Schema = {"type": "string"}
BOOLEAN: Schema = {"type": "boolean"}
INTEGER: Schema = {"type": "integer"}
COUNT: Schema = {"type": "integer", "minimum": 0}
SECONDS: Schema = {"type": "number", "minimum": 0}
STRINGS: Schema = {"type": "array", "items": STRING}
DISTINCT: Schema = {**STRINGS, "uniqueItems": True}


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def one_of(values: Any) -> Schema:
    return {"enum": list(values)}


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def obj(properties: Mapping[str, Schema], *, optional: tuple[str, ...] = (), description: str | None = None) -> Schema:
    """An object of exactly these fields, all present but `optional` ones."""
    out: Schema = {"type": "object"}
    if description is not None:
        out["description"] = description
    out["properties"] = dict(properties)
    out["required"] = [name for name in properties if name not in optional]
    out["additionalProperties"] = False
    return out


def document(properties: Mapping[str, Schema], *, optional: tuple[str, ...] = ()) -> Schema:
    """A top-level output: `"schema": 1`, then its fields."""
    return obj({"schema": {"const": 1, "description": "The version of this document's format."}, **properties},
               optional=optional)


def top(name: str, title: str, description: str, body: Schema) -> Schema:
    return {"$schema": DRAFT, "$id": schema_id(name), "title": title, "description": description, **body}


# A diagnostic, as `Diagnostic.as_dict` writes it: code and name only when it has a code.
DIAGNOSTIC = obj({
    "code": {"type": "string", "pattern": "^CP[0-9]{3}$"},
    "name": STRING,
    "path": nullable(STRING),
    "line": nullable(COUNT),
    "col": nullable(COUNT),
    "message": STRING,
    "hint": nullable(STRING),
}, optional=("code", "name"))
DIAGNOSTICS = array(DIAGNOSTIC)
INVALID_FILES = array(obj({"file": STRING, "diagnostics": DIAGNOSTICS, "kept_stages": STRINGS},
                          optional=("kept_stages",)))
DECISION = one_of(("run", "skip"))
EST_SOURCE = one_of(("literal", "implicit", "estimates"))

REGISTRATION = obj({
    "file": STRING,
    "line": nullable(COUNT),
    "backend": STRING,
    "suite": STRING,
    "est_time": SECONDS,
    "labels": STRINGS,
    "nightly": BOOLEAN,
    "disabled": nullable(STRING),
    "implicit": BOOLEAN,
    "marker": nullable(STRING),
})

EXPLAIN = document({
    "file": STRING,
    "event": one_of(EVENTS),
    "cadence": one_of(CADENCES),
    "trust": one_of(TRUSTS),
    "status": one_of(get_args(Status)),
    "summary": STRING,
    "changed": nullable(BOOLEAN),
    "stages": array(obj({"stage": STRING, "backend": STRING, "line": nullable(COUNT), "decision": DECISION,
                         "reasons": STRINGS, "selected": BOOLEAN, "why": STRING, "est_time": SECONDS,
                         "est_source": EST_SOURCE, "shard": nullable(COUNT), "shards": COUNT})),
    "invalid_stages": STRINGS,
    "diagnostics": DIAGNOSTICS,
})

REGISTRY = document({
    "registrations": array(REGISTRATION),
    "commands": {**array(obj({"stage": STRING, "backend": STRING, "command": array(STRING),
                              "working_directory": nullable(STRING), "paths": STRINGS, "est_time": SECONDS})),
                 "description": "The stages with a command (suites without markers): no marker registers to them."},
    "plan_complete": BOOLEAN,
    "invalid": INVALID_FILES,
}, optional=("commands",))

LIST = document({
    "stage": STRING,
    "decision": DECISION,
    "reasons": STRINGS,
    "shard": nullable(COUNT),
    "files": STRINGS,
    "command": {**array(STRING), "minItems": 1,
                "description": "A stage with a command: the argv its shard runs; its one file is the stage's name."},
    "working_directory": {**nullable(STRING), "description": "With command: where it runs; null: the root."},
    "plan_complete": BOOLEAN,
    "invalid": INVALID_FILES,
}, optional=("command", "working_directory"))

LINT = document({
    "ok": BOOLEAN,
    "errors": DIAGNOSTICS,
    "warnings": DIAGNOSTICS,
    "suppressed": DIAGNOSTICS,
    "files": nullable(COUNT),
    "registrations": nullable(COUNT),
})

INIT = document({
    "ok": BOOLEAN,
    "written": STRINGS,
    "stages": array(obj({"name": STRING, "backend": STRING, "files": COUNT, "est_time": SECONDS,
                         "runner": one_of(("python", "pytest")), "runs_on": STRINGS,
                         "runs_on_from": nullable(STRING), "cadences": STRINGS, "requires_labels": STRINGS,
                         "variants": array(obj({"name": STRING, "runs_on": STRINGS}))})),
    "discovery": array(obj({"path": STRING, "pattern": STRINGS, "from": nullable(STRING)})),
    "not_discovered": STRINGS,
    "schedules": array(obj({"cron": STRING, "cadence": STRING, "workflow": STRING})),
    "nightly_selects": nullable(STRING),
    "require_labels": STRINGS,
    "labels": STRINGS,
    "todo": array(obj({"path": STRING, "line": nullable(COUNT), "what": STRING})),
    "notes": DIAGNOSTICS,
    "errors": DIAGNOSTICS,
    "warnings": DIAGNOSTICS,
})

RESULT = document({
    "ok": BOOLEAN,
    "plan_complete": nullable(BOOLEAN),
    "jobs": {"type": "object", "additionalProperties": one_of(RESULTS)},
    "failures": STRINGS,
    "summary": STRING,
    "awaiting_approval": nullable(STRING),
    "held_for_trust": {"type": "object", "additionalProperties": STRING},
})

FILE_RUN = obj({
    "file": STRING,
    "hw": STRING,
    "suite": STRING,
    "runs_on": STRINGS,
    "container_image": STRING,
    "container_options": STRING,
    "timeout_seconds": {"type": "integer", "minimum": 1},
    # Present when the configuration chose among several registrations (`file_run.prefer`).
    "choice": obj({"by": {"type": "string", "enum": ["file_run.prefer"]}, "prefer": DISTINCT, "among": STRINGS}),
}, optional=("choice",))

TUNE = document({
    "proposals": array(obj({
        "file": STRING,
        "backend": STRING,
        "suite": nullable(STRING),
        "samples": array(SECONDS),
        "q": nullable(SECONDS),
        "current": nullable(SECONDS),
        "proposed": nullable(COUNT),
        "action": one_of(("raise", "lower", "keep", "skip", "report_only")),
        "reason": STRING,
        "marker": nullable(STRING),
    })),
    "balance": array(obj({"stage": STRING, "partitions": COUNT, "before_makespan": SECONDS,
                          "before_imbalance": SECONDS, "after_makespan": SECONDS, "after_imbalance": SECONDS})),
    "estimates_written": obj({"file": STRING, "entries": COUNT}),
    "pull_request": obj({"action": STRING, "number": nullable(COUNT), "url": nullable(STRING), "branch": STRING}),
    "applied": array(obj({"file": STRING, "backend": STRING, "current": nullable(SECONDS), "proposed": COUNT,
                          "status": STRING, "reason": nullable(STRING)})),
}, optional=("estimates_written", "pull_request", "applied"))

COMMENT = document({
    "status": STRING,
    "message": STRING,
    "exit_code": COUNT,
    "requests": array(obj({"method": STRING, "path": STRING, "body": {}})),
}, optional=("requests",))

PULL_REQUEST = document({
    "number": {"type": "integer", "minimum": 1},
    "head_sha": STRING,
    "base_sha": STRING,
    "labels": STRINGS,
    "trust": one_of(TRUSTS),
    "trust_reason": STRING,
    "diff_file": STRING,
})

REPORT_STATUS = document({
    "sha": STRING,
    "context": STRING,
    "state": one_of(("pending", "success", "failure", "error")),
    "description": STRING,
    "target_url": nullable(STRING),
})

HISTORY = document({
    "read": {**COUNT, "description": "Attempts read from the timing records."},
    "added": {**COUNT, "description": "Of which the store did not hold yet (importing again adds none)."},
    "plans_read": {**COUNT, "description": "Plans' accelerator hours read from plan artifacts (ci-policy-plan-N/)."},
    "plans_added": {**COUNT, "description": "Of which the store did not hold yet."},
    "runs_read": {**array(INTEGER), "description": "With --github-run(s): the runs whose artifacts were fetched."},
    "warnings": DIAGNOSTICS,
}, optional=("runs_read",))

ESTIMATES = document({
    "estimates": array(obj({"file": STRING, "suite": STRING, "est_time": {**SECONDS, "maximum": 604800}})),
})

# name -> (title, what it describes, the schema, or a function making it)
_SCHEMAS: dict[str, tuple[str, str, Schema | Callable[[], Schema]]] = {
    "config": ("", "", config_schema),
    "plan": ("ci-policy plan", "`ci-policy plan --format json`, and the plan file `plan --json-out` writes and "
             "`list --plan` and `run --plan` read.", lambda: derived_schema(PlanDocument)),
    "registry": ("ci-policy registry", "`ci-policy registry --format json`.", REGISTRY),
    "lint": ("ci-policy lint", "`ci-policy lint --format json`.", LINT),
    "timings": ("ci-policy timing record", "One line of a timing-records file (JSON Lines) that `ci-policy run` "
                "writes (`--timings-out`) and `ci-policy tune` reads.", lambda: derived_schema(TimingRecord)),
    "explain": ("ci-policy plan --explain", "`ci-policy plan --explain FILE --format json`.", EXPLAIN),
    "list": ("ci-policy list", "`ci-policy list --format json`.", LIST),
    "init": ("ci-policy init", "`ci-policy init --format json`.", INIT),
    "result": ("ci-policy result", "`ci-policy result --format json`.", RESULT),
    "file-run": ("ci-policy file-run", "`ci-policy file-run --format json`.", FILE_RUN),
    "tune": ("ci-policy tune", "`ci-policy tune --format json`.", TUNE),
    "estimates": ("ci-policy estimates file", "The est_time overrides `ci-policy tune --write-estimates` writes "
                  "(`estimates_file` of the configuration).", ESTIMATES),
    "comment": ("ci-policy comment", "`ci-policy comment --format json`.", COMMENT),
    "pull-request": ("ci-policy pull-request", "`ci-policy pull-request --format json`.", PULL_REQUEST),
    "report-status": ("ci-policy report-status", "`ci-policy report-status --format json`.", REPORT_STATUS),
    "history": ("ci-policy history import", "`ci-policy history import --format json`.", HISTORY),
    "report": ("ci-policy report", "`ci-policy report --format json`: CI health over the store's test history.",
               lambda: derived_schema(HealthReport)),
}

NAMES = tuple(_SCHEMAS)


def schema(name: str) -> Schema:
    """The schema named `name` (one of `NAMES`); KeyError otherwise."""
    title, description, body = _SCHEMAS[name]
    if name == "config":  # whole, with its own title
        return config_schema()
    return top(name, title, description, body() if callable(body) else body)


def document_text(name: str) -> str:
    """The schema as the shipped file holds it."""
    return json.dumps(schema(name), indent=2) + "\n"


def _kind(s: Mapping[str, Any]) -> str:
    """What a schema accepts, in a few words."""
    if "const" in s:
        return json.dumps(s["const"])
    if "enum" in s:
        return " | ".join(str(v) for v in s["enum"])
    if "anyOf" in s:
        return " or ".join(_kind(member) for member in s["anyOf"])
    kind = s.get("type")
    if kind == "array":
        return f"list of {_kind(s.get('items', {}))}"
    if kind == "object":
        return "object"
    return str(kind) if kind else "any value"


def _outline(s: Mapping[str, Any], path: str, required: bool, out: list[str]) -> None:
    if path:
        description = s.get("description", "")
        out.append(f"{path}: {_kind(s)}{' (required)' if required else ''}" + (f": {description}" if description
                                                                                else ""))
    members = [s, *s.get("anyOf", ())]
    for member in members:
        needed = set(member.get("required", ()))
        for name, sub in member.get("properties", {}).items():
            _outline(sub, f"{path}.{name}" if path else name, name in needed, out)
        if isinstance(member.get("additionalProperties"), Mapping):
            _outline_inner(member["additionalProperties"], f"{path}.<name>", out)
        if isinstance(member.get("items"), Mapping):
            _outline_inner(member["items"], f"{path}[]", out)


def _outline_inner(s: Mapping[str, Any], path: str, out: list[str]) -> None:
    """A value inside a list or a mapping: listed only when it has fields of its own."""
    if any("properties" in member for member in (s, *s.get("anyOf", ()))):
        _outline(s, path, False, out)


def outline(name: str) -> str:
    """`ci-policy schema NAME --format text`: the title, then one line per field path."""
    s = schema(name)
    lines = [f"{s['title']} ({s['$id']})", s["description"], ""]
    _outline(s, "", False, lines)
    return "\n".join(lines) + "\n"


def file_name(name: str) -> str:
    return f"{name}.schema.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ci_policy.render.schemas",
                                     description="Print the schema names, or --update the shipped schema files.")
    parser.add_argument("--update", action="store_true", help=f"rewrite every NAME.schema.json in {SCHEMA_DIR.name}/")
    args = parser.parse_args(argv)
    if not args.update:
        sys.stdout.write("".join(f"{name}\n" for name in NAMES))
        return 0
    SCHEMA_DIR.mkdir(exist_ok=True)
    for name in NAMES:
        (SCHEMA_DIR / file_name(name)).write_text(document_text(name), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
