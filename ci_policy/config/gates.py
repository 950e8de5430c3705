"""`gates:` metric-history gates: captured keys, shipped defaults, window and required gates.

- In: the `gates` mapping of the configuration; plain values, from the configuration's
  `gates.defaults` or a test file's `register_ci_gate(...)` literals, for the checks of
  `steps` and `constraint`.
- Out: a frozen `GatesConfig` whose `defaults` is a read-only mapping metric key ->
  {"steps", "constraint"} (shipped defaults for captured keys, overlaid by the
  configured ones); `steps_problems` / `constraint_problems` return the problems found,
  one sentence each (empty when the value is fine).
- Refused: a default on a key that is not captured, `min_samples` above `window`, a
  `{version}` metric key without versions.
- The checks of `steps` and `constraint` are stated here, once, because both the
  configuration and the gate declarations use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

import yaml

from ci_policy.config import codes, fields
from ci_policy.config.fields import REQUIRED, Context, FrozenMap, Key, Parser, Table, Values
from ci_policy.read.numbers import is_finite_number
from ci_policy.read.yamlnodes import INVALID, Schema
from ci_policy.sdk.metrics import DEFAULT_CAPTURE

Reference = Literal["mean", "median"]
REFERENCES: tuple[Reference, ...] = get_args(Reference)
SessionVersion = Literal["v1", "v2"]
SESSION_VERSIONS: tuple[SessionVersion, ...] = get_args(SessionVersion)
# metric key -> {"steps": "last" | "all" | (step, ...), "constraint": {bound: value}}
GateDefaults = FrozenMap[str, FrozenMap[str, Any]]

CONSTRAINT_KEYS = ("rel_up", "abs_floor_up", "rel_down", "abs_floor_down")

SHIPPED_DEFAULTS: GateDefaults = fields.freeze({
    # Deliberately loose: a known trailing-newline drift makes plain-text turns mismatch.
    "rollout/tito_session_mismatch_rate/v1/assistant_text":
        {"steps": "last", "constraint": {"rel_up": 1.0, "abs_floor_up": 0.1, "rel_down": 1.0}},
    "rollout/tito_session_mismatch_rate/v2/assistant_text":
        {"steps": "last", "constraint": {"rel_up": 1.0, "abs_floor_up": 0.1, "rel_down": 1.0}},
    "train/grad_norm":
        {"steps": "all", "constraint": {"rel_up": 0.5, "abs_floor_up": 0.05, "rel_down": 0.5, "abs_floor_down": 0.05}},
    "train/ppo_kl":
        {"steps": "all",
         "constraint": {"rel_up": 1.0, "abs_floor_up": 0.001, "rel_down": 1.0, "abs_floor_down": 0.001}},
    "train/train_rollout_logprob_abs_diff":
        {"steps": "all", "constraint": {"rel_up": 0.5, "abs_floor_up": 0.01, "rel_down": 1.0, "abs_floor_down": 0.01}},
    "train/train_rollout_kl":
        {"steps": "all",
         "constraint": {"rel_up": 1.0, "abs_floor_up": 0.001, "rel_down": 1.0, "abs_floor_down": 0.001}},
    "rollout/raw_reward":
        {"steps": "all", "constraint": {"rel_up": 0.3, "abs_floor_up": 0.05, "rel_down": 0.3, "abs_floor_down": 0.05}},
})


def _number_ok(v: Any) -> bool:
    return is_finite_number(v) and v >= 0


def steps_problems(steps: Any) -> list[str]:
    """Why `steps` is not "last", "all" or a non-empty list of distinct step indices >= 0."""
    if isinstance(steps, str):
        if steps in ("last", "all"):
            return []
        return [f'steps must be "last", "all" or a list of step indices, got {steps!r}']
    if isinstance(steps, list):
        if not steps:
            return ["steps must not be an empty list"]
        if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in steps):
            return [f"steps must list integer step indices >= 0, got {steps!r}"]
        if len(set(steps)) != len(steps):
            return [f"steps lists a step twice: {steps!r}"]
        return []
    return [f'steps must be "last", "all" or a list of step indices, got {steps!r}']


def constraint_problems(constraint: Any) -> list[str]:
    """Why `constraint` is not a dict of known bounds, finite and >= 0, at least one per side."""
    if not isinstance(constraint, dict):
        return [f"constraint must be a dict, got {constraint!r}"]
    problems = []
    bad = [k for k in constraint if k not in CONSTRAINT_KEYS]
    if bad:
        problems.append(f"constraint has unknown key(s) {', '.join(map(repr, bad))}; "
                        f"accepted: {', '.join(CONSTRAINT_KEYS)}")
    for k, v in constraint.items():
        if k in CONSTRAINT_KEYS and not _number_ok(v):
            problems.append(f"constraint[{k!r}] must be a finite number >= 0, got {v!r}")
    if not any(k in constraint for k in ("rel_up", "abs_floor_up")) or not any(
            k in constraint for k in ("rel_down", "abs_floor_down")):
        problems.append("constraint needs at least one bound per side "
                        "(rel_up or abs_floor_up, and rel_down or abs_floor_down)")
    return problems


# -- the `gates:` section ----------------------------------------------------------------------

GATE_DEFAULT = Table("gates.defaults.<metric key>", "The gate a `register_ci_gate` call gets when it omits "
                     "steps or constraint.", (
    Key("steps", Parser('"last" | "all" | list of step indices', lambda s, n, w, c: s.plain(n, w),
                        schema={"anyOf": [{"type": "string", "enum": ["last", "all"]},
                                          {"type": "array", "items": {"type": "integer", "minimum": 0},
                                           "minItems": 1, "uniqueItems": True}]}), REQUIRED,
        "The steps compared."),
    Key("constraint", Parser("mapping of " + " | ".join(CONSTRAINT_KEYS) + " to a number >= 0",
                             lambda s, n, w, c: s.plain(n, w), schema={
                                 "type": "object",
                                 "properties": {key: {"type": "number", "minimum": 0} for key in CONSTRAINT_KEYS},
                                 "additionalProperties": False,
                                 # At least one bound per side.
                                 "allOf": [{"anyOf": [{"required": ["rel_up"]}, {"required": ["abs_floor_up"]}]},
                                           {"anyOf": [{"required": ["rel_down"]},
                                                      {"required": ["abs_floor_down"]}]}]}), REQUIRED,
        "How far a value may move from the reference: at least one bound up and one down."),
))


@dataclass(frozen=True)
class _Configured:
    """The `gates.defaults` entries written in the file, with their key nodes (for errors)."""

    values: dict[str, Any]
    nodes: dict[str, yaml.Node]


def _parse_defaults(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    table = s.mapping(node, where, open_keys=True) or {}
    configured = _Configured({}, {})
    for key, (key_node, value_node) in table.items():
        values = GATE_DEFAULT.read(s, value_node, f"{where}[{key!r}]")
        if values is None or "steps" not in values or "constraint" not in values:
            continue
        checked = {}
        for name, check in (("steps", steps_problems), ("constraint", constraint_problems)):
            plain = values.get(name)
            if plain is INVALID:
                continue
            problems = check(plain)
            for problem in problems:
                s.error(values.value_node(name), values.path(name), problem)
            if not problems:
                checked[name] = plain
        if len(checked) == 2:
            configured.values[key] = checked
            configured.nodes[key] = key_node
    return configured


REQUIREMENT = Table("gates.require[]", "Every test file matching `files` must declare a gate on each key.", (
    Key("files", Parser("glob or non-empty list of globs", lambda s, n, w, c: _parse_files(s, n, w),
                        schema={"anyOf": [{"type": "string"}, fields.strings_schema(non_empty=True)]}), REQUIRED,
        "Test files the requirement applies to."),
    Key("metric_keys", fields.strings("non-empty list of metric keys", non_empty=True), REQUIRED,
        "Keys each file must gate; `{version}` expands to every listed version."),
    Key("versions", fields.strings("non-empty list of " + " | ".join(SESSION_VERSIONS), non_empty=True,
                            check=lambda v: None if v in SESSION_VERSIONS else
                            f"expected one of {', '.join(SESSION_VERSIONS)}, got {v!r}",
                            item={"enum": list(SESSION_VERSIONS)}), (),
        "Session versions `{version}` expands to.", shown_default="none"),
))


def _parse_files(s: Schema, node: yaml.Node, where: str) -> Any:
    if isinstance(node, yaml.ScalarNode):
        one = s.string(node, where, check=fields.check_glob)
        return INVALID if one is INVALID else (one,)
    return s.string_list(node, where, non_empty=True, check=fields.check_glob)


@dataclass(frozen=True)
class GateRequirement:
    """Every test file matching `files` must declare each key, once per version."""

    files: tuple[str, ...]
    metric_keys: tuple[str, ...]
    versions: tuple[SessionVersion, ...] = REQUIREMENT.default("versions")
    line: int | None = None

    def required_keys(self) -> tuple[tuple[str, str | None], ...]:
        """(metric key, version) pairs; version None for keys without `{version}`."""
        out: list[tuple[str, str | None]] = []
        for key in self.metric_keys:
            if "{version}" in key:
                out += [(key.replace("{version}", v), v) for v in self.versions]
            else:
                out.append((key, None))
        return tuple(out)


def _requirement(s: Schema, v: Values) -> GateRequirement | None:
    if "files" not in v or "metric_keys" not in v:
        return None
    keys, versions = v.get("metric_keys"), v.get("versions")
    if keys is not INVALID:
        templated = [k for k in keys if "{version}" in k]
        if templated and versions == ():
            s.error(v.value_node("metric_keys"), v.path("metric_keys"),
                    f"{templated[0]!r} uses {{version}} but no versions are listed",
                    hint="add versions: [v1, v2]", code=codes.INCONSISTENT)
            return None
    if v.any_invalid():
        return None
    return GateRequirement(files=v.get("files"), metric_keys=keys, versions=versions, line=v.line)


def _parse_require(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    require = []
    for i, item in enumerate(s.sequence(node, where) or []):
        values = REQUIREMENT.read(s, item, f"{where}[{i}]")
        rule = None if values is None else _requirement(s, values)
        if rule is not None:
            require.append(rule)
    return tuple(require)


GATES_TABLE = Table("gates", "Metric-history gates: which metrics are recorded and how they are judged.", (
    Key("capture", fields.strings("non-empty list of metric keys", non_empty=True), tuple(DEFAULT_CAPTURE),
        "Metric keys recorded from test runs; a gate can only be on a captured key.",
        shown_default="the standard RL keys and both TITO assistant_text keys"),
    Key("defaults", Parser("mapping of metric key to a gate default", _parse_defaults, GATE_DEFAULT,
                           schema={"type": "object", "additionalProperties": fields.TABLE}),
        FrozenMap(sorted(SHIPPED_DEFAULTS.items())),
        "Gate defaults by metric key, overlaid on the shipped ones; only captured keys keep one.",
        shown_default="shipped defaults for the standard RL and TITO keys"),
    Key("window", fields.integer(1), 10, "Number of recent baselines a value is compared with."),
    Key("min_samples", fields.integer(1), 3, "Fewest baselines a gate needs to judge; at most `window`."),
    Key("reference", fields.choice(REFERENCES), "mean", "How the baselines are reduced to the reference value."),
    Key("require", Parser("list of gate requirements", _parse_require, REQUIREMENT,
                          schema={"type": "array", "items": fields.TABLE}), (),
        "Gates test files must declare.", shown_default="none"),
))


@dataclass(frozen=True)
class GatesConfig:
    capture: tuple[str, ...] = GATES_TABLE.default("capture")
    # Shipped defaults overlaid by the configured ones, sorted by metric key.
    defaults: GateDefaults = GATES_TABLE.default("defaults")
    window: int = GATES_TABLE.default("window")
    min_samples: int = GATES_TABLE.default("min_samples")
    reference: Reference = GATES_TABLE.default("reference")
    require: tuple[GateRequirement, ...] = GATES_TABLE.default("require")
    line: int | None = None


def _build(s: Schema, v: Values) -> GatesConfig:
    capture = v.get("capture")
    configured = v.get("defaults", _Configured({}, {}))
    for key, key_node in configured.nodes.items():
        if capture is not INVALID and key not in capture:
            s.error(key_node, f"gates.defaults[{key!r}]", f"default gate key {key!r} is not captured",
                    hint="add it to gates.capture, or a gate on it could never be evaluated",
                    code=codes.INCONSISTENT)
    merged = {**SHIPPED_DEFAULTS, **fields.freeze(configured.values)}
    # Shipped defaults only matter for captured keys; configured ones were checked above.
    defaults = FrozenMap((k, merged[k]) for k in sorted(merged)
                         if capture is INVALID or k in capture or k in configured.values)
    window, min_samples = v.get("window"), v.get("min_samples")
    if window is not INVALID and min_samples is not INVALID and min_samples > window:
        if "min_samples" in v:
            s.error(v.value_node("min_samples"), "gates.min_samples",
                    f"must not exceed gates.window ({window}), got {min_samples}", code=codes.INCONSISTENT)
        else:  # a small window alone: the default min_samples is what it contradicts
            s.error(v.value_node("window"), "gates.window",
                    f"must be at least gates.min_samples ({min_samples}, the default), got {window}",
                    hint="lower gates.min_samples too", code=codes.INCONSISTENT)
    return GatesConfig(capture=capture, defaults=defaults, window=window, min_samples=min_samples,
                       reference=v.get("reference"), require=v.get("require"), line=v.line)


GATES = fields.mapping_of(GATES_TABLE, _build)
