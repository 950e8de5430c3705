"""Gate labels that look misspelt (`ci_policy.config.pull_request.gate_near_misses`), for lint's CP907."""

from __future__ import annotations

import pytest

from ci_policy.config.pull_request import _one_edit, gate_near_misses
from ci_policy.config.top import parse_config


@pytest.mark.parametrize("a, b, near", [
    ("run-ci-extar", "run-ci-extra", True),   # neighbours swapped
    ("run-ci-exta", "run-ci-extra", True),    # one left out
    ("run-ci-extraa", "run-ci-extra", True),  # one too many
    ("run-ci-extro", "run-ci-extra", True),   # one replaced
    ("Run-CI", "run-ci", True),               # letter case only: GitHub labels are unique regardless of case
    ("run-ci", "run-ci-a", False),            # two apart
    ("run-ci-h100", "run-ci-h200", False),    # a digit for a digit: a variant, not a typo
    ("run-ci-1gpu", "run-ci-lgpu", True),
    ("abc", "bca", False),
])
def test_one_edit(a, b, near):
    assert _one_edit(a, b) is near and _one_edit(b, a) is near


def test_near_misses_against_known_labels_and_other_gates():
    gates = [("run-ci-extra", "stages[0].requires_labels", 5), ("run-ci-extra", "stages[1].requires_labels", 6),
             ("run-ci-extar", "stages[2].requires_labels", 7), ("run-ci", "pull_request.require_labels", 9),
             ("run-ci-alll", "stages[3].requires_labels", 8), ("run-ci-h100", "stages[4].requires_labels", 10),
             ("run-ci-h200", "stages[5].requires_labels", 11), ("nightly", "stages[6].requires_labels", 12)]
    assert gate_near_misses(gates, ["run-ci-all", "nightly", "bypass-fastfail"]) == [
        ("run-ci-extar", "run-ci-extra", "stages[2].requires_labels", 7),
        ("run-ci-alll", "run-ci-all", "stages[3].requires_labels", 8),
    ]


def test_gate_labels_named_equally_often_are_both_reported():
    gates = [("run-ci-gate", "stages[0].requires_labels", 5), ("run-ci-gaet", "stages[1].requires_labels", 6)]
    assert gate_near_misses(gates, []) == [("run-ci-gate", "run-ci-gaet", "stages[0].requires_labels", 5),
                                           ("run-ci-gaet", "run-ci-gate", "stages[1].requires_labels", 6)]


def test_gate_references_name_their_field_and_line():
    config = parse_config("""\
version: 1
discovery: {roots: [tests]}
stages:
  - {name: cpu, backend: cpu, requires_labels: [a, b]}
  - {name: gpu, backend: cuda, runs_on: [h200]}
pull_request: {require_labels: [run-ci]}
""")
    assert config.gate_references() == (("run-ci", "pull_request.require_labels", 6),
                                        ("a", "stages[0].requires_labels", 4), ("b", "stages[0].requires_labels", 4))
