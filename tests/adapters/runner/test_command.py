"""A stage with a command run by `ci-policy run`: the installed console script on a generated
checkout, running real processes (the runner makes itself a child subreaper)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import clean_env, console_script, root_warning

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="process-tree cleanup relies on /proc and PR_SET_CHILD_SUBREAPER")

# What the command runs: writes where it ran, its stage and what it sees of a secret, then exits
# with the status its first argument names (or sleeps, for the timeout).
WRITE_PY = """\
import json, os, sys, time
with open("out.json", "w") as fh:
    json.dump({"cwd": os.getcwd(), "stage": os.environ.get("CI_POLICY_STAGE"),
               "token": os.environ.get("GITHUB_TOKEN"), "argv": sys.argv[1:]}, fh)
print("kernel tests ran", flush=True)
if sys.argv[1] == "sleep":
    time.sleep(60)
sys.exit(int(sys.argv[1]))
"""


def config(argv: list[str], timeout: float = 30, directory: str = "sgl-kernel") -> str:
    return ("version: 1\ngpu_requires_labels: false\ndiscovery: {roots: [test]}\nstages:\n"
            "  - {name: unit, backend: cpu}\n"
            f"  - {{name: kernel, backend: cpu, command: {json.dumps(argv)}, working_directory: {directory}, "
            f"paths: ['sgl-kernel/**'], est_time: 5, timeout_per_file: {timeout}}}\n"
            "runner: {kill_grace: 1}\n")


def kernel_repo(make_repo, argv: list[str], **kw) -> Path:
    return make_repo({"sgl-kernel/write.py": WRITE_PY, "sgl-kernel/tests/test_k.py": "",
                      "test/test_unit.py": "from ci_policy import register_cpu_ci\nregister_cpu_ci(1, 'unit')\n"},
                     config=config(argv, **kw), labels=None)


def cli(repo: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([console_script(), *args], cwd=repo, env=env or clean_env(), capture_output=True,
                          text=True, timeout=60)


def git(repo: Path, *args: str) -> None:
    env = clean_env(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_AUTHOR_NAME="t",
                    GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def mask(text: str) -> str:
    return re.sub(r"elapsed=\d+\.\ds", "elapsed=<T>", text)


def planned(repo: Path, tmp_path: Path) -> Path:
    """The plan job's directory (`plan --json-out DIR/plan.json --stage-plans DIR/stages`) of a
    change under sgl-kernel/, on the repository made a clean git tree."""
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "planned")
    out = tmp_path / "planned"
    out.mkdir()
    diff = tmp_path / "pr.diff"
    diff.write_bytes(b"M\0sgl-kernel/csrc/x.cu\0")
    proc = cli(repo, "plan", "--event", "pull_request", "--diff", str(diff), "--json-out", str(out / "plan.json"),
               "--stage-plans", str(out / "stages"))
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stdout
    return out


HEADER = ("Enabled 1 test(s) (est total 5s) for kernel shard 0:\n"
          "  kernel (est 5s)\n"
          "ci-policy: kernel runs {argv} in sgl-kernel\n")


@linux_only
@pytest.mark.parametrize("source", ["dir", "whole"])
def test_run_executes_the_stage_command_in_its_directory_with_the_scrubbed_environment(
        make_repo, tmp_path, source):
    repo = kernel_repo(make_repo, [sys.executable, "write.py", "0"])
    out = planned(repo, tmp_path)
    stage_plan = json.loads((out / "stages" / "kernel.json").read_text())
    assert (stage_plan["stages"][0]["command"], stage_plan["run_settings"]["command"]) == (
        [sys.executable, "write.py", "0"], [sys.executable, "write.py", "0"])
    if source == "dir":
        (out / "plan.json").unlink()  # nothing but the stage's own plan: read without the configuration
    timings = tmp_path / "t.jsonl"
    proc = cli(repo, "run", "--plan", str(out if source == "dir" else out / "plan.json"), "--stage", "kernel",
               "--timings-out", str(timings), "--records-out", str(tmp_path / "records"),
               env=clean_env(GITHUB_TOKEN="ghs_secret"))
    assert (proc.returncode, proc.stderr) == (0, root_warning("GITHUB_TOKEN")), proc.stdout
    assert mask(proc.stdout).startswith(
        HEADER.format(argv=f"{sys.executable} write.py 0")
        + "kernel tests ran\n[1/1] kernel PASS elapsed=<T> est=5s attempt=1\n")
    assert proc.stdout.endswith("RESULT: PASS\n")
    assert json.loads((repo / "sgl-kernel" / "out.json").read_text()) == {
        "cwd": str(repo / "sgl-kernel"), "stage": "kernel", "token": None, "argv": ["0"]}
    [record] = [json.loads(line) for line in timings.read_text().splitlines()]
    assert (record["stage"], record["file"], record["status"]) == ("kernel", "kernel", "pass")


@linux_only
def test_the_command_exit_status_fails_the_shard(make_repo, tmp_path):
    repo = kernel_repo(make_repo, [sys.executable, "write.py", "3"])
    proc = cli(repo, "run", "--plan", str(planned(repo, tmp_path)), "--stage", "kernel",
               "--timings-out", str(tmp_path / "t.jsonl"))
    assert proc.returncode == 1
    assert mask(proc.stdout).startswith(
        HEADER.format(argv=f"{sys.executable} write.py 3")
        + "kernel tests ran\n[1/1] kernel FAIL elapsed=<T> est=5s attempt=1\n")


@linux_only
def test_the_command_is_killed_at_its_timeout(make_repo, tmp_path):
    repo = kernel_repo(make_repo, [sys.executable, "write.py", "sleep"], timeout=1)
    began = time.monotonic()
    proc = cli(repo, "run", "--plan", str(planned(repo, tmp_path)), "--stage", "kernel",
               "--timings-out", str(tmp_path / "t.jsonl"))
    assert proc.returncode == 1
    assert mask(proc.stdout).startswith(
        HEADER.format(argv=f"{sys.executable} write.py sleep")
        + "kernel tests ran\n[1/1] kernel TIMEOUT elapsed=<T> est=5s attempt=1 (timeout 1s)")
    assert time.monotonic() - began < 30


def test_a_command_that_cannot_start_is_refused_before_anything_runs(make_repo, tmp_path):
    repo = kernel_repo(make_repo, ["no-such-program-for-ci-policy", "x"])
    proc = cli(repo, "run", "--event", "workflow_dispatch", "--stage", "kernel",
               "--timings-out", str(tmp_path / "t.jsonl"))
    # The shard's header, then the refusal: the command never started.
    assert (proc.returncode, proc.stdout) == (1, "Enabled 1 test(s) (est total 5s) for kernel shard 0:\n"
                                                 "  kernel (est 5s)\n")
    assert proc.stderr == (
        "sgl-kernel: the stage's command cannot start: no-such-program-for-ci-policy is not an executable on the "
        "PATH the command runs with\n    hint: install it in the job's environment (a step before ci-policy run), "
        "or name it by a path relative to the working directory\nci-policy: 1 error\n")


def test_a_symlinked_working_directory_is_refused(make_repo, tmp_path):
    repo = kernel_repo(make_repo, [sys.executable, "write.py", "0"], directory="linked")
    (repo / "linked").symlink_to("sgl-kernel")
    proc = cli(repo, "run", "--event", "workflow_dispatch", "--stage", "kernel",
               "--timings-out", str(tmp_path / "t.jsonl"))
    assert (proc.returncode, proc.stdout) == (1, "Enabled 1 test(s) (est total 5s) for kernel shard 0:\n"
                                                 "  kernel (est 5s)\n")
    assert proc.stderr == ("linked: CP401 symlink-refused: working directory linked is a symlink; ci-policy refuses "
                           "symlinks in a checkout\n    hint: replace the symlink with the real file or directory\n"
                           "ci-policy: 1 error\n")
    assert not (repo / "sgl-kernel" / "out.json").exists()


@linux_only
def test_a_failed_command_is_annotated_without_a_file(make_repo, tmp_path):
    repo = kernel_repo(make_repo, [sys.executable, "write.py", "3"])
    proc = cli(repo, "run", "--event", "workflow_dispatch", "--stage", "kernel", "--format", "github",
               "--timings-out", str(tmp_path / "t.jsonl"), env=clean_env(GITHUB_STEP_SUMMARY=str(tmp_path / "s.md")))
    assert proc.returncode == 1
    # Its result is named by the stage: no file of the checkout for GitHub to point at.
    assert proc.stdout.endswith(
        "::error::kernel fail after 1 attempt(s) (unknown: failure not classified as retriable)\n")
    assert "| kernel |" in (tmp_path / "s.md").read_text()
