"""`register_ci_gate(...)` declarations, read from test source with `ast`.

- In: a `Scan` of one test file (module-level marker calls already located).
- Out: frozen `GateDeclaration`s, recording which fields were written literally.
- Grammar: `register_ci_gate(*, metric_key, steps=None, constraint=None, enforce=False,
  allowlist_reason=None)`, keyword-only literal arguments, module level only.
- Refused: positional arguments, unknown or missing arguments, non-literals, and values
  of the wrong type: `metric_key` a non-empty string; `steps` "last", "all" or a
  non-empty list of distinct integers >= 0; `constraint` a dict of `rel_up`,
  `abs_floor_up`, `rel_down`, `abs_floor_down` with finite numbers >= 0;
  `enforce` a bool; `allowlist_reason` a string or None.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ci_policy.config.gates import constraint_problems, steps_problems
from ci_policy.read.markers import GATE_MARKER, Arguments, MarkerCall, Scan, bind

KEYWORDS = ("metric_key", "steps", "constraint", "enforce", "allowlist_reason")


@dataclass(frozen=True)
class GateDeclaration:
    file: str
    line: int
    col: int
    metric_key: str
    steps: Any = None
    constraint: tuple[tuple[str, float], ...] | None = None
    enforce: bool = False
    allowlist_reason: str | None = None
    written: tuple[str, ...] = ()

    def written_json(self) -> str:
        """Canonical JSON of the literals as written (part of a stored value's identity)."""
        return json.dumps(
            {"steps": self.steps if "steps" in self.written else None,
             "constraint": (dict(self.constraint) if "constraint" in self.written
                            and self.constraint is not None else None)},
            sort_keys=True, separators=(",", ":"))


def gates_of(scan: Scan) -> list[GateDeclaration]:
    out: list[GateDeclaration] = []
    for mc in scan.calls:
        if mc.marker != GATE_MARKER:
            continue
        args = bind(scan, mc, (), KEYWORDS, required=("metric_key",))
        if args is None:
            continue
        decl = _declaration(scan, mc, args)
        if decl is not None:
            out.append(decl)
    return out


def _declaration(scan: Scan, mc: MarkerCall, args: Arguments) -> GateDeclaration | None:
    values, nodes = args.values, args.nodes
    name = GATE_MARKER
    before = len(scan.errors)

    key = values["metric_key"]
    if not isinstance(key, str) or not key.strip():
        scan.error(nodes["metric_key"], "CP501", f"{name}: metric_key must be a non-empty string, got {key!r}",
                   hint='write e.g. metric_key="train/grad_norm"')

    steps = values.get("steps")
    if steps is not None:
        for problem in steps_problems(steps):
            scan.error(nodes["steps"], "CP502", f"{name}: {problem}")

    constraint = values.get("constraint")
    constraint_items = None
    if constraint is not None:
        problems = constraint_problems(constraint)
        for problem in problems:
            hint = ('write e.g. constraint={"rel_up": 0.5, "abs_floor_up": 0.1, "rel_down": 0.5}'
                    if not isinstance(constraint, dict) else None)
            scan.error(nodes["constraint"], "CP503", f"{name}: {problem}", hint=hint)
        if not problems:
            constraint_items = tuple(sorted(constraint.items()))

    enforce = values.get("enforce", False)
    if not isinstance(enforce, bool):
        scan.error(nodes["enforce"], "CP504", f"{name}: enforce must be True or False, got {enforce!r}")
    reason = values.get("allowlist_reason")
    if reason is not None and not isinstance(reason, str):
        scan.error(nodes["allowlist_reason"], "CP505",
                   f"{name}: allowlist_reason must be a string or None, got {reason!r}")

    if len(scan.errors) != before:
        return None
    return GateDeclaration(file=scan.path, line=mc.line, col=mc.col, metric_key=key, steps=steps,
                           constraint=constraint_items, enforce=enforce, allowlist_reason=reason,
                           written=tuple(k for k in KEYWORDS if k in values))
