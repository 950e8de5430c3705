"""The setup action (.github/actions/setup/action.yml) and its lock files (requirements/).

- The action's interface is exactly the contract's: inputs `extras` and `python`, outputs
  `python` and `bin-dir`, one bash step whose inputs arrive through `env:` only.
- Its shell step runs for real (bash, with the runner's variables pointed at temporary paths):
  an unknown or malformed extra and a missing interpreter are refused before anything is
  written; with a local wheelhouse of exactly the locked wheels (downloaded once from PyPI, so
  marked slow) and no index, it creates the venv under $RUNNER_TEMP/ci-policy/venv holding
  exactly the locked packages and ci-policy, writes its outputs and prepends its bin directory
  to $GITHUB_PATH.
- The lock files agree with pyproject.toml (`scripts/lock-action.py --check`), and the check
  catches a dependency added to pyproject and a pin without a hash.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.markers import Marker

ROOT = Path(__file__).resolve().parents[1]
ACTION_DIR = ROOT / ".github" / "actions" / "setup"
ACTION = yaml.safe_load((ACTION_DIR / "action.yml").read_text(encoding="utf-8"))
LOCK_SCRIPT = ROOT / "scripts" / "lock-action.py"
REQUIREMENTS = ROOT / "requirements"
EXTRAS = ["github", "tune", "postgres"]
INPUT = re.compile(r"^\$\{\{ inputs\.([a-z-]+) \}\}$")


def test_the_action_declares_the_contract_inputs_and_outputs():
    assert ACTION["runs"]["using"] == "composite"
    assert {name: (spec["required"], spec["default"]) for name, spec in ACTION["inputs"].items()} == {
        "extras": (False, ""), "python": (False, "python3")}
    assert {name: spec["value"] for name, spec in ACTION["outputs"].items()} == {
        "python": "${{ steps.install.outputs.python }}",
        "bin-dir": "${{ steps.install.outputs.bin-dir }}"}
    assert all(spec["description"] for spec in [*ACTION["inputs"].values(), *ACTION["outputs"].values()])


CACHE = "actions/cache@5a3ec84eff668545956fd18022155c47e93e2684"


def step_of(step_id: str) -> dict:
    [step] = [s for s in ACTION["runs"]["steps"] if s.get("id") == step_id]
    return step


def test_the_action_keys_the_cached_wheels_restores_them_and_installs_in_bash_steps_reading_inputs_through_env():
    key, cache, install = ACTION["runs"]["steps"]
    assert (key["id"], key["shell"], install["id"], install["shell"]) == ("wheels-key", "bash", "install", "bash")
    for step in (key, install):
        assert "${{" not in step["run"]
        assert {k: INPUT.match(value).group(1) for k, value in step["env"].items()} == {
            "CI_POLICY_EXTRAS": "extras", "CI_POLICY_PYTHON": "python"}
    assert cache == {"name": "Restore or keep the locked wheels", "if": "steps.wheels-key.outputs.key != ''",
                     "uses": CACHE, "with": {"path": "${{ runner.temp }}/ci-policy-wheels",
                                             "key": "${{ steps.wheels-key.outputs.key }}"}}


def run_key(tmp_path: Path, action_dir: Path, python: str, extras: str = "") -> tuple[int, str]:
    """The key step as the runner runs it; its exit status and `key` output."""
    (tmp_path / "temp").mkdir(exist_ok=True)
    output = tmp_path / "output"
    output.write_text("")
    env = {"PATH": os.environ["PATH"], "RUNNER_TEMP": str(tmp_path / "temp"), "RUNNER_OS": "Linux",
           "GITHUB_OUTPUT": str(output), "GITHUB_ACTION_PATH": str(action_dir), "CI_POLICY_PYTHON": python,
           "CI_POLICY_EXTRAS": extras}
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step_of("wheels-key")["run"]],
                          capture_output=True, text=True, env=env, cwd=tmp_path, check=False, timeout=60)
    return proc.returncode, output.read_text()


def test_the_wheels_key_is_the_lock_files_extras_and_interpreter(tmp_path):
    import hashlib
    import platform

    code, out = run_key(tmp_path, ACTION_DIR, sys.executable)
    locks = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(REQUIREMENTS.glob("*.txt")))).hexdigest()[:32]
    tag = f"{sys.implementation.cache_tag}-{platform.machine()}"
    assert (code, out) == (0, f"key=ci-policy-wheels-Linux-{tag}-{locks}-{hashlib.sha256(b'').hexdigest()[:12]}\n")
    assert run_key(tmp_path, ACTION_DIR, sys.executable, "github")[1] != out
    # A changed lock file is another key: a copy of the action beside changed requirements.
    copy = tmp_path / "copy"
    shutil.copytree(ACTION_DIR, copy / ".github" / "actions" / "setup")
    shutil.copytree(REQUIREMENTS, copy / "requirements")
    assert run_key(tmp_path, copy / ".github" / "actions" / "setup", sys.executable)[1] == out
    with (copy / "requirements" / "base.txt").open("a") as fh:
        fh.write("# changed\n")
    assert run_key(tmp_path, copy / ".github" / "actions" / "setup", sys.executable)[1] not in ("", out)
    # No interpreter: no key (the cache step is skipped), and the install step says why.
    assert run_key(tmp_path, ACTION_DIR, str(tmp_path / "no-such-python")) == (0, "")


def test_the_offered_extras_are_pyprojects_and_each_has_a_lock_file():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert sorted(set(extras) - {"test"}) == sorted(EXTRAS)
    assert sorted(p.stem for p in REQUIREMENTS.glob("*.txt")) == sorted(["base", "build", "release", *EXTRAS])
    assert "(known: github, tune, postgres)" in step_of("install")["run"]


def run_action(tmp_path: Path, inputs: dict[str, str], extra_env: dict[str, str] | None = None
               ) -> tuple[subprocess.CompletedProcess, Path]:
    """The action's install step as the runner runs it: bash -e, inputs through the step's env."""
    step = step_of("install")
    values = {name: inputs.get(name, spec["default"]) for name, spec in ACTION["inputs"].items()}
    runner = tmp_path / "runner"
    (runner / "temp").mkdir(parents=True, exist_ok=True)  # a test may have put restored wheels there
    (runner / "output").write_text("")
    (runner / "path").write_text("")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "RUNNER_TEMP": str(runner / "temp"),
           "GITHUB_OUTPUT": str(runner / "output"), "GITHUB_PATH": str(runner / "path"),
           "GITHUB_ACTION_PATH": str(ACTION_DIR), **(extra_env or {})}
    env |= {key: values[INPUT.match(value).group(1)] for key, value in step["env"].items()}
    # The caller's working directory: a checkout the action must not read from.
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                          capture_output=True, text=True, env=env, cwd=workspace, check=False, timeout=900)
    return proc, runner


@pytest.mark.parametrize("extras, message", [
    ("gpu", "::error title=ci-policy setup::unknown extra 'gpu' in the extras input (known: github, tune, postgres)"),
    ("github, Tune", "::error title=ci-policy setup::unknown extra 'Tune' in the extras input "
                     "(known: github, tune, postgres)"),
    ("github,$(id)", "::error title=ci-policy setup::the extras input must be a comma-separated list of "
                     "github, tune, postgres"),
    # A newline separates extras too: the first unknown one stops everything.
    ("x\n::warning::y", "::error title=ci-policy setup::unknown extra 'x' in the extras input "
                        "(known: github, tune, postgres)"),
    ("github,tune postgres", "::error title=ci-policy setup::the extras input must be a comma-separated list of "
                             "github, tune, postgres"),
])
def test_an_unknown_extra_is_refused_before_anything_is_written(tmp_path, extras, message):
    proc, runner = run_action(tmp_path, {"extras": extras})
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, message + "\n", "")
    assert (runner / "output").read_text() == (runner / "path").read_text() == ""
    assert list((runner / "temp").iterdir()) == []


@pytest.mark.parametrize("extras", ["", "github", " github , tune,postgres ", "postgres,"])
def test_known_extras_pass_validation_and_a_missing_interpreter_is_refused(tmp_path, extras):
    proc, runner = run_action(tmp_path, {"extras": extras, "python": str(tmp_path / "no-such-python")})
    assert proc.returncode == 1
    assert proc.stdout == ("::error title=ci-policy setup::could not create a virtual environment with the python "
                           "input (a Python >= 3.10 with its venv module, e.g. Debian's python3-venv)\n")
    assert (runner / "output").read_text() == (runner / "path").read_text() == ""


# -- a real install from a wheelhouse of the locked wheels ----------------------------------------

def locked_packages(stems: list[str]) -> set[str]:
    """The names pinned by these lock files whose markers hold for this interpreter."""
    names = set()
    for stem in stems:
        for line in (REQUIREMENTS / f"{stem}.txt").read_text(encoding="utf-8").splitlines():
            match = re.match(r"^([A-Za-z0-9._-]+)==\S+(?:\s*;\s*(.*?))?\s*\\$", line)
            if match and (match.group(2) is None or Marker(match.group(2)).evaluate()):
                names.add(match.group(1).lower())
    return names


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    """Every locked wheel for this platform, verified against its hash (from PyPI, once)."""
    directory = tmp_path_factory.mktemp("wheelhouse")
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
            "--require-hashes", "--only-binary", ":all:", "--dest", str(directory)]
    for stem in ["base", "build", *EXTRAS]:
        argv += ["--requirement", str(REQUIREMENTS / f"{stem}.txt")]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return directory


def offline(wheelhouse: Path) -> dict[str, str]:
    # No configuration file, no index: only the wheelhouse, so nothing can come from elsewhere.
    return {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse)}


def installed(python: Path) -> set[str]:
    proc = subprocess.run([str(python), "-I", "-c", "import importlib.metadata as m, json; "
                           "print(json.dumps([d.metadata['Name'] for d in m.distributions()]))"],
                          capture_output=True, text=True, check=True, timeout=60)
    return {name.lower().replace("_", "-") for name in json.loads(proc.stdout)}


@pytest.mark.slow
@pytest.mark.parametrize("extras, stems", [
    ("", ["base", "build"]),
    ("github, tune,postgres", ["base", "build", *EXTRAS]),
])
def test_the_action_installs_ci_policy_into_a_venv_under_runner_temp(tmp_path, wheelhouse, extras, stems):
    proc, runner = run_action(tmp_path, {"extras": extras, "python": sys.executable}, offline(wheelhouse))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    venv = runner / "temp" / "ci-policy" / "venv"
    assert proc.stdout == "ci-policy 0.1.0\n"
    assert (runner / "output").read_text() == f"python={venv}/bin/python\nbin-dir={venv}/bin\n"
    assert (runner / "path").read_text() == f"{venv}/bin\n"
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    # Exactly the locked packages, ci-policy and pip: nothing resolved beyond the lock files.
    assert installed(venv / "bin" / "python") == locked_packages(stems) | {"ci-policy", "pip"}
    version = subprocess.run([str(venv / "bin" / "ci-policy"), "--version"], capture_output=True, text=True,
                             env={"PATH": os.environ["PATH"]}, check=False, timeout=60)
    assert (version.returncode, version.stdout) == (0, "ci-policy 0.1.0\n")
    # The installed package, not the source tree or the caller's working directory.
    where = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", "import ci_policy; print(ci_policy.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path / "workspace", timeout=60)
    assert Path(where.stdout.strip()).is_relative_to(venv)
    # The wheels it installed are kept where the cache step saves them from.
    kept = runner / "temp" / "ci-policy-wheels"
    assert {wheel_name(w) for w in kept.iterdir()} == locked_packages(stems)


def wheel_name(wheel: Path) -> str:
    return wheel.name.split("-")[0].lower().replace("_", "-")


@pytest.mark.slow
def test_restored_wheels_install_with_no_index_and_a_tampered_one_is_refused(tmp_path, wheelhouse):
    """A cache hit: the wheels in $RUNNER_TEMP/ci-policy-wheels, no index and no other wheels at all."""
    no_index = {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1"}
    restored = tmp_path / "runner" / "temp" / "ci-policy-wheels"
    shutil.copytree(wheelhouse, restored)
    proc, runner = run_action(tmp_path, {"python": sys.executable}, no_index)
    assert (proc.returncode, proc.stdout) == (0, "ci-policy 0.1.0\n"), proc.stderr
    assert installed(runner / "temp" / "ci-policy" / "venv" / "bin" / "python") == \
        locked_packages(["base", "build"]) | {"ci-policy", "pip"}
    # A restored wheel whose bytes are not the locked ones is never installed: the locked one is
    # fetched (here from the wheelhouse standing for the index) in its place.
    again = tmp_path / "again"
    shutil.copytree(wheelhouse, again / "runner" / "temp" / "ci-policy-wheels")
    [yaml_wheel] = [w for w in (again / "runner" / "temp" / "ci-policy-wheels").iterdir() if wheel_name(w) == "pyyaml"]
    yaml_wheel.write_bytes(yaml_wheel.read_bytes() + b"\0")
    proc, runner = run_action(again, {"python": sys.executable}, offline(wheelhouse))
    assert (proc.returncode, proc.stdout) == (0, "ci-policy 0.1.0\n"), proc.stderr
    assert yaml_wheel.read_bytes() == (wheelhouse / yaml_wheel.name).read_bytes()
    assert installed(runner / "temp" / "ci-policy" / "venv" / "bin" / "python") == \
        locked_packages(["base", "build"]) | {"ci-policy", "pip"}


# -- the lock files --------------------------------------------------------------------------------

def lock_check(pyproject: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(LOCK_SCRIPT), "--check", "--pyproject", str(pyproject),
                           "--out", str(out)], capture_output=True, text=True, check=False, timeout=120)


def test_the_lock_files_are_in_sync_with_pyproject():
    proc = lock_check(ROOT / "pyproject.toml", REQUIREMENTS)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_the_lock_check_catches_a_new_dependency_and_a_pin_without_a_hash(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    pyproject.write_text(text.replace('    "pathspec>=1.0,<2",\n', '    "pathspec>=1.0,<2",\n    "rich>=13",\n'),
                         encoding="utf-8")
    out = tmp_path / "requirements"
    shutil.copytree(REQUIREMENTS, out)
    postgres = (out / "postgres.txt").read_text(encoding="utf-8")
    version = re.search(r"^psycopg==(\S+) \\\n(?:\s+--hash=\S+(?: \\)?\n)+", postgres, re.MULTILINE)
    (out / "postgres.txt").write_text(postgres.replace(version.group(0), f"psycopg=={version.group(1)}\n"),
                                      encoding="utf-8")
    proc = lock_check(pyproject, out)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.splitlines() == [
        "requirements/base.txt: generated from other requirements than pyproject.toml's "
        "['pyyaml>=6.0', 'packaging>=23.0', 'pathspec>=1.0,<2', 'rich>=13', 'shtab>=1.13']",
        "requirements/base.txt: rich is not pinned",
        f"requirements/postgres.txt: psycopg=={version.group(1)} has no --hash",
        "hint: run python3 scripts/lock-action.py to regenerate them",
    ]
