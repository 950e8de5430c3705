"""The package's shape, read from its source with `ast`: no module over `MAX_LINES` lines (but the
partitioner), no import cycle between its modules, no module importing its own package's
`__init__`, and no import inside a function without a comment naming the test that shows why
(the startup cost a command would pay otherwise: tests/cli/test_startup.py and its neighbours),
and every module's docstring stating its contract (`- In:`, `- Out:`, `- Refused:`)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ci_policy"
MAX_LINES = 700
# The one module allowed longer: the shard partitioner, one algorithm with its proofs.
LONGER = {"ci_policy/plan/partition.py"}


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


@cache
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imported(name: str, tree: ast.Module, is_init: bool, known: dict[str, Path] | set[str]) -> set[str]:
    """The package's modules `name` imports, at module level or inside a function alike: `from
    pkg import mod` is the module `mod`; `from pkg import name` (a name defined in the package's
    `__init__`) is the package itself."""
    package = name if is_init else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                source = ".".join([*parts[:len(parts) - node.level + 1], *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in known:
                    out.add(f"{source}.{alias.name}")
                elif source in known:
                    out.add(source)
    out.discard(name)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, parsed(path), path.name == "__init__.py", known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_is_longer_than_the_limit() -> None:
    lengths = {str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
               for path in modules().values()}
    assert lengths and {p: n for p, n in lengths.items() if n > MAX_LINES and p not in LONGER} == {}


def test_the_package_has_no_import_cycle() -> None:
    assert cycles(graph()) == []


def test_a_cycle_would_be_found() -> None:
    edges = graph()
    planted = cycles({**edges, "ci_policy.errors": edges["ci_policy.errors"] | {"ci_policy.plan.build"}})
    assert len(planted) == 1 and {"ci_policy.errors", "ci_policy.plan.build"} <= set(planted[0])
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}) == [["a", "b", "c"]]


def test_an_import_inside_a_function_is_an_edge() -> None:
    known = {"ci_policy", "ci_policy.errors", "ci_policy.plan", "ci_policy.plan.build"}
    tree = ast.parse("def late():\n    from ci_policy.plan import build\n")
    assert imported("ci_policy.errors", tree, False, known) == {"ci_policy.plan.build"}


def own_init_imports(name: str, tree: ast.Module, known: dict[str, Path] | set[str]) -> set[str]:
    return {target for target in imported(name, tree, False, known) if target == name.rpartition(".")[0]}


def test_no_module_imports_its_own_package_init() -> None:
    known = modules()
    assert {name: own_init_imports(name, parsed(path), known) for name, path in known.items()
            if path.name != "__init__.py" and own_init_imports(name, parsed(path), known)} == {}


@pytest.mark.parametrize("source, found", [
    ("from ci_policy.config import codes, fields\n", set()),
    ("from . import codes\n", set()),
    ("def late():\n    from ci_policy.config import codes, parse_config\n", {"ci_policy.config"}),
    ("from . import parse_config\n", {"ci_policy.config"}),
    ("import ci_policy.config\n", {"ci_policy.config"}),
])
def test_an_import_of_the_own_package_init_is_seen(source, found) -> None:
    known = {"ci_policy", "ci_policy.config", "ci_policy.config.codes", "ci_policy.config.fields",
             "ci_policy.config.lint"}
    assert own_init_imports("ci_policy.config.lint", ast.parse(source), known) == found


# An import inside a function stays only where a test shows what importing it at module level
# would cost: the comment lines just above it (or above the run of imports it ends) or on its line
# must name that test function.
TEST_NAME = re.compile(r"\btest_\w+")


@cache
def defined_tests() -> frozenset[str]:
    names = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        names.update(node.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"))
    return frozenset(names)


def function_imports(tree: ast.Module, lines: list[str]) -> list[tuple[int, str]]:
    """(line, the comments that justify it) of each import inside a function: the comment lines
    just above the run of imports it belongs to, and the comments on that run's lines."""
    out = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for block in ast.walk(function):
            for field in ("body", "orelse", "finalbody", "handlers"):
                run: list[ast.stmt] = []
                statements = getattr(block, field, None)
                for statement in statements if isinstance(statements, list) else ():
                    if not isinstance(statement, (ast.Import, ast.ImportFrom)):
                        run = []
                        continue
                    run.append(statement)
                    above = []
                    i = run[0].lineno - 2
                    while i >= 0 and lines[i].strip().startswith("#"):
                        above.append(lines[i])
                        i -= 1
                    on = [lines[j - 1].partition("#")[2] for s in run for j in range(s.lineno, (s.end_lineno or
                                                                                              s.lineno) + 1)]
                    out.append((statement.lineno, " ".join([*reversed(above), *on])))
    return sorted(set(out))


def package_function_imports() -> list[tuple[str, int, str]]:
    return [(str(path.relative_to(ROOT)), line, comment) for path in modules().values()
            for line, comment in function_imports(parsed(path), path.read_text(encoding="utf-8").splitlines())]


def justified(comment: str) -> bool:
    return any(name in defined_tests() for name in TEST_NAME.findall(comment))


def test_every_import_inside_a_function_names_the_test_that_shows_why() -> None:
    imports = package_function_imports()
    assert len(imports) > 10  # the walk finds them: the lazy imports of the command line are among them
    assert [(path, line) for path, line, comment in imports if not justified(comment)] == []


@pytest.mark.parametrize("source, expected", [
    ("def f():\n    import json\n", False),
    ("def f():\n    # tests/x.py::test_no_such_test_anywhere\n    import json\n", False),
    ("# test_help_imports_no_subcommand_module\ndef f():\n    x = 1\n    import json\n", False),
    ("def f():\n    # the startup test: test_help_imports_no_subcommand_module\n    import json\n", True),
    ("def f():\n    import json  # test_help_imports_no_subcommand_module\n", True),
    ("def f():\n    # test_help_imports_no_subcommand_module\n    import json\n    import csv\n", True),
    ("def f():\n    if x:\n        # (tests/cli/test_startup.py::\n        # test_help_imports_no_subcommand_module)\n"
     "        from a import (\n            b,\n        )\n", True),
    ("def f():\n    # test_help_imports_no_subcommand_module\n    import json\n    x = 1\n    import csv\n", False),
])
def test_the_justification_is_the_comment_above_the_run_or_on_its_lines(source, expected) -> None:
    found = function_imports(ast.parse(source), source.splitlines())
    assert found and justified(found[-1][1]) is expected


LAYER_PACKAGES = ("read", "config", "model", "gates", "plan", "render", "adapters", "app", "cli", "sdk")


@pytest.mark.parametrize("package", LAYER_PACKAGES)
def test_each_package_says_in_two_lines_what_it_is_for(package) -> None:
    """Two lines at most, and nothing more unless the `__init__` defines names (`sdk`): then its
    contract's bullets may follow."""
    tree = parsed(PACKAGE / package / "__init__.py")
    docstring = ast.get_docstring(tree)
    assert docstring
    defines = len(tree.body) > 1
    summary = docstring.split("\n- ", 1)[0] if defines else docstring
    assert 1 <= len([line for line in summary.splitlines() if line.strip()]) <= 2, summary


# Each module's docstring is its contract: what it takes, what it gives, and what input it
# refuses and how (or why it refuses nothing). The bullets start lines of their own, so a
# nested bullet or a mention in passing does not stand for one.
CONTRACT = ("- In:", "- Out:", "- Refused:")


def missing_bullets(docstring: str | None) -> list[str]:
    lines = (docstring or "").splitlines()
    return [bullet for bullet in CONTRACT if not any(line.startswith(bullet) for line in lines)]


def test_every_module_states_its_contract() -> None:
    """Every module but the packages' `__init__` (which say in two lines what the package is for)."""
    found = {str(path.relative_to(ROOT)): missing_bullets(ast.get_docstring(parsed(path)))
             for path in modules().values() if path.name != "__init__.py"}
    assert len(found) > 100  # the walk finds the modules
    assert {path: missing for path, missing in found.items() if missing} == {}


@pytest.mark.parametrize("docstring, missing", [
    (None, list(CONTRACT)),
    ("What it is.\n\n- In: a path.\n- Out: its text.\n- Refused: nothing: the caller checked it.", []),
    ("What it is.\n\n- In: a path.\n- Out: its text.\n- Refused (`InputError`): a symlink.", ["- Refused:"]),
    ("What it is.\n\n- In: a path.\n- Out: its text, and\n  - Refused: nested, so no contract.", ["- Refused:"]),
    ("What it is: In: a path; Out: its text; Refused: a symlink.", list(CONTRACT)),
])
def test_a_missing_contract_bullet_is_seen(docstring, missing) -> None:
    assert missing_bullets(docstring) == missing


# -- renderers render ----------------------------------------------------------------------------

# What the planner computes: a renderer given a plan is given its stage jobs too (`app.planning`),
# and never runs the planner itself.
PLANNER = {"ci_policy.plan.jobs": {"stage_jobs"}, "ci_policy.plan.stagejob": {"run_settings"},
           "ci_policy.plan.build": {"build_plan"}, "ci_policy.plan.written": {"plan_document"}}


def planner_calls(tree: ast.Module) -> set[str]:
    return {f"{node.module}.{alias.name}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            for alias in node.names if alias.name in PLANNER.get(node.module or "", ())}


def test_no_renderer_runs_the_planner() -> None:
    found = {name: planner_calls(parsed(path)) for name, path in modules().items()
             if name.startswith("ci_policy.render.")}
    assert {name: calls for name, calls in found.items() if calls} == {}


def test_a_renderer_running_the_planner_is_seen() -> None:
    tree = ast.parse("def f(plan):\n"
                     "    from ci_policy.plan.jobs import stage_jobs\n"
                     "    return stage_jobs(plan, None)\n")
    assert planner_calls(tree) == {"ci_policy.plan.jobs.stage_jobs"}
