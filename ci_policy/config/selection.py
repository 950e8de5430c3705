"""`selection:` how the diff of a pull request selects and prunes stages.

- In: the `selection` mapping, and the stages parsed before it (rules may name them).
- Out: a frozen `Selection`: globs of paths that never need a GPU, path rules that
  select labels and/or affect stages (stage-name globs), and whether explicitly requested
  labels still run pruned stages, and what decides for a changed registered test file
  (`changed_tests`).
- Refused: invalid globs, a rule without paths, a rule with neither labels nor stages, a
  stage-name glob that matches no configured stage, an unknown explicit mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

import yaml

from ci_policy.config import codes, fields
from ci_policy.config.fields import REQUIRED, Context, Key, Parser, Table, Values
from ci_policy.read.yamlnodes import INVALID, Schema

ExplicitMode = Literal["run", "prune"]
EXPLICIT_MODES: tuple[ExplicitMode, ...] = get_args(ExplicitMode)
ChangedTests = Literal["own_stages", "paths", "both"]
CHANGED_TESTS: tuple[ChangedTests, ...] = get_args(ChangedTests)


def _parse_stage_globs(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    globs = s.string_list(node, where, non_empty=True)
    stages = ctx.get("stages")
    if globs is INVALID or not isinstance(stages, tuple):  # stages invalid: reported there
        return globs
    for i, glob in enumerate(globs):
        if not any(stage.matches(glob) for stage in stages):
            s.error(node.value[i], f"{where}[{i}]", f"{glob!r} matches no configured stage",
                    hint="name a stage, or a glob such as 'jit-kernel-*' (fnmatch: `*`, `?`, `[...]`)",
                    code=codes.INVALID_VALUE)
            return INVALID
    return globs


RULE = Table("selection.rules[]", "Changed paths matching `paths` affect (and select) `labels`, and affect "
             "`stages`.", (
    Key("paths", fields.strings("non-empty list of globs", non_empty=True, check=fields.check_glob), REQUIRED,
        "Globs of changed paths."),
    Key("labels", fields.strings("non-empty list of labels", non_empty=True), (),
        "Labels those paths affect and select.", shown_default="none (then `stages` is required)"),
    Key("stages", Parser("non-empty list of stage-name globs", _parse_stage_globs,
                         schema=fields.strings_schema(non_empty=True)), (),
        "Stages those paths affect (`jit-kernel-*`); their tests are still selected by label.",
        shown_default="none (then `labels` is required)"),
))


@dataclass(frozen=True)
class Rule:
    """A path rule: changed paths matching `paths` affect (and auto-select) `labels`, and affect `stages`."""

    paths: tuple[str, ...]
    labels: tuple[str, ...] = ()
    # Stage-name globs (fnmatch), e.g. "jit-kernel-*".
    stages: tuple[str, ...] = ()
    line: int | None = None


def _parse_rules(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    rules = []
    for i, item in enumerate(s.sequence(node, where) or []):
        at = f"{where}[{i}]"
        values = RULE.read(s, item, at, ctx)
        if values is None or values.any_invalid() or "paths" not in values:
            continue
        if "labels" not in values and "stages" not in values:
            s.error(item, at, "a rule needs labels or stages: the paths would affect nothing",
                    hint="add labels: [...] (tests to select) or stages: [...] (stages to affect)",
                    code=codes.MISSING_KEY)
            continue
        rules.append(Rule(paths=values.get("paths"), labels=values.get("labels"), stages=values.get("stages"),
                          line=values.line))
    return tuple(rules)


SELECTION_TABLE = Table("selection", "How the diff prunes `diff_pruned` stages.", (
    Key("no_gpu_paths", fields.strings("list of globs", check=fields.check_glob), (),
        "Changed paths that never need a GPU stage.", shown_default="none"),
    Key("rules", Parser("list of path rules", _parse_rules, RULE, schema={
        # A rule needs labels or stages.
        "type": "array", "items": fields.table_object(anyOf=[{"required": ["labels"]}, {"required": ["stages"]}])}),
        (),
        "Path rules: changed paths that select labels or affect stages.", shown_default="none"),
    Key("explicit", fields.choice(EXPLICIT_MODES), "run",
        "`run`: labels and scopes asked for explicitly run their stages in full; `prune`: the diff prunes "
        "them too."),
    Key("changed_tests", fields.choice(CHANGED_TESTS), "own_stages",
        "What a changed registered test file affects: `own_stages`, the stages it registers for (before any "
        "path rule); `paths`, what `rules` and stage `paths` select for it, as for any other path; `both`, "
        "the union."),
))


@dataclass(frozen=True)
class Selection:
    no_gpu_paths: tuple[str, ...] = SELECTION_TABLE.default("no_gpu_paths")
    rules: tuple[Rule, ...] = SELECTION_TABLE.default("rules")
    explicit: ExplicitMode = SELECTION_TABLE.default("explicit")
    changed_tests: ChangedTests = SELECTION_TABLE.default("changed_tests")
    line: int | None = None


def _build(s: Schema, v: Values) -> Selection:
    return Selection(no_gpu_paths=v.get("no_gpu_paths"), rules=v.get("rules"), explicit=v.get("explicit"),
                     changed_tests=v.get("changed_tests"), line=v.line)


SELECTION = fields.mapping_of(SELECTION_TABLE, _build)
