"""The label registry: `KNOWN_LABELS` in the checkout's `labels.py`, read with `ast`.

- In: the checkout root (explicit, never the current directory) and the repo-relative
  path of the labels file (config `labels_file`, default `labels.py`).
- Out: a frozen `LabelRegistry` of label name -> description. PR labels are `run-ci-<name>`.
- Refused: each as a located `InputError` (several at once: `InputErrors`) with its own message:
  a missing file; the file or a directory between the root and it being a symlink; a syntax
  error; no module-level `KNOWN_LABELS`; two or more assignments to it (anywhere in the file); a
  value that is not a dict literal; a non-literal key or description; a duplicate key; a name
  not matching `[A-Za-z0-9][A-Za-z0-9_.-]*`; a file nested too deeply for the Python parser
  (CP408, as for a test file).
- The file is never imported: a fork PR controls it.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ci_policy.errors import Diagnostic, InputError, InputErrors
from ci_policy.read.checkout import read_text
from ci_policy.read.names import NAME, NAME_RE

MAX_LABELS_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Label:
    name: str
    description: str
    line: int


@dataclass(frozen=True)
class LabelRegistry:
    path: str
    labels: tuple[Label, ...]

    # Computed once: registrations ask for them once per label of every test file.
    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(label.name for label in self.labels)

    @cached_property
    def _name_set(self) -> frozenset[str]:
        return frozenset(self.names)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._name_set

    def get(self, name: str) -> Label | None:
        for label in self.labels:
            if label.name == name:
                return label
        return None


def load_labels(repo: Path, rel: str = "labels.py") -> LabelRegistry:
    text = read_text(repo, rel, what="labels file", max_bytes=MAX_LABELS_BYTES)
    return parse_labels(text, rel)


def _assigned_names(node: ast.AST) -> list[ast.Name]:
    """Every `Name` bound by an assignment-like statement `node`."""
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    elif isinstance(node, ast.NamedExpr):
        targets = [node.target]
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    out: list[ast.Name] = []
    for target in targets:
        out.extend(n for n in ast.walk(target) if isinstance(n, ast.Name))
    return out


def _columns(text: str) -> Callable[[ast.AST], int]:
    """1-based character column of a node (`col_offset` counts UTF-8 bytes)."""
    lines = re.split(r"\r\n|\r|\n", text)

    def col(node: ast.AST) -> int:
        lineno: int = getattr(node, "lineno", 0)
        offset: int = getattr(node, "col_offset", 0)
        line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
        return len(line.encode("utf-8")[:offset].decode("utf-8", "replace")) + 1

    return col


def parse_labels(text: str, path: str = "labels.py") -> LabelRegistry:
    try:
        # No filename: given one, CPython re-reads that file from the current directory
        # to compute the error column. Warnings (invalid escape sequences) are ignored, so
        # the result does not depend on the warning filters in force.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes on some Python versions
        line, offset = getattr(exc, "lineno", None), getattr(exc, "offset", None)
        if line is None and "\0" in text:
            before = text[: text.index("\0")]
            line, offset = before.count("\n") + 1, len(before) - before.rfind("\n")
        problem = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise InputError(f"labels file {path} is not valid Python: {problem}", path=path,
                         line=line, col=offset, hint="fix the syntax error", code="CP301") from None
    except (RecursionError, MemoryError):  # CPython's parser limits on nesting depth
        raise InputError(f"labels file {path} is too deeply nested for the Python parser", path=path, line=1,
                         col=1, hint="KNOWN_LABELS is a flat dict literal; remove the nesting", code="CP408") from None
    col = _columns(text)

    bindings: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name) == "KNOWN_LABELS" for a in node.names):
                bindings.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler,
                               ast.MatchAs, ast.MatchStar)):
            if node.name == "KNOWN_LABELS":
                bindings.append(node)
        elif isinstance(node, ast.MatchMapping):
            if node.rest == "KNOWN_LABELS":
                bindings.append(node)
        elif any(n.id == "KNOWN_LABELS" for n in _assigned_names(node)):
            # A comprehension has no position of its own; its target has.
            bindings.append(node.target if isinstance(node, ast.comprehension) else node)
    # ast.walk is breadth-first; report the bindings in source order.
    bindings.sort(key=lambda b: (getattr(b, "lineno", 0), getattr(b, "col_offset", 0)))
    if not bindings:
        raise InputError(f"labels file {path} does not define KNOWN_LABELS", path=path, line=1, col=1,
                         code="CP302", hint='add a module-level dict literal: KNOWN_LABELS = {"name": "description"}')
    if len(bindings) > 1:
        lines = ", ".join(str(getattr(b, "lineno", "?")) for b in bindings)
        raise InputError(
            f"KNOWN_LABELS is assigned {len(bindings)} times (lines {lines}); "
            "it must be assigned exactly once",
            path=path, line=getattr(bindings[1], "lineno", None), col=col(bindings[1]), code="CP303",
            hint="merge the definitions into one dict literal",
        )
    node = bindings[0]
    value: ast.expr | None = None
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        value = node.value
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        value = node.value
    if value is None or node not in tree.body:
        raise InputError(
            "KNOWN_LABELS must be a plain module-level assignment `KNOWN_LABELS = {...}`",
            path=path, line=getattr(node, "lineno", None), col=col(node), code="CP304",
            hint="assign the dict literal at module level, not inside a block or by unpacking",
        )
    if not isinstance(value, ast.Dict):
        raise InputError("KNOWN_LABELS must be a dict literal of label name -> description string",
                         path=path, line=value.lineno, col=col(value), code="CP305",
                         hint='write KNOWN_LABELS = {"name": "description", ...}')
    errors: list[Diagnostic] = []
    labels: list[Label] = []
    seen: dict[str, int] = {}
    for key, desc in zip(value.keys, value.values, strict=True):
        if key is None:
            errors.append(Diagnostic("KNOWN_LABELS must not use ** unpacking", path=path,
                                     line=desc.lineno, col=col(desc), code="CP306",
                                      hint="list every label literally"))
            continue
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            errors.append(Diagnostic("KNOWN_LABELS key is not a string literal", path=path,
                                     line=key.lineno, col=col(key), code="CP306",
                                      hint='write the label name as a plain string, e.g. "megatron"'))
            continue
        name = key.value
        kline, kcol = key.lineno, col(key)
        if not (isinstance(desc, ast.Constant) and isinstance(desc.value, str)):
            errors.append(Diagnostic(f"KNOWN_LABELS[{name!r}]: description is not a string literal",
                                     path=path, line=desc.lineno, col=col(desc), code="CP306",
                                      hint="write the description as a plain string"))
            continue
        if name in seen:
            errors.append(Diagnostic(f"KNOWN_LABELS: duplicate label {name!r} (first on line {seen[name]})",
                                     path=path, line=kline, col=kcol, code="CP307",
                                     hint="keep one entry per label"))
            continue
        if not NAME_RE.fullmatch(name):
            errors.append(Diagnostic(
                f"KNOWN_LABELS: {name!r} is not a valid label name (expected {NAME})",
                path=path, line=kline, col=kcol, code="CP308",
                hint="use letters, digits, '_', '.', '-'; PR labels are run-ci-<name>"))
            continue
        seen[name] = key.lineno
        labels.append(Label(name=name, description=desc.value, line=key.lineno))
    if errors:
        raise InputErrors(errors)
    return LabelRegistry(path=path, labels=tuple(labels))
