"""`ci-policy run`: one shard executed on this runner, end to end.

Every test builds a checkout with `make_repo`, writes tiny test files, and runs the
installed `ci-policy` console script in a subprocess; the test files are real Python
programs run by the real runner. Elapsed times are masked as `<T>` where output is
compared exactly.
"""

from __future__ import annotations

import calendar
import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from helpers import assert_golden, clean_env, console_script

CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: unit, backend: cpu, timeout_per_file: 30}
  - {name: gpu, backend: cuda, runs_on: [h200], timeout_per_file: 2}
  - {name: multi, backend: cuda, runs_on: [h200], partitions: 3, timeout_per_file: 2}
  - {name: other, backend: cuda, runs_on: [h200], timeout_per_file: 2}
  - {name: ext, backend: cuda, external: true}
runner: {kill_grace: 1}
"""

PLAN_ARGS = ["--event", "workflow_dispatch", "--label", "run-ci-megatron"]




def cli(repo: Path, *args: str, env: dict | None = None, cwd: Path | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([console_script(), *args], cwd=cwd or repo, env=env or clean_env(),
                          capture_output=True, text=True, timeout=timeout)


def run(repo: Path, *args: str, stage: str = "gpu", timings: Path | None = None,
        **kw) -> subprocess.CompletedProcess:
    extra = ["--timings-out", str(timings)] if timings is not None else []
    return cli(repo, "run", "--stage", stage, *PLAN_ARGS, *extra, *args, **kw)


def mask(text: str) -> str:
    text = re.sub(r"elapsed=\d+\.\ds", "elapsed=<T>", text)
    # The Markdown table's Elapsed column (after Attempts): a duration such as `3s`, `<1s` or `1m5s`.
    return re.sub(r"(\| \d+ \| )(?:<1s|(?:\d+[dhm])*\d+s)( \|)", r"\1<T>\2", text)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def gpu_test(body: str, *, est: float = 1, suite: str = "gpu", labels: str = '["megatron"]',
             extra: str = "") -> str:
    """A `runner: python` test file: a registration, `main()` and the __main__ block."""
    return (f"import os, sys, time\nfrom ci_policy import register_cuda_ci\n\n"
            f"register_cuda_ci(est_time={est}, suite={suite!r}, labels={labels}{extra})\n\n"
            f"def main():\n" + "".join(f"    {line}\n" for line in body.strip("\n").splitlines())
            + '\n\nif __name__ == "__main__":\n    main()\n')


@pytest.fixture
def repo_with(make_repo, tmp_path):
    def make(files: dict[str, str], config: str = CONFIG) -> Path:
        return make_repo(files, config=config)
    return make


@pytest.fixture
def state(tmp_path) -> Path:
    """A directory outside the checkout for markers the test files leave."""
    path = tmp_path / "state"
    path.mkdir()
    return path


# -- pass, fail, the shard header ---------------------------------------------------------

def test_passing_shard_prints_plan_progress_and_summary(repo_with, tmp_path):
    repo = repo_with({
        "tests/gpu/test_one.py": gpu_test('print("hello from one")', est=30),
        "tests/gpu/test_two.py": gpu_test('print("hello from two")', est=5),
        "tests/gpu/test_off.py": gpu_test("pass", extra=', disabled="broken on H200, see #12"'),
        "tests/gpu/test_fsdp.py": gpu_test("pass", labels='["fsdp"]'),
    })
    timings = tmp_path / "t.jsonl"
    proc = run(repo, timings=timings)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert_golden("cli/run/passing-shard.txt", mask(proc.stdout))
    assert [(r["file"], r["status"], r["attempt"]) for r in records(timings)] == [
        ("tests/gpu/test_one.py", "pass", 1), ("tests/gpu/test_two.py", "pass", 1)]


def test_failing_file_fails_the_shard(repo_with, tmp_path):
    repo = repo_with({"tests/gpu/test_bad.py": gpu_test('print("about to fail")\nsys.exit(3)')})
    timings = tmp_path / "t.jsonl"
    proc = run(repo, timings=timings)
    assert proc.returncode == 1
    assert_golden("cli/run/failing-file.txt", mask(proc.stdout))
    [rec] = records(timings)
    assert (rec["status"], rec["failure_kind"], rec["retriable"]) == ("fail", "unknown", False)


def test_each_file_runs_from_the_repo_root_in_its_own_session_without_a_shell(repo_with, tmp_path):
    body = """\
print("cwd", os.getcwd())
print("argv", sys.argv)
print("group leader", os.getpgrp() == os.getpid(), "session leader", os.getsid(0) == os.getpid())
print("env", os.environ["CI_POLICY_STAGE"], os.environ["CI_POLICY_SHARD"], os.environ["CI_POLICY_ATTEMPT"])
"""
    # A shell would split this name at the space and run `touch INJECTED`.
    name = "tests/gpu/test_odd name;touch INJECTED.py"
    repo = repo_with({name: gpu_test(body)})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run(repo, "--repo", str(repo), timings=tmp_path / "t.jsonl", cwd=elsewhere)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert f"cwd {repo}" in lines or f"cwd {repo.resolve()}" in lines
    assert f"argv [{name!r}]" in lines
    assert "group leader True session leader True" in lines
    assert "env gpu 0 1" in lines
    assert not list(tmp_path.rglob("INJECTED*"))


def test_the_pytest_runner_of_a_cpu_stage(repo_with, tmp_path):
    head = "from ci_policy import register_cpu_ci\n\nregister_cpu_ci(est_time={est}, suite='unit')\n\n"
    repo = repo_with({
        # No __main__ block: `python FILE` would run nothing and exit 0.
        "tests/cpu/test_good.py": head.format(est=2) + "def test_add():\n    assert 1 + 1 == 2\n",
        "tests/cpu/test_wrong.py": head.format(est=1) + "def test_sub():\n    assert 2 - 1 == 0\n",
    })
    proc = run(repo, "--continue-on-error", stage="unit", timings=tmp_path / "t.jsonl")
    assert proc.returncode == 1
    out = proc.stdout
    assert "test session starts" in out
    assert re.search(r"^tests/cpu/test_good.py \.\s+\[100%\]$", out, re.M)
    assert re.search(r"^tests/cpu/test_wrong.py F\s+\[100%\]$", out, re.M)
    assert ">       assert 2 - 1 == 0" in out
    assert re.search(r"^=+ 1 passed in \d+\.\d+s =+$", out, re.M)
    assert re.search(r"^=+ 1 failed in \d+\.\d+s =+$", out, re.M)
    assert re.search(r"^\[1/2\] tests/cpu/test_good.py PASS elapsed=\d+\.\ds est=2s attempt=1$", out, re.M)
    assert re.search(r"^\[2/2\] tests/cpu/test_wrong.py FAIL elapsed=\d+\.\ds est=1s attempt=1$", out, re.M)


# -- retries ---------------------------------------------------------------------------------

def flaky_server(state: Path) -> str:
    """Fails like an infra problem on its first attempt, passes afterwards (marker file)."""
    return gpu_test(f"""\
marker = {str(state / "started")!r}
with open({str(state / "attempts")!r}, "a") as fh:
    fh.write(os.environ["CI_POLICY_ATTEMPT"] + "\\n")
if not os.path.exists(marker):
    open(marker, "w").close()
    print("Server failed to start")
    sys.exit(1)
print("server up")
""")


def attempts(state: Path) -> list[str]:
    return (state / "attempts").read_text().split()


def test_infra_failure_is_retried_and_passes(repo_with, tmp_path, state):
    repo = repo_with({"tests/gpu/test_server.py": flaky_server(state)})
    timings = tmp_path / "t.jsonl"
    proc = run(repo, "--max-attempts", "3", timings=timings)
    assert proc.returncode == 0, proc.stdout
    assert_golden("cli/run/infra-failure-retried.txt", mask(proc.stdout))
    assert attempts(state) == ["1", "2"]
    assert [(r["attempt"], r["status"], r["failure_kind"], r["retriable"]) for r in records(timings)] == [
        (1, "fail", "infra", True), (2, "pass", None, None)]


def test_retry_is_off_by_default(repo_with, tmp_path, state):
    repo = repo_with({"tests/gpu/test_server.py": flaky_server(state)})
    proc = run(repo, timings=tmp_path / "t.jsonl")
    assert proc.returncode == 1
    assert attempts(state) == ["1"]
    assert "      infra: output matches infra pattern 'Server failed to start'\n" in proc.stdout
    assert "retrying" not in proc.stdout


def test_retry_wait_is_honoured(repo_with, tmp_path, state):
    repo = repo_with({"tests/gpu/test_server.py": flaky_server(state)})
    start = time.monotonic()
    proc = run(repo, "--max-attempts", "2", "--retry-wait", "1.5", timings=tmp_path / "t.jsonl")
    assert proc.returncode == 0
    assert time.monotonic() - start >= 1.5
    assert "      infra: output matches infra pattern 'Server failed to start'; retrying in 1.5s\n" in proc.stdout


def test_never_retriable_failure_is_not_retried(repo_with, tmp_path, state):
    # Would pass on a second attempt: only the classification stops the retry.
    body = f"""\
marker = {str(state / "started")!r}
with open({str(state / "attempts")!r}, "a") as fh:
    fh.write(os.environ["CI_POLICY_ATTEMPT"] + "\\n")
if not os.path.exists(marker):
    open(marker, "w").close()
    from os import no_such_name
"""
    repo = repo_with({"tests/gpu/test_imp.py": gpu_test(body)})
    timings = tmp_path / "t.jsonl"
    proc = run(repo, "--max-attempts", "3", timings=timings)
    assert proc.returncode == 1
    assert attempts(state) == ["1"]
    assert "ImportError: cannot import name 'no_such_name' from 'os'" in proc.stdout
    assert ("      code: output matches never-retry pattern 'ImportError'; not retried\n"
            in proc.stdout)
    assert ("  tests/gpu/test_imp.py FAIL after 1 attempt(s) "
            "(code: output matches never-retry pattern 'ImportError')\n") in proc.stdout
    assert "RETRIED (0):\n" in proc.stdout
    [rec] = records(timings)
    assert (rec["status"], rec["failure_kind"], rec["retriable"]) == ("fail", "code", False)


def test_reported_code_kind_overrides_an_infra_match(repo_with, tmp_path, state):
    body = f"""\
with open({str(state / "attempts")!r}, "a") as fh:
    fh.write(os.environ["CI_POLICY_ATTEMPT"] + "\\n")
if os.environ["CI_POLICY_ATTEMPT"] == "1":
    with open(os.environ["CI_POLICY_FAILURE_KIND_FILE"], "w") as fh:
        fh.write("code\\n")
    print("Server failed to start")
    sys.exit(1)
"""
    repo = repo_with({"tests/gpu/test_kind.py": gpu_test(body)})
    timings = tmp_path / "t.jsonl"
    proc = run(repo, "--max-attempts", "3", timings=timings)
    assert proc.returncode == 1
    assert attempts(state) == ["1"]
    assert "      code: the test reported a code failure; not retried\n" in proc.stdout
    [rec] = records(timings)
    assert (rec["failure_kind"], rec["retriable"]) == ("code", False)


def test_a_reported_infra_kind_never_buys_a_retry(repo_with, tmp_path, state):
    # Finding 4 of issue 14: a PR's test forced its own retries by writing `infra`.
    body = f"""\
with open({str(state / "attempts")!r}, "a") as fh:
    fh.write(os.environ["CI_POLICY_ATTEMPT"] + "\\n")
if os.environ["CI_POLICY_ATTEMPT"] == "1":
    with open(os.environ["CI_POLICY_FAILURE_KIND_FILE"], "w") as fh:
        fh.write("INFRA")
    print("the GPU looked at me funny")
    sys.exit(1)
"""
    repo = repo_with({"tests/gpu/test_kind.py": gpu_test(body)})
    timings = tmp_path / "t.jsonl"
    proc = run(repo, "--max-attempts", "3", timings=timings)
    assert proc.returncode == 1, proc.stdout
    assert attempts(state) == ["1"]
    assert ("      unknown: failure not classified as retriable (the test reported an infra failure, which alone "
            "never earns a retry); not retried\n") in proc.stdout
    assert [(r["status"], r["failure_kind"], r["retriable"]) for r in records(timings)] == [
        ("fail", "unknown", False)]


def test_configured_retry_lists_replace_the_defaults(repo_with, tmp_path, state):
    config = CONFIG.replace("runner: {kill_grace: 1}",
                            'runner: {kill_grace: 1, retry: {infra: ["GPU \\\\d+ fell off the bus"]}}')
    body = f"""\
with open({str(state / "attempts")!r}, "a") as fh:
    fh.write(os.environ["CI_POLICY_ATTEMPT"] + "\\n")
if os.environ["CI_POLICY_ATTEMPT"] == "1":
    print("Xid 79: GPU 3 fell off the bus")
    sys.exit(1)
"""
    (state / "server").mkdir()
    repo = repo_with({"tests/gpu/test_xid.py": gpu_test(body),
                      "tests/gpu/test_server.py": flaky_server(state / "server")}, config=config)
    proc = run(repo, "--max-attempts", "2", "--continue-on-error", timings=tmp_path / "t.jsonl")
    assert proc.returncode == 1
    out = mask(proc.stdout)
    assert ("[1/2] tests/gpu/test_server.py FAIL elapsed=<T> est=1s attempt=1\n"
            "      unknown: failure not classified as retriable; not retried\n") in out
    assert ("[2/2] tests/gpu/test_xid.py FAIL elapsed=<T> est=1s attempt=1\n"
            "      infra: output matches infra pattern 'GPU \\\\d+ fell off the bus'; retrying\n"
            "[2/2] tests/gpu/test_xid.py PASS elapsed=<T> est=1s attempt=2\n") in out


def test_timeout_is_retried_once_only(repo_with, tmp_path, state):
    body = f"""\
with open({str(state / "attempts")!r}, "a") as fh:
    fh.write(os.environ["CI_POLICY_ATTEMPT"] + "\\n")
print("waiting forever", flush=True)
time.sleep(60)
"""
    repo = repo_with({"tests/gpu/test_hang.py": gpu_test(body)})
    timings = tmp_path / "t.jsonl"
    start = time.monotonic()
    proc = run(repo, "--max-attempts", "5", timings=timings)
    assert time.monotonic() - start < 60  # the 60 s sleeps were cut short, not waited out
    assert proc.returncode == 1
    assert attempts(state) == ["1", "2"]
    assert_golden("cli/run/timeout-retried-once.txt", mask(proc.stdout))
    recs = records(timings)
    assert [(r["status"], r["failure_kind"], r["retriable"]) for r in recs] == [
        ("timeout", "timeout", True), ("timeout", "timeout", False)]
    assert all(2.0 <= r["elapsed"] < 60 for r in recs)  # not killed early; the sleep never finished


def test_timeout_from_est_time(repo_with, tmp_path):
    config = CONFIG.replace("runner: {kill_grace: 1}",
                            "runner: {kill_grace: 1, timeout_from_est_time: {factor: 2, floor: 1}}")
    repo = repo_with({"tests/gpu/test_hang.py": gpu_test("time.sleep(60)", est=0.75)}, config=config)
    timings = tmp_path / "t.jsonl"
    proc = run(repo, timings=timings)
    assert proc.returncode == 1
    # max(floor 1, 2 * 0.75) = 1.5s, not the stage's timeout_per_file of 2s.
    assert re.search(r"^\[1/1\] tests/gpu/test_hang.py TIMEOUT elapsed=\d+\.\ds est=0.75s attempt=1 "
                     r"\(timeout 1.5s\)", proc.stdout, re.M)
    [rec] = records(timings)
    assert 1.5 <= rec["elapsed"] < 60  # not killed before 1.5 s; the sleep never finished


# -- fast-fail ---------------------------------------------------------------------------------

@pytest.fixture
def fail_then_pass(repo_with, state):
    return repo_with({
        "tests/gpu/test_a_fails.py": gpu_test('print("a fails")\nsys.exit(1)', est=3),
        "tests/gpu/test_b_passes.py": gpu_test(f'open({str(state / "b-ran")!r}, "w").close()', est=2),
    })


def test_fast_fail_stops_at_the_first_failure(fail_then_pass, tmp_path, state):
    timings = tmp_path / "t.jsonl"
    proc = run(fail_then_pass, timings=timings)
    assert proc.returncode == 1
    assert not (state / "b-ran").exists()
    assert_golden("cli/run/fast-fail.txt", mask(proc.stdout))
    assert [r["file"] for r in records(timings)] == ["tests/gpu/test_a_fails.py"]


@pytest.mark.parametrize("args", [
    ["--continue-on-error"],
    ["--label", "bypass-fastfail"],
    ["--labels-json", '["run-ci-megatron", "bypass-fastfail"]'],
    ["--cadence", "nightly"],
], ids=["continue-on-error", "bypass-fastfail-label", "bypass-fastfail-labels-json", "nightly-cadence"])
def test_fast_fail_bypassed(fail_then_pass, tmp_path, state, args):
    timings = tmp_path / "t.jsonl"
    if args[0] == "--labels-json":
        proc = cli(fail_then_pass, "run", "--stage", "gpu", "--event", "pull_request", *args,
                   "--timings-out", str(timings))
    else:
        proc = run(fail_then_pass, *args, timings=timings)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (state / "b-ran").exists()
    out = mask(proc.stdout)
    assert "[2/2] tests/gpu/test_b_passes.py PASS elapsed=<T> est=2s attempt=1\n" in out
    assert "fast-fail" not in out
    assert "NOT RUN" not in out
    assert out.endswith("PASSED (1):\n  tests/gpu/test_b_passes.py elapsed=<T> est=2s\nFAILED (1):\n"
                        "  tests/gpu/test_a_fails.py FAIL after 1 attempt(s) "
                        "(unknown: failure not classified as retriable)\nRETRIED (0):\nRESULT: FAIL\n")
    assert [r["file"] for r in records(timings)] == ["tests/gpu/test_a_fails.py", "tests/gpu/test_b_passes.py"]


# -- the timing records -----------------------------------------------------------------------

KEYS = ["schema", "file", "stage", "shard", "attempt", "status", "elapsed", "est_time", "failure_kind",
        "retriable", "started_at", "commit", "run_id", "run_attempt"]


def test_timing_record_schema(repo_with, tmp_path, state):
    repo = repo_with({
        "tests/gpu/test_ok.py": gpu_test("pass", est=3),
        "tests/gpu/test_server.py": flaky_server(state),
    })
    timings = tmp_path / "out" / "t.jsonl"
    env = clean_env(GITHUB_SHA="0123abcd", GITHUB_RUN_ID="987654", GITHUB_RUN_ATTEMPT="2")
    before = time.time()
    proc = run(repo, "--max-attempts", "2", timings=timings, env=env)
    after = time.time()
    assert proc.returncode == 0, proc.stdout
    lines = timings.read_text().splitlines(keepends=True)
    assert len(lines) == 3 and all(line.endswith("}\n") for line in lines)
    recs = [json.loads(line) for line in lines]
    for rec in recs:
        assert list(rec) == KEYS
        assert isinstance(rec["elapsed"], float) and rec["elapsed"] > 0
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", rec["started_at"])
        started = calendar.timegm(time.strptime(rec["started_at"], "%Y-%m-%dT%H:%M:%SZ"))
        assert int(before) - 1 <= started <= after + 1
    masked = [{**r, "elapsed": "<T>", "started_at": "<S>"} for r in recs]
    common = {"schema": 1, "stage": "gpu", "shard": 0, "elapsed": "<T>", "started_at": "<S>",
              "commit": "0123abcd", "run_id": "987654", "run_attempt": "2"}
    assert masked == [
        {**common, "file": "tests/gpu/test_ok.py", "attempt": 1, "status": "pass", "est_time": 3,
         "failure_kind": None, "retriable": None},
        {**common, "file": "tests/gpu/test_server.py", "attempt": 1, "status": "fail", "est_time": 1,
         "failure_kind": "infra", "retriable": True},
        {**common, "file": "tests/gpu/test_server.py", "attempt": 2, "status": "pass", "est_time": 1,
         "failure_kind": None, "retriable": None},
    ]
    for rec in masked:  # the same keys in the same order as the spec
        assert list(rec) == KEYS


def test_timing_records_without_github_env_are_null(repo_with, tmp_path):
    repo = repo_with({"tests/gpu/test_ok.py": gpu_test("pass", est=2.5)})
    timings = tmp_path / "t.jsonl"
    assert run(repo, timings=timings).returncode == 0
    [rec] = records(timings)
    assert (rec["commit"], rec["run_id"], rec["run_attempt"], rec["est_time"]) == (None, None, None, 2.5)


def test_default_timings_path_and_appending(repo_with, tmp_path):
    repo = repo_with({"tests/gpu/test_ok.py": gpu_test("pass")})
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    assert run(repo, env=clean_env(RUNNER_TEMP=str(runner_temp))).returncode == 0
    assert run(repo, env=clean_env(RUNNER_TEMP=str(runner_temp))).returncode == 0
    assert [r["file"] for r in records(runner_temp / "ci-policy-timings.jsonl")] == ["tests/gpu/test_ok.py"] * 2
    assert not (repo / ".ci-policy").exists()
    # Outside Actions: the user's cache directory, never the checkout, where the tests write.
    cache = tmp_path / "cache"
    assert run(repo, env=clean_env(XDG_CACHE_HOME=str(cache))).returncode == 0
    assert [r["status"] for r in records(cache / "ci-policy" / "timings.jsonl")] == ["pass"]
    assert not (repo / ".ci-policy" / "timings.jsonl").exists()


# -- run runs what list prints; empty shards ---------------------------------------------------

def test_run_runs_exactly_the_files_list_prints_for_every_shard(repo_with, tmp_path, state):
    files = {f"tests/multi/test_{name}.py": gpu_test(f'open({str(state / name)!r}, "w").close()',
                                                      suite="multi", est=est)
             for name, est in [("a", 10), ("b", 7), ("c", 5), ("d", 4), ("e", 3), ("f", 1)]}
    repo = repo_with(files)
    listed = {}
    for shard in range(3):
        proc = cli(repo, "list", "--stage", "multi", "--shard", str(shard), *PLAN_ARGS)
        assert (proc.returncode, proc.stderr) == (0, "")
        assert proc.stdout.strip()
        listed[shard] = proc.stdout.split()
    assert sorted(f for files_ in listed.values() for f in files_) == sorted(files)
    assert listed[0] == ["tests/multi/test_a.py"]
    assert list(state.iterdir()) == []  # list runs nothing
    assert not (repo / ".ci-policy").exists()  # and records nothing
    for shard, expected in listed.items():
        timings = tmp_path / f"shard-{shard}.jsonl"
        proc = run(repo, "--shard", str(shard), stage="multi", timings=timings)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        # The same files, in the same order.
        assert [r["file"] for r in records(timings)] == expected
    assert sorted(p.name for p in state.iterdir()) == ["a", "b", "c", "d", "e", "f"]


def test_run_has_no_list_only(repo_with):
    repo = repo_with({"tests/gpu/test_ok.py": gpu_test("pass")})
    proc = run(repo, "--list-only")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert "unrecognized arguments: --list-only" in proc.stderr


def test_empty_shard_says_why_and_exits_0(repo_with, tmp_path):
    repo = repo_with({"tests/gpu/test_ok.py": gpu_test("pass"),
                      "tests/other/test_fsdp.py": gpu_test("pass", suite="other", labels='["fsdp"]')})
    timings = tmp_path / "t.jsonl"
    proc = run(repo, stage="other", timings=timings)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == "Stage other has nothing to run: skip: no selected tests (its tests need one of: fsdp)\n"
    proc = run(repo, stage="multi", timings=timings)
    assert (proc.returncode, proc.stdout) == (0, "Stage multi has nothing to run: skip: no registered tests\n")
    assert not timings.exists()


# -- --format github ----------------------------------------------------------------------------

def test_github_format_groups_annotations_and_step_summary(repo_with, tmp_path):
    repo = repo_with({
        "tests/gpu/test_ok.py": gpu_test('print("ok output")', est=100),
        "tests/gpu/test_bad.py": gpu_test('print("boom")\nsys.exit(1)', est=0),
        "tests/gpu/test_zzz.py": gpu_test("pass", est=0),
    })
    summary = tmp_path / "summary.md"
    summary.write_text("previous step\n")
    proc = run(repo, "--format", "github", timings=tmp_path / "t.jsonl",
               env=clean_env(GITHUB_STEP_SUMMARY=str(summary)))
    assert proc.returncode == 1
    assert_golden("cli/run/github-format.txt", mask(proc.stdout))
    assert_golden("cli/run/github-format-summary.md", mask(summary.read_text()))


def test_github_format_retries_and_timeouts(repo_with, tmp_path, state):
    repo = repo_with({"tests/gpu/test_server.py": flaky_server(state),
                      "tests/gpu/test_hang.py": gpu_test('print("hanging")\ntime.sleep(60)', est=0.5)})
    summary = tmp_path / "summary.md"
    proc = run(repo, "--format", "github", "--max-attempts", "2", "--continue-on-error",
               timings=tmp_path / "t.jsonl", env=clean_env(GITHUB_STEP_SUMMARY=str(summary)))
    assert proc.returncode == 1
    out = mask(proc.stdout)
    assert out.count("::group::") == out.count("::endgroup::") == 4
    assert "::group::tests/gpu/test_server.py (attempt 1)\nServer failed to start\n::endgroup::\n" in out
    assert "::group::tests/gpu/test_server.py (attempt 2)\nserver up\n::endgroup::\n" in out
    assert "::group::tests/gpu/test_hang.py (attempt 2)\nhanging\n::endgroup::\n" in out
    assert out.endswith(
        "::error file=tests/gpu/test_hang.py::tests/gpu/test_hang.py timeout after 2 attempt(s) "
        "(timeout: timed out again)\n")
    assert_golden("cli/run/github-retries-and-timeouts-summary.md", mask(summary.read_text()))


# -- usage errors ---------------------------------------------------------------------------

def refused(proc: subprocess.CompletedProcess, timings: Path, state: Path) -> str:
    """A usage error: exit 2, nothing run, nothing recorded; the message on stderr."""
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert not timings.exists()
    assert not (state / "ran").exists()
    return proc.stderr


@pytest.fixture
def small_repo(repo_with, state):
    return repo_with({
        "tests/gpu/test_ok.py": gpu_test(f'open({str(state / "ran")!r}, "w").close()'),
        **{f"tests/multi/test_{n}.py": gpu_test("pass", suite="multi") for n in "abc"},
    })


@pytest.mark.parametrize("stage, message", [
    ("nope", "'nope' is not a planned stage (planned: unit, gpu, multi, other); "
             "external stages are never planned here"),
    ("ext", "'ext' is an external stage: another system runs it, ci-policy never plans or runs it"),
], ids=["unknown-stage", "external-stage"])
def test_unknown_or_external_stage(small_repo, tmp_path, state, stage, message):
    err = refused(run(small_repo, stage=stage, timings=tmp_path / "t.jsonl"), tmp_path / "t.jsonl", state)
    assert err == f"ci-policy run: error: --stage: {message}\n"


@pytest.mark.parametrize("stage, shard, message", [
    ("gpu", "1", "stage gpu has shards 0..0, not 1"),
    ("gpu", "-1", "stage gpu has shards 0..0, not -1"),
    ("multi", "3", "stage multi has shards 0..2, not 3"),
    ("multi", None, "stage multi has 3 shards; pass --shard INDEX"),
])
def test_shard_out_of_range(small_repo, tmp_path, state, stage, shard, message):
    args = ["--shard", shard] if shard is not None else []
    err = refused(run(small_repo, *args, stage=stage, timings=tmp_path / "t.jsonl"), tmp_path / "t.jsonl", state)
    assert err == f"ci-policy run: error: --shard: {message}\n"


@pytest.mark.parametrize("args, message", [
    (["--max-attempts", "0"], "--max-attempts: must be at least 1, got 0"),
    (["--retry-wait", "-1"], "--retry-wait: must be a finite number >= 0, got '-1'"),
    (["--format", "json"], "--format: invalid choice: 'json'"),
])
def test_usage_errors(small_repo, tmp_path, args, message):
    proc = run(small_repo, *args, timings=tmp_path / "t.jsonl")
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (tmp_path / "t.jsonl").exists()


def test_file_deleted_mid_shard_is_a_failure_not_a_pass(repo_with, tmp_path):
    repo = repo_with({
        "tests/gpu/test_first.py": gpu_test('os.remove("tests/gpu/test_second.py")', est=2),
        "tests/gpu/test_second.py": gpu_test("pass", est=1),
    })
    timings = tmp_path / "t.jsonl"
    proc = run(repo, timings=timings)
    assert proc.returncode == 1
    assert "can't open file" in proc.stdout
    assert [(r["file"], r["status"]) for r in records(timings)] == [
        ("tests/gpu/test_first.py", "pass"), ("tests/gpu/test_second.py", "fail")]


# -- a partial plan: the shard's own files still run ---------------------------------------------------

BROKEN_MESSAGE = "register_cuda_ci: unknown label 'nosuch'; valid labels: megatron, fsdp, long"


def test_a_partial_plan_runs_the_shard_and_lists_the_invalid_file(repo_with, tmp_path):
    repo = repo_with({
        "tests/gpu/test_one.py": gpu_test('print("hello from one")'),
        "tests/gpu/test_broken.py": gpu_test("pass", labels='["nosuch"]'),
    })
    section = ("invalid (not scheduled): 1 test file\n"
               "  tests/gpu/test_broken.py\n"
               f"    tests/gpu/test_broken.py:4:51: CP227 label-unknown: {BROKEN_MESSAGE}\n"
               "        hint: use a valid label, or add 'nosuch' with a description to KNOWN_LABELS in labels.py\n\n")
    proc = run(repo, timings=tmp_path / "t.jsonl")
    # The exit code is the shard's own: the plan job's result check fails the workflow on the invalid file.
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith(section + "Enabled 1 test(s) (est total 1s) for gpu shard 0:\n"
                                  "  tests/gpu/test_one.py (est 1s)\n")
    assert "hello from one" in proc.stdout and proc.stdout.endswith("RESULT: PASS\n")
    # In github format: one warning naming the file (the plan job annotates each diagnostic).
    proc = run(repo, "--format", "github", timings=tmp_path / "t.jsonl")
    assert (proc.returncode, proc.stderr) == (
        0, "ci-policy run: notice: $GITHUB_STEP_SUMMARY is not set; the job summary is not written\n")
    assert proc.stdout.startswith(
        section.replace("\n\n", "\n") + "::warning::the plan is incomplete: 1 invalid test file(s) not run: "
        "tests/gpu/test_broken.py (see the plan job)\n\n")
    # A failing file still fails the shard.
    (repo / "tests/gpu/test_one.py").write_text(gpu_test("sys.exit(3)"))
    assert run(repo, timings=tmp_path / "t.jsonl").returncode == 1


def test_a_partly_read_file_runs_its_good_registration_and_is_listed(repo_with, tmp_path):
    two = gpu_test('print("hello from two")').replace(
        "\n\ndef main", '\nregister_cuda_ci(est_time=1, suite="nosuch", labels=["megatron"])\n\ndef main')
    repo = repo_with({"tests/gpu/test_two.py": two})
    message = "register_cuda_ci: suite 'nosuch' is not a configured cuda stage"
    section = ("partly read (invalid registrations not scheduled): 1 test file\n"
               "  tests/gpu/test_two.py (still scheduled in: gpu)\n"
               f"    tests/gpu/test_two.py:5:36: CP225 suite-unknown: {message}\n"
               "        hint: configured cuda stages: gpu, multi, other, ext "
               "(stages are listed in .github/ci-policy.yml)\n"
               "\n")
    proc = run(repo, timings=tmp_path / "t.jsonl")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith(section + "Enabled 1 test(s) (est total 1s) for gpu shard 0:\n"
                                  "  tests/gpu/test_two.py (est 1s)\n")
    assert "hello from two" in proc.stdout and proc.stdout.endswith("RESULT: PASS\n")
    proc = run(repo, "--format", "github", timings=tmp_path / "t.jsonl")
    assert ("::warning::the plan is incomplete: 1 test file(s) partly read (their invalid registrations not run): "
            "tests/gpu/test_two.py (see the plan job)\n\n") in proc.stdout


def test_a_partial_plan_with_nothing_to_run_here_exits_0(repo_with, tmp_path):
    repo = repo_with({
        "tests/gpu/test_one.py": gpu_test("pass"),
        "tests/gpu/test_broken.py": gpu_test("pass", labels='["nosuch"]'),
    })
    proc = run(repo, stage="other", timings=tmp_path / "t.jsonl")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.endswith("\nStage other has nothing to run: skip: no registered tests\n")
    assert proc.stdout.startswith("invalid (not scheduled): 1 test file\n  tests/gpu/test_broken.py\n")
