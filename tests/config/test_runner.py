"""`runner:` (`ci_policy.config.runner`): how `ci-policy run` retries, times out and stops files."""

from __future__ import annotations

import re

import pytest
from config_cases import VALID, coded, coded_err

from ci_policy.config import RetryRules, RunnerConfig, parse_config
from ci_policy.config.runner import DEFAULT_INFRA, DEFAULT_NEVER, DEFAULT_RETRIABLE, RUNNER_TABLE


def test_no_runner_section_means_the_defaults():
    assert RUNNER_TABLE.default("timeout_from_est_time") is None
    assert RUNNER_TABLE.default("kill_grace") == 10.0
    assert parse_config(VALID).runner == RunnerConfig(
        retry=RetryRules(infra=DEFAULT_INFRA, never=DEFAULT_NEVER, retriable=DEFAULT_RETRIABLE),
        timeout_from_est_time=None, kill_grace=10.0)


@pytest.mark.parametrize("rules, line", [
    (DEFAULT_INFRA, "RuntimeError: NCCL watchdog timeout after 600000 ms"),
    (DEFAULT_INFRA, "OSError: [Errno 28] No space left on device"),
    (DEFAULT_NEVER, "ModuleNotFoundError: No module named 'flash_attn'"),
    (DEFAULT_NEVER, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),
    (DEFAULT_RETRIABLE, "AssertionError: accuracy 0.61 is below 0.65"),
    (DEFAULT_RETRIABLE, "throughput 812 tok/s is lower than 900"),
])
def test_the_default_retry_rules_match_the_output_they_describe(rules, line):
    assert any(re.search(rule, line) for rule in rules)


def test_every_runner_key_set():
    text = VALID + ("runner:\n"
                    "  retry: {infra: ['Broken pipe'], never: []}\n"
                    "  timeout_from_est_time: {factor: 3, floor: 60.5}\n"
                    "  kill_grace: 0\n")
    # A retry list left out keeps its default; an empty one turns that class off.
    assert parse_config(text).runner == RunnerConfig(
        retry=RetryRules(infra=("Broken pipe",), never=(), retriable=DEFAULT_RETRIABLE),
        timeout_from_est_time=(3, 60.5), kill_grace=0)


@pytest.mark.parametrize("section, needle, message, code", [
    ("runner: {kill_grace: -1}\n", "-1", "runner.kill_grace: must be at least 0, got -1", "CP105"),
    ("runner: {timeout_from_est_time: {factor: 0, floor: 60}}\n", "0,",
     "runner.timeout_from_est_time.factor: must be greater than 0, got 0", "CP105"),
    ("runner: {timeout_from_est_time: {factor: 2}}\n", "{factor",
     "runner.timeout_from_est_time.floor: required key is missing", "CP103"),
    ("runner: {retry: {infra: ['(']}}\n", "'('",
     "runner.retry.infra[0]: '(' is not a valid regular expression: missing ), unterminated subpattern "
     "at position 0", "CP105"),
    ("runner: {retry: {infra: 'NCCL'}}\n", "'NCCL'",
     "runner.retry.infra: expected a list, got a string ('NCCL')", "CP104"),
])
def test_invalid_runner(section, needle, message, code):
    text = VALID + section
    assert coded(text) == [coded_err(text, needle, message, code)]
