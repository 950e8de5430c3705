"""The pre-commit hook `ci-policy-lint` (.pre-commit-hooks.yaml), run as a user runs it to try it:
`pre-commit try-repo` on a git repository holding a copy of the example repository.

- The hook's repository is a git repository made here from this project's build inputs
  (pyproject.toml, the package, the hook file...), so the test needs neither this checkout's
  git history nor its uncommitted state.
- Offline and hermetic: pre-commit installs the hook's environment (a virtualenv, then
  `pip install .` of the hook's repository) with pip told to use no index, only a directory of
  wheels made here from the distributions the test environment already has (setuptools to
  build ci-policy, PyYAML, packaging, pathspec, shtab); pre-commit's own home is a temporary directory.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import distribution
from pathlib import Path

import pytest
import yaml
from helpers import EXAMPLE_REPO, clean_env

ROOT = Path(__file__).resolve().parents[1]
PRE_COMMIT = Path(sys.executable).parent / "pre-commit"
HOOK_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "CHANGELOG.md", ".pre-commit-hooks.yaml")
WHEELS = ("setuptools", "pyyaml", "packaging", "pathspec", "shtab")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false",
                    "-c", "init.defaultBranch=main", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def committed_copy(dest: Path, files: dict[Path, Path]) -> Path:
    """A git repository at `dest` holding `files` (destination -> source), all committed."""
    for rel, src in files.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dest / rel, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        else:
            shutil.copy2(src, dest / rel)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "copy")
    return dest


def wheel_of_installed(name: str, out: Path) -> None:
    """A wheel of the installed distribution `name`, made from its installed files."""
    dist = distribution(name)
    info = next(f for f in dist.files or () if f.name == "METADATA").parent.as_posix()
    tag = next(line.split(": ", 1)[1] for line in (dist.read_text("WHEEL") or "").splitlines()
               if line.startswith("Tag: "))
    project = dist.metadata["Name"].replace("-", "_")
    record = []
    with zipfile.ZipFile(out / f"{project}-{dist.version}-{tag}.whl", "w", zipfile.ZIP_DEFLATED) as whl:
        for file in dist.files or ():
            rel = file.as_posix()
            if rel.startswith("..") or "__pycache__" in rel or rel in (
                    f"{info}/RECORD", f"{info}/INSTALLER", f"{info}/REQUESTED", f"{info}/direct_url.json"):
                continue
            data = Path(str(file.locate())).read_bytes()
            whl.writestr(rel, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{rel},sha256={digest},{len(data)}")
        whl.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")


@pytest.fixture(scope="module")
def hook_env(tmp_path_factory) -> tuple[Path, dict]:
    """The hook's repository and the environment pre-commit runs in (offline)."""
    base = tmp_path_factory.mktemp("hook")
    hook_repo = committed_copy(base / "ci-policy", {
        **{Path(name): ROOT / name for name in HOOK_INPUTS}, Path("ci_policy"): ROOT / "ci_policy"})
    wheels = base / "wheels"
    wheels.mkdir()
    for name in WHEELS:
        wheel_of_installed(name, wheels)
    env = clean_env(PRE_COMMIT_HOME=str(base / "pre-commit-home"), PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels),
                    PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1",
                    VIRTUALENV_NO_PERIODIC_UPDATE="1", PRE_COMMIT_COLOR="never", TERM="dumb")
    env.pop("VIRTUAL_ENV", None)
    return hook_repo, env


def try_repo(hook_repo: Path, checkout: Path, env: dict) -> tuple[int, str]:
    proc = subprocess.run([str(PRE_COMMIT), "try-repo", str(hook_repo), "ci-policy-lint", "--all-files",
                           "--color", "never"], cwd=checkout, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.stderr == "", proc.stderr
    return proc.returncode, proc.stdout


def hook_result(stdout: str) -> str:
    """What the hook reported: from its status line on (try-repo prints its configuration before)."""
    return stdout[stdout.index("ci-policy lint..."):]


def test_the_hook_file_declares_the_one_lint_hook():
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook == {
        "id": "ci-policy-lint", "name": "ci-policy lint",
        "description": "Check the ci-policy configuration, the label registry and every test file's registrations "
                       "and gates.",
        "entry": "ci-policy lint", "language": "python", "files": r"^\.github/ci-policy\.yml$|\.py$",
        "pass_filenames": False, "require_serial": True, "minimum_pre_commit_version": "3.5.0"}


@pytest.mark.slow
def test_try_repo_passes_a_clean_checkout_and_fails_a_broken_test_file(hook_env, tmp_path):
    hook_repo, env = hook_env
    checkout = committed_copy(tmp_path / "gpu-repo", {Path("."): EXAMPLE_REPO})
    rc, out = try_repo(hook_repo, checkout, env)
    dots = "." * (79 - len("ci-policy lint") - len("Passed"))
    assert (rc, hook_result(out)) == (0, f"ci-policy lint{dots}Passed\n")

    broken = checkout / "tests" / "e2e" / "test_fsdp_grpo.py"
    broken.write_text(broken.read_text(encoding="utf-8").replace("est_time=", "est_time=-", 1), encoding="utf-8")
    rc, out = try_repo(hook_repo, checkout, env)
    dots = "." * (79 - len("ci-policy lint") - len("Failed"))
    assert (rc, hook_result(out)) == (1, (
        f"ci-policy lint{dots}Failed\n- hook id: ci-policy-lint\n- exit code: 1\n\n"
        "tests/e2e/test_fsdp_grpo.py:9:27: CP223 est-time-invalid: register_cuda_ci: est_time must be a finite "
        "non-negative number of seconds, got -240\n    hint: write e.g. est_time=300\n"
        "tests/e2e/test_fsdp_checkpoint_resume.py:10:1: warning: CP905 registration-disabled: register_cuda_ci for "
        "suite stage-c-4-gpu-h200 is disabled: flaky on H200 driver 580, tracked in #1234\n"
        "ci-policy lint: FAILED: 1 error, 1 warning (17 test files, 17 registrations, 5 gates)\n\n"))
