"""`.github/ci-policy.yml`: the repository's CI policy configuration.

- In: the checkout root and the config path (default `.github/ci-policy.yml`, read
  through `ci_policy.checkout`, so symlinks and oversized files are refused).
- Out: a frozen `Config`, or `InputErrors` listing every problem, each located at
  `file:line:col` with its field path (`stages[2].backend: expected one of cpu, cuda, rocm`).
- Refused: unknown keys (with a did-you-mean), wrong types, YAML aliases/anchors,
  duplicate keys, a `requires` specifier the installed ci_policy does not satisfy.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from ci_policy import __version__
from ci_policy.read.checkout import check_relative, read_text
from ci_policy.read.names import CI_LABEL_PREFIX, NAME, NAME_RE
from ci_policy.errors import InputError, InputErrors
from ci_policy.config.runner import RetryRules
from ci_policy.read.yamlnodes import INVALID, Schema, compose

DEFAULT_CONFIG = ".github/ci-policy.yml"
MAX_CONFIG_BYTES = 1024 * 1024
BACKENDS = ("cpu", "cuda", "rocm")
GPU_BACKENDS = ("cuda", "rocm")
RUNNERS = ("python", "pytest")


def check_name(value: str) -> Optional[str]:
    if not NAME_RE.fullmatch(value):
        return f"{value!r} is not a valid name (expected {NAME})"
    return None


@dataclass(frozen=True)
class ImplicitRoot:
    """Registration given to every unregistered test file under `root`."""

    root: str
    backend: str
    suite: str
    est_time: float
    cpu_only: bool = False
    line: Optional[int] = None


@dataclass(frozen=True)
class Discovery:
    roots: tuple[str, ...]
    pattern: str = "test_*.py"
    implicit: tuple[ImplicitRoot, ...] = ()

    def implicit_for(self, file: str) -> Optional[ImplicitRoot]:
        """The most specific implicit root containing `file`."""
        best = None
        for rule in self.implicit:
            if _under(file, rule.root) and (best is None or len(rule.root) > len(best.root)):
                best = rule
        return best


@dataclass(frozen=True)
class Stage:
    name: str
    backend: str
    runs_on: tuple[str, ...] = ()
    partitions: int = 1
    runner: str = "pytest"
    timeout_per_file: Optional[float] = None
    diff_pruned: bool = False
    external: bool = False
    line: Optional[int] = None


@dataclass(frozen=True)
class Config:
    path: str
    version: int
    discovery: Discovery
    stages: tuple[Stage, ...]
    requires: Optional[str] = None
    labels_file: str = "labels.py"
    gpu_requires_labels: bool = True
    cadences: "Cadences" = field(default_factory=lambda: Cadences())
    scopes: tuple["Scope", ...] = ()
    selection: "Selection" = field(default_factory=lambda: Selection())
    runner: "RunnerConfig" = field(default_factory=lambda: RunnerConfig())
    gates: "GatesConfig" = field(default_factory=lambda: GatesConfig())
    file_run: "FileRunConfig" = field(default_factory=lambda: FileRunConfig())
    tune: "TuneConfig" = field(default_factory=lambda: TuneConfig())
    estimates_file: Optional[str] = None
    # Location of each top-level section, for errors found after validation.
    lines: tuple[tuple[str, int], ...] = field(default=(), compare=False)

    def stage(self, name: str) -> Optional[Stage]:
        for stage in self.stages:
            if stage.name == name:
                return stage
        return None

    def stages_of(self, backend: str) -> tuple[Stage, ...]:
        return tuple(s for s in self.stages if s.backend == backend)

    def line_of(self, key: str) -> Optional[int]:
        return dict(self.lines).get(key)

    def scope(self, name: str) -> Optional["Scope"]:
        for scope in self.scopes:
            if scope.name == name:
                return scope
        return None

    def label_references(self) -> tuple[tuple[str, str, Optional[int]], ...]:
        """(label, field, line) for every label name the configuration mentions."""
        refs = [(label, "cadences.nightly_exclude", self.cadences.line)
                for label in self.cadences.nightly_exclude]
        for scope in self.scopes:
            refs += [(label, f"scopes.{scope.name}.exclude", scope.line) for label in scope.exclude]
        for i, rule in enumerate(self.selection.rules):
            refs += [(label, f"selection.rules[{i}].labels", rule.line) for label in rule.labels]
        return tuple(refs)


def _under(path: str, root: str) -> bool:
    return root == "." or path == root or path.startswith(root.rstrip("/") + "/")


def load_config(repo: Path, config: Optional[str | Path] = None) -> Config:
    """Read and validate the configuration of the checkout at `repo`."""
    display, text = _read(repo, config)
    return parse_config(text, display)


def _resolves_to(path: Path, target: Path) -> bool:
    try:
        return path.resolve() == target
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop, on older Pythons
        return False


def _read(repo: Path, config: Optional[str | Path]) -> tuple[str, str]:
    if config is None:
        return DEFAULT_CONFIG, read_text(repo, DEFAULT_CONFIG, what="configuration file",
                                         max_bytes=MAX_CONFIG_BYTES)
    # `..` is collapsed lexically and symlinks are NOT resolved: resolving would follow a
    # symlink the checkout placed at the config path (or at a directory above it) and
    # read its target as if it were a file the maintainer chose.
    absolute = Path(os.path.abspath(config))
    top = repo.resolve()
    rel = next((absolute.relative_to(a) for a in absolute.parents if _resolves_to(a, top)), None)
    if rel is not None:
        # Inside the checkout: the same symlink and size rules as every checkout file.
        return rel.as_posix(), read_text(repo, rel.as_posix(), what="configuration file",
                                         max_bytes=MAX_CONFIG_BYTES)
    # Outside the checkout: a file the maintainer chose on the command line.
    display = str(config)
    try:
        with open(absolute, "rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise InputError(f"configuration file {display} cannot be read: {exc.strerror}",
                          path=display) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise InputError(f"configuration file {display} is larger than {MAX_CONFIG_BYTES} bytes",
                          path=display)
    try:
        return display, data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"configuration file {display} is not valid UTF-8", path=display) from None


_TOP_LEVEL = ("version", "requires", "labels_file", "discovery", "gpu_requires_labels", "stages",
              "cadences", "scopes", "selection", "runner", "gates", "file_run",
              "tune", "estimates_file")


def parse_config(text: str, path: str = DEFAULT_CONFIG) -> Config:
    """Validate configuration text; raise `InputErrors` with every problem found."""
    root = compose(text, path)
    s = Schema(path)
    if root is None:
        raise InputErrors([InputError("configuration is empty", path=path, line=1, col=1,
                                        hint="start with 'version: 1'")])
    top = s.mapping(root, "", required=("version", "discovery", "stages"), optional=_TOP_LEVEL)
    if top is None:
        raise InputErrors(s.errors)

    version = INVALID
    if "version" in top:
        node = top["version"][1]
        version = s.scalar(node, "version", int)
        if version is not INVALID and version != 1:
            s.error(node, "version", f"unsupported version {version}; this ci_policy reads version 1")
            version = INVALID

    requires = None
    if "requires" in top:
        node = top["requires"][1]
        requires = s.string(node, "requires")
        if requires is not INVALID:
            _check_requires(s, node, requires)

    labels_file = "labels.py"
    if "labels_file" in top:
        node = top["labels_file"][1]
        labels_file = _relative(s, node, "labels_file")

    gpu_requires_labels = True
    if "gpu_requires_labels" in top:
        gpu_requires_labels = s.scalar(top["gpu_requires_labels"][1], "gpu_requires_labels", bool)

    stages = _stages(s, top["stages"][1]) if "stages" in top else INVALID
    discovery = _discovery(s, top["discovery"][1], stages) if "discovery" in top else INVALID
    cadences = _cadences(s, top["cadences"][1]) if "cadences" in top else Cadences()
    scopes = _scopes(s, top["scopes"][1]) if "scopes" in top else ()
    selection = _selection(s, top["selection"][1]) if "selection" in top else Selection()
    runner = _runner(s, top["runner"][1]) if "runner" in top else RunnerConfig()
    gates = _gates(s, top["gates"][1]) if "gates" in top else GatesConfig()
    file_run = _file_run(s, top["file_run"][1]) if "file_run" in top else FileRunConfig()
    tune = _tune(s, top["tune"][1]) if "tune" in top else TuneConfig()
    estimates_file = _relative(s, top["estimates_file"][1], "estimates_file") if "estimates_file" in top else None

    if s.errors:
        raise InputErrors(s.errors)
    return Config(
        path=path,
        version=version,
        requires=requires,
        labels_file=labels_file,
        discovery=discovery,
        gpu_requires_labels=gpu_requires_labels,
        stages=stages,
        cadences=cadences,
        scopes=scopes,
        selection=selection,
        runner=runner,
        gates=gates,
        file_run=file_run,
        tune=tune,
        estimates_file=estimates_file,
        lines=tuple((key, k.start_mark.line + 1) for key, (k, _v) in top.items()),
    )


def _check_requires(s: Schema, node: yaml.Node, requires: str) -> None:
    try:
        if not requires.strip():  # SpecifierSet("") would accept every version
            raise InvalidSpecifier(requires)
        spec = SpecifierSet(requires)
    except InvalidSpecifier:
        s.error(node, "requires", f"{requires!r} is not a valid version specifier",
                hint="write a PEP 440 specifier such as '>=0.1'")
        return
    if not spec.contains(Version(__version__), prereleases=True):
        s.error(node, "requires", f"this repository requires ci_policy {requires}, "
                f"but ci_policy {__version__} is installed",
                hint=f"install a ci_policy version matching {requires}")


def _relative(s: Schema, node: yaml.Node, where: str):
    value = s.string(node, where)
    if value is INVALID:
        return INVALID
    try:
        return check_relative(value, field=where)
    except InputError as exc:
        s.error(node, "", exc.message, exc.hint)
        return INVALID


_STAGE_KEYS = ("name", "backend", "runs_on", "partitions", "runner", "timeout_per_file",
               "diff_pruned", "external")


def _stages(s: Schema, node: yaml.Node):
    items = s.sequence(node, "stages", non_empty=True)
    if items is None:
        return INVALID
    stages: list[Stage] = []
    seen: dict[str, int] = {}
    ok = True
    for i, item in enumerate(items):
        where = f"stages[{i}]"
        fields = s.mapping(item, where, required=("name", "backend"), optional=_STAGE_KEYS)
        if fields is None:
            ok = False
            continue
        before = len(s.errors)

        def get(key, parse, default):
            return parse(fields[key][1], f"{where}.{key}") if key in fields else default

        name = get("name", lambda n, w: s.string(n, w, check=check_name), INVALID)
        if name is not INVALID:
            if name in seen:
                s.error(fields["name"][1], f"{where}.name",
                        f"duplicate stage name {name!r} (also stages[{seen[name]}])")
            seen.setdefault(name, i)
        backend = get("backend", lambda n, w: s.choice(n, w, BACKENDS), INVALID)
        external = get("external", lambda n, w: s.scalar(n, w, bool), False)
        runs_on = get("runs_on", lambda n, w: s.string_list(n, w, non_empty=True), ())
        if (backend in GPU_BACKENDS and external is False and "runs_on" not in fields):
            s.error(item, f"{where}.runs_on",
                    f"required for {backend} stages that are not external",
                    hint="list the runner labels, e.g. runs_on: [h200, 4gpu]")
        partitions = get("partitions", lambda n, w: s.number(n, w, minimum=1, integer=True), 1)
        default_runner = "pytest" if backend == "cpu" else "python"
        runner = get("runner", lambda n, w: s.choice(n, w, RUNNERS), default_runner)
        timeout = get("timeout_per_file", lambda n, w: s.number(n, w, minimum=0, strict=True), None)
        diff_pruned = get("diff_pruned", lambda n, w: s.scalar(n, w, bool), backend in GPU_BACKENDS)
        if len(s.errors) != before:
            ok = False
            continue
        stages.append(Stage(
            name=name,
            backend=backend,
            runs_on=runs_on,
            partitions=partitions,
            runner=runner,
            timeout_per_file=timeout,
            diff_pruned=diff_pruned,
            external=external,
            line=item.start_mark.line + 1,
        ))
    return tuple(stages) if ok else INVALID


_IMPLICIT_KEYS = ("root", "backend", "suite", "est_time", "cpu_only")


def _discovery(s: Schema, node: yaml.Node, stages):
    fields = s.mapping(node, "discovery", required=("roots",), optional=("roots", "pattern", "implicit"))
    if fields is None:
        return INVALID
    roots = INVALID
    if "roots" in fields:
        items = s.sequence(fields["roots"][1], "discovery.roots", non_empty=True)
        if items is not None:
            roots_list = []
            for i, item in enumerate(items):
                value = _relative(s, item, f"discovery.roots[{i}]")
                if value is not INVALID:
                    if value in roots_list:
                        s.error(item, f"discovery.roots[{i}]", f"duplicate root {value!r}")
                    else:
                        roots_list.append(value)
            # With an invalid root the list is partial: checking implicit roots against it
            # would report roots that are not wrong.
            roots = tuple(roots_list) if len(roots_list) == len(items) else INVALID
    pattern = "test_*.py"
    if "pattern" in fields:
        pattern = s.string(fields["pattern"][1], "discovery.pattern", check=_check_pattern)
    implicit: list[ImplicitRoot] = []
    if "implicit" in fields:
        items = s.sequence(fields["implicit"][1], "discovery.implicit") or []
        for i, item in enumerate(items):
            rule = _implicit(s, item, f"discovery.implicit[{i}]", roots, stages)
            if rule is not None:
                if any(r.root == rule.root for r in implicit):
                    s.error(item, f"discovery.implicit[{i}].root", f"duplicate implicit root {rule.root!r}")
                implicit.append(rule)
    return Discovery(roots=roots, pattern=pattern, implicit=tuple(implicit))


def _check_pattern(value: str) -> Optional[str]:
    if not value or "/" in value or "\\" in value:
        return f"{value!r} must be a basename glob such as 'test_*.py' (no '/')"
    return None


def _implicit(s: Schema, node: yaml.Node, where: str, roots, stages) -> Optional[ImplicitRoot]:
    fields = s.mapping(node, where, required=("root", "backend", "suite", "est_time"),
                       optional=_IMPLICIT_KEYS)
    if fields is None:
        return None
    before = len(s.errors)
    root = _relative(s, fields["root"][1], f"{where}.root") if "root" in fields else INVALID
    backend = s.choice(fields["backend"][1], f"{where}.backend", BACKENDS) if "backend" in fields else INVALID
    suite = s.string(fields["suite"][1], f"{where}.suite") if "suite" in fields else INVALID
    est_time = s.number(fields["est_time"][1], f"{where}.est_time") if "est_time" in fields else INVALID
    cpu_only = s.scalar(fields["cpu_only"][1], f"{where}.cpu_only", bool) if "cpu_only" in fields else False
    if root is not INVALID and roots is not INVALID and not any(_under(root, r) for r in roots):
        s.error(fields["root"][1], f"{where}.root", f"{root!r} is not inside any discovery root",
                hint="list it (or a parent) under discovery.roots")
    if cpu_only is True and backend not in (INVALID, "cpu"):
        s.error(fields["backend"][1], f"{where}.backend", "a cpu_only root must have backend cpu")
    if suite is not INVALID and backend is not INVALID and stages is not INVALID:
        stage = next((st for st in stages if st.name == suite), None)
        if stage is None or stage.backend != backend:
            names = ", ".join(st.name for st in stages if st.backend == backend) or "none"
            s.error(fields["suite"][1], f"{where}.suite",
                    f"{suite!r} is not a configured {backend} stage (configured {backend} stages: {names})")
    if len(s.errors) != before:
        return None
    return ImplicitRoot(root=root, backend=backend, suite=suite, est_time=est_time,
                        cpu_only=cpu_only, line=node.start_mark.line + 1)


# -- trigger policy and diff-aware selection (the stage plan) ------------------------------

CADENCES = ("regular", "nightly", "weekly", "release")
EXPLICIT_MODES = ("run", "prune")
SCOPE_RE = re.compile(CI_LABEL_PREFIX + NAME)


@dataclass(frozen=True)
class Cadences:
    """`cadences:` which cron means which cadence, and what nightly leaves out."""

    schedules: tuple[tuple[str, str], ...] = ()
    nightly_exclude: tuple[str, ...] = ()
    line: Optional[int] = None

    def for_cron(self, cron: str) -> Optional[str]:
        return dict(self.schedules).get(cron)


@dataclass(frozen=True)
class Scope:
    """A broad-scope PR label (`run-ci-all`): every known label minus `exclude`."""

    name: str
    exclude: tuple[str, ...] = ()
    line: Optional[int] = None


@dataclass(frozen=True)
class Rule:
    """A path rule: changed paths matching `paths` affect (and auto-select) `labels`."""

    paths: tuple[str, ...]
    labels: tuple[str, ...]
    line: Optional[int] = None


@dataclass(frozen=True)
class Selection:
    no_gpu_paths: tuple[str, ...] = ()
    rules: tuple[Rule, ...] = ()
    explicit: str = "run"
    line: Optional[int] = None


def _check_glob(value: str) -> Optional[str]:
    from ci_policy.read.globs import GlobError, compile_glob

    try:
        compile_glob(value)
    except GlobError as exc:
        return str(exc)
    return None


def _cadences(s: Schema, node: yaml.Node):
    fields = s.mapping(node, "cadences", optional=("schedules", "nightly_exclude"))
    if fields is None:
        return INVALID
    schedules: list[tuple[str, str]] = []
    if "schedules" in fields:
        table = s.mapping(fields["schedules"][1], "cadences.schedules", open_keys=True) or {}
        for cron, (key_node, value_node) in table.items():
            where = f"cadences.schedules[{cron!r}]"
            if len(cron.split()) != 5:
                s.error(key_node, where, "expected a cron expression of 5 fields, as in the workflow's "
                        "`on.schedule[].cron`")
                continue
            cadence = s.choice(value_node, where, CADENCES)
            if cadence is not INVALID:
                schedules.append((cron, cadence))
    exclude = ()
    if "nightly_exclude" in fields:
        exclude = s.string_list(fields["nightly_exclude"][1], "cadences.nightly_exclude")
    return Cadences(schedules=tuple(schedules), nightly_exclude=exclude, line=node.start_mark.line + 1)


def _scopes(s: Schema, node: yaml.Node):
    table = s.mapping(node, "scopes", open_keys=True)
    if table is None:
        return INVALID
    scopes = []
    for name, (key_node, value_node) in table.items():
        where = f"scopes.{name}"
        if not SCOPE_RE.fullmatch(name):
            s.error(key_node, where, f"a scope must be a PR label run-ci-<name>, got {name!r}",
                    hint="write e.g. run-ci-all")
            continue
        if isinstance(value_node, yaml.ScalarNode) and value_node.value in ("", "~", "null"):
            scopes.append(Scope(name=name, line=key_node.start_mark.line + 1))
            continue
        fields = s.mapping(value_node, where, optional=("exclude",))
        if fields is None:
            continue
        exclude = ()
        if "exclude" in fields:
            exclude = s.string_list(fields["exclude"][1], f"{where}.exclude")
        scopes.append(Scope(name=name, exclude=exclude or (), line=key_node.start_mark.line + 1))
    return tuple(scopes)


def _selection(s: Schema, node: yaml.Node):
    fields = s.mapping(node, "selection", optional=("no_gpu_paths", "rules", "explicit"))
    if fields is None:
        return INVALID
    no_gpu = ()
    if "no_gpu_paths" in fields:
        no_gpu = s.string_list(fields["no_gpu_paths"][1], "selection.no_gpu_paths", check=_check_glob)
    rules = []
    if "rules" in fields:
        for i, item in enumerate(s.sequence(fields["rules"][1], "selection.rules") or []):
            where = f"selection.rules[{i}]"
            rf = s.mapping(item, where, required=("paths", "labels"), optional=("paths", "labels"))
            if rf is None or "paths" not in rf or "labels" not in rf:
                continue
            paths = s.string_list(rf["paths"][1], f"{where}.paths", non_empty=True, check=_check_glob)
            labels = s.string_list(rf["labels"][1], f"{where}.labels", non_empty=True)
            if paths is not INVALID and labels is not INVALID:
                rules.append(Rule(paths=paths, labels=labels, line=item.start_mark.line + 1))
    explicit = "run"
    if "explicit" in fields:
        explicit = s.choice(fields["explicit"][1], "selection.explicit", EXPLICIT_MODES)
    return Selection(no_gpu_paths=no_gpu, rules=tuple(rules), explicit=explicit,
                     line=node.start_mark.line + 1)


# -- the suite runner -----------------------------------------------------------------------

@dataclass(frozen=True)
class RunnerConfig:
    """`runner:` retry regexes, est_time-derived timeouts, and the kill grace period."""

    retry: "RetryRules" = field(default_factory=lambda: _default_retry())
    timeout_from_est_time: Optional[tuple[float, float]] = None  # (factor, floor)
    kill_grace: float = 10.0


def _default_retry():
    from ci_policy.config.runner import RetryRules

    return RetryRules()


def _check_regex(value: str) -> Optional[str]:
    try:
        re.compile(value)
    except re.error as exc:
        return f"{value!r} is not a valid regular expression: {exc}"
    return None


def _runner(s: Schema, node: yaml.Node):
    from ci_policy.config.runner import RetryRules

    fields = s.mapping(node, "runner", optional=("retry", "timeout_from_est_time", "kill_grace"))
    if fields is None:
        return INVALID
    rules = RetryRules()
    if "retry" in fields:
        rf = s.mapping(fields["retry"][1], "runner.retry", optional=("infra", "never", "retriable"))
        if rf is not None:
            lists = {}
            for key in ("infra", "never", "retriable"):
                if key in rf:
                    value = s.string_list(rf[key][1], f"runner.retry.{key}", check=_check_regex)
                    if value is not INVALID:
                        lists[key] = value
            rules = RetryRules(**lists)
    from_est = None
    if "timeout_from_est_time" in fields:
        tf = s.mapping(fields["timeout_from_est_time"][1], "runner.timeout_from_est_time",
                       required=("factor", "floor"), optional=("factor", "floor"))
        if tf is not None and "factor" in tf and "floor" in tf:
            factor = s.number(tf["factor"][1], "runner.timeout_from_est_time.factor", minimum=0, strict=True)
            floor = s.number(tf["floor"][1], "runner.timeout_from_est_time.floor", minimum=0, strict=True)
            if factor is not INVALID and floor is not INVALID:
                from_est = (factor, floor)
    grace = 10.0
    if "kill_grace" in fields:
        grace = s.number(fields["kill_grace"][1], "runner.kill_grace", minimum=0)
    return RunnerConfig(retry=rules, timeout_from_est_time=from_est, kill_grace=grace)


# -- metric-history gates ---------------------------------------------------------------------

SESSION_VERSIONS = ("v1", "v2")
REFERENCES = ("mean", "median")


@dataclass(frozen=True)
class GateRequirement:
    """Every test file matching `files` must declare each key, once per version."""

    files: tuple[str, ...]
    metric_keys: tuple[str, ...]
    versions: tuple[str, ...] = ()
    line: Optional[int] = None

    def required_keys(self) -> tuple[tuple[str, Optional[str]], ...]:
        """(metric key, version) pairs; version None for keys without `{version}`."""
        out = []
        for key in self.metric_keys:
            if "{version}" in key:
                out += [(key.replace("{version}", v), v) for v in self.versions]
            else:
                out.append((key, None))
        return tuple(out)


@dataclass(frozen=True)
class GatesConfig:
    capture: tuple[str, ...] = field(default_factory=lambda: _default_capture())
    # metric key -> {"steps": ..., "constraint": {...}}; shipped defaults overlaid by config.
    defaults: tuple[tuple[str, str], ...] = field(default_factory=lambda: _shipped_defaults())
    window: int = 10
    min_samples: int = 3
    reference: str = "mean"
    require: tuple[GateRequirement, ...] = ()
    line: Optional[int] = None

    def defaults_map(self) -> dict[str, dict]:
        import json

        return {key: json.loads(value) for key, value in self.defaults}


def _default_capture() -> tuple[str, ...]:
    from ci_policy.sdk.metrics import DEFAULT_CAPTURE

    return tuple(DEFAULT_CAPTURE)


def _shipped_defaults(overrides: Optional[dict] = None) -> tuple[tuple[str, str], ...]:
    import json

    from ci_policy.config.gates import SHIPPED_DEFAULTS

    merged = {**SHIPPED_DEFAULTS, **(overrides or {})}
    return tuple((k, json.dumps(v, sort_keys=True)) for k, v in sorted(merged.items()))


def _gates(s: Schema, node: yaml.Node):
    from ci_policy.config.gates import constraint_problems, steps_problems

    fields = s.mapping(node, "gates", optional=("capture", "defaults", "window", "min_samples",
                                                "reference", "require"))
    if fields is None:
        return INVALID
    capture = _default_capture()
    if "capture" in fields:
        capture = s.string_list(fields["capture"][1], "gates.capture", non_empty=True)
    overrides: dict[str, dict] = {}
    override_nodes: dict[str, yaml.Node] = {}
    if "defaults" in fields:
        table = s.mapping(fields["defaults"][1], "gates.defaults", open_keys=True) or {}
        for key, (key_node, value_node) in table.items():
            where = f"gates.defaults[{key!r}]"
            df = s.mapping(value_node, where, required=("steps", "constraint"), optional=("steps", "constraint"))
            if df is None or "steps" not in df or "constraint" not in df:
                continue
            value = {}
            for name, check in (("steps", steps_problems), ("constraint", constraint_problems)):
                plain = s.plain(df[name][1], f"{where}.{name}")
                if plain is INVALID:
                    continue
                problems = check(plain)
                for problem in problems:
                    s.error(df[name][1], f"{where}.{name}", problem)
                if not problems:
                    value[name] = plain
            if len(value) == 2:
                overrides[key] = value
                override_nodes[key] = key_node
    for key in overrides:
        if capture is not INVALID and key not in capture:
            s.error(override_nodes[key], f"gates.defaults[{key!r}]", f"default gate key {key!r} is not captured",
                    hint="add it to gates.capture, or a gate on it could never be evaluated")
    # Shipped defaults only matter for captured keys; configured ones were checked above.
    defaults = tuple((k, v) for k, v in _shipped_defaults(overrides)
                     if capture is INVALID or k in capture or k in overrides)
    window = s.number(fields["window"][1], "gates.window", minimum=1, integer=True) if "window" in fields else 10
    min_samples = (s.number(fields["min_samples"][1], "gates.min_samples", minimum=1, integer=True)
                   if "min_samples" in fields else 3)
    if window is not INVALID and min_samples is not INVALID and min_samples > window:
        s.error(fields["min_samples"][1], "gates.min_samples",
                f"must not exceed gates.window ({window}), got {min_samples}")
    reference = s.choice(fields["reference"][1], "gates.reference", REFERENCES) if "reference" in fields else "mean"
    require = []
    if "require" in fields:
        for i, item in enumerate(s.sequence(fields["require"][1], "gates.require") or []):
            rule = _requirement(s, item, f"gates.require[{i}]")
            if rule is not None:
                require.append(rule)
    return GatesConfig(capture=capture, defaults=defaults, window=window, min_samples=min_samples,
                       reference=reference, require=tuple(require), line=node.start_mark.line + 1)


def _requirement(s: Schema, node: yaml.Node, where: str) -> Optional[GateRequirement]:
    fields = s.mapping(node, where, required=("files", "metric_keys"),
                       optional=("files", "metric_keys", "versions"))
    if fields is None or "files" not in fields or "metric_keys" not in fields:
        return None
    files_node = fields["files"][1]
    if isinstance(files_node, yaml.ScalarNode):
        one = s.string(files_node, f"{where}.files", check=_check_glob)
        files = INVALID if one is INVALID else (one,)
    else:
        files = s.string_list(files_node, f"{where}.files", non_empty=True, check=_check_glob)
    keys = s.string_list(fields["metric_keys"][1], f"{where}.metric_keys", non_empty=True)
    versions: tuple = ()
    if "versions" in fields:
        versions = s.string_list(fields["versions"][1], f"{where}.versions", non_empty=True,
                                 check=lambda v: None if v in SESSION_VERSIONS else
                                 f"expected one of {', '.join(SESSION_VERSIONS)}, got {v!r}")
    if keys is not INVALID:
        templated = [k for k in keys if "{version}" in k]
        if templated and versions == ():
            s.error(fields["metric_keys"][1], f"{where}.metric_keys",
                    f"{templated[0]!r} uses {{version}} but no versions are listed",
                    hint="add versions: [v1, v2]")
            return None
    if INVALID in (files, keys, versions):
        return None
    return GateRequirement(files=files, metric_keys=keys, versions=versions, line=node.start_mark.line + 1)


# -- /rerun-test: one file on the right hardware ----------------------------------------------

IMAGE_TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
IMAGE_REPO_RE = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*")


@dataclass(frozen=True)
class FileRunConfig:
    """`file_run:` how one rerun file is placed: image per backend, tag and timeout."""

    image: tuple[tuple[str, str], ...] = ()  # backend -> image repository (no tag)
    default_tag: str = "latest"
    timeout_factor: float = 3.0
    min_timeout: float = 900.0

    def image_for(self, backend: str) -> Optional[str]:
        return dict(self.image).get(backend)


def _file_run(s: Schema, node: yaml.Node):
    fields = s.mapping(node, "file_run", optional=("image", "default_tag", "timeout_factor", "min_timeout"))
    if fields is None:
        return INVALID
    image = []
    if "image" in fields:
        table = s.mapping(fields["image"][1], "file_run.image", optional=BACKENDS) or {}
        for backend, (_k, value_node) in table.items():
            repo = s.string(value_node, f"file_run.image.{backend}",
                            check=lambda v: None if IMAGE_REPO_RE.fullmatch(v) else
                            f"{v!r} is not an image repository (e.g. ghcr.io/org/ci-cuda, without a tag)")
            if repo is not INVALID:
                image.append((backend, repo))
    tag = "latest"
    if "default_tag" in fields:
        tag = s.string(fields["default_tag"][1], "file_run.default_tag",
                       check=lambda v: None if IMAGE_TAG_RE.fullmatch(v) else
                       f"{v!r} is not a valid image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})")
    factor = (s.number(fields["timeout_factor"][1], "file_run.timeout_factor", minimum=0, strict=True)
              if "timeout_factor" in fields else 3.0)
    minimum = (s.number(fields["min_timeout"][1], "file_run.min_timeout", minimum=0, strict=True)
               if "min_timeout" in fields else 900.0)
    return FileRunConfig(image=tuple(image), default_tag=tag, timeout_factor=factor, min_timeout=minimum)


# -- est_time tuning ---------------------------------------------------------------------------

@dataclass(frozen=True)
class TuneConfig:
    """`tune:` how timings become est_time proposals."""

    safety: float = 1.25
    quantile: float = 0.9
    min_samples_for_quantile: int = 5
    deadband: float = 0.2


def _tune(s: Schema, node: yaml.Node):
    fields = s.mapping(node, "tune", optional=("safety", "quantile", "min_samples_for_quantile", "deadband"))
    if fields is None:
        return INVALID
    values = {}
    if "safety" in fields:
        values["safety"] = s.number(fields["safety"][1], "tune.safety", minimum=1)
    if "quantile" in fields:
        q = s.number(fields["quantile"][1], "tune.quantile", minimum=0, strict=True)
        if q is not INVALID and q > 1:
            s.error(fields["quantile"][1], "tune.quantile", f"must be at most 1, got {q}")
            q = INVALID
        values["quantile"] = q
    if "min_samples_for_quantile" in fields:
        values["min_samples_for_quantile"] = s.number(fields["min_samples_for_quantile"][1],
                                                      "tune.min_samples_for_quantile", minimum=1, integer=True)
    if "deadband" in fields:
        d = s.number(fields["deadband"][1], "tune.deadband", minimum=0)
        if d is not INVALID and d >= 1:
            s.error(fields["deadband"][1], "tune.deadband", f"must be below 1 (a fraction), got {d}")
            d = INVALID
        values["deadband"] = d
    if any(v is INVALID for v in values.values()):
        return INVALID
    return TuneConfig(**values)
