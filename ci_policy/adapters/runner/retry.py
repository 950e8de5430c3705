"""Retry classification: is a failed attempt worth another try?

- In: the attempt's outcome (`fail` or `timeout`), the failure kind the test reported
  itself (the content of `$CI_POLICY_FAILURE_KIND_FILE`: `infra`, `flaky` or `code`),
  the captured tail of its output, how many times it already timed out, and the
  configured regex lists (`runner.retry: {infra, never, retriable}`).
- Out: a `Verdict(kind, retriable, reason)`.
- Order: the test's own report wins; then the regex lists, checked infra-retriable,
  never, retriable; then a timeout is retriable once. Anything unclassified is not retried:
  a retry should only hide what a retry can fix. An unclassified death by signal names the
  signal (`killed by SIGSEGV`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_policy.config.runner import RetryRules
from ci_policy.plan.results import FailureKind, Verdict

REPORTED_KINDS: dict[FailureKind, bool] = {"infra": True, "flaky": True, "code": False}


def _first_match(patterns: Sequence[str], text: str) -> str | None:
    for pattern in patterns:
        if re.search(pattern, text):
            return pattern
    return None


def classify(status: str, tail: str, reported: str | None, timeouts_before: int,
             rules: RetryRules, killed_by: str | None = None) -> Verdict:
    for kind, retriable in REPORTED_KINDS.items():
        if reported == kind:
            article = "an" if kind[0] in "aeiou" else "a"
            return Verdict(kind, retriable, f"the test reported {article} {kind} failure")
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
    if killed_by is not None:
        return Verdict("unknown", False, f"killed by {killed_by}, not classified as retriable")
    return Verdict("unknown", False, "failure not classified as retriable")
