"""The console: every line ci-policy writes, with or without GitHub Actions, passes one guard.

- In: the process's stdout and stderr, and whether the GitHub Actions runner reads them
  (`GITHUB_ACTIONS=true`, or `--format github`, whose output is meant for it).
- Out: `guarded(actions)` replaces `sys.stdout`/`sys.stderr` for the duration of a command
  with a `GuardedStream`; every write (ci-policy's own text, a checkout's paths, labels
  and reasons, JSON documents, the live output of the tests `run` runs) is
  `render.escape.neutralise`d line by line: no `::` at a line start, no `##[` anywhere, no
  bidi control. Always, not only under GitHub Actions: a self-hosted runner without
  `GITHUB_ACTIONS`, another CI, or a script piping ci-policy's output into a job's log
  is read by the same parser. Under GitHub Actions a CR becomes the LF the runner reads
  it as; elsewhere it stays a CR (a terminal's updating line), and what follows it is
  guarded as the start of a line either way.
- Refused: nothing: every text is written, neutralised; a guard that refused a line would lose
  a test's output.
- `write_commands(text, stream)`: the one way to write a workflow command. On a guarded
  stream only lines of a command's exact shape stay commands (`render.escape.command_lines`);
  on any other stream the text is printed as it is.
- A line written in pieces is judged whole: a piece that could still become `::` at the
  line start, or `##[` with the next piece, is held until the next write decides it (or
  the command ends).
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator

from ci_policy.render.escape import (
    BIDI_CONTROLS,
    RUNNER_LINE_BREAK,
    command_lines,
    neutral_continuation,
    neutralise,
)

TYPE_CHECKING = False  # typing's, without importing typing: `--help` is guarded and imports no typing
if TYPE_CHECKING:
    from typing import IO, Any


# Whatever `neutralise` could change in whole LF-ended lines: a CR (a line break to the runner),
# `##[`, a bidi control, `::` after a line's leading whitespace (`\s` is `str.lstrip`'s
# whitespace; crossing a line break it matches more, never less). Lines with none of them are
# written as they are, not line by line: a plan's JSON document at 5,000 files is 12,000 lines.
_UNSAFE = re.compile(r"\r|##\[|[" + "".join(sorted(BIDI_CONTROLS)) + r"]|^\s*::", re.MULTILINE)
# Those lines are written at most this many characters at a time: a JSON document of a few MiB
# (a registry of 20,000 test files is 6) is neither copied nor encoded whole (peak RSS, issue 33).
_PIECE = 1 << 20


class GuardedStream:
    """A text stream that writes `neutralise`d lines to the stream it wraps."""

    def __init__(self, raw: IO[str], *, actions: bool = True) -> None:
        self.raw = raw
        # Read by the Actions runner: a CR is written as the LF it reads it as.
        self.actions = actions
        self._held = ""     # the end of the current line, not yet decided
        self._mid = False   # part of the current line is already written

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno ...: the wrapped stream's
        return getattr(self.raw, name)

    def write(self, text: str) -> int:
        self._held += text
        self._drain(final=False)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.raw.flush()

    def finish(self) -> None:
        """Write what is held: the command is over, nothing can continue its last line."""
        self._drain(final=True)
        self.raw.flush()

    def write_commands(self, text: str) -> None:
        self._drain(final=True)
        if self._mid:  # a command counts only at the start of a line
            self.raw.write("\n")
            self._mid = False
        self.raw.write(command_lines(text) + "\n")

    def _drain(self, *, final: bool) -> None:
        held = self._held
        cut = held.rfind("\n") + 1
        # `_UNSAFE` told without a scan of the regular expression where it cannot match: an
        # ASCII text (`isascii` reads a flag) has no bidi control, and `^\s*::` needs a `::`;
        # with no CR, `##[` or `::` either, no alternative matches. The rest is asked of
        # `_UNSAFE` (JSON documents are ASCII: at 5,000 files the scan took 16 ms, these 1).
        if cut and (held.isascii() and held.find("\r", 0, cut) < 0 and held.find("##[", 0, cut) < 0
                    and held.find("::", 0, cut) < 0 or _UNSAFE.search(held, 0, cut) is None):
            for start in range(0, cut, _PIECE):
                self.raw.write(held[start:min(cut, start + _PIECE)])
            self._mid = False
            held = held[cut:]
        done = 0  # lines are cut at their offsets: slicing the rest off after each would be quadratic
        for m in RUNNER_LINE_BREAK.finditer(held):
            if m.group() == "\r" and m.end() == len(held) and not final:
                break  # perhaps the CR of a CRLF
            self._part(held[done:m.start()], end="\n" if self.actions else m.group())
            done = m.end()
        buf = held[done:]
        keep = 0
        if not final:
            if buf.endswith("\r"):
                keep = 1  # perhaps the CR of a CRLF (nothing else is left: see above)
            elif not self._mid and buf.lstrip() in ("", ":"):
                keep = len(buf)  # may still turn into `::` at the line start
            else:
                keep = len(buf) - len(buf.rstrip("#"))  # may still turn into `##[`
        self._part(buf[:len(buf) - keep], end="")
        self._held = buf[len(buf) - keep:]

    def _part(self, text: str, *, end: str) -> None:
        """`text` (no line break in it), then the line break `end` when the line ends."""
        if text:
            self.raw.write(neutral_continuation(text) if self._mid else neutralise(text))
        if end:
            self.raw.write(end)
        self._mid = not end and (self._mid or bool(text))


def write_commands(text: str, stream: IO[str] | None = None) -> None:
    """Write `text`, lines ci-policy means as workflow commands (print's newline added)."""
    out = sys.stdout if stream is None else stream
    if isinstance(out, GuardedStream):
        out.write_commands(text)
    else:
        print(text, file=out)


@contextlib.contextmanager
def guarded(actions: bool) -> Iterator[None]:
    """stdout and stderr guarded while the block runs; `actions`: for the Actions runner
    (an already guarded stream is switched to it for the block)."""
    if isinstance(sys.stdout, GuardedStream):
        streams = [s for s in (sys.stdout, sys.stderr) if isinstance(s, GuardedStream)]
        before = [s.actions for s in streams]
        for s in streams:
            s.actions = s.actions or actions
        try:
            yield
        finally:
            for s, was in zip(streams, before, strict=True):
                s.actions = was
        return
    saved = sys.stdout, sys.stderr
    out, err = GuardedStream(sys.stdout, actions=actions), GuardedStream(sys.stderr, actions=actions)
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
        for stream in (out, err):
            with contextlib.suppress(OSError, ValueError):
                stream.finish()
