"""`cadences:` which scheduled run is which cadence, and what the nightly cadence leaves out.

- In: the `cadences` mapping.
- Out: a frozen `Cadences`: cron expression -> cadence (read-only), and the labels a
  nightly run excludes.
- Refused: a schedule key that is not a 5-field cron expression, an unknown cadence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

import yaml

from ci_policy.config import codes
from ci_policy.config.fields import Context, FrozenMap, Key, Parser, Table, Values, mapping_of, strings
from ci_policy.read.yamlnodes import INVALID, Schema

Cadence = Literal["regular", "nightly", "weekly", "release"]
CADENCES: tuple[Cadence, ...] = get_args(Cadence)


def _parse_schedules(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    table = s.mapping(node, where, open_keys=True) or {}
    schedules: dict[str, Cadence] = {}
    for cron, (key_node, value_node) in table.items():
        at = f"{where}[{cron!r}]"
        if len(cron.split()) != 5:
            s.error(key_node, at, "expected a cron expression of 5 fields, as in the workflow's "
                    "`on.schedule[].cron`", code=codes.INVALID_VALUE)
            continue
        cadence = s.choice(value_node, at, CADENCES)
        if cadence is not INVALID:
            schedules[cron] = cadence
    return FrozenMap(schedules)


CADENCES_TABLE = Table("cadences", "Which scheduled run is which cadence.", (
    Key("schedules", Parser("mapping of cron expression to " + " | ".join(CADENCES), _parse_schedules),
        FrozenMap(), "The workflow's `on.schedule[].cron` entries and the cadence each one runs.",
        shown_default="none"),
    Key("nightly_exclude", strings("list of labels"), (), "Labels whose tests the nightly cadence skips.",
        shown_default="none"),
))


@dataclass(frozen=True)
class Cadences:
    """`cadences:` which cron means which cadence, and what nightly leaves out."""

    schedules: FrozenMap[str, Cadence] = CADENCES_TABLE.default("schedules")
    nightly_exclude: tuple[str, ...] = CADENCES_TABLE.default("nightly_exclude")
    line: int | None = None

    def for_cron(self, cron: str) -> Cadence | None:
        return self.schedules.get(cron)


def _build(s: Schema, v: Values) -> Cadences:
    return Cadences(schedules=v.get("schedules"), nightly_exclude=v.get("nightly_exclude"), line=v.line)


CADENCES_SECTION = mapping_of(CADENCES_TABLE, _build)
