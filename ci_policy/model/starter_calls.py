"""What `ci-policy init` reads of a checkout's test files: the module-level marker calls.

- In: the checkout root (`walk`: every `*.py` file below it, skipping hidden, virtualenv, build and
  dependency directories), one file's text and syntax tree (`calls_of`).
- Out: a `Call` per readable marker call (its backend from the marker's name, `backend_of`, and
  the literal values of its arguments: suite, est_time, labels, extra arguments), the types of the
  extra arguments (`extra_arguments`), and notes (uncoded warnings, located) for what cannot be read.
- Refused: nothing raises: a marker whose word is no backend name, an argument that is not a
  literal, a call that cannot be bound, a symlink or an unreadable directory is a note, and the
  call gives no stage. Files are parsed with `ast` only; nothing is imported or executed.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_policy.config.backends import BACKEND_NAME_RE
from ci_policy.errors import Diagnostic, warning
from ci_policy.model.registry import argument_type
from ci_policy.read.markers import (
    KEYWORD_ONLY,
    MARKER_NAME_RE,
    POSITIONAL,
    REGISTRATION_MARKERS,
    NotLiteral,
    bind_nodes,
    literal,
    module_level_calls,
)
from ci_policy.read.numbers import is_finite_number

# Any name lint would read as a marker (`MARKER_NAME_RE`), so init finds whatever lint would flag.
MARKER_IN_TEXT = re.compile(r"\bregister_[A-Za-z0-9_]+_ci\b")
# The marker words whose backend is not the word itself.
WORD_BACKENDS = {"amd": "rocm"}
BUILTIN_MARKERS = REGISTRATION_MARKERS
TEMPLATE_ARGUMENTS = ("stage", "runner_config")
SUITE_TEMPLATE = "{stage}-test-{runner_config}"
_SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages", "build", "dist", "venv"})


@dataclass(frozen=True)
class Call:
    """One module-level marker call, as far as its literal arguments tell."""

    file: str
    line: int
    marker: str
    backend: str
    suite: str | None
    est_time: float | None
    labels: tuple[str, ...]
    disabled: bool
    extra: tuple[tuple[str, Any], ...]  # (name, literal value) of each extra argument with a literal value
    extra_names: tuple[str, ...] = ()  # every extra argument given, literal or not
    nightly: bool = False  # nightly=True written as such


def backend_of(marker: str) -> str | None:
    """The backend a marker name implies (`register_amd_ci` -> rocm), or None when its word is no backend name."""
    if marker in BUILTIN_MARKERS:
        return BUILTIN_MARKERS[marker]
    word = marker[len("register_"):-len("_ci")].lower()
    backend = WORD_BACKENDS.get(word, word)
    return backend if BACKEND_NAME_RE.fullmatch(backend) else None


def note(message: str, path: str | None = None, line: int | None = None, col: int | None = None,
          hint: str | None = None) -> Diagnostic:
    return warning(message, path=path, line=line, col=col, hint=hint)


@dataclass
class Walked:
    python_files: list[str]
    skipped_dirs: list[str]
    notes: list[Diagnostic]


def walk(repo: Path) -> Walked:
    found = Walked([], [], [])

    def visit(rel_dir: str) -> None:
        try:
            entries = sorted(os.scandir(repo / rel_dir if rel_dir != "." else repo), key=lambda e: e.name)
        except OSError as exc:
            found.notes.append(note(f"directory {rel_dir} cannot be read: {exc.strerror}; init did not look inside",
                                     path=rel_dir))
            return
        for entry in entries:
            rel = entry.name if rel_dir == "." else f"{rel_dir}/{entry.name}"
            if not rel.isprintable():
                found.notes.append(note(f"skipped {rel!r}: control characters in its path",
                                         path=repr(rel)[1:-1], hint="rename it"))
                continue
            if entry.is_symlink():
                # Only what init would have read is worth a note: a Python file or a directory.
                if entry.name.endswith(".py") or (not entry.name.startswith(".") and entry.is_dir()):
                    found.notes.append(note(f"skipped {rel}: a symlink; ci-policy refuses symlinks in a checkout",
                                             path=rel, hint="replace the symlink with the real file or directory"))
                continue
            if entry.is_dir(follow_symlinks=False):
                if (entry.name.startswith(".") or entry.name in _SKIP_DIRS or entry.name.endswith(".egg-info")
                        or os.path.lexists(os.path.join(entry.path, "pyvenv.cfg"))):
                    found.skipped_dirs.append(rel)
                else:
                    visit(rel)
            elif entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
                found.python_files.append(rel)

    visit(".")
    return found


def holds(repo: Path, rel_dir: str, globs: tuple[str, ...]) -> bool:
    """Whether a directory init did not read has a file named like a test file (names only, no symlinks)."""
    for _dir, _subdirs, files in os.walk(repo / rel_dir, followlinks=False):
        if any(fnmatch.fnmatchcase(f, g) for f in files for g in globs):
            return True
    return False


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return None
    try:
        return literal(node)
    except NotLiteral:
        return NotLiteral


def calls_of(rel: str, tree: ast.Module, text: str, notes: list[Diagnostic]) -> tuple[list[Call], bool]:
    """The readable marker calls of a file, and whether it has any marker call at all."""
    names = frozenset(n for n in MARKER_IN_TEXT.findall(text) if MARKER_NAME_RE.fullmatch(n))
    out: list[Call] = []
    found = module_level_calls(tree, names)
    for mc in found:
        where: dict[str, Any] = dict(path=rel, line=mc.line, col=mc.col)
        backend = backend_of(mc.marker)
        if backend is None:
            notes.append(note(f"{mc.marker}(...): no backend name can be read from the marker's name; "
                               "the call gives no stage", **where,
                               hint=f"declare a backend and map it in markers.names: {{{mc.marker}: BACKEND}}"))
            continue
        extra_names = tuple(k.arg for k in mc.call.keywords
                            if k.arg is not None and k.arg not in POSITIONAL + KEYWORD_ONLY)
        binding = bind_nodes(mc.call, mc.marker, POSITIONAL, KEYWORD_ONLY + extra_names)
        if binding.problems:
            notes.append(note(f"{mc.marker}(...) cannot be read: {binding.problems[0][2]}; "
                               "the call gives no stage", **where))
            continue
        nodes = binding.nodes
        values = {name: _literal(node) for name, node in nodes.items()}
        for name in sorted(n for n, v in values.items() if v is NotLiteral):
            names_suite = name == "suite" or (name in TEMPLATE_ARGUMENTS and "suite" not in values)
            notes.append(note(f"{mc.marker}(...): {name} is not a literal"
                               + ("; the call gives no stage" if names_suite else ""),
                               **where, hint=f"write the value of {name} itself"))
        suite = _suite_of(mc.marker, values, notes, where)
        est = values.get("est_time")
        labels = values.get("labels")
        disabled = values.get("disabled")
        nightly = values.get("nightly")
        out.append(Call(
            file=rel, line=mc.line, marker=mc.marker, backend=backend, suite=suite,
            est_time=est if is_finite_number(est) and est >= 0 else None,
            labels=tuple(x for x in labels if isinstance(x, str)) if isinstance(labels, list) else (),
            disabled=isinstance(disabled, str) and bool(disabled.strip()),
            extra=tuple((n, values[n]) for n in extra_names if values[n] is not NotLiteral),
            extra_names=extra_names, nightly=nightly is True))
    return out, bool(found)


def _suite_of(marker: str, values: dict[str, Any], notes: list[Diagnostic], where: dict[str, Any]) -> str | None:
    suite = values.get("suite")
    parts = [values.get(a) for a in TEMPLATE_ARGUMENTS]
    built = (SUITE_TEMPLATE.format(stage=parts[0], runner_config=parts[1])
             if all(isinstance(p, str) for p in parts) else None)
    if suite is NotLiteral:
        return None  # noted by the caller
    if "suite" in values:
        if not isinstance(suite, str):
            notes.append(note(f"{marker}(...): suite must be a string, got {suite!r}; the call gives no stage",
                               **where))
            return None
        if built is not None and built != suite:
            notes.append(note(f"{marker}(...): suite {suite!r} differs from {SUITE_TEMPLATE!r} = {built!r}; "
                               "the suite is used", **where, hint="give either suite or stage and runner_config"))
        return suite
    if any(p is NotLiteral for p in parts):
        return None  # noted by the caller
    if built is None:
        given = [a for a in TEMPLATE_ARGUMENTS if a in values]
        missing = "; ".join(f"{a} is not a string" for a in given if not isinstance(values[a], str))
        notes.append(note(f"{marker}(...) has no suite" + (
            f", and {' and '.join(TEMPLATE_ARGUMENTS)} do not build one ({missing or 'both are needed'})"
            if given else ""
        ) + "; the call gives no stage", **where, hint='add suite="..."'))
        return None
    return built


def extra_arguments(calls: list[Call], names: set[str], notes: list[Diagnostic]) -> dict[str, str]:
    types: dict[str, Counter[str]] = {n: Counter() for n in names}
    for call in calls:
        for name, value in call.extra:
            kind = argument_type(value)
            if kind is not None:
                types[name][kind] += 1
            elif value is not None:
                notes.append(note(f"{call.marker}(...): {name}={value!r} has no declarable type "
                                   "(string, integer, number, boolean, strings)", path=call.file, line=call.line))
    out: dict[str, str] = {}
    for name in sorted(names):
        kinds = types[name]
        if set(kinds) == {"integer", "number"}:
            out[name] = "number"
            continue
        if len(kinds) > 1:
            notes.append(note(f"extra argument {name} has values of several types ("
                               + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items())) + "); declared as the "
                               "most common one", hint=f"check markers.extra_arguments.{name}"))
        if not kinds:
            notes.append(note(f"extra argument {name} has no literal value to take its type from; declared as "
                               "string", hint=f"check markers.extra_arguments.{name}"))
        out[name] = min(kinds, key=lambda k: (-kinds[k], k)) if kinds else "string"
    return out
