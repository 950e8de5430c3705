"""`stages:` the CI stages, each a backend and the runners it needs.

- In: the `stages` list of the configuration.
- Out: a tuple of frozen `Stage`s in file order.
- Refused: names outside `[A-Za-z0-9][A-Za-z0-9_.-]*` or used twice, a backend that is
  neither built in nor declared under `backends` (parsed before the stages), an unknown
  runner, an accelerator stage that is not external without `runs_on`, and `paths` (the
  globs a stage owns) on a stage that is not diff-pruned.
- Defaults that depend on the backend: `runner` (pytest for non-accelerator backends such
  as cpu, python otherwise) and `diff_pruned` (true for accelerator stages).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

import yaml

from ci_policy.config import codes, fields
from ci_policy.config.backends import BUILTIN_BACKENDS, backend_parser, backends_of
from ci_policy.config.cadences import CADENCES, Cadence, cadence_list
from ci_policy.config.fields import REQUIRED, Context, Key, Parser, Table, Values
from ci_policy.config.pull_request import gate_labels
from ci_policy.read.names import NAME, NAME_RE
from ci_policy.read.yamlnodes import INVALID, Schema

# A backend name: a built-in one or one declared under `backends` (`Config.backends`).
Backend = str
RunnerKind = Literal["python", "pytest"]
BACKENDS: tuple[Backend, ...] = tuple(BUILTIN_BACKENDS)
RUNNERS: tuple[RunnerKind, ...] = get_args(RunnerKind)


def check_name(value: str) -> str | None:
    if not NAME_RE.fullmatch(value):
        return f"{value!r} is not a valid name (expected {NAME})"
    return None


STAGE = Table("stages[]", "One CI stage; its name is the `suite` of the test files it runs.", (
    Key("name", fields.string("name matching `[A-Za-z0-9][A-Za-z0-9_.-]*`", check_name), REQUIRED,
        "Stage name, unique in the file."),
    Key("backend", backend_parser(), REQUIRED, "Hardware the stage's tests need (see `backends`)."),
    Key("runs_on", fields.strings("non-empty list of runner labels", non_empty=True), (),
        "Runner labels of the stage's jobs; required for accelerator stages that are not external.",
        shown_default="none"),
    Key("partitions", fields.integer(1), 1, "Number of runners the stage's files are split across."),
    Key("runner", fields.choice(RUNNERS), "pytest", "How one test file is run: `python FILE` or `pytest FILE`.",
        shown_default="`pytest` for non-accelerator stages (cpu), `python` otherwise"),
    Key("timeout_per_file", fields.number(0, strict=True), None, "Seconds one test file may run.",
        shown_default="none"),
    Key("diff_pruned", fields.boolean(), False, "The diff may skip the stage when no changed path affects it.",
        shown_default="`true` for accelerator stages, `false` for cpu"),
    Key("external", fields.boolean(), False, "Run by another system: listed, never planned here."),
    Key("requires_labels", gate_labels("non-empty list of raw PR labels"), (),
        "On a pull request, the stage runs only when the PR carries every one of these labels.",
        shown_default="none"),
    Key("cadences", cadence_list(), CADENCES, "The cadences the stage runs in; skipped in the others.",
        shown_default="every cadence"),
    Key("paths", fields.strings("non-empty list of globs", non_empty=True, check=fields.check_glob), (),
        "The paths the stage owns: a change under them affects it, and a path no rule knows does not.",
        shown_default="none: every unknown path affects the stage"),
))


@dataclass(frozen=True)
class Stage:
    name: str
    backend: Backend
    runs_on: tuple[str, ...] = STAGE.default("runs_on")
    partitions: int = STAGE.default("partitions")
    runner: RunnerKind = STAGE.default("runner")
    timeout_per_file: float | None = STAGE.default("timeout_per_file")
    diff_pruned: bool = STAGE.default("diff_pruned")
    external: bool = STAGE.default("external")
    requires_labels: tuple[str, ...] = STAGE.default("requires_labels")
    cadences: tuple[Cadence, ...] = STAGE.default("cadences")
    paths: tuple[str, ...] = STAGE.default("paths")
    line: int | None = None


def _stage(s: Schema, v: Values, index: int, seen: dict[str, int], ctx: Context) -> Stage | None:
    """The stage of one list item, or None when any of its keys is wrong."""
    before = len(s.errors)
    name = v.get("name")
    if name is not INVALID:
        if name in seen:
            s.error(v.value_node("name"), v.path("name"), f"duplicate stage name {name!r} (also stages[{seen[name]}])",
                    code=codes.DUPLICATE)
        seen.setdefault(name, index)
    backend = v.get("backend")
    backends = backends_of(ctx)
    gpu = backend is not INVALID and backends is not INVALID and backends.is_accelerator(backend)
    if gpu and v.get("external") is False and "runs_on" not in v:
        s.error(v.node, v.path("runs_on"), f"required for {backend} stages that are not external",
                hint="list the runner labels, e.g. runs_on: [h200, 4gpu]", code=codes.MISSING_KEY)
    if "paths" in v and v.get("diff_pruned", gpu) is False:
        s.error(v.value_node("paths"), v.path("paths"), "has no effect: the stage is not diff-pruned, so it "
                "runs whenever it has selected tests", hint="set diff_pruned: true, or remove paths",
                code=codes.INCONSISTENT)
    if v.any_invalid() or len(s.errors) != before:
        return None
    return Stage(
        name=name,
        backend=backend,
        runs_on=v.get("runs_on"),
        partitions=v.get("partitions"),
        runner=v.get("runner", "python" if gpu else "pytest"),
        timeout_per_file=v.get("timeout_per_file"),
        diff_pruned=v.get("diff_pruned", gpu),
        external=v.get("external"),
        requires_labels=v.get("requires_labels"),
        cadences=v.get("cadences"),
        paths=v.get("paths"),
        line=v.line,
    )


def parse_stages(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    items = s.sequence(node, where, non_empty=True)
    if items is None:
        return INVALID
    stages: list[Stage] = []
    seen: dict[str, int] = {}
    ok = True
    for i, item in enumerate(items):
        values = STAGE.read(s, item, f"{where}[{i}]", ctx)
        stage = None if values is None else _stage(s, values, i, seen, ctx)
        if stage is None:
            ok = False
        else:
            stages.append(stage)
    return tuple(stages) if ok else INVALID


STAGES = Parser("non-empty list of stages", parse_stages, STAGE)
