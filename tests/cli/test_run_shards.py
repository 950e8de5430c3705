"""`ci-policy run --shards "0 2"` (one stage job's lane) and `--python PATH`.

Subprocess tests through the installed console script, as in test_run.py: several shards
run one after another with one summary and one exit status, timing records name each
file's shard, fast-fail stops the later shards, and the tests run with the interpreter
given.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from cli.test_run import CONFIG, cli, gpu_test, mask, records, refused, run


@pytest.fixture
def state(tmp_path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


def multi_repo(make_repo, fail: str = "") -> Path:
    # est 10, 7, 5: shard 0 = a, shard 1 = b, shard 2 = c.
    files = {f"tests/multi/test_{name}.py": gpu_test(f'print("in {name}")' + ("\nsys.exit(1)" if name == fail else ""),
                                                      suite="multi", est=est)
             for name, est in (("a", 10), ("b", 7), ("c", 5))}
    return make_repo(files, config=CONFIG)


def test_several_shards_run_in_order_with_one_summary(make_repo, tmp_path):
    repo = multi_repo(make_repo)
    timings = tmp_path / "t.jsonl"
    proc = run(repo, "--shards", "2 0", stage="multi", timings=timings)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert mask(proc.stdout) == (
        "Enabled 1 test(s) (est total 5s) for multi shard 2:\n"
        "  tests/multi/test_c.py (est 5s)\n"
        "in c\n"
        "[1/1] tests/multi/test_c.py PASS elapsed=<T> est=5s attempt=1\n"
        "Enabled 1 test(s) (est total 10s) for multi shard 0:\n"
        "  tests/multi/test_a.py (est 10s)\n"
        "in a\n"
        "[1/1] tests/multi/test_a.py PASS elapsed=<T> est=10s attempt=1\n"
        "\n"
        "==== ci-policy run: multi shards 2 0 ====\n"
        "PASSED (2):\n"
        "  tests/multi/test_c.py elapsed=<T> est=5s\n"
        "  tests/multi/test_a.py elapsed=<T> est=10s\n"
        "FAILED (0):\n"
        "RETRIED (0):\n"
        "RESULT: PASS\n")
    assert [(r["file"], r["stage"], r["shard"]) for r in records(timings)] == [
        ("tests/multi/test_c.py", "multi", 2), ("tests/multi/test_a.py", "multi", 0)]


def test_a_failed_shard_stops_the_later_ones_and_fails_the_job(make_repo, tmp_path):
    repo = multi_repo(make_repo, fail="a")
    timings = tmp_path / "t.jsonl"
    proc = run(repo, "--shards", "0 1 2", stage="multi", timings=timings)
    assert proc.returncode == 1
    out = mask(proc.stdout)
    assert "ci-policy: stopping after shard 0 failed (fast-fail); shard(s) 1 2 not run. Use --continue-on-error " \
           "to run them.\n" in out
    assert out.endswith("==== ci-policy run: multi shards 0 1 2 ====\n"
                        "PASSED (0):\n"
                        "FAILED (1):\n"
                        "  tests/multi/test_a.py FAIL after 1 attempt(s) (unknown: failure not classified as "
                        "retriable)\n"
                        "RETRIED (0):\n"
                        "NOT RUN (2, fast-fail):\n"
                        "  tests/multi/test_b.py\n"
                        "  tests/multi/test_c.py\n"
                        "RESULT: FAIL\n")
    assert [r["shard"] for r in records(timings)] == [0]


def test_continue_on_error_runs_every_shard_and_still_fails(make_repo, tmp_path):
    repo = multi_repo(make_repo, fail="b")
    timings = tmp_path / "t.jsonl"
    proc = run(repo, "--shards", "1 2", "--continue-on-error", stage="multi", timings=timings)
    assert proc.returncode == 1
    assert [(r["shard"], r["status"]) for r in records(timings)] == [(1, "fail"), (2, "pass")]
    assert mask(proc.stdout).endswith("RESULT: FAIL\n")


def test_one_shard_through_shards_reads_as_one_shard(make_repo, tmp_path):
    repo = multi_repo(make_repo)
    proc = run(repo, "--shards", "1", stage="multi", timings=tmp_path / "t.jsonl")
    assert proc.returncode == 0
    assert "==== ci-policy run: multi shard 1 ====\n" in proc.stdout


def test_a_skipped_stage_has_nothing_to_run_with_shards(make_repo, tmp_path):
    repo = multi_repo(make_repo)
    proc = cli(repo, "run", "--stage", "multi", "--shards", "0 1", "--event", "workflow_dispatch")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == "Stage multi has nothing to run: skip: no selected tests (its tests need one of: megatron)\n"


@pytest.mark.parametrize("args, message", [
    (["--shards", "0", "--shard", "0"], "--shards: pass either --shard or --shards, not both\n"),
    (["--shards", ""], "--shards: expected shard indices separated by spaces, got ''\n"
                       "    hint: pass the shards of a stage_matrix entry, e.g. --shards \"0 2\"\n"),
    (["--shards", "0,1"], "--shards: expected shard indices separated by spaces, got '0,1'\n"
                          "    hint: pass the shards of a stage_matrix entry, e.g. --shards \"0 2\"\n"),
    (["--shards", "0 -1"], "--shards: expected shard indices separated by spaces, got '0 -1'\n"
                           "    hint: pass the shards of a stage_matrix entry, e.g. --shards \"0 2\"\n"),
    (["--shards", "1 1"], "--shards: a shard is named twice in '1 1'\n"),
    (["--shards", "0 3"], "--shards: stage multi has shards 0..2, not 3\n"),
    (["--python", "no-such-python-here"],
     "--python: 'no-such-python-here' is not an executable file or a command on PATH\n"
     "    hint: pass the interpreter of the repository's test environment, e.g. .venv/bin/python\n"),
])
def test_usage_errors(make_repo, tmp_path, state, args, message):
    repo = multi_repo(make_repo)
    timings = tmp_path / "t.jsonl"
    err = refused(run(repo, *args, stage="multi", timings=timings), timings, state)
    assert err == f"ci-policy run: error: {message}"


def test_python_runs_the_tests_with_that_interpreter(make_repo, tmp_path):
    files = {"tests/multi/test_a.py": gpu_test("print('exe=' + sys.executable)\nprint('argv0=' + sys.argv[0])",
                                               suite="multi")}
    repo = make_repo(files, config=CONFIG)
    # A wrapper that marks its runs, then execs the real interpreter.
    wrapper = tmp_path / "bin" / "python-of-the-repo"
    wrapper.parent.mkdir()
    marker = tmp_path / "wrapper-ran"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {marker}\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    proc = run(repo, "--shard", "0", "--python", str(wrapper), stage="multi", timings=tmp_path / "t.jsonl")
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stdout
    assert marker.read_text() == "tests/multi/test_a.py\n"
    assert "argv0=tests/multi/test_a.py\n" in proc.stdout
    # A command name is looked up on PATH.
    env = {**os.environ, "PATH": f"{wrapper.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = run(repo, "--python", "python-of-the-repo", stage="multi", timings=tmp_path / "t2.jsonl",
               env={k: v for k, v in env.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert marker.read_text() == "tests/multi/test_a.py\n" * 2
