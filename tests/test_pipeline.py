"""The reusable PR pipeline (.github/workflows/pr-pipeline.yml), evaluated as GitHub would run it,
and the expression evaluator that does it (tests/workflow_eval.py)."""

from __future__ import annotations

import math

import pytest
from workflow_eval import (
    Event,
    ExpressionError,
    Status,
    condition,
    evaluate,
    expand_matrix,
    interpolate,
    loose_equal,
    simulate,
    to_string,
    truthy,
)

CTX = {
    "github": {"event_name": "pull_request", "event": {"action": "labeled", "pull_request": {"number": 7}},
               "run_attempt": "2"},
    "inputs": {"pull-request": "", "ci-policy-ref": "a" * 40},
    "needs": {"plan": {"result": "success", "outputs": {"trust": "approved", "matrix": '{"include": [{"a": 1}]}',
                                                        "empty": ""}}},
    "matrix": {"stage": "gpu-a", "lane": 0, "runs_on": ["h200", "1gpu"]},
    "steps": {"pr": {"outcome": "success", "outputs": {"head_sha": "b" * 40}}},
    "secrets": {"metrics-store-url": "postgresql://w"},
    "vars": {},
}


# -- the evaluator ------------------------------------------------------------------------------

@pytest.mark.parametrize("expression, value", [
    ("null", None), ("true", True), ("false", False), ("42", 42.0), ("-1.5", -1.5), ("0xff", 255.0),
    ("1e3", 1000.0), ("'it''s'", "it's"), ("''", ""),
    ("github.event_name", "pull_request"), ("github.EVENT_NAME", "pull_request"),
    ("github.event.pull_request.number", 7), ("github.event.nothing.deeper", None),
    ("inputs.pull-request", ""), ("inputs['ci-policy-ref']", "a" * 40), ("matrix.runs_on[1]", "1gpu"),
    ("matrix.runs_on[2]", None), ("steps.pr.outputs.head_sha", "b" * 40), ("secrets.metrics-store-url", "postgresql://w"),
    ("needs.plan.outputs.missing", None),
])
def test_literals_contexts_and_property_access(expression, value):
    assert evaluate(expression, CTX) == value


@pytest.mark.parametrize("expression, value", [
    # && and || give one of their operands, as on GitHub.
    ("'' || 'x'", "x"), ("'a' || 'x'", "a"), ("'a' && 'b'", "b"), ("0 && 'b'", 0.0), ("null || null", None),
    ("inputs.pull-request || github.event.pull_request.number || 'run'", 7),
    ("github.event.action == 'synchronize' && 'cancel' || 'wait'", "wait"),
    # ! binds tighter than ==, == tighter than &&, && tighter than ||.
    ("!true == false", True), ("true || false && false", True), ("(true || false) && false", False),
    ("!(1 == 2)", True), ("!''", True), ("!'false'", False),
])
def test_operators_and_precedence(expression, value):
    assert evaluate(expression, CTX) == value


@pytest.mark.parametrize("a, b, equal", [
    ("abc", "ABC", True),  # strings ignore case
    ("1", 1, True), ("", 0, True), ("", None, True), (None, 0, True), (True, 1, True), ("true", True, False),
    ("x", 0, False), ("0x10", 16, True), (" 2 ", 2, True), (math.nan, math.nan, False),
    ([], [], False), ({}, None, False), ("null", None, False),
])
def test_loose_equality(a, b, equal):
    assert loose_equal(a, b) is equal
    assert loose_equal(b, a) is equal


@pytest.mark.parametrize("value, expected", [
    (None, False), (False, False), (0, False), (0.0, False), (math.nan, False), ("", False),
    ("false", True), ("0", True), ([], True), ({}, True), (-1, True),
])
def test_truthiness(value, expected):
    assert truthy(value) is expected


@pytest.mark.parametrize("value, text", [(None, ""), (True, "true"), (3.0, "3"), (2.5, "2.5"), ([1], "Array"),
                                         ({}, "Object"), ("s", "s")])
def test_to_string(value, text):
    assert to_string(value) == text


@pytest.mark.parametrize("expression, value", [
    ("contains(fromJSON('[\"a\", \"B\"]'), 'b')", True), ("contains(fromJSON('[\"a\"]'), 'c')", False),
    ("contains('Hello world', 'WORLD')", True), ("contains(fromJSON('[1, 2]'), '2')", True),
    ("startsWith('ghcr.io/o/i:x', 'GHCR.IO/')", True), ("startsWith('', 'a')", False),
    ("fromJSON(needs.plan.outputs.matrix).include[0].a", 1), ("fromJSON('true')", True),
    ("toJSON(fromJSON('{\"a\": [1]}'))", '{\n  "a": [\n    1\n  ]\n}'), ("toJSON('x')", '"x"'),
    ("format('refs/heads/{0}', 'main')", "refs/heads/main"), ("format('{1}{0}{{}}', 'a', 'b')", "ba{}"),
    ("join(fromJSON('[\"a\", 1, true]'), ' ')", "a 1 true"), ("join(fromJSON('[\"a\", \"b\"]'))", "a,b"),
    ("join('x', '-')", "x"),
])
def test_functions(expression, value):
    assert evaluate(expression, CTX) == value


@pytest.mark.parametrize("status, values", [
    (Status(), {"always()": True, "success()": True, "failure()": False, "cancelled()": False}),
    (Status(success=False, failure=True), {"always()": True, "success()": False, "failure()": True,
                                            "cancelled()": False}),
    (Status(cancelled=True), {"always()": True, "success()": False, "failure()": False, "cancelled()": True}),
])
def test_status_functions(status, values):
    assert {e: evaluate(e, CTX, status) for e in values} == values


@pytest.mark.parametrize("text, status, expected", [
    (None, Status(), True), (None, Status(success=False, failure=True), False),
    # Without a status function, an `if` is `success() && (...)`.
    ("needs.plan.outputs.trust != 'untrusted'", Status(), True),
    ("needs.plan.outputs.trust != 'untrusted'", Status(success=False, failure=True), False),
    ("always() && needs.plan.outputs.trust == 'approved'", Status(success=False, failure=True), True),
    ("${{ !cancelled() }}", Status(success=False, failure=True), True),
    ("${{ !cancelled() }}", Status(cancelled=True), False),
    ("${{ needs.plan.outputs.empty }}", Status(), False),
    (True, Status(), True),
])
def test_conditions(text, status, expected):
    assert condition(text, CTX, status) is expected


@pytest.mark.parametrize("value, expected", [
    ("${{ matrix.runs_on }}", ["h200", "1gpu"]),  # a lone expression keeps its type
    ("${{ matrix.lane }}", 0),
    ("lane ${{ matrix.lane }} of ${{ matrix.stage }}", "lane 0 of gpu-a"),
    ("t-${{ github.run_attempt }}", "t-2"),
    ("${{ format('}}{0}', 'x') }}", "}x"),  # `}}` inside a string literal does not end the expression
    ({"a": ["${{ matrix.stage }}", 3]}, {"a": ["gpu-a", 3]}),
    ("plain", "plain"),
])
def test_interpolation(value, expected):
    assert interpolate(value, CTX) == expected


@pytest.mark.parametrize("expression, message", [
    ("1 < 2", "operator '<' is not supported"), ("a.b", "context 'a' is not supported"),
    ("env.X", "context 'env' is not supported"), ("hashFiles('x')", "function hashFiles() is not supported"),
    ("github.event.labels.*.name", "operator '*' is not supported"), ("(true", "expected )"),
    ("true false", "unexpected 'false'"), ("'open", "cannot read"), ("", "empty expression"),
    ("contains('a')", "contains() takes 2..2 arguments, got 1"), ("fromJSON('')", "fromJSON: not JSON"),
    ("format('{1}', 'a')", "format: invalid placeholder"), ("github.", "expected more"),
])
def test_unsupported_or_malformed_expressions_are_refused(expression, message):
    with pytest.raises(ExpressionError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        evaluate(expression, CTX)


def test_unterminated_or_mixed_interpolation_is_refused():
    with pytest.raises(ExpressionError, match="unterminated"):
        interpolate("${{ github.sha", CTX)
    with pytest.raises(ExpressionError, match="always true on GitHub"):
        condition("x ${{ false }}", CTX, Status())


@pytest.mark.parametrize("matrix, combos", [
    ({"include": [{"a": 1}, {"a": 2}]}, [{"a": 1}, {"a": 2}]),
    ({"os": ["x", "y"], "v": [1, 2], "exclude": [{"os": "y", "v": 1}]},
     [{"os": "x", "v": 1}, {"os": "x", "v": 2}, {"os": "y", "v": 2}]),
    # include: merged where it changes no original value, else its own combination.
    ({"os": ["x", "y"], "include": [{"os": "x", "extra": True}, {"os": "z"}, {"color": "g"}]},
     [{"os": "x", "extra": True, "color": "g"}, {"os": "y", "color": "g"}, {"os": "z"}]),
])
def test_matrix_expansion(matrix, combos):
    assert expand_matrix(matrix) == combos


@pytest.mark.parametrize("matrix, message", [
    ({"include": []}, "no combination"), ({"os": []}, "non-empty list"), ("x", "must be a mapping"),
    ({"include": ["x"]}, "must be a mapping"), ({"include": [{"i": i} for i in range(257)]}, "256"),
])
def test_impossible_matrices_fail_as_on_github(matrix, message):
    with pytest.raises(ExpressionError, match=message):
        expand_matrix(matrix)


def test_simulate_resolves_needs_and_skips_what_a_failure_skips():
    workflow = {"jobs": {
        "c": {"needs": ["b"], "runs-on": "x", "steps": []},
        "b": {"needs": "a", "runs-on": "x", "steps": []},
        "a": {"runs-on": "x", "steps": [{"id": "s"}]},
        "d": {"needs": ["a", "c"], "if": "always()", "runs-on": "x", "steps": []},
        "e": {"needs": ["a", "c"], "if": "failure()", "runs-on": "x", "steps": []},
    }}
    sim = simulate(workflow, Event("push"), hooks={("a", "s"): lambda step: ("failure", {})})
    assert {j: r.result for j, r in sim.jobs.items()} == {
        "a": "failure", "b": "skipped", "c": "skipped", "d": "success", "e": "success"}
    with pytest.raises(ExpressionError, match="unknown jobs"):
        simulate({"jobs": {"a": {"needs": "z", "runs-on": "x"}, "z": {"needs": "y", "runs-on": "x"}}}, Event("push"))
    with pytest.raises(ExpressionError, match="cycle"):
        simulate({"jobs": {"a": {"needs": "z", "runs-on": "x"}, "z": {"needs": "a", "runs-on": "x"}}}, Event("push"))
