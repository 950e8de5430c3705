"""The distributions `python -m build` makes (scripts/test.sh also runs `twine check --strict`).

- The sdist carries every file the test suite reads: the whole checkout but its VCS and cache
  files, so its tests run from the unpacked sdist.
- The wheel carries the package (with its PEP 561 `py.typed` marker, its JSON Schemas and the
  template `ci-policy init --workflows` renders), its
  console script and the license, nothing else; its metadata has the classifiers and project URLs
  PyPI shows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Never shipped: version control, caches, local environments, the tests' npm packages (installed
# from the package-lock.json of tests/github_js and tests/mermaid_js) and build output; at the top
# level every hidden entry but the workflows and actions (.github) and the CI entry point (.ci).
LOCAL = {".pytest_cache", ".hypothesis", "__pycache__", "build", "dist", "node_modules"}
SHIPPED_HIDDEN = {".github", ".ci"}
SHIPPED_HIDDEN_FILES = {".pre-commit-hooks.yaml"}  # the pre-commit hook, which its test reads


def checkout_files() -> set[str]:
    found = set()
    for directory, dirs, files in os.walk(ROOT):
        here = Path(directory).relative_to(ROOT)
        dirs[:] = [d for d in dirs if d not in LOCAL and not (
            here == Path(".") and (d.startswith(".") and d not in SHIPPED_HIDDEN or d.endswith(".egg-info")))]
        for name in files:
            rel = (here / name).as_posix()
            if name.endswith((".pyc", ".pyo")) or here == Path(".") and (
                    name.startswith(".") and name not in SHIPPED_HIDDEN_FILES or name in ("PKG-INFO", "setup.cfg")):
                continue
            found.add(rel)
    return found


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # Neither --sdist nor --wheel: the wheel is built from the unpacked sdist, as pip builds one,
    # and not from the checkout, where setuptools would reuse a stale build/ (a module removed
    # since the last build would still be shipped).
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.mark.slow
def test_the_sdist_carries_every_file_of_the_checkout(dist):
    [sdist] = dist.glob("ci_policy-0.1.0.tar.gz")
    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile()}
    generated = {"PKG-INFO", "setup.cfg"} | {m for m in members if m.startswith("ci_policy.egg-info/")}
    assert members - generated == checkout_files()


@pytest.mark.slow
def test_the_wheel_carries_the_typed_package_the_console_script_and_the_license(dist):
    [wheel] = dist.glob("ci_policy-0.1.0-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    info = "ci_policy-0.1.0.dist-info/"
    assert {n.split("/", 1)[0] for n in names} == {"ci_policy", info.rstrip("/")}
    assert sorted(n for n in names if n.startswith(info)) == [
        info + name
        for name in ("METADATA", "RECORD", "WHEEL", "entry_points.txt", "licenses/LICENSE", "top_level.txt")]
    package = {n for n in names if n.startswith("ci_policy/")}
    assert "ci_policy/py.typed" in package
    assert {"ci_policy/schemas/config.schema.json", "ci_policy/schemas/plan.schema.json",
            "ci_policy/templates/ci-policy.yml"} <= package
    assert package == {p.relative_to(ROOT).as_posix() for p in (ROOT / "ci_policy").rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts}
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(info + "METADATA").decode()
    assert "License-Expression: Apache-2.0\n" in metadata and "License-File: LICENSE\n" in metadata
    header = metadata.split("\n\n", 1)[0].splitlines()
    assert [line for line in header if line.startswith("Project-URL: ")] == [
        "Project-URL: Homepage, https://github.com/ci-policy/ci-policy",
        "Project-URL: Source, https://github.com/ci-policy/ci-policy",
        "Project-URL: Issues, https://github.com/ci-policy/ci-policy/issues",
        "Project-URL: Changelog, https://github.com/ci-policy/ci-policy/blob/main/CHANGELOG.md"]
    classifiers = [line.removeprefix("Classifier: ") for line in header if line.startswith("Classifier: ")]
    assert "Typing :: Typed" in classifiers and "Programming Language :: Python :: 3.10" in classifiers
    assert len(classifiers) == 13
