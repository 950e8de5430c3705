"""The rules a stage job runs test files by: which failures are retried, which variables a test sees.

- In: nothing; `config.runner` reads them from `runner:` (its table states each key, with
  these defaults), and a per-stage plan carries them resolved (`plan.planfile`).
- Out: `RetryRules` (three tuples of regular expressions searched in a failed attempt's
  output tail by `ci_policy.adapters.runner.retry.classify`), `EnvRules` and `child_env`:
  the variables of the runner's environment a test sees.
- A test sees a variable only when a `runner.env.allow` pattern matches its name and
  neither `runner.env.drop` nor `ALWAYS_DROPPED` (tokens, passwords, secrets, the Actions
  runtime and OIDC variables, the runner's file commands, the store URL) does;
  `ALWAYS_DROPPED` cannot be configured away: a PR's test must never read a credential.
- Refused: nothing raised here: `check_regex` and `check_env_pattern` return the message of a
  bad pattern, which `config.runner` reports located (and the per-stage plan's reader too).
- Apart from the section's table and PyYAML, so that a stage job running from its per-stage
  plan imports neither.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from ci_policy.read.globs import any_name_match
from ci_policy.read.lazyregex import LazyRegex

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

# How a stage runs one test file (`stages[].runner`): `python FILE` or `python -m pytest FILE`.
RunnerKind = Literal["python", "pytest"]
RUNNERS: tuple[RunnerKind, ...] = get_args(RunnerKind)

# Seconds between SIGTERM and SIGKILL (`runner.kill_grace`).
KILL_GRACE = 10.0
# The wait between SIGTERM and SIGKILL: long enough for a clean shutdown, never a second timeout.
MAX_KILL_GRACE = 3600


@dataclass(frozen=True)
class RetryRules:
    infra: tuple[str, ...] = DEFAULT_INFRA
    never: tuple[str, ...] = DEFAULT_NEVER
    retriable: tuple[str, ...] = DEFAULT_RETRIABLE


# Names (shell-style patterns, case-sensitive) of the variables that hold secrets: a test never
# sees them, and `ci-policy run` keeps them out of its own environment block while tests run.
SECRET_NAMES = (
    "GITHUB_TOKEN", "ACTIONS_*", "CI_POLICY_DATABASE_URL", "*_TOKEN", "*_TOKEN_*", "*SECRET*",
    "*PASSWORD*", "*_KEY", "*_CREDENTIALS", "PGPASSWORD", "PGSERVICEFILE", "PGPASSFILE",
)
# Names a test never sees, whatever `runner.env` says: the secrets, and the files through which
# a step talks to the workflow (a test writing them could set outputs or the next step's env).
ALWAYS_DROPPED = SECRET_NAMES + (
    "GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY",
)
# `runner.user`: a user name as useradd takes it, or a numeric user id.
USER_PATTERN = r"[A-Za-z_][A-Za-z0-9_.-]{0,31}|[0-9]{1,10}"
DEFAULT_ALLOW = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR",
    "PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "PYTHONWARNINGS",
    "PYTHONFAULTHANDLER", "PYTHONUTF8", "VIRTUAL_ENV", "CONDA_PREFIX", "LD_LIBRARY_PATH",
    "CUDA_*", "NVIDIA_*", "NCCL_*", "ROCR_*", "ROCM_*", "HIP_*", "HSA_*", "OMP_*", "MKL_*", "TORCH_*",
    "TRITON_*", "HF_*", "TRANSFORMERS_*",
    "CI", "GITHUB_ACTIONS", "GITHUB_SHA", "GITHUB_REF", "GITHUB_REPOSITORY", "GITHUB_RUN_ID",
    "GITHUB_RUN_ATTEMPT",
)

ENV_NAME_PATTERN = LazyRegex(r"[A-Za-z0-9_*?]+")


def check_regex(value: str) -> str | None:
    try:
        re.compile(value)
    except (re.error, RecursionError, OverflowError) as exc:  # the last two: nested or repeated past re's limits
        return f"{value!r} is not a valid regular expression: {exc}"
    return None


def check_env_pattern(value: str) -> str | None:
    if not ENV_NAME_PATTERN.fullmatch(value):
        return (f"{value!r} is not a variable name pattern (letters, digits, `_`, and the wildcards "
                "`*` and `?`)")
    return None


@dataclass(frozen=True)
class EnvRules:
    allow: tuple[str, ...] = DEFAULT_ALLOW
    drop: tuple[str, ...] = ()


def child_env(environ: Mapping[str, str], rules: EnvRules) -> dict[str, str]:
    """The variables of `environ` a test may see under `rules`."""
    allowed, dropped = any_name_match(rules.allow), any_name_match(rules.drop + ALWAYS_DROPPED)
    return {name: value for name, value in environ.items() if allowed(name) and not dropped(name)}
