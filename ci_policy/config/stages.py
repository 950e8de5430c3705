"""`stages:` the CI stages, each a backend and the runners it needs.

- In: the `stages` list of the configuration.
- Out: a tuple of frozen `Stage`s in file order.
- Identity: a stage is its (backend, name) pair; `name` is the `suite` its registrations name.
  Several backends may configure the same name, each its own stage with its own runners.
  `Stage.key` names the stage everywhere a stage is named (plan, matrix, artifacts,
  `--stage`, `after`): the name itself when one backend configures it, `NAME@BACKEND`
  (`base-b-test-2-gpu-large@rocm`) for each backend of a shared name. `@` is in neither a
  name nor a backend, and is safe in matrix values, artifact and file names and a shell-free
  argument, so the key stays unique and readable.
- Refused: names outside `[A-Za-z0-9][A-Za-z0-9_.-]*` or used twice by one backend, a
  backend that is neither built in nor declared under `backends` (parsed before the
  stages), an unknown runner, an accelerator stage that is not external without `runs_on`
  (or variants), and `paths` (the globs a stage owns) on a stage that is not diff-pruned.
- Defaults that depend on the backend: `runner` (pytest for non-accelerator backends such
  as cpu, python otherwise) and `diff_pruned` (true for accelerator stages).
- Order: `after` names the stages a stage waits for; the stages fall into waves (topological
  levels: a stage without `after` is in wave 0, any other one wave after the latest it names),
  which the reusable pipeline runs one after another, one matrix job each. Refused: an
  unknown, external or own name in `after`, a shared name without its `@BACKEND`, a cycle,
  `after` on an external stage, more than `MAX_WAVES` waves, and more stages in one wave
  than GitHub runs jobs in one matrix (`MAX_MATRIX_JOBS`: each running stage needs a job of
  its own).
- A suite without markers: `command` (an argv list, run without a shell), `working_directory`
  (repo-relative: not absolute, no `..`) and `est_time`; the stage is selected by its `paths`
  (required), runs as one shard, and is diff-pruned. Refused with a command: `external`, no
  `paths` or `est_time`, `diff_pruned: false`, `partitions` other than 1, `runner`; a shell
  string, an empty list, a program that is empty or holds spaces, a NUL byte; and
  `working_directory` or `est_time` without a command.
- Variants: `variants` runs the stage's selected tests as several stages, one per variant,
  each on its own runners (`runs_on`, default the stage's) or image (`REPOSITORY:TAG` in
  `image_build.registry`, default the backend's), with its own `timeout_per_file` and, on
  top of the stage's, its own `cadences` and `requires_labels`. A variant's key is
  `KEY+NAME` (`stage-b-amd+mi355`: `+` is in no name, backend or key); it is in its
  stage's wave and each is a job of that wave's matrix (`after` names the stage, never a
  variant). A variant's image registry is checked by `config.top`, after `image_build`.
  `Stage.planned()` gives the stages a stage plans as (itself, or one per variant).
  Refused: a name used twice in one stage, a variant without `runs_on` of a stage without
  it, a cadence the stage does not run in, and `variants` on an external stage.
- Shards and parallelism: `partitions` is a count or `auto` (sized from the selected
  est_time by `shard_seconds`, at most `max_partitions`); `auto` without `shard_seconds`,
  and `shard_seconds`/`max_partitions` without `auto`, are refused. `max_parallel` is a
  number or `{default, priority, schedule}`; `priority` and `schedule` may only raise
  `default`, and `priority` needs `pull_request.priority_labels`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any, Literal

import yaml

from ci_policy.config import codes, fields
from ci_policy.config.backends import BUILTIN_BACKENDS, backend_parser, backends_of
from ci_policy.config.cadences import CADENCES, Cadence, cadence_list
from ci_policy.config.fields import REQUIRED, Context, Key, Parser, Table, Values
from ci_policy.config.file_run import IMAGE_TAG_RE, check_repo
from ci_policy.config.pull_request import PullRequest, gate_labels
from ci_policy.config.runrules import RUNNERS, RunnerKind
from ci_policy.read.names import NAME, NAME_RE, STAGE_KEY, STAGE_KEY_RE, did_you_mean
from ci_policy.read.numbers import MAX_COUNT, MAX_EST_TIME, MAX_SECONDS, number_range
from ci_policy.read.yamlnodes import INVALID, Schema

# A backend name: a built-in one or one declared under `backends` (`Config.backends`).
Backend = str
BACKENDS: tuple[Backend, ...] = tuple(BUILTIN_BACKENDS)


AUTO = "auto"

# GitHub: "A job matrix can generate a maximum of 256 jobs per workflow run. This limit applies
# to both GitHub-hosted and self-hosted runners." (docs.github.com/en/actions/reference/limits,
# "Job matrix"); a matrix over it fails the run before any of its jobs starts.
MAX_MATRIX_JOBS = 256
GITHUB_MATRIX_RULE = "GitHub runs at most 256 jobs per matrix (Actions limits, \"Job matrix\")"
# The wave jobs of the reusable pipeline (`pr-pipeline.yml`, `stages-0` ...): a job graph is
# fixed when the run starts, so the number of waves a configuration may need is too.
MAX_WAVES = 4


def _parse_partitions(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":str") and node.value == AUTO:
        return AUTO
    return s.number(node, where, minimum=1, maximum=MAX_COUNT, integer=True)


MAX_PARALLEL_TABLE = Table("stages[].max_parallel", "How many shards of the stage run at once, as a mapping.", (
    Key("default", fields.integer(1), REQUIRED, "The limit when nothing raises it."),
    Key("priority", fields.integer(1), None,
        "The limit on a pull request carrying one of `pull_request.priority_labels`.", shown_default="none"),
    Key("schedule", fields.integer(1), None, "The limit on a `schedule` event.", shown_default="none"),
))


@dataclass(frozen=True)
class MaxParallel:
    """`max_parallel`: shards run at once; `priority` and `schedule` raise `default`."""

    default: int
    priority: int | None = MAX_PARALLEL_TABLE.default("priority")
    schedule: int | None = MAX_PARALLEL_TABLE.default("schedule")


def _parse_max_parallel(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    if not isinstance(node, yaml.MappingNode):
        value = s.number(node, where, minimum=1, maximum=MAX_COUNT, integer=True)
        return INVALID if value is INVALID else MaxParallel(default=value)
    values = MAX_PARALLEL_TABLE.read(s, node, where, ctx)
    if values is None or values.any_invalid() or "default" not in values:
        return INVALID
    default = values.get("default")
    ok = True
    for name, when in (("priority", "a priority label"), ("schedule", "a schedule event")):
        raised = values.get(name)
        if raised is not None and raised < default:
            s.error(values.value_node(name), values.path(name),
                    f"must not be below max_parallel.default ({default}), got {raised}: {when} raises the "
                    "limit, never lowers it", hint=f"set it to at least {default}, or lower default",
                    code=codes.INCONSISTENT)
            ok = False
    pull_request = ctx.get("pull_request", PullRequest())
    if values.get("priority") is not None and pull_request is not INVALID and not pull_request.priority_labels:
        s.error(values.value_node("priority"), values.path("priority"),
                "no PR label can raise the limit: pull_request.priority_labels is empty",
                hint="list the labels, e.g. pull_request: {priority_labels: [high priority]}",
                code=codes.INCONSISTENT)
        ok = False
    if not ok:
        return INVALID
    return MaxParallel(default=default, priority=values.get("priority"), schedule=values.get("schedule"))


def _parse_command(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    """An argv list: never a shell string, its program named by a non-empty item without spaces."""
    if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":str"):
        s.error(node, where, "a command is an argv list, never a shell string: ci-policy runs it without a shell",
                hint=f"write one item per argument, e.g. command: [{', '.join(node.value.split()[:4]) or 'pytest'}]",
                kind="wrong-type")
        return INVALID
    items = s.sequence(node, where, non_empty=True)
    if items is None:
        return INVALID
    argv = []
    for i, item in enumerate(items):
        value = s.string(item, f"{where}[{i}]")
        if value is INVALID:
            return INVALID
        if "\0" in value:
            s.error(item, f"{where}[{i}]", "contains a NUL byte, which no argument can carry")
            return INVALID
        argv.append(value)
    program = argv[0]
    if not program.strip() or program != program.strip() or any(c.isspace() for c in program):
        s.error(items[0], f"{where}[0]", f"the program {program!r} is empty or holds spaces: each argument is "
                "an item of its own, no shell splits them",
                hint=f"write command: [{', '.join(program.split()) or 'pytest'}, ...]")
        return INVALID
    return tuple(argv)


def check_name(value: str) -> str | None:
    if not NAME_RE.fullmatch(value):
        return f"{value!r} is not a valid name (expected {NAME})"
    return None


def check_key(value: str) -> str | None:
    if not STAGE_KEY_RE.fullmatch(value):
        return f"{value!r} is not a stage name (expected NAME or NAME@BACKEND, NAME matching {NAME})"
    return None


def _check_image_ref(value: str) -> str | None:
    repository, colon, tag = value.rpartition(":")
    if colon and "/" not in tag and check_repo(repository) is None and IMAGE_TAG_RE.fullmatch(tag):
        return None
    return f"{value!r} is not an image reference REPOSITORY:TAG (e.g. ghcr.io/org/ci-rocm:rocm720)"


VARIANT = Table("stages[].variants[]", "One runner pool or image the stage's tests also run on: a stage with "
                "variants runs as its variants, each with its own jobs and shards of the same selected tests.", (
    Key("name", fields.string("name matching `[A-Za-z0-9][A-Za-z0-9_.-]*`", check_name,
                              item={"pattern": f"^(?:{NAME})$"}), REQUIRED,
        "Variant name, unique in the stage; the variant is named `KEY+NAME` (`stage-b-amd+mi355`) in plans, "
        "`--stage` and the stage matrix."),
    Key("runs_on", fields.strings("non-empty list of runner labels", non_empty=True), (),
        "Runner labels of the variant's jobs.", shown_default="the stage's `runs_on` (required when it has none)"),
    Key("image", fields.string("image reference REPOSITORY:TAG", _check_image_ref), None,
        "The image the variant's jobs run in, as it is (not built by the plan), in `image_build.registry`.",
        shown_default="the backend's image (`images.<backend>`)"),
    Key("timeout_per_file", fields.number(0, MAX_SECONDS, strict=True), None, "Seconds one test file may run.",
        shown_default="the stage's"),
    Key("cadences", cadence_list(), None, "The cadences the variant runs in (of the stage's); skipped in the others.",
        shown_default="the stage's cadences"),
    Key("requires_labels", gate_labels("non-empty list of raw PR labels"), (),
        "On a pull request, the variant runs only when the PR carries every one of these labels too.",
        shown_default="none"),
))


@dataclass(frozen=True)
class Variant:
    """`stages[].variants[]`: one more runner pool or image of a stage."""

    name: str
    runs_on: tuple[str, ...] = VARIANT.default("runs_on")
    image: str | None = VARIANT.default("image")
    timeout_per_file: float | None = VARIANT.default("timeout_per_file")
    cadences: tuple[Cadence, ...] | None = VARIANT.default("cadences")
    requires_labels: tuple[str, ...] = VARIANT.default("requires_labels")
    line: int | None = None
    # Where `image` is written: its registry is checked once `image_build` is read (`config.top`).
    image_line: int | None = field(default=None, compare=False)


def _parse_variants(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    items = s.sequence(node, where, non_empty=True)
    if items is None:
        return INVALID
    variants: list[Variant] = []
    seen: dict[str, int] = {}
    ok = True
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        v = VARIANT.read(s, item, at, ctx)
        if v is None or v.any_invalid() or "name" not in v:
            ok = False
            continue
        name = v.get("name")
        if name in seen:
            s.error(v.value_node("name"), v.path("name"),
                    f"duplicate variant name {name!r} (also {where}[{seen[name]}])",
                    hint="give each variant of the stage its own name", code=codes.DUPLICATE)
            ok = False
            continue
        seen[name] = i
        image_node = v.value_node("image") if "image" in v else None
        variants.append(Variant(name=name, runs_on=v.get("runs_on"), image=v.get("image"),
                                timeout_per_file=v.get("timeout_per_file"), cadences=v.get("cadences"),
                                requires_labels=v.get("requires_labels"), line=v.line,
                                image_line=None if image_node is None else image_node.start_mark.line + 1))
    return tuple(variants) if ok else INVALID


def stage_key(name: str, backend: str) -> str:
    """The key of the stage `name` of `backend` when several backends configure that name."""
    return f"{name}@{backend}"


STAGE = Table("stages[]", "One CI stage; its name is the `suite` of the test files it runs.", (
    Key("name", fields.string("name matching `[A-Za-z0-9][A-Za-z0-9_.-]*`", check_name,
                              item={"pattern": f"^(?:{NAME})$"}), REQUIRED,
        "Stage name, unique per backend: the `suite` its registrations name. A name several backends "
        "configure is one stage per backend, each named `NAME@BACKEND` in plans, `--stage` and `after`."),
    Key("backend", backend_parser(), REQUIRED, "Hardware the stage's tests need (see `backends`)."),
    Key("runs_on", fields.strings("non-empty list of runner labels", non_empty=True), (),
        "Runner labels of the stage's jobs (the default of its variants); required for accelerator stages that are "
        "not external, unless every variant has its own.",
        shown_default="none"),
    Key("partitions", Parser(f"integer in {number_range(1, MAX_COUNT)} | auto", _parse_partitions,
                             schema={"anyOf": [fields.integer_schema(1), {"const": AUTO}]}), 1,
        "Number of runners the stage's files are split across; `auto`: sized by `shard_seconds`."),
    Key("shard_seconds", fields.number(0, MAX_SECONDS, strict=True), None,
        "With `partitions: auto`: selected est_time per shard, so `ceil(sum / shard_seconds)` shards.",
        shown_default="none"),
    Key("max_partitions", fields.integer(1), None, "With `partitions: auto`: the most shards.",
        shown_default="no limit"),
    Key("max_parallel", Parser(f"integer in {number_range(1, MAX_COUNT)} or mapping (below)", _parse_max_parallel,
                               MAX_PARALLEL_TABLE, schema={"anyOf": [fields.integer_schema(1), fields.TABLE]}), None,
        "Shards run at once (`strategy.max-parallel`), from the `max_parallel` output.",
        shown_default="no limit"),
    Key("runner", fields.choice(RUNNERS), "pytest", "How one test file is run: `python FILE` or `pytest FILE`.",
        shown_default="`pytest` for non-accelerator stages (cpu), `python` otherwise", computed_default=True),
    Key("timeout_per_file", fields.number(0, MAX_SECONDS, strict=True), None, "Seconds one test file may run.",
        shown_default="none"),
    Key("diff_pruned", fields.boolean(), False, "The diff may skip the stage when no changed path affects it.",
        shown_default="`true` for accelerator stages and stages with a `command`, `false` for other cpu stages",
        computed_default=True),
    Key("external", fields.boolean(), False, "Run by another system: listed, never planned here."),
    Key("requires_labels", gate_labels("non-empty list of raw PR labels"), (),
        "On a pull request, the stage runs only when the PR carries every one of these labels.",
        shown_default="none"),
    Key("cadences", cadence_list(), CADENCES, "The cadences the stage runs in; skipped in the others.",
        shown_default="every cadence"),
    Key("paths", fields.strings("non-empty list of globs", non_empty=True, check=fields.check_glob), (),
        "The paths the stage owns: a change under them affects it, and a path no rule knows does not.",
        shown_default="none: every unknown path affects the stage"),
    Key("after", fields.strings("non-empty list of stage names", non_empty=True, check=check_key,
                                item={"pattern": f"^(?:{STAGE_KEY})$"}), (),
        f"Stages whose wave runs before this stage's (`NAME@BACKEND` for a name several backends configure): "
        f"the pipeline runs waves in order (at most {MAX_WAVES}) "
        "and skips the later ones when an earlier one failed, unless the PR carries `bypass-fastfail` "
        "or the cadence is not `regular`.", shown_default="none: wave 0"),
    Key("command", Parser("non-empty list of strings (an argv list)", _parse_command,
                          schema={"type": "array", "items": {"type": "string"}, "minItems": 1}), (),
        "A suite without markers: the argv the stage job runs (never through a shell), once, as the stage's "
        "one shard; needs `paths` (the change that selects it) and `est_time`, and no marker may register to "
        "the stage.", shown_default="none: the stage runs its registered test files"),
    Key("working_directory", fields.relative_path(), None,
        "With `command`: the directory it runs in, relative to the repository root.",
        shown_default="the repository root"),
    Key("est_time", fields.number(0, MAX_EST_TIME), None,
        "With `command`: the seconds the command is estimated to run (its shard's est_time; with "
        "`runner.timeout_from_est_time` its timeout).", shown_default="none"),
    Key("variants", Parser("non-empty list of variants (below)", _parse_variants, VARIANT,
                           schema={"type": "array", "items": fields.TABLE, "minItems": 1}), (),
        "Runner pools or images the stage runs on, each a stage of its own (`KEY+NAME`) with the same selected "
        "tests, its own shards and a reason why it runs or is skipped.", shown_default="none: the stage itself"),
))


@dataclass(frozen=True)
class Stage:
    name: str
    backend: Backend
    runs_on: tuple[str, ...] = STAGE.default("runs_on")
    partitions: int | Literal["auto"] = STAGE.default("partitions")
    shard_seconds: float | None = STAGE.default("shard_seconds")
    max_partitions: int | None = STAGE.default("max_partitions")
    max_parallel: MaxParallel | None = STAGE.default("max_parallel")
    runner: RunnerKind = STAGE.default("runner")
    timeout_per_file: float | None = STAGE.default("timeout_per_file")
    diff_pruned: bool = STAGE.default("diff_pruned")
    external: bool = STAGE.default("external")
    requires_labels: tuple[str, ...] = STAGE.default("requires_labels")
    cadences: tuple[Cadence, ...] = STAGE.default("cadences")
    paths: tuple[str, ...] = STAGE.default("paths")
    after: tuple[str, ...] = STAGE.default("after")
    # A suite without markers: the argv its stage job runs, in `working_directory` (None: the root).
    command: tuple[str, ...] = STAGE.default("command")
    working_directory: str | None = STAGE.default("working_directory")
    est_time: float | None = STAGE.default("est_time")
    line: int | None = None
    # The wave the stage runs in (`after`), computed by `parse_stages`.
    wave: int = 0
    variants: tuple[Variant, ...] = STAGE.default("variants")
    # Whether other backends configure the same name (computed by `parse_stages`): then `key`
    # names the backend too.
    shared: bool = False
    # The variant this stage is (`planned()`), with its runs_on and timeout_per_file applied.
    variant: Variant | None = None

    @property
    def base_key(self) -> str:
        """How plans, `--stage` and `after` name the stage: `name`, or `name@backend` when `shared`."""
        return stage_key(self.name, self.backend) if self.shared else self.name

    @property
    def key(self) -> str:
        """`base_key`, and `+VARIANT` for a variant of it."""
        return self.base_key if self.variant is None else f"{self.base_key}+{self.variant.name}"

    @property
    def image(self) -> str | None:
        """The image a variant names (None: the backend's image)."""
        return None if self.variant is None else self.variant.image

    def planned(self) -> tuple[Stage, ...]:
        """The stages this one plans as: itself, or one per variant."""
        return (self,) if not self.variants else tuple(
            replace(self, variants=(), variant=v, runs_on=v.runs_on or self.runs_on,
                    timeout_per_file=self.timeout_per_file if v.timeout_per_file is None else v.timeout_per_file)
            for v in self.variants)

    def matches(self, glob: str) -> bool:
        """Whether a stage-name glob (`selection.rules[].stages`, `cadences.schedules`) names the stage."""
        return any(fnmatchcase(name, glob) for name in (self.name, self.base_key, self.key))


def _stage(s: Schema, v: Values, index: int, seen: dict[tuple[str, str], int], ctx: Context) -> Stage | None:
    """The stage of one list item, or None when any of its keys is wrong."""
    before = len(s.errors)
    name = v.get("name")
    backend = v.get("backend")
    if name is not INVALID and backend is not INVALID:
        if (name, backend) in seen:
            s.error(v.value_node("name"), v.path("name"),
                    f"duplicate stage name {name!r} (also stages[{seen[name, backend]}])", code=codes.DUPLICATE)
        seen.setdefault((name, backend), index)
    backends = backends_of(ctx)
    gpu = backend is not INVALID and backends is not INVALID and backends.is_accelerator(backend)
    # A stage with variants runs on theirs: each variant without runs_on is refused below.
    if gpu and v.get("external") is False and "runs_on" not in v and "variants" not in v:
        s.error(v.node, v.path("runs_on"), f"required for {backend} stages that are not external",
                hint="list the runner labels, e.g. runs_on: [h200, 4gpu]", code=codes.MISSING_KEY)
    # A command that failed to parse is reported; its stage is still one with a command.
    command = "command" in v
    if command and v.get("command") is not INVALID:
        _check_command(s, v, partitions=v.get("partitions"))
    for key in ("working_directory", "est_time"):
        if key in v and "command" not in v:
            s.error(v.value_node(key), v.path(key), "applies only to a stage with a command",
                    hint=f"add command: [...] (the argv the stage runs), or remove {key}", code=codes.INCONSISTENT)
    if "paths" in v and v.get("diff_pruned", gpu) is False and not command:
        s.error(v.value_node("paths"), v.path("paths"), "has no effect: the stage is not diff-pruned, so it "
                "runs whenever it has selected tests", hint="set diff_pruned: true, or remove paths",
                code=codes.INCONSISTENT)
    partitions = v.get("partitions")
    if partitions == AUTO and "shard_seconds" not in v:
        s.error(v.value_node("partitions"), v.path("shard_seconds"), "required with partitions: auto",
                hint="give the selected est_time per shard, e.g. shard_seconds: 1800", code=codes.MISSING_KEY)
    for key in ("shard_seconds", "max_partitions"):
        if key in v and partitions is not INVALID and partitions != AUTO:
            s.error(v.value_node(key), v.path(key), f"applies only with partitions: auto "
                    f"(partitions is {partitions})",
                    hint=f"write partitions: auto to size the shards from est_time, or remove {key}",
                    code=codes.INCONSISTENT)
    variants = v.get("variants")
    if variants and variants is not INVALID:
        _check_variants(s, v, variants)
    if v.any_invalid() or len(s.errors) != before:
        return None
    return Stage(
        name=name,
        backend=backend,
        runs_on=v.get("runs_on"),
        partitions=partitions,
        shard_seconds=v.get("shard_seconds"),
        max_partitions=v.get("max_partitions"),
        max_parallel=v.get("max_parallel"),
        runner=v.get("runner", "python" if gpu else "pytest"),
        timeout_per_file=v.get("timeout_per_file"),
        diff_pruned=v.get("diff_pruned", gpu or command),
        external=v.get("external"),
        requires_labels=v.get("requires_labels"),
        cadences=v.get("cadences"),
        paths=v.get("paths"),
        after=v.get("after"),
        command=v.get("command"),
        working_directory=None if v.get("working_directory") == "." else v.get("working_directory"),
        est_time=v.get("est_time"),
        variants=variants,
        line=v.line,
    )


def _check_command(s: Schema, v: Values, partitions: Any) -> None:
    """What a stage with a command needs: its paths and est_time; what it cannot have with it."""
    at = v.value_node("command")
    if v.get("external") is True:
        s.error(v.value_node("external"), v.path("external"), "a stage with a command is run here, by its "
                "stage job; an external stage is run by another system", hint="remove external: true to plan "
                "the command here, or remove command to only list the stage", code=codes.INCONSISTENT)
    if "paths" not in v:
        s.error(at, v.path("paths"), "required with command: the paths a change must touch to select the "
                "command's suite (no registered test file selects it)",
                hint="list the globs the suite owns, e.g. paths: [sgl-kernel/**]", code=codes.MISSING_KEY)
    if "est_time" not in v:
        s.error(at, v.path("est_time"), "required with command: the seconds the command is estimated to run "
                "(its shard's est_time)", hint="e.g. est_time: 1800", code=codes.MISSING_KEY)
    if v.get("diff_pruned", True) is False:
        s.error(v.value_node("diff_pruned"), v.path("diff_pruned"), "a stage with a command is selected by the "
                "changes under its paths, so it is diff-pruned", hint="remove diff_pruned: false",
                code=codes.INCONSISTENT)
    if "partitions" in v and partitions is not INVALID and partitions != 1:
        s.error(v.value_node("partitions"), v.path("partitions"), f"a command runs once, as one shard "
                f"(partitions is {partitions})", hint="remove partitions, or split the suite into several stages, "
                "each with a command of its own", code=codes.INCONSISTENT)
    for key in ("runner",):
        if key in v:
            s.error(v.value_node(key), v.path(key), "has no effect with command: the stage runs its command, "
                    "not test files", hint=f"remove {key}", code=codes.INCONSISTENT)
def _check_variants(s: Schema, v: Values, variants: tuple[Variant, ...]) -> None:
    """What a stage's variants may not be: of an external stage, without runners where the stage
    has none, or in a cadence the stage itself does not run in."""
    items = v.value_node("variants").value
    if v.get("external") is True:
        s.error(v.value_node("variants"), v.path("variants"), "has no effect: an external stage is run by another "
                "system, never planned here", hint="remove variants, or external", code=codes.INCONSISTENT)
        return
    stage_cadences = v.get("cadences")
    for j, variant in enumerate(variants):
        at = f"{v.path('variants')}[{j}]"
        if not variant.runs_on and "runs_on" not in v:
            s.error(items[j], f"{at}.runs_on", "required: the stage has no runs_on for its variants to default to",
                    hint="list the variant's runner labels, e.g. runs_on: [mi355], or give the stage runs_on",
                    code=codes.MISSING_KEY)
        outside = [c for c in variant.cadences or () if stage_cadences is not INVALID and c not in stage_cadences]
        if outside:
            s.error(items[j], f"{at}.cadences", f"{', '.join(outside)} is not a cadence of the stage "
                    f"({', '.join(stage_cadences)}), so the variant would never run in it",
                    hint="list cadences of the stage, or add them to the stage's cadences", code=codes.INCONSISTENT)


def parse_stages(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    items = s.sequence(node, where, non_empty=True)
    if items is None:
        return INVALID
    stages: list[Stage] = []
    read: list[Values] = []
    seen: dict[tuple[str, str], int] = {}
    ok = True
    for i, item in enumerate(items):
        values = STAGE.read(s, item, f"{where}[{i}]", ctx)
        stage = None if values is None else _stage(s, values, i, seen, ctx)
        if stage is None or values is None:
            ok = False
        else:
            stages.append(stage)
            read.append(values)
    if not ok:
        return INVALID
    backends_of_name: dict[str, set[str]] = {}
    for st in stages:
        backends_of_name.setdefault(st.name, set()).add(st.backend)
    stages = [replace(st, shared=len(backends_of_name[st.name]) > 1) for st in stages]
    waves = _waves(s, node, where, stages, read, backends_of_name)
    return INVALID if waves is None else tuple(replace(st, wave=waves[st.key]) for st in stages)


def _after_node(v: Values, index: int) -> yaml.Node:
    node = v.value_node("after")
    return node.value[index] if isinstance(node, yaml.SequenceNode) else node


def _waves(s: Schema, node: yaml.Node, where: str, stages: list[Stage], read: list[Values],
           backends_of_name: dict[str, set[str]]) -> dict[str, int] | None:
    """Each stage's wave (by key), or None after recording why `after` cannot order the stages."""
    before = len(s.errors)
    by_name = {st.key: (st, v) for st, v in zip(stages, read, strict=True)}
    for st, v in by_name.values():
        if st.after and st.external:
            s.error(v.value_node("after"), v.path("after"), "has no effect: an external stage is run by "
                    "another system, never by this pipeline's waves", hint="remove after",
                    code=codes.INCONSISTENT)
        for j, name in enumerate(st.after):
            other = by_name.get(name)
            shared = sorted(backends_of_name.get(name, ()))
            base, plus, _variant = name.partition("+")
            if other is None and plus and base in by_name:
                s.error(_after_node(v, j), f"{v.path('after')}[{j}]", f"names the variant {name!r}: a stage waits "
                        f"for every variant of {base!r}, which share its wave",
                        hint=f"write {base!r}", code=codes.AFTER_UNKNOWN)
            elif other is None and len(shared) > 1:
                keys = [stage_key(name, b) for b in shared]
                s.error(_after_node(v, j), f"{v.path('after')}[{j}]",
                        f"{name!r} names {len(shared)} stages, one per backend ({', '.join(shared)})",
                        hint=f"name the one to wait for: {' or '.join(keys)} (or list each)",
                        code=codes.AFTER_UNKNOWN)
            elif other is None:
                s.error(_after_node(v, j), f"{v.path('after')}[{j}]",
                        f"names no stage: {name!r}{did_you_mean(name, by_name)}",
                        hint=f"name stages of this file: {', '.join(by_name)}",
                        code=codes.AFTER_UNKNOWN)
            elif other[0].external:
                s.error(_after_node(v, j), f"{v.path('after')}[{j}]", f"names the external stage {name!r}: "
                        "this pipeline does not run it, so no wave can wait for it",
                        hint=f"remove {name!r} from after", code=codes.AFTER_UNKNOWN)
    if len(s.errors) != before:
        return None
    # Topological levels, in file order; a stage met again while its own `after` is being
    # followed closes a cycle, reported once, at the first stage of it in file order.
    waves: dict[str, int] = {}
    path: list[str] = []

    def wave(name: str) -> int | None:
        if name in waves:
            return waves[name]
        if name in path:
            nodes = path[path.index(name):]
            first = min(nodes, key=lambda n: stages.index(by_name[n][0]))
            k = nodes.index(first)
            ring = nodes[k:] + nodes[:k]
            st, v = by_name[first]
            at = st.after.index(ring[1] if len(ring) > 1 else first)
            s.error(_after_node(v, at), f"{v.path('after')}[{at}]", "the stages wait for each other in a "
                    f"cycle: {' -> '.join([*ring, first])}",
                    hint="remove one of these names from its stage's after", code=codes.AFTER_CYCLE)
            return None
        path.append(name)
        levels = [wave(a) for a in by_name[name][0].after]
        path.pop()
        if any(level is None for level in levels):
            return None
        waves[name] = 1 + max((level for level in levels if level is not None), default=-1)
        return waves[name]

    for st in stages:
        if wave(st.key) is None:
            return None
    for st, v in by_name.values():
        if waves[st.key] >= MAX_WAVES:
            s.error(v.value_node("after"), v.path("after"), f"puts stage {st.key!r} in wave {waves[st.key]}; "
                    f"the pipeline runs at most {MAX_WAVES} waves (waves 0 to {MAX_WAVES - 1}), one job each, "
                    "fixed before the run starts", hint="wait for fewer stages in a row: let a stage share a "
                    "wave with another one it does not need to follow", code=codes.GITHUB_LIMIT)
            return None
    for level in range(MAX_WAVES):
        # Each variant is a stage of the wave: a job of its own in the wave's matrix.
        members = [p.key for st in stages if waves[st.key] == level and not st.external for p in st.planned()]
        if len(members) > MAX_MATRIX_JOBS:
            counted = " (each variant a stage)" if any(st.variants for st in stages if waves[st.key] == level) else ""
            s.error(node, where, f"wave {level} holds {len(members)} stages{counted} that are not external, each "
                    f"of which needs a job of its own; {GITHUB_MATRIX_RULE}, and a wave is one matrix",
                    hint="put some of these stages in a later wave with after, or merge stages",
                    code=codes.GITHUB_LIMIT)
            return None
    return waves


STAGES = Parser("non-empty list of stages", parse_stages, STAGE,
                schema={"type": "array", "items": fields.TABLE, "minItems": 1})
