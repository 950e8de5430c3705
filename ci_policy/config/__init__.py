"""`.github/ci-policy.yml`: the repository's CI policy configuration.

- In: the checkout root and the config path (default `.github/ci-policy.yml`, read
  through `ci_policy.read.checkout`, so symlinks and oversized files are refused).
- Out: a frozen `Config`, or `InputErrors` listing every problem, each located at
  `file:line:col` with its field path (`stages[2].backend: expected one of cpu, cuda, rocm`)
  and a stable code (CP100-CP199, `ci_policy.config.codes`).
- Refused: unknown keys (with a did-you-mean), wrong types, YAML aliases/anchors,
  duplicate keys, a `requires` specifier the installed ci_policy does not satisfy.
- Imported by name on first use (`__getattr__`): `from ci_policy.config import Stage` imports
  `config.stages` and what it needs, not every section and PyYAML.
- Layout: one module per section, each with the field table (`ci_policy.config.fields`)
  its keys are declared in once; `ci_policy.config.reference` renders the tables for the README.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    from ci_policy.config.backends import BUILTIN_BACKENDS, Backends
    from ci_policy.config.cadences import CADENCES, NIGHTLY_SELECTS, Cadence, Cadences, NightlySelects, Schedule
    from ci_policy.config.discovery import Discovery, ImplicitRoot
    from ci_policy.config.fields import FrozenMap
    from ci_policy.config.file_run import IMAGE_REPO_RE, IMAGE_TAG_RE, FileRunConfig
    from ci_policy.config.gates import REFERENCES, SESSION_VERSIONS, GateRequirement, GatesConfig, Reference
    from ci_policy.config.images import ImageBuild
    from ci_policy.config.load import MAX_CONFIG_BYTES, load_config
    from ci_policy.config.markers import ARGUMENT_TYPES, Markers
    from ci_policy.config.pull_request import PullRequest
    from ci_policy.config.runner import RunnerConfig
    from ci_policy.config.runrules import RUNNERS, RetryRules, RunnerKind
    from ci_policy.config.scopes import SCOPE_RE, Scope
    from ci_policy.config.selection import EXPLICIT_MODES, ExplicitMode, Rule, Selection
    from ci_policy.config.stages import BACKENDS, Backend, Stage, check_name
    from ci_policy.config.top import Config, parse_config
    from ci_policy.config.tune import TuneConfig

DEFAULT_CONFIG = ".github/ci-policy.yml"

# Where each name lives: imported on first use, so that a command reading one section (a stage
# job's runner rules) does not import every section's table and PyYAML.
_HOME = {
    "BUILTIN_BACKENDS": "backends", "Backends": "backends",
    "CADENCES": "cadences", "NIGHTLY_SELECTS": "cadences", "Cadence": "cadences", "Cadences": "cadences",
    "NightlySelects": "cadences", "Schedule": "cadences",
    "Discovery": "discovery", "ImplicitRoot": "discovery",
    "FrozenMap": "fields",
    "IMAGE_REPO_RE": "file_run", "IMAGE_TAG_RE": "file_run", "FileRunConfig": "file_run",
    "REFERENCES": "gates", "SESSION_VERSIONS": "gates", "GateRequirement": "gates", "GatesConfig": "gates",
    "Reference": "gates",
    "ImageBuild": "images",
    "MAX_CONFIG_BYTES": "load", "load_config": "load",
    "ARGUMENT_TYPES": "markers", "Markers": "markers",
    "PullRequest": "pull_request",
    "RetryRules": "runrules", "RunnerConfig": "runner",
    "SCOPE_RE": "scopes", "Scope": "scopes",
    "EXPLICIT_MODES": "selection", "ExplicitMode": "selection", "Rule": "selection", "Selection": "selection",
    "BACKENDS": "stages", "RUNNERS": "runrules", "Backend": "stages", "RunnerKind": "runrules", "Stage": "stages",
    "check_name": "stages",
    "Config": "top", "parse_config": "top",
    "TuneConfig": "tune",
}


if not TYPE_CHECKING:  # for mypy, the names are the imports above: a misspelt one is an error

    def __getattr__(name: str) -> object:
        module = _HOME.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value


__all__ = [
    "ARGUMENT_TYPES", "BACKENDS", "BUILTIN_BACKENDS", "CADENCES", "DEFAULT_CONFIG", "EXPLICIT_MODES",
    "IMAGE_REPO_RE", "IMAGE_TAG_RE",
    "MAX_CONFIG_BYTES", "NIGHTLY_SELECTS", "REFERENCES", "RUNNERS", "SCOPE_RE", "SESSION_VERSIONS",
    "Backend", "Backends", "Cadence", "Cadences", "Config", "Discovery", "ExplicitMode", "FileRunConfig", "FrozenMap",
    "GateRequirement", "GatesConfig", "ImageBuild", "ImplicitRoot", "Markers", "NightlySelects",
    "PullRequest", "Reference", "RetryRules", "Rule", "RunnerConfig",
    "RunnerKind", "Schedule", "Scope", "Selection", "Stage", "TuneConfig",
    "check_name", "load_config", "parse_config",
]
