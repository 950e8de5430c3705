"""Literal-only est_time edits (`ci_policy.adapters.tuning.apply`): libcst round trips where the
edit changes exactly the est_time literal, every skip reason, files on disk (atomic
writes, mode, symlinks, encodings), a property test, and the lazy libcst import."""

from __future__ import annotations

import ast
import difflib
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_policy.adapters.tuning import apply as tuning_apply
from ci_policy.adapters.tuning.apply import EditResult, apply_to_file, rewrite_est_time

ROOT = Path(__file__).resolve().parents[3]
SLOT = "@@EST@@"  # where the est_time literal goes in a template; appears nowhere else


def est_time_of(source: str, marker: str = "register_cuda_ci"):
    """The est_time value of the one module-level `marker(...)` statement, read with ast."""
    tree = ast.parse(source.removeprefix("\ufeff"))
    calls = [s.value for s in tree.body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
             and isinstance(s.value.func, ast.Name) and s.value.func.id == marker]
    assert len(calls) == 1
    (call,) = calls
    node = call.args[0] if call.args else next(k.value for k in call.keywords if k.arg == "est_time")
    return ast.literal_eval(node)


def assert_only_span_changed(old: str, new: str, old_literal: str, new_literal: str) -> None:
    """`new` is `old` with one run of characters, inside the literal's span, replaced."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    edits = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    assert edits, "nothing changed"
    start, end = edits[0][1], edits[-1][2]
    # Every edit falls inside one occurrence of the old literal, and replacing exactly that
    # occurrence gives the new text.
    spans = [i for i in range(len(old)) if old.startswith(old_literal, i)
             and i <= start and end <= i + len(old_literal)]
    assert len(spans) == 1, (old, new, edits)
    (span_start,) = spans
    assert old[:span_start] + new_literal + old[span_start + len(old_literal):] == new


def check_rewrite(template: str, literal: str, new_est: int = 2000, backend: str = "cuda") -> EditResult:
    """Rewrite `template` with `literal` in the slot; the result must be the slot set to new_est."""
    assert template.count(SLOT) == 1
    before = template.replace(SLOT, literal)
    result = rewrite_est_time(before, backend, new_est)
    assert result.status == "changed", result
    assert result.reason is None
    assert result.old == literal
    assert result.source == template.replace(SLOT, str(new_est))
    assert_only_span_changed(before, result.source, literal, str(new_est))
    marker = {"cpu": "register_cpu_ci", "cuda": "register_cuda_ci", "rocm": "register_rocm_ci"}[backend]
    assert est_time_of(result.source, marker) == new_est
    prefix = template.removeprefix("\ufeff")[: template.removeprefix("\ufeff").index(SLOT)]
    assert result.line == len(prefix.replace("\r\n", "\n").split("\n"))
    return result


# -- round trips: exactly the literal changes ---------------------------------------------------

ROUND_TRIPS = {
    "keyword on one line": (
        'from ci_policy import register_cuda_ci\n\nregister_cuda_ci(est_time=@@EST@@, suite="stage-c-4-gpu-h200", '
        'labels=["megatron"])\n', "300"),
    "positional": ('register_cuda_ci(@@EST@@, "stage-c-4-gpu-h200", labels=["megatron"])\n', "300"),
    "multi-line with comments inside the call": (
        'import os\n\n'
        'register_cuda_ci(  # the big one\n'
        '    # est_time first\n'
        '    est_time  =  @@EST@@ ,   # seconds\n'
        '    suite = "stage-c-4-gpu-h200",\n'
        '    # labels=["old"],\n'
        '    labels = [\n'
        '        "megatron",  # keep\n'
        '    ],\n'
        ')   # end\n', "1_800"),
    "underscored literal": ("register_cuda_ci(@@EST@@, 'stage-c')\n", "1_800"),
    "float with exponent": ("register_cuda_ci(est_time=@@EST@@, suite='stage-c')\n", "1.8e3"),
    "upper-case exponent and sign": ("register_cuda_ci(est_time=@@EST@@, suite='stage-c')\n", "18E+2"),
    "hex": ("register_cuda_ci(@@EST@@, suite='stage-c')\n", "0x708"),
    "octal": ("register_cuda_ci(@@EST@@, suite='stage-c')\n", "0o3410"),
    "binary": ("register_cuda_ci(@@EST@@, suite='stage-c')\n", "0b11100001000"),
    "float without digits after the point": ("register_cuda_ci(@@EST@@, 'stage-c')\n", "1800."),
    "zero": ("register_cuda_ci(@@EST@@, 'stage-c')\n", "0"),
    "trailing comma, single quotes": ("register_cuda_ci(\n    @@EST@@,\n    'stage-c',\n    labels=['megatron'],\n)\n",
                                      "300"),
    "double quotes, no trailing comma": ('register_cuda_ci(\n    @@EST@@,\n    "stage-c",\n    labels=["a", \'b\'])\n',
                                         "300"),
    "suite before est_time by keyword": ("register_cuda_ci(suite='stage-c', est_time=@@EST@@)\n", "300"),
    "parenthesized literal": ("register_cuda_ci(( @@EST@@ ), 'stage-c')\n", "300"),
    "tabs": ("register_cuda_ci(\t@@EST@@\t,\t'stage-c'\t)\t# tabbed\n\nif True:\n\tx = 300\n", "300"),
    "noqa comment after the call": ("register_cuda_ci(@@EST@@, 'stage-c', labels=['megatron'])  # noqa: F821\n",
                                    "300"),
    "backslash continuation": ("register_cuda_ci \\\n    (@@EST@@, 'stage-c')\n", "300"),
    "semicolon statements": ("x = 300; register_cuda_ci(@@EST@@, 'stage-c'); y = 300\n", "300"),
    "parenthesized statement": ("(register_cuda_ci(@@EST@@, 'stage-c'))\n", "300"),
    "no final newline": ("register_cuda_ci(@@EST@@, 'stage-c')", "300"),
    "the same literal elsewhere": (
        '"""Takes 300 seconds: register_cuda_ci(300, "x")."""\n'
        'TIMEOUT = 300  # 300\n'
        'register_rocm_ci(300, "amd", labels=["megatron"])\n'
        'register_cuda_ci(@@EST@@, "stage-c", labels=["x300"])\n'
        'def test_it():\n'
        '    assert TIMEOUT == 300\n'
        '    register_cuda_ci(300, "inside a function, not a registration")\n', "300"),
    "non-ASCII text before the call": (
        '"""Tempo: 300 s — ça dure. 日本語"""\nregister_cuda_ci(@@EST@@, "é")\n', "300"),
    "encoding declaration": ("# -*- coding: utf-8 -*-\nregister_cuda_ci(@@EST@@, 'stage-c')\n", "300"),
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_round_trip_changes_only_the_literal(name):
    template, literal = ROUND_TRIPS[name]
    check_rewrite(template, literal)


@pytest.mark.parametrize("literal", ["300", "1_800", "0x708", "1.8e3"])
def test_crlf_line_endings_are_kept(literal):
    template = ("import os\r\n\r\nregister_cuda_ci(  # c\r\n    est_time=@@EST@@,\r\n    suite='stage-c',\r\n)\r\n"
                "X = 300\r\n")
    result = check_rewrite(template, literal)
    assert result.source.count("\r\n") == template.count("\r\n")
    assert "\n" not in result.source.replace("\r\n", "")


def test_mixed_line_endings_are_kept():
    check_rewrite("x = 1\r\nregister_cuda_ci(\n    @@EST@@,\r\n    'stage-c')\n", "300")


def test_a_bom_is_kept():
    result = check_rewrite("\ufeffimport os\nregister_cuda_ci(@@EST@@, 'stage-c')\n", "300")
    assert result.source.startswith("\ufeffimport os")
    result = check_rewrite("\ufeffregister_cuda_ci(@@EST@@, 'stage-c')\r\n", "300")
    assert result.line == 1


def test_only_the_matching_backend_changes():
    template = ('register_cuda_ci({cuda}, "stage-c", labels=["megatron"])\n'
                'register_rocm_ci({rocm}, "amd", labels=["megatron"])\n'
                'register_cpu_ci({cpu}, "cpu")\n')
    both = dict(cuda="300", rocm="300", cpu="300")
    for backend in ("cuda", "rocm", "cpu"):
        check_rewrite(template.format(**{**both, backend: SLOT}), "300", backend=backend)
    # and with distinct literals: only the matching one moves
    source = template.format(cuda="300", rocm="400", cpu="500")
    result = rewrite_est_time(source, "rocm", 2000)
    assert result.source == template.format(cuda="300", rocm="2000", cpu="500")
    assert (result.old, result.line) == ("400", 2)


def test_the_marker_the_registration_was_written_with_is_rewritten():
    # A dialect may map several names to one backend: only the named marker's call moves.
    source = ('register_amd_ci(est_time=600, suite="stage-b-test-1-gpu-small-amd", nightly=True)\n'
              'register_cuda_ci(est_time=300, stage="base-b", runner_config="1-gpu-large")\n')
    result = rewrite_est_time(source, "rocm", 900, "register_amd_ci")
    assert result == EditResult("changed", source.replace("est_time=600", "est_time=900"), old="600", line=1)
    result = rewrite_est_time(source, "cuda", 240, "register_cuda_ci")
    assert result.source == source.replace("est_time=300", "est_time=240")
    # Without the marker name, the backend's built-in marker is the one looked for.
    assert rewrite_est_time(source, "rocm", 900).reason == "no register_rocm_ci(...) registration in this file"


@pytest.mark.parametrize("marker", ["register_ci_gate", "amd", "register_amd"])
def test_a_marker_that_is_no_registration_marker_name_is_a_programming_error(marker):
    with pytest.raises(ValueError, match="is not a registration marker name"):
        rewrite_est_time("register_amd_ci(1, 's')\n", "rocm", 2, marker)


def test_a_float_becomes_a_plain_integer():
    check_rewrite("register_cuda_ci(@@EST@@, 'stage-c')\n", "1800.5", new_est=1801)
    check_rewrite("register_cuda_ci(@@EST@@, 'stage-c')\n", ".5", new_est=12)


def test_large_values_are_written_in_decimal():
    check_rewrite("register_cuda_ci(@@EST@@, 'stage-c')\n", "0xFF", new_est=123456789)


@pytest.mark.parametrize("literal", ["1800", "1_800", "0x708", "1.8e3", "1800.0", "0o3410", "(1800)"])
def test_the_same_value_is_unchanged(literal):
    source = f"register_cuda_ci(\n    {literal},  # c\n    'stage-c')\n"
    result = rewrite_est_time(source, "cuda", 1800)
    assert result == EditResult("unchanged", source, old=literal.strip("()"), line=2, reason=None)
    assert result.source is source


def test_the_result_is_frozen():
    result = rewrite_est_time("register_cuda_ci(1, 's')\n", "cuda", 2)
    with pytest.raises(AttributeError):
        result.status = "skipped"  # type: ignore[misc]


@pytest.mark.parametrize("backend, new_est", [("gpu", 1), ("", 1), ("cuda", -1), ("cuda", 1.5),
                                              ("cuda", True), ("cuda", "300"), ("cuda", None)])
def test_bad_arguments_are_programming_errors(backend, new_est):
    with pytest.raises(ValueError):
        rewrite_est_time("register_cuda_ci(1, 's')\n", backend, new_est)


# -- skips: each with its own reason, source untouched -------------------------------------------

SKIPS = {
    "no registration": (
        "import os\nregister_rocm_ci(300, 'amd')\n",
        "no register_cuda_ci(...) registration in this file", None, None),
    "empty file": ("", "no register_cuda_ci(...) registration in this file", None, None),
    "marker only named in text": (
        "# register_cuda_ci(300, 'x')\nDOC = 'register_cuda_ci(300)'\n",
        "no register_cuda_ci(...) registration in this file", None, None),
    "several registrations": (
        "register_cuda_ci(300, 'a')\nx = 1\nregister_cuda_ci(400, 'b')\nregister_cuda_ci(500, 'c')\n",
        "3 register_cuda_ci(...) registrations (lines 1, 3, 4); refusing to guess which one to edit", None, 3),
    "two on one line": (
        "register_cuda_ci(300, 'a'); register_cuda_ci(300, 'b')\n",
        "2 register_cuda_ci(...) registrations (lines 1, 1); refusing to guess which one to edit", None, 1),
    "a name": (
        "EST = 300\nregister_cuda_ci(EST, 'stage-c')\n",
        "est_time is not a plain non-negative numeric literal: `EST`", "EST", 2),
    "an expression": (
        "register_cuda_ci(est_time=60 * 30, suite='stage-c')\n",
        "est_time is not a plain non-negative numeric literal: `60 * 30`", "60 * 30", 1),
    "an expression over lines": (
        "register_cuda_ci(\n    (60\n     * 30),\n    'stage-c')\n",
        "est_time is not a plain non-negative numeric literal: `60 * 30`", "60\n     * 30", 2),
    "a call": (
        "register_cuda_ci(int('300'), 'stage-c')\n",
        "est_time is not a plain non-negative numeric literal: `int('300')`", "int('300')", 1),
    "a negative number": (
        "register_cuda_ci(-5, 'stage-c')\n",
        "est_time is not a plain non-negative numeric literal: `-5`", "-5", 1),
    "minus zero": (
        "register_cuda_ci(-0, 'stage-c')\n",
        "est_time is not a plain non-negative numeric literal: `-0`", "-0", 1),
    "unary plus": (
        "register_cuda_ci(+300, 'stage-c')\n",
        "est_time is not a plain non-negative numeric literal: `+300`", "+300", 1),
    "a string": (
        "register_cuda_ci('300', 'stage-c')\n",
        "est_time is not a plain non-negative numeric literal: `'300'`", "'300'", 1),
    "a bool": (
        "register_cuda_ci(est_time=True, suite='stage-c')\n",
        "est_time is not a plain non-negative numeric literal: `True`", "True", 1),
    "a complex number": (
        "register_cuda_ci(300j, 'stage-c')\n",
        "est_time is not a plain non-negative numeric literal: `300j`", "300j", 1),
    "None": (
        "register_cuda_ci(None, 'stage-c')\n",
        "est_time is not a plain non-negative numeric literal: `None`", "None", 1),
    "no est_time": (
        "register_cuda_ci(suite='stage-c')\n",
        "the register_cuda_ci(...) call has no est_time argument", None, 1),
    "no arguments": (
        "x = 1\nregister_cuda_ci()\n",
        "the register_cuda_ci(...) call has no est_time argument", None, 2),
    "est_time twice": (
        "register_cuda_ci(300, est_time=400, suite='stage-c')\n",
        "est_time is given twice in the register_cuda_ci(...) call (positionally and by keyword)", None, 1),
    "*args": (
        "ARGS = (300, 'stage-c')\nregister_cuda_ci(*ARGS)\n",
        "the register_cuda_ci(...) call passes *args or **kwargs, so est_time is not written literally", None, 2),
    "**kwargs with a literal est_time": (
        "register_cuda_ci(300, **EXTRA)\n",
        "the register_cuda_ci(...) call passes *args or **kwargs, so est_time is not written literally", None, 1),
    "only inside a function": (
        "import os\n\ndef test_x():\n    register_cuda_ci(300, 'stage-c')\n",
        "register_cuda_ci(...) on line 4 is not a module-level statement calling the bare name "
        "register_cuda_ci, so it is no registration", None, 4),
    "only inside an if": (
        "import sys\nif sys.platform == 'linux':\n    register_cuda_ci(300, 'stage-c')\n"
        "else:\n    register_cuda_ci(400, 'stage-c')\n",
        "register_cuda_ci(...) on line 3 is not a module-level statement calling the bare name "
        "register_cuda_ci, so it is no registration", None, 3),
    "only inside a class": (
        "class T:\n    register_cuda_ci(300, 'stage-c')\n",
        "register_cuda_ci(...) on line 2 is not a module-level statement calling the bare name "
        "register_cuda_ci, so it is no registration", None, 2),
    "an assignment": (
        "x = register_cuda_ci(300, 'stage-c')\n",
        "register_cuda_ci(...) on line 1 is not a module-level statement calling the bare name "
        "register_cuda_ci, so it is no registration", None, 1),
    "an attribute call": (
        "import ci_policy\nci_policy.register_cuda_ci(300, 'stage-c')\n",
        "register_cuda_ci(...) on line 2 is not a module-level statement calling the bare name "
        "register_cuda_ci, so it is no registration", None, 2),
    "a syntax error": (
        "register_cuda_ci(300, 'stage-c'\n\nx = 1\n",
        "the file does not parse: '(' was never closed (line 1)", None, 1),
    "an indentation error": (
        "x = 1\n  register_cuda_ci(300, 'stage-c')\n",
        "the file does not parse: unexpected indent (line 2)", None, 2),
    "a form feed libcst drops": (
        "x = 1\n\x0cregister_cuda_ci(300, 'stage-c')\n",
        "libcst does not reproduce this file byte for byte, so an edit could change bytes other than "
        "the est_time literal", "300", 2),
    "lone carriage returns": (
        "x = 1\rregister_cuda_ci(300, 'stage-c')\r",
        "libcst does not reproduce this file byte for byte, so an edit could change bytes other than "
        "the est_time literal", "300", 2),
}


@pytest.mark.parametrize("name", sorted(SKIPS))
def test_skip_reasons(name):
    source, reason, old, line = SKIPS[name]
    result = rewrite_est_time(source, "cuda", 2000)
    assert result == EditResult("skipped", source, old=old, line=line, reason=reason)


def test_a_registration_of_another_backend_inside_a_function_is_not_this_backends():
    source = "def f():\n    register_rocm_ci(300, 'amd')\n"
    assert rewrite_est_time(source, "cuda", 1).reason == "no register_cuda_ci(...) registration in this file"


def test_a_nested_call_next_to_the_registration_does_not_block_it():
    # The nested call is no registration (lint reports it); the module-level one is the one.
    check_rewrite("register_cuda_ci(@@EST@@, 'stage-c')\ndef f():\n    register_cuda_ci(300, 'x')\n", "300")


def test_a_nul_byte_is_a_parse_skip():
    source = "register_cuda_ci(300, 'stage-c')\n\x00\n"
    try:
        ast.parse(source)
    except SyntaxError as exc:
        expected = (f"the file does not parse: {exc.msg} (line {exc.lineno})" if exc.lineno is not None
                    else f"the file does not parse: {exc.msg}")
    except ValueError as exc:
        expected = f"the file does not parse: {exc}"
    result = rewrite_est_time(source, "cuda", 1)
    assert (result.status, result.reason, result.source) == ("skipped", expected, source)


def test_a_too_deeply_nested_file_is_a_parse_skip():
    source = "register_cuda_ci(300, 's')\nx = " + "-" * 200_000 + "1\n"
    result = rewrite_est_time(source, "cuda", 1)
    assert result.status == "skipped"
    assert result.reason in ("the file does not parse: it is too deeply nested for the Python parser",
                             "the file does not parse: too many nested parentheses (line 2)")


def test_a_libcst_parse_failure_is_a_skip(monkeypatch):
    import libcst

    def refuse(code, *args, **kwargs):
        raise libcst.ParserSyntaxError("unsupported syntax", lines=code.splitlines(True), raw_line=1,
                                       raw_column=3)

    monkeypatch.setattr(libcst, "parse_module", refuse)
    source = "register_cuda_ci(300, 'stage-c')\n"
    assert rewrite_est_time(source, "cuda", 1) == EditResult(
        "skipped", source, old="300", line=1, reason="libcst cannot parse the file: unsupported syntax (line 1)")


def test_another_libcst_error_is_a_skip(monkeypatch):
    import libcst

    def crash(code, *args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(libcst, "parse_module", crash)
    source = "register_cuda_ci(300, 'stage-c')\n"
    assert rewrite_est_time(source, "cuda", 1) == EditResult(
        "skipped", source, old="300", line=1,
        reason="libcst cannot parse the file: maximum recursion depth exceeded")


def test_libcst_disagreeing_with_ast_is_a_skip(monkeypatch):
    # A guard that should never fire: libcst must find the very call ast found.
    monkeypatch.setattr(tuning_apply, "_cst_registration", lambda module, marker: [])
    source = "register_cuda_ci(300, 'stage-c')\n"
    assert rewrite_est_time(source, "cuda", 1) == EditResult(
        "skipped", source, old="300", line=1,
        reason="the rewrite would change more than the est_time literal, so it is not applied")


def test_warnings_in_the_file_are_not_printed(recwarn):
    source = "import re\nP = re.compile('\\d+')\nregister_cuda_ci(300, 'stage-c')\n"
    result = rewrite_est_time(source, "cuda", 5)
    assert result.status == "changed"
    assert [w for w in recwarn if issubclass(w.category, (SyntaxWarning, DeprecationWarning))] == []


# -- files -------------------------------------------------------------------------------------

def write(path: Path, data: bytes, mode: int = 0o644) -> Path:
    path.write_bytes(data)
    os.chmod(path, mode)
    return path


def test_apply_to_file_writes_only_the_literal_and_keeps_the_mode(tmp_path):
    data = (b"\xef\xbb\xbf# -*- coding: utf-8 -*-\r\n\"\"\"\xc3\xa7a 300\"\"\"\r\n"
            b"register_cuda_ci(\r\n\t1_800,  # old\r\n\t'stage-c',\r\n)  # noqa\r\n")
    path = write(tmp_path / "test_x.py", data, 0o754)
    result = apply_to_file(path, "cuda", 2000)
    assert (result.status, result.old, result.line) == ("changed", "1_800", 4)
    assert path.read_bytes() == data.replace(b"1_800", b"2000")
    assert result.source == data.decode("utf-8").replace("1_800", "2000")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o754
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test_x.py"]  # no temporary file left


def test_apply_to_file_replaces_the_file_atomically(tmp_path):
    path = write(tmp_path / "test_x.py", b"register_cuda_ci(300, 'stage-c')\n")
    before = os.stat(path).st_ino
    keep = tmp_path / "hardlink.py"
    os.link(path, keep)
    assert apply_to_file(path, "cuda", 42).status == "changed"
    assert os.stat(path).st_ino != before  # a new file was renamed over the old one
    assert keep.read_bytes() == b"register_cuda_ci(300, 'stage-c')\n"
    assert path.read_bytes() == b"register_cuda_ci(42, 'stage-c')\n"


@pytest.mark.parametrize("mode", [0o600, 0o644, 0o755, 0o444])
def test_apply_to_file_preserves_modes(tmp_path, mode):
    path = write(tmp_path / "test_x.py", b"register_cuda_ci(300, 'stage-c')\n", mode)
    assert apply_to_file(path, "cuda", 42).status == "changed"
    assert stat.S_IMODE(os.stat(path).st_mode) == mode


def test_apply_to_file_does_not_write_when_unchanged_or_skipped(tmp_path):
    path = write(tmp_path / "test_x.py", b"register_cuda_ci(1.8e3, 'stage-c')\n")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    inode = os.stat(path).st_ino
    assert apply_to_file(path, "cuda", 1800).status == "unchanged"
    assert apply_to_file(path, "rocm", 1800).status == "skipped"
    st_after = os.stat(path)
    assert (st_after.st_ino, st_after.st_mtime_ns) == (inode, 1_000_000_000)


def test_apply_to_file_accepts_a_str_path(tmp_path):
    path = write(tmp_path / "test_x.py", b"register_rocm_ci(est_time=300, suite='amd')\n")
    assert apply_to_file(str(path), "rocm", 7).status == "changed"
    assert path.read_bytes() == b"register_rocm_ci(est_time=7, suite='amd')\n"


def test_apply_to_file_refuses_a_symlink(tmp_path):
    target = write(tmp_path / "real.py", b"register_cuda_ci(300, 'stage-c')\n")
    link = tmp_path / "test_link.py"
    link.symlink_to(target)
    result = apply_to_file(link, "cuda", 42)
    assert result == EditResult("skipped", None,
                                reason="the path is a symlink; ci-policy does not edit through symlinks")
    assert target.read_bytes() == b"register_cuda_ci(300, 'stage-c')\n"
    assert link.is_symlink()


def test_apply_to_file_refuses_a_dangling_symlink(tmp_path):
    link = tmp_path / "test_link.py"
    link.symlink_to(tmp_path / "missing.py")
    assert apply_to_file(link, "cuda", 42).reason == "the path is a symlink; ci-policy does not edit through symlinks"
    assert not (tmp_path / "missing.py").exists()


def test_apply_to_file_opens_without_following_symlinks(tmp_path, monkeypatch):
    # The path turns into a symlink between the lstat and the open: O_NOFOLLOW refuses it.
    target = write(tmp_path / "real.py", b"register_cuda_ci(300, 'stage-c')\n")
    path = write(tmp_path / "test_x.py", b"register_cuda_ci(300, 'stage-c')\n")
    real_open = os.open

    def swap_then_open(p, flags, *args, **kwargs):
        if Path(p) == path:
            path.unlink()
            path.symlink_to(target)
        return real_open(p, flags, *args, **kwargs)

    monkeypatch.setattr(tuning_apply.os, "open", swap_then_open)
    result = apply_to_file(path, "cuda", 42)
    assert result.reason == "the path is a symlink; ci-policy does not edit through symlinks"
    assert target.read_bytes() == b"register_cuda_ci(300, 'stage-c')\n"


def test_apply_to_file_does_not_overwrite_a_file_changed_meanwhile(tmp_path, monkeypatch):
    path = write(tmp_path / "test_x.py", b"register_cuda_ci(300, 'stage-c')\n")
    real_rewrite = tuning_apply.rewrite_est_time

    def rewrite_while_someone_edits(source, backend, new_est, marker=None):
        result = real_rewrite(source, backend, new_est, marker)
        path.write_bytes(b"register_cuda_ci(300, 'stage-c')  # edited meanwhile\n")
        return result

    monkeypatch.setattr(tuning_apply, "rewrite_est_time", rewrite_while_someone_edits)
    result = apply_to_file(path, "cuda", 42)
    assert (result.status, result.reason) == (
        "skipped", "the file changed while it was being edited; nothing was written")
    assert path.read_bytes() == b"register_cuda_ci(300, 'stage-c')  # edited meanwhile\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test_x.py"]


def test_apply_to_file_missing_and_not_regular(tmp_path):
    assert apply_to_file(tmp_path / "nope.py", "cuda", 1) == EditResult(
        "skipped", None, reason="the file does not exist")
    (tmp_path / "dir.py").mkdir()
    assert apply_to_file(tmp_path / "dir.py", "cuda", 1).reason == "the path is not a regular file"
    os.mkfifo(tmp_path / "fifo.py")
    assert apply_to_file(tmp_path / "fifo.py", "cuda", 1).reason == "the path is not a regular file"


def test_apply_to_file_unreadable(tmp_path, monkeypatch):
    # Simulated, so that the test means the same when run as root (who may read any file).
    path = write(tmp_path / "test_x.py", b"register_cuda_ci(300, 'stage-c')\n", 0o000)

    def denied(p, flags, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(p))

    monkeypatch.setattr(tuning_apply.os, "open", denied)
    assert apply_to_file(path, "cuda", 1) == EditResult(
        "skipped", None, reason="the file cannot be read: Permission denied")


def test_apply_to_file_keeps_a_latin_1_file_latin_1(tmp_path):
    data = b"# -*- coding: latin-1 -*-\n\"\"\"caf\xe9: 300\"\"\"\nregister_cuda_ci(300, 'caf\xe9')\n"
    path = write(tmp_path / "test_x.py", data)
    result = apply_to_file(path, "cuda", 9)
    assert result.status == "changed"
    assert path.read_bytes() == data.replace(b"(300,", b"(9,")


@pytest.mark.parametrize("data, reason", [
    (b"# -*- coding: bogus -*-\nregister_cuda_ci(300, 's')\n",
     "the file's encoding cannot be determined: unknown encoding: bogus"),
    (b"x = '\xff'\nregister_cuda_ci(300, 's')\n",
     "the file's encoding cannot be determined: invalid or missing encoding declaration"),
    (b"\xef\xbb\xbf# coding: latin-1\nregister_cuda_ci(300, 's')\n",
     "the file's encoding cannot be determined: encoding problem: utf-8"),
    (b"x = 1\ny = 2\nz = '\xff'\nregister_cuda_ci(300, 's')\n", "the file is not valid utf-8"),
    (b"# coding: utf-7\nx = '+AGE-'\nregister_cuda_ci(300, 's')\n",
     "decoding and re-encoding the file as utf-7 does not give back its bytes"),
])
def test_apply_to_file_encoding_skips(tmp_path, data, reason):
    path = write(tmp_path / "test_x.py", data)
    assert apply_to_file(path, "cuda", 1) == EditResult("skipped", None, reason=reason)
    assert path.read_bytes() == data


def test_apply_to_file_reports_source_skips(tmp_path):
    data = b"register_cuda_ci(60 * 30, 's')\n"
    path = write(tmp_path / "test_x.py", data)
    assert apply_to_file(path, "cuda", 1) == EditResult(
        "skipped", data.decode(), old="60 * 30", line=1,
        reason="est_time is not a plain non-negative numeric literal: `60 * 30`")


# -- property: any formatting, exactly the literal changes ---------------------------------------

def _underscored(digits: str, draw) -> str:
    out = digits[0]
    for ch in digits[1:]:
        if draw(st.booleans()) and draw(st.booleans()):
            out += "_"
        out += ch
    return out


@st.composite
def number_literals(draw) -> str:
    n = draw(st.integers(min_value=0, max_value=10**6))
    kind = draw(st.sampled_from(["dec", "dec_", "hex", "oct", "bin", "float", "exp", "frac", "zeros"]))
    if kind == "dec":
        return str(n)
    if kind == "dec_":
        return _underscored(str(n), draw)
    if kind == "hex":
        return draw(st.sampled_from(["0x", "0X"])) + _underscored(format(n, draw(st.sampled_from(["x", "X"]))), draw)
    if kind == "oct":
        return draw(st.sampled_from(["0o", "0O"])) + format(n, "o")
    if kind == "bin":
        return draw(st.sampled_from(["0b", "0B"])) + format(n, "b")
    if kind == "float":
        return draw(st.sampled_from([f"{n}.0", f"{n}.", f"{n}.25", f"{n}.000_1"]))
    if kind == "exp":
        return draw(st.sampled_from([f"{n}e0", f"{n}E+0", f"{n}0e-1", f"{n}.5e2", f".{n}e3"]))
    if kind == "frac":
        return f".{n}"
    return "0" * draw(st.integers(min_value=1, max_value=4))


INLINE = st.sampled_from(["", " ", "  ", "\t", " \t "])
# Between tokens inside the call's parentheses: newlines, comments (ending the line), a backslash.
INSIDE = st.lists(st.sampled_from([" ", "\t", "\n", "\n    ", "  # est_time=300 (old)\n", "# 1_800\n    ",
                                   "\\\n", "\n\t\t"]), max_size=3).map("".join)
AROUND = st.lists(st.sampled_from([
    "import os\n", "# register_cuda_ci(300, 'x')\n", "X = 300\n", "Y = 1_800  # 0x708\n",
    "from ci_policy import register_cuda_ci, register_rocm_ci\n", "register_rocm_ci(300, 'amd')\n",
    "register_cpu_ci(est_time=300, suite='cpu')\n", '"""doc: est_time=300"""\n',
    "def test_a():\n    assert 300 == X\n", "\n", "if __name__ == '__main__':\n    main()\n",
]), max_size=4)


@st.composite
def registrations(draw) -> str:
    """A template with one cuda registration whose est_time literal is SLOT."""
    sp = lambda: draw(INSIDE)  # noqa: E731
    quote = draw(st.sampled_from(["'", '"']))
    suite = f"{quote}stage-c-4-gpu-h200{quote}"
    est = draw(st.sampled_from([SLOT, f"({sp()}{SLOT}{sp()})"]))
    form = draw(st.sampled_from(["positional", "suite keyword", "keyword", "keyword last"]))
    eq = lambda: f"{draw(INLINE)}={draw(INLINE)}"  # noqa: E731
    if form == "positional":
        args = [est, suite]
    elif form == "suite keyword":
        args = [est, f"suite{eq()}{suite}"]
    elif form == "keyword":
        args = [f"est_time{eq()}{est}", f"suite{eq()}{suite}"]
    else:
        args = [f"suite{eq()}{suite}", f"est_time{eq()}{est}"]
    if draw(st.booleans()):
        args.append(f"labels{eq()}[{sp()}{quote}megatron{quote}{sp()},{sp()}]")
    body = f"{sp()},{sp()}".join(args)
    if draw(st.booleans()):
        body += f"{sp()},"
    comment = draw(st.sampled_from(["", "  # noqa", "  # est_time 300", "\t# 1_800"]))
    call = f"register_cuda_ci{draw(INLINE)}({sp()}{body}{sp()}){comment}\n"
    before, after = draw(AROUND), draw(AROUND)
    template = "".join(before) + call + "".join(after)
    if draw(st.booleans()):
        template = template.replace("\n", "\r\n")
    if draw(st.booleans()):
        template = "\ufeff" + template
    return template


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(template=registrations(), literal=number_literals(), new_est=st.integers(min_value=0, max_value=10**9))
def test_property_only_the_literal_changes(template, literal, new_est):
    source = template.replace(SLOT, literal)
    ast.parse(source.removeprefix("\ufeff"))  # the generator makes valid Python
    result = rewrite_est_time(source, "cuda", new_est)
    if ast.literal_eval(literal) == new_est:
        assert result == EditResult("unchanged", source, old=literal, line=result.line, reason=None)
        return
    assert result.status == "changed", result
    assert result.old == literal
    assert result.source == template.replace(SLOT, str(new_est))
    assert_only_span_changed(source, result.source, literal, str(new_est))
    assert est_time_of(result.source) == new_est
    assert type(est_time_of(result.source)) is int
    # other backends' registrations and the lines around are untouched
    assert result.source.splitlines(True)[: result.line - 1] == source.splitlines(True)[: result.line - 1]


# -- libcst is imported lazily -------------------------------------------------------------------

def test_importing_the_module_does_not_import_libcst():
    code = textwrap.dedent("""
        import sys
        import ci_policy.adapters.tuning.apply as m
        assert "libcst" not in sys.modules, sorted(k for k in sys.modules if k.startswith("libcst"))
        m.rewrite_est_time("register_cuda_ci(60 * 30, 's')\\n", "cuda", 1)  # skipped before libcst
        assert "libcst" not in sys.modules
        m.rewrite_est_time("register_cuda_ci(300, 's')\\n", "cuda", 1)
        assert "libcst" in sys.modules  # the check above is not vacuous
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n"


def test_no_module_level_libcst_import():
    tree = ast.parse((ROOT / "ci_policy" / "adapters" / "tuning" / "apply.py").read_text(encoding="utf-8"))
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            assert not any(a.name.split(".")[0] == "libcst" for a in stmt.names)
        elif isinstance(stmt, ast.ImportFrom):
            assert (stmt.module or "").split(".")[0] != "libcst"

