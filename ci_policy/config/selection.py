"""`selection:` how the diff of a pull request selects and prunes stages.

- In: the `selection` mapping.
- Out: a frozen `Selection`: globs of paths that never need a GPU, path rules that
  select labels, and whether explicitly requested labels still run pruned stages.
- Refused: invalid globs, a rule without paths or labels, an unknown explicit mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from ci_policy.config import fields
from ci_policy.config.fields import REQUIRED, Key, Table, Values
from ci_policy.read.yamlnodes import Schema

ExplicitMode = Literal["run", "prune"]
EXPLICIT_MODES: tuple[ExplicitMode, ...] = get_args(ExplicitMode)

RULE = Table("selection.rules[]", "Changed paths matching `paths` affect (and select) `labels`.", (
    Key("paths", fields.strings("non-empty list of globs", non_empty=True, check=fields.check_glob), REQUIRED,
        "Globs of changed paths."),
    Key("labels", fields.strings("non-empty list of labels", non_empty=True), REQUIRED,
        "Labels those paths affect."),
))


@dataclass(frozen=True)
class Rule:
    """A path rule: changed paths matching `paths` affect (and auto-select) `labels`."""

    paths: tuple[str, ...]
    labels: tuple[str, ...]
    line: int | None = None


SELECTION_TABLE = Table("selection", "How the diff prunes `diff_pruned` stages.", (
    Key("no_gpu_paths", fields.strings("list of globs", check=fields.check_glob), (),
        "Changed paths that never need a GPU stage.", shown_default="none"),
    Key("rules", fields.list_of(RULE, lambda v: Rule(paths=v.get("paths"), labels=v.get("labels"), line=v.line),
                                "list of path rules"), (),
        "Path rules: changed paths that select labels.", shown_default="none"),
    Key("explicit", fields.choice(EXPLICIT_MODES), "run",
        "`run`: labels and scopes asked for explicitly run their stages in full; `prune`: the diff prunes "
        "them too."),
))


@dataclass(frozen=True)
class Selection:
    no_gpu_paths: tuple[str, ...] = SELECTION_TABLE.default("no_gpu_paths")
    rules: tuple[Rule, ...] = SELECTION_TABLE.default("rules")
    explicit: ExplicitMode = SELECTION_TABLE.default("explicit")
    line: int | None = None


def _build(s: Schema, v: Values) -> Selection:
    return Selection(no_gpu_paths=v.get("no_gpu_paths"), rules=v.get("rules"), explicit=v.get("explicit"),
                     line=v.line)


SELECTION = fields.mapping_of(SELECTION_TABLE, _build)
