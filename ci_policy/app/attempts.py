"""A run attempt, as a metric record names it: the option's, else GitHub Actions' `$GITHUB_RUN_ATTEMPT`.

- In: the text of `--run-attempt N` or of the environment's variable.
- Out: `run_attempt(text)` the attempt, 1 to `MAX_RUN_ATTEMPT`; `attempt_of(given)` the attempt
  a record belongs to (`given`, else `$GITHUB_RUN_ATTEMPT`, else 1).
- Refused: anything but ASCII digits (no sign, `_` or other scripts' digits, which `int` takes),
  0, or more than `MAX_RUN_ATTEMPT`: `ValueError` from `run_attempt`, quoting at most 40
  characters; `UsageError` naming `$GITHUB_RUN_ATTEMPT` from `attempt_of`.
"""

from __future__ import annotations

import os

from ci_policy.errors import UsageError

# A run attempt is stored as a 64-bit integer (SQLite, PostgreSQL's bigint).
MAX_RUN_ATTEMPT = 2**63 - 1


def run_attempt(text: str) -> int:
    shown = repr(text[:40]) + ("..." if len(text) > 40 else "")
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"is not a number: {shown}")
    if len(text.lstrip("0")) > 19 or int(text) > MAX_RUN_ATTEMPT:
        raise ValueError(f"must be at most {MAX_RUN_ATTEMPT}, got {shown}")
    if int(text) < 1:
        raise ValueError(f"must be at least 1, got {int(text)}")
    return int(text)


def attempt_of(given: int | None = None) -> int:
    if given:
        return given  # --run-attempt, checked by its parser
    try:
        return run_attempt(os.environ.get("GITHUB_RUN_ATTEMPT") or "1")
    except ValueError as exc:
        raise UsageError(str(exc), source="$GITHUB_RUN_ATTEMPT",
                         hint="pass --run-attempt N, or leave GITHUB_RUN_ATTEMPT to GitHub Actions") from None
