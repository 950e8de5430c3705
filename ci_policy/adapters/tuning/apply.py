"""Literal-only edits of `est_time` in a test file's registration (`ci-policy tune --apply`).

- In: a test file's text (or its path), a backend and a new est_time in whole seconds,
  and the marker name the registration is written with (`register_amd_ci` in a dialect
  that declares it; default: the backend's built-in `register_<backend>_ci`).
- Out: an `EditResult` with status `changed`, `unchanged` (the literal already has that
  value, e.g. `1_800` or `1.8e3` for 1800), or `skipped` with a reason.
- The edit: in the ONE module-level `<marker>(...)` expression statement
  (bare name; found and bound by `read.markers`, as lint finds and binds it), the numeric
  literal of `est_time` (first positional argument or `est_time=`) is replaced by the new value written as a
  plain decimal integer (`2000`). libcst performs the rewrite; the result is then checked
  to equal the original with exactly that literal's span replaced, so every other byte
  (comments, spacing, quotes, trailing commas, CRLF, a BOM, an encoding declaration) is
  kept. A literal in parentheses, `(300)`, is edited inside its parentheses.
- Refused: a marker name, backend or est_time out of form (`ValueError`: the caller's own
  values, checked before); a file is never refused, only skipped with a reason, as below.
- Skipped, never edited around, each with its own reason (`REASON_*` below): the file
  does not parse (with `ast` or with libcst); libcst does not reproduce the file byte for
  byte; no registration of that backend; the marker called only where it is no
  registration (inside a function, class or block, in an expression, or as an
  attribute); several registrations of that backend; *args or **kwargs in the call; no
  est_time; est_time given twice; est_time not a plain numeric literal. A negative
  number (`-0`, `-5`), `+300`, a bool, a complex number, a string, a name, an expression
  (`60 * 30`) or a call are not plain numeric literals.
- `apply_to_file` reads bytes (never through a symlink), decodes them by the file's own
  encoding (BOM and encoding declaration), and writes back atomically (a temporary file
  in the same directory, then `os.replace`) only when changed, with the file's mode.

libcst is an adapter dependency: it is imported inside functions only, so importing this
module does not load it.
"""

from __future__ import annotations

import ast
import io
import os
import stat
import tokenize
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard, cast

from ci_policy.adapters.files import write_atomically
from ci_policy.model.registry import KEYWORD_ONLY, POSITIONAL
from ci_policy.read.markers import MARKER_NAME_RE, MARKER_OF_BACKEND, bind_nodes, module_level_calls

BOM = "\ufeff"

CHANGED = "changed"
UNCHANGED = "unchanged"
SKIPPED = "skipped"

# Skip reasons. `{marker}` is e.g. register_cuda_ci.
REASON_SYNTAX = "the file does not parse: {msg} (line {line})"
REASON_TOO_DEEP = "the file does not parse: it is too deeply nested for the Python parser"
REASON_UNPARSABLE = "the file does not parse: {msg}"
REASON_LIBCST_SYNTAX = "libcst cannot parse the file: {msg} (line {line})"
REASON_LIBCST_ERROR = "libcst cannot parse the file: {msg}"
REASON_LIBCST_ROUND_TRIP = ("libcst does not reproduce this file byte for byte, so an edit could "
                            "change bytes other than the est_time literal")
REASON_NONE = "no {marker}(...) registration in this file"
REASON_NOT_MODULE_LEVEL = ("{marker}(...) on line {line} is not a module-level statement calling the "
                           "bare name {marker}, so it is no registration")
REASON_SEVERAL = "{count} {marker}(...) registrations (lines {lines}); refusing to guess which one to edit"
REASON_STARRED = "the {marker}(...) call passes *args or **kwargs, so est_time is not written literally"
REASON_NO_EST_TIME = "the {marker}(...) call has no est_time argument"
REASON_TWICE = "est_time is given twice in the {marker}(...) call (positionally and by keyword)"
REASON_NOT_PLAIN = "est_time is not a plain non-negative numeric literal: `{text}`"
REASON_REWRITE_MISMATCH = "the rewrite would change more than the est_time literal, so it is not applied"
# apply_to_file only.
REASON_SYMLINK = "the path is a symlink; ci-policy does not edit through symlinks"
REASON_MISSING = "the file does not exist"
REASON_NOT_REGULAR = "the path is not a regular file"
REASON_UNREADABLE = "the file cannot be read: {error}"
REASON_BAD_ENCODING_DECL = "the file's encoding cannot be determined: {error}"
REASON_UNDECODABLE = "the file is not valid {encoding}"
REASON_NOT_ROUND_TRIP = "decoding and re-encoding the file as {encoding} does not give back its bytes"
REASON_CHANGED_MEANWHILE = "the file changed while it was being edited; nothing was written"


@dataclass(frozen=True)
class EditResult:
    """What an edit did.

    - status: "changed" | "unchanged" | "skipped".
    - source: the file's text after the edit (the input itself unless changed); None only
      when `apply_to_file` could not read or decode the file.
    - old: the est_time argument exactly as it was written (e.g. "1_800", or "60 * 30" when
      that is why the edit was skipped), when the call has a single est_time argument.
    - line: the 1-based line of that literal, or of the call or error a skip is about.
    - reason: why it was skipped; None otherwise.
    """

    status: str
    source: str | None
    old: str | None = None
    line: int | None = None
    reason: str | None = None


def _check_arguments(backend: str, new_est: int, marker: str | None = None) -> str:
    if marker is not None and not MARKER_NAME_RE.fullmatch(marker):
        raise ValueError(f"{marker!r} is not a registration marker name (register_<word>_ci)")
    if marker is None and backend not in MARKER_OF_BACKEND:
        raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(sorted(MARKER_OF_BACKEND))}")
    if isinstance(new_est, bool) or not isinstance(new_est, int) or new_est < 0:
        raise ValueError(f"new_est must be a non-negative int number of seconds, got {new_est!r}")
    return marker if marker is not None else MARKER_OF_BACKEND[backend]


def _skip(source: str | None, reason: str, *, old: str | None = None,
          line: int | None = None) -> EditResult:
    return EditResult(SKIPPED, source, old=old, line=line, reason=reason)


@dataclass(frozen=True)
class _Refused:
    """What a step returns instead of its result: the skip reason."""

    reason: str


def _misplaced_call(tree: ast.Module, marker: str) -> ast.Call | None:
    """The first call of `marker` that is not a registration (nested, or through an attribute)."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == marker)
        or (isinstance(node.func, ast.Attribute) and node.func.attr == marker))]
    return min(calls, key=lambda c: (c.lineno, c.col_offset), default=None)


def _is_plain_number(node: ast.expr) -> TypeGuard[ast.Constant]:
    return (isinstance(node, ast.Constant) and isinstance(node.value, (int, float))
            and not isinstance(node.value, bool))


def _parse(text: str) -> ast.Module:
    with warnings.catch_warnings():  # e.g. invalid escape sequences in the file's strings
        warnings.simplefilter("ignore")
        return ast.parse(text)


def _segment(text: str, node: ast.expr) -> str:
    """The source text of `node` exactly as written."""
    shown = ast.get_source_segment(text, node)
    return shown if shown is not None else ast.unparse(node)


def _registrations(tree: ast.Module, marker: str) -> list[ast.Call]:
    return [mc.call for mc in module_level_calls(tree, frozenset({marker}))]


def _est_time_node(call: ast.Call, marker: str) -> ast.expr | _Refused:
    """The est_time argument of a registration call (bound the way lint binds it), or the
    reason there is no single one. Other grammar errors are lint's to report, not a reason
    to leave est_time alone."""
    binding = bind_nodes(call, marker, POSITIONAL, KEYWORD_ONLY)
    if binding.starred:
        return _Refused(REASON_STARRED.format(marker=marker))
    if any(parameter == "est_time" for *_, parameter in binding.problems):
        return _Refused(REASON_TWICE.format(marker=marker))
    node = binding.nodes.get("est_time")
    if node is None:
        return _Refused(REASON_NO_EST_TIME.format(marker=marker))
    return node


def _cst_registration(module, marker: str):
    """The module-level `marker(...)` calls, found with libcst the way `ast` finds them."""
    import libcst as cst  # as in `_rewrite_with_libcst`: test_importing_the_module_does_not_import_libcst

    found = []
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                    and isinstance(small.value.func, cst.Name) and small.value.func.value == marker):
                found.append(small.value)
    return found


def _cst_est_time(call):
    import libcst as cst  # as in `_rewrite_with_libcst`: test_importing_the_module_does_not_import_libcst

    args = list(call.args)
    if args and args[0].keyword is None and not args[0].star:
        node = args[0].value
    else:
        node = next((a.value for a in args if a.keyword is not None and a.keyword.value == "est_time"), None)
    return node if isinstance(node, (cst.Integer, cst.Float)) else None


def _rewrite_with_libcst(text: str, marker: str, new_literal: str) -> str | _Refused:
    """The new text, or why not. `text` has no BOM."""
    import libcst as cst  # only for a rewrite: test_importing_the_module_does_not_import_libcst
    from libcst.metadata import ByteSpanPositionProvider, MetadataWrapper

    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return _Refused(REASON_LIBCST_SYNTAX.format(msg=exc.message, line=exc.raw_line))
    except Exception as exc:  # libcst's native parser may raise other errors on odd input
        lines = str(exc).strip().splitlines()
        return _Refused(REASON_LIBCST_ERROR.format(msg=lines[0] if lines else type(exc).__name__))
    if module.code != text:
        return _Refused(REASON_LIBCST_ROUND_TRIP)

    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    spans = wrapper.resolve(ByteSpanPositionProvider)
    calls = _cst_registration(wrapper.module, marker)
    literal = _cst_est_time(calls[0]) if len(calls) == 1 else None
    if literal is None:  # ast found exactly one plain literal; libcst must agree
        return _Refused(REASON_REWRITE_MISMATCH)
    span = spans[literal]
    encoded = text.encode("utf-8")
    start = len(encoded[:span.start].decode("utf-8"))
    end = start + len(encoded[span.start:span.start + span.length].decode("utf-8"))
    if text[start:end] != literal.value:
        return _Refused(REASON_REWRITE_MISMATCH)

    replacement = literal.with_changes(value=new_literal) if isinstance(literal, cst.Integer) else \
        cst.Integer(value=new_literal, lpar=literal.lpar, rpar=literal.rpar)
    rewritten = cast(cst.Module, wrapper.module.deep_replace(literal, replacement)).code
    if rewritten != text[:start] + new_literal + text[end:]:
        return _Refused(REASON_REWRITE_MISMATCH)
    return rewritten


def _registration_est_time(tree: ast.Module, marker: str) -> ast.expr | None:
    calls = _registrations(tree, marker)
    if len(calls) != 1:
        return None
    found = _est_time_node(calls[0], marker)
    return None if isinstance(found, _Refused) else found


def rewrite_est_time(source: str, backend: str, new_est: int, marker: str | None = None) -> EditResult:
    """Set est_time of the one `backend` registration in `source` to `new_est` (see the module doc)."""
    marker = _check_arguments(backend, new_est, marker)
    bom = BOM if source.startswith(BOM) else ""
    text = source[len(bom):]

    try:
        tree = _parse(text)
    except SyntaxError as exc:
        if exc.lineno is None:
            return _skip(source, REASON_UNPARSABLE.format(msg=exc.msg))
        return _skip(source, REASON_SYNTAX.format(msg=exc.msg, line=exc.lineno), line=exc.lineno)
    except (RecursionError, MemoryError):
        return _skip(source, REASON_TOO_DEEP)
    except ValueError as exc:  # NUL bytes, unencodable surrogates
        return _skip(source, REASON_UNPARSABLE.format(msg=exc))

    statements = _registrations(tree, marker)
    if not statements:
        misplaced = _misplaced_call(tree, marker)
        if misplaced is not None:
            return _skip(source, REASON_NOT_MODULE_LEVEL.format(marker=marker, line=misplaced.lineno),
                         line=misplaced.lineno)
        return _skip(source, REASON_NONE.format(marker=marker))
    if len(statements) > 1:
        lines = ", ".join(str(s.lineno) for s in statements)
        return _skip(source, REASON_SEVERAL.format(count=len(statements), marker=marker, lines=lines),
                     line=statements[1].lineno)

    call = statements[0]
    node = _est_time_node(call, marker)
    if isinstance(node, _Refused):
        return _skip(source, node.reason, line=call.lineno)
    old = _segment(text, node)
    if not _is_plain_number(node):
        return _skip(source, REASON_NOT_PLAIN.format(text=" ".join(old.split())), old=old, line=node.lineno)
    if node.value == new_est:
        return EditResult(UNCHANGED, source, old=old, line=node.lineno)

    new_literal = str(new_est)
    rewritten = _rewrite_with_libcst(text, marker, new_literal)
    if isinstance(rewritten, _Refused):
        return _skip(source, rewritten.reason, old=old, line=node.lineno)
    # The result must still be the same registration, now with the new value.
    try:
        check = _registration_est_time(_parse(rewritten), marker)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # pragma: no cover - defensive
        check = None
    if not (check is not None and _is_plain_number(check) and check.value == new_est
            and type(check.value) is int):
        return _skip(source, REASON_REWRITE_MISMATCH, old=old, line=node.lineno)
    return EditResult(CHANGED, bom + rewritten, old=old, line=node.lineno)


def _read_no_follow(path: Path) -> tuple[bytes, os.stat_result] | _Refused:
    """(bytes, stat of the opened file), or why not."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return _Refused(REASON_MISSING)
    except OSError as exc:
        return _Refused(REASON_UNREADABLE.format(error=exc.strerror or exc))
    if stat.S_ISLNK(st.st_mode):
        return _Refused(REASON_SYMLINK)
    if not stat.S_ISREG(st.st_mode):
        return _Refused(REASON_NOT_REGULAR)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return _Refused(REASON_MISSING)
    except OSError as exc:
        # ELOOP: the path became a symlink after the lstat.
        if os.path.islink(path):
            return _Refused(REASON_SYMLINK)
        return _Refused(REASON_UNREADABLE.format(error=exc.strerror or exc))
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            return _Refused(REASON_NOT_REGULAR)
        try:
            data = fh.read()
        except OSError as exc:
            return _Refused(REASON_UNREADABLE.format(error=exc.strerror or exc))
    return data, st


def _decode(data: bytes) -> tuple[str, str] | _Refused:
    """(text, codec), or why not. A UTF-8 BOM stays in the text as U+FEFF."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return _Refused(REASON_BAD_ENCODING_DECL.format(error=exc.msg))
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    try:
        text = data.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return _Refused(REASON_UNDECODABLE.format(encoding=encoding))
    try:
        round_trip = text.encode(codec) == data
    except UnicodeEncodeError:
        round_trip = False
    if not round_trip:
        return _Refused(REASON_NOT_ROUND_TRIP.format(encoding=encoding))
    return text, codec


def apply_to_file(path: Path, backend: str, new_est: int, marker: str | None = None) -> EditResult:
    """`rewrite_est_time` on a file, written back atomically (same mode) only when changed.

    A symlink at `path` is refused (lstat, then open with O_NOFOLLOW), and so is a file
    that changed between the read and the write.
    """
    _check_arguments(backend, new_est, marker)
    path = Path(path)
    read = _read_no_follow(path)
    if isinstance(read, _Refused):
        return _skip(None, read.reason)
    data, st = read
    decoded = _decode(data)
    if isinstance(decoded, _Refused):
        return _skip(None, decoded.reason)
    text, codec = decoded
    result = rewrite_est_time(text, backend, new_est, marker)
    if result.status != CHANGED or result.source is None:
        return result

    try:
        now = os.lstat(path)
    except FileNotFoundError:
        now = None
    if now is None or stat.S_ISLNK(now.st_mode) or (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) != (
            st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns):
        return _skip(text, REASON_CHANGED_MEANWHILE, old=result.old, line=result.line)
    write_atomically(path, result.source.encode(codec), stat.S_IMODE(st.st_mode))
    return result
