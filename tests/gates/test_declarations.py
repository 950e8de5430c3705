"""`register_ci_gate(...)` declarations: keyword-only literal arguments and their types."""

from __future__ import annotations

import json

import pytest
from expected_codes import as_json
from hypothesis import given, settings
from hypothesis import strategies as st
from marker_calls import arbitrary_calls

from ci_policy.errors import Diagnostic
from ci_policy.gates.declarations import GateDeclaration, gates_of
from ci_policy.model.snapshot import load_snapshot
from ci_policy.read.markers import scan

PATH = "tests/e2e/test_x.py"
NAME = "register_ci_gate"


def err(line, col, message, hint=None, path=PATH):
    return as_json(path, line, col, message, hint)


def parse(text, path=PATH):
    result = scan(text, path)
    gates = gates_of(result)
    return gates, [e.as_dict() for e in sorted(result.errors, key=Diagnostic.sort_key)]


def gate(metric_key="loss", written=("metric_key",), line=1, col=1, **fields):
    return GateDeclaration(file=PATH, line=line, col=col, metric_key=metric_key, written=written, **fields)


BOTH_SIDES = (("rel_down", 0.5), ("rel_up", 0.5))

ACCEPTED = [
    pytest.param('register_ci_gate(metric_key="loss")', gate(), id="metric-key-only"),
    pytest.param('register_ci_gate(metric_key="train/grad_norm")', gate("train/grad_norm"), id="path-like-key"),
    pytest.param('register_ci_gate(metric_key="loss", steps="last")',
                 gate(steps="last", written=("metric_key", "steps")), id="steps-last"),
    pytest.param('register_ci_gate(metric_key="loss", steps="all")',
                 gate(steps="all", written=("metric_key", "steps")), id="steps-all"),
    pytest.param('register_ci_gate(metric_key="loss", steps=[0, 5, 10])',
                 gate(steps=[0, 5, 10], written=("metric_key", "steps")), id="steps-list"),
    pytest.param('register_ci_gate(metric_key="loss", steps=[7, 3])',
                 gate(steps=[7, 3], written=("metric_key", "steps")), id="steps-order-kept"),
    pytest.param('register_ci_gate(metric_key="loss", steps=None)',
                 gate(written=("metric_key", "steps")), id="steps-none-written"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={"rel_up": 0.5, "rel_down": 0.5})',
                 gate(constraint=BOTH_SIDES, written=("metric_key", "constraint")), id="constraint-rel"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={"abs_floor_up": 0, "abs_floor_down": 1e-3})',
                 gate(constraint=(("abs_floor_down", 1e-3), ("abs_floor_up", 0)),
                      written=("metric_key", "constraint")), id="constraint-abs"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={"rel_up": 1, "abs_floor_up": 2, '
                 '"rel_down": 3, "abs_floor_down": 4})',
                 gate(constraint=(("abs_floor_down", 4), ("abs_floor_up", 2), ("rel_down", 3), ("rel_up", 1)),
                      written=("metric_key", "constraint")), id="constraint-every-key-sorted"),
    pytest.param('register_ci_gate(metric_key="loss", constraint=None)',
                 gate(written=("metric_key", "constraint")), id="constraint-none-written"),
    pytest.param('register_ci_gate(metric_key="loss", enforce=True)',
                 gate(enforce=True, written=("metric_key", "enforce")), id="enforce"),
    pytest.param('register_ci_gate(metric_key="loss", enforce=False)',
                 gate(written=("metric_key", "enforce")), id="enforce-false"),
    pytest.param('register_ci_gate(metric_key="loss", allowlist_reason="known regression, #77")',
                 gate(allowlist_reason="known regression, #77", written=("metric_key", "allowlist_reason")),
                 id="allowlist-reason"),
    pytest.param('register_ci_gate(metric_key="loss", allowlist_reason=None)',
                 gate(written=("metric_key", "allowlist_reason")), id="allowlist-reason-none"),
    pytest.param('register_ci_gate(allowlist_reason="r", enforce=True, constraint={"rel_up": 0.5, '
                 '"rel_down": 0.5}, steps="last", metric_key="loss")',
                 gate(steps="last", constraint=BOTH_SIDES, enforce=True, allowlist_reason="r",
                      written=("metric_key", "steps", "constraint", "enforce", "allowlist_reason")),
                 id="every-argument-any-order"),
    pytest.param('import os\nregister_ci_gate(metric_key="a")\nregister_ci_gate(metric_key="b")',
                 [gate("a", line=2), gate("b", line=3)], id="two-gates"),
]


@pytest.mark.parametrize("text, expected", ACCEPTED)
def test_accepted_gate(text, expected):
    gates, errors = parse(text + "\n")
    assert errors == []
    assert gates == (expected if isinstance(expected, list) else [expected])


NON_LITERAL = ("register_ci_gate: {key} must be a literal, not `{shown}` (ci-policy reads it from source "
               "without running the file)")
NON_LITERAL_HINT = "write the value of {key} itself (a number, string, True/False, None, or a list or dict of those)"
ACCEPTED_ARGS = "accepted arguments: metric_key, steps, constraint, enforce, allowlist_reason"
KEY_HINT = 'write e.g. metric_key="train/grad_norm"'
CONSTRAINT_HINT = 'write e.g. constraint={"rel_up": 0.5, "abs_floor_up": 0.1, "rel_down": 0.5}'
ONE_PER_SIDE = ("register_ci_gate: constraint needs at least one bound per side "
                "(rel_up or abs_floor_up, and rel_down or abs_floor_down)")
STEPS_KIND = 'register_ci_gate: steps must be "last", "all" or a list of step indices, got {value}'

# In `register_ci_gate(metric_key="loss", X=...)`, X starts at column 37, and so does the value of
# `steps=`/`enforce=`: steps at 43, constraint at 48, enforce at 45, allowlist_reason at 54.
REJECTED = [
    pytest.param('register_ci_gate("loss")',
                 [err(1, 18, "register_ci_gate takes keyword arguments only, got 1 positional",
                      "write register_ci_gate(metric_key=...)")], id="positional"),
    pytest.param('register_ci_gate("loss", "last")',
                 [err(1, 18, "register_ci_gate takes keyword arguments only, got 2 positional",
                      "write register_ci_gate(metric_key=...)")], id="two-positionals"),
    pytest.param('register_ci_gate(*args)',
                 [err(1, 18, "register_ci_gate: *args is not allowed; write every argument literally")],
                 id="starred"),
    pytest.param('register_ci_gate(metric_key="loss", **extra)',
                 [err(1, 37, "register_ci_gate: **kwargs is not allowed; write every argument literally")],
                 id="double-starred"),
    pytest.param('register_ci_gate(metric="loss")',
                 [err(1, 18, "register_ci_gate: unknown argument 'metric'; did you mean 'metric_key'?",
                      ACCEPTED_ARGS)], id="misspelt-argument"),
    pytest.param('register_ci_gate(metric_key="loss", tolerance=0.1)',
                 [err(1, 37, "register_ci_gate: unknown argument 'tolerance'", ACCEPTED_ARGS)], id="unknown-argument"),
    pytest.param('register_ci_gate(enforce=True)',
                 [err(1, 1, "register_ci_gate: missing required argument 'metric_key'")], id="missing-metric-key"),
    pytest.param('register_ci_gate()',
                 [err(1, 1, "register_ci_gate: missing required argument 'metric_key'")], id="no-arguments"),
    pytest.param('register_ci_gate(metric_key=KEY)',
                 [err(1, 29, NON_LITERAL.format(key="metric_key", shown="KEY"),
                      NON_LITERAL_HINT.format(key="metric_key"))],
                 id="name-metric-key"),
    pytest.param('register_ci_gate(metric_key="loss", steps=list(range(3)))',
                 [err(1, 43, NON_LITERAL.format(key="steps", shown="list(range(3))"),
                      NON_LITERAL_HINT.format(key="steps"))], id="call-steps"),
    pytest.param('register_ci_gate(metric_key="loss", constraint=dict(rel_up=1))',
                 [err(1, 48, NON_LITERAL.format(key="constraint", shown="dict(rel_up=1)"),
                      NON_LITERAL_HINT.format(key="constraint"))], id="call-constraint"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={**BASE})',
                 [err(1, 48, NON_LITERAL.format(key="constraint", shown="{**BASE}"),
                      NON_LITERAL_HINT.format(key="constraint"))], id="unpacked-constraint"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={[1]: 2})',
                 [err(1, 48, NON_LITERAL.format(key="constraint", shown="{[1]: 2}"),
                      NON_LITERAL_HINT.format(key="constraint"))], id="unhashable-constraint-key"),
    # metric_key
    pytest.param('register_ci_gate(metric_key="")',
                 [err(1, 29, "register_ci_gate: metric_key must be a non-empty string, got ''", KEY_HINT)],
                 id="metric-key-empty"),
    pytest.param('register_ci_gate(metric_key="  ")',
                 [err(1, 29, "register_ci_gate: metric_key must be a non-empty string, got '  '", KEY_HINT)],
                 id="metric-key-blank"),
    pytest.param('register_ci_gate(metric_key=3)',
                 [err(1, 29, "register_ci_gate: metric_key must be a non-empty string, got 3", KEY_HINT)],
                 id="metric-key-int"),
    pytest.param('register_ci_gate(metric_key=None)',
                 [err(1, 29, "register_ci_gate: metric_key must be a non-empty string, got None", KEY_HINT)],
                 id="metric-key-none"),
    # steps
    pytest.param('register_ci_gate(metric_key="loss", steps="first")', [err(1, 43, STEPS_KIND.format(value="'first'"))],
                 id="steps-other-string"),
    pytest.param('register_ci_gate(metric_key="loss", steps=3)', [err(1, 43, STEPS_KIND.format(value="3"))],
                 id="steps-int"),
    pytest.param('register_ci_gate(metric_key="loss", steps=(1, 2))', [err(1, 43, STEPS_KIND.format(value="(1, 2)"))],
                 id="steps-tuple"),
    pytest.param('register_ci_gate(metric_key="loss", steps=True)', [err(1, 43, STEPS_KIND.format(value="True"))],
                 id="steps-bool"),
    pytest.param('register_ci_gate(metric_key="loss", steps=[])',
                 [err(1, 43, "register_ci_gate: steps must not be an empty list")], id="steps-empty"),
    pytest.param('register_ci_gate(metric_key="loss", steps=[-1])',
                 [err(1, 43, "register_ci_gate: steps must list integer step indices >= 0, got [-1]")],
                 id="steps-negative"),
    pytest.param('register_ci_gate(metric_key="loss", steps=[True])',
                 [err(1, 43, "register_ci_gate: steps must list integer step indices >= 0, got [True]")],
                 id="steps-bool-entry"),
    pytest.param('register_ci_gate(metric_key="loss", steps=[1.0])',
                 [err(1, 43, "register_ci_gate: steps must list integer step indices >= 0, got [1.0]")],
                 id="steps-float-entry"),
    pytest.param('register_ci_gate(metric_key="loss", steps=["last"])',
                 [err(1, 43, "register_ci_gate: steps must list integer step indices >= 0, got ['last']")],
                 id="steps-string-entry"),
    pytest.param('register_ci_gate(metric_key="loss", steps=[1, 2, 1])',
                 [err(1, 43, "register_ci_gate: steps lists a step twice: [1, 2, 1]")], id="steps-duplicate"),
    # constraint
    pytest.param('register_ci_gate(metric_key="loss", constraint=[0.5])',
                 [err(1, 48, "register_ci_gate: constraint must be a dict, got [0.5]", CONSTRAINT_HINT)],
                 id="constraint-list"),
    pytest.param('register_ci_gate(metric_key="loss", constraint=0.5)',
                 [err(1, 48, "register_ci_gate: constraint must be a dict, got 0.5", CONSTRAINT_HINT)],
                 id="constraint-number"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={})', [err(1, 48, ONE_PER_SIDE)],
                 id="constraint-empty"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={"rel_up": 0.5})', [err(1, 48, ONE_PER_SIDE)],
                 id="constraint-up-only"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={"abs_floor_down": 0.5})',
                 [err(1, 48, ONE_PER_SIDE)], id="constraint-down-only"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={"rel_up": 1, "rel_down": 1, "tol": 2})',
                 [err(1, 48, "register_ci_gate: constraint has unknown key(s) 'tol'; accepted: rel_up, "
                      "abs_floor_up, rel_down, abs_floor_down")], id="constraint-unknown-key"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={"rel_up": 1, "rel_down": 1, 1: 2})',
                 [err(1, 48, "register_ci_gate: constraint has unknown key(s) 1; accepted: rel_up, "
                      "abs_floor_up, rel_down, abs_floor_down")], id="constraint-non-string-key"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={"rel_up": -0.1, "rel_down": 1})',
                 [err(1, 48, "register_ci_gate: constraint['rel_up'] must be a finite number >= 0, got -0.1")],
                 id="constraint-negative"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={"rel_up": 1, "rel_down": True})',
                 [err(1, 48, "register_ci_gate: constraint['rel_down'] must be a finite number >= 0, got True")],
                 id="constraint-bool"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={"rel_up": "0.5", "rel_down": 1})',
                 [err(1, 48, "register_ci_gate: constraint['rel_up'] must be a finite number >= 0, got '0.5'")],
                 id="constraint-string-value"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={"rel_up": 1e999, "rel_down": 1})',
                 [err(1, 48, "register_ci_gate: constraint['rel_up'] must be a finite number >= 0, got inf")],
                 id="constraint-infinite"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={"rel_up": 1, "abs_floor_down": ' + "9" * 400 + '})',
                 [err(1, 48, "register_ci_gate: constraint['abs_floor_down'] must be a finite number >= 0, got "
                      + "9" * 400)], id="constraint-too-large-for-a-float"),
    pytest.param('register_ci_gate(metric_key="loss", constraint={"rel_up": None, "rel_down": None})',
                 [err(1, 48, "register_ci_gate: constraint['rel_down'] must be a finite number >= 0, got None"),
                  err(1, 48, "register_ci_gate: constraint['rel_up'] must be a finite number >= 0, got None")],
                 id="constraint-two-bad-values"),
    # enforce, allowlist_reason
    pytest.param('register_ci_gate(metric_key="loss", enforce=1)',
                 [err(1, 45, "register_ci_gate: enforce must be True or False, got 1")], id="enforce-int"),
    pytest.param('register_ci_gate(metric_key="loss", enforce="yes")',
                 [err(1, 45, "register_ci_gate: enforce must be True or False, got 'yes'")], id="enforce-string"),
    pytest.param('register_ci_gate(metric_key="loss", enforce=None)',
                 [err(1, 45, "register_ci_gate: enforce must be True or False, got None")], id="enforce-none"),
    pytest.param('register_ci_gate(metric_key="loss", allowlist_reason=5)',
                 [err(1, 54, "register_ci_gate: allowlist_reason must be a string or None, got 5")],
                 id="allowlist-reason-int"),
    pytest.param('register_ci_gate(metric_key="loss", allowlist_reason=False)',
                 [err(1, 54, "register_ci_gate: allowlist_reason must be a string or None, got False")],
                 id="allowlist-reason-bool"),
    # several problems at once
    pytest.param('register_ci_gate(metric_key="", steps=[], enforce=0)',
                 [err(1, 29, "register_ci_gate: metric_key must be a non-empty string, got ''", KEY_HINT),
                  err(1, 39, "register_ci_gate: steps must not be an empty list"),
                  err(1, 51, "register_ci_gate: enforce must be True or False, got 0")], id="several-problems"),
]


@pytest.mark.parametrize("text, expected", REJECTED)
def test_rejected_gate(text, expected):
    gates, errors = parse(text + "\n")
    assert errors == expected
    assert gates == []


def test_gates_and_registrations_are_read_separately():
    gates, errors = parse('register_cpu_ci(1, "cpu")\nregister_ci_gate(metric_key="loss")\n')
    assert (gates, errors) == ([gate(line=2)], [])


def test_bad_gate_does_not_drop_a_good_one():
    gates, errors = parse('register_ci_gate(metric_key="a", enforce=1)\nregister_ci_gate(metric_key="b")\n')
    assert gates == [gate("b", line=2)]
    assert errors == [err(1, 42, "register_ci_gate: enforce must be True or False, got 1")]


@pytest.mark.parametrize("text, expected", [
    pytest.param('register_ci_gate(metric_key="loss")', {"steps": None, "constraint": None}, id="nothing-written"),
    pytest.param('register_ci_gate(metric_key="loss", steps=[3, 1], constraint={"rel_up": 1, "abs_floor_down": 0.5})',
                 {"steps": [3, 1], "constraint": {"abs_floor_down": 0.5, "rel_up": 1}}, id="steps-and-constraint"),
    pytest.param('register_ci_gate(metric_key="loss", steps="all", enforce=True)',
                 {"steps": "all", "constraint": None}, id="steps-only"),
])
def test_written_json_is_canonical(text, expected):
    (decl,), errors = parse(text + "\n")
    assert errors == []
    assert decl.written_json() == json.dumps(expected, sort_keys=True, separators=(",", ":"))


def test_gates_in_a_snapshot(make_repo):
    repo = make_repo({
        PATH: 'register_cpu_ci(1, "cpu")\nregister_ci_gate(metric_key="loss", steps="last")\n',
        "tests/unit/test_u.py": 'def f():\n    register_ci_gate(metric_key="x")\n',
    })
    snap = load_snapshot(repo)
    assert snap.gates == (gate(steps="last", line=2, written=("metric_key", "steps")),)
    assert [e.as_dict() for e in snap.errors] == [err(
        2, 1, "register_ci_gate: constraint not given and gates.defaults has none for 'loss'",
        "write constraint=... in the call or add a default in .github/ci-policy.yml"), err(
        2, 1, "register_ci_gate: metric_key 'loss' is not captured, so it can never be evaluated",
        "add it to gates.capture in .github/ci-policy.yml"), err(
        2, 5, "register_ci_gate(...) here is not a registration: markers are read only as module-level "
        "expression statements (not inside a function, class, `if`, `with`, or an assignment)",
        "write `register_ci_gate(...)` as a statement at module level, outside any block", path="tests/unit/test_u.py")]


# ---------------------------------------------------------------------------
# Property: a valid declaration round-trips exactly.
# ---------------------------------------------------------------------------

bound = st.integers(0, 10**9) | st.floats(min_value=0.0, allow_nan=False, allow_infinity=False)
# The strategies `declarations` draws from, built once (hypothesis validates each strategy object
# on its first draw, which cost more than the draws when built per call).
METRIC_KEYS = st.text(min_size=1, max_size=40).filter(str.strip)
STEPS = st.none() | st.sampled_from(["last", "all"]) | st.lists(st.integers(0, 10**6), min_size=1, max_size=8,
                                                                 unique=True)
UP = st.lists(st.sampled_from(["rel_up", "abs_floor_up"]), min_size=1, unique=True)
DOWN = st.lists(st.sampled_from(["rel_down", "abs_floor_down"]), min_size=1, unique=True)
REASONS = st.none() | st.text(max_size=30)


@st.composite
def declarations(draw):
    key = draw(METRIC_KEYS)
    args = {"metric_key": key}
    fields = {}
    if draw(st.booleans()):
        steps = draw(STEPS)
        args["steps"] = fields["steps"] = steps
    if draw(st.booleans()):
        up = draw(UP)
        down = draw(DOWN)
        constraint = {k: draw(bound) for k in up + down}
        args["constraint"] = constraint
        fields["constraint"] = tuple(sorted(constraint.items()))
    if draw(st.booleans()):
        args["enforce"] = fields["enforce"] = draw(st.booleans())
    if draw(st.booleans()):
        args["allowlist_reason"] = fields["allowlist_reason"] = draw(REASONS)
    order = draw(st.permutations(list(args)))
    source = f"{NAME}({', '.join(f'{k}={args[k]!r}' for k in order)})\n"
    written = tuple(k for k in ("metric_key", "steps", "constraint", "enforce", "allowlist_reason") if k in args)
    return source, gate(key, written=written, **fields)


@settings(max_examples=300)
@given(declarations())
def test_valid_declarations_round_trip(case):
    source, expected = case
    gates, errors = parse(source)
    assert errors == []
    assert gates == [expected]


# ---------------------------------------------------------------------------
# Property: any call with arbitrary (possibly invalid) arguments yields a
# declaration or an error on its line, never an exception and never silence.
# ---------------------------------------------------------------------------

CONSTANTS = ["' '", "'loss'", "'last'", "'all'", "'rel_up'", "'rel_down'", "'abs_floor_up'", "'abs_floor_down'"]
POSITIONAL, KEYWORD_ONLY = (), ("metric_key", "steps", "constraint", "enforce", "allowlist_reason")


def calls_of(markers):
    return arbitrary_calls(markers, POSITIONAL, KEYWORD_ONLY, CONSTANTS)


@settings(max_examples=500)
@given(st.lists(calls_of(["register_ci_gate"]), min_size=1, max_size=3))
def test_every_gate_call_yields_a_declaration_or_an_error(calls):
    gates, errors = parse("\n".join(calls) + "\n")
    for line in range(1, len(calls) + 1):
        assert any(g.line == line for g in gates) or any(e["line"] == line for e in errors), calls[line - 1]
    assert all(e["path"] == PATH and e["line"] is not None and e["col"] >= 1 for e in errors)
