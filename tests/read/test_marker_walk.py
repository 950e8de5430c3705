"""The marker scan's walk of a marked statement finds what `ast.walk` found, in the same order.

The scan looks at the names, attributes and imports under each statement holding a marker
line; it used to take them from `ast.walk` over every node. `_mention_candidates` skips the
nodes that cannot be or hold one (contexts, operators, constants). The reference below is the
former walk, kept here: on every statement of every Python file of the repository's corpora
and of generated sources, both give the same nodes (the same objects, in the same order), and
`scan` gives the same calls, errors and main-block flag with either.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_policy.read import markers
from ci_policy.read.markers import ALL_MARKERS, _mention_candidates, scan

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ("tests/data", "examples", "tests/hostile")
DIALECT = frozenset({"register_cpu_ci", "register_cuda_ci", "register_rocm_ci", "register_amd_ci"})
KINDS = (ast.Name, ast.Attribute, ast.Import, ast.ImportFrom)


def reference_walk(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The former walk: every node of the statement, breadth-first."""
    yield from ast.walk(stmt)


def parsed(text: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def assert_same_walk(text: str) -> None:
    tree = parsed(text)
    if tree is None:
        return
    for stmt in tree.body:
        expected = [n for n in reference_walk(stmt) if isinstance(n, KINDS)]
        got = list(_mention_candidates(stmt))
        assert [id(n) for n in got] == [id(n) for n in expected], ast.dump(stmt)[:200]


def scanned(text: str, names: frozenset[str]) -> tuple[object, ...]:
    result = scan(text, "tests/test_x.py", names)
    return ([(c.marker, c.line, c.col, ast.dump(c.call)) for c in result.calls],
            [(c.marker, c.line, c.col) for c in result.undeclared], result.has_main_block, result.errors)


def assert_same_scan(text: str) -> None:
    for names in (markers.BUILTIN_NAMES, DIALECT):
        with mock.patch.object(markers, "_mention_candidates", reference_walk):
            expected = scanned(text, names)
        assert scanned(text, names) == expected


def corpus_files() -> list[Path]:
    return sorted(p for root in CORPORA for p in (ROOT / root).rglob("*.py") if p.is_file() and not p.is_symlink())


def test_the_corpora_hold_marker_files():
    # The comparison below means something only if the corpora hold files with marker errors.
    files = corpus_files()
    assert len(files) > 50
    texts = [p.read_text(encoding="utf-8", errors="surrogateescape") for p in files]
    assert sum(1 for t in texts if scan(t, "t.py").errors) > 5


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_corpus_file_walks_and_scans_as_before(path):
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    assert_same_walk(text)
    assert_same_scan(text)


NAMES = st.sampled_from(["register_cuda_ci", "register_cpu_ci", "register_rocm_ci", "register_amd_ci",
                         "register_ci_gate", "register_npu_ci", "x", "m", "__name__"])
LEAVES = st.one_of(NAMES, st.sampled_from(["1", "'s'", "None", "-2", "...", "b'x'", "'__main__'"]))
EXPRESSIONS = st.recursive(LEAVES, lambda e: st.one_of(
    st.builds("{}({}, k={})".format, e, e, e),
    st.builds("({}).{}".format, e, NAMES),
    st.builds("[{}, *{}]".format, e, e),
    st.builds("({} + {})".format, e, e),
    st.builds("(not {})".format, e),
    st.builds("({} < {} == {})".format, e, e, e),
    st.builds("({} and {})".format, e, e),
    st.builds("(lambda a={}: {})".format, e, e),
    st.builds("[{} for a in {} if {}]".format, e, e, e),
    st.builds('f"{{{}!r:>{{{}}}}}"'.format, e, e),
    st.builds("{{{}: {}, **{}}}".format, e, e, e),
    st.builds("{}[{}:{}]".format, e, e, e),
    st.builds("({} if {} else {})".format, e, e, e),
    st.builds("(w := {})".format, e),
), max_leaves=6)


def _statement(template: str, count: int) -> st.SearchStrategy[str]:
    return st.lists(EXPRESSIONS, min_size=count, max_size=count).map(lambda es: template.format(*es))


STATEMENTS = st.one_of(
    _statement("{}", 1),
    st.builds("{}({})".format, NAMES, EXPRESSIONS),
    _statement("y = {}", 1),
    _statement("y: {} = {}", 2),
    _statement("y += {}", 1),
    _statement("@{}\ndef f(a={}, *, b={}) -> {}:\n    return {}", 5),
    _statement("async def f():\n    await {}\n    async with {} as w:\n        yield {}", 3),
    _statement("class C({}, metaclass={}):\n    z = {}", 3),
    _statement("if __name__ == '__main__':\n    {}", 1),
    _statement("if {}:\n    pass\nelif {}:\n    {}\nelse:\n    {}", 4),
    _statement("with {} as w, {}:\n    {}", 3),
    _statement("try:\n    {}\nexcept {} as e:\n    {}\nfinally:\n    {}", 4),
    _statement("for a in {}:\n    {}\nelse:\n    {}", 3),
    _statement("while {}:\n    del x\n    {}", 2),
    _statement("match {}:\n    case [1, q] if {}:\n        {}\n    case {{'k': v, **rest}}:\n        pass", 3),
    _statement("assert {}, {}", 2),
    _statement("raise {} from {}", 2),
    _statement("def g():\n    global register_cuda_ci\n    from m import register_cuda_ci as r\n    {}", 1),
    st.sampled_from(["import register_cuda_ci as r", "from m import register_cuda_ci, x as register_cpu_ci",
                     "from m import register_amd_ci", "import m.register_ci_gate", "from . import *",
                     "register_cuda_ci = m.register_cuda_ci", "pass"]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(statements=st.lists(STATEMENTS, min_size=1, max_size=6))
def test_generated_sources_walk_and_scan_as_before(statements):
    text = "\n".join(statements) + "\n"
    assert_same_walk(text)
    assert_same_scan(text)


def test_generated_sources_parse_and_mention_markers():
    # The generator is only useful if what it writes parses and reaches the walk.
    @settings(max_examples=100, deadline=None, database=None)
    @given(statements=st.lists(STATEMENTS, min_size=1, max_size=6))
    def count(statements):
        text = "\n".join(statements) + "\n"
        tree = parsed(text)
        seen.append(tree is not None and any(isinstance(n, ast.Name) and n.id in ALL_MARKERS
                                             for n in ast.walk(tree)))
    seen: list[bool] = []
    count()
    assert sum(seen) > len(seen) // 2


def test_a_deeply_nested_statement_is_walked_without_recursion():
    text = "y = " + "[" * 90 + "register_cuda_ci" + "]" * 90 + "\n"
    tree = parsed(text)
    assert tree is not None
    found = [n for n in _mention_candidates(tree.body[0]) if isinstance(n, ast.Name)]
    assert [n.id for n in found] == ["y", "register_cuda_ci"]
