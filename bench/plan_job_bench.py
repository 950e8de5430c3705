"""Benchmark: the pipeline's plan job on a fresh runner, its steps replayed as processes.

On a synthetic git checkout (`synthetic.gpu_checkout`, default 400 test files: the shape of
a repository like radixark/miles), each round times three ways of running the plan job's two
costly steps one after the other, as whole processes with the real interpreter:

- bare:  the setup action's install step (`.github/actions/setup/action.yml`, run by bash as
         the runner runs it: a fresh virtual environment under a fresh $RUNNER_TEMP, the
         locked wheels, ci-policy from its source) with no wheels restored, so pip takes every
         wheel from the index (here whatever pip is configured with; on GitHub, PyPI), then
         `ci-policy plan --format github --json-out --stage-plans` with an empty `--cache`
         directory: what a fresh runner did before the caches (the baseline);
- wheels: the same with the locked wheels restored (copied into $RUNNER_TEMP/ci-policy-wheels,
         as actions/cache restores them), and a cold plan;
- warm:  the wheels restored and the scan cache too (a directory an earlier plan of the same
         checkout wrote, copied into place, as actions/cache/restore does), a warm plan.

pip's own cache is a fresh empty directory in every setup (a fresh runner has none). The
rounds alternate the three ways, so each sees the same machine load. It prints the median of
`--repeat` rounds of each way, setup and plan apart and together, and the ratios of the
totals against the bare one (issue 33: setup plus cold plan, setup plus warm plan).

Usage: python bench/plan_job_bench.py [--files 400] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from synthetic import git_commit, gpu_checkout

ROOT = Path(__file__).resolve().parents[1]
ACTION_DIR = ROOT / ".github" / "actions" / "setup"
# As on a runner, where pip wrote the bytecode at install time: imports do not compile.
BASE_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV")}


def install_step() -> str:
    action = yaml.safe_load((ACTION_DIR / "action.yml").read_text(encoding="utf-8"))
    [step] = [s for s in action["runs"]["steps"] if s.get("id") == "install"]
    return step["run"]


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                          check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return elapsed


def setup(work: Path, wheels: Path | None) -> tuple[float, Path]:
    """The install step in a fresh $RUNNER_TEMP (the wheels copied in first when given); its time
    and the ci-policy it installed."""
    temp = work / "temp"
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir(parents=True)
    if wheels is not None:
        shutil.copytree(wheels, temp / "ci-policy-wheels")
    pip_cache = work / "pip-cache"
    shutil.rmtree(pip_cache, ignore_errors=True)
    env = {**BASE_ENV, "RUNNER_TEMP": str(temp), "GITHUB_OUTPUT": str(work / "output"),
           "GITHUB_PATH": str(work / "path"), "GITHUB_ACTION_PATH": str(ACTION_DIR),
           "CI_POLICY_EXTRAS": "", "CI_POLICY_PYTHON": sys.executable, "PIP_CACHE_DIR": str(pip_cache)}
    (work / "workspace").mkdir(exist_ok=True)
    elapsed = timed(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", install_step()], env,
                    work / "workspace")
    return elapsed, temp / "ci-policy" / "venv" / "bin" / "ci-policy"


def plan(work: Path, exe: Path, repo: Path, cache: Path | None) -> float:
    """The plan step (`pr-pipeline.yml`'s line, for a push) with `cache` copied into place (None: empty)."""
    where = work / "scan-cache"
    shutil.rmtree(where, ignore_errors=True)
    if cache is not None:
        shutil.copytree(cache, where)
    out = work / "ci-policy-plan"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    env = {**BASE_ENV, "GITHUB_OUTPUT": str(work / "output"), "GITHUB_STEP_SUMMARY": str(work / "summary")}
    return timed([str(exe), "plan", "--repo", str(repo), "--format", "github", "--event", "push",
                  "--json-out", str(out / "plan.json"), "--stage-plans", str(out / "stages"), "--cache", str(where)],
                 env, work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo = work / "repo"
        gpu_checkout(repo, args.files)
        git_commit(repo)
        # Unmeasured: the wheels a bare setup downloads (what a trusted run's cache holds), and the
        # scan cache a plan of this checkout writes.
        _, exe = setup(work, None)
        wheels = work / "wheels"
        shutil.copytree(work / "temp" / "ci-policy-wheels", wheels)
        plan(work, exe, repo, None)
        scans = work / "scans"
        shutil.copytree(work / "scan-cache", scans)
        times: dict[str, list[tuple[float, float]]] = {"bare": [], "wheels": [], "warm": []}
        for _ in range(args.repeat):
            for way, restored, cache in (("bare", None, None), ("wheels", wheels, None), ("warm", wheels, scans)):
                spent, exe = setup(work, restored)
                times[way].append((spent, plan(work, exe, repo, cache)))
    print(f"plan job steps on {args.files} test files, medians of {args.repeat} rounds (wall seconds)")
    print(f"{'way':8} {'setup':>7} {'plan':>7} {'total':>7} {'total/bare':>11}")
    bare = statistics.median(s + p for s, p in times["bare"])
    for way, rows in times.items():
        s, p = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
        total = statistics.median(a + b for a, b in rows)
        print(f"{way:8} {s:7.2f} {p:7.3f} {total:7.2f} {total / bare:11.2f}")


if __name__ == "__main__":
    main()
