"""The names CI policy speaks of, and the PR labels built from them: stated once.

- In: nothing read; the helpers take names the readers already hold.
- Out: the patterns and helpers below.
- Refused: nothing: each reader matches its names against these patterns and reports a
  mismatch in its own located error.
- `NAME` / `NAME_RE`: a label, stage, scope or runner name, `[A-Za-z0-9][A-Za-z0-9_.-]*`
  (starts with a letter or digit; then letters, digits, `_`, `.`, `-`).
- `STAGE_KEY` / `STAGE_KEY_RE`: how a stage is named in plans and on the command line:
  `NAME`, or `NAME@BACKEND` for a name several backends configure, then `+VARIANT` for a
  variant of it (`config.stages`).
- `CI_LABEL_PREFIX` / `CI_LABEL_RE`: the PR label `run-ci-<name>` that requests a label's
  tests (group 1 is the name).
- `WORKFLOW_ONLY_LABELS`: the PR labels that steer the workflow itself rather than name
  tests: `nightly` (the nightly cadence on a PR) and `bypass-fastfail`.
- `is_ci_label(label)`: a label the CI policy reads (`run-ci-<name>` or workflow-only).
- `CALLER_WORKFLOW`: the file name of an adopting repository's one caller workflow
  (`.github/workflows/ci-policy.yml`, written by `ci-policy init --workflows`): the workflow the
  comment gateway dispatches by default, for the pipeline and for `/rerun-test`.
- `closest(word, names)` / `did_you_mean(word, names)`: the known name a misspelt one is
  closest to (difflib's, cutoff 0.6), for a hint.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ci_policy.read.lazyregex import LazyRegex

NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
NAME_RE = re.compile(NAME)
# How a stage is named in plans, `--stage` and `after` (`config.stages`): NAME, or NAME@BACKEND
# when several backends configure NAME; `+VARIANT` for one of its variants (never in `after`).
STAGE_KEY = rf"{NAME}(?:@[a-z][a-z0-9_]*)?(?:\+{NAME})?"
STAGE_KEY_RE = LazyRegex(STAGE_KEY)


def suite_of_key(key: str) -> str:
    """The stage name (the registrations' `suite`) a stage key starts with: `a@rocm+mi355` -> `a`."""
    return re.split(r"[@+]", key, maxsplit=1)[0]

CI_LABEL_PREFIX = "run-ci-"
CI_LABEL_RE = re.compile(rf"{CI_LABEL_PREFIX}({NAME})")

WORKFLOW_ONLY_LABELS = ("nightly", "bypass-fastfail")

CALLER_WORKFLOW = "ci-policy.yml"


def is_ci_label(label: str) -> bool:
    return bool(CI_LABEL_RE.fullmatch(label)) or label in WORKFLOW_ONLY_LABELS


def closest(word: str, names: Iterable[str]) -> str | None:
    """The name of `names` closest to `word`, if any is close enough to suggest."""
    # For a misspelt name only: test_a_stage_job_given_its_plan_imports_no_glob_gate_or_other_command_module
    import difflib

    found = difflib.get_close_matches(word, list(names), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, names: Iterable[str]) -> str:
    """`; did you mean 'NAME'?` for the closest name, else nothing."""
    close = closest(word, names)
    return f"; did you mean {close!r}?" if close is not None else ""
