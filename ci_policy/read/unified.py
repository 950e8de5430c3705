"""A pull request's unified diff (GitHub's `application/vnd.github.diff`) to the name-status form.

- In: the text of a git-style unified diff, as the API returns it for a pull request.
- Out: the bytes `git diff --name-status -z -M BASE HEAD` would print for the same
  change (`read.diff` parses them), so `ci-policy plan --diff FILE` reads a diff the API
  gave exactly as one git computed.
- Only each file's extended header is read (`diff --git`, `new file mode`, `deleted
  file mode`, `rename from/to`, `copy from/to`, `similarity index`): hunk lines all start
  with ' ', '+', '-' or '\\', so none is taken for a header. Quoted paths are unquoted
  as git quotes them (C escapes, octal bytes of UTF-8).
- Refused: with `InputError` (the caller then treats the diff as unavailable, never as
  "no changes"): an empty diff, a block without a readable path, a path the name-status
  reader refuses.
"""

from __future__ import annotations

import re

from ci_policy.errors import InputError
from ci_policy.read.diff import parse_name_status

HEADER = "diff --git "
ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
SIMILARITY_RE = re.compile(r"(?:similarity|dissimilarity) index ([0-9]{1,3})%")


def _unquote(text: str, source: str) -> tuple[str, str]:
    """A git-quoted path at the start of `text`: (the path, the rest after it)."""
    out = bytearray()
    i = 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return out.decode("utf-8", "surrogateescape"), text[i + 1:]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in ESCAPES:
                out.append(ESCAPES[nxt])
                i += 2
                continue
            if re.fullmatch(r"[0-3][0-7]{2}", text[i + 1:i + 4]):
                out.append(int(text[i + 1:i + 4], 8))
                i += 4
                continue
            raise InputError(f"{source}: unknown escape \\{nxt} in a quoted path", path=source)
        out += ch.encode("utf-8")
        i += 1
    raise InputError(f"{source}: unterminated quoted path", path=source)


def _path(text: str, prefix: str, source: str) -> str:
    """One path of a header line: quoted or not, with its `a/` or `b/` prefix removed."""
    if text.startswith('"'):
        path, rest = _unquote(text, source)
        if rest:
            raise InputError(f"{source}: unexpected text after a quoted path", path=source)
    else:
        path = text
    if prefix and not path.startswith(prefix):
        raise InputError(f"{source}: path {path!r} does not start with {prefix}", path=source)
    return path[len(prefix):]


def _header_path(rest: str, source: str) -> str:
    """The path of `diff --git a/P b/P` (both sides name the same path when there is no rename)."""
    if rest.startswith('"'):
        first, tail = _unquote(rest, source)
        return _path(first, "a/", source) if tail.startswith(" ") else _path(rest, "a/", source)
    if rest.endswith('"') and ' "' in rest:  # only the second path needed quoting: the first is the same
        return _path(rest[:rest.index(' "')], "a/", source)
    n, odd = divmod(len(rest) - 5, 2)
    path = rest[2:2 + n]
    if odd or not rest.startswith("a/") or rest[2 + n:] != f" b/{path}":
        raise InputError(f"{source}: cannot read the path of {HEADER}{rest[:120]!r}", path=source)
    return path


def name_status_from_unified(text: str, source: str = "diff") -> bytes:
    """The name-status (`-z`) bytes of the unified diff `text`; InputError when it cannot be read."""
    records: list[tuple[str, tuple[str, ...]]] = []
    block: dict[str, str] | None = None
    in_hunks = False

    def close() -> None:
        if block is None:
            return
        if "rename from" in block or "copy from" in block:
            kind = "R" if "rename from" in block else "C"
            old, new = block.get(f"{'rename' if kind == 'R' else 'copy'} from"), \
                block.get(f"{'rename' if kind == 'R' else 'copy'} to")
            if old is None or new is None:
                raise InputError(f"{source}: a {kind} record without both paths", path=source)
            records.append((f"{kind}{int(block.get('similarity', '100')):03d}", (old, new)))
        else:
            status = "A" if "new" in block else "D" if "deleted" in block else "M"
            # Read only now: the header of a rename or copy names two paths, which the lines give.
            records.append((status, (_header_path(block["header"], source),)))

    for line in text.split("\n"):
        if line.startswith(HEADER):
            close()
            block, in_hunks = {"header": line[len(HEADER):]}, False
            continue
        if block is None or in_hunks:
            continue
        if line.startswith("@@") or line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            in_hunks = True
        elif line.startswith("new file mode "):
            block["new"] = "1"
        elif line.startswith("deleted file mode "):
            block["deleted"] = "1"
        elif m := re.fullmatch(r"(rename|copy) (from|to) (.+)", line):
            block[f"{m.group(1)} {m.group(2)}"] = _path(m.group(3), "", source)
        elif m := SIMILARITY_RE.fullmatch(line):
            block["similarity"] = m.group(1)
    close()
    if not records:
        raise InputError(f"{source}: the diff names no changed file", path=source)
    data = b"".join(status.encode() + b"\0" + b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
                    for status, paths in records)
    parse_name_status(data, source)  # what plan --diff will read: refused here, not there
    return data
