"""`scopes:` broad-scope PR labels (`run-ci-all`): every known label minus `exclude`.

- In: the `scopes` mapping, scope label -> null or `{exclude: [...]}`.
- Out: a tuple of frozen `Scope`s in file order.
- Refused: a scope name that is not `run-ci-<name>`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ci_policy.config import codes
from ci_policy.config.fields import TABLE, Context, Key, Parser, Table, strings
from ci_policy.read.lazyregex import LazyRegex
from ci_policy.read.names import CI_LABEL_PREFIX, NAME
from ci_policy.read.yamlnodes import INVALID, Schema

SCOPE_RE = LazyRegex(CI_LABEL_PREFIX + NAME)

SCOPE = Table("scopes.<run-ci-name>", "A broad-scope PR label; null means every known label.", (
    Key("exclude", strings("list of labels"), (), "Labels the scope leaves out.", shown_default="none"),
))


@dataclass(frozen=True)
class Scope:
    """A broad-scope PR label (`run-ci-all`): every known label minus `exclude`."""

    name: str
    exclude: tuple[str, ...] = SCOPE.default("exclude")
    line: int | None = None


def parse_scopes(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    table = s.mapping(node, where, open_keys=True)
    if table is None:
        return INVALID
    scopes = []
    for name, (key_node, value_node) in table.items():
        at = f"{where}.{name}"
        if not SCOPE_RE.fullmatch(name):
            s.error(key_node, at, f"a scope must be a PR label run-ci-<name>, got {name!r}",
                    hint="write e.g. run-ci-all", code=codes.INVALID_VALUE)
            continue
        line = key_node.start_mark.line + 1
        if isinstance(value_node, yaml.ScalarNode) and value_node.value in ("", "~", "null"):
            scopes.append(Scope(name=name, line=line))
            continue
        values = SCOPE.read(s, value_node, at)
        if values is None:
            continue
        scopes.append(Scope(name=name, exclude=values.get("exclude") or (), line=line))
    return tuple(scopes)


SCOPES = Parser("mapping of `run-ci-<name>` to null or a scope", parse_scopes, SCOPE, schema={
    "type": "object", "propertyNames": {"pattern": f"^(?:{SCOPE_RE.pattern})$"},
    "additionalProperties": {"anyOf": [{"type": "null"}, TABLE]}})
