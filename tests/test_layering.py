"""Layering: the import-linter contracts in pyproject.toml are the one statement of it.

These tests run `lint-imports` on the real tree (every contract kept), and on copies of
the tree with one forbidden import planted, to show that the contracts would catch it:
a core module importing an adapter, a lower layer importing a higher one, and the core
importing an adapter's third-party dependency (inside a function, where a lazy import
would hide).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LAYERS = ["cli", "app", "adapters", "render", "plan", "model", "gates", "config", "read", "sdk", "errors"]


def lint_imports() -> str:
    script = Path(sys.executable).parent / "lint-imports"
    found = str(script) if script.exists() else shutil.which("lint-imports")
    assert found, "lint-imports (import-linter) is not installed next to the test interpreter"
    return found


def run_lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH: import-linter imports nothing, but finds the package through sys.path.
    return subprocess.run([lint_imports(), "--no-cache"], cwd=root, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)})


def test_the_contracts_are_kept():
    proc = run_lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Contracts: 3 kept, 0 broken." in proc.stdout


def test_the_layers_contract_is_the_package_listing():
    """Every package directory of ci_policy is a layer, in the order the contributing page's
    layout (docs/contributing.md) lists them."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    listed = [line.strip().strip('",') for line in text.split('type = "layers"', 1)[1].split("]", 1)[0]
              .split("[", 1)[1].splitlines() if line.strip()]
    assert listed == [f"ci_policy.{name}" for name in LAYERS]
    packages = sorted(p.name for p in (ROOT / "ci_policy").iterdir()
                      if p.is_dir() and (p / "__init__.py").exists())
    modules = sorted(p.stem for p in (ROOT / "ci_policy").glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert sorted(packages + modules) == sorted(LAYERS)
    page = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    layout = page.split("## Layout", 1)[1].split("\n## ", 1)[0]
    shown = [line.split("`")[1].removeprefix("ci_policy/").rstrip("/").removesuffix(".py")
             for line in layout.splitlines() if line.startswith("- `ci_policy/")]
    assert shown == LAYERS


def planted(tmp_path: Path, module: str, source: str) -> Path:
    copy = tmp_path / "tree"
    shutil.copytree(ROOT / "ci_policy", copy / "ci_policy", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + source, encoding="utf-8")
    return copy


@pytest.mark.slow
@pytest.mark.parametrize("module, source, broken", [
    pytest.param("ci_policy/plan/build.py", "\nfrom ci_policy.adapters.runner import shard\n",
                 "ci_policy.plan.build -> ci_policy.adapters.runner.shard", id="core-imports-adapter"),
    pytest.param("ci_policy/read/markers.py", "\ndef _late():\n    from ci_policy.model import registry\n",
                 "ci_policy.read.markers -> ci_policy.model.registry", id="lower-imports-higher-lazily"),
    pytest.param("ci_policy/cli/list.py", "\nfrom ci_policy.plan import build\n",
                 "ci_policy.cli.list -> ci_policy.plan.build", id="cli-imports-the-planner"),
    pytest.param("ci_policy/cli/tune.py", "\nfrom ci_policy.adapters.tuning import propose\n",
                 "ci_policy.cli.tune -> ci_policy.adapters.tuning.propose", id="cli-imports-an-adapter"),
    pytest.param("ci_policy/model/lint.py", "\ndef _late():\n    import github\n",
                 "ci_policy.model.lint -> github", id="core-imports-pygithub"),
])
def test_a_planted_import_breaks_a_contract(tmp_path, module, source, broken):
    proc = run_lint_imports(planted(tmp_path, module, source))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 broken" in proc.stdout
    assert broken in proc.stdout
