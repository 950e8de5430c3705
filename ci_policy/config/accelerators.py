"""`accelerators:` how many accelerators a stage's runner holds, and what an hour of it costs.

- In: the optional `accelerators` list; each entry names a `backend`, a `runs_on` runner label,
  or both, with `gpus` (the accelerators of one such runner) and an optional `cost_per_hour`
  (what one hour of that runner costs, in the repository's own currency).
- Out: a tuple of frozen `Accelerator`s in file order; `Accelerator.matches(stage)` and
  `accelerator_of(entries, stage)` pick the entry for a planned stage: the most specific match
  wins (backend and label, then a label, then a backend), and among equally specific ones the
  first in the file.
- A stage of an accelerator backend that no entry matches counts `DEFAULT_GPUS` (1) accelerator
  per runner, without cost; a stage of a non-accelerator backend (cpu) counts none.
- Refused: located, with a hint: an entry with neither `backend` nor `runs_on` (CP103), a
  backend that is not an accelerator (CP108), an unknown backend, `gpus` below 1 or a negative
  cost (CP105), two entries matching the same way (CP106).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ci_policy.config import codes, fields
from ci_policy.config.backends import backend_parser, backends_of
from ci_policy.config.fields import TABLE, Context, Key, Parser, Table
from ci_policy.config.stages import Stage
from ci_policy.read.yamlnodes import INVALID, Schema

DEFAULT_GPUS = 1
MAX_GPUS = 1024

ACCELERATOR = Table("accelerators[]", "The accelerators of the runners a backend or a runner label names. "
                    "A stage takes the most specific match (backend and label, label, backend; the first "
                    "of equals); an accelerator stage without one counts 1 accelerator per runner.", (
    Key("backend", backend_parser(), None, "The stages of this accelerator backend.", shown_default="any backend"),
    Key("runs_on", fields.string("runner label", lambda v: None if v.strip() == v and v else
                                 f"{v!r} is not a runner label (empty or surrounded by spaces)",
                                 item={"minLength": 1, "pattern": "^\\S(?:.*\\S)?$"}), None,
        "The stages whose `runs_on` holds this label.", shown_default="any runner"),
    Key("gpus", fields.integer(1, MAX_GPUS), fields.REQUIRED, "Accelerators (GPUs) of one such runner."),
    Key("cost_per_hour", fields.number(0.0), None,
        "What one hour of one such runner costs (any currency); the plan shows costs when given.",
        shown_default="none"),
))


@dataclass(frozen=True, kw_only=True)
class Accelerator:
    backend: str | None = ACCELERATOR.default("backend")
    runs_on: str | None = ACCELERATOR.default("runs_on")
    gpus: int
    cost_per_hour: float | None = ACCELERATOR.default("cost_per_hour")
    line: int | None = None

    @property
    def specificity(self) -> int:
        return 2 * (self.runs_on is not None) + (self.backend is not None)

    def matches(self, stage: Stage) -> bool:
        return ((self.backend is None or self.backend == stage.backend)
                and (self.runs_on is None or self.runs_on in stage.runs_on))

    def describe(self) -> str:
        """`backend cuda, runs_on h200`: what the entry matches, as the configuration says it."""
        return ", ".join(part for part in (f"backend {self.backend}" if self.backend else "",
                                           f"runs_on {self.runs_on}" if self.runs_on else "") if part)


def accelerator_of(entries: tuple[Accelerator, ...], stage: Stage) -> Accelerator | None:
    """The entry that counts `stage`'s accelerators, or None when none matches."""
    best: Accelerator | None = None
    for entry in entries:
        if entry.matches(stage) and (best is None or entry.specificity > best.specificity):
            best = entry
    return best


def parse_accelerators(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    backends = backends_of(ctx)
    out: list[Accelerator] = []
    seen: dict[tuple[str | None, str | None], int] = {}
    for i, item in enumerate(s.sequence(node, where) or []):
        at = f"{where}[{i}]"
        values = ACCELERATOR.read(s, item, at, ctx)
        if values is None or values.any_invalid() or "gpus" not in values:
            continue
        backend, runs_on = values.get("backend"), values.get("runs_on")
        if backend is None and runs_on is None:
            s.error(item, at, "an accelerators entry names neither a backend nor a runs_on label",
                    hint="add `backend: cuda` (every stage of that backend) or `runs_on: LABEL` "
                         "(the stages whose runs_on holds it)", code=codes.MISSING_KEY)
            continue
        if backend is not None and backends is not INVALID and not backends.is_accelerator(backend):
            s.error(values.value_node("backend"), values.path("backend"),
                    f"{backend} is not an accelerator backend: its stages count no accelerator hours",
                    hint="name an accelerator backend (cuda, rocm or one declared with accelerator: true)",
                    code=codes.INCONSISTENT)
            continue
        if (backend, runs_on) in seen:
            s.error(item, at, f"the entry matches the same stages as accelerators[{seen[backend, runs_on]}]",
                    hint="keep one entry per backend and runner label", code=codes.DUPLICATE)
            continue
        seen[backend, runs_on] = i
        out.append(Accelerator(backend=backend, runs_on=runs_on, gpus=values.get("gpus"),
                               cost_per_hour=values.get("cost_per_hour"), line=values.line))
    return tuple(out)


ACCELERATORS = Parser("list of accelerator entries", parse_accelerators, ACCELERATOR,
                      schema={"type": "array", "items": TABLE})
