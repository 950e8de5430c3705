"""`pull_request:` what raw PR labels mean to the plan beyond test selection.

- In: the `pull_request` mapping.
- Out: a frozen `PullRequest`: `priority_labels`, raw PR labels (as GitHub names them,
  e.g. `high priority`, not only `run-ci-<name>`) that raise a stage's
  `max_parallel.priority`.
- Refused: a label that is not a non-empty string, a label listed twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_policy.config.fields import Key, Table, Values, mapping_of, strings
from ci_policy.read.yamlnodes import Schema


def _check_label(value: str) -> str | None:
    return "a PR label must not be empty" if not value.strip() else None


PULL_REQUEST_TABLE = Table("pull_request", "What raw PR labels mean to the plan.", (
    Key("priority_labels", strings("list of raw PR labels", check=_check_label), (),
        "PR labels (as written on GitHub, e.g. `high priority`) that raise a stage's `max_parallel.priority`.",
        shown_default="none"),
))


@dataclass(frozen=True)
class PullRequest:
    priority_labels: tuple[str, ...] = PULL_REQUEST_TABLE.default("priority_labels")
    line: int | None = None


def _build(s: Schema, v: Values) -> PullRequest:
    return PullRequest(priority_labels=v.get("priority_labels"), line=v.line)


PULL_REQUEST = mapping_of(PULL_REQUEST_TABLE, _build)
