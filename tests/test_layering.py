"""Layering: the core imports only the standard library, PyYAML, packaging and itself.

Two independent checks: the import-linter contract in pyproject.toml (`lint-imports`),
and this file's own reading of the import graph with `ast`, which also sees imports
inside functions and `from . import module`.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ci_policy"
THIRD_PARTY_ALLOWED = frozenset({"yaml", "packaging"})


def lint_imports() -> str:
    script = Path(sys.executable).parent / "lint-imports"
    found = str(script) if script.exists() else shutil.which("lint-imports")
    assert found, "lint-imports (import-linter) is not installed next to the test interpreter"
    return found


def test_import_linter_contract_is_kept():
    proc = subprocess.run([lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout
    assert "The core never imports an adapter or an adapter's dependency KEPT" in proc.stdout


# -- the import graph, read with ast ------------------------------------------------------------

def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def is_adapter(rel: str) -> bool:
    """Entry points and adapter packages, which may import anything (lazily)."""
    p = PurePosixPath(rel)
    return (rel in ("cli.py", "__main__.py", "runner.py", "gates/command.py")
            or p.parts[0] in ("commands", "tuning")
            or (len(p.parts) == 2 and p.parts[0] == "gates" and p.name.startswith("store")))


def core_modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if "__pycache__" in rel or is_adapter(rel):
            continue
        out[module_name(path)] = path
    return out


def all_modules() -> set[str]:
    return {module_name(p) for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}


def imports_of(source: str, module: str, is_package: bool, known: set[str]) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in `source`, at any depth."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            found.append((node.lineno, target))
            # `from . import cli` imports the module ci_policy.cli.
            for alias in node.names:
                if f"{target}.{alias.name}" in known:
                    found.append((node.lineno, f"{target}.{alias.name}"))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in ("__import__", "import_module"):
                arg = node.args[0] if node.args else None
                target = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else "<dynamic>"
                found.append((node.lineno, target))
    return found


def violations(source: str, module: str, is_package: bool, core: set[str], known: set[str]) -> list[str]:
    out = []
    for line, target in imports_of(source, module, is_package, known):
        top = target.split(".")[0]
        if top == "ci_policy":
            # The module itself or its parent packages, or a core module.
            if target not in core and not any(c.startswith(target + ".") for c in core):
                out.append(f"{module}:{line}: imports {target}, which is not a core module")
        elif top == "__future__" or top in sys.stdlib_module_names or top in THIRD_PARTY_ALLOWED:
            continue
        else:
            out.append(f"{module}:{line}: imports {target}")
    return out


def test_the_core_imports_only_stdlib_yaml_packaging_and_core():
    core = core_modules()
    known = all_modules()
    # The modules the contract is about are really in the core set.
    for name in ("ci_policy", "ci_policy.errors", "ci_policy.checkout", "ci_policy.config", "ci_policy.labels",
                 "ci_policy.registry", "ci_policy.discovery", "ci_policy.snapshot", "ci_policy.lint",
                 "ci_policy.render", "ci_policy.markers", "ci_policy.gates", "ci_policy.gates.declarations"):
        assert name in core
    assert "ci_policy.cli" not in core and "ci_policy.__main__" not in core
    problems = []
    for name, path in core.items():
        problems += violations(path.read_text(encoding="utf-8"), name, path.name == "__init__.py",
                               set(core), known)
    assert problems == []


@pytest.mark.parametrize("source, expected", [
    ("import github\n", ["ci_policy.lint:1: imports github"]),
    ("def f():\n    import libcst.matchers\n", ["ci_policy.lint:2: imports libcst.matchers"]),
    ("from psycopg import sql\n", ["ci_policy.lint:1: imports psycopg"]),
    ("from .cli import main\n", ["ci_policy.lint:1: imports ci_policy.cli, which is not a core module"]),
    ("from . import cli\n", ["ci_policy.lint:1: imports ci_policy.cli, which is not a core module"]),
    ("import importlib\nimportlib.import_module('github')\n", ["ci_policy.lint:2: imports github"]),
    ("import os, json, yaml\nfrom packaging.version import Version\nfrom . import errors\nfrom .gates import declarations\n",
     []),
])
def test_the_graph_reader_sees_forbidden_imports(source, expected):
    core = {"ci_policy", "ci_policy.lint", "ci_policy.errors", "ci_policy.gates", "ci_policy.gates.declarations"}
    known = core | {"ci_policy.cli"}
    assert violations(source, "ci_policy.lint", False, core, known) == expected


def test_relative_imports_resolve_from_subpackages():
    known = {"ci_policy", "ci_policy.markers", "ci_policy.gates", "ci_policy.gates.declarations"}
    assert imports_of("from ..markers import scan\nfrom . import declarations\n", "ci_policy.gates.declarations",
                      False, known) == [(1, "ci_policy.markers"), (2, "ci_policy.gates"),
                                        (2, "ci_policy.gates.declarations")]
    assert imports_of("from .declarations import x\n", "ci_policy.gates", True, known) == [
        (1, "ci_policy.gates.declarations")]
