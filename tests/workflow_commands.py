"""A model of how the GitHub Actions runner reads a step's output for workflow commands.

- Lines: the output is split at `\\r\\n`, `\\r` and `\\n`, each piece parsed on its own
  (the runner reads its child's output line by line and a lone CR ends a line).
- `::name props::data`: a command when the line, leading whitespace trimmed, starts
  with `::` (the runner trims the start before it looks).
- `##[name props]data`: the legacy syntax, a command wherever `##[` appears in a line
  (the runner looks it up with IndexOf); this model counts it even on a line that is a
  `::` command, which the runner would not: stricter than the runner, never looser.
- `executed(output)`: every command the runner would execute, in order, as
  `Command(syntax, name, props, data, line)`; malformed `::` lines count (their name is
  what follows `::`), since a runner version could read them differently.
- `commands(output)`: the `::` commands, parsed and unescaped, asserting each one is
  well formed and that no legacy command is present (the original API of this module).
"""

from __future__ import annotations

import re
from typing import NamedTuple

LINE_BREAK = re.compile(r"\r\n|\r|\n")
COMMAND = re.compile(r"^::(?P<name>[a-z-]+)(?: (?P<props>[^:]*))?::(?P<data>.*)$")
LEGACY = re.compile(r"##\[(?P<name>[^\] ]*)(?: (?P<props>[^\]]*))?\](?P<data>.*)")


class Command(NamedTuple):
    syntax: str  # "::" or "##["
    name: str
    props: dict
    data: str
    line: str


def unescape_data(value: str) -> str:
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(value: str) -> str:
    return unescape_data(value.replace("%3A", ":").replace("%2C", ","))


def lines(output: str) -> list[str]:
    """The lines the runner parses: split at CR LF, CR and LF."""
    return LINE_BREAK.split(output)


def _props(text: str | None, sep: str) -> dict:
    props = {}
    for item in (text or "").split(sep):
        if item:
            key, _, value = item.partition("=")
            props[key.strip()] = unescape_property(value)
    return props


def executed(output: str) -> list[Command]:
    """Every command the runner would execute in `output` (see the module docstring)."""
    out = []
    for line in lines(output):
        stripped = line.lstrip()
        if stripped.startswith("::"):
            match = COMMAND.match(stripped)
            if match:
                out.append(Command("::", match["name"], _props(match["props"], ","),
                                   unescape_data(match["data"]), line))
            else:
                name = re.split(r"[ :]", stripped[2:], maxsplit=1)[0]
                out.append(Command("::", name, {}, stripped, line))
        for legacy in LEGACY.finditer(line):
            out.append(Command("##[", legacy["name"], _props(legacy["props"], ";"), legacy["data"], line))
        if "##[" in line and not LEGACY.search(line):
            # An unclosed `##[` is not a command, but it is text the checkout controls that
            # the next runner version could read; ci-policy never leaves one.
            out.append(Command("##[", "", {}, line, line))
    return out


def commands(output: str) -> list[tuple[str, dict, str]]:
    """Every line the runner would treat as a workflow command, parsed."""
    found = executed(output)
    legacy = [c.line for c in found if c.syntax == "##["]
    assert not legacy, f"legacy workflow command(s): {legacy!r}"
    for c in found:
        assert COMMAND.match(c.line.strip()), f"malformed workflow command: {c.line!r}"
    return [(c.name, c.props, c.data) for c in found]
