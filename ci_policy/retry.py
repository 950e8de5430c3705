"""Retry classification: is a failed attempt worth another try?

- In: the attempt's outcome (`fail` or `timeout`), the failure kind the test reported
  itself (the content of `$CI_POLICY_FAILURE_KIND_FILE`: `infra`, `flaky` or `code`),
  the captured tail of its output, how many times it already timed out, and the
  configured regex lists (`runner.retry: {infra, never, retriable}`).
- Out: a `Verdict(kind, retriable, reason)`.
- Order: the test's own report wins; then the regex lists, checked infra-retriable,
  never, retriable; then a timeout is retriable once. Anything unclassified is not retried:
  a retry should only hide what a retry can fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

REPORTED_KINDS = {"infra": True, "flaky": True, "code": False}

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


@dataclass(frozen=True)
class RetryRules:
    infra: tuple[str, ...] = DEFAULT_INFRA
    never: tuple[str, ...] = DEFAULT_NEVER
    retriable: tuple[str, ...] = DEFAULT_RETRIABLE


@dataclass(frozen=True)
class Verdict:
    kind: str            # infra | flaky | code | timeout | unknown
    retriable: bool
    reason: str


def _first_match(patterns: Sequence[str], text: str) -> Optional[str]:
    for pattern in patterns:
        if re.search(pattern, text):
            return pattern
    return None


def classify(status: str, tail: str, reported: Optional[str], timeouts_before: int,
             rules: RetryRules) -> Verdict:
    if reported in REPORTED_KINDS:
        return Verdict(reported, REPORTED_KINDS[reported], f"the test reported {'an' if reported[0] in 'aeiou' else 'a'} {reported} failure")
    hit = _first_match(rules.infra, tail)
    if hit:
        return Verdict("infra", True, f"output matches infra pattern {hit!r}")
    hit = _first_match(rules.never, tail)
    if hit:
        return Verdict("code", False, f"output matches never-retry pattern {hit!r}")
    hit = _first_match(rules.retriable, tail)
    if hit:
        return Verdict("flaky", True, f"output matches retriable pattern {hit!r}")
    if status == "timeout":
        if timeouts_before == 0:
            return Verdict("timeout", True, "timed out (a timeout is retried once)")
        return Verdict("timeout", False, "timed out again")
    return Verdict("unknown", False, "failure not classified as retriable")
