"""The label registry: `KNOWN_LABELS` read from `labels.py` with ast, never imported."""

from __future__ import annotations

import dataclasses
import os
import textwrap
import warnings

import pytest
from helpers import caught
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_policy.errors import InputError, InputErrors
from ci_policy.read.labels import MAX_LABELS_BYTES, Label, LabelRegistry, load_labels, parse_labels

L = "labels.py"
NAME_RULE = "(expected [A-Za-z0-9][A-Za-z0-9_.-]*)"
NAME_HINT = "use letters, digits, '_', '.', '-'; PR labels are run-ci-<name>"
TWICE_HINT = "merge the definitions into one dict literal"
PLAIN = "KNOWN_LABELS must be a plain module-level assignment `KNOWN_LABELS = {...}`"
PLAIN_HINT = "assign the dict literal at module level, not inside a block or by unpacking"
DICT = "KNOWN_LABELS must be a dict literal of label name -> description string"
DICT_HINT = 'write KNOWN_LABELS = {"name": "description", ...}'
SYMLINK_HINT = "replace the symlink with the real file or directory"


def errors(text: str) -> list[tuple]:
    return caught(parse_labels, textwrap.dedent(text), L)


def at(text: str, needle: str, nth: int = 1) -> tuple[int, int]:
    """1-based (line, character column) of the nth occurrence of `needle`."""
    text = textwrap.dedent(text)
    pos = -1
    for _ in range(nth):
        pos = text.index(needle, pos + 1)
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


def err(text: str, needle: str, message: str, hint: str | None, nth: int = 1) -> tuple:
    return (L, *at(text, needle, nth), message, hint)


# -- accepted -------------------------------------------------------------------------------


def test_plain_assignment():
    registry = parse_labels('KNOWN_LABELS = {"megatron": "Megatron tests", "fsdp": "FSDP tests"}\n')
    assert registry == LabelRegistry(path=L, labels=(
        Label(name="megatron", description="Megatron tests", line=1),
        Label(name="fsdp", description="FSDP tests", line=1),
    ))


def test_annotated_assignment():
    registry = parse_labels('KNOWN_LABELS: dict[str, str] = {"a": "A"}\n', "ci/labels.py")
    assert registry == LabelRegistry(path="ci/labels.py", labels=(Label(name="a", description="A", line=1),))


def test_parenthesised_name_is_a_plain_assignment():
    assert parse_labels('(KNOWN_LABELS) = {"a": "A"}\n').names == ("a",)


def test_empty_dict():
    assert parse_labels("KNOWN_LABELS = {}\n") == LabelRegistry(path=L, labels=())


def test_other_statements_and_a_multiline_dict():
    text = textwrap.dedent('''\
        """CI labels."""
        from __future__ import annotations

        import os

        OTHER = {"x": 1}


        def helper():
            return KNOWN_LABELS["long"]


        KNOWN_LABELS = {
            # comment
            "long": "slow tests",
            "v1.2_x-y": "implicitly " "concatenated",
            "9lives": """multi
        line""",
            ("paren"): r"raw\\d",
        }
        if __name__ == "__main__":
            print(KNOWN_LABELS)
        ''')
    assert parse_labels(text) == LabelRegistry(path=L, labels=(
        Label(name="long", description="slow tests", line=15),
        Label(name="v1.2_x-y", description="implicitly concatenated", line=16),
        Label(name="9lives", description="multi\nline", line=17),
        Label(name="paren", description="raw\\d", line=19),
    ))


def test_registry_lookup():
    registry = parse_labels('KNOWN_LABELS = {"a": "A", "b": "B"}\n')
    assert registry.names == ("a", "b")
    assert "a" in registry and "c" not in registry and "run-ci-a" not in registry
    assert registry.get("b") == Label(name="b", description="B", line=1)
    assert registry.get("c") is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        registry.labels = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        registry.labels[0].name = "z"  # type: ignore[misc]


def test_invalid_escape_sequences_are_not_syntax_errors_even_when_warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert parse_labels('KNOWN_LABELS = {"a": "x\\d"}\n').get("a").description == "x\\d"


# -- missing or repeated KNOWN_LABELS -------------------------------------------------------


@pytest.mark.parametrize("text", ["", "X = 1\n", "known_labels = {}\n", "def f():\n    return KNOWN_LABELS\n",
                                  "print(KNOWN_LABELS)\n", "KNOWN_LABELS.update(a='A')\n"])
def test_missing_known_labels(text):
    assert errors(text) == [(L, 1, 1, f"labels file {L} does not define KNOWN_LABELS",
                             'add a module-level dict literal: KNOWN_LABELS = {"name": "description"}')]


FIRST = 'KNOWN_LABELS = {"a": "A"}\n'


@pytest.mark.parametrize("second, needle", [
    ('KNOWN_LABELS = {"b": "B"}\n', "KNOWN_LABELS"),
    ('KNOWN_LABELS: dict = {"b": "B"}\n', "KNOWN_LABELS"),
    ("if True:\n    KNOWN_LABELS = {}\n", "KNOWN_LABELS"),
    ("if x:\n    pass\nelse:\n    KNOWN_LABELS = {}\n", "KNOWN_LABELS"),
    ("def f():\n    KNOWN_LABELS = {}\n", "KNOWN_LABELS"),
    ("class C:\n    KNOWN_LABELS = {}\n", "KNOWN_LABELS"),
    ("for KNOWN_LABELS in []:\n    pass\n", "for"),
    ("while True:\n    KNOWN_LABELS = {}\n", "KNOWN_LABELS"),
    ('KNOWN_LABELS |= {"b": "B"}\n', "KNOWN_LABELS"),
    ('KNOWN_LABELS += {"b": "B"}\n', "KNOWN_LABELS"),
    ("KNOWN_LABELS, X = {}, 1\n", "KNOWN_LABELS"),
    ("[X, *KNOWN_LABELS] = [1, 2]\n", "["),
    ("X = KNOWN_LABELS = {}\n", "X"),
    ("(KNOWN_LABELS := {})\n", "KNOWN_LABELS"),
    ("if (KNOWN_LABELS := {}):\n    pass\n", "KNOWN_LABELS"),
    ("import other as KNOWN_LABELS\n", "import"),
    ("from other import KNOWN_LABELS\n", "from"),
    ("from other import x as KNOWN_LABELS\n", "from"),
    ("with open('f') as KNOWN_LABELS:\n    pass\n", "with"),
    ("def KNOWN_LABELS():\n    pass\n", "def"),
    ("async def KNOWN_LABELS():\n    pass\n", "async"),
    ("class KNOWN_LABELS:\n    pass\n", "class"),
    ("try:\n    pass\nexcept Exception as KNOWN_LABELS:\n    pass\n", "except"),
    ("X = [1 for KNOWN_LABELS in range(3)]\n", "KNOWN_LABELS"),
    ("match x:\n    case KNOWN_LABELS:\n        pass\n", "KNOWN_LABELS"),
    ("match x:\n    case [*KNOWN_LABELS]:\n        pass\n", "*KNOWN_LABELS"),
    ("match x:\n    case {**KNOWN_LABELS}:\n        pass\n", "{"),
    ('KNOWN_LABELS["b"] = "B"\n', "KNOWN_LABELS"),
])
def test_a_second_assignment_anywhere_is_refused(second, needle):
    text = FIRST + second
    line, col = at(second, needle)
    assert errors(text) == [(L, line + 1, col, "KNOWN_LABELS is assigned 2 times (lines 1, "
                             f"{line + 1}); it must be assigned exactly once", TWICE_HINT)]


def test_assignments_are_listed_in_source_order():
    # The nested assignment comes first in the file, the module-level one later.
    text = 'if True:\n    KNOWN_LABELS = {}\nKNOWN_LABELS = {"a": "A"}\nKNOWN_LABELS = {}\n'
    assert errors(text) == [(L, 3, 1, "KNOWN_LABELS is assigned 3 times (lines 2, 3, 4); it must be "
                             "assigned exactly once", TWICE_HINT)]


def test_two_assignments_on_one_line_are_located_in_characters():
    text = 'X = "é"; KNOWN_LABELS = {"a": "A"}; KNOWN_LABELS = {}\n'
    assert errors(text) == [err(text, "KNOWN_LABELS", "KNOWN_LABELS is assigned 2 times (lines 1, 1); it must "
                                "be assigned exactly once", TWICE_HINT, nth=2)]


@pytest.mark.parametrize("text, needle", [
    ('if True:\n    KNOWN_LABELS = {"a": "A"}\n', "KNOWN_LABELS"),
    ('def f():\n    KNOWN_LABELS = {"a": "A"}\n', "KNOWN_LABELS"),
    ('for _ in []:\n    KNOWN_LABELS = {"a": "A"}\n', "KNOWN_LABELS"),
    ('KNOWN_LABELS, X = {"a": "A"}, 1\n', "KNOWN_LABELS"),
    ('X = KNOWN_LABELS = {"a": "A"}\n', "X"),
    ("KNOWN_LABELS: dict\n", "KNOWN_LABELS"),
    ('KNOWN_LABELS += {"a": "A"}\n', "KNOWN_LABELS"),
    ('(KNOWN_LABELS := {"a": "A"})\n', "KNOWN_LABELS"),
    ("from other import KNOWN_LABELS\n", "from"),
    ("import KNOWN_LABELS\n", "import"),
])
def test_the_single_assignment_must_be_plain_and_module_level(text, needle):
    assert errors(text) == [err(text, needle, PLAIN, PLAIN_HINT)]


# -- the value ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ['dict(a="A")', "OTHER", '{"a": "A"} if x else {}', '[("a", "A")]',
                                   '{"a"}', '{k: "A" for k in "ab"}', "None", '{"a": "A"} | {}'])
def test_value_must_be_a_dict_literal(value):
    text = f"KNOWN_LABELS = {value}\n"
    assert errors(text) == [(L, 1, 16, DICT, DICT_HINT)]


def test_annotated_value_must_be_a_dict_literal():
    text = "KNOWN_LABELS: dict = make()\n"
    assert errors(text) == [err(text, "make", DICT, DICT_HINT)]


@pytest.mark.parametrize("key", ['f"a"', 'f"{x}"', "NAME", "1", "None", 'b"a"', '"a" + "b"', 'str("a")',
                                 '("a", "b")'])
def test_key_must_be_a_string_literal(key):
    text = f'KNOWN_LABELS = {{{key}: "A"}}\n'
    assert errors(text) == [(L, 1, 17, "KNOWN_LABELS key is not a string literal",
                             'write the label name as a plain string, e.g. "megatron"')]


@pytest.mark.parametrize("desc", ['f"A"', 'f"{x}"', "DESC", "1", "None", 'b"A"', '"A" + "B"', 'str(1)',
                                  '"A" * 2', '["A"]'])
def test_description_must_be_a_string_literal(desc):
    text = f'KNOWN_LABELS = {{"a": {desc}}}\n'
    assert errors(text) == [(L, 1, 22, "KNOWN_LABELS['a']: description is not a string literal",
                             "write the description as a plain string")]


def test_double_star_unpacking():
    text = 'KNOWN_LABELS = {**OTHER, "a": "A"}\n'
    assert errors(text) == [err(text, "OTHER", "KNOWN_LABELS must not use ** unpacking",
                                "list every label literally")]


def test_duplicate_keys():
    text = 'KNOWN_LABELS = {\n    "a": "A",\n    "b": "B",\n    "a": "again",\n}\n'
    assert errors(text) == [(L, 4, 5, "KNOWN_LABELS: duplicate label 'a' (first on line 2)",
                             "keep one entry per label")]


@pytest.mark.parametrize("name", ["-a", "_a", ".a", "", "a b", "a/b", "é", "a\\n", "a:b", "run ci", "a\\x00"])
def test_label_names_must_match_the_pattern(name):
    text = f'KNOWN_LABELS = {{"{name}": "A"}}\n'
    shown = repr(eval(f'"{name}"'))  # the Python value of the literal
    assert errors(text) == [(L, 1, 17, f"KNOWN_LABELS: {shown} is not a valid label name {NAME_RULE}",
                             NAME_HINT)]


@pytest.mark.parametrize("name", ["a", "A", "0", "a-b", "a_b", "a.b", "9lives", "x" * 200])
def test_valid_label_names(name):
    assert parse_labels(f'KNOWN_LABELS = {{"{name}": "A"}}\n').names == (name,)


def test_every_entry_error_is_reported_at_once_in_characters():
    text = textwrap.dedent('''\
        KNOWN_LABELS = {
            "ok": "Tests für Ökonomie", "bad name": "x",
            "c": 1,
            NAME: "y",
            "ok": "z",
            **REST,
            f"k": "v",
        }
        ''')
    assert errors(text) == [
        err(text, '"bad name"', f"KNOWN_LABELS: 'bad name' is not a valid label name {NAME_RULE}", NAME_HINT),
        err(text, "1,", "KNOWN_LABELS['c']: description is not a string literal",
            "write the description as a plain string"),
        err(text, "NAME", "KNOWN_LABELS key is not a string literal",
            'write the label name as a plain string, e.g. "megatron"'),
        err(text, '"ok"', "KNOWN_LABELS: duplicate label 'ok' (first on line 2)", "keep one entry per label",
            nth=2),
        err(text, "REST", "KNOWN_LABELS must not use ** unpacking", "list every label literally"),
        err(text, 'f"k"', "KNOWN_LABELS key is not a string literal",
            'write the label name as a plain string, e.g. "megatron"'),
    ]
    # "bad name" follows non-ASCII text on its line: its column counts characters, not bytes.
    assert at(text, '"bad name"') == (2, 33)


# -- syntax errors --------------------------------------------------------------------------


@pytest.mark.parametrize("text, line, col, problem", [
    ('KNOWN_LABELS = {"a": "A"\n', 1, 16, "'{' was never closed"),
    # CPython points at the last character of the unexpected indentation.
    ('KNOWN_LABELS = {"a": "A"}\n  x = 1\n', 2, 2, "unexpected indent"),
    ("if x:\nKNOWN_LABELS = {}\n", 2, 1, "expected an indented block after 'if' statement on line 1"),
    ("def f(:\n", 1, 7, "invalid syntax"),
    ('x = "ééé" $\n', 1, 11, "invalid syntax"),
    # "A" "b" concatenate; the second colon is the error.
    ('KNOWN_LABELS = {"a": "A" "b": "B"}\n', 1, 29, "invalid syntax"),
    ("x = 1\nab\0c\n", 2, 3, "source code string cannot contain null bytes"),
])
def test_syntax_errors(text, line, col, problem):
    assert caught(parse_labels, text, L) == [(L, line, col, f"labels file {L} is not valid Python: {problem}",
                                              "fix the syntax error")]


@pytest.mark.parametrize("text", ["1e308" + "{" * 300, "KNOWN_LABELS = " + "-" * 200_000 + "1\n"])
def test_nesting_past_the_parser_limits_is_located(text):
    # CPython's parser gives up with MemoryError or RecursionError, not SyntaxError.
    with pytest.raises(InputError) as info:
        parse_labels(text, L)
    assert (info.value.path, info.value.line, info.value.col, info.value.message, info.value.hint,
            info.value.code) == (L, 1, 1, f"labels file {L} is too deeply nested for the Python parser",
                                 "KNOWN_LABELS is a flat dict literal; remove the nesting", "CP408")


def test_syntax_error_column_does_not_depend_on_the_current_directory(tmp_path, monkeypatch):
    # CPython computes the column from the file named in ast.parse, if it finds one.
    (tmp_path / L).write_text("# something else entirely, with ü ü ü ü\n")
    monkeypatch.chdir(tmp_path)
    assert caught(parse_labels, 'x = "ééé" $\n', L)[0][1:3] == (1, 11)


# -- load_labels ----------------------------------------------------------------------------


def test_load_labels(tmp_path):
    (tmp_path / L).write_text('KNOWN_LABELS = {"a": "A"}\n')
    assert load_labels(tmp_path) == LabelRegistry(path=L, labels=(Label("a", "A", 1),))
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "labels.py").write_text('KNOWN_LABELS = {"b": "B"}\n')
    assert load_labels(tmp_path, "ci/labels.py") == LabelRegistry(path="ci/labels.py",
                                                                   labels=(Label("b", "B", 1),))


def test_errors_name_the_configured_path(tmp_path):
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "labels.py").write_text('KNOWN_LABELS = {"-x": "X"}\n')
    assert caught(load_labels, tmp_path, "ci/labels.py") == [
        ("ci/labels.py", 1, 17, f"KNOWN_LABELS: '-x' is not a valid label name {NAME_RULE}", NAME_HINT)]


def test_labels_file_is_never_imported(tmp_path, monkeypatch):
    marker = tmp_path / "imported"
    (tmp_path / L).write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\n"
                              'KNOWN_LABELS = {"a": "A"}\n')
    monkeypatch.chdir(tmp_path)
    assert load_labels(tmp_path).names == ("a",)
    assert not marker.exists()


def test_missing_labels_file(tmp_path):
    assert caught(load_labels, tmp_path) == [(L, None, None, f"labels file {L} does not exist",
                                              "create it or point the configuration at the right labels file")]


def test_labels_file_symlink_is_refused(tmp_path):
    os.symlink("/etc/passwd", tmp_path / L)
    assert caught(load_labels, tmp_path) == [
        (L, None, None, f"labels file {L} is a symlink; ci-policy refuses symlinks in a checkout", SYMLINK_HINT)]


def test_labels_file_symlink_to_a_file_inside_the_repo_is_refused(tmp_path):
    (tmp_path / "real.py").write_text('KNOWN_LABELS = {"a": "A"}\n')
    os.symlink("real.py", tmp_path / L)
    assert caught(load_labels, tmp_path) == [
        (L, None, None, f"labels file {L} is a symlink; ci-policy refuses symlinks in a checkout", SYMLINK_HINT)]


def test_symlinked_directory_above_the_labels_file_is_refused(tmp_path):
    repo = tmp_path / "repo"
    (repo / "ci").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "labels.py").write_text('KNOWN_LABELS = {"a": "A"}\n')
    os.symlink(outside, repo / "ci" / "conf")
    assert caught(load_labels, repo, "ci/conf/labels.py") == [
        ("ci/conf/labels.py", None, None, "labels file ci/conf/labels.py: directory ci/conf is a symlink; "
         "ci-policy refuses symlinks in a checkout", SYMLINK_HINT)]


def test_labels_file_that_is_a_directory(tmp_path):
    (tmp_path / L).mkdir()
    assert caught(load_labels, tmp_path) == [(L, None, None, f"labels file {L} is not a regular file", None)]


def test_labels_file_that_is_not_utf8(tmp_path):
    (tmp_path / L).write_bytes(b'KNOWN_LABELS = {"a": "\xe9"}\n')
    assert caught(load_labels, tmp_path) == [(L, 1, 23, f"labels file {L} is not valid UTF-8",
                                              "save the file as UTF-8")]


def test_labels_file_size_cap(tmp_path):
    head = 'KNOWN_LABELS = {"a": "A"}\n#'
    (tmp_path / L).write_text(head + "x" * (MAX_LABELS_BYTES - len(head) - 1) + "\n")
    assert load_labels(tmp_path).names == ("a",)
    (tmp_path / L).write_text(head + "x" * (MAX_LABELS_BYTES - len(head)) + "\n")
    assert caught(load_labels, tmp_path) == [(L, None, None, f"labels file {L} is larger than {MAX_LABELS_BYTES} "
                                              "bytes", "ci-policy reads checkout files as data and caps their size")]


@pytest.mark.parametrize("rel, message, hint", [
    ("/etc/passwd", "labels file: '/etc/passwd' is absolute; paths are relative to the repository root",
     "drop the leading '/'"),
    ("../labels.py", "labels file: '../labels.py' leaves the repository ('..' is not allowed)",
     "name a path inside the repository"),
])
def test_load_labels_refuses_paths_outside_the_repo(tmp_path, rel, message, hint):
    repo = tmp_path / "repo"
    repo.mkdir()
    (tmp_path / L).write_text('KNOWN_LABELS = {"a": "A"}\n')
    assert caught(load_labels, repo, rel) == [(rel, None, None, message, hint)]


# -- properties -----------------------------------------------------------------------------

PYTHONISH = st.lists(
    st.sampled_from(["KNOWN_LABELS", " = ", ": ", "{", "}", "(", ")", "[", "]", '"a"', "'b'", 'f"', "**", ",",
                     "\n", "    ", "if x:", "def f():", "for ", " in ", "import ", " as ", ":=", "|=", "lambda",
                     "match x:", "case ", "except", "1", "é", "\\", "\0", "#", "\r", "\t", "NAME"]),
    max_size=40,
).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=200), PYTHONISH))
def test_parse_labels_raises_only_policy_errors(text):
    try:
        registry = parse_labels(text)
    except (InputError, InputErrors) as exc:
        located = exc.errors if isinstance(exc, InputErrors) else (exc,)
        assert located and all(e.path == L for e in located)
    else:
        assert isinstance(registry, LabelRegistry)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,20}", fullmatch=True),
                       st.text(max_size=30), max_size=8))
def test_any_valid_registry_round_trips(labels):
    text = "KNOWN_LABELS = {\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in labels.items()) + "}\n"
    registry = parse_labels(text)
    assert dict((label.name, label.description) for label in registry.labels) == labels
    assert [label.line for label in registry.labels] == list(range(2, 2 + len(labels)))
