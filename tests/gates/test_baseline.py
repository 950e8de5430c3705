"""The one rule for writing baselines, shared by `ci-policy plan` and `ci-policy gate`."""

from __future__ import annotations

import pytest

from ci_policy.config.cadences import CADENCES
from ci_policy.gates.baseline import WRITING_CADENCES, writes_baseline

PR_EVENTS = ("pull_request", "pull_request_target", "pull_request_review", "pull_request_review_comment")
OTHER_EVENTS = ("schedule", "workflow_dispatch", "workflow_call", "push", None)


def test_the_writing_cadences_are_nightly_and_weekly():
    assert WRITING_CADENCES == ("nightly", "weekly")
    assert set(WRITING_CADENCES) < set(CADENCES)


@pytest.mark.parametrize("event", PR_EVENTS)
@pytest.mark.parametrize("cadence", CADENCES)
def test_never_for_any_pull_request_event(cadence, event):
    assert writes_baseline(cadence, event) == (False, "pull request runs never write baselines")


@pytest.mark.parametrize("event", OTHER_EVENTS)
@pytest.mark.parametrize("cadence", ["nightly", "weekly"])
def test_nightly_and_weekly_schedule_and_dispatch_runs_write(cadence, event):
    assert writes_baseline(cadence, event) == (True, "")


@pytest.mark.parametrize("event", OTHER_EVENTS)
@pytest.mark.parametrize("cadence", ["regular", "release"])
def test_never_for_regular_or_release(cadence, event):
    assert writes_baseline(cadence, event) == (False, f"the {cadence} cadence does not write baselines")


@pytest.mark.parametrize("cadence", CADENCES)
def test_never_for_a_merge_queue_entry(cadence):
    assert writes_baseline(cadence, "merge_group") == (False, "merge queue runs never write baselines")


@pytest.mark.parametrize("cadence, event, expected", [
    ("nightly", "schedule", (True, "")),
    ("weekly", "schedule", (True, "")),
    ("nightly", "workflow_dispatch", (True, "")),
    ("nightly", None, (True, "")),
    ("nightly", "pull_request", (False, "pull request runs never write baselines")),
    ("weekly", "pull_request", (False, "pull request runs never write baselines")),
    ("regular", "pull_request", (False, "pull request runs never write baselines")),
    ("regular", "workflow_dispatch", (False, "the regular cadence does not write baselines")),
    ("release", "workflow_call", (False, "the release cadence does not write baselines")),
    ("release", None, (False, "the release cadence does not write baselines")),
])
def test_the_cases_the_gate_command_meets(cadence, event, expected):
    assert writes_baseline(cadence, event) == expected
