"""The hostile corpus of the suite runner (`tests/hostile/runner/`): findings 2 and 9.

Every case runs the installed `ci-policy run` console script on a generated checkout whose
test files are the programs of `tests/hostile/runner/`, and asserts its exit code, its exact
progress and summary lines, and, from /proc, that no process of the attempt is left: each
program passes the checkout's path in the argv of every process it starts (forks keep it),
so `marked()` finds them all, PID hopper generations included. Both ways of killing are
proved: in a cgroup of its own where this machine delegates cgroup v2 to us, and by
freeze-then-kill (`CI_POLICY_CGROUPS=0`) everywhere.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import clean_env, console_script

from ci_policy.adapters.runner import procs

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="process containment relies on /proc")

CORPUS = Path(__file__).parent / "runner"
REAPING_INIT = Path(__file__).parent.parent / "reaping_init.py"
PLAN_ARGS = ["--event", "workflow_dispatch", "--label", "run-ci-megatron"]


def config(timeout: float, grace: float) -> str:
    return ("version: 1\ndiscovery:\n  roots: [tests]\nstages:\n"
            f"  - {{name: gpu, backend: cuda, runs_on: [h200], timeout_per_file: {timeout}}}\n"
            f"runner: {{kill_grace: {grace}}}\n")


def marked(mark: str) -> list[int]:
    """Live processes whose command line names `mark` (the checkout's path)."""
    needle = mark.encode()
    found = []
    for pid, (_ppid, _pgid, _sid, state) in procs.proc_table().items():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline.split(b"\0") and not procs.dead(state):
            found.append(pid)
    return found


@pytest.fixture(params=["cgroup", "freeze"])
def containment(request) -> dict:
    """The runner's environment for each way of killing; the cgroup case runs only where it applies."""
    if request.param == "freeze":
        return {procs.CGROUPS_ENV: "0"}
    if procs.cgroup_base() is None:
        # Not delegated here: the runner freezes and kills, which the other case proves.
        return {procs.CGROUPS_ENV: "0"}
    return {}


@pytest.fixture
def checkout(make_repo):
    """`checkout(program, ...)`: a checkout whose tests/gpu/test_<program>.py are corpus programs."""
    made: list[Path] = []

    def make(*programs: str, timeout: float = 30, grace: float = 1) -> Path:
        files = {f"tests/gpu/test_{p}.py": (CORPUS / f"{p}.py").read_text() for p in programs}
        files["hostile/hopper.py"] = (CORPUS / "hopper.py").read_text()
        repo = make_repo(files, config=config(timeout, grace))
        (repo / "pids").mkdir()
        made.append(repo)
        return repo

    yield make
    for repo in made:  # whatever happened, nothing of this test stays behind
        procs.freeze_and_kill(lambda table, mark=str(repo): set(marked(mark)) & set(table))


def timings_of(repo: Path) -> Path:
    """Beside the checkout: the runner refuses timing records inside it (a test could forge them)."""
    return repo.parent / f"{repo.name}-timings.jsonl"


def run_argv(repo: Path, *args: str) -> list[str]:
    """`ci-policy run` under a reaping init (`tests/reaping_init.py`), which counts what it left."""
    return [sys.executable, str(REAPING_INIT), str(left_report(repo)), console_script(), "run", "--repo", str(repo),
            "--stage", "gpu", *PLAN_ARGS, "--timings-out", str(timings_of(repo)), *args]


def left_report(repo: Path) -> Path:
    return repo.parent / f"{repo.name}-left"


def left_behind(repo: Path) -> int:
    """How many processes the runner left to its parent, live or as zombies it never reaped: on a
    machine whose PID 1 does not reap, each would hold a pid until the pid space runs out."""
    return int(left_report(repo).read_text())


def mask(text: str) -> str:
    text = re.sub(r"elapsed=\d+\.\ds", "elapsed=<T>", text)
    return re.sub(r"\(killed \d+ leftover", "(killed <N> leftover", text)


def header(*programs: str) -> list[str]:
    return [f"Enabled {len(programs)} test(s) (est total {len(programs)}s) for gpu shard 0:",
            *(f"  tests/gpu/test_{p}.py (est 1s)" for p in programs)]


def gone(mark: str, within: float = 5.0) -> list[int]:
    """The marked processes still alive after `within` seconds (the kill may still be reaping).

    A scan of /proc can miss a hopper generation that lives 2 ms, so a hopper is also judged
    by its own record: it rewrites pids/hops every 25 generations (about every 60 ms), and a
    file that stays the same for half a second belongs to a dead hopper.
    """
    deadline = time.monotonic() + within
    while (left := marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.05)
    hops = Path(mark, "pids", "hops")
    if hops.exists():
        before = hops.stat().st_mtime_ns
        time.sleep(0.5)
        assert hops.stat().st_mtime_ns == before, "the PID hopper is still hopping"
    return left


# -- finding 2: the kill is not escapable ----------------------------------------------------------

@linux_only
@pytest.mark.slow
def test_a_pid_hopper_left_by_a_passing_test_is_killed(checkout, containment):
    repo = checkout("hop_pass")
    proc = subprocess.run(run_argv(repo), env=clean_env(**containment), capture_output=True, text=True,
                          timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")
    lines = mask(proc.stdout).splitlines()
    assert lines == [
        *header("hop_pass"),
        "hopper started",
        "[1/1] tests/gpu/test_hop_pass.py PASS elapsed=<T> est=1s attempt=1 (killed <N> leftover process(es))",
        "",
        "==== ci-policy run: gpu shard 0 ====",
        "PASSED (1):",
        "  tests/gpu/test_hop_pass.py elapsed=<T> est=1s",
        "FAILED (0):",
        "RETRIED (0):",
        "RESULT: PASS",
    ]
    assert gone(str(repo)) == []
    assert left_behind(repo) == 0
    cgroup = (repo / "pids" / "cgroup").read_text()
    if procs.CGROUPS_ENV in containment:
        assert "/ci-policy-" not in cgroup
    else:  # the attempt ran in a cgroup of its own, removed once it was killed
        assert re.fullmatch(r"0::.*/ci-policy-\d+-[0-9a-f]{16}", cgroup)
        base = procs.cgroup_base()
        assert base is not None and not (base / cgroup.rsplit("/", 1)[1]).exists()


@linux_only
@pytest.mark.slow
def test_a_pid_hopper_of_a_timed_out_test_is_killed(checkout, containment):
    repo = checkout("hop_timeout", timeout=1, grace=0.5)
    proc = subprocess.run(run_argv(repo), env=clean_env(**containment), capture_output=True, text=True,
                          timeout=60)
    assert (proc.returncode, proc.stderr) == (1, "")
    assert mask(proc.stdout).splitlines() == [
        *header("hop_timeout"),
        "hopper started",
        "[1/1] tests/gpu/test_hop_timeout.py TIMEOUT elapsed=<T> est=1s attempt=1 (timeout 1s) "
        "(killed <N> leftover process(es))",
        "      timeout: timed out (a timeout is retried once)",
        "",
        "==== ci-policy run: gpu shard 0 ====",
        "PASSED (0):",
        "FAILED (1):",
        "  tests/gpu/test_hop_timeout.py TIMEOUT after 1 attempt(s) (timeout: timed out (a timeout is retried once))",
        "RETRIED (0):",
        "RESULT: FAIL",
    ]
    assert gone(str(repo)) == []
    assert left_behind(repo) == 0
    # The test's time stops at its timeout, not after the 0.5 s kill grace.
    [record] = [json.loads(line) for line in timings_of(repo).read_text().splitlines()]
    assert 1.0 <= record["elapsed"] < 1.4


@linux_only
@pytest.mark.slow
def test_a_test_that_sigkills_the_runner_leaves_nothing_behind(checkout, containment):
    repo = checkout("kill_runner")
    # Under an init that reaps, as every CI machine's does: the orphans of the killed runner
    # are reparented to it, and a PID 1 that never reaps would keep each hop as a zombie.
    proc = subprocess.run(run_argv(repo), env=clean_env(**containment), capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    lines = proc.stdout.splitlines()
    # The test's last line dies with the runner that was echoing it, or just makes it.
    top = header("kill_runner")
    assert lines[:len(top)] == top and lines[len(top):] in ([], ["killing the runner"])
    assert proc.stderr == "ci-policy run: the runner died; the processes of its running test were killed\n"
    assert gone(str(repo)) == []
    # The reaping init adopted and reaped what the killed runner could not: its watchdog, the test.
    assert left_behind(repo) > 0


@linux_only
@pytest.mark.slow
@pytest.mark.parametrize("sig, code, message", [
    (signal.SIGTERM, 143, "ci-policy run: terminated (SIGTERM); the running test and its processes were killed"),
    (signal.SIGINT, 130, "ci-policy run: interrupted; the running test and its processes were killed"),
])
def test_a_second_signal_during_the_kill_grace_finishes_the_kill(checkout, containment, sig, code, message):
    repo = checkout("ignores_term", grace=30)
    runner = subprocess.Popen(run_argv(repo), env=clean_env(**containment), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        lines = [runner.stdout.readline() for _ in range(3)]
        assert lines[-1] == "ready\n"
        # Hopper generations the runner adopted (a subreaper) are reaped while the test runs:
        # unreaped, each would keep its pid.
        time.sleep(1.5)
        table = procs.proc_table()
        [ci_policy_run] = [p for p, (ppid, _g, _s, _state) in table.items() if ppid == runner.pid]
        zombies = [p for p, (ppid, _g, _s, state) in table.items() if ppid == ci_policy_run and state == "Z"]
        hops = int((repo / "pids" / "hops").read_text())
        assert hops >= 50 and len(zombies) < hops / 4, (hops, len(zombies))
        began = time.monotonic()
        runner.send_signal(sig)
        deadline = time.monotonic() + 20
        while not (repo / "pids" / "term").exists():  # the runner's SIGTERM reached the test: the grace runs
            assert time.monotonic() < deadline, "the runner never signalled its test"
            time.sleep(0.01)
        runner.send_signal(sig)
        out, err = runner.communicate(timeout=20)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    # The second signal ended the 30 s grace at once, and the kill finished.
    assert time.monotonic() - began < 15
    assert (runner.returncode, out, err) == (code, "", message + "\n")
    assert gone(str(repo)) == []
    assert left_behind(repo) == 0


@linux_only
def test_a_test_killed_by_a_signal_is_reported_by_its_name(checkout):
    repo = checkout("self_kill")
    proc = subprocess.run(run_argv(repo), env=clean_env(), capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (1, "")
    assert left_behind(repo) == 0
    assert mask(proc.stdout).splitlines() == [
        *header("self_kill"),
        "about to die",
        "[1/1] tests/gpu/test_self_kill.py FAIL elapsed=<T> est=1s attempt=1 (killed by SIGKILL)",
        "      unknown: killed by SIGKILL, not classified as retriable; not retried",
        "",
        "==== ci-policy run: gpu shard 0 ====",
        "PASSED (0):",
        "FAILED (1):",
        "  tests/gpu/test_self_kill.py FAIL after 1 attempt(s) (unknown: killed by SIGKILL, not classified as "
        "retriable)",
        "RETRIED (0):",
        "RESULT: FAIL",
    ]


# -- finding 9: a full disk loses no test -------------------------------------------------------------

@pytest.mark.parametrize("programs, code, result", [
    (("passes",), 0, "PASS"),          # the exit code is the tests', not the disk's
    (("fails", "passes"), 1, "FAIL"),
])
def test_timing_records_on_a_full_disk_are_warnings_and_every_test_runs(checkout, tmp_path, programs, code, result):
    repo = checkout(*programs)
    argv = [*run_argv(repo), "--timings-out", "/dev/full", "--continue-on-error",
            "--records-out", str(tmp_path / "records")]
    proc = subprocess.run(argv, env=clean_env(), capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (code, "")
    assert left_behind(repo) == 0
    warning = ("cannot write the timing record of tests/gpu/test_{}.py attempt 1 to /dev/full: "
               "No space left on device (ENOSPC)")
    runs = {
        "passes": ["ok", "[{i}/{n}] tests/gpu/test_passes.py PASS elapsed=<T> est=1s attempt=1"],
        "fails": ["failing", "[{i}/{n}] tests/gpu/test_fails.py FAIL elapsed=<T> est=1s attempt=1",
                  "      unknown: failure not classified as retriable; not retried"],
    }
    n = len(programs)
    assert mask(proc.stdout).splitlines() == [
        *header(*programs),
        *(line.format(i=i, n=n) for i, p in enumerate(programs, start=1) for line in runs[p]),
        "",
        "==== ci-policy run: gpu shard 0 ====",
        "PASSED (1):",
        "  tests/gpu/test_passes.py elapsed=<T> est=1s",
        f"FAILED ({n - 1}):",
        *(["  tests/gpu/test_fails.py FAIL after 1 attempt(s) (unknown: failure not classified as retriable)"]
          if "fails" in programs else []),
        "RETRIED (0):",
        f"WARNINGS ({n}):",
        *(f"  {warning.format(p)}" for p in programs),
        f"RESULT: {result}",
    ]
    assert "check the paths named in the configuration" not in proc.stdout + proc.stderr


def test_a_metric_record_that_cannot_be_written_is_a_warning(checkout):
    repo = checkout("passes")
    # A records directory that is a character device: every write under it fails.
    argv = [*run_argv(repo), "--records-out", "/dev/full"]
    proc = subprocess.run(argv, env=clean_env(), capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert left_behind(repo) == 0
    assert mask(proc.stdout).splitlines() == [
        *header("passes"),
        "ok",
        "[1/1] tests/gpu/test_passes.py PASS elapsed=<T> est=1s attempt=1",
        "",
        "==== ci-policy run: gpu shard 0 ====",
        "PASSED (1):",
        "  tests/gpu/test_passes.py elapsed=<T> est=1s",
        "FAILED (0):",
        "RETRIED (0):",
        "WARNINGS (1):",
        "  cannot write the metric record of tests/gpu/test_passes.py attempt 1 to "
        "/dev/full/tests__gpu__test_passes.py.json: File exists (EEXIST)",
        "RESULT: PASS",
    ]
