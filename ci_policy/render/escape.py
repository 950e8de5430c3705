"""Escaping: the one place checkout-controlled text is made safe for where it is printed.

- In: text a checkout or a PR controls (paths, labels, reasons, messages).
- Out: the same text made inert for its destination: a line of text output
  (`one_line`, `line_start`, `label_list`), a GitHub workflow command (`escape_data`,
  `escape_property`), a Markdown table cell (`md_escape`), a mermaid task name.
- The last line of defence, with or without GitHub Actions (`neutralise`,
  `command_lines`, applied by `render.console` to every write): every line written to
  stdout or stderr, split where the runner splits it (`\r\n`, `\r`, `\n`), leaves no
  `::` at its start (after whitespace), no `##[` anywhere and no bidi control; only the
  lines ci-policy writes as commands (`command_lines`, github format) stay commands, and
  only when they have a command's exact shape. In a JSON document the replacements
  (`##\u005b`, `\u202e`) are JSON escapes of the same characters: it parses the same.
- Refused: nothing; escaping never fails and never drops characters it cannot show.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# The explicit bidi embeddings, overrides and isolates: they reorder what a log or a
# terminal shows ("Trojan source"), so a path could display as another path.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_BIDI_RE = re.compile("[" + "".join(sorted(BIDI_CONTROLS)) + "]")
# A label shown without quotes: no whitespace (it would split or hide in the list), no quote.
_PLAIN_LABEL = re.compile(r"[^\s\"']+")
# Where the Actions runner ends a line of a step's output: each piece is parsed on its own.
RUNNER_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# A workflow command exactly as ci-policy writes one: escape_property keeps `:` and `,`
# out of the properties, escape_data keeps CR and LF out of the data.
COMMAND_LINE = re.compile(r"::[a-z][a-z-]*(?: [A-Za-z][A-Za-z0-9_-]*=[^:,]*(?:,[A-Za-z][A-Za-z0-9_-]*=[^:,]*)*)?::.*")


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def one_line(value: str) -> str:
    """Checkout-controlled text (paths, reasons) printed as text stays on its line.

    In a CI log every line is parsed on its own: a CR or LF inside a value would start a
    line of the checkout's choosing (a GitHub `::workflow-command`, a fake diagnostic).
    """
    return visible_bidi(value.replace("\r", "\\r").replace("\n", "\\n"))


def label_list(labels: Iterable[str]) -> str:
    """PR labels as given, space-separated, on one line: a label with whitespace, a quote or
    nothing in it is shown as a JSON string (`"Run-CI-SGLang "`), so its ends can be seen."""
    # Imported here: `--help` loads this module, not json
    # (tests/cli/test_startup.py::test_help_imports_no_json_uuid_tempfile_or_shutil_module).
    import json

    return " ".join(label if _PLAIN_LABEL.fullmatch(label) else json.dumps(label, ensure_ascii=False)
                    for label in labels)


def visible_bidi(value: str) -> str:
    """Each bidi control shown as its escape (`\\u202e`): the text reads in its stored order."""
    return _BIDI_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", value)


def _neutral_line(line: str, *, command: bool = False) -> str:
    # `##[` anywhere is the runner's legacy command syntax. `\u005b` is `[` the way the
    # bidi controls are shown, and inside a JSON string (json output under GitHub) it
    # still reads as `[`: the document stays valid and means the same.
    out = visible_bidi(line).replace("##[", "##\\u005b")
    if command:
        return out
    body = out.lstrip()
    if body.startswith("::"):
        # The runner trims whitespace before looking for `::`; a backslash before it keeps
        # the line text, and the reader sees where.
        return out[:len(out) - len(body)] + "\\" + body
    return out


def neutralise(text: str) -> str:
    """Text that no line of the runner's reading turns into a workflow command.

    A CR is a line break to the runner: it becomes the LF it stands for, so the log keeps
    the line (a progress bar's updates) and the new line is neutralised like any other.
    """
    return "\n".join(_neutral_line(line) for line in RUNNER_LINE_BREAK.split(text))


def neutral_continuation(text: str) -> str:
    """The rest of a line whose start is already written (and was neutralised then)."""
    return _neutral_line(text, command=True)


def command_lines(text: str) -> str:
    """Lines ci-policy writes as workflow commands, one per LF-separated line.

    A line of a command's exact shape stays one (with `##[` and bidi controls made inert
    in it); any other line, and any line holding a CR (escape_data never leaves one, so
    its data was not escaped), is `neutralise`d.
    """
    return "\n".join(_neutral_line(line, command=True) if "\r" not in line and COMMAND_LINE.fullmatch(line)
                     else neutralise(line) for line in text.split("\n"))


def line_start(value: str) -> str:
    """A path that begins an output line: `./` keeps a leading `::` from being a workflow command."""
    return "./" + value if value.lstrip().startswith("::") else value


def md_escape(text: str) -> str:
    """Escape text for a Markdown table cell; checkout paths and labels are untrusted.

    GitHub also turns plain text into links: `@name` notifies a user, `#123` references
    an issue, `http://`, `www.` and `a@b.c` become links. A zero-width space (`&#8203;`)
    after `@` and `#` and inside `://` and `www.` leaves the text as it reads and links
    nothing; `&` is escaped first so the checkout cannot write an entity of its own.
    """
    out = text.replace("\\", "\\\\")
    for ch in "|`*_[]<>#&":
        out = out.replace(ch, "\\" + ch)
    out = _AUTOLINK_RE.sub(lambda m: m.group()[:-1] + "&#8203;" + m.group()[-1], out)
    return out.replace("\n", " ").replace("\r", " ")


# The character before which a zero-width space goes: the one after `@` or `#` (a digit)
# (`\\#` once escaped), the `//` of `://`, the `.` of `www.`.
_AUTOLINK_RE = re.compile(r"@\w|#\d|:/(?=/)|(?i:www)\.")


def mermaid_safe(text: str) -> str:
    """Only letters, digits and `_.-/` (anything else `_`): inert in a mermaid chart."""
    return "".join(c if c.isalnum() or c in "_.-/" else "_" for c in text)


def mermaid_name(text: str) -> str:
    return mermaid_safe(text).rsplit("/", 1)[-1] or "file"


def bar_names(paths: Iterable[str], longest: int = 80) -> dict[str, str]:
    """Each path's Gantt bar name: its shortest distinguishing suffix, mermaid-safe and unique.

    A path's name is its last k path components (after `mermaid_safe`), for the smallest k
    no other path ends with: `a/test_server.py` and `b/test_server.py`, `test_kl.py`
    alone. Two names that are equal strings have as many components, so the rule makes
    them differ; paths equal once made safe, or names cut to `longest` characters (kept
    from the end, after `…`), get `_2`, `_3`, ... Every name differs from every other.
    """
    unique = list(dict.fromkeys(paths))
    parts = {p: mermaid_safe(p).split("/") for p in unique}
    ends: dict[tuple[str, ...], int] = {}  # a suffix of components -> how many paths end with it
    for p in unique:
        comps = parts[p]
        for k in range(1, len(comps) + 1):
            key = tuple(comps[-k:])
            ends[key] = ends.get(key, 0) + 1
    names: dict[str, str] = {}
    used: set[str] = set()
    for p in unique:
        comps = parts[p]
        k = next((k for k in range(1, len(comps) + 1) if ends[tuple(comps[-k:])] == 1), len(comps))
        name = "/".join(comps[-k:]) or "file"
        if len(name) > longest:
            name = "…" + name[len(name) - longest + 1:]
        candidate, n = name, 1
        while candidate in used:
            n += 1
            candidate = f"{name}_{n}"
        used.add(candidate)
        names[p] = candidate
    return names
