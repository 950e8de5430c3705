"""render.console: every line written passes one guard, with or without GitHub; commands only by write_commands."""

from __future__ import annotations

import io
import random
import sys

from workflow_commands import executed

from ci_policy.render import console
from ci_policy.render.console import GuardedStream, guarded, write_commands
from ci_policy.render.escape import neutralise


def test_a_line_written_in_pieces_is_judged_whole():
    raw = io.StringIO()
    out = GuardedStream(raw)
    # finding 1 of issue 14: a test's output arrives in arbitrary chunks.
    for piece in [" ", ":", ":warning::x\nok #", "#", "[error]y\r", "\n", "a\r", "::set-output name=x::1\n", "\u202e"]:
        out.write(piece)
        out.flush()
    out.finish()
    assert raw.getvalue() == " \\::warning::x\nok ##\\u005berror]y\na\n\\::set-output name=x::1\n\\u202e"
    assert executed(raw.getvalue()) == []


def test_held_text_is_written_by_the_next_line_or_at_the_end():
    raw = io.StringIO()
    out = GuardedStream(raw)
    out.write("ends with ##")
    assert raw.getvalue() == "ends with "
    out.write("\n  ")
    assert raw.getvalue() == "ends with ##\n"
    out.finish()
    assert raw.getvalue() == "ends with ##\n  "


def test_write_commands_keeps_commands_and_starts_them_on_a_line():
    raw = io.StringIO()
    out = GuardedStream(raw)
    out.write("test output without a newline ::x")
    write_commands("::group::tests/a.py (attempt 1)\n::warning::x%0A::error::y", out)
    out.write("::endgroup::\n")
    assert raw.getvalue() == ("test output without a newline ::x\n::group::tests/a.py (attempt 1)\n"
                              "::warning::x%0A::error::y\n\\::endgroup::\n")
    assert [(c.name, c.data) for c in executed(raw.getvalue())] == [
        ("group", "tests/a.py (attempt 1)"), ("warning", "x\n::error::y")]


def test_write_commands_on_a_plain_stream_prints():
    raw = io.StringIO()
    write_commands("::endgroup::", raw)
    assert raw.getvalue() == "::endgroup::\n"


def test_guarded_wraps_both_streams_once_and_restores_them(capsys):
    with guarded(True):
        assert isinstance(sys.stdout, GuardedStream) and isinstance(sys.stderr, GuardedStream)
        outer = sys.stdout
        with guarded(True):
            assert sys.stdout is outer
        print("::warning::out")
        print("##[error]err", file=sys.stderr, end="")
    assert not isinstance(sys.stdout, GuardedStream)
    assert capsys.readouterr() == ("\\::warning::out\n", "##\\u005berror]err")
    # Outside GitHub Actions too (issue 32, finding 5): only a CR stays what it was.
    with guarded(False):
        assert not sys.stdout.actions
        print("::warning::plain\r::error::x ##[add-mask]y")
        with guarded(True):  # --format github: for the runner while the command runs
            assert sys.stdout.actions and sys.stderr.actions
        assert not sys.stdout.actions
    assert capsys.readouterr().out == "\\::warning::plain\r\\::error::x ##\\u005badd-mask]y\n"


def test_outside_actions_a_cr_stays_a_cr_and_what_follows_it_is_a_line_start():
    raw = io.StringIO()
    out = GuardedStream(raw, actions=False)
    for piece in ["50%\r", "::warning::x 60%\r", "\n", "##", "[error]\r\n", "\u202e\r"]:
        out.write(piece)
    out.finish()
    assert raw.getvalue() == "50%\r\\::warning::x 60%\r\n##\\u005berror]\r\n\\u202e\r"
    assert executed(raw.getvalue()) == []



def test_whole_lines_written_at_once_read_as_those_lines_neutralised_one_by_one():
    # Lines with nothing to neutralise are written in one piece, the rest line by line: in
    # every mix of pieces and line starts the output is each line neutralised (a CR a line
    # break, which outside Actions stays a CR).
    atoms = ["a", " ", "\t", "\u00a0", ":", "::", "#", "##[", "[", "\u202e", "\n", "\r", "\r\n", '"x": 1,']
    rng = random.Random(33)
    for _ in range(3000):
        pieces = ["".join(rng.choice(atoms) for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(1, 4))]
        lines = "".join(pieces).replace("\r\n", "\n").replace("\r", "\n").split("\n")
        expected = "\n".join(neutralise(line) for line in lines)
        for actions in (True, False):
            raw = io.StringIO()
            stream = GuardedStream(raw, actions=actions)
            for piece in pieces:
                stream.write(piece)
            stream.finish()
            assert raw.getvalue().replace("\r\n", "\n").replace("\r", "\n") == expected, (pieces, actions)


def test_a_long_document_written_at_once_is_neutralised_wherever_its_one_unsafe_line_is():
    # A clean ASCII document is written as it is without the guard's regular expression; one
    # unsafe line anywhere in it (each kind alone, in ASCII text and not) is still neutralised.
    clean = "".join(f'  "file": "tests/test_{i}.py", "n": {i}: x,\n' for i in range(500))
    for unsafe in ("\t::warning::x", "a\rb", "x ##[error]y", "x \u202e y", "::warning::\u00e9",
                   " \u00a0::warning::x"):
        for at in (0, 250, 500):
            lines = clean.splitlines(keepends=True)
            text = "".join([*lines[:at], unsafe + "\n", *lines[at:]])
            raw = io.StringIO()
            stream = GuardedStream(raw, actions=True)
            stream.write(text)
            stream.finish()
            expected = "\n".join(neutralise(line) for line in text.replace("\r", "\n").split("\n"))
            assert raw.getvalue() == expected, (unsafe, at)
            assert raw.getvalue() != text
            assert executed(raw.getvalue()) == []
    raw = io.StringIO()
    stream = GuardedStream(raw)
    stream.write(clean)
    assert raw.getvalue() == clean


def test_whole_lines_of_a_large_document_are_written_a_piece_at_a_time():
    # A JSON document of several MiB (a registry of 20,000 files is 6) is neither copied nor
    # encoded whole: its clean lines reach the stream in pieces of at most `_PIECE` characters.
    class Recording(io.StringIO):
        def __init__(self) -> None:
            super().__init__()
            self.sizes: list[int] = []

        def write(self, text: str) -> int:
            self.sizes.append(len(text))
            return super().write(text)

    document = "".join(f'  "tests/e2e/test_{i}.py": {i},\n' for i in range(90_000)) + "}"
    assert len(document) > 2 * console._PIECE
    raw = Recording()
    stream = GuardedStream(raw)
    stream.write(document)
    stream.write("\n")
    stream.finish()
    assert raw.getvalue() == document + "\n"
    lines = len(document) - 1  # the whole lines; the last, "}", ends with the next write
    assert raw.sizes == [*(min(console._PIECE, lines - start) for start in range(0, lines, console._PIECE)), 1, 1]
