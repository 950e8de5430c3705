"""The bridge to GitHub's own Actions code (tests/github_js.py): one node process, JSON values both
ways, `if:` made a condition as GitHub makes it, a clear error when node or the packages are missing.

What the engine answers for expressions is held in tests/test_pipeline.py (the evaluator section);
what the parser reports for files, in tests/test_workflow_lint.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import github_js
import pytest
from github_js import (
    ExpressionError,
    GitHubJsMissing,
    Status,
    coerce,
    condition,
    condition_expression,
    contexts,
    evaluate,
    interpolate,
)

ROOT = Path(__file__).resolve().parents[1]


def test_one_node_process_answers_every_request():
    evaluate("1", {})
    proc = github_js._BRIDGE._node._proc
    assert proc is not None and proc.poll() is None
    for i in range(50):
        assert interpolate("n-${{ matrix.i }}", {"matrix": {"i": i}}) == f"n-{i}"
    assert github_js._BRIDGE._node._proc is proc


def test_the_pinned_packages_are_installed_from_the_lock_file():
    lock = json.loads((ROOT / "tests" / "github_js" / "package-lock.json").read_text(encoding="utf-8"))
    for name in github_js.PACKAGES:
        installed = json.loads((github_js.HERE / "node_modules" / name / "package.json").read_text(encoding="utf-8"))
        assert installed["version"] == lock["packages"][f"node_modules/{name}"]["version"] == "0.3.61"


@pytest.mark.parametrize("value", [None, True, 0, 1.5, -2, "", "x", [1, "a"], {"a": {"b": [None]}},
                                   math.inf, -math.inf])
def test_json_values_travel_both_ways(value):
    assert evaluate("matrix.v", {"matrix": {"v": value}}) == value


def test_nan_travels_both_ways():
    assert math.isnan(evaluate("matrix.v", {"matrix": {"v": math.nan}}))
    assert math.isnan(evaluate("NaN", {}))
    assert coerce(math.nan, 0).truthy is False


@pytest.mark.parametrize("if_, expression", [
    (None, "success()"), ("", "success()"), (True, "success() && (true)"),
    ("github.ref == 'x'", "success() && (github.ref == 'x')"),
    ("${{ github.ref == 'x' }}", "success() && (github.ref == 'x')"),
    # A status function anywhere, even negated or in an argument, leaves the condition as written.
    ("always() && github.ref == 'x'", "always() && github.ref == 'x'"), ("!cancelled()", "!cancelled()"),
    ("contains(failure(), 'x')", "contains(failure(), 'x')"),
    # A name that only looks like one does not.
    ("github.success == 'always()'", "success() && (github.success == 'always()')"),
])
def test_an_if_gets_githubs_implicit_success(if_, expression):
    assert condition_expression(if_, ["github"]) == expression


@pytest.mark.parametrize("status, answers", [
    (Status.job(["success"]), (True, True, False, False)),
    (Status.job(["failure", "skipped"]), (True, False, True, False)),
    (Status.job(["success"], cancelled=True), (True, False, False, True)),
    (Status.step(failed=False), (True, True, False, False)),
    (Status.step(failed=True), (True, False, True, False)),
    (Status.step(failed=False, cancelled=True), (True, False, False, True)),
    (Status.step(failed=True, cancelled=True), (True, False, False, True)),
])
def test_the_status_functions_answer_for_where_the_if_stands(status, answers):
    assert tuple(condition(f"{name}()", {}, status) for name in ("always", "success", "failure", "cancelled")) \
        == answers


def test_the_contexts_allowed_where_a_value_stands_are_read_from_githubs_schema():
    assert contexts("job-if") == ["github", "inputs", "vars", "needs"]
    assert contexts("step-if") == ["github", "inputs", "vars", "needs", "strategy", "matrix", "steps", "job",
                                   "runner", "env"]
    assert github_js.only({"github": 1, "secrets": 2, "env": 3}, "job-env") == {"github": 1, "secrets": 2}
    with pytest.raises(ExpressionError, match="^Schema definition 'nope' not found$"):
        contexts("nope")


def test_status_functions_given_job_names_are_refused():
    with pytest.raises(ExpressionError, match="status functions with arguments"):
        condition("success(needs.a)", {"needs": {"a": {}}}, Status())


def test_an_insert_directive_is_refused_as_githubs_reader_refuses_it():
    with pytest.raises(ExpressionError, match=r"^A template expression is not allowed in this context$"):
        interpolate({"${{ insert }}": {"a": 1}}, {})
    with pytest.raises(ExpressionError, match=r"^Unexpected value '\$\{\{ insert \}\}'$"):
        interpolate({"a": "${{ insert }}"}, {})


def test_missing_packages_fail_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(github_js, "HERE", tmp_path)
    bridge = github_js._Bridge()
    with pytest.raises(GitHubJsMissing, match=r"@actions/expressions, @actions/workflow-parser not installed in "
                                              r"tests/github_js/node_modules: run scripts/test\.sh, or `npm ci "
                                              r"--prefix tests/github_js`"):
        bridge.ask({"op": "evaluate", "expression": "1", "context": "{}", "status": None})


def test_missing_node_fails_with_the_fix(monkeypatch):
    monkeypatch.setattr(github_js.shutil, "which", lambda name: None)
    bridge = github_js._Bridge()
    with pytest.raises(GitHubJsMissing, match="node is not installed"):
        bridge.ask({"op": "evaluate", "expression": "1", "context": "{}", "status": None})


def test_a_bridge_that_ends_says_what_node_said(tmp_path, monkeypatch):
    script = tmp_path / "ends.mjs"
    script.write_text('process.stderr.write("boom\\n"); process.exit(3);\n', encoding="utf-8")
    monkeypatch.setattr(github_js, "BRIDGE", script)
    bridge = github_js._Bridge()
    with pytest.raises(GitHubJsMissing, match=r"^the node bridge ended \(exit 3\): boom$"):
        bridge.ask({"op": "evaluate", "expression": "1", "context": "{}", "status": None})


def test_a_workflow_held_as_text_is_parsed_too():
    text = "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: echo ${{ steps.z }}\n"
    assert github_js.parse_text_errors(text, "w.yml") == []
    assert github_js.parse_text_errors(text.replace("steps.z", "nope.z"), "w.yml") == [
        "w.yml (Line: 6, Col: 14): Unrecognized named-value: 'nope'"]
