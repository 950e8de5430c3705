"""Suppressions (`ci_policy.model.suppress`): inline `# ci-policy: ignore[...]` and `lint.ignore`, end to end."""

from __future__ import annotations

import json

from ci_policy.cli import main
from ci_policy.errors import Diagnostic
from ci_policy.model.lint import lint
from ci_policy.model.suppress import Suppression, inline_suppressions

UNIT = "tests/ci/test/test_metric_selection.py"
# A unit test of the gate runtime calls the marker inside its test functions, as miles's does.
RUNTIME_TEST = '''\
from ci_policy import register_ci_gate


def test_selection():
    register_ci_gate(metric_key="train/grad_norm"){comment}
'''
CONFIG = """\
version: 1
discovery:
  roots: [tests]
  implicit:
    - {root: tests/ci, backend: cpu, suite: cpu, est_time: 1, cpu_only: true}
stages:
  - {name: cpu, backend: cpu}
"""
MISPLACED = ("register_ci_gate(...) here is not a registration: markers are read only as module-level "
             "expression statements (not inside a function, class, `if`, `with`, or an assignment)")


def runtime_repo(make_repo, comment: str = "", config: str = CONFIG):
    return make_repo({UNIT: RUNTIME_TEST.format(comment=comment)}, config=config, labels=None)


def coded(diagnostics) -> list[tuple]:
    return [(d.code, d.path, d.line, d.col, d.message) for d in diagnostics]


def test_without_a_suppression_the_call_inside_a_function_fails_with_code_and_location(make_repo):
    report = lint(runtime_repo(make_repo))
    assert coded(report.errors) == [
        ("CP205", UNIT, 1, 1, "register_ci_gate is imported but this file has no module-level "
                              "register_ci_gate(...) statement, so ci-policy reads no gate from it"),
        ("CP201", UNIT, 5, 5, MISPLACED)]
    assert report.suppressed == ()


def test_an_inline_suppression_by_code_and_name_lints_clean(make_repo, capsys):
    text = RUNTIME_TEST.format(comment="  # ci-policy: ignore[CP201]").replace(
        "from ci_policy import register_ci_gate",
        "from ci_policy import register_ci_gate  # ci-policy: ignore[marker-imported-unused]")
    repo = make_repo({UNIT: text}, config=CONFIG, labels=None)
    report = lint(repo)
    assert (report.errors, report.warnings) == ((), ())
    assert [(d.code, d.line) for d in report.suppressed] == [("CP205", 1), ("CP201", 5)]
    assert main(["lint", "--repo", str(repo)]) == 0
    assert capsys.readouterr().out == ("ci-policy lint: OK: 0 errors, 0 warnings, 2 suppressed "
                                       "(1 test file, 1 registration, 0 gates)\n")


def test_a_lint_ignore_rule_lints_clean_and_json_lists_what_it_suppressed(make_repo, capsys):
    config = CONFIG + "lint:\n  ignore:\n    - {paths: ['tests/ci/test/**'], codes: [CP201, CP205]}\n"
    repo = runtime_repo(make_repo, config=config)
    assert main(["lint", "--repo", str(repo), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["ok"], data["errors"], data["warnings"]) == (True, [], [])
    assert [(d["code"], d["path"], d["line"], d["col"]) for d in data["suppressed"]] == [
        ("CP205", UNIT, 1, 1), ("CP201", UNIT, 5, 5)]


def test_a_rule_for_other_paths_or_codes_suppresses_nothing_and_says_so(make_repo):
    config = CONFIG + "lint:\n  ignore:\n    - {paths: ['tests/other/**'], codes: [CP201]}\n"
    report = lint(runtime_repo(make_repo, config=config))
    assert [d.code for d in report.errors] == ["CP205", "CP201"]
    assert coded(report.warnings) == [
        ("CP906", ".github/ci-policy.yml", 10, None,
         "lint.ignore[0] (CP201 in tests/other/**) suppresses nothing")]


def test_a_suppression_on_the_first_line_of_a_statement_covers_the_whole_statement():
    text = 'x = f(  # ci-policy: ignore[CP201]\n    1,\n    2)\ny = 3  # ci-policy: ignore[CP215, CP201]\n'
    found, errors = inline_suppressions(text, "t.py")
    assert errors == []
    assert found == [Suppression("t.py", 1, 9, 1, 3, ("CP201",)), Suppression("t.py", 4, 8, 4, 4, ("CP215", "CP201"))]
    assert found[0].covers(Diagnostic("m", path="t.py", line=3, code="CP201"))
    assert not found[0].covers(Diagnostic("m", path="t.py", line=4, code="CP201"))
    assert not found[0].covers(Diagnostic("m", path="other.py", line=2, code="CP201"))
    assert not found[1].covers(Diagnostic("m", path="t.py", line=4, code="CP202"))


def test_a_comment_inside_a_string_is_no_suppression():
    assert inline_suppressions('s = "# ci-policy: ignore"\n', "t.py") == ([], [])


def test_a_suppressed_error_still_drops_its_registration(make_repo):
    repo = make_repo({"tests/e2e/test_a.py": 'register_cuda_ci(60, "nope", labels=["fsdp"])  '
                                             "# ci-policy: ignore[suite-unknown]\n"})
    report = lint(repo)
    assert [d.code for d in report.suppressed] == ["CP225"]
    assert report.snapshot is not None and report.snapshot.registrations_for("tests/e2e/test_a.py") == ()


def test_reading_statement_spans_shows_no_syntax_warning():
    # A shown SyntaxWarning echoes a line of the checkout's file to stderr (see read.markers).
    import warnings

    text = 'x = [0x1for x in y]  # ci-policy: ignore[CP201]\n'
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        found, bad = inline_suppressions(text, "tests/test_w.py")
    assert ([(s.line, s.codes) for s in found], bad, shown) == ([(1, ("CP201",))], [], [])
