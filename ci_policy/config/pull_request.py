"""`pull_request:` what a pull request must carry before its accelerator stages run, and
which of its labels raise a stage's parallelism.

- In: the optional `pull_request` mapping; `require_labels` is a list of raw PR labels.
- Out: a frozen `PullRequest`; `require_labels` empty means no gate (today's behaviour);
  `priority_labels` raise a stage's `max_parallel.priority`.
- Gate labels are raw GitHub label names compared exactly as the PR carries them (`run-ci`,
  `high priority`), not entries of the label registry: they never select tests.
  `gate_label` is the parser for them (also `stages[].requires_labels`).
- Refused: an empty list, and a label GitHub could not carry: empty, longer than 50
  characters (GitHub's limit), with control characters, or with leading or trailing
  whitespace (GitHub strips it).
- `gate_near_misses`: gate labels one edit (or only letter case) away from a label
  ci-policy knows or from another gate label, for `lint`'s warning: a misspelt gate would
  otherwise skip its stages on every PR without any error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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


# What `check_gate_label` accepts: 1 to 50 characters, no control character, no space at either end.
GATE_LABEL: fields.JsonSchema = {"minLength": 1, "maxLength": MAX_LABEL_LENGTH,
                                 "pattern": "^[^\\s\\x00-\\x1f\\x7f](?:[^\\x00-\\x1f\\x7f]*[^\\s\\x00-\\x1f\\x7f])?$"}


def gate_labels(kind: str) -> fields.Parser:
    return fields.strings(kind, non_empty=True, check=check_gate_label, item=GATE_LABEL)


PULL_REQUEST_TABLE = Table("pull_request", "What a pull request must carry before its stages run, and which PR "
                           "labels raise parallelism.", (
    Key("require_labels", gate_labels("non-empty list of raw PR labels"), (),
        "No accelerator stage runs on a pull request that carries none of these labels.",
        shown_default="none: no gate"),
    Key("priority_labels", fields.strings("list of raw PR labels", check=check_gate_label, item=GATE_LABEL), (),
        "PR labels (as written on GitHub, e.g. `high priority`) that raise a stage's `max_parallel.priority`.",
        shown_default="none"),
))


@dataclass(frozen=True)
class PullRequest:
    """`pull_request:` the labels a PR needs before any accelerator stage runs."""

    require_labels: tuple[str, ...] = PULL_REQUEST_TABLE.default("require_labels")
    priority_labels: tuple[str, ...] = PULL_REQUEST_TABLE.default("priority_labels")
    line: int | None = None


def _build(s: Schema, v: Values) -> PullRequest:
    return PullRequest(require_labels=v.get("require_labels"), priority_labels=v.get("priority_labels"),
                       line=v.line)


PULL_REQUEST = fields.mapping_of(PULL_REQUEST_TABLE, _build)


# A gate label as the configuration names it: (label, field, line).
GateReference = tuple[str, str, int | None]


def _one_edit(a: str, b: str) -> bool:
    """One substitution, insertion, deletion or swap of neighbours apart, ignoring letter case.

    A digit for a digit does not count: `run-ci-h100` and `run-ci-h200` are variants, not typos.
    """
    a, b = a.lower(), b.lower()
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        swapped = a[i:i + 2] == b[i:i + 2][::-1] and a[i + 2:] == b[i + 2:]
        replaced = a[i + 1:] == b[i + 1:] and not (a[i].isdigit() and b[i].isdigit())
        return swapped or replaced
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return longer[i + 1:] == shorter[i:]


def gate_near_misses(gates: Sequence[GateReference], known: Iterable[str]) -> list[tuple[str, str, str, int | None]]:
    """(label, the label it nearly is, field, line) for each gate label that looks misspelt.

    `known` are the PR labels ci-policy reads (`run-ci-<known label>`, scopes, workflow-only
    labels); a gate label equal to one of them is fine. Against another gate label, only the
    one named less often is reported (both when named equally often).
    """
    known = set(known)
    uses: dict[str, int] = {}
    for label, _field, _line in gates:
        uses[label] = uses.get(label, 0) + 1
    out = []
    for label, field, line in gates:
        if label in known:
            continue
        near = sorted(k for k in known if _one_edit(label, k))
        near += sorted(g for g in uses if g != label and uses[g] >= uses[label] and _one_edit(label, g))
        if near:
            out.append((label, near[0], field, line))
    return out
