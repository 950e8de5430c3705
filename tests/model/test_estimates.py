"""The estimates file (`ci_policy.model.estimates`): accepted and refused forms with exact messages,
`apply()` over registrations, `render()`, the snapshot using it, and lint's stale-entry warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import MAIN_BLOCK, MINIMAL_CONFIG
from hypothesis import given
from hypothesis import strategies as st

from ci_policy.cli import main
from ci_policy.errors import InputError, InputErrors
from ci_policy.model.estimates import SCHEMA, apply, parse_estimates, render
from ci_policy.model.lint import lint
from ci_policy.model.registry import Registration
from ci_policy.model.snapshot import load_snapshot
from ci_policy.read.numbers import MAX_EST_TIME

P = ".github/ci-estimates.json"
HINT = "regenerate it with ci-policy tune --write-estimates"
SHAPE = f'estimates file {P} must be {{"schema": 1, "estimates": [...]}}'


def doc(*entries, **top) -> str:
    return json.dumps({"schema": 1, "estimates": list(entries), **top})


def entry(file="tests/test_a.py", suite="gpu-a", est_time=300) -> dict:
    return {"file": file, "suite": suite, "est_time": est_time}


def refused(text: str) -> list[tuple]:
    """(path, line, message, hint) of every error parse_estimates raises for `text`."""
    with pytest.raises((InputError, InputErrors)) as info:
        parse_estimates(text, P)
    errors = info.value.errors if isinstance(info.value, InputErrors) else [info.value]
    return [(e.path, e.line, e.message, e.hint) for e in errors]


# -- accepted ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ('{"schema": 1, "estimates": []}', {}),
    ('{"estimates": [], "schema": 1}', {}),
    ('  {\n "schema" : 1 ,\n "estimates" : [ ]\n}\n\n', {}),
    (doc(entry()), {("tests/test_a.py", "gpu-a"): 300}),
    (doc(entry(est_time=0), entry(est_time=30.5, suite="gpu-b"), entry(file="tests/ü.py", est_time=1e3)),
     {("tests/test_a.py", "gpu-a"): 0, ("tests/test_a.py", "gpu-b"): 30.5, ("tests/ü.py", "gpu-a"): 1000.0}),
    # the same file for two suites, and the same suite for two files
    (doc(entry(), entry(suite="amd", est_time=480), entry(file="tests/test_b.py")),
     {("tests/test_a.py", "gpu-a"): 300, ("tests/test_a.py", "amd"): 480, ("tests/test_b.py", "gpu-a"): 300}),
    # entry keys in any order
    ('{"schema": 1, "estimates": [{"est_time": 5, "suite": "s", "file": "f"}]}', {("f", "s"): 5}),
])
def test_accepted_forms(text, expected):
    got = parse_estimates(text, P)
    assert got == expected
    assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]


# -- refused, whole file ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("", "Expecting value: line 1 column 1 (char 0)"),
    ("{", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ('{"schema": 1, "estimates": [1 2]}', "Expecting ',' delimiter: line 1 column 31 (char 30)"),
    ("{'schema': 1}", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ('{"schema": 1, "estimates": []} x', "Extra data: line 1 column 32 (char 31)"),
    # duplicate keys, at the top and inside an entry
    ('{"schema": 1, "schema": 1, "estimates": []}', "duplicate key 'schema'"),
    ('{"schema": 1, "estimates": [], "estimates": []}', "duplicate key 'estimates'"),
    ('{"schema": 1, "estimates": [{"file": "a", "suite": "s", "est_time": 1, "file": "b"}]}',
     "duplicate key 'file'"),
    # NaN and infinities are not JSON
    ('{"schema": 1, "estimates": [{"file": "a", "suite": "s", "est_time": NaN}]}', "NaN is not allowed"),
    ('{"schema": 1, "estimates": [{"file": "a", "suite": "s", "est_time": Infinity}]}', "Infinity is not allowed"),
    ('{"schema": 1, "estimates": [{"file": "a", "suite": "s", "est_time": -Infinity}]}',
     "-Infinity is not allowed"),
])
def test_invalid_or_non_strict_json(text, message):
    assert refused(text) == [(P, None, f"estimates file {P} is not valid strict JSON: {message}", HINT)]


def test_hostile_nesting_is_refused_not_a_crash():
    [(path, line, message, hint)] = refused("[" * 100_000 + "]" * 100_000)
    assert (path, line, hint) == (P, None, HINT)
    assert message.startswith(f"estimates file {P} is not valid strict JSON: maximum recursion depth exceeded")


@pytest.mark.parametrize("text", [
    "[]", "null", "1", '"schema"',
    '{"estimates": []}',                                   # no schema
    '{"schema": 1}',                                       # no estimates
    '{"schema": 2, "estimates": []}',                      # another schema
    '{"schema": 0, "estimates": []}',
    '{"schema": "1", "estimates": []}',
    '{"schema": true, "estimates": []}',                   # true == 1 in Python, but not schema 1
    '{"schema": 1.0, "estimates": []}',
    '{"schema": null, "estimates": []}',
    '{"schema": 1, "estimates": [], "generated_by": "tune"}',  # unknown field
])
def test_wrong_schema_or_shape(text):
    assert refused(text) == [(P, None, SHAPE, HINT)]


@pytest.mark.parametrize("value", ["{}", "null", '"a"', "1"])
def test_estimates_must_be_a_list(value):
    assert refused(f'{{"schema": 1, "estimates": {value}}}') == [
        (P, None, f"estimates file {P}: estimates must be a list", None)]


# -- refused, entries ---------------------------------------------------------------------------------------

SHAPE_0 = "estimates[0] must have exactly file, suite and est_time"


@pytest.mark.parametrize("item, message", [
    ([], SHAPE_0),
    ("tests/test_a.py", SHAPE_0),
    (None, SHAPE_0),
    ({"file": "a", "suite": "s"}, SHAPE_0),
    ({"file": "a", "est_time": 1}, SHAPE_0),
    ({**entry(), "backend": "cuda"}, SHAPE_0),
    ({**entry(), "est": 1}, SHAPE_0),
    (entry(file=1), "estimates[0]: file and suite must be strings"),
    (entry(suite=None), "estimates[0]: file and suite must be strings"),
    (entry(file=["a"]), "estimates[0]: file and suite must be strings"),
    (entry(est_time=-1), "estimates[0].est_time must be a finite number >= 0, got -1"),
    (entry(est_time=-0.5), "estimates[0].est_time must be a finite number >= 0, got -0.5"),
    (entry(est_time=True), "estimates[0].est_time must be a finite number >= 0, got True"),
    (entry(est_time="300"), "estimates[0].est_time must be a finite number >= 0, got '300'"),
    (entry(est_time=None), "estimates[0].est_time must be a finite number >= 0, got None"),
    (entry(est_time=[300]), "estimates[0].est_time must be a finite number >= 0, got [300]"),
])
def test_entry_refused(item, message):
    assert refused(doc(item)) == [(P, None, message, None)]


def test_an_overflowing_number_is_refused_not_a_crash():
    # 1e999 parses as inf; an integer too large for a float must not raise OverflowError
    assert refused('{"schema": 1, "estimates": [{"file": "a", "suite": "s", "est_time": 1e999}]}') == [
        (P, None, "estimates[0].est_time must be a finite number >= 0, got inf", None)]
    huge = "1" + "0" * 400
    assert refused('{"schema": 1, "estimates": [{"file": "a", "suite": "s", "est_time": ' + huge + "}]}") == [
        (P, None, f"estimates[0].est_time must be a finite number >= 0, got {huge}", None)]


def test_duplicate_entry():
    assert refused(doc(entry(), entry(suite="amd"), entry(est_time=600))) == [
        (P, None, "estimates[2]: tests/test_a.py / gpu-a is listed twice", None)]


def test_every_entry_error_is_reported_at_once():
    assert refused(doc(entry(), {"file": "x"}, entry(est_time=-3), entry(file=2), entry(est_time=1))) == [
        (P, None, "estimates[1] must have exactly file, suite and est_time", None),
        (P, None, "estimates[2].est_time must be a finite number >= 0, got -3", None),
        (P, None, "estimates[3]: file and suite must be strings", None),
        (P, None, "estimates[4]: tests/test_a.py / gpu-a is listed twice", None),
    ]


# -- render --------------------------------------------------------------------------------------------------

def test_render_golden_sorted():
    assert render([("tests/b.py", "gpu-a", 300), ("tests/a.py", "gpu-b", 30.5), ("tests/a.py", "amd", 0)]) == (
        '{\n  "schema": 1,\n  "estimates": [\n'
        '    {\n      "file": "tests/a.py",\n      "suite": "amd",\n      "est_time": 0\n    },\n'
        '    {\n      "file": "tests/a.py",\n      "suite": "gpu-b",\n      "est_time": 30.5\n    },\n'
        '    {\n      "file": "tests/b.py",\n      "suite": "gpu-a",\n      "est_time": 300\n    }\n'
        "  ]\n}\n")
    assert render([]) == '{\n  "schema": 1,\n  "estimates": []\n}\n'
    assert SCHEMA == 1


@given(st.dictionaries(st.tuples(st.text(min_size=1, max_size=10), st.text(min_size=1, max_size=10)),
                       st.integers(0, MAX_EST_TIME) | st.floats(0, MAX_EST_TIME, allow_nan=False), max_size=6))
def test_render_then_parse_round_trips(table):
    assert parse_estimates(render((f, s, e) for (f, s), e in table.items()), P) == table


# -- apply ---------------------------------------------------------------------------------------------------

def reg(file, suite, est, backend="cuda", **kw) -> Registration:
    return Registration(file=file, line=2, backend=backend, suite=suite, est_time=est, **kw)


def test_apply_overrides_matching_registrations_and_returns_stale_keys():
    regs = [reg("tests/a.py", "gpu-a", 300), reg("tests/a.py", "amd", 480, backend="rocm"),
            reg("tests/b.py", "gpu-a", 60), reg("tests/unit/u.py", "cpu", 1, backend="cpu", implicit=True,
                                                  est_source="implicit")]
    table = {("tests/a.py", "amd"): 800, ("tests/b.py", "gpu-a"): 45.5, ("tests/gone.py", "gpu-a"): 10,
             ("tests/a.py", "gpu-z"): 1}
    applied, stale = apply(regs, table)
    assert applied == [
        reg("tests/a.py", "gpu-a", 300),                                    # not listed: the literal stays
        reg("tests/a.py", "amd", 800, backend="rocm", est_source="estimates"),
        reg("tests/b.py", "gpu-a", 45.5, est_source="estimates"),
        reg("tests/unit/u.py", "cpu", 1, backend="cpu", implicit=True, est_source="implicit"),
    ]
    assert stale == [("tests/a.py", "gpu-z"), ("tests/gone.py", "gpu-a")]
    assert regs[1].est_time == 480 and regs[1].est_source == "literal"  # inputs are not mutated


def test_apply_with_no_estimates_changes_nothing():
    regs = [reg("tests/a.py", "gpu-a", 300)]
    assert apply(regs, {}) == (regs, [])
    assert apply([], {("a", "b"): 1}) == ([], [("a", "b")])


# -- the snapshot and lint -----------------------------------------------------------------------------------

def estimates_repo(make_repo, estimates: str | None) -> Path:
    files = {
        "tests/test_a.py": 'from ci_policy import register_cuda_ci, register_rocm_ci\n'
                           'register_cuda_ci(est_time=300, suite="gpu-a", labels=["fsdp"])\n'
                           'register_rocm_ci(est_time=480, suite="amd", labels=["fsdp"])\n' + MAIN_BLOCK,
        "tests/test_b.py": 'from ci_policy import register_cuda_ci\n'
                           'register_cuda_ci(est_time=60, suite="gpu-a", labels=["megatron"])\n' + MAIN_BLOCK,
    }
    if estimates is not None:
        files[P] = estimates
    return make_repo(files, config=MINIMAL_CONFIG + f"estimates_file: {P}\n")


def test_snapshot_uses_the_estimates_file_over_literals(make_repo):
    repo = estimates_repo(make_repo, doc(entry(est_time=120), entry(file="tests/gone.py", est_time=9),
                                         entry(suite="amd", est_time=700.5)))
    snap = load_snapshot(repo).require_valid()
    assert [(r.file, r.suite, r.est_time, r.est_source) for r in snap.registrations] == [
        ("tests/test_a.py", "gpu-a", 120, "estimates"),
        ("tests/test_a.py", "amd", 700.5, "estimates"),
        ("tests/test_b.py", "gpu-a", 60, "literal"),
    ]
    assert snap.unused_estimates == (("tests/gone.py", "gpu-a"),)
    report = lint(repo)
    assert report.errors == ()
    assert [(w.path, w.line, w.message, w.hint, w.severity) for w in report.warnings if "estimates" in w.message] \
        == [(P, None, "the estimates file lists tests/gone.py for suite gpu-a, which no registration matches", HINT,
             "warning")]


def test_lint_warns_about_stale_entries_in_text(make_repo, capsys):
    repo = estimates_repo(make_repo, doc(entry(file="tests/gone.py"), entry(file="tests/test_b.py", suite="amd")))
    assert main(["lint", "--repo", str(repo)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:4] == [
        f"{P}: warning: CP904 estimate-unused: "
        "the estimates file lists tests/gone.py for suite gpu-a, which no registration matches",
        f"    hint: {HINT}",
        f"{P}: warning: CP904 estimate-unused: "
        "the estimates file lists tests/test_b.py for suite amd, which no registration matches",
        f"    hint: {HINT}",
    ]


def test_no_stale_warning_when_every_entry_matches(make_repo):
    repo = estimates_repo(make_repo, doc(entry()))
    assert [w.message for w in lint(repo).warnings if w.path == P] == []


@pytest.mark.parametrize("estimates, stderr", [
    ('{"schema": 1, "estimates": [{"file": "a", "suite": "s", "est_time": NaN}]}',
     f"{P}: CP420 estimates-invalid-json: "
     f"estimates file {P} is not valid strict JSON: NaN is not allowed\n    hint: {HINT}\n"),
    ('{"schema": 1, "estimates": [{"file": "a", "suite": "s", "est_time": 1' + "0" * 400 + "}]}",
     f"{P}: CP422 estimates-entry-invalid: estimates[0].est_time must be a finite number >= 0, got 1{'0' * 400}\n"),
    (doc(entry(), entry()), f"{P}: CP423 estimates-entry-duplicate: "
                            "estimates[1]: tests/test_a.py / gpu-a is listed twice\n"),
])
def test_a_bad_estimates_file_stops_the_plan_with_its_message(make_repo, capsys, estimates, stderr):
    repo = estimates_repo(make_repo, estimates)
    assert main(["plan", "--repo", str(repo), "--event", "workflow_dispatch"]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", stderr + "ci-policy: 1 error\n")


def test_a_configured_estimates_file_that_does_not_exist_yet_is_a_warning_not_an_error(make_repo, capsys):
    # `tune --write-estimates` creates it; until then the literals apply.
    repo = estimates_repo(make_repo, None)
    assert main(["plan", "--repo", str(repo), "--event", "workflow_dispatch", "--format", "json"]) == 0
    assert {t["est_source"] for s in json.loads(capsys.readouterr().out)["stages"] for t in s["tests"]} <= {
        "literal", "implicit"}
    assert [w.message for w in lint(repo).warnings if "does not exist" in w.message] == [
        f"estimates file {P} does not exist yet; the est_time literals apply"]
