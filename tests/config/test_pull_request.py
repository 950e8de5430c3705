"""`pull_request:` (`ci_policy.config.pull_request`): the labels a PR needs before its stages run."""

from __future__ import annotations

import pytest
from config_cases import VALID, coded, coded_err, stages

from ci_policy.config.pull_request import PULL_REQUEST_TABLE, PullRequest
from ci_policy.config.top import parse_config


def test_no_section_means_no_gate():
    assert PULL_REQUEST_TABLE.default("require_labels") == ()
    assert parse_config(VALID).pull_request == PullRequest(require_labels=(), line=None)


def test_require_labels_are_raw_pr_labels():
    text = VALID + 'pull_request:\n  require_labels: [run-ci, "high priority", Ready/GPU]\n'
    assert parse_config(text).pull_request == PullRequest(require_labels=("run-ci", "high priority", "Ready/GPU"),
                                                          line=7)


def test_stage_requires_labels():
    text = stages("{name: cpu, backend: cpu, requires_labels: [run-ci-extra, run-ci]}")
    assert parse_config(text).stages[0].requires_labels == ("run-ci-extra", "run-ci")
    assert parse_config(VALID).stages[0].requires_labels == ()


LONG = "x" * 51


@pytest.mark.parametrize("section, needle, message, code", [
    ("pull_request: {require_labels: []}\n", "[]", "pull_request.require_labels: must not be empty", "CP105"),
    ("pull_request: {require_labels: run-ci}\n", "run-ci",
     "pull_request.require_labels: expected a list, got a string ('run-ci')", "CP104"),
    ("pull_request: {require_labels: [run-ci, run-ci]}\n", "run-ci]",
     "pull_request.require_labels[1]: duplicate entry 'run-ci'", "CP106"),
    ("pull_request: {require_labels: ['']}\n", "''", "pull_request.require_labels[0]: a PR label cannot be empty",
     "CP105"),
    ("pull_request: {require_labels: [' run-ci']}\n", "' run-ci'",
     "pull_request.require_labels[0]: ' run-ci' has leading or trailing whitespace, which GitHub strips from a "
     "label", "CP105"),
    ('pull_request: {require_labels: ["run\\tci"]}\n', '"run',
     "pull_request.require_labels[0]: 'run\\tci' has control characters; a PR label cannot", "CP105"),
    (f"pull_request: {{require_labels: [{LONG}]}}\n", LONG,
     "pull_request.require_labels[0]: 'xxxxxxxxxxxxxxxxxxxx'... is longer than 50 characters, GitHub's limit for "
     "a label", "CP105"),
    ("pull_request: {require_label: [run-ci]}\n", "require_label",
     "pull_request.require_label: unknown key; did you mean 'require_labels'?", "CP102"),
    ("pull_request: [run-ci]\n", "[run-ci]", "pull_request: expected a mapping, got a list", "CP104"),
])
def test_invalid_pull_request(section, needle, message, code):
    text = VALID + section
    hint = "allowed keys here: priority_labels, require_labels" if code == "CP102" else None
    assert coded(text) == [coded_err(text, needle, message, code, hint)]


def test_invalid_stage_requires_labels():
    text = stages("{name: cpu, backend: cpu, requires_labels: [ok, '']}")
    assert coded(text) == [coded_err(text, "'']", "stages[0].requires_labels[1]: a PR label cannot be empty",
                                     "CP105")]
