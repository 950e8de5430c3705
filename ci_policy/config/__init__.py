"""`.github/ci-policy.yml`: the repository's CI policy configuration.

- In: the checkout root and the config path (default `.github/ci-policy.yml`, read
  through `ci_policy.read.checkout`, so symlinks and oversized files are refused).
- Out: a frozen `Config`, or `InputErrors` listing every problem, each located at
  `file:line:col` with its field path (`stages[2].backend: expected one of cpu, cuda, rocm`)
  and a stable code (CP100-CP199, `ci_policy.config.codes`).
- Refused: unknown keys (with a did-you-mean), wrong types, YAML aliases/anchors,
  duplicate keys, a `requires` specifier the installed ci_policy does not satisfy.
- Layout: one module per section, each with the field table (`ci_policy.config.fields`)
  its keys are declared in once; `ci_policy.config.reference` renders the tables for the README.
"""

from __future__ import annotations

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
from ci_policy.config.runner import RetryRules, RunnerConfig
from ci_policy.config.scopes import SCOPE_RE, Scope
from ci_policy.config.selection import EXPLICIT_MODES, ExplicitMode, Rule, Selection
from ci_policy.config.stages import BACKENDS, RUNNERS, Backend, RunnerKind, Stage, check_name
from ci_policy.config.top import DEFAULT_CONFIG, Config, parse_config
from ci_policy.config.tune import TuneConfig

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
