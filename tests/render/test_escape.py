"""render.escape: checkout-controlled text made inert for a workflow command, a line, a table cell, a log."""

from __future__ import annotations

import json

import pytest
from workflow_commands import executed, unescape_data

from ci_policy.render.escape import (
    BIDI_CONTROLS,
    command_lines,
    escape_data,
    escape_property,
    line_start,
    md_escape,
    mermaid_name,
    neutralise,
    one_line,
    visible_bidi,
)


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


# -- finding 1 of issue 14: the last line of defence under GitHub Actions -----------------------

def test_one_line_shows_bidi_controls_as_escapes():
    assert one_line("docs/\u202egnp.py\u2066x\u2069") == "docs/\\u202egnp.py\\u2066x\\u2069"
    assert visible_bidi("".join(sorted(BIDI_CONTROLS))) == (
        "\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069")
    assert visible_bidi("\u200f\u061c") == "\u200f\u061c"  # marks, not controls: they reorder nothing


@pytest.mark.parametrize("text, expected", [
    ("::warning::x", "\\::warning::x"),
    ("  \t::error::x", "  \t\\::error::x"),
    ("a\r::set-output name=x::1", "a\n\\::set-output name=x::1"),
    ("a\r\n::debug::x\n", "a\n\\::debug::x\n"),
    ("x ##[error]y ###[z", "x ##\\u005berror]y ###\\u005bz"),
    ("tests/::x.py :: ok", "tests/::x.py :: ok"),
    (":x", ":x"),
    ("\u202e::warning::x", "\\u202e::warning::x"),
    ("", ""),
])
def test_neutralise(text, expected):
    assert neutralise(text) == expected
    assert executed(neutralise(text)) == []


def test_neutralised_json_means_the_same():
    document = json.dumps({"file": "##[error]x\u202e", "lines": ["::warning::y"]}, ensure_ascii=False, indent=2)
    assert json.loads(neutralise(document)) == json.loads(document)
    assert executed(neutralise(document)) == []


def test_command_lines_keep_only_commands_of_the_exact_shape():
    text = ("::error file=a%2Cb,line=1,col=2,title=CP231 x::msg ##[x]\u202e\n::endgroup::\n"
            "::warning::a\r::set-output name=x::1\nsummary ::x\n  ::notice::indented\n::bad line")
    assert command_lines(text) == (
        "::error file=a%2Cb,line=1,col=2,title=CP231 x::msg ##\\u005bx]\\u202e\n::endgroup::\n"
        # a CR in a command is data escape_data did not escape: the whole line is text
        "\\::warning::a\n\\::set-output name=x::1\nsummary ::x\n  \\::notice::indented\n\\::bad line")
    assert [(c.name, c.props, c.data) for c in executed(command_lines(text))] == [
        ("error", {"file": "a,b", "line": "1", "col": "2", "title": "CP231 x"}, "msg ##\\u005bx]\\u202e"),
        ("endgroup", {}, "")]


def test_md_escape_links_nothing_github_would_autolink():
    # finding 1 of issue 14: untrusted text in the step summary notifies no one and links nowhere.
    assert md_escape("see #123 by @alice at https://x.io or www.evil.com, a@b.com") == (
        "see \\#&#8203;123 by @&#8203;alice at https:&#8203;//x.io or www&#8203;.evil.com, a@&#8203;b.com")
    assert md_escape("WWW.X ftp://y") == "WWW&#8203;.X ftp:&#8203;//y"
    # An entity of the checkout's own is text, not the `@` it would decode to.
    assert md_escape("&#64;bob") == "\\&\\#&#8203;64;bob"
    assert md_escape("a # b @ c") == "a \\# b @ c"
