"""`runner:` how `ci-policy run` retries, times out and stops test files.

- In: the `runner` mapping; every key is optional.
- Out: a frozen `RunnerConfig`: `RetryRules`, the est_time-derived timeout, the kill grace
  period, the user the tests run as (`user`, when the runner is root), and `EnvRules` (the
  rules, their defaults and `child_env` live in `config.runrules`, which a stage job imports
  without this table).
- Refused: invalid regular expressions, non-positive timeout factors or floors, a
  negative grace period, an env pattern that is empty or holds anything but letters,
  digits, `_` and the wildcards `*`, `?`; a `user` that is not a user name or id, or is root.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ci_policy.config import fields
from ci_policy.config.fields import REQUIRED, Key, Table, Values
from ci_policy.config.runrules import (
    ALWAYS_DROPPED,
    DEFAULT_ALLOW,
    DEFAULT_INFRA,
    DEFAULT_NEVER,
    DEFAULT_RETRIABLE,
    ENV_NAME_PATTERN,
    KILL_GRACE,
    MAX_KILL_GRACE,
    USER_PATTERN,
    EnvRules,
    RetryRules,
    check_env_pattern,
    check_regex,
)
from ci_policy.read.numbers import MAX_FACTOR, MAX_SECONDS
from ci_policy.read.yamlnodes import INVALID, Schema

REGEXES = "list of regular expressions"
RETRY = Table("runner.retry", "Which failure output is infrastructure, never retried, or retriable.", (
    Key("infra", fields.strings(REGEXES, check=check_regex), DEFAULT_INFRA,
        "A failure whose output matches is an infrastructure failure: retried, and reported as such.",
        shown_default="server start, NCCL, ECC, local connection, disk-full and HTTP 5xx errors"),
    Key("never", fields.strings(REGEXES, check=check_regex), DEFAULT_NEVER,
        "A failure whose output matches is never retried.",
        shown_default="syntax, import and name errors; out of GPU memory"),
    Key("retriable", fields.strings(REGEXES, check=check_regex), DEFAULT_RETRIABLE,
        "A failure whose output matches may be retried (flaky accuracy or speed thresholds).",
        shown_default="accuracy, throughput, latency, score and speed assertions"),
))


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




def _shown(patterns: tuple[str, ...]) -> str:
    return ", ".join(f"`{pattern}`" for pattern in patterns)


ENV_PATTERNS = "list of variable name patterns"
ENV_PATTERN: fields.JsonSchema = {"pattern": f"^(?:{ENV_NAME_PATTERN.pattern})$"}
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


def _check_user(value: str) -> str | None:
    if not re.fullmatch(USER_PATTERN, value):
        return (f"{value!r} is not a user name (a letter or `_`, then up to 31 letters, digits, `_`, `.`, `-`) "
                "nor a numeric user id")
    if value in ("root", "0"):
        return "the tests must not run as root: name an unprivileged user"
    return None


def _env(s: Schema, v: Values) -> Any:
    allow, drop = v.get("allow"), v.get("drop")
    if INVALID in (allow, drop):
        return INVALID
    return EnvRules(allow=allow, drop=drop)


RUNNER_TABLE = Table("runner", "How `ci-policy run` retries, times out and stops test files.", (
    Key("retry", fields.mapping_of(RETRY, _retry), RetryRules(), "Failure classes by output.",
        shown_default="the defaults below"),
    Key("timeout_from_est_time", fields.mapping_of(FROM_EST_TIME, _from_est_time), None,
        "When set, a file's timeout is `max(floor, factor * est_time)`, at most the stage's "
        "`timeout_per_file` when it has one.",
        shown_default="none: no est_time-derived timeout"),
    Key("kill_grace", fields.number(0, MAX_KILL_GRACE), KILL_GRACE,
        "Seconds between SIGTERM and SIGKILL when a file times out or the run is interrupted."),
    Key("env", fields.mapping_of(ENV, _env), EnvRules(), "The environment the tests run with.",
        shown_default="the defaults below"),
    Key("user", fields.string("user name or numeric user id", _check_user, item={"pattern": f"^(?:{USER_PATTERN})$"}),
        None, "The unprivileged user the tests run as when `ci-policy run` runs as root (a GPU container's "
        "default): they then cannot read the runner's memory, environment or `--store-file`. The checkout must be "
        "readable by that user.", shown_default="none: the tests run as the runner's user"),
))


@dataclass(frozen=True)
class RunnerConfig:
    """`runner:` retry regexes, est_time-derived timeouts, and the kill grace period."""

    retry: RetryRules = RUNNER_TABLE.default("retry")
    timeout_from_est_time: tuple[float, float] | None = RUNNER_TABLE.default("timeout_from_est_time")
    kill_grace: float = RUNNER_TABLE.default("kill_grace")
    env: EnvRules = RUNNER_TABLE.default("env")
    user: str | None = RUNNER_TABLE.default("user")


def _build(s: Schema, v: Values) -> RunnerConfig:
    return RunnerConfig(retry=v.get("retry"), timeout_from_est_time=v.get("timeout_from_est_time"),
                        kill_grace=v.get("kill_grace"), env=v.get("env"), user=v.get("user"))


RUNNER = fields.mapping_of(RUNNER_TABLE, _build)
