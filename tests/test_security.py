"""The hostile checkout: ci-policy reads a fork PR's files as data and nothing else.

Every file a checkout controls that Python might import or execute (labels.py, conftest.py,
sitecustomize.py, usercustomize.py, a .pth file, a `yaml.py`, a `packaging/` and a `pathspec/` shadowing
ci_policy's dependencies, every test file) tries side effects at import: write a sentinel
file outside the checkout, spawn processes with os.system and subprocess. `lint` and
`registry` run with the checkout as the current directory, through the console script,
`python -m ci_policy`, and an audit-hooked driver that records what the process did.

Symlinks anywhere ci-policy would read are refused, end to end through `lint`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import clean_env, console_script

from ci_policy.cli import main

PYTHON = sys.executable




# -- the hostile checkout -------------------------------------------------------------------

def payload(sentinels: Path, tag: str) -> str:
    """Module-level code that leaves a trace outside the checkout if it ever runs."""
    base = str(sentinels / tag)
    return textwrap.dedent(f"""

        import os as _os, subprocess as _subprocess
        open({base + ".open"!r}, "w").write("pwned")
        _os.system({"touch " + shlex.quote(base + ".system")!r})
        _subprocess.run(["touch", {base + ".subprocess"!r}])
        """)


def make_hostile(checkout: Path, sentinels: Path) -> list[str]:
    """Turn a copy of the example into a hostile checkout; returns the files touched."""
    sentinels.mkdir()
    touched = []

    def append(rel: str, tag: str) -> None:
        path = checkout / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        old = path.read_text() if path.exists() else ""
        path.write_text(old + payload(sentinels, tag))
        touched.append(rel)

    append("labels.py", "labels")
    append("conftest.py", "conftest")
    append("tests/fast/conftest.py", "fast-conftest")
    append("sitecustomize.py", "sitecustomize")
    append("usercustomize.py", "usercustomize")
    append("yaml.py", "yaml")
    append("packaging/__init__.py", "packaging")
    append("packaging/version.py", "packaging-version")
    append("packaging/specifiers.py", "packaging-specifiers")
    append("pathspec/__init__.py", "pathspec")
    append("minirl/__init__.py", "minirl")
    # Appended after the `if __name__ == "__main__":` block: still module level, and the
    # registrations keep their line numbers.
    for path in sorted((checkout / "tests").rglob("test_*.py")):
        rel = path.relative_to(checkout).as_posix()
        append(rel, rel.replace("/", "_"))
    pth = checkout / "hostile.pth"
    pth.write_text(f"import os; os.system({'touch ' + shlex.quote(str(sentinels / 'pth.system'))!r})\n")
    touched.append("hostile.pth")
    return touched


@pytest.fixture
def hostile(example_repo, tmp_path) -> tuple[Path, Path]:
    sentinels = tmp_path / "sentinels"
    make_hostile(example_repo, sentinels)
    return example_repo, sentinels


def test_the_payload_really_fires_when_imported(tmp_path):
    """The sentinels are a working detector: importing a hostile file does leave all three traces."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    sentinels = tmp_path / "sentinels"
    sentinels.mkdir()
    (checkout / "yaml.py").write_text(payload(sentinels, "yaml"))
    proc = subprocess.run([PYTHON, "-c", "import yaml"], cwd=checkout, env=clean_env(), capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in sentinels.iterdir()) == ["yaml.open", "yaml.subprocess", "yaml.system"]


def pristine_outputs(example_repo_copy: Path) -> dict[str, str]:
    """What lint and registry print for the example before it was made hostile."""
    out = {}
    for name, argv in (("lint", ["lint"]), ("registry", ["registry", "--format", "json"])):
        proc = subprocess.run([console_script(), *argv, "--repo", str(example_repo_copy)], capture_output=True,
                              text=True, env=clean_env())
        assert proc.returncode == 0, proc.stderr
        out[name] = proc.stdout
    return out


@pytest.fixture
def expected(tmp_path) -> dict[str, str]:
    pristine = tmp_path / "pristine"
    shutil.copytree(Path(__file__).resolve().parents[1] / "examples" / "gpu-repo", pristine,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    out = pristine_outputs(pristine)
    assert out["lint"].endswith("ci-policy lint: OK: 0 errors, 1 warning (17 test files, 18 registrations, 5 gates)\n")
    return out


@pytest.mark.parametrize("entry", ["console script", "python -m ci_policy"])
def test_hostile_checkout_runs_nothing(hostile, expected, entry):
    checkout, sentinels = hostile
    prefix = [console_script()] if entry == "console script" else [PYTHON, "-m", "ci_policy"]
    for name, argv in (("lint", ["lint"]), ("registry", ["registry", "--format", "json"])):
        for repo in (str(checkout), "."):
            proc = subprocess.run([*prefix, *argv, "--repo", repo], cwd=checkout, capture_output=True, text=True,
                                  env=clean_env())
            assert "Traceback" not in proc.stderr, proc.stderr
            assert sorted(p.name for p in sentinels.iterdir()) == [], f"{entry} {name} ran checkout code"
            assert (proc.returncode, proc.stdout, proc.stderr) == (0, expected[name], "")


DRIVER = r'''
"""Run ci-policy lint and registry in-process under an audit hook; dump what happened."""
import json
import os
import sys

checkout, out_path = sys.argv[1], sys.argv[2]
SPAWN = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
         "os.forkpty", "pty.spawn")
events = []


def _path(value):
    if isinstance(value, (str, bytes)):
        return os.fsdecode(value)
    if hasattr(value, "__fspath__"):
        return os.fsdecode(os.fspath(value))
    return None  # a file descriptor


def hook(event, args):
    if event == "import":
        events.append(["import", str(args[0]), None if args[1] is None else _path(args[1])])
    elif event == "exec":
        events.append(["exec", getattr(args[0], "co_filename", None)])
    elif event == "open":
        events.append(["open", _path(args[0]), args[1], args[2]])
    elif event in SPAWN or event.startswith(("os.spawn", "os.exec", "os.posix_spawn")):
        events.append([event, repr(args)[:500]])


sys.addaudithook(hook)

from ci_policy.cli import main  # noqa: E402

codes = [
    main(["lint", "--repo", checkout]),
    main(["registry", "--repo", checkout, "--format", "json"]),
    main(["lint", "--repo", "."]),
    main(["registry", "--repo", "."]),
]
with open(out_path, "w") as fh:
    json.dump({"codes": codes, "cwd": os.getcwd(), "events": events}, fh)
'''


def in_checkout(path: str | None, checkout: Path, cwd: str) -> bool:
    if not path or path.startswith("<"):
        return False
    full = Path(path) if os.path.isabs(path) else Path(cwd) / path
    real = Path(os.path.realpath(full))
    return real == checkout or checkout in real.parents


def test_audit_hook_sees_no_execution_no_spawn_and_only_reads(hostile, tmp_path):
    checkout, sentinels = hostile
    checkout = Path(os.path.realpath(checkout))
    driver_dir = tmp_path / "driver"
    driver_dir.mkdir()
    (driver_dir / "driver.py").write_text(DRIVER)
    report_path = tmp_path / "audit.json"
    proc = subprocess.run([PYTHON, str(driver_dir / "driver.py"), str(checkout), str(report_path)],
                          cwd=checkout, capture_output=True, text=True, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in sentinels.iterdir()) == []

    report = json.loads(report_path.read_text())
    assert report["codes"] == [0, 0, 0, 0]
    cwd = report["cwd"]
    events = report["events"]
    # The hook really saw the run: modules executed, and the checkout's files opened.
    assert any(e[0] == "exec" for e in events)
    opened = {os.path.realpath(e[1] if os.path.isabs(e[1]) else os.path.join(cwd, e[1]))
              for e in events if e[0] == "open" and e[1]}
    for rel in ("labels.py", ".github/ci-policy.yml", "tests/e2e/test_fsdp_grpo.py", "tests/fast/test_kl.py"):
        assert str(checkout / rel) in opened, f"{rel} was never read"

    imported_from_checkout = [e for e in events if e[0] == "import" and in_checkout(e[2], checkout, cwd)]
    assert imported_from_checkout == []
    executed_from_checkout = [e for e in events if e[0] == "exec" and in_checkout(e[1], checkout, cwd)]
    assert executed_from_checkout == []
    # The one process allowed: git listing the checkout (discovery and content ids), as
    # `adapters.git` runs it: an argument list, fsmonitor off, nothing from the checkout run.
    listings = tuple(f"('git', ['git', '-C', {where!r}, '-c', 'core.fsmonitor=false', '-c', "
                     "'core.untrackedCache=false', '--no-optional-locks', 'ls-files', "
                     for where in (str(checkout), "."))
    spawned = [e for e in events if e[0] not in ("import", "exec", "open")
               and not (e[0] == "subprocess.Popen" and e[1].startswith(listings))]
    assert spawned == []

    writes = []
    for _, path, mode, flags in (e for e in events if e[0] == "open"):
        if not in_checkout(path, checkout, cwd):
            continue
        read_only = (flags is None or (flags & os.O_ACCMODE) == os.O_RDONLY
                     and not flags & (os.O_CREAT | os.O_TRUNC | os.O_APPEND))
        if isinstance(mode, str):
            read_only = read_only and not set(mode) & set("wax+")
        if not read_only:
            writes.append((path, mode, flags))
    assert writes == []


def test_audit_driver_detects_an_import_from_the_checkout(tmp_path):
    """The same analysis flags a run that does import checkout code (the hook is not blind)."""
    checkout = Path(os.path.realpath(tmp_path)) / "checkout"
    checkout.mkdir()
    (checkout / "yaml.py").write_text("VALUE = 1\n")
    driver = DRIVER.replace("from ci_policy.cli import main  # noqa: E402",
                            "sys.path.insert(0, checkout)\nimport yaml\nmain = lambda argv: 0")
    (tmp_path / "driver.py").write_text(driver)
    report_path = tmp_path / "audit.json"
    proc = subprocess.run([PYTHON, str(tmp_path / "driver.py"), str(checkout), str(report_path)], cwd=checkout,
                          capture_output=True, text=True, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    events = json.loads(report_path.read_text())["events"]
    assert [e for e in events if e[0] == "exec" and in_checkout(e[1], checkout, str(checkout))] == [
        ["exec", str(checkout / "yaml.py")]]


# -- symlinks, refused end to end -------------------------------------------------------------

HINT = "    hint: replace the symlink with the real file or directory\n"
DISABLED = ("tests/e2e/test_fsdp_checkpoint_resume.py:10:1: warning: CP905 registration-disabled: "
            "register_cuda_ci for suite "
            "stage-c-4-gpu-h200 is disabled: flaky on H200 driver 580, tracked in #1234\n")


def lint(repo: Path, capsys) -> tuple[int, str, str]:
    rc = main(["lint", "--repo", str(repo)])
    out, err = capsys.readouterr()
    return rc, out, err


def registry_refuses(repo: Path, capsys, first_error: str) -> None:
    assert main(["registry", "--repo", str(repo), "--format", "json"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(first_error)


def outside_dir(tmp_path: Path) -> Path:
    """A directory outside the checkout holding plausible, valid content."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "labels.py").write_text('KNOWN_LABELS = {"megatron": "m", "fsdp": "f", "sglang": "s", '
                                       '"session": "s", "rocm": "r", "long": "l"}\n')
    (outside / "test_outside.py").write_text(
        'from ci_policy import register_cuda_ci\n\nregister_cuda_ci(60, "stage-b-1-gpu-h200", labels=["fsdp"])\n'
        '\nif __name__ == "__main__":\n    main()\n')
    return outside


def test_symlinked_labels_file(example_repo, capsys):
    labels = example_repo / "labels.py"
    labels.unlink()
    labels.symlink_to("/etc/passwd")
    expected = ("labels.py: CP401 symlink-refused: labels file labels.py is a symlink; ci-policy "
                "refuses symlinks in a checkout\n"
                + HINT + "ci-policy lint: FAILED: 1 error, 0 warnings\n")
    assert lint(example_repo, capsys) == (1, expected, "")
    registry_refuses(example_repo, capsys, expected.splitlines()[0])


def test_symlinked_parent_directory_of_the_labels_file(example_repo, tmp_path, capsys):
    outside = outside_dir(tmp_path)
    config = example_repo / ".github" / "ci-policy.yml"
    config.write_text(config.read_text().replace("labels_file: labels.py", "labels_file: conf/labels.py"))
    (example_repo / "conf").symlink_to(outside)
    expected = ("conf/labels.py: CP401 symlink-refused: labels file conf/labels.py: directory conf is a symlink; "
                "ci-policy refuses symlinks in a checkout\n" + HINT + "ci-policy lint: FAILED: 1 error, 0 warnings\n")
    assert lint(example_repo, capsys) == (1, expected, "")
    # The same layout with a real directory is fine: only the symlink is refused.
    (example_repo / "conf").unlink()
    (example_repo / "conf").mkdir()
    shutil.copy(outside / "labels.py", example_repo / "conf" / "labels.py")
    rc, out, _ = lint(example_repo, capsys)
    assert rc == 0, out


def test_symlinked_configuration(example_repo, tmp_path, capsys):
    config = example_repo / ".github" / "ci-policy.yml"
    real = tmp_path / "policy.yml"
    real.write_text(config.read_text())
    config.unlink()
    config.symlink_to(real)
    assert lint(example_repo, capsys) == (1, (
        ".github/ci-policy.yml: CP401 symlink-refused: configuration file .github/ci-policy.yml is a symlink; "
        "ci-policy refuses symlinks in a checkout\n" + HINT + "ci-policy lint: FAILED: 1 error, 0 warnings\n"), "")
    config.unlink()
    dot_github = tmp_path / "dot-github"
    shutil.move(str(example_repo / ".github"), str(dot_github))
    shutil.copy(real, dot_github / "ci-policy.yml")
    (example_repo / ".github").symlink_to(dot_github)
    assert lint(example_repo, capsys) == (1, (
        ".github/ci-policy.yml: CP401 symlink-refused: configuration file .github/ci-policy.yml: "
        "directory .github is a symlink; "
        "ci-policy refuses symlinks in a checkout\n" + HINT + "ci-policy lint: FAILED: 1 error, 0 warnings\n"), "")


UNUSED_WITHOUT_E2E = """\
.github/ci-policy.yml:16: warning: CP901 stage-without-tests: stage stage-b-1-gpu-h200 has no registered test files
    hint: register tests with suite='stage-b-1-gpu-h200' or remove the stage
.github/ci-policy.yml:21: warning: CP901 stage-without-tests: stage stage-c-4-gpu-h200 has no registered test files
    hint: register tests with suite='stage-c-4-gpu-h200' or remove the stage
.github/ci-policy.yml:26: warning: CP901 stage-without-tests: stage stage-c-4-gpu-mi350 has no registered test files
    hint: register tests with suite='stage-c-4-gpu-mi350' or remove the stage
.github/ci-policy.yml:32: warning: CP901 stage-without-tests: stage stage-d-8-gpu-gb200 has no registered test files
    hint: register tests with suite='stage-d-8-gpu-gb200' or remove the stage
labels.py:8: warning: CP902 label-unused: label 'megatron' is not used by any test
    hint: run-ci-megatron selects nothing; use it in a registration or remove it
labels.py:9: warning: CP902 label-unused: label 'fsdp' is not used by any test
    hint: run-ci-fsdp selects nothing; use it in a registration or remove it
labels.py:10: warning: CP902 label-unused: label 'sglang' is not used by any test
    hint: run-ci-sglang selects nothing; use it in a registration or remove it
labels.py:11: warning: CP902 label-unused: label 'session' is not used by any test
    hint: run-ci-session selects nothing; use it in a registration or remove it
labels.py:12: warning: CP902 label-unused: label 'rocm' is not used by any test
    hint: run-ci-rocm selects nothing; use it in a registration or remove it
labels.py:13: warning: CP902 label-unused: label 'long' is not used by any test
    hint: run-ci-long selects nothing; use it in a registration or remove it
"""


def test_symlinked_discovery_root(example_repo, tmp_path, capsys):
    e2e = example_repo / "tests" / "e2e"
    shutil.move(str(e2e), str(tmp_path / "e2e"))
    e2e.symlink_to(tmp_path / "e2e")
    error = ("tests/e2e: CP401 symlink-refused: discovery root tests/e2e is a symlink; ci-policy "
             "refuses symlinks in a checkout\n")
    assert lint(example_repo, capsys) == (1, error + HINT + UNUSED_WITHOUT_E2E + (
        "ci-policy lint: FAILED: 1 error, 10 warnings (4 test files, 4 registrations, 0 gates)\n"), "")
    registry_refuses(example_repo, capsys, error)


def test_symlinked_parent_of_a_discovery_root(example_repo, tmp_path, capsys):
    tests = example_repo / "tests"
    shutil.move(str(tests), str(tmp_path / "tests"))
    tests.symlink_to(tmp_path / "tests")
    rc, out, err = lint(example_repo, capsys)
    assert (rc, err) == (1, "")
    assert out.startswith(
        "tests/e2e: CP401 symlink-refused: discovery root tests/e2e: directory tests is a symlink; "
        "ci-policy refuses symlinks in a checkout\n"
        + HINT +
        "tests/fast: CP401 symlink-refused: discovery root tests/fast: directory tests is a symlink; "
        "ci-policy refuses symlinks in a checkout\n"
        + HINT)
    assert out.endswith("ci-policy lint: FAILED: 2 errors, 11 warnings (0 test files, 0 registrations, 0 gates)\n")


def test_symlinked_test_directory_and_test_file(example_repo, tmp_path, capsys):
    outside = outside_dir(tmp_path)
    e2e = example_repo / "tests" / "e2e"
    (e2e / "linked").symlink_to(outside)
    (e2e / "test_passwd.py").symlink_to("/etc/passwd")
    (e2e / "test_outside.py").symlink_to(outside / "test_outside.py")
    rc, out, err = lint(example_repo, capsys)
    assert (rc, err) == (1, "")
    assert out == (
        "tests/e2e/linked: CP401 symlink-refused: directory tests/e2e/linked is a symlink; "
        "ci-policy refuses symlinks in a checkout\n"
        + HINT +
        "tests/e2e/test_outside.py: CP401 symlink-refused: test file tests/e2e/test_outside.py is a symlink; "
        "ci-policy refuses symlinks in a checkout\n" + HINT +
        "tests/e2e/test_passwd.py: CP401 symlink-refused: test file tests/e2e/test_passwd.py is a symlink; "
        "ci-policy refuses symlinks in a checkout\n" + HINT + DISABLED +
        "ci-policy lint: FAILED: 3 errors, 1 warning (17 test files, 18 registrations, 5 gates)\n")
    assert "root:" not in out  # /etc/passwd was never read
    registry_refuses(example_repo, capsys,
                     "tests/e2e/linked: CP401 symlink-refused: directory tests/e2e/linked is a "
                     "symlink; ci-policy refuses symlinks")


def test_each_symlinked_test_file_alone_fails_lint(example_repo, capsys):
    (example_repo / "tests" / "fast" / "test_passwd.py").symlink_to("/etc/passwd")
    assert lint(example_repo, capsys) == (1, (
        "tests/fast/test_passwd.py: CP401 symlink-refused: test file tests/fast/test_passwd.py is a symlink; "
        "ci-policy refuses symlinks in a checkout\n" + HINT + DISABLED +
        "ci-policy lint: FAILED: 1 error, 1 warning (17 test files, 18 registrations, 5 gates)\n"), "")
