"""read.names: the name pattern, the `run-ci-<name>` PR labels and which labels CI policy reads."""

from __future__ import annotations

import pytest

from ci_policy.read.names import (
    CI_LABEL_PREFIX,
    CI_LABEL_RE,
    NAME,
    NAME_RE,
    WORKFLOW_ONLY_LABELS,
    closest,
    did_you_mean,
    is_ci_label,
)


def test_the_name_pattern():
    assert NAME == r"[A-Za-z0-9][A-Za-z0-9_.-]*"
    assert NAME_RE.pattern == NAME


@pytest.mark.parametrize("name", ["a", "Z", "0", "h200", "stage-c_4.gpu", "9-x", "A.b-c_d"])
def test_names_that_match(name):
    assert NAME_RE.fullmatch(name)


@pytest.mark.parametrize("name", ["", "-a", "_a", ".a", "a b", "a/b", "a:b", "ä", "a\n", "run ci"])
def test_names_that_do_not_match(name):
    assert NAME_RE.fullmatch(name) is None


def test_ci_label_carries_the_name_in_group_one():
    assert CI_LABEL_PREFIX == "run-ci-"
    match = CI_LABEL_RE.fullmatch("run-ci-megatron.v2")
    assert match is not None and match.group(1) == "megatron.v2"
    assert CI_LABEL_RE.fullmatch("run-ci-") is None
    assert CI_LABEL_RE.fullmatch("run-ci--x") is None
    assert CI_LABEL_RE.fullmatch("Run-ci-x") is None
    assert CI_LABEL_RE.fullmatch("run-ci-a b") is None


def test_workflow_only_labels():
    assert WORKFLOW_ONLY_LABELS == ("nightly", "bypass-fastfail")


@pytest.mark.parametrize("label, read", [
    ("run-ci-megatron", True),
    ("run-ci-0", True),
    ("nightly", True),
    ("bypass-fastfail", True),
    ("run-ci-", False),
    ("run-ci-_x", False),
    ("run-ci-a/b", False),
    ("megatron", False),
    ("Nightly", False),
    ("ci-run-x", False),
    ("xrun-ci-a", False),
    ("", False),
])
def test_is_ci_label(label, read):
    assert is_ci_label(label) is read


# -- did_you_mean ---------------------------------------------------------------------------


@pytest.mark.parametrize("word, choices, suggestion", [
    ("versoin", ["version", "stages"], "; did you mean 'version'?"),
    ("stage", ["version", "stages"], "; did you mean 'stages'?"),
    ("colour", ["version", "stages"], ""),
    ("x", [], ""),
])
def test_did_you_mean(word, choices, suggestion):
    assert did_you_mean(word, choices) == suggestion


def test_closest_is_the_nearest_name_or_none():
    assert closest("gpu-a", ["gpu-b", "cpu"]) == "gpu-b"
    assert closest("fsdp", iter(["megatron", "fsdp2"])) == "fsdp2"  # any iterable, read once
    assert closest("zzz", ["megatron"]) is None
