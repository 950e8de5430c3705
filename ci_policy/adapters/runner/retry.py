"""Retry classification: is a failed attempt worth another try?

- In: the attempt's outcome (`fail` or `timeout`), the failure kind the test reported
  itself (the content of `$CI_POLICY_FAILURE_KIND_FILE`: `infra`, `flaky` or `code`),
  the captured tail of its output, how many times it already timed out, and the
  configured regex lists (`runner.retry: {infra, never, retriable}`).
- Out: a `Verdict(kind, retriable, reason)`.
- Refused: nothing: a reported kind other than `REPORTED_KINDS` counts as no report; the
  regexes were checked when they were configured.
- Order: a test's own report of `code` wins (not retried); then the regex lists, checked
  infra-retriable, never, retriable; then a timeout is retriable once. Anything
  unclassified is not retried: a retry should only hide what a retry can fix. An
  unclassified death by signal names the signal (`killed by SIGSEGV`).
- A test's report of `infra` or `flaky` never makes a failure retriable (the test is the
  PR's code, and would buy itself retries): it is named in the reason, and the output
  decides as if nothing was reported. Retries stay bounded by `--max-attempts` whatever
  any report says.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ci_policy.config.runrules import RetryRules
from ci_policy.plan.results import FailureKind, Verdict

REPORTED_KINDS: tuple[FailureKind, ...] = ("infra", "flaky", "code")


def _first_match(patterns: Sequence[str], text: str) -> str | None:
    for pattern in patterns:
        if re.search(pattern, text):
            return pattern
    return None


def classify(status: str, tail: str, reported: str | None, timeouts_before: int,
             rules: RetryRules, killed_by: str | None = None) -> Verdict:
    if reported == "code":
        return Verdict("code", False, "the test reported a code failure")
    verdict = _by_output(status, tail, timeouts_before, rules, killed_by)
    if reported in REPORTED_KINDS:
        article = "an" if reported[0] in "aeiou" else "a"
        return Verdict(verdict.kind, verdict.retriable,
                       f"{verdict.reason} (the test reported {article} {reported} failure, which alone "
                       "never earns a retry)")
    return verdict


def _by_output(status: str, tail: str, timeouts_before: int, rules: RetryRules,
               killed_by: str | None = None) -> Verdict:
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
