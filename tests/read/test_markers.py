"""The marker scanner: where a marker call may stand, aliasing, attribute calls,
`if __name__ == "__main__":` detection, and `literal()`."""

from __future__ import annotations

import ast
import keyword
import textwrap

import pytest
from expected_codes import as_json
from helpers import MINIMAL_CONFIG, MINIMAL_LABELS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_policy.config.top import parse_config
from ci_policy.errors import CODES, Diagnostic
from ci_policy.gates.declarations import gates_of
from ci_policy.model.registry import registrations_of
from ci_policy.model.snapshot import load_snapshot
from ci_policy.read.labels import parse_labels
from ci_policy.read.markers import (
    ALL_MARKERS,
    MARKER_NAME_RE,
    NotLiteral,
    Scan,
    _nodes_that_may_mention,
    literal,
    mentions_marker,
    scan,
)

PATH = "tests/e2e/test_x.py"
MAIN = '\nif __name__ == "__main__":\n    main()\n'

MISPLACED = ("{name}(...) here is not a registration: markers are read only as module-level "
             "expression statements (not inside a function, class, `if`, `with`, or an assignment)")
UNCALLED = "{name} is referenced without being called as a module-level statement, so ci-policy cannot read it"
PLACEMENT_HINT = "write `{name}(...)` as a statement at module level, outside any block"


def err(line, col, message, hint=None, path=PATH):
    return as_json(path, line, col, message, hint)


def misplaced(line, col, name="register_cuda_ci"):
    return err(line, col, MISPLACED.format(name=name), PLACEMENT_HINT.format(name=name))


def uncalled(line, col, name="register_cuda_ci"):
    return err(line, col, UNCALLED.format(name=name), PLACEMENT_HINT.format(name=name))


def attribute(line, col, shown, name="register_cuda_ci"):
    return err(line, col, f"{shown} is not a registration: ci-policy reads only calls to the bare name {name}",
               f"`from ci_policy import {name}` and call `{name}(...)` at module level")


def aliased(line, col, asname, name="register_cuda_ci"):
    return err(line, col, f"{name} is imported as {asname!r}; ci-policy reads only calls to the bare name {name}",
               f"import it without 'as {asname}'")


def unused_import(line, col, name="register_cuda_ci"):
    what = "gate" if name == "register_ci_gate" else "registration"
    return err(line, col, f"{name} is imported but this file has no module-level {name}(...) statement, "
               f"so ci-policy reads no {what} from it", f"call {name}(...) at module level, or remove the import")


def unused_binding(line, col, name="register_cpu_ci"):
    what = "gate" if name == "register_ci_gate" else "registration"
    return err(line, col, f"{name} is bound here but this file has no module-level {name}(...) statement, "
               f"so ci-policy reads no {what} from it", f"call {name}(...) at module level, or remove the binding")


def errors_of(result) -> list[dict]:
    return [e.as_dict() for e in sorted(result.errors, key=Diagnostic.sort_key)]


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


CALL = 'register_cuda_ci(60, "gpu-a", labels=["fsdp"])'

# ---------------------------------------------------------------------------
# Placement: accepted forms, with the (marker, line, col) of each call found.
# ---------------------------------------------------------------------------

ACCEPTED_PLACEMENTS = [
    pytest.param(CALL + "\n", [("register_cuda_ci", 1, 1)], id="bare-statement"),
    pytest.param(f"from ci_policy import register_cuda_ci\n\n{CALL}\n", [("register_cuda_ci", 3, 1)],
                 id="after-import"),
    pytest.param(f"import os\nx = 1; {CALL}\n", [("register_cuda_ci", 2, 8)], id="after-semicolon"),
    pytest.param('register_cuda_ci(\n    60,\n    "gpu-a",\n    labels=["fsdp"],\n)  # comment\n',
                 [("register_cuda_ci", 1, 1)], id="multi-line-call"),
    pytest.param(f'{CALL}\nregister_rocm_ci(60, "amd", labels=["fsdp"])\nregister_cpu_ci(1, "cpu")\n'
                 'register_ci_gate(metric_key="loss")\n',
                 [("register_cuda_ci", 1, 1), ("register_rocm_ci", 2, 1), ("register_cpu_ci", 3, 1),
                  ("register_ci_gate", 4, 1)], id="every-marker-in-source-order"),
    pytest.param(f"from ci_policy import register_cuda_ci as register_cuda_ci\n{CALL}\n",
                 [("register_cuda_ci", 2, 1)], id="import-as-same-name"),
    pytest.param(f"import ci_policy\n{CALL}\n", [("register_cuda_ci", 2, 1)], id="module-import"),
    # How sglang binds its markers: a module-level rebinding, then calls.
    pytest.param('register_cpu_ci = _load_module("ci_register").register_cpu_ci\n'
                 'register_cpu_ci(est_time=60, suite="cpu")\n', [("register_cpu_ci", 2, 1)],
                 id="module-level-rebinding"),
    pytest.param('register_cuda_ci: Callable = ci_register.register_cuda_ci\n' + CALL + "\n",
                 [("register_cuda_ci", 2, 1)], id="annotated-rebinding"),
    pytest.param('register_cpu_ci = register_cuda_ci = ci_register.load()\n'
                 'register_cpu_ci(1, "cpu")\n' + CALL + "\n",
                 [("register_cpu_ci", 2, 1), ("register_cuda_ci", 3, 1)], id="two-names-one-rebinding"),
]


@pytest.mark.parametrize("text, calls", ACCEPTED_PLACEMENTS)
def test_module_level_marker_statements_are_found(text, calls):
    result = scan(text, PATH)
    assert errors_of(result) == []
    assert [(c.marker, c.line, c.col) for c in result.calls] == calls


# ---------------------------------------------------------------------------
# Placement: rejected forms. Each must be an error, never a silent skip.
# ---------------------------------------------------------------------------

REJECTED_PLACEMENTS = [
    pytest.param(src(f"""
        def setup():
            {CALL}
        """), [misplaced(2, 5)], id="inside-function"),
    pytest.param(src(f"""
        async def setup():
            {CALL}
        """), [misplaced(2, 5)], id="inside-async-function"),
    pytest.param(src(f"""
        class TestX:
            {CALL}
        """), [misplaced(2, 5)], id="inside-class"),
    pytest.param(src(f"""
        import os
        if os.environ.get("CI"):
            {CALL}
        """), [misplaced(3, 5)], id="inside-if"),
    pytest.param(src(f"""
        if __name__ == "__main__":
            {CALL}
        """), [misplaced(2, 5)], id="inside-main-block"),
    pytest.param(src(f"""
        with open("x") as fh:
            {CALL}
        """), [misplaced(2, 5)], id="inside-with"),
    pytest.param(src(f"""
        try:
            {CALL}
        except ImportError:
            pass
        """), [misplaced(2, 5)], id="inside-try"),
    pytest.param(src(f"""
        for _ in range(1):
            {CALL}
        """), [misplaced(2, 5)], id="inside-for"),
    pytest.param(f"registration = {CALL}\n", [misplaced(1, 16)], id="assignment"),
    pytest.param(f"print({CALL})\n", [misplaced(1, 7)], id="argument-of-another-call"),
    pytest.param(f"_ = lambda: {CALL}\n", [misplaced(1, 13)], id="inside-lambda"),
    pytest.param(f"x = 1 if True else {CALL}\n", [misplaced(1, 20)], id="inside-conditional-expression"),
    pytest.param(f"{CALL}()\n", [misplaced(1, 1)], id="result-called-again"),
    pytest.param("reg = register_cuda_ci\n", [uncalled(1, 7)], id="referenced-not-called"),
    pytest.param('register_cpu_ci = _load_module("ci_register").register_cpu_ci\n', [unused_binding(1, 1)],
                 id="rebound-never-called"),
    pytest.param(src('''
        register_cuda_ci = ci_register.register_cuda_ci
        def setup():
            register_cuda_ci(60, "gpu-a", labels=["fsdp"])
        '''), [unused_binding(1, 1, "register_cuda_ci"), misplaced(3, 5)], id="rebound-called-only-in-a-function"),
    pytest.param('register_cpu_ci = ci_register.register_cpu_ci\nregister_cpu_ci(1, "cpu")\n'
                 'x = register_cpu_ci\n', [uncalled(3, 5, "register_cpu_ci")],
                 id="rebinding-does-not-excuse-a-reference"),
    pytest.param("@register_cuda_ci\ndef test(): pass\n", [uncalled(1, 2)], id="used-as-decorator"),
    pytest.param("register_cuda_ci\n", [uncalled(1, 1)], id="bare-name-statement"),
    pytest.param('ci_register.register_cuda_ci(60, "gpu-a", labels=["fsdp"])\n',
                 [attribute(1, 1, "ci_register.register_cuda_ci")], id="attribute-call"),
    pytest.param('import ci_policy\nci_policy.register_cpu_ci(1, "cpu")\n',
                 [attribute(2, 1, "ci_policy.register_cpu_ci", "register_cpu_ci")], id="attribute-call-cpu"),
    pytest.param('a.b.register_ci_gate(metric_key="loss")\n',
                 [attribute(1, 1, "a.b.register_ci_gate", "register_ci_gate")], id="attribute-call-gate"),
    pytest.param("f = ci_register.register_rocm_ci\n",
                 [attribute(1, 5, "ci_register.register_rocm_ci", "register_rocm_ci")],
                 id="attribute-reference"),
    pytest.param('from ci_policy import register_cuda_ci as reg\nreg(60, "gpu-a", labels=["fsdp"])\n',
                 [aliased(1, 1, "reg")], id="aliased-from-import"),
    pytest.param('import ci_policy.register_cuda_ci as reg\n', [aliased(1, 1, "reg")], id="aliased-import"),
    pytest.param("from ci_policy import register_cuda_ci\n", [unused_import(1, 1)], id="imported-never-called"),
    pytest.param(f"from ci_policy import register_cpu_ci, register_cuda_ci\n{CALL}\n",
                 [unused_import(1, 1, "register_cpu_ci")], id="one-of-two-imports-unused"),
    pytest.param("from ci_policy import register_ci_gate\n", [unused_import(1, 1, "register_ci_gate")],
                 id="gate-imported-never-called"),
    pytest.param(src(f"""
        from ci_policy import register_cuda_ci
        def setup():
            {CALL}
        """), [unused_import(1, 1), misplaced(3, 5)], id="import-plus-call-in-function"),
    pytest.param(src(f"""
        {CALL}
        def setup():
            register_rocm_ci(60, "amd", labels=["fsdp"])
        """), [misplaced(3, 5, "register_rocm_ci")], id="valid-call-does-not-excuse-a-misplaced-one"),
]


@pytest.mark.parametrize("text, expected", REJECTED_PLACEMENTS)
def test_marker_outside_a_module_level_statement_is_an_error(text, expected):
    result = scan(text, PATH)
    assert errors_of(result) == expected


def test_placement_error_leaves_only_the_valid_call():
    result = scan(f'{CALL}\ndef setup():\n    register_rocm_ci(60, "amd", labels=["fsdp"])\n', PATH)
    assert [(c.marker, c.line) for c in result.calls] == [("register_cuda_ci", 1)]
    assert errors_of(result) == [misplaced(3, 5, "register_rocm_ci")]


@pytest.mark.parametrize("text, expected", [
    pytest.param("def f(:\n", [err(1, 7, f"{PATH} is not valid Python: invalid syntax", "fix the syntax error")],
                 id="syntax-error"),
    pytest.param("x = '\0'\n", [err(None, None, f"{PATH} is not valid Python: source code string cannot "
                                    "contain null bytes", "fix the syntax error")], id="nul-byte"),
    pytest.param("x = " + "-" * 100_000 + "1\n",
                 [err(1, 1, f"{PATH} is too deeply nested for the Python parser",
                      "split the deeply nested expression")], id="too-deep-for-the-parser"),
    pytest.param("x = " + "+".join(["1"] * 100_000) + "\n",
                 [err(1, 1, f"{PATH} is too deeply nested for the Python parser",
                      "split the deeply nested expression")], id="too-long-for-the-ast"),
])
def test_unparsable_source_is_one_located_error(text, expected):
    result = scan(text, PATH)
    assert errors_of(result) == expected
    assert result.calls == [] and result.has_main_block is False


def test_byte_order_mark_is_accepted_like_python_does():
    result = scan("\ufeff" + CALL + MAIN, PATH)
    assert errors_of(result) == []
    assert [(c.marker, c.line, c.col) for c in result.calls] == [("register_cuda_ci", 1, 1)]
    assert result.has_main_block is True


def test_marker_named_only_in_comments_and_strings_is_not_a_call():
    result = scan('# register_cuda_ci(60, "gpu-a")\nDOC = "register_cpu_ci"\n', PATH)
    assert (result.calls, result.errors) == ([], [])


# ---------------------------------------------------------------------------
# The same placement errors reach the snapshot, and no implicit fallback hides them.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    pytest.param(f'from ci_policy import register_cuda_ci as reg\nreg(60, "gpu-a", labels=["fsdp"])\n{MAIN}',
                 [aliased(1, 1, "reg")], id="aliased"),
    pytest.param(f"def setup():\n    {CALL}\n{MAIN}", [misplaced(2, 5)], id="in-function"),
    pytest.param(f"import os\nif os.environ.get('CI'):\n    {CALL}\n{MAIN}", [misplaced(3, 5)], id="in-if"),
    pytest.param(f'import ci_register\nci_register.register_cuda_ci(60, "gpu-a", labels=["fsdp"])\n{MAIN}',
                 [attribute(2, 1, "ci_register.register_cuda_ci")], id="attribute"),
])
def test_snapshot_reports_a_marker_that_yields_no_registration(make_repo, text, expected):
    snap = load_snapshot(make_repo({PATH: text}))
    assert [e.as_dict() for e in snap.errors] == expected
    assert snap.registrations == ()


# ---------------------------------------------------------------------------
# `if __name__ == "__main__":` detection.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    pytest.param('if __name__ == "__main__":\n    unittest.main()\n', True, id="unittest-main"),
    pytest.param("if __name__ == '__main__':\n    pytest.main([__file__])\n", True, id="single-quotes"),
    pytest.param('if "__main__" == __name__:\n    main()\n', True, id="reversed-comparison"),
    pytest.param('if __name__ == "__main__": main()\n', True, id="one-line"),
    pytest.param('if __name__ == "__main__":\n    sys.exit(run(x))\n', True, id="nested-call"),
    pytest.param('if __name__ == "__main__":\n    x = 1\n    main()\n', True, id="call-after-statement"),
    pytest.param('if __name__ == "__main__":\n    pass\n', False, id="no-call"),
    pytest.param('if __name__ == "__main__":\n    x = 1\n', False, id="assignment-only"),
    pytest.param('if __name__ == "__main__":\n    pass\nelse:\n    main()\n', False, id="call-only-in-else"),
    pytest.param('if __name__ != "__main__":\n    main()\n', False, id="not-equal"),
    pytest.param('if __name__ == "main":\n    main()\n', False, id="wrong-string"),
    pytest.param('if name == "__main__":\n    main()\n', False, id="wrong-name"),
    pytest.param('if True:\n    if __name__ == "__main__":\n        main()\n', False, id="not-top-level"),
    pytest.param('def test():\n    main()\n', False, id="no-block"),
    pytest.param("", False, id="empty-file"),
])
def test_main_block_detection(text, expected):
    result = scan(text, PATH)
    assert result.errors == []
    assert result.has_main_block is expected


# ---------------------------------------------------------------------------
# literal(): the only way an argument gets a value.
# ---------------------------------------------------------------------------

def expr(source: str) -> ast.AST:
    return ast.parse(source, mode="eval").body


@pytest.mark.parametrize("source, value", [
    ("1800", 1800), ("1_800", 1800), ("1.8e3", 1800.0), ("0x708", 1800), ("-3", -3), ("+3", 3),
    ("-1.5", -1.5), ("-0", 0), ("'cpu'", "cpu"), ("'gp' 'u-a'", "gpu-a"), ("True", True),
    ("False", False), ("None", None), ("[]", []), ("[1, 'a', None]", [1, "a", None]), ("(1, 2)", (1, 2)),
    ("(1,)", (1,)), ("{'rel_up': 0.5}", {"rel_up": 0.5}), ("{1: [2, (3,)]}", {1: [2, (3,)]}),
    ("[[1], {'k': (2, -2)}]", [[1], {"k": (2, -2)}]), ("1e999", float("inf")),
])
def test_literal_accepts(source, value):
    result = literal(expr(source))
    assert result == value
    assert type(result) is type(value)


@pytest.mark.parametrize("source", [
    "x", "f(1)", "1 + 2", "30 * 60", "-x", "-True", "+False", "- -1", "-'s'", "-(1,)", "~1", "not True",
    "b'x'", "...", "{1, 2}", "{**d}", "[*a]", "(*a,)", "f'{x}'", "f'cpu'", "{[1]: 2}", "{(1, [2]): 3}",
    "[x]", "{'k': x}", "{x: 1}", "lambda: 1", "a.b", "x[0]", "[i for i in y]", "1 if c else 2",
])
def test_literal_refuses(source):
    with pytest.raises(NotLiteral):
        literal(expr(source))


# ---------------------------------------------------------------------------
# Property: scanning never raises, whatever the text; problems come back as errors.
# ---------------------------------------------------------------------------

CONFIG = parse_config(MINIMAL_CONFIG)
LABELS = parse_labels(MINIMAL_LABELS)

TOKENS = [
    "register_cpu_ci", "register_cuda_ci", "register_rocm_ci", "register_ci_gate", "ci.", "(", ")", "[",
    "]", "{", "}", ",", ":", "=", "*", "**", "-", "+", ".", " ", "\n", "    ", "1", "1.5", "1e999", "0",
    "'cpu'", "'gpu-a'", "'amd'", '"megatron"', "'x'", "None", "True", "False", "labels", "nightly",
    "disabled", "suite", "est_time", "metric_key", "steps", "constraint", "'rel_up'", "enforce",
    "allowlist_reason", "x", "if __name__ == '__main__':", "def f():", "class C:", "if x:", "with x:",
    "import ", "from ci_policy import ", " as reg", "lambda: ", "f'", "#", "\\", "'''", "\0", "\ufeff",
]

source_like = st.lists(st.sampled_from(TOKENS), max_size=60).map("".join)


# Random text makes the parser warn about e.g. invalid escapes; the warnings are not under test.
QUIET_PARSER = pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")


def check_scan(text: str, path: str) -> None:
    result = scan(text, path)
    assert result.path == path
    for e in result.errors:
        assert isinstance(e, Diagnostic)
        assert e.code in CODES and e.severity == "error"
        assert e.path == path and e.message
        assert e.line is None or e.line >= 1
        assert e.col is None or e.col >= 1
    # The readers of a scan must not raise on it either.
    registrations_of(result, CONFIG, LABELS)
    gates_of(result)


@QUIET_PARSER
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(), path=st.sampled_from([PATH, "tests/unit/test_y.py"]))
def test_scan_never_raises_on_arbitrary_text(text, path):
    check_scan(text, path)


@QUIET_PARSER
@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(text=source_like, path=st.sampled_from([PATH, "tests/unit/test_y.py"]))
def test_scan_never_raises_on_marker_like_text(text, path):
    check_scan(text, path)


identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,24}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n) and n not in ALL_MARKERS and not MARKER_NAME_RE.fullmatch(n))


@settings(max_examples=200)
@given(name=identifiers | st.sampled_from(["register_cuda_ci2", "Register_cpu_ci", "register_cuda",
                                           "_register_rocm_ci", "register_ci_gates"]))
def test_only_the_exact_marker_names_are_markers(name):
    result = scan(f'{name}(60, "gpu-a", labels=["fsdp"])\n', PATH)
    assert (result.calls, result.errors) == ([], [])


# -- the scan only walks statements whose lines name a marker: it must still see every mention --

@pytest.mark.parametrize("source, line", [
    pytest.param("@register_cuda_ci\ndef f():\n    pass\n", 1, id="decorator"),
    pytest.param("class A:\n    class B:\n        def f(self):\n            if x:\n"
                 "                register_cuda_ci(1, 'gpu-a')\n", 5, id="deeply-nested"),
    pytest.param("x = 'a\u2028b\x1cc'\ndef f():\n    register_cuda_ci(1, 'gpu-a')\n", 3, id="after-u2028-in-a-string"),
    pytest.param("x = 1\x0c\ndef f():\n    register_cuda_ci(1, 'gpu-a')\n", 3, id="after-form-feed"),
    pytest.param("def f(\n    a=(\n        1\n    ),\n):\n    return register_rocm_ci\n", 6, id="multi-line-def"),
])
def test_every_misplaced_mention_is_found(source, line):
    result = scan(source, "tests/e2e/test_x.py")
    assert [e.line for e in result.errors] == [line]


def _every_mention(source: str) -> list[tuple[str, int, int]]:
    """What a walk of the whole module finds: every name and attribute of a marker."""
    return sorted((type(n).__name__, n.lineno, n.col_offset) for n in ast.walk(ast.parse(source))
                  if isinstance(n, ast.Name) and n.id in ALL_MARKERS
                  or isinstance(n, ast.Attribute) and n.attr in ALL_MARKERS)


def _walked_mentions(source: str) -> list[tuple[str, int, int]]:
    nodes = _nodes_that_may_mention(ast.parse(source), source, Scan(path=PATH), set(), ALL_MARKERS)
    return sorted((type(n).__name__, n.lineno, n.col_offset) for n in nodes
                  if isinstance(n, ast.Name) and n.id in ALL_MARKERS
                  or isinstance(n, ast.Attribute) and n.attr in ALL_MARKERS)


statement_pieces = st.sampled_from([
    "x = 1", "register_cuda_ci(1, 'gpu-a')", "y = register_rocm_ci + 1", "m.register_cpu_ci(2)", "pass",
    "def f():\n    register_cuda_ci(1, 'a')", "@register_cuda_ci\ndef g():\n    pass",
    "z = (\n  1,\n  register_cpu_ci)", "if x:\n    pass\nelse:\n    m.register_rocm_ci",
    "s = 'register_ but no marker'", 't = """\nregister_cuda_ci\n"""', "u = 'a\u2028b\\x0c'",
    "class C:\n    register_cuda_ci", "a = 1; register_cpu_ci", "register_cpu_ci; b = 2",
    "w = [\n register_cuda_ci,\n]; q = register_rocm_ci", "# register_cuda_ci in a comment", "v = 2\x0c"])


@settings(max_examples=300)
@given(pieces=st.lists(statement_pieces, max_size=8),
       breaks=st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=8, max_size=8))
def test_the_statements_walked_hold_every_mention(pieces, breaks):
    # Lines end in \n, \r\n or \r, mixed in one file: marked lines are counted as Python counts lines.
    source = "".join(piece.replace("\n", brk) + brk for piece, brk in zip(pieces, breaks, strict=False))
    assert _walked_mentions(source) == _every_mention(source)


# -- dialects: the registration marker names a repository configures ---------------------------

DIALECT = frozenset({"register_cpu_ci", "register_cuda_ci", "register_rocm_ci", "register_amd_ci"})
BUILT_INS = "register_cpu_ci, register_cuda_ci, register_rocm_ci"


def undeclared(line, col, name, configured=BUILT_INS):
    return err(line, col, f"{name}(...) looks like a registration marker but the configuration does not declare it "
               f"(configured: {configured}), so ci-policy reads no registration from it",
               f"declare it: markers: {{names: {{{name}: BACKEND}}}} in the configuration, with BACKEND one of "
               "its backends")


def test_a_configured_marker_name_is_read_like_the_built_ins():
    text = ('from sglang.test.ci.ci_register import register_amd_ci, register_cuda_ci\n\n'
            'register_cuda_ci(est_time=1, suite="a")\nregister_amd_ci(est_time=2, suite="b", nightly=True)\n')
    result = scan(text, PATH, DIALECT)
    assert errors_of(result) == []
    assert [(c.marker, c.line, c.col) for c in result.calls] == [("register_cuda_ci", 3, 1), ("register_amd_ci", 4, 1)]


def test_a_configured_marker_name_gets_every_placement_check():
    text = ("from ci import register_amd_ci as amd\nimport ci\nfrom ci import register_amd_ci\n"
            "def f():\n    register_amd_ci(1, 'b')\nci.register_amd_ci(1, 'b')\nx = register_amd_ci\n")
    assert errors_of(scan(text, PATH, DIALECT)) == [
        aliased(1, 1, "amd", "register_amd_ci"), unused_import(3, 1, "register_amd_ci"),
        misplaced(5, 5, "register_amd_ci"), attribute(6, 1, "ci.register_amd_ci", "register_amd_ci"),
        uncalled(7, 5, "register_amd_ci")]


def test_a_configured_name_rebound_at_module_level_is_fine_when_called():
    text = 'register_amd_ci = _load_module("ci_register").register_amd_ci\n\nregister_amd_ci(1, "b")\n'
    result = scan(text, PATH, DIALECT)
    assert (errors_of(result), [c.marker for c in result.calls]) == ([], ["register_amd_ci"])


def test_a_module_level_call_of_an_undeclared_marker_is_an_error_never_a_skip():
    text = ("from sglang.test.ci.ci_register import register_npu_ci, register_amd_ci\n\n"
            'register_amd_ci(est_time=600, suite="amd", nightly=True)\n'
            'register_npu_ci(est_time=400, suite="npu")\n')
    result = scan(text, PATH)
    assert errors_of(result) == [undeclared(3, 1, "register_amd_ci"), undeclared(4, 1, "register_npu_ci")]
    assert (result.calls, [c.marker for c in result.undeclared]) == ([], ["register_amd_ci", "register_npu_ci"])
    # Declared, the same call is a registration marker call; the other stays undeclared.
    result = scan(text, PATH, DIALECT)
    assert errors_of(result) == [undeclared(4, 1, "register_npu_ci",
                                            "register_amd_ci, register_cpu_ci, register_cuda_ci, register_rocm_ci")]
    assert [c.marker for c in result.calls] == ["register_amd_ci"]


@pytest.mark.parametrize("text", [
    pytest.param("def f():\n    register_npu_ci(1, 'x')\n", id="inside-a-function"),
    pytest.param("x = register_npu_ci(1, 'x')\n", id="in-an-assignment"),
    pytest.param("ci.register_npu_ci(1, 'x')\n", id="attribute-call"),
    pytest.param("from ci import register_npu_ci\nregister_npu_ci\n", id="not-called"),
    pytest.param("register_npu(1, 'x')\nregister_ci_gates(1)\nmy_register_npu_ci(1)\n", id="other-names"),
])
def test_only_module_level_call_statements_of_marker_shaped_names_are_undeclared_markers(text):
    result = scan(text, PATH)
    assert (errors_of(result), result.undeclared) == ([], [])


@pytest.mark.parametrize("text, names, expected", [
    ("register_cuda_ci(1, 'a')", DIALECT, True),
    ("register_amd_ci(1, 'a')", DIALECT, True),
    ("register_amd_ci(1, 'a')", frozenset(), True),  # shaped like a marker: scanned, to report it
    ("register_ci_gate(metric_key='a')", frozenset(), True),
    ("registered = 1\nregister(1)", DIALECT, False),
    ("x = 1", DIALECT, False),
])
def test_mentions_marker_is_a_cheap_pre_check_that_misses_no_marker(text, names, expected):
    assert mentions_marker(text, names) is expected



@pytest.mark.parametrize("action", ["error", "always"])
def test_syntax_warnings_are_neither_errors_nor_shown(action):
    # Shown, a SyntaxWarning prints the offending line (read back from the path): the line
    # `  x = ...; "::warning ...::..."` on stderr would be a workflow command. Under "error"
    # it would turn into a SyntaxError, and the file into an invalid one.
    import warnings

    line = 'x = [0x1for x in y]; "::warning title=pwned::injected"\n'
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter(action)
        result = scan(line, "tests/test_w.py")
    assert (result.calls, result.errors, shown) == ([], [], [])
