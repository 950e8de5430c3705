"""Retry classification (`ci_policy.adapters.runner.retry.classify`): exact verdicts, table-driven.

Order under test: the test's own report of `code`, then the regex lists (infra, never,
retriable), then "a timeout is retried once"; anything else is not retried. A test's
report of `infra` or `flaky` never makes a failure retriable (finding 4 of issue 14: a PR's
test bought itself retries by writing `infra`).
"""

from __future__ import annotations

import pytest

from ci_policy.adapters.runner.retry import classify
from ci_policy.config.runrules import DEFAULT_INFRA, DEFAULT_NEVER, DEFAULT_RETRIABLE, RetryRules
from ci_policy.plan.results import Verdict

DEFAULT = RetryRules()

SERVER = "output matches infra pattern 'Server failed to start'"
IMPORT = "output matches never-retry pattern 'ImportError'"
ACCURACY = "output matches retriable pattern 'AssertionError: .*(accuracy|throughput|latency|score|speed)'"

CASES = [
    # id, status, tail, reported kind, timeouts before, expected verdict
    ("plain-failure", "fail", "AssertionError: 1 != 2\n", None, 0,
     Verdict("unknown", False, "failure not classified as retriable")),
    ("empty-output", "fail", "", None, 0,
     Verdict("unknown", False, "failure not classified as retriable")),
    ("infra-regex", "fail", "launching...\nServer failed to start after 300s\n", None, 0,
     Verdict("infra", True, SERVER)),
    ("never-regex", "fail", "ImportError: cannot import name 'x' from 'y'\n", None, 0,
     Verdict("code", False, IMPORT)),
    ("retriable-regex", "fail", "AssertionError: accuracy 0.71 below 0.80\n", None, 0,
     Verdict("flaky", True, ACCURACY)),
    ("retriable-second-pattern", "fail", "decode throughput 10 tok/s below 20 tok/s\n", None, 0,
     Verdict("flaky", True, "output matches retriable pattern "
             "'(accuracy|throughput|latency) .*(below|above|lower than|higher than|exceeds)'")),
    ("infra-before-never", "fail", "ImportError: x\nServer failed to start\n", None, 0,
     Verdict("infra", True, SERVER)),
    ("never-before-retriable", "fail", "AssertionError: accuracy 0.1\nImportError: x\n", None, 0,
     Verdict("code", False, IMPORT)),
    ("nccl-timeout", "fail", "NCCL watchdog thread timeout after 600000ms\n", None, 0,
     Verdict("infra", True, "output matches infra pattern 'NCCL .*timeout'")),
    ("connection-refused-local", "fail", "Connection refused: 127.0.0.1:30000\n", None, 0,
     Verdict("infra", True, "output matches infra pattern "
             "'(Connection refused|Connection reset by peer).*(127\\\\.0\\\\.0\\\\.1|localhost)'")),
    ("connection-refused-remote", "fail", "Connection refused: example.com:443\n", None, 0,
     Verdict("unknown", False, "failure not classified as retriable")),
    ("http-503", "fail", "requests.exceptions.HTTPError: 503 Server Error\n", None, 0,
     Verdict("infra", True, "output matches infra pattern 'HTTPError: 50[234]'")),
    ("http-500", "fail", "requests.exceptions.HTTPError: 500 Server Error\n", None, 0,
     Verdict("unknown", False, "failure not classified as retriable")),
    ("cuda-oom", "fail", "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate\n", None, 0,
     Verdict("code", False, "output matches never-retry pattern 'CUDA out of memory'")),
    ("module-not-found", "fail", "ModuleNotFoundError: No module named 'megatron'\n", None, 0,
     Verdict("code", False, "output matches never-retry pattern 'ModuleNotFoundError'")),
    # The test's report of a code failure wins over every regex (it can only stop retries).
    ("reported-code-beats-infra", "fail", "Server failed to start\n", "code", 0,
     Verdict("code", False, "the test reported a code failure")),
    # A report of infra or flaky never earns a retry: the output decides, the report is named.
    ("reported-infra-does-not-beat-never", "fail", "ImportError: x\n", "infra", 0,
     Verdict("code", False, f"{IMPORT} (the test reported an infra failure, which alone never earns a retry)")),
    ("reported-infra-unmatched", "fail", "something odd happened\n", "infra", 0,
     Verdict("unknown", False, "failure not classified as retriable (the test reported an infra failure, "
                               "which alone never earns a retry)")),
    ("reported-infra-with-infra-output", "fail", "Server failed to start\n", "infra", 0,
     Verdict("infra", True, f"{SERVER} (the test reported an infra failure, which alone never earns a retry)")),
    ("reported-flaky", "fail", "", "flaky", 0,
     Verdict("unknown", False, "failure not classified as retriable (the test reported a flaky failure, "
                               "which alone never earns a retry)")),
    ("reported-unknown-kind-ignored", "fail", "Server failed to start\n", "banana", 0,
     Verdict("infra", True, SERVER)),
    ("reported-unknown-kind-unmatched", "fail", "boom\n", "banana", 0,
     Verdict("unknown", False, "failure not classified as retriable")),
    # Timeouts: retried once, unless a regex or a report decided first.
    ("timeout-first", "timeout", "still waiting...\n", None, 0,
     Verdict("timeout", True, "timed out (a timeout is retried once)")),
    ("timeout-second", "timeout", "still waiting...\n", None, 1,
     Verdict("timeout", False, "timed out again")),
    ("timeout-third", "timeout", "", None, 2,
     Verdict("timeout", False, "timed out again")),
    ("timeout-never-regex", "timeout", "NameError: name 'x' is not defined\n", None, 0,
     Verdict("code", False, "output matches never-retry pattern 'NameError'")),
    ("timeout-infra-regex", "timeout", "Server failed to start\n", None, 1,
     Verdict("infra", True, SERVER)),
    ("timeout-reported-code", "timeout", "", "code", 0,
     Verdict("code", False, "the test reported a code failure")),
    # A failed (not timed-out) attempt is never "retried once" as a timeout.
    ("fail-is-not-timeout", "fail", "still waiting...\n", None, 0,
     Verdict("unknown", False, "failure not classified as retriable")),
]


@pytest.mark.parametrize("status, tail, reported, timeouts_before, expected",
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_classify_default_rules(status, tail, reported, timeouts_before, expected):
    assert classify(status, tail, reported, timeouts_before, DEFAULT) == expected


CUSTOM = RetryRules(infra=(r"GPU \d+ fell off the bus",), never=(r"FATAL",), retriable=(r"wobble",))

CUSTOM_CASES = [
    ("custom-infra", "fail", "Xid 79: GPU 3 fell off the bus\n", None, 0,
     Verdict("infra", True, "output matches infra pattern 'GPU \\\\d+ fell off the bus'")),
    ("custom-never", "fail", "FATAL: bad config\n", None, 0,
     Verdict("code", False, "output matches never-retry pattern 'FATAL'")),
    ("custom-retriable", "fail", "a wobble in the metric\n", None, 0,
     Verdict("flaky", True, "output matches retriable pattern 'wobble'")),
    # A configured list replaces the defaults: the default infra/never patterns no longer apply.
    ("default-infra-replaced", "fail", "Server failed to start\n", None, 0,
     Verdict("unknown", False, "failure not classified as retriable")),
    ("default-never-replaced", "fail", "ImportError: x\n", None, 0,
     Verdict("unknown", False, "failure not classified as retriable")),
    ("custom-order", "fail", "FATAL wobble; GPU 0 fell off the bus\n", None, 0,
     Verdict("infra", True, "output matches infra pattern 'GPU \\\\d+ fell off the bus'")),
]


@pytest.mark.parametrize("status, tail, reported, timeouts_before, expected",
                         [case[1:] for case in CUSTOM_CASES], ids=[case[0] for case in CUSTOM_CASES])
def test_classify_configured_rules(status, tail, reported, timeouts_before, expected):
    assert classify(status, tail, reported, timeouts_before, CUSTOM) == expected


def test_empty_rules_leave_only_reports_and_the_timeout_rule():
    rules = RetryRules(infra=(), never=(), retriable=())
    assert classify("fail", "Server failed to start\nImportError\n", None, 0, rules) == \
        Verdict("unknown", False, "failure not classified as retriable")
    assert classify("timeout", "ImportError\n", None, 0, rules) == \
        Verdict("timeout", True, "timed out (a timeout is retried once)")
    assert classify("fail", "", "flaky", 0, rules) == Verdict(
        "unknown", False, "failure not classified as retriable (the test reported a flaky failure, which alone "
                          "never earns a retry)")
    assert classify("fail", "", "code", 0, rules) == Verdict("code", False, "the test reported a code failure")


def test_default_rules_are_the_documented_lists():
    assert DEFAULT == RetryRules(infra=DEFAULT_INFRA, never=DEFAULT_NEVER, retriable=DEFAULT_RETRIABLE)
    assert "Server failed to start" in DEFAULT_INFRA
    assert "ImportError" in DEFAULT_NEVER
