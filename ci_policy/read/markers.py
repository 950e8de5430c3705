"""Finding marker calls in a test file's source, with `ast` only.

- In: the text of one test file, its repo-relative path, and the registration marker
  names of the repository's dialect (default: the built-ins `register_cpu_ci`,
  `register_cuda_ci`, `register_rocm_ci`; `markers.names` adds more).
- Out: a `Scan`: the module-level marker call statements (registration markers and the
  gate marker `register_ci_gate`), whether the file has an `if __name__ == "__main__":`
  block that calls something, and grammar errors.
- Refused: as errors of the `Scan` (located diagnostics, never silent skips): a syntax error; a
  marker called anywhere but as a module-level expression statement (inside a function, an `if`,
  an assignment); a marker called as an attribute (`ci_register.register_cuda_ci(...)`) or
  through an alias (`import register_cuda_ci as reg`); a marker referenced without being called;
  a marker imported but never used for a registration; a module-level call statement of a name
  shaped like a marker (`register_<word>_ci`) that the dialect does not declare.
- `literal()` evaluates an argument only when it is a literal; nothing is executed.
- Silent: the parser's warnings (`SyntaxWarning`) are neither errors nor shown; shown,
  they would echo a line of the file to stderr.
- Shared with the est_time rewrite (`adapters.tuning.apply`): `module_level_calls` (which
  calls count) and `bind_nodes` (arguments bound to parameters, not evaluated).
"""

from __future__ import annotations

import ast
import bisect
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ci_policy.errors import CiPolicyError, Diagnostic
from ci_policy.read.names import did_you_mean
from ci_policy.read.strictjson import holds_lone_surrogate

REGISTRATION_MARKERS = {
    "register_cpu_ci": "cpu",
    "register_cuda_ci": "cuda",
    "register_rocm_ci": "rocm",
}
MARKER_OF_BACKEND = {backend: marker for marker, backend in REGISTRATION_MARKERS.items()}
GATE_MARKER = "register_ci_gate"
ALL_MARKERS = frozenset(REGISTRATION_MARKERS) | {GATE_MARKER}
BUILTIN_NAMES = frozenset(REGISTRATION_MARKERS)
# What a registration marker name looks like, declared or not.
MARKER_NAME_RE = re.compile(r"register_[A-Za-z0-9_]+_ci")
# The parameters of every registration marker; a dialect may add keyword-only ones.
POSITIONAL = ("est_time", "suite")
KEYWORD_ONLY = ("labels", "nightly", "disabled")
BUILTIN_PARAMETERS = POSITIONAL + KEYWORD_ONLY


class NotLiteral(CiPolicyError):
    """An argument that is not a literal; `bind` reports it as CP215."""


def literal(node: ast.AST) -> Any:
    """The value of a literal expression: constants, signed numbers, lists, tuples, dicts."""
    if isinstance(node, ast.Constant) and not isinstance(node.value, bytes) and node.value is not Ellipsis:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = node.operand
        if (isinstance(operand, ast.Constant) and isinstance(operand.value, (int, float))
                and not isinstance(operand.value, bool)):
            return -operand.value if isinstance(node.op, ast.USub) else operand.value
        raise NotLiteral
    if isinstance(node, ast.List):
        return [literal(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        keys = [k for k in node.keys if k is not None]
        if len(keys) != len(node.keys):  # `**mapping`
            raise NotLiteral
        try:
            return {literal(k): literal(v) for k, v in zip(keys, node.values, strict=True)}
        except TypeError:  # an unhashable key such as {[1]: 2} has no value
            raise NotLiteral from None
    raise NotLiteral


def _show(node: ast.AST) -> str:
    """Source text of `node` for a message; never raises on pathological nesting."""
    try:
        return ast.unparse(node)
    except RecursionError:
        return "<expression too deeply nested to show>"


@dataclass(frozen=True)
class MarkerCall:
    marker: str
    call: ast.Call
    line: int
    col: int


@dataclass
class Scan:
    path: str
    calls: list[MarkerCall] = field(default_factory=list)
    # Module-level calls of names shaped like a marker that the dialect does not declare.
    undeclared: list[MarkerCall] = field(default_factory=list)
    has_main_block: bool = False
    errors: list[Diagnostic] = field(default_factory=list)

    def error(self, node: ast.AST, code: str, message: str, hint: str | None = None) -> None:
        col_offset: int | None = getattr(node, "col_offset", None)
        self.errors.append(Diagnostic(message, path=self.path, line=getattr(node, "lineno", None),
                                      col=col_offset + 1 if col_offset is not None else None,
                                      hint=hint, code=code))


def _is_main_guard(test: ast.AST) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    pair = [test.left, test.comparators[0]]
    return (any(isinstance(n, ast.Name) and n.id == "__name__" for n in pair)
            and any(isinstance(n, ast.Constant) and n.value == "__main__" for n in pair))


def parse_source(text: str, path: str) -> ast.Module | Diagnostic:
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark, which Python itself accepts
        text = text[1:]
    try:
        # Python's display of a SyntaxWarning (`0x1for`, an invalid escape) echoes the offending
        # source line to stderr, where the Actions runner reads workflow commands: a checkout
        # would choose a line of the job's log. Warnings are not errors here; none is shown.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text, filename=path)
    except SyntaxError as exc:
        # Columns are 1-based; CPython reports offset 0 or None when it has no column.
        return Diagnostic(f"{path} is not valid Python: {exc.msg}", path=path, line=exc.lineno,
                          col=exc.offset if exc.offset and exc.offset > 0 else None,
                          hint="fix the syntax error", code="CP206")
    except (RecursionError, MemoryError):  # CPython's parser limits on nesting depth
        return Diagnostic(f"{path} is too deeply nested for the Python parser", path=path, line=1,
                          col=1, hint="split the deeply nested expression", code="CP408")
    except ValueError as exc:  # e.g. NUL bytes in the source
        return Diagnostic(f"{path} cannot be parsed: {exc}", path=path, line=1, col=1, code="CP206")


def mentions_marker(text: str, names: frozenset[str] = BUILTIN_NAMES) -> bool:
    """Cheap pre-check: only files naming a marker (or a name shaped like one) need an AST walk."""
    return "register_" in text and (GATE_MARKER in text or any(name in text for name in names)
                                    or MARKER_NAME_RE.search(text) is not None)


def module_level_calls(tree: ast.Module, markers: frozenset[str] = ALL_MARKERS) -> list[MarkerCall]:
    """The marker calls that count: module-level expression statements calling a bare marker name."""
    return [MarkerCall(stmt.value.func.id, stmt.value, stmt.lineno, stmt.col_offset + 1)
            for stmt in tree.body
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id in markers]


def _undeclared_calls(tree: ast.Module, markers: frozenset[str]) -> list[MarkerCall]:
    """Module-level call statements of a bare name shaped like a marker that is not in `markers`."""
    shaped = {stmt.value.func.id for stmt in tree.body
              if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
              and isinstance(stmt.value.func, ast.Name) and MARKER_NAME_RE.fullmatch(stmt.value.func.id)}
    return module_level_calls(tree, frozenset(shaped - markers)) if shaped - markers else []


def scan(text: str, path: str, names: frozenset[str] = BUILTIN_NAMES, *,
         tree: ast.Module | Diagnostic | None = None) -> Scan:
    """Scan one file; `names` are the registration markers of the dialect (see the module doc).

    `tree`: what `parse_source(text, path)` gave, when the caller parsed the file already
    (each file is parsed once per command).
    """
    markers = frozenset(names) | {GATE_MARKER}
    result = Scan(path=path)
    if tree is None:
        tree = parse_source(text, path)
    if isinstance(tree, Diagnostic):
        result.errors.append(tree)
        return result

    for stmt in tree.body:
        if isinstance(stmt, ast.If) and _is_main_guard(stmt.test):
            if any(isinstance(n, ast.Call) for s in stmt.body for n in ast.walk(s)):
                result.has_main_block = True

    if not mentions_marker(text, names):
        return result

    result.calls.extend(module_level_calls(tree, markers))
    for mc in _undeclared_calls(tree, markers):
        result.undeclared.append(mc)
        result.error(mc.call, "CP207", f"{mc.marker}(...) looks like a registration marker but the configuration "
                     f"does not declare it (configured: {', '.join(sorted(names))}), so ci-policy reads no "
                     "registration from it",
                     hint=f"declare it: markers: {{names: {{{mc.marker}: BACKEND}}}} in the configuration, "
                     "with BACKEND one of its backends")
    statement_calls = {id(mc.call.func) for mc in result.calls}

    used = {c.marker for c in result.calls}
    for node in _nodes_that_may_mention(tree, text, result, used, markers):
        if isinstance(node, ast.Name) and node.id in markers and id(node) not in statement_calls:
            result.error(node, *_misplaced(tree, node, node.id),
                         hint=f"write `{node.id}(...)` as a statement at module level, outside any block")
        elif isinstance(node, ast.Attribute) and node.attr in markers:
            result.error(node, "CP203", f"{_show(node)} is not a registration: ci-policy reads only calls "
                         f"to the bare name {node.attr}",
                         hint=f"`from ci_policy import {node.attr}` and call `{node.attr}(...)` at module level")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                base = alias.name.rsplit(".", 1)[-1]
                if base in markers and alias.asname and alias.asname != base:
                    result.error(node, "CP204", f"{base} is imported as {alias.asname!r}; ci-policy reads only calls "
                                 f"to the bare name {base}", hint=f"import it without 'as {alias.asname}'")
                elif base in markers and isinstance(node, ast.ImportFrom) and base not in used:
                    result.error(node, "CP205", f"{base} is imported but this file has no module-level "
                                 f"{base}(...) statement, so ci-policy reads no "
                                 f"{'gate' if base == GATE_MARKER else 'registration'} from it",
                                 hint=f"call {base}(...) at module level, or remove the import")
    return result


def _marked_lines(text: str, markers: frozenset[str]) -> list[int]:
    """The numbers of the lines holding `register_` and a marker name, counted as Python
    counts lines: at \n, \r\n and \r only (str.splitlines also splits at \f, \x1c,
    U+2028, ...), so they index statement line numbers exactly. Only the lines around an
    occurrence of `register_` are looked at, and the breaks before them counted."""
    out: list[int] = []
    pos = text.find("register_")
    line, counted = 1, 0  # `counted`: a line start whose number is `line`
    while pos >= 0:
        start = max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1
        line += text.count("\n", counted, start) + text.count("\r", counted, start) - text.count("\r\n", counted, start)
        counted = start
        ends = [e for e in (text.find("\n", pos), text.find("\r", pos)) if e >= 0]
        end = min(ends) if ends else len(text)
        if any(name in text[start:end] for name in markers):
            out.append(line)
        pos = text.find("register_", end)
    return out


def _start_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return decorators[0].lineno if decorators else stmt.lineno  # decorators stand above the statement


def _nodes_that_may_mention(tree: ast.Module, text: str, result: Scan, used: set[str],
                            markers: frozenset[str] = ALL_MARKERS) -> Iterator[ast.AST]:
    """The names, attributes and imports of the top-level statements whose source lines name a marker.

    A mention of a marker (a name, an attribute, an import) is an identifier, so it is
    spelled out on the statement's own lines; statements without such text need no walk.
    This keeps scanning proportional to the marker lines, not to the whole test file: the
    statements holding a marked line are found by bisection over the statements' lines.
    A module-level rebinding of a marker (`register_cpu_ci = _load("ci").register_cpu_ci`)
    is how some repositories import their markers: it is not walked when the file calls
    that marker at module level, and reported as unused (CP205) when it does not.
    """
    body = tree.body
    picked: set[int] = set()
    for line in _marked_lines(text, markers):
        # The statements are in order and their lines never go back; statements that share
        # a line (`a; b`) all hold it.
        i = bisect.bisect_right(body, line, key=_start_line) - 1
        while i >= 0 and (getattr(body[i], "end_lineno", None) or line) >= line:
            picked.add(i)
            i -= 1
    for i in sorted(picked):
        stmt = body[i]
        bound = _rebound_markers(stmt, markers)
        if bound:
            for name in sorted(set(bound) - used):
                kind = "gate" if name == GATE_MARKER else "registration"
                result.error(stmt, "CP205", f"{name} is bound here but this file has no module-level "
                             f"{name}(...) statement, so ci-policy reads no {kind} from it",
                             hint=f"call {name}(...) at module level, or remove the binding")
            continue
        yield from _mention_candidates(stmt)


# Nodes that neither name anything nor hold a node that does: `ast.walk` visits a context
# (`Load`) under every name and an operator under every operation; skipping them and
# yielding only the kinds the scan looks at halves the nodes handled per marked statement.
_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.Constant)
_CANDIDATES = (ast.Name, ast.Attribute, ast.Import, ast.ImportFrom)


def _mention_candidates(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The names, attributes and imports under `stmt`, in `ast.walk`'s order (breadth-first,
    fields in declaration order), so errors come out in the same order; no recursion, so a
    deeply nested expression cannot exhaust the stack."""
    queue: list[ast.AST] = [stmt]
    for node in queue:  # appended to while iterated: a breadth-first queue
        if isinstance(node, _CANDIDATES):
            yield node
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                if not isinstance(value, _LEAVES):
                    queue.append(value)
            elif isinstance(value, list):
                queue.extend(item for item in value if isinstance(item, ast.AST) and not isinstance(item, _LEAVES))


def _rebound_markers(stmt: ast.stmt, markers: frozenset[str]) -> tuple[str, ...]:
    """The marker names a module-level assignment binds, when every target is one; else ()."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets = [stmt.target]
    else:
        return ()
    names = [t.id for t in targets if isinstance(t, ast.Name) and t.id in markers]
    return tuple(names) if len(names) == len(targets) else ()


def _misplaced(tree: ast.Module, target: ast.Name, name: str) -> tuple[str, str]:
    """(code, message) for a marker name that is not a module-level call statement."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.func is target:
            return "CP201", (f"{name}(...) here is not a registration: markers are read only as "
                    "module-level expression statements (not inside a function, class, "
                    "`if`, `with`, or an assignment)")
    return "CP202", (f"{name} is referenced without being called as a module-level statement, "
                     "so ci-policy cannot read it")


@dataclass(frozen=True)
class Arguments:
    """A marker call's arguments, bound to parameter names; nodes not yet evaluated."""

    values: dict[str, Any]
    nodes: dict[str, ast.expr]


@dataclass(frozen=True)
class Binding:
    """A call's argument nodes bound to parameter names the way Python binds them.

    `problems`: (node, code, message, hint, parameter) for each grammar error, in source order;
    binding stops at the first surplus positional argument. `starred`: the call passes
    `*args` or `**kwargs` anywhere, so its arguments are not all written out.
    """

    nodes: dict[str, ast.expr]
    problems: tuple[tuple[ast.AST, str, str, str | None, str | None], ...]
    starred: bool


def bind_nodes(call: ast.Call, name: str, positional: tuple[str, ...],
               keyword_only: tuple[str, ...]) -> Binding:
    """Bind `call`'s arguments to `positional` + `keyword_only` without evaluating them."""
    known = positional + keyword_only
    nodes: dict[str, ast.expr] = {}
    problems: list[tuple[ast.AST, str, str, str | None, str | None]] = []
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            problems.append((arg, "CP210", f"{name}: *args is not allowed; write every argument literally", None, None))
            continue
        if i >= len(positional):
            if positional:
                problems.append((arg, "CP211", f"{name} takes at most {len(positional)} positional arguments "
                                 f"({', '.join(positional)}), got {len(call.args)}",
                                 f"pass {', '.join(keyword_only)} by keyword", None))
            else:
                problems.append((arg, "CP211", f"{name} takes keyword arguments only, got {len(call.args)} positional",
                                 f"write {name}({known[0]}=...)", None))
            break
        nodes[positional[i]] = arg
    for kw in call.keywords:
        if kw.arg is None:
            problems.append((kw, "CP210", f"{name}: **kwargs is not allowed; write every argument literally",
                             None, None))
            continue
        if kw.arg not in known:
            suggestion = did_you_mean(kw.arg, known)
            declare = ("" if name == GATE_MARKER else "; to accept another, declare it in the configuration: "
                       f"markers: {{extra_arguments: {{{kw.arg}: string}}}}")
            problems.append((kw, "CP212", f"{name}: unknown argument {kw.arg!r}{suggestion}",
                             f"accepted arguments: {', '.join(known)}{declare}", kw.arg))
            continue
        if kw.arg in nodes:
            problems.append((kw, "CP213", f"{name}: argument {kw.arg!r} is given twice (positionally and by keyword)",
                             "pass it once", kw.arg))
            continue
        nodes[kw.arg] = kw.value
    starred = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
    return Binding(nodes=nodes, problems=tuple(problems), starred=starred)


def bind(scan_: Scan, mc: MarkerCall, positional: tuple[str, ...], keyword_only: tuple[str, ...],
         required: tuple[str, ...]) -> Arguments | None:
    """Bind a call's arguments like Python would, reporting each grammar error."""
    call, name = mc.call, mc.marker
    binding = bind_nodes(call, name, positional, keyword_only)
    for node, code, message, hint, _parameter in binding.problems:
        scan_.error(node, code, message, hint=hint)
    nodes = binding.nodes
    ok = not binding.problems
    if not ok:
        return None
    for req in required:
        if req not in nodes:
            scan_.error(call, "CP214", f"{name}: missing required argument {req!r}")
            ok = False
    values: dict[str, Any] = {}
    for key, node in nodes.items():
        try:
            values[key] = literal(node)
            if holds_lone_surrogate(values[key]):
                # Valid Python, but no UTF-8 output (a report, the plan, a log line) can carry it.
                scan_.error(node, "CP219", f"{name}: {key} holds a lone surrogate escape (\\ud800 to \\udfff), "
                            "which no output can carry", hint="write the character itself, or leave it out")
                ok = False
        except NotLiteral:
            scan_.error(node, "CP215", f"{name}: {key} must be a literal, not `{_show(node)}` "
                        "(ci-policy reads it from source without running the file)",
                        hint=f"write the value of {key} itself (a number, string, True/False, "
                        "None, or a list or dict of those)")
            ok = False
    return Arguments(values=values, nodes=nodes) if ok else None
