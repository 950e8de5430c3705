"""A minimal reader of GitHub workflow commands, as the Actions runner parses them.

Tests use it to check that output holds exactly the commands it should, each one
round-tripping to the original text, and no line a checkout injected.
"""

from __future__ import annotations

import re

COMMAND = re.compile(r"^::(?P<name>[a-z-]+)(?: (?P<props>[^:]*))?::(?P<data>.*)$")


def unescape_data(value: str) -> str:
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(value: str) -> str:
    return unescape_data(value.replace("%3A", ":").replace("%2C", ","))


def commands(output: str) -> list[tuple[str, dict, str]]:
    """Every line the runner would treat as a workflow command, parsed."""
    out = []
    for line in re.split(r"\r\n|\r|\n", output):
        stripped = line.lstrip()
        if not stripped.startswith("::"):
            continue
        match = COMMAND.match(stripped)
        assert match, f"malformed workflow command: {line!r}"
        props = {}
        if match["props"]:
            for item in match["props"].split(","):
                key, _, value = item.partition("=")
                props[key] = unescape_property(value)
        out.append((match["name"], props, unescape_data(match["data"])))
    return out
