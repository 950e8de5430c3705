"""How many processes scan test files (`ci_policy/adapters/parallel.py`, `--jobs`, `$CI_POLICY_JOBS`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import EXAMPLE_REPO, clean_env, run_cli

from ci_policy.adapters import parallel
from ci_policy.adapters.parallel import available_cores, process_scanner


@pytest.fixture
def cgroup(tmp_path: Path, monkeypatch):
    """cgroup files under tmp_path; none exists until a test writes it."""
    paths = {name: tmp_path / name for name in ("cpu.max", "cpu.cfs_quota_us", "cpu.cfs_period_us")}
    monkeypatch.setattr(parallel, "CGROUP_V2_MAX", str(paths["cpu.max"]))
    monkeypatch.setattr(parallel, "CGROUP_V1_QUOTA", str(paths["cpu.cfs_quota_us"]))
    monkeypatch.setattr(parallel, "CGROUP_V1_PERIOD", str(paths["cpu.cfs_period_us"]))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5}, raising=False)
    return paths


def test_the_cores_are_the_affinity_capped_by_the_cgroup_quota(cgroup) -> None:
    assert available_cores() == 6  # no quota file
    cgroup["cpu.max"].write_text("max 100000\n")
    assert available_cores() == 6
    cgroup["cpu.max"].write_text("250000 100000\n")
    assert available_cores() == 3  # 2.5 CPUs: rounded up
    cgroup["cpu.max"].write_text("50000 100000\n")
    assert available_cores() == 1
    cgroup["cpu.max"].write_text("800000 100000\n")
    assert available_cores() == 6  # a quota above the affinity
    cgroup["cpu.max"].unlink()
    cgroup["cpu.cfs_quota_us"].write_text("200000\n")
    cgroup["cpu.cfs_period_us"].write_text("100000\n")
    assert available_cores() == 2  # cgroup v1
    cgroup["cpu.cfs_quota_us"].write_text("-1\n")
    assert available_cores() == 6  # v1: no quota
    cgroup["cpu.cfs_quota_us"].write_text("garbage\n")
    assert available_cores() == 6


def test_one_job_scans_in_this_process() -> None:
    assert process_scanner(1) is None
    assert process_scanner(2) is not None


@pytest.mark.parametrize(("env", "argv", "message"), [
    ({}, ["--jobs", "0"], "argument --jobs: must be at least 1, got 0"),
    ({}, ["--jobs", "two"], "argument --jobs: expected a whole number, got 'two'"),
    ({"CI_POLICY_JOBS": "0"}, [], "$CI_POLICY_JOBS: must be at least 1, got 0"),
    ({"CI_POLICY_JOBS": "many"}, [], "$CI_POLICY_JOBS: expected a whole number, got 'many'"),
])
def test_a_bad_number_of_jobs_is_a_usage_error(env, argv, message, monkeypatch, capsys) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    argv = ["registry", "--repo", str(EXAMPLE_REPO), "--no-cache", *argv]
    if env:
        code, out, err = run_cli(argv, capsys)
        assert (code, out) == (2, "")
        assert err.splitlines()[0] == f"ci-policy registry: error: {message}"
    else:
        with pytest.raises(SystemExit) as exited:
            run_cli(argv, capsys)
        assert exited.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1] == f"ci-policy registry: error: {message}"


def test_jobs_come_from_the_option_then_the_environment_then_the_cores(monkeypatch) -> None:
    import argparse

    from ci_policy.app.scanning import jobs

    monkeypatch.setattr(parallel, "available_cores", lambda: 7)
    monkeypatch.delenv("CI_POLICY_JOBS", raising=False)
    assert jobs(argparse.Namespace(jobs=None)) == 7
    monkeypatch.setenv("CI_POLICY_JOBS", "3")
    assert jobs(argparse.Namespace(jobs=None)) == 3
    assert jobs(argparse.Namespace(jobs=2)) == 2
    monkeypatch.setenv("CI_POLICY_JOBS", "")
    assert jobs(argparse.Namespace(jobs=None)) == 7


POOL_PROBE = """
import contextlib, io, sys
from ci_policy.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(sys.argv[1:])
sys.stderr.write(f"{rc} {'concurrent.futures.process' in sys.modules} {'multiprocessing' in sys.modules}")
"""


def test_a_scan_in_one_process_imports_no_process_pool(tmp_path) -> None:
    """A checkout of fewer than `PARALLEL_MIN_FILES` files (and a warm scan) is scanned in this
    process: the process pool's modules (about 10 ms) and multiprocessing are not imported."""
    proc = subprocess.run([sys.executable, "-c", POOL_PROBE, "registry", "--repo", str(EXAMPLE_REPO), "--no-cache",
                           "--format", "json"], capture_output=True, text=True, cwd=tmp_path, env=clean_env(),
                          check=True)
    assert proc.stderr == "0 False False"
