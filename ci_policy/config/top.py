"""The top level of `.github/ci-policy.yml`: the `Config` and `parse_config`.

- In: configuration text and its display path.
- Out: a frozen `Config`, or `InputErrors` listing every problem, each located at
  `file:line:col` with its field path and a diagnostic code (`ci_policy.config.codes`).
- Refused: an empty file, a version other than 1, a `requires` specifier the installed
  ci_policy does not satisfy or longer than `MAX_REQUIRES` characters (checked before it is
  parsed), and whatever a section refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from ci_policy import __version__
from ci_policy.config import codes, fields
from ci_policy.config.accelerators import ACCELERATORS, Accelerator
from ci_policy.config.backends import BACKENDS_SECTION, Backends
from ci_policy.config.cadences import CADENCES_SECTION, Cadences
from ci_policy.config.discovery import DISCOVERY, Discovery
from ci_policy.config.fields import REQUIRED, Context, FrozenMap, Key, Parser, Table
from ci_policy.config.file_run import FILE_RUN, FileRunConfig
from ci_policy.config.gates import GATES, GatesConfig
from ci_policy.config.images import IMAGE_BUILDER, IMAGES, ImageBuild, ImageBuilder, registry_of
from ci_policy.config.lint import LINT, LintConfig
from ci_policy.config.markers import MARKERS, Markers
from ci_policy.config.path import DEFAULT_CONFIG
from ci_policy.config.pull_request import PULL_REQUEST, PullRequest
from ci_policy.config.quarantine import QUARANTINE, Quarantine
from ci_policy.config.runner import RUNNER, RunnerConfig
from ci_policy.config.scopes import SCOPES, Scope
from ci_policy.config.selection import SELECTION, Selection
from ci_policy.config.stages import STAGES, Backend, Stage
from ci_policy.config.tune import TUNE, TuneConfig
from ci_policy.errors import InputError, InputErrors
from ci_policy.read.yamlnodes import INVALID, Schema, compose

VERSION = 1


def _parse_version(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    version = s.scalar(node, where, int)
    if version is not INVALID and version != VERSION:
        s.error(node, where, f"unsupported version {version}; this ci_policy reads version {VERSION}",
                code=codes.UNSUPPORTED)
        return INVALID
    return version


# A real specifier (`>=0.1,<2`) is a few dozen characters.
MAX_REQUIRES = 200


def _parse_requires(s: Schema, node: yaml.Node, where: str, ctx: Context) -> Any:
    requires = s.string(node, where)
    if requires is INVALID:
        return INVALID
    if len(requires) > MAX_REQUIRES:
        # Checked before parsing: `packaging` converts each release segment with int(), which
        # refuses (ValueError) a segment of more than 4,300 digits.
        s.error(node, where, f"the version specifier has {len(requires)} characters, more than {MAX_REQUIRES}",
                hint="write a PEP 440 specifier such as '>=0.1'")
        return INVALID
    # Imported here: most configurations have no `requires`, and every command reading the
    # configuration would pay for `packaging` (5 ms) at its start
    # (test_a_configuration_without_requires_imports_no_packaging).
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import Version

    try:
        if not requires.strip():  # SpecifierSet("") would accept every version
            raise InvalidSpecifier(requires)
        spec = SpecifierSet(requires)
    except InvalidSpecifier:
        s.error(node, where, f"{requires!r} is not a valid version specifier",
                hint="write a PEP 440 specifier such as '>=0.1'")
        return requires
    if not spec.contains(Version(__version__), prereleases=True):
        s.error(node, where, f"this repository requires ci_policy {requires}, "
                f"but ci_policy {__version__} is installed",
                hint=f"install a ci_policy version matching {requires}", code=codes.UNSUPPORTED)
    return requires


# Table order is parse order: `markers` maps names to the `backends` declared before it,
# `stages` check their backend against them, `discovery` checks its implicit roots against
# the stages, `cadences` its schedules against the backends and stages, and `file_run` and
# `images` their keys against the backends; a stage's `max_parallel.priority` needs the
# `pull_request` labels before it; `images` their registry against `image_build`; `quarantine`
# its entries' stages against the stages.
TOP = Table(DEFAULT_CONFIG, "The top level of the file.", (
    Key("version", Parser(f"integer {VERSION}", _parse_version, schema={"type": "integer", "const": VERSION}),
        REQUIRED, "The format version of this file."),
    Key("requires", Parser("PEP 440 version specifier", _parse_requires,
                           schema={"type": "string", "minLength": 1, "maxLength": MAX_REQUIRES}), None,
        "The ci_policy versions this repository works with, e.g. `>=0.1`.", shown_default="any version"),
    Key("labels_file", fields.relative_path(), "labels.py", "The label registry, repo-relative."),
    Key("gpu_requires_labels", fields.boolean(), True,
        "A test file of an accelerator stage must name at least one label."),
    Key("backends", BACKENDS_SECTION, Backends(), "Backends beyond the built-in cpu, cuda and rocm.",
        shown_default="cpu, cuda, rocm"),
    Key("markers", MARKERS, Markers(), "The marker dialect: more marker names, extra arguments, a suite template.",
        shown_default="the built-in markers"),
    Key("pull_request", PULL_REQUEST, PullRequest(),
        "What a pull request must carry before its stages run, and which PR labels raise parallelism.",
        shown_default="no label gate, no priority labels"),
    Key("stages", STAGES, REQUIRED, "The CI stages, at least one."),
    Key("discovery", DISCOVERY, REQUIRED, "Where test files are found."),
    Key("cadences", CADENCES_SECTION, Cadences(), "Which scheduled run is which cadence.",
        shown_default="no schedules"),
    Key("scopes", SCOPES, (), "Broad-scope PR labels (`run-ci-all`).", shown_default="none"),
    Key("selection", SELECTION, Selection(), "How the diff selects and prunes stages.",
        shown_default="the defaults below"),
    Key("runner", RUNNER, RunnerConfig(), "How `ci-policy run` retries, times out and stops files.",
        shown_default="the defaults below"),
    Key("gates", GATES, GatesConfig(), "Metric-history gates.", shown_default="the defaults below"),
    Key("file_run", FILE_RUN, FileRunConfig(), "How `/rerun-test` places one file.",
        shown_default="the defaults below"),
    Key("image_build", IMAGE_BUILDER, ImageBuilder(), "Where the CI images are built and pushed.",
        shown_default="the defaults below"),
    Key("images", IMAGES, FrozenMap(), "The CI image of each backend, built by the plan when its stages run.",
        shown_default="none: stages run without a container"),
    Key("accelerators", ACCELERATORS, (), "The accelerators (and cost) of each backend's or runner label's "
        "runners, for the plan's accelerator hours.", shown_default="1 accelerator per runner of an accelerator stage"),
    Key("tune", TUNE, TuneConfig(), "How `ci-policy tune` turns timings into est_time proposals.",
        shown_default="the defaults below"),
    Key("estimates_file", fields.relative_path(), None, "est_time overrides written by `ci-policy tune --apply`.",
        shown_default="none"),
    Key("lint", LINT, LintConfig(), "Diagnostics accepted under some paths (inline: `# ci-policy: ignore[CODE]`), "
        "and the workflows lint reads.", shown_default="nothing ignored, `.github/workflows` read"),
    Key("quarantine", QUARANTINE, (), "Test files whose failures fail nothing until a date: each still runs, "
        "its failure a warning.", shown_default="none"),
))


@dataclass(frozen=True)
class Config:
    path: str
    version: int
    discovery: Discovery
    stages: tuple[Stage, ...]
    requires: str | None = TOP.default("requires")
    labels_file: str = TOP.default("labels_file")
    gpu_requires_labels: bool = TOP.default("gpu_requires_labels")
    backends: Backends = TOP.default("backends")
    markers: Markers = TOP.default("markers")
    pull_request: PullRequest = TOP.default("pull_request")
    cadences: Cadences = TOP.default("cadences")
    scopes: tuple[Scope, ...] = TOP.default("scopes")
    selection: Selection = TOP.default("selection")
    runner: RunnerConfig = TOP.default("runner")
    gates: GatesConfig = TOP.default("gates")
    file_run: FileRunConfig = TOP.default("file_run")
    image_build: ImageBuilder = TOP.default("image_build")
    images: FrozenMap[str, ImageBuild] = TOP.default("images")
    accelerators: tuple[Accelerator, ...] = TOP.default("accelerators")
    tune: TuneConfig = TOP.default("tune")
    estimates_file: str | None = TOP.default("estimates_file")
    lint: LintConfig = TOP.default("lint")
    quarantine: tuple[Quarantine, ...] = TOP.default("quarantine")
    # Line of each top-level key, for errors found after validation.
    lines: FrozenMap[str, int] = field(default=FrozenMap(), compare=False)

    def stage(self, key: str) -> Stage | None:
        """The stage `key` names (`Stage.key`: the name, or `NAME@BACKEND` for a shared name), or
        the variant `KEY+VARIANT` of one."""
        for stage in self.stages:
            if stage.key == key:
                return stage
        for stage in self.planned_stages:
            if stage.key == key:
                return stage
        return None

    @property
    def planned_stages(self) -> tuple[Stage, ...]:
        """The stages the planner plans, in file order: each stage, or each of its variants."""
        return tuple(planned for stage in self.stages for planned in stage.planned())

    def stage_of(self, backend: str, suite: str) -> Stage | None:
        """The stage a registration of `backend` for `suite` binds to."""
        for stage in self.stages:
            if stage.name == suite and stage.backend == backend:
                return stage
        return None

    def key_of(self, backend: str, suite: str) -> str:
        """The key of the stage of (`backend`, `suite`); the suite itself when no stage is configured."""
        stage = self.stage_of(backend, suite)
        return suite if stage is None else stage.key

    def stages_of(self, backend: Backend | str) -> tuple[Stage, ...]:
        return tuple(s for s in self.stages if s.backend == backend)

    def is_accelerator(self, backend: str) -> bool:
        return self.backends.is_accelerator(backend)

    def line_of(self, key: str) -> int | None:
        return self.lines.get(key)

    def scope(self, name: str) -> Scope | None:
        for scope in self.scopes:
            if scope.name == name:
                return scope
        return None

    def gate_references(self) -> tuple[tuple[str, str, int | None], ...]:
        """(raw PR label, field, line) for every label a label gate names."""
        refs = [(label, "pull_request.require_labels", self.pull_request.line)
                for label in self.pull_request.require_labels]
        for i, stage in enumerate(self.stages):
            refs += [(label, f"stages[{i}].requires_labels", stage.line) for label in stage.requires_labels]
            refs += [(label, f"stages[{i}].variants[{j}].requires_labels", variant.line)
                     for j, variant in enumerate(stage.variants) for label in variant.requires_labels]
        return tuple(refs)

    def label_references(self) -> tuple[tuple[str, str, int | None], ...]:
        """(label, field, line) for every label name the configuration mentions."""
        refs = [(label, "cadences.nightly_exclude", self.cadences.line)
                for label in self.cadences.nightly_exclude]
        for scope in self.scopes:
            refs += [(label, f"scopes.{scope.name}.exclude", scope.line) for label in scope.exclude]
        for i, rule in enumerate(self.selection.rules):
            refs += [(label, f"selection.rules[{i}].labels", rule.line) for label in rule.labels]
        return tuple(refs)


def _check_variant_images(stages: tuple[Stage, ...], builder: ImageBuilder, path: str) -> None:
    """A variant's image must be in `image_build.registry`: the stage jobs log in there with the
    registry secrets (or the job's token), which another registry must never be sent."""
    wrong = [InputError(f"stages[{i}].variants[{j}].image: {v.image!r} is not in the image registry "
                        f"{builder.registry} (image_build.registry)", path=path, line=v.image_line,
                        hint=f"push it to {builder.registry}/... (the stage jobs log in to that registry only)",
                        code=codes.INCONSISTENT)
             for i, stage in enumerate(stages) for j, v in enumerate(stage.variants)
             if v.image is not None and registry_of(v.image.rpartition(":")[0]) != builder.registry]
    if wrong:
        raise InputErrors(wrong)


def parse_config(text: str, path: str = DEFAULT_CONFIG) -> Config:
    """Validate configuration text; raise `InputErrors` with every problem found."""
    root = compose(text, path, code=codes.INVALID_YAML)
    if root is None:
        raise InputErrors([InputError("configuration is empty", path=path, line=1, col=1,
                                      hint="start with 'version: 1'", code=codes.MISSING_KEY)])
    s = fields.new_schema(path)
    top = TOP.read(s, root, "")
    if top is None or s.errors:
        raise InputErrors(s.errors)
    _check_variant_images(top.get("stages"), top.get("image_build"), path)
    return Config(
        path=path,
        version=top.get("version"),
        discovery=top.get("discovery"),
        stages=top.get("stages"),
        **{key.name: top.get(key.name) for key in TOP.keys if not key.required},
        lines=FrozenMap((key, int(k.start_mark.line) + 1) for key, (k, _v) in top.fields.items()),
    )

