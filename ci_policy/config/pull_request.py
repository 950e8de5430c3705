"""`pull_request:` what a pull request must carry before its accelerator stages run.

- In: the optional `pull_request` mapping; `require_labels` is a list of raw PR labels.
- Out: a frozen `PullRequest`; `require_labels` empty means no gate (today's behaviour).
- Gate labels are raw GitHub label names compared exactly as the PR carries them (`run-ci`,
  `high priority`), not entries of the label registry: they never select tests.
  `gate_label` is the parser for them (also `stages[].requires_labels`).
- Refused: an empty list, and a label GitHub could not carry: empty, longer than 50
  characters (GitHub's limit), with control characters, or with leading or trailing
  whitespace (GitHub strips it).
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_policy.config import fields
from ci_policy.config.fields import Key, Table, Values
from ci_policy.read.yamlnodes import Schema

MAX_LABEL_LENGTH = 50


def check_gate_label(value: str) -> str | None:
    if not value:
        return "a PR label cannot be empty"
    if len(value) > MAX_LABEL_LENGTH:
        return f"{value[:20]!r}... is longer than {MAX_LABEL_LENGTH} characters, GitHub's limit for a label"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return f"{value!r} has control characters; a PR label cannot"
    if value != value.strip():
        return f"{value!r} has leading or trailing whitespace, which GitHub strips from a label"
    return None


def gate_labels(kind: str) -> fields.Parser:
    return fields.strings(kind, non_empty=True, check=check_gate_label)


PULL_REQUEST_TABLE = Table("pull_request", "What a pull request must carry before its stages run.", (
    Key("require_labels", gate_labels("non-empty list of raw PR labels"), (),
        "No accelerator stage runs on a pull request that carries none of these labels.",
        shown_default="none: no gate"),
))


@dataclass(frozen=True)
class PullRequest:
    """`pull_request:` the labels a PR needs before any accelerator stage runs."""

    require_labels: tuple[str, ...] = PULL_REQUEST_TABLE.default("require_labels")
    line: int | None = None


def _build(s: Schema, v: Values) -> PullRequest:
    return PullRequest(require_labels=v.get("require_labels"), line=v.line)


PULL_REQUEST = fields.mapping_of(PULL_REQUEST_TABLE, _build)
