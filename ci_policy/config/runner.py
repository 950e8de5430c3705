"""`runner:` how `ci-policy run` retries, times out and stops test files.

- In: the `runner` mapping; every key is optional.
- Out: a frozen `RunnerConfig`: `RetryRules` (three tuples of regular expressions searched
  in a failed attempt's output tail by `ci_policy.adapters.runner.retry.classify`), the
  est_time-derived timeout, the kill grace period, and `EnvRules`: which variables of the
  runner's environment a test sees (`child_env`).
- A test sees a variable only when a `runner.env.allow` pattern matches its name and
  neither `runner.env.drop` nor `ALWAYS_DROPPED` (tokens, passwords, secrets, the
  Actions runtime and OIDC variables, the runner's file commands, the store URL) does;
  `ALWAYS_DROPPED` cannot be configured away: a PR's test must never read a credential.
- Refused: invalid regular expressions, non-positive timeout factors or floors, a
  negative grace period, an env pattern that is empty or holds anything but letters,
  digits, `_` and the wildcards `*`, `?`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ci_policy.config import fields
from ci_policy.config.fields import REQUIRED, Key, Table, Values
from ci_policy.read.globs import any_name_match
from ci_policy.read.numbers import MAX_FACTOR, MAX_SECONDS
from ci_policy.read.yamlnodes import INVALID, Schema

DEFAULT_INFRA = (
    r"Server failed to start",
    r"NCCL .*timeout",
    r"NCCL error.*(unhandled system error|remote process exited)",
    r"CUDA error: (an illegal memory access|unspecified launch failure).*\bECC\b",
    r"(Connection refused|Connection reset by peer).*(127\.0\.0\.1|localhost)",
    r"No space left on device",
    r"HTTPError: 50[234]",
)
DEFAULT_NEVER = (
    r"SyntaxError",
    r"IndentationError",
    r"ImportError",
    r"ModuleNotFoundError",
    r"NameError",
    r"CUDA out of memory",
    r"torch\.OutOfMemoryError",
    r"HIP out of memory",
)
DEFAULT_RETRIABLE = (
    r"AssertionError: .*(accuracy|throughput|latency|score|speed)",
    r"(accuracy|throughput|latency) .*(below|above|lower than|higher than|exceeds)",
)

REGEXES = "list of regular expressions"
RETRY = Table("runner.retry", "Which failure output is infrastructure, never retried, or retriable.", (
    Key("infra", fields.strings(REGEXES, check=fields.check_regex), DEFAULT_INFRA,
        "A failure whose output matches is an infrastructure failure: retried, and reported as such.",
        shown_default="server start, NCCL, ECC, local connection, disk-full and HTTP 5xx errors"),
    Key("never", fields.strings(REGEXES, check=fields.check_regex), DEFAULT_NEVER,
        "A failure whose output matches is never retried.",
        shown_default="syntax, import and name errors; out of GPU memory"),
    Key("retriable", fields.strings(REGEXES, check=fields.check_regex), DEFAULT_RETRIABLE,
        "A failure whose output matches may be retried (flaky accuracy or speed thresholds).",
        shown_default="accuracy, throughput, latency, score and speed assertions"),
))


@dataclass(frozen=True)
class RetryRules:
    infra: tuple[str, ...] = RETRY.default("infra")
    never: tuple[str, ...] = RETRY.default("never")
    retriable: tuple[str, ...] = RETRY.default("retriable")


def _retry(s: Schema, v: Values) -> RetryRules:
    # A wrong list is reported; the others still build (the configuration fails as a whole).
    return RetryRules(**{key: value for key, value in v.parsed.items() if value is not INVALID})


FROM_EST_TIME = Table("runner.timeout_from_est_time", "A file's timeout derived from its est_time.", (
    Key("factor", fields.number(0, MAX_FACTOR, strict=True), REQUIRED, "Multiplies the file's est_time."),
    Key("floor", fields.number(0, MAX_SECONDS, strict=True), REQUIRED, "The smallest timeout, in seconds."),
))


def _from_est_time(s: Schema, v: Values) -> Any:
    factor, floor = v.get("factor"), v.get("floor")
    return None if INVALID in (factor, floor) else (factor, floor)


# The wait between SIGTERM and SIGKILL: long enough for a clean shutdown, never a second timeout.
MAX_KILL_GRACE = 3600


# Names (shell-style patterns, case-sensitive) a test never sees, whatever `runner.env` says.
ALWAYS_DROPPED = (
    "GITHUB_TOKEN", "ACTIONS_*", "CI_POLICY_DATABASE_URL", "*_TOKEN", "*_TOKEN_*", "*SECRET*",
    "*PASSWORD*", "*_KEY", "*_CREDENTIALS", "PGPASSWORD", "PGSERVICEFILE", "PGPASSFILE",
    "GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY",
)
DEFAULT_ALLOW = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR",
    "PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "PYTHONWARNINGS",
    "PYTHONFAULTHANDLER", "PYTHONUTF8", "VIRTUAL_ENV", "CONDA_PREFIX", "LD_LIBRARY_PATH",
    "CUDA_*", "NVIDIA_*", "NCCL_*", "ROCR_*", "ROCM_*", "HIP_*", "HSA_*", "OMP_*", "MKL_*", "TORCH_*",
    "TRITON_*", "HF_*", "TRANSFORMERS_*",
    "CI", "GITHUB_ACTIONS", "GITHUB_SHA", "GITHUB_REF", "GITHUB_REPOSITORY", "GITHUB_RUN_ID",
    "GITHUB_RUN_ATTEMPT",
)
_PATTERN = re.compile(r"[A-Za-z0-9_*?]+")


def _shown(patterns: tuple[str, ...]) -> str:
    return ", ".join(f"`{pattern}`" for pattern in patterns)


def check_env_pattern(value: str) -> str | None:
    if not _PATTERN.fullmatch(value):
        return (f"{value!r} is not a variable name pattern (letters, digits, `_`, and the wildcards "
                "`*` and `?`)")
    return None


ENV_PATTERNS = "list of variable name patterns"
ENV_PATTERN: fields.JsonSchema = {"pattern": f"^(?:{_PATTERN.pattern})$"}
ENV = Table("runner.env", "Which variables of the runner's environment the tests see.", (
    Key("allow", fields.strings(ENV_PATTERNS, check=check_env_pattern, item=ENV_PATTERN), DEFAULT_ALLOW,
        "A variable whose name matches one of these shell-style patterns (`*`, `?`) reaches the tests; "
        "no other does.",
        shown_default=_shown(DEFAULT_ALLOW)),
    Key("drop", fields.strings(ENV_PATTERNS, check=check_env_pattern, item=ENV_PATTERN), (),
        "Variables never passed even when `allow` matches them, on top of those always dropped: "
        + _shown(ALWAYS_DROPPED) + ".",
        shown_default="none"),
))


@dataclass(frozen=True)
class EnvRules:
    allow: tuple[str, ...] = ENV.default("allow")
    drop: tuple[str, ...] = ENV.default("drop")


def _env(s: Schema, v: Values) -> Any:
    allow, drop = v.get("allow"), v.get("drop")
    if INVALID in (allow, drop):
        return INVALID
    return EnvRules(allow=allow, drop=drop)


def child_env(environ: Mapping[str, str], rules: EnvRules) -> dict[str, str]:
    """The variables of `environ` a test may see under `rules`."""
    allowed, dropped = any_name_match(rules.allow), any_name_match(rules.drop + ALWAYS_DROPPED)
    return {name: value for name, value in environ.items() if allowed(name) and not dropped(name)}


RUNNER_TABLE = Table("runner", "How `ci-policy run` retries, times out and stops test files.", (
    Key("retry", fields.mapping_of(RETRY, _retry), RetryRules(), "Failure classes by output.",
        shown_default="the defaults below"),
    Key("timeout_from_est_time", fields.mapping_of(FROM_EST_TIME, _from_est_time), None,
        "When set, a file's timeout is `max(floor, factor * est_time)`, at most the stage's "
        "`timeout_per_file` when it has one.",
        shown_default="none: no est_time-derived timeout"),
    Key("kill_grace", fields.number(0, MAX_KILL_GRACE), 10.0,
        "Seconds between SIGTERM and SIGKILL when a file times out or the run is interrupted."),
    Key("env", fields.mapping_of(ENV, _env), EnvRules(), "The environment the tests run with.",
        shown_default="the defaults below"),
))


@dataclass(frozen=True)
class RunnerConfig:
    """`runner:` retry regexes, est_time-derived timeouts, and the kill grace period."""

    retry: RetryRules = RUNNER_TABLE.default("retry")
    timeout_from_est_time: tuple[float, float] | None = RUNNER_TABLE.default("timeout_from_est_time")
    kill_grace: float = RUNNER_TABLE.default("kill_grace")
    env: EnvRules = RUNNER_TABLE.default("env")


def _build(s: Schema, v: Values) -> RunnerConfig:
    return RunnerConfig(retry=v.get("retry"), timeout_from_est_time=v.get("timeout_from_est_time"),
                        kill_grace=v.get("kill_grace"), env=v.get("env"))


RUNNER = fields.mapping_of(RUNNER_TABLE, _build)
