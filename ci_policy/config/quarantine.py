"""`quarantine:` test files whose failures are reported but fail nothing, each until a date.

- In: the `quarantine` list, and the stages parsed before it (an entry may name one).
- Out: a tuple of frozen `Quarantine`s (`config.quarantined`) in file order.
- Refused: an entry without `file`, `reason` or `until`, or with neither `issue` nor `owner`
  (someone must follow it up); an empty reason; an `until` that is not a date (`YYYY-MM-DD`,
  a YAML date or a string); a `stage` that names no planned stage, or an external one; the
  same file (and stage) listed twice. Whether `file` is a registered test file (CP232) is
  checked with the registry (`model.snapshot`), and whether `until` has passed (CP233) by
  `ci-policy lint`, which knows the day.
"""

from __future__ import annotations

import datetime
from typing import Any

import yaml

from ci_policy.config import codes, fields
from ci_policy.config.fields import REQUIRED, Context, Key, Parser, Table, Values
from ci_policy.config.quarantined import Quarantine as Quarantine
from ci_policy.read.lazyregex import LazyRegex
from ci_policy.read.names import STAGE_KEY, did_you_mean
from ci_policy.read.yamlnodes import INVALID, Schema

_DATE_RE = LazyRegex(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_DATE_TAGS = ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:str")
_DATE_HINT = "write the last day the quarantine holds as YYYY-MM-DD, e.g. 2027-01-15"


def _parse_until(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    """A date: plain (a YAML date) or quoted, always `YYYY-MM-DD`; a timestamp is refused."""
    match = _DATE_RE.fullmatch(node.value) if isinstance(node, yaml.ScalarNode) and node.tag in _DATE_TAGS else None
    if match is None:
        s.error(node, where, f"expected a date (YYYY-MM-DD), got {s.describe(node)}", hint=_DATE_HINT,
                kind="wrong-type")
        return INVALID
    try:
        return datetime.date(*(int(part) for part in match.groups()))
    except ValueError as exc:  # 2027-02-30
        s.error(node, where, f"{node.value!r} is not a date: {exc}", hint=_DATE_HINT)
        return INVALID


def _non_empty(value: str) -> str | None:
    return None if value.strip() else "must not be empty"


def _a_reason(value: str) -> str | None:
    return None if value.strip() else "must not be empty: say why the file is quarantined"


def _parse_stage(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    key = s.string(node, where)
    stages = ctx.get("stages")
    if key is INVALID or not isinstance(stages, tuple):  # stages invalid: reported there
        return key
    keys = [k for stage in stages for k in dict.fromkeys((stage.key, *(p.key for p in stage.planned())))]
    external = {stage.key for stage in stages if stage.external}
    if key not in keys:
        s.error(node, where, f"names no stage: {key!r}{did_you_mean(key, keys)}",
                hint=f"name a stage as plans name it ({', '.join(keys)}), or leave stage out for every stage",
                code=codes.INVALID_VALUE)
        return INVALID
    if key in external:
        s.error(node, where, f"{key!r} is an external stage: another system runs it, ci-policy never does",
                hint="quarantine the file in the stage that runs it, or leave stage out", code=codes.INVALID_VALUE)
        return INVALID
    return key


QUARANTINE_ENTRY = Table(
    "quarantine[]", "A quarantined test file: it still runs, and its failure is reported as a warning but fails "
    "neither its shard nor the required check, until `until`; then `ci-policy lint` fails (CP233) until the entry is "
    "renewed or removed. A failing metric gate of a file that passed still fails.", (
        Key("file", fields.relative_path(), REQUIRED, "A registered test file, repo-relative."),
        Key("stage", Parser("stage key", _parse_stage, schema=fields.string_schema({"pattern": f"^(?:{STAGE_KEY})$"})),
            None,
            "Only in this stage (as plans name it: `name`, `name@backend`, `key+variant`; a stage with variants "
            "names them all).", shown_default="every stage the file runs in"),
        Key("reason", fields.string("non-empty string", _a_reason, item={"minLength": 1, "pattern": r"\S"}),
            REQUIRED, "Why it is quarantined; shown with each failure."),
        Key("issue", fields.string("URL", _non_empty, item={"minLength": 1, "pattern": r"\S"}), None,
            "The issue that tracks the fix (`issue` or `owner`, or both, is required).", shown_default="none"),
        Key("owner", fields.string("string", _non_empty, item={"minLength": 1, "pattern": r"\S"}), None,
            "Who follows it up, e.g. `@alice` (`issue` or `owner`, or both, is required).", shown_default="none"),
        Key("until", Parser("date YYYY-MM-DD", _parse_until,
                            schema={"type": "string", "format": "date", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}),
            REQUIRED, "The last day (UTC) the quarantine holds; after it the file's failures fail again."),
    ))


def _entry(s: Schema, v: Values, at: str) -> Quarantine | None:
    if v.any_invalid() or any(k.required and k.name not in v for k in QUARANTINE_ENTRY.keys):
        return None
    if "issue" not in v and "owner" not in v:
        s.error(v.node, at, "needs an issue or an owner: someone must follow the quarantine up",
                hint="add issue: <the URL of the issue tracking the fix>, or owner: '@name'",
                code=codes.MISSING_KEY)
        return None
    lines = {name: int(key_node.start_mark.line) + 1 for name, (key_node, _value) in v.fields.items()}
    return Quarantine(file=v.get("file"), stage=v.get("stage"), reason=v.get("reason").strip(), issue=v.get("issue"),
                      owner=v.get("owner"), until=v.get("until"), line=v.line, lines=lines)


def parse_quarantine(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    entries: list[Quarantine] = []
    seen: dict[tuple[str, str | None], int] = {}
    for i, item in enumerate(s.sequence(node, where) or []):
        at = f"{where}[{i}]"
        values = QUARANTINE_ENTRY.read(s, item, at, ctx)
        entry = None if values is None else _entry(s, values, at)
        if entry is None:
            continue
        first = seen.setdefault((entry.file, entry.stage), i)
        if first != i:
            s.error(item, at, f"{entry.file} is quarantined twice{'' if entry.stage is None else ' in ' + entry.stage} "
                    f"(also {where}[{first}])", hint="keep one entry", code=codes.DUPLICATE)
            continue
        entries.append(entry)
    return tuple(entries)


QUARANTINE = Parser("list of quarantined files", parse_quarantine, QUARANTINE_ENTRY, schema={
    # An entry needs an issue or an owner.
    "type": "array", "items": fields.table_object(anyOf=[{"required": ["issue"]}, {"required": ["owner"]}])})
