"""render.escape: checkout-controlled text made inert for a workflow command, a line, a table cell."""

from __future__ import annotations

from workflow_commands import unescape_data

from ci_policy.render.escape import escape_data, escape_property, line_start, md_escape, mermaid_name, one_line


def test_escape_data():
    assert escape_data("a%b\rc\nd") == "a%25b%0Dc%0Ad"
    # `%` first: a literal "%0A" in the input must not come back as a newline.
    assert escape_data("%0A") == "%250A"
    assert unescape_data(escape_data("%0A\n")) == "%0A\n"
    assert escape_data("a::b,c:d") == "a::b,c:d"


def test_escape_property():
    assert escape_property("a:b,c%d\re\nf") == "a%3Ab%2Cc%25d%0De%0Af"
    assert escape_property("::") == "%3A%3A"


def test_one_line_keeps_a_value_on_its_line():
    assert one_line("a\r\nb\nc\rd") == "a\\r\\nb\\nc\\rd"
    assert one_line("::error::x") == "::error::x"  # on its own it starts no line; line_start guards the start
    assert one_line("") == ""


def test_line_start_keeps_a_path_from_being_a_workflow_command():
    assert line_start("::error::x") == "./::error::x"
    assert line_start("  ::warning::x") == "./  ::warning::x"
    assert line_start("tests/::x.py") == "tests/::x.py"
    assert line_start(":x") == ":x"
    assert line_start("") == ""


def test_md_escape_makes_a_table_cell_inert():
    assert md_escape("a|b`c*d_e[f]g<h>i#j") == "a\\|b\\`c\\*d\\_e\\[f\\]g\\<h\\>i\\#j"
    # The backslash first: an escape in the input is not undone by the escapes added.
    assert md_escape("\\|") == "\\\\\\|"
    assert md_escape("a\nb\rc") == "a b c"
    assert md_escape("tests/test-a.py") == "tests/test-a.py"


def test_mermaid_name_is_the_safe_base_name():
    assert mermaid_name("tests/e2e/test_a.py") == "test_a.py"
    assert mermaid_name("a b:c;d") == "a_b_c_d"
    assert mermaid_name("x/\n") == "_"
    assert mermaid_name("dir/") == "file"
    assert mermaid_name("") == "file"
