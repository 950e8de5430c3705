"""Gate evaluation: defaults, series identity, coordinate selection, bands and verdicts."""

from __future__ import annotations

import math
import statistics

import pytest
from helpers import MINIMAL_CONFIG
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_policy.config.gates import CONSTRAINT_KEYS, SHIPPED_DEFAULTS
from ci_policy.config.top import parse_config
from ci_policy.gates.declarations import gates_of
from ci_policy.gates.evaluate import (
    ERROR,
    FAIL,
    LAST_STEP,
    NO_BASELINE,
    PASS,
    Band,
    Coordinate,
    GateResult,
    GateSpec,
    StoreUnavailable,
    band,
    evaluate,
    resolve,
    select,
    trusted,
)
from ci_policy.read.markers import scan

FILE = "tests/e2e/test_x.py"
GRAD = "train/grad_norm"
V1_TEXT = "rollout/tito_session_mismatch_rate/v1/assistant_text"
OMITTED = '{"constraint":null,"steps":null}'


def declare(call: str, path: str = FILE):
    result = scan(call, path)
    assert result.errors == []
    (decl,) = gates_of(result)
    return decl


def spec_of(call: str, defaults=SHIPPED_DEFAULTS, backend="cuda", suite="gpu-a", path=FILE) -> GateSpec:
    return resolve(declare(call, path), backend, suite, defaults)


def config_defaults(gates_yaml: str) -> dict:
    return parse_config(MINIMAL_CONFIG + gates_yaml).gates.defaults


# -- resolve: defaults and literals -----------------------------------------------------------------

def test_omitted_fields_come_from_the_shipped_defaults():
    spec = spec_of(f'register_ci_gate(metric_key="{GRAD}")')
    assert spec == GateSpec(
        file=FILE, backend="cuda", suite="gpu-a", metric_key=GRAD, steps="all",
        constraint=(("abs_floor_down", 0.05), ("abs_floor_up", 0.05), ("rel_down", 0.5), ("rel_up", 0.5)),
        enforce=False, allowlist_reason=None, written=OMITTED, line=1)
    assert spec.identity == (FILE, "cuda", "gpu-a", GRAD, OMITTED)


def test_shipped_tito_defaults_are_loose_and_gate_the_last_step():
    for version in ("v1", "v2"):
        spec = spec_of(f'register_ci_gate(metric_key="rollout/tito_session_mismatch_rate/{version}/assistant_text")')
        assert spec.steps == "last"
        assert spec.constraint == (("abs_floor_up", 0.1), ("rel_down", 1.0), ("rel_up", 1.0))


def test_literals_written_in_the_file_win_over_defaults():
    spec = spec_of(f'register_ci_gate(metric_key="{GRAD}", steps=[0, 10], '
                   'constraint={"rel_up": 0.25, "rel_down": 0.125}, enforce=True, allowlist_reason="#77")')
    assert (spec.steps, spec.constraint) == ([0, 10], (("rel_down", 0.125), ("rel_up", 0.25)))
    assert (spec.enforce, spec.allowlist_reason) == (True, "#77")
    assert spec.written == '{"constraint":{"rel_down":0.125,"rel_up":0.25},"steps":[0,10]}'


def test_one_literal_and_one_default():
    only_steps = spec_of(f'register_ci_gate(metric_key="{GRAD}", steps="last")')
    assert only_steps.steps == "last"
    assert only_steps.constraint == tuple(sorted(SHIPPED_DEFAULTS[GRAD]["constraint"].items()))
    only_constraint = spec_of(f'register_ci_gate(metric_key="{GRAD}", constraint={{"abs_floor_up": 1, "rel_down": 0}})')
    assert only_constraint.steps == "all"
    assert only_constraint.constraint == (("abs_floor_up", 1), ("rel_down", 0))


def test_steps_none_written_falls_back_to_the_default():
    spec = spec_of(f'register_ci_gate(metric_key="{GRAD}", steps=None)')
    assert spec.steps == "all"
    assert spec.written == OMITTED


def test_config_defaults_override_the_shipped_ones():
    defaults = config_defaults(
        "gates:\n  defaults:\n"
        f"    {GRAD}: {{steps: last, constraint: {{rel_up: 0.25, rel_down: 0.25}}}}\n")
    spec = spec_of(f'register_ci_gate(metric_key="{GRAD}")', defaults)
    assert (spec.steps, spec.constraint) == ("last", (("rel_down", 0.25), ("rel_up", 0.25)))
    other = spec_of('register_ci_gate(metric_key="train/ppo_kl")', defaults)
    assert other.steps == SHIPPED_DEFAULTS["train/ppo_kl"]["steps"]
    # A literal still wins over the configured default.
    assert spec_of(f'register_ci_gate(metric_key="{GRAD}", steps=[3])', defaults).steps == [3]


@pytest.mark.parametrize("call, missing", [
    ('register_ci_gate(metric_key="train/loss")', "steps or constraint"),
    ('register_ci_gate(metric_key="train/loss", steps="all")', "constraint"),
    ('register_ci_gate(metric_key="train/loss", constraint={"rel_up": 1, "rel_down": 1})', "steps"),
    ('register_ci_gate(metric_key="train/loss", steps=None, constraint={"rel_up": 1, "rel_down": 1})', "steps"),
])
def test_no_literal_and_no_default_is_an_error(call, missing):
    with pytest.raises(ValueError) as info:
        spec_of(call)
    assert str(info.value) == (f"register_ci_gate(metric_key='train/loss') has no {missing} and "
                               "gates.defaults has none for this key")


def test_constraint_none_written_falls_back_to_the_default():
    spec = spec_of(f'register_ci_gate(metric_key="{GRAD}", constraint=None)')
    assert spec.constraint == tuple(sorted(SHIPPED_DEFAULTS[GRAD]["constraint"].items()))


# -- identity: a stored series is named by the declaration as written --------------------------------

def test_a_default_change_keeps_the_identity():
    call = f'register_ci_gate(metric_key="{GRAD}")'
    changed = config_defaults("gates:\n  defaults:\n"
                              f"    {GRAD}: {{steps: last, constraint: {{rel_up: 2, rel_down: 2}}}}\n")
    before, after = spec_of(call), spec_of(call, changed)
    assert (before.steps, before.constraint) != (after.steps, after.constraint)
    assert before.identity == after.identity == (FILE, "cuda", "gpu-a", GRAD, OMITTED)


@pytest.mark.parametrize("edited, written", [
    ('steps="all"', '{"constraint":null,"steps":"all"}'),  # the default's value, but now written
    ('steps="last"', '{"constraint":null,"steps":"last"}'),
    ("steps=[0, 5]", '{"constraint":null,"steps":[0,5]}'),
    ("steps=[5, 0]", '{"constraint":null,"steps":[5,0]}'),
    ('constraint={"rel_up": 0.5, "abs_floor_up": 0.05, "rel_down": 0.5, "abs_floor_down": 0.05}',
     '{"constraint":{"abs_floor_down":0.05,"abs_floor_up":0.05,"rel_down":0.5,"rel_up":0.5},"steps":null}'),
])
def test_editing_a_declaration_starts_a_new_series(edited, written):
    edited_spec = spec_of(f'register_ci_gate(metric_key="{GRAD}", {edited})')
    assert edited_spec.identity == (FILE, "cuda", "gpu-a", GRAD, written)
    assert edited_spec.identity != spec_of(f'register_ci_gate(metric_key="{GRAD}")').identity


def test_identity_ignores_literal_key_order_enforce_and_allowlist():
    a = spec_of(f'register_ci_gate(metric_key="{GRAD}", constraint={{"rel_up": 1, "rel_down": 2}})')
    b = spec_of(f'register_ci_gate(constraint={{"rel_down": 2, "rel_up": 1}}, metric_key="{GRAD}", '
                'enforce=True, allowlist_reason="flaky, #12")')
    written = '{"constraint":{"rel_down":2,"rel_up":1},"steps":null}'
    assert a.identity == b.identity == (FILE, "cuda", "gpu-a", GRAD, written)


def test_identity_separates_file_backend_suite_and_key():
    call = f'register_ci_gate(metric_key="{GRAD}")'
    identities = {spec_of(call).identity, spec_of(call, backend="rocm").identity,
                  spec_of(call, suite="gpu-b").identity, spec_of(call, path="tests/e2e/test_y.py").identity,
                  spec_of('register_ci_gate(metric_key="train/ppo_kl")').identity}
    assert len(identities) == 5


def test_a_default_change_keeps_the_stored_baseline_and_an_edit_does_not(tmp_path):
    """Through the real SQLite store: the series identity decides which baseline a run meets."""
    from ci_policy.adapters.store import RunKey, Sample, open_store

    call = f'register_ci_gate(metric_key="{GRAD}", steps=[0])'
    old = spec_of(call)
    with open_store(str(tmp_path / "m.sqlite"), default_path=tmp_path / "unused.sqlite") as store:
        for run, value in enumerate((1.0, 1.0, 1.0)):
            outcome = store.write(RunKey(str(run), 1, FILE, "cuda", "gpu-a"), cadence="nightly", commit=None,
                                  trusted=True, samples=[Sample(old.identity, 0, value)], write_baseline=True)
            assert outcome == "written"
        changed = config_defaults("gates:\n  defaults:\n"
                                  f"    {GRAD}: {{steps: all, constraint: {{abs_floor_up: 0.5, "
                                  "abs_floor_down: 0.5}}\n")
        new_default = spec_of(call, changed)
        edited = spec_of(f'register_ci_gate(metric_key="{GRAD}", steps=[0], '
                         'constraint={"abs_floor_up": 0.5, "abs_floor_down": 0.5})')
        series = {GRAD: [(0, 1.25)]}

        def baseline(spec, step):
            return store.baseline(spec.identity, step, 10)

        [r1] = evaluate(select(new_default, series), baseline, min_samples=3)
        [r2] = evaluate(select(edited, series), baseline, min_samples=3)
    assert (r1.verdict, r1.band) == (PASS, Band(ref=1.0, lo=0.5, hi=1.5, n=3))
    assert (r2.verdict, r2.message) == (NO_BASELINE, "0 baseline value(s), 3 needed")


# -- select --------------------------------------------------------------------------------------------

def spec_with(steps, key=GRAD) -> GateSpec:
    return GateSpec(file=FILE, backend="cuda", suite="gpu-a", metric_key=key, steps=steps,
                    constraint=(("rel_down", 0.5), ("rel_up", 0.5)), enforce=True, allowlist_reason=None,
                    written=OMITTED)


SERIES = {GRAD: [(0, 1.0), (2, 3.0), (1, 2.0)], "train/ppo_kl": [(0, 9.0)]}


def test_last_is_one_coordinate_at_the_maximum_step():
    spec = spec_with("last")
    assert select(spec, SERIES) == [Coordinate(spec, LAST_STEP, 3.0)]
    assert LAST_STEP == -1


def test_all_is_one_coordinate_per_step_in_step_order():
    spec = spec_with("all")
    assert select(spec, SERIES) == [Coordinate(spec, 0, 1.0), Coordinate(spec, 1, 2.0), Coordinate(spec, 2, 3.0)]


def test_a_step_list_selects_those_steps_in_the_listed_order():
    spec = spec_with([2, 0])
    assert select(spec, SERIES) == [Coordinate(spec, 2, 3.0), Coordinate(spec, 0, 1.0)]


def test_a_missing_step_is_an_error_for_that_coordinate_only():
    spec = spec_with([1, 7])
    assert select(spec, SERIES) == [
        Coordinate(spec, 1, 2.0),
        Coordinate(spec, 7, None, "step 7 was not recorded (recorded steps: 0, 1, 2)"),
    ]


def test_a_missing_step_lists_at_most_ten_recorded_steps():
    spec = spec_with([99])
    series = {GRAD: [(s, 1.0) for s in range(12)]}
    assert select(spec, series) == [Coordinate(
        spec, 99, None, "step 99 was not recorded (recorded steps: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ... (12 in all))")]


@pytest.mark.parametrize("steps, expected_step", [([1], 1), ("all", 1), ("last", LAST_STEP)])
def test_a_duplicate_step_with_differing_values_is_an_error_naming_them(steps, expected_step):
    spec = spec_with(steps)
    series = {GRAD: [(0, 1.0), (1, 2.0), (1, 3.0), (1, 2.0)]}
    got = [c for c in select(spec, series) if c.error]
    assert got == [Coordinate(spec, expected_step, None, "step 1 was recorded 3 times with different values: 2.0, 3.0")]


@pytest.mark.parametrize("steps, expected_step", [([1], 1), ("all", 1), ("last", LAST_STEP)])
@pytest.mark.parametrize("value", [2.0, math.nan])
def test_a_duplicate_step_with_identical_values_is_one_point(steps, expected_step, value):
    # Parent and child processes logging the same step: the merge rule of gates.evaluate.
    spec = spec_with(steps)
    [coordinate] = [c for c in select(spec, {GRAD: [(0, 1.0), (1, value), (1, value)]}) if c.step == expected_step]
    assert coordinate.value is not None and repr(coordinate.value) == repr(value)
    assert coordinate.error == (None if value == 2.0 else "value at step 1 is not finite (nan)")


@pytest.mark.parametrize("value, shown", [(math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")])
@pytest.mark.parametrize("steps, expected_step", [([1], 1), ("all", 1), ("last", LAST_STEP)])
def test_a_non_finite_selected_value_is_an_error(steps, expected_step, value, shown):
    spec = spec_with(steps)
    [bad] = [c for c in select(spec, {GRAD: [(0, 1.0), (1, value)]}) if c.error]
    assert (bad.step, bad.error) == (expected_step, f"value at step 1 is not finite ({shown})")


def test_a_non_finite_value_at_an_unselected_step_is_ignored():
    spec = spec_with([0])
    assert select(spec, {GRAD: [(0, 1.0), (1, math.nan)]}) == [Coordinate(spec, 0, 1.0)]


@pytest.mark.parametrize("steps", ["last", "all", [0, 1]])
@pytest.mark.parametrize("series", [{}, {GRAD: []}, {"train/ppo_kl": [(0, 1.0)]}])
def test_a_metric_not_recorded_is_one_error(steps, series):
    spec = spec_with(steps)
    assert select(spec, series) == [Coordinate(spec, LAST_STEP, None, f"metric {GRAD} was not recorded")]


# -- band -----------------------------------------------------------------------------------------------

BANDS = [
    # values, constraint, reference, (ref, lo, hi)
    pytest.param([6, 8, 10], {"rel_up": 0.5, "rel_down": 0.25}, "mean", (8, 6, 12), id="relative"),
    pytest.param([8], {"rel_up": 0.125, "abs_floor_up": 2, "rel_down": 0.5, "abs_floor_down": 1}, "mean",
                 (8, 4, 10), id="floor-wins-up-rel-wins-down"),
    pytest.param([-10, -6], {"rel_up": 0.5, "rel_down": 0.25}, "mean", (-8, -10, -4), id="negative-ref"),
    pytest.param([-8], {"rel_up": 0.125, "abs_floor_up": 3, "rel_down": 0.125, "abs_floor_down": 0.5}, "mean",
                 (-8, -9, -5), id="negative-ref-floors"),
    pytest.param([-2, 2], {"rel_up": 0.5, "abs_floor_up": 0.25, "rel_down": 0.5, "abs_floor_down": 0.125}, "mean",
                 (0, -0.125, 0.25), id="zero-ref-uses-floors"),
    pytest.param([0, 0, 0], {"rel_up": 1, "rel_down": 1}, "mean", (0, 0, 0), id="zero-ref-without-floors"),
    pytest.param([4], {"rel_up": 0.5}, "mean", (4, 4, 6), id="no-down-side"),
    pytest.param([4], {"abs_floor_down": 1}, "mean", (4, 3, 4), id="no-up-side"),
    pytest.param([4], {}, "mean", (4, 4, 4), id="no-bounds"),
    pytest.param([1, 2, 13], {"rel_up": 0.5, "rel_down": 0.5}, "median", (2, 1, 3), id="median-odd"),
    pytest.param([10, 1, 3, 2], {"abs_floor_up": 0.5, "abs_floor_down": 0.5}, "median", (2.5, 2, 3),
                 id="median-even-unsorted"),
    pytest.param([10, 1, 3, 2], {"abs_floor_up": 0.5, "abs_floor_down": 0.5}, "mean", (4, 3.5, 4.5),
                 id="mean-of-same"),
]


@pytest.mark.parametrize("values, constraint, reference, expected", BANDS)
def test_band(values, constraint, reference, expected):
    ref, lo, hi = expected
    assert band(values, constraint, reference) == Band(ref=ref, lo=lo, hi=hi, n=len(values))


finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)
bound = st.floats(min_value=0, max_value=100, allow_nan=False, allow_infinity=False)
constraints = st.dictionaries(st.sampled_from(CONSTRAINT_KEYS), bound)
references = st.sampled_from(["mean", "median"])


@settings(max_examples=300, deadline=None)
@given(st.lists(finite, min_size=1, max_size=20), constraints, references)
def test_band_contains_its_reference(values, constraint, reference):
    b = band(values, constraint, reference)
    expected_ref = math.fsum(values) / len(values) if reference == "mean" else statistics.median(values)
    assert b.ref == expected_ref
    assert b.lo <= b.ref <= b.hi
    assert b.n == len(values)


@settings(max_examples=300, deadline=None)
@given(st.lists(finite, min_size=1, max_size=20), constraints, references)
def test_band_mirrors_under_negation(values, constraint, reference):
    swapped = {{"rel_up": "rel_down", "rel_down": "rel_up", "abs_floor_up": "abs_floor_down",
                "abs_floor_down": "abs_floor_up"}[k]: v for k, v in constraint.items()}
    b, m = band(values, constraint, reference), band([-v for v in values], swapped, reference)
    assert (m.ref, m.lo, m.hi) == (-b.ref, -b.hi, -b.lo)


@settings(max_examples=300, deadline=None)
@given(st.lists(finite, min_size=1, max_size=20), constraints, references, st.data())
def test_the_reference_value_always_passes_and_just_outside_fails(values, constraint, reference, data):
    b = band(values, constraint, reference)
    min_samples = data.draw(st.integers(min_value=1, max_value=len(values)))
    spec = spec_with("all")
    spec = GateSpec(**{**spec.__dict__, "constraint": tuple(sorted(constraint.items()))})
    coords = [Coordinate(spec, 0, b.ref), Coordinate(spec, 1, math.nextafter(b.hi, math.inf)),
              Coordinate(spec, 2, math.nextafter(b.lo, -math.inf))]
    results = evaluate(coords, lambda s, step: values, min_samples=min_samples, reference=reference)
    assert [r.verdict for r in results] == [PASS, FAIL, FAIL]
    assert [r.band for r in results] == [b, b, b]


# -- evaluate ---------------------------------------------------------------------------------------------

class Baselines:
    """A baseline source by step, recording what was asked."""

    def __init__(self, by_step):
        self.by_step = by_step
        self.asked = []

    def __call__(self, spec, step):
        self.asked.append((spec.metric_key, step))
        value = self.by_step[step]
        if isinstance(value, Exception):
            raise value
        return value


def test_verdicts_with_messages_and_bands():
    spec = spec_with("all")  # rel 0.5 on both sides
    coords = [Coordinate(spec, 0, 8.0), Coordinate(spec, 1, 12.0), Coordinate(spec, 2, 4.0),
              Coordinate(spec, 3, 12.5), Coordinate(spec, 4, 3.5), Coordinate(spec, 5, 1.0),
              Coordinate(spec, 6, None, "step 6 was not recorded (recorded steps: 0)"), Coordinate(spec, 7, 1.0)]
    source = Baselines({0: [6, 8, 10], 1: [6, 8, 10], 2: [6, 8, 10], 3: [6, 8, 10], 4: [8, 8, 8],
                        5: [1.0, 1.0], 7: StoreUnavailable("connection refused")})
    got = evaluate(coords, source, min_samples=3)
    b = Band(ref=8, lo=4, hi=12, n=3)
    assert got == [
        GateResult(spec, 0, 8.0, PASS, "within band", b),
        GateResult(spec, 1, 12.0, PASS, "within band", b),  # the band is closed
        GateResult(spec, 2, 4.0, PASS, "within band", b),
        GateResult(spec, 3, 12.5, FAIL, "12.5 is above the band [4, 12] (baseline mean 8 of 3)", b),
        GateResult(spec, 4, 3.5, FAIL, "3.5 is below the band [4, 12] (baseline mean 8 of 3)", b),
        GateResult(spec, 5, 1.0, NO_BASELINE, "2 baseline value(s), 3 needed"),
        GateResult(spec, 6, None, ERROR, "step 6 was not recorded (recorded steps: 0)"),
        GateResult(spec, 7, 1.0, ERROR, "metric history unavailable: connection refused"),
    ]
    # An errored coordinate is never looked up.
    assert source.asked == [(GRAD, s) for s in (0, 1, 2, 3, 4, 5, 7)]


def test_median_reference_and_its_message():
    spec = spec_with("last")
    [r] = evaluate([Coordinate(spec, LAST_STEP, 30.0)], Baselines({LAST_STEP: [1, 2, 13]}),
                   min_samples=3, reference="median")
    assert r == GateResult(spec, LAST_STEP, 30.0, FAIL, "30 is above the band [1, 3] (baseline median 2 of 3)",
                           Band(ref=2, lo=1, hi=3, n=3))


def test_no_baseline_is_never_a_pass_even_for_the_reference_value():
    spec = spec_with("all")
    [r] = evaluate([Coordinate(spec, 0, 1.0)], Baselines({0: [1.0] * 4}), min_samples=5)
    assert (r.verdict, r.message, r.band) == (NO_BASELINE, "4 baseline value(s), 5 needed", None)
    [r] = evaluate([Coordinate(spec, 0, 1.0)], Baselines({0: []}), min_samples=1)
    assert (r.verdict, r.message) == (NO_BASELINE, "0 baseline value(s), 1 needed")
    [r] = evaluate([Coordinate(spec, 0, 1.0)], Baselines({0: [1.0] * 5}), min_samples=5)
    assert r.verdict == PASS


def test_select_then_evaluate_a_whole_series():
    spec = spec_with([0, 1, 2, 3])
    series = {GRAD: [(0, 1.0), (1, 1.0), (1, 1.5), (2, math.nan)]}
    results = evaluate(select(spec, series), Baselines({0: [1.0] * 3}), min_samples=3)
    assert [(r.step, r.verdict, r.message) for r in results] == [
        (0, PASS, "within band"),
        (1, ERROR, "step 1 was recorded 2 times with different values: 1.0, 1.5"),
        (2, ERROR, "value at step 2 is not finite (nan)"),
        (3, ERROR, "step 3 was not recorded (recorded steps: 0, 1, 2)"),
    ]


def result(verdict, enforce=True, allowlist_reason=None) -> GateResult:
    spec = GateSpec(**{**spec_with("last").__dict__, "enforce": enforce, "allowlist_reason": allowlist_reason})
    return GateResult(spec, LAST_STEP, 1.0, verdict, "")


@pytest.mark.parametrize("verdicts, expected", [
    ([], True),
    ([PASS], True),
    ([PASS, NO_BASELINE], True),
    ([NO_BASELINE], True),
    ([PASS, FAIL], False),
    ([ERROR], False),
    ([NO_BASELINE, ERROR, PASS], False),
])
def test_trusted_iff_no_fail_or_error(verdicts, expected):
    assert trusted([result(v) for v in verdicts]) is expected


@pytest.mark.parametrize("verdict, enforce, allowlist_reason, blocking", [
    (FAIL, True, None, True),
    (ERROR, True, None, True),
    (FAIL, False, None, False),
    (ERROR, False, None, False),
    (FAIL, True, "known regression, #77", False),
    (ERROR, True, "store flaky, #78", False),
    (PASS, True, None, False),
    (NO_BASELINE, True, None, False),
])
def test_blocking(verdict, enforce, allowlist_reason, blocking):
    assert result(verdict, enforce, allowlist_reason).blocking is blocking
    # Allowlisting never makes a run trusted.
    assert trusted([result(verdict, enforce, allowlist_reason)]) is (verdict not in (FAIL, ERROR))


def test_a_problem_of_the_record_is_one_error_for_its_metric_or_for_every_metric():
    spec = spec_with("all")
    series = {GRAD: [(0, 1.0)]}
    assert select(spec, series, {"train/ppo_kl": ["m.jsonl:2: train/ppo_kl at step 3 was not recorded: x"]}) == [
        Coordinate(spec, 0, 1.0)]
    assert select(spec, series, {GRAD: ["m.jsonl:2: a", "m.jsonl:3: b"]}) == [
        Coordinate(spec, LAST_STEP, None, "unusable metric record: m.jsonl:2: a (and 1 more)")]
    assert select(spec, series, {"": ["m.jsonl:1: expected a JSON object, got array [1]"]}) == [
        Coordinate(spec, LAST_STEP, None, "unusable metric record: m.jsonl:1: expected a JSON object, got array [1]")]
