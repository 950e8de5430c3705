"""Escaping: the one place checkout-controlled text is made safe for where it is printed.

- In: text a checkout or a PR controls (paths, labels, reasons, messages).
- Out: the same text made inert for its destination: a line of text output
  (`one_line`, `line_start`), a GitHub workflow command (`escape_data`,
  `escape_property`), a Markdown table cell (`md_escape`), a mermaid task name.
- Refused: nothing; escaping never fails and never drops characters it cannot show.
"""

from __future__ import annotations


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def one_line(value: str) -> str:
    """Checkout-controlled text (paths, reasons) printed as text stays on its line.

    In a CI log every line is parsed on its own: a CR or LF inside a value would start a
    line of the checkout's choosing (a GitHub `::workflow-command`, a fake diagnostic).
    """
    return value.replace("\r", "\\r").replace("\n", "\\n")


def line_start(value: str) -> str:
    """A path that begins an output line: `./` keeps a leading `::` from being a workflow command."""
    return "./" + value if value.lstrip().startswith("::") else value


def md_escape(text: str) -> str:
    """Escape text for a Markdown table cell; checkout paths and labels are untrusted."""
    out = text.replace("\\", "\\\\")
    for ch in "|`*_[]<>#":
        out = out.replace(ch, "\\" + ch)
    return out.replace("\n", " ").replace("\r", " ")


def mermaid_name(text: str) -> str:
    safe = "".join(c if c.isalnum() or c in "_.-/" else "_" for c in text)
    return safe.rsplit("/", 1)[-1] or "file"
