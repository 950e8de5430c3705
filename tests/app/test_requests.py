"""app: the use cases, request in, result out (the cheap ones, without a checkout)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_policy.app.attempts import MAX_RUN_ATTEMPT, attempt_of, run_attempt
from ci_policy.app.planning import trigger_and_diff
from ci_policy.app.requests import PlanInputs, PlanRequest
from ci_policy.app.result import ResultRequest, result
from ci_policy.app.stores import store_url
from ci_policy.errors import UsageError


def test_a_run_attempt_is_ascii_digits_from_1_to_the_maximum(monkeypatch) -> None:
    assert run_attempt("007") == 7
    assert run_attempt(str(MAX_RUN_ATTEMPT)) == MAX_RUN_ATTEMPT
    with pytest.raises(ValueError, match="^must be at least 1, got 0$"):
        run_attempt("0")
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "x")
    with pytest.raises(UsageError) as err:
        attempt_of()
    assert (err.value.source, err.value.message) == ("$GITHUB_RUN_ATTEMPT", "is not a number: 'x'")
    assert attempt_of(3) == 3


def test_empty_plan_inputs_are_not_given_and_the_trigger_says_what_was() -> None:
    request = PlanRequest(Path("."), None, PlanInputs(event="schedule", labels=("a",), schedule="", cadence="nightly",
                                                      base="", head=""))
    trigger, diff = trigger_and_diff(request)
    assert (trigger.event, trigger.labels, trigger.schedule, trigger.cadence, trigger.trust) == (
        "schedule", ("a",), None, "nightly", "trusted")
    assert (diff().available, diff().reason) == (False, "no --diff or --base was given")


@pytest.mark.parametrize("inputs, source, message", [
    (PlanInputs(event="push", trust=""), "--trust", "expected one of trusted, untrusted, approved, got ''"),
    (PlanInputs(event="pull_request", forced="true"), "--forced", "only a push is forced, not a pull_request event"),
    (PlanInputs(event="push", head="abc"), "--head", "needs --base"),
])
def test_inconsistent_plan_inputs_name_the_option(inputs, source, message) -> None:
    with pytest.raises(UsageError) as err:
        trigger_and_diff(PlanRequest(Path("."), None, inputs))
    assert (err.value.source, err.value.message) == (source, message)


def test_the_result_of_a_pipeline_is_read_from_its_texts() -> None:
    decided = result(ResultRequest("true", '{"a": {"result": "success"}}'))
    assert (decided.plan_complete, decided.outcome.ok, decided.outcome.failures) == (True, True, ())
    with pytest.raises(UsageError) as err:
        result(ResultRequest("true", " "))
    assert (err.value.source, err.value.message) == ("--needs-json", "is empty")
    with pytest.raises(UsageError) as err:
        result(ResultRequest(None, '{"a": {"result": "success"}}', plan=""))
    assert (err.value.source, err.value.message) == ("--plan", "nothing says whether the plan is complete")


def test_a_store_file_holds_one_url(tmp_path) -> None:
    (tmp_path / "url").write_text("\nsqlite:///x.db\n")
    assert store_url(None, str(tmp_path / "url")) == "sqlite:///x.db"
    assert store_url(None, None) is None
    with pytest.raises(UsageError) as err:
        store_url("postgresql://u:pw@h/db", None)
    assert err.value.source == "--store"


def test_the_store_url_variable_is_the_stores_own() -> None:
    from ci_policy.adapters import store
    from ci_policy.app import stores

    assert stores.DATABASE_URL_ENV == store.DATABASE_URL_ENV
