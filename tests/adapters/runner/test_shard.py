"""The suite runner (`ci_policy.adapters.runner.shard`): timeouts, process cleanup, live output, records.

`timeout_for` is tested directly. Everything about processes runs the installed
`ci-policy run` console script in a subprocess on a generated checkout, because the
runner makes its own process a child subreaper: the real thing, not a stand-in.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import assert_golden, clean_env, console_script

from ci_policy.adapters.runner.shard import timeout_for
from ci_policy.cli import main
from ci_policy.model.registry import Registration

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="process-tree cleanup relies on /proc and PR_SET_CHILD_SUBREAPER")

CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: gpu, backend: cuda, runs_on: [h200], timeout_per_file: 2}
  - {name: long, backend: cuda, runs_on: [h200], timeout_per_file: 60}
runner: {kill_grace: 1}
"""

PLAN_ARGS = ["--event", "workflow_dispatch", "--label", "run-ci-megatron"]


# -- timeout_for --------------------------------------------------------------------------------

def reg(est_time: float) -> Registration:
    return Registration(file="tests/gpu/test_x.py", line=3, backend="cuda", suite="gpu", est_time=est_time,
                        labels=("megatron",))


@pytest.mark.parametrize("est, stage_timeout, from_est, expected", [
    (30, 1800, None, 1800),            # the stage's timeout_per_file
    (30, None, None, None),            # no timeout at all
    (30, 2.5, None, 2.5),
    (30, 1800, (2, 10), 60),           # factor * est_time, below the stage's timeout
    (3, 1800, (2, 10), 10),            # the floor
    (5, None, (2, 10), 10),            # factor * est_time == floor
    (0, None, (1.5, 0.5), 0.5),        # est_time 0 still gets the floor
    (100, 5, (1.5, 0), 5),             # capped by the stage's own timeout_per_file (finding 5)
    (100, None, (1.5, 0), 150.0),
    (0.75, 2, (2, 1), 1.5),
])
def test_timeout_for(est, stage_timeout, from_est, expected):
    assert timeout_for(reg(est), stage_timeout, from_est) == expected


# -- helpers ------------------------------------------------------------------------------------



def run_argv(stage: str, timings: Path, *args: str) -> list[str]:
    return [console_script(), "run", "--stage", stage, *PLAN_ARGS, "--timings-out", str(timings), *args]


def run(repo: Path, stage: str, timings: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(run_argv(stage, timings, *args), cwd=repo, env=env or clean_env(),
                          capture_output=True, text=True, timeout=60)


def mask(text: str) -> str:
    return re.sub(r"elapsed=\d+\.\ds", "elapsed=<T>", text)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def gpu_test(body: str, *, est: float = 1, suite: str = "gpu") -> str:
    return (f"import os, signal, subprocess, sys, time\nfrom ci_policy import register_cuda_ci\n\n"
            f"register_cuda_ci(est_time={est}, suite={suite!r}, labels=['megatron'])\n\n"
            f"def main():\n" + "".join(f"    {line}\n" for line in body.strip("\n").splitlines())
            + '\n\nif __name__ == "__main__":\n    main()\n')


def proc_state(pid: int) -> str | None:
    """The /proc state letter of `pid`, or None when there is no such process."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return data[data.rfind(")") + 2:].split()[0]


def is_dead(pid: int) -> bool:
    """Gone, or a zombie (dead, waiting for a parent that may never reap it)."""
    return proc_state(pid) in (None, "Z", "X")


def read_pids(pid_dir: Path, names: tuple[str, ...]) -> dict[str, int]:
    return {name: int((pid_dir / name).read_text()) for name in names}


def kill_if_alive(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


# Test-file snippets (inside `main()`) that leave processes behind. Every pid file is
# written atomically, and the test waits for them, so the pids are known before it ends.
PUT = """\
def put(name):
    path = os.path.join(PIDS, name)
    with open(path + ".tmp", "w") as fh:
        fh.write(str(os.getpid()))
    os.replace(path + ".tmp", path)
"""

SPAWN = """\
put("test")
subprocess.Popen([sys.executable, GRANDCHILD, PIDS])        # a grandchild of the runner
child = os.fork()                                             # a double-forked daemon
if child == 0:
    os.setsid()
    if os.fork():
        os._exit(0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)             # only SIGKILL ends it
    put("daemon")
    time.sleep(60)
    os._exit(0)
os.waitpid(child, 0)
while not all(os.path.exists(os.path.join(PIDS, n)) for n in ("grandchild", "daemon")):
    time.sleep(0.01)
print("spawned", flush=True)
"""

GRANDCHILD_PY = """\
import os, sys, time
path = os.path.join(sys.argv[1], "grandchild")
with open(path + ".tmp", "w") as fh:
    fh.write(str(os.getpid()))
os.replace(path + ".tmp", path)
time.sleep(60)
"""


@pytest.fixture
def pids(tmp_path):
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    (tmp_path / "grandchild.py").write_text(GRANDCHILD_PY)
    yield pid_dir
    for pid_file in pid_dir.iterdir():  # never leave a stray sleeper behind, whatever happened
        if pid_file.suffix != ".tmp":
            kill_if_alive(int(pid_file.read_text()))


def spawner(pid_dir: Path, tail: str, est: float = 1) -> str:
    head = f"PIDS = {str(pid_dir)!r}\nGRANDCHILD = {str(pid_dir.parent / 'grandchild.py')!r}\n"
    return head + gpu_test(PUT + SPAWN + tail, est=est)


# -- process cleanup ------------------------------------------------------------------------------

@linux_only
def test_timeout_kills_the_whole_tree_including_a_daemon(make_repo, tmp_path, pids):
    repo = make_repo({"tests/gpu/test_tree.py": spawner(pids, "time.sleep(60)")}, config=CONFIG)
    timings = tmp_path / "t.jsonl"
    began = time.monotonic()
    proc = run(repo, "gpu", timings)
    took = time.monotonic() - began
    assert proc.returncode == 1
    assert_golden("adapters/runner/timeout-kills-the-tree.txt", mask(proc.stdout))
    alive = read_pids(pids, ("test", "grandchild", "daemon"))
    assert {name: is_dead(pid) for name, pid in alive.items()} == {
        "test": True, "grandchild": True, "daemon": True}
    [rec] = records(timings)
    assert rec["status"] == "timeout"
    # The test's time stops at its 2s timeout; the kill grace is not the test's time.
    assert 2.0 <= rec["elapsed"] < 2.5
    # SIGTERM at 2s; the daemon ignores it, so SIGKILL follows after the 1s grace period.
    assert 3.0 <= took < 60


@linux_only
def test_leftovers_of_a_passing_test_are_killed_before_the_next_file(make_repo, tmp_path, pids):
    check = f"""\
PIDS = {str(pids)!r}
alive = []
for name in ("grandchild", "daemon"):
    with open(os.path.join(PIDS, name)) as fh:
        pid = int(fh.read())
    try:
        with open(f"/proc/{{pid}}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = None
    if state not in (None, "Z", "X"):
        alive.append(name)
print("leftovers alive:", alive)
"""
    repo = make_repo({"tests/gpu/test_first.py": spawner(pids, 'print("exiting with 0")', est=2),
                      "tests/gpu/test_second.py": gpu_test(check)}, config=CONFIG)
    timings = tmp_path / "t.jsonl"
    proc = run(repo, "gpu", timings)
    assert proc.returncode == 0, proc.stdout
    assert_golden("adapters/runner/leftovers-killed.txt", mask(proc.stdout))
    assert all(is_dead(pid) for pid in read_pids(pids, ("test", "grandchild", "daemon")).values())


@linux_only
def test_records_survive_a_runner_killed_mid_shard_and_its_test_is_killed(make_repo, tmp_path, pids):
    sleeper = f"""\
PIDS = {str(pids)!r}
with open(os.path.join(PIDS, "sleeper.tmp"), "w") as fh:
    fh.write(str(os.getpid()))
os.replace(os.path.join(PIDS, "sleeper.tmp"), os.path.join(PIDS, "sleeper"))
time.sleep(60)
"""
    repo = make_repo({"tests/long/test_fast.py": gpu_test('print("fast")', est=5, suite="long"),
                      "tests/long/test_sleep.py": gpu_test(sleeper, est=1, suite="long")}, config=CONFIG)
    timings = tmp_path / "t.jsonl"
    log = (tmp_path / "runner.log").open("w")
    (tmp_path / "tmp").mkdir()  # the killed runner cannot remove its temporary directory
    env = clean_env(GITHUB_SHA="feed", TMPDIR=str(tmp_path / "tmp"))
    runner = subprocess.Popen(run_argv("long", timings), cwd=repo, env=env,
                              stdout=log, stderr=subprocess.STDOUT)
    sleeper_pid = None
    try:
        deadline = time.monotonic() + 30
        while not (timings.exists() and timings.read_text().count("\n") >= 1 and (pids / "sleeper").exists()):
            assert runner.poll() is None, (tmp_path / "runner.log").read_text()
            assert time.monotonic() < deadline, "the runner never reached the second file"
            time.sleep(0.02)
        sleeper_pid = int((pids / "sleeper").read_text())
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)
        text = timings.read_text()
        assert text.count("\n") == 1 and text.endswith("}\n")
        [rec] = records(timings)
        assert {**rec, "elapsed": "<T>", "started_at": "<S>"} == {
            "schema": 1, "file": "tests/long/test_fast.py", "stage": "long", "shard": 0, "attempt": 1,
            "status": "pass", "elapsed": "<T>", "est_time": 5, "failure_kind": None, "retriable": None,
            "started_at": "<S>", "commit": "feed", "run_id": None, "run_attempt": None}
        # The runner died with SIGKILL; its watchdog killed the running test, and says so.
        deadline = time.monotonic() + 10
        while not (is_dead(sleeper_pid) and "runner died" in (tmp_path / "runner.log").read_text()):
            assert time.monotonic() < deadline, "the watchdog did not kill the test"
            time.sleep(0.02)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
        log.close()
        if sleeper_pid is not None:
            kill_if_alive(sleeper_pid)
    assert (tmp_path / "runner.log").read_text().endswith(
        "ci-policy run: the runner died; the processes of its running test were killed\n")


# -- live output -------------------------------------------------------------------------------

def test_output_split_inside_a_character_and_without_a_final_newline(make_repo, tmp_path):
    body = """\
os.write(1, b"caf\\xc3")      # the first half of an e-acute ...
time.sleep(0.3)
os.write(1, b"\\xa9 au lait")  # ... the second half, and no newline at the end
"""
    repo = make_repo({"tests/gpu/test_utf8.py": gpu_test(body, est=2),
                      "tests/gpu/test_plain.py": gpu_test('print("x", end="")')}, config=CONFIG)
    summary = tmp_path / "summary.md"
    proc = run(repo, "gpu", tmp_path / "t.jsonl", "--format", "github",
               env=clean_env(GITHUB_STEP_SUMMARY=str(summary)))
    assert proc.returncode == 0
    assert mask(proc.stdout).splitlines()[3:11] == [
        "::group::tests/gpu/test_utf8.py (attempt 1)",
        "café au lait",
        "::endgroup::",
        "[1/2] tests/gpu/test_utf8.py PASS elapsed=<T> est=2s attempt=1",
        "::group::tests/gpu/test_plain.py (attempt 1)",
        "x",
        "::endgroup::",
        "[2/2] tests/gpu/test_plain.py PASS elapsed=<T> est=1s attempt=1",
    ]
    proc = run(repo, "gpu", tmp_path / "t.jsonl")
    assert "\nx\n[2/2] tests/gpu/test_plain.py PASS" in proc.stdout



def test_output_the_runner_cannot_encode_does_not_stall_the_test(make_repo, tmp_path):
    # More than a pipe buffer of non-ASCII output, echoed by a runner whose stdout is ASCII.
    body = 'sys.stdout.buffer.write("caf\\u00e9\\n".encode() * 40000)\nprint("done")'
    repo = make_repo({"tests/gpu/test_latin.py": gpu_test(body)}, config=CONFIG)
    proc = subprocess.run(run_argv("gpu", tmp_path / "t.jsonl"), cwd=repo, env=clean_env(PYTHONIOENCODING="ascii"),
                          capture_output=True, text=True, timeout=60)
    assert proc.stderr == ""
    assert proc.returncode == 0, proc.stdout[-500:]
    lines = proc.stdout.splitlines()
    assert lines.count("caf\\xe9") == 40000
    assert re.fullmatch(r"\[1/1\] tests/gpu/test_latin.py PASS elapsed=\d+\.\ds est=1s attempt=1",
                        lines[lines.index("done") + 1])


@linux_only
def test_output_is_streamed_live(make_repo, tmp_path, pids):
    body = f"""\
with open({str(pids / "slow")!r}, "w") as fh:
    fh.write(str(os.getpid()))
print("first line", flush=True)
time.sleep(30)
"""
    repo = make_repo({"tests/long/test_slow.py": gpu_test(body, suite="long")}, config=CONFIG)
    runner = subprocess.Popen(run_argv("long", tmp_path / "t.jsonl"), cwd=repo, env=clean_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        lines = [runner.stdout.readline() for _ in range(3)]
        assert lines == ["Enabled 1 test(s) (est total 1s) for long shard 0:\n",
                         "  tests/long/test_slow.py (est 1s)\n", "first line\n"]
        assert runner.poll() is None  # seen while the test is still running
    finally:
        runner.send_signal(signal.SIGINT)
        runner.communicate(timeout=15)
    # Interrupted (Ctrl-C), the runner still took its test down on the way out.
    assert is_dead(int((pids / "slow").read_text()))


# -- a test file that disappeared after planning --------------------------------------------------

@pytest.mark.parametrize("replace", ["delete", "symlink", "directory"])
def test_test_file_changed_after_planning(make_repo, tmp_path, monkeypatch, capsys, replace):
    import ci_policy.plan.stagejob as job_module

    marker = tmp_path / "ran"
    repo = make_repo({"tests/gpu/test_gone.py": gpu_test("pass", est=2),
                      "tests/gpu/test_ok.py": gpu_test(f"open({str(marker)!r}, 'w').close()")},
                     config=CONFIG)
    target = repo / "tests" / "gpu" / "test_gone.py"
    real_pick_shard = job_module.pick_shard

    def pick_shard_then_change(*args, **kwargs):
        result = real_pick_shard(*args, **kwargs)  # planned with the file present ...
        target.unlink()                          # ... and then it changes
        if replace == "symlink":
            target.symlink_to(repo / "tests" / "gpu" / "test_ok.py")
        elif replace == "directory":
            target.mkdir()
        return result

    monkeypatch.setattr(job_module, "pick_shard", pick_shard_then_change)
    timings = tmp_path / "t.jsonl"
    rc = main(["run", "--repo", str(repo), "--stage", "gpu", *PLAN_ARGS, "--timings-out", str(timings)])
    out, err = capsys.readouterr()
    assert rc == 1
    assert out == ("Enabled 2 test(s) (est total 3s) for gpu shard 0:\n"
                   "  tests/gpu/test_gone.py (est 2s)\n  tests/gpu/test_ok.py (est 1s)\n")
    if replace == "symlink":
        assert err == ("tests/gpu/test_gone.py: CP401 symlink-refused: test file tests/gpu/test_gone.py is a symlink; "
                       "ci-policy refuses symlinks in a checkout\n"
                       "    hint: replace the symlink with the real file or directory\n"
                       "ci-policy: 1 error\n")
    else:
        assert err == (f"tests/gpu/test_gone.py: test file tests/gpu/test_gone.py does not exist in {repo} "
                       "(deleted after planning?)\n    hint: re-run the plan on this checkout\n"
                       "ci-policy: 1 error\n")
    assert not timings.exists()
    assert not marker.exists()


def test_a_file_name_with_a_newline_is_refused_before_anything_runs(make_repo, tmp_path):
    # A newline in a file name would put `::error::...` on a log line of its own.
    name = "tests/gpu/test_x\n::error::injected.py"
    repo = make_repo({name: gpu_test('print("ran")')}, config=CONFIG)
    proc = run(repo, "gpu", tmp_path / "t.jsonl", "--format", "github",
               env=clean_env(GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md")))
    assert proc.returncode == 1
    assert proc.stdout == ("::error file=tests/gpu/test_x\\n%3A%3Aerror%3A%3Ainjected.py,"
                           "title=CP407 path-control-characters::test file "
                           "'tests/gpu/test_x\\n::error::injected.py' has control characters in its path; "
                           "ci-policy refuses such names (hint: rename the file)\n")
    assert not any(line.startswith("::error::") for line in proc.stdout.splitlines())
    assert "ran" not in proc.stdout
    assert not (tmp_path / "t.jsonl").exists()


# -- the final sweep of a shard ----------------------------------------------------------------------

@linux_only
def test_the_sweep_kills_every_descendant_but_the_spared_ones():
    from ci_policy.adapters.runner.attempt import descendants, sweep

    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    spared = subprocess.Popen(sleeper)
    try:
        spare = frozenset(descendants(os.getpid()))
        left = subprocess.Popen(sleeper)
        assert sweep(spare) == 1
        assert is_dead(left.pid) and not is_dead(spared.pid)
        assert sweep(spare) == 0
        left.wait()  # already reaped by the sweep: only Popen's bookkeeping is left
    finally:
        spared.kill()
        spared.wait()
