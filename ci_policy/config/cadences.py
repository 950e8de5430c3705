"""`cadences:` which scheduled run is which cadence, which stages it plans, and what it selects.

- In: the `cadences` mapping (parsed after `backends` and `stages`, which schedules name).
- Out: a frozen `Cadences`: cron expression -> a cadence name, or a `Schedule` (a cadence
  and the stages that cron plans: by backend and/or by stage-name glob, both must match);
  the labels a nightly run excludes; `nightly_selects` (`all`: a nightly or weekly run
  selects nightly and per-commit tests; `nightly_only`: only `nightly=True` ones); the
  cadence of a `merge_group` event.
- Refused: a schedule key that is not a 5-field cron expression, an unknown cadence, an
  unknown backend, a stage glob matching no stage, a schedule that plans no stage.
- `cadence_list` parses a list of cadence names (`stages[].cadences`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal, get_args

import yaml

from ci_policy.config import codes, fields
from ci_policy.config.backends import BACKEND_SCHEMA, backends_of, check_backend
from ci_policy.config.fields import REQUIRED, Context, FrozenMap, Key, Parser, Table, Values, mapping_of, strings
from ci_policy.read.yamlnodes import INVALID, Schema

Cadence = Literal["regular", "nightly", "weekly", "release"]
CADENCES: tuple[Cadence, ...] = get_args(Cadence)
NightlySelects = Literal["all", "nightly_only"]
NIGHTLY_SELECTS: tuple[NightlySelects, ...] = get_args(NightlySelects)
# The cadences `nightly_selects: nightly_only` splits: they select only `nightly=True` tests.
SPLIT_CADENCES: tuple[Cadence, ...] = ("nightly", "weekly")


def _unique_items(s: Schema, items: list[yaml.Node], where: str, read: Callable[[yaml.Node, str], Any]) -> Any:
    """The items read one by one, or INVALID at the first bad or repeated one (reported there)."""
    out: list[Any] = []
    for i, item in enumerate(items):
        value = read(item, f"{where}[{i}]")
        if value is INVALID:
            return INVALID
        if value in out:
            s.error(item, f"{where}[{i}]", f"duplicate entry {value!r}", kind="duplicate")
            return INVALID
        out.append(value)
    return tuple(out)


def _parse_cadence_list(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    items = s.sequence(node, where, non_empty=True)
    if items is None:
        return INVALID
    return _unique_items(s, items, where, lambda item, at: s.choice(item, at, CADENCES))


def cadence_list() -> Parser:
    return Parser("non-empty list of " + " | ".join(CADENCES), _parse_cadence_list,
                  schema={"type": "array", "items": {"type": "string", "enum": list(CADENCES)}, "minItems": 1,
                          "uniqueItems": True})


def _parse_backend_list(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    items = s.sequence(node, where, non_empty=True)
    backends = backends_of(ctx)
    if items is None or backends is INVALID:  # a wrong `backends` is reported where it is declared
        return INVALID
    return _unique_items(s, items, where, lambda item, at: check_backend(s, item, at, backends))


# A key of `schedules`: five fields separated by whitespace (`str.split`).
CRON_PATTERN = r"^\s*\S+(?:\s+\S+){4}\s*$"

SCHEDULE = Table("cadences.schedules.<cron>", "A schedule written as a mapping: its cadence and the stages it plans "
                 "(a stage must match `backends` and `stages` when both are given).", (
    Key("cadence", fields.choice(CADENCES), REQUIRED, "The cadence this cron runs."),
    Key("backends", Parser("non-empty list of backends", _parse_backend_list,
                           schema={"type": "array", "items": BACKEND_SCHEMA, "minItems": 1, "uniqueItems": True}), (),
        "Only stages of these backends are planned; the others are skipped.", shown_default="every backend"),
    Key("stages", strings("non-empty list of stage-name globs", non_empty=True), (),
        "Only stages whose name matches one of these globs (fnmatch: `*`, `?`, `[...]`) are planned.",
        shown_default="every stage"),
))


@dataclass(frozen=True)
class Schedule:
    """A cron that plans only some stages: those of `backends` (if any) whose name matches `stages` (if any)."""

    cron: str
    cadence: Cadence
    backends: tuple[str, ...] = SCHEDULE.default("backends")
    stages: tuple[str, ...] = SCHEDULE.default("stages")
    line: int | None = None

    def plans(self, name: str, backend: str, key: str | None = None) -> bool:
        """Whether it plans the stage `name` of `backend`; a glob may match the stage's `key` too."""
        return ((not self.backends or backend in self.backends)
                and (not self.stages or any(fnmatchcase(name, glob) or (key is not None and fnmatchcase(key, glob))
                                            for glob in self.stages)))

    def describe(self) -> str:
        """What it plans, for reasons: `rocm stages`, `stages matching nightly-*`, `rocm stages matching a*`."""
        backends = f"{', '.join(self.backends)} stages" if self.backends else "stages"
        return backends + (f" matching {', '.join(self.stages)}" if self.stages else "")


def _parse_schedule(s: Schema, node: yaml.Node, at: str, cron: str, ctx: Context) -> Any:
    values = SCHEDULE.read(s, node, at, ctx)
    if values is None or values.any_invalid() or "cadence" not in values:
        return INVALID
    schedule = Schedule(cron=cron, cadence=values.get("cadence"), backends=values.get("backends"),
                        stages=values.get("stages"), line=values.line)
    stages = ctx.get("stages", INVALID)
    if stages is INVALID:  # reported where the stages are; nothing to check against
        return schedule
    for i, glob in enumerate(schedule.stages):
        if not any(stage.matches(glob) for stage in stages):
            s.error(values.value_node("stages").value[i], f"{at}.stages[{i}]",
                    f"{glob!r} matches no stage", hint="a glob matches whole stage names, e.g. 'nightly-*'",
                    code=codes.INVALID_VALUE)
            return INVALID
    # A mapping without `backends` or `stages` is the plain `cron: cadence` form spelled out and
    # is accepted wherever that form is, even when every stage is external.
    narrowed = bool(schedule.backends or schedule.stages)
    if narrowed and not any(schedule.plans(stage.name, stage.backend, stage.key)
                            for stage in stages if not stage.external):
        s.error(node, at, f"plans no stage: no stage that is not external is one of the {schedule.describe()}",
                hint="name backends and stage globs that some stage matches", code=codes.INCONSISTENT)
        return INVALID
    return schedule


def _parse_schedules(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    table = s.mapping(node, where, open_keys=True) or {}
    schedules: dict[str, Cadence | Schedule] = {}
    for cron, (key_node, value_node) in table.items():
        at = f"{where}[{cron!r}]"
        if len(cron.split()) != 5:
            s.error(key_node, at, "expected a cron expression of 5 fields, as in the workflow's "
                    "`on.schedule[].cron`", code=codes.INVALID_VALUE)
            continue
        entry = (_parse_schedule(s, value_node, at, cron, ctx) if isinstance(value_node, yaml.MappingNode)
                 else s.choice(value_node, at, CADENCES))
        if entry is not INVALID:
            schedules[cron] = entry
    return FrozenMap(schedules)


CADENCES_TABLE = Table("cadences", "Which scheduled run is which cadence.", (
    Key("schedules", Parser("mapping of cron expression to " + " | ".join(CADENCES) + " or a schedule",
                            _parse_schedules, SCHEDULE, schema={
                                "type": "object", "propertyNames": {"pattern": CRON_PATTERN},
                                "additionalProperties": {"anyOf": [{"type": "string", "enum": list(CADENCES)},
                                                                   fields.TABLE]}}),
        FrozenMap(), "The workflow's `on.schedule[].cron` entries and the cadence each one runs "
        "(a schedule: a cadence and the stages it plans).",
        shown_default="none"),
    Key("nightly_exclude", strings("list of labels"), (), "Labels whose tests the nightly cadence skips.",
        shown_default="none"),
    Key("nightly_selects", fields.choice(NIGHTLY_SELECTS), "all",
        "`all`: nightly and weekly runs select per-commit and nightly tests; `nightly_only`: only "
        "`nightly=True` tests (a regular run never selects those)."),
    Key("merge_group", fields.choice(CADENCES), "regular", "The cadence of a `merge_group` (merge queue) event."),
))


@dataclass(frozen=True)
class Cadences:
    """`cadences:` which cron means which cadence and plans which stages, and what a cadence selects."""

    schedules: FrozenMap[str, Cadence | Schedule] = CADENCES_TABLE.default("schedules")
    nightly_exclude: tuple[str, ...] = CADENCES_TABLE.default("nightly_exclude")
    nightly_selects: NightlySelects = CADENCES_TABLE.default("nightly_selects")
    merge_group: Cadence = CADENCES_TABLE.default("merge_group")
    line: int | None = None

    def for_cron(self, cron: str) -> Cadence | None:
        entry = self.schedules.get(cron)
        return entry.cadence if isinstance(entry, Schedule) else entry

    def schedule_for(self, cron: str) -> Schedule | None:
        """The stage choice of `cron`, when its entry chooses stages (None: it plans every stage)."""
        entry = self.schedules.get(cron)
        return entry if isinstance(entry, Schedule) and (entry.backends or entry.stages) else None


def _build(s: Schema, v: Values) -> Cadences:
    return Cadences(schedules=v.get("schedules"), nightly_exclude=v.get("nightly_exclude"),
                    nightly_selects=v.get("nightly_selects"), merge_group=v.get("merge_group"), line=v.line)


CADENCES_SECTION = mapping_of(CADENCES_TABLE, _build)
