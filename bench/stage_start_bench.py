"""Benchmark: how soon does a stage job start its first test, with `--plan` against re-planning?

For each size (default 1,000, 5,000 and 20,000 test files) it builds a synthetic git
checkout: a stage `first` of two trivial test files, each of which appends the wall-clock
time it started to a stamp file, and a stage `bulk` holding every other file. It writes
the plan once (`ci-policy plan --format json --stage-plans DIR`, as the plan job does), then
times, in the
same run and on the same checkout:

- replan: `ci-policy run --stage first` with the plan inputs and `--no-cache` (discovers and
          parses every file, as a stage job on a fresh runner without a cache would);
- plan:   `ci-policy run --stage first --plan FILE` with the whole plan file (discovery and
          content ids only);
- stage:  `--plan DIR`, the directory of the whole plan and the stage plans (`plan
          --stage-plans DIR/stages`: each stage alone, no test file's content id), as the
          reusable pipeline's stage jobs run: on this clean checkout, the stage's own plan.

With `--gates`, the two files of `first` also declare a metric gate: a stage job then reads
the configuration too (to evaluate the gates after the tests), which the first test waits for.

One unmeasured run of each mode comes first (bytecode written, files in the page cache).

Each time is from just before the `ci-policy` process is started to the first test's own
start stamp: what a stage job waits before its first test runs. It prints the median of
`--repeat` runs per mode and the ratios plan/replan and stage/replan (issue 15's target: the
first test within 0.3 s of the job's start on 20,000 files).

Usage: python bench/stage_start_bench.py [--sizes 1000 5000 20000] [--repeat 3] [--gates]
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

from synthetic import git_commit

CONFIG = """\
version: 1
discovery: {roots: [tests]}
stages:
  - {name: first, backend: cpu, runner: python}
  - {name: bulk, backend: cpu, runner: python, partitions: 8}
"""
INPUTS = ["--event", "push"]
# As on a runner, where pip wrote the bytecode at install time: imports do not compile.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def ci_policy() -> str:
    found = shutil.which("ci-policy", path=str(Path(sys.executable).parent)) or shutil.which("ci-policy")
    if found is None:
        raise SystemExit("ci-policy is not installed next to this interpreter")
    return found


# A gate on a captured metric with its own band (no default needed in the configuration).
GATE = ('register_ci_gate(metric_key="train/grad_norm", steps="all", constraint={"rel_up": 0.5, '
        '"abs_floor_up": 0.05, "rel_down": 0.5, "abs_floor_down": 0.05})\n')


def test_file(suite: str, i: int, stamp: Path, gated: bool = False) -> str:
    body = "\n".join(f"def case_{j}():\n    assert {j} + 1 == {j + 1}\n" for j in range(20))
    markers = "register_ci_gate, register_cpu_ci" if gated else "register_cpu_ci"
    return (f'"""Synthetic test {i}."""\nimport time\n\nfrom ci_policy import {markers}\n\n'
            + (GATE if gated else "")
            + f'register_cpu_ci(est_time={1 + (i * 37) % 900}, suite="{suite}")\n\n{body}\n\n'
            f"def main():\n    with open({str(stamp)!r}, 'a') as fh:\n"
            "        fh.write(f'{time.time()}\\n')\n\n"
            'if __name__ == "__main__":\n    main()\n')


def make_checkout(root: Path, n: int, stamp: Path, gates: bool = False) -> None:
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "ci-policy.yml").write_text(CONFIG)
    for i in range(n):
        suite = "first" if i < 2 else "bulk"
        path = root / "tests" / f"group{i % 37}" / f"test_case_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(test_file(suite, i, stamp, gated=gates and suite == "first"))
    git_commit(root)


def first_test_start(argv: list[str], stamp: Path, out: Path) -> float:
    """Seconds from starting `argv` to the first test's own start stamp."""
    stamp.unlink(missing_ok=True)
    start = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL, env=ENV)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return float(stamp.read_text().split()[0]) - start


def bench(n: int, repeat: int, gates: bool = False) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        root, stamp, plan_dir, out = work / "repo", work / "stamp", work / "planned", work / "out"
        plan = plan_dir / "plan.json"
        make_checkout(root, n, stamp, gates)
        exe = ci_policy()
        written = subprocess.run([exe, "plan", "--repo", str(root), *INPUTS, "--format", "json",
                                  "--stage-plans", str(plan_dir / "stages")],
                                 capture_output=True, text=True, check=True)
        plan.write_text(written.stdout)
        common = [exe, "run", "--repo", str(root), "--stage", "first",
                  "--timings-out", str(work / "timings.jsonl"), "--records-out", str(out)]
        replan, planned, staged = [], [], []
        replan_argv = [*common, *INPUTS, "--no-cache"]  # a full parse, never a warm re-plan
        first_test_start(replan_argv, stamp, out)  # warm-up: bytecode, page cache
        first_test_start([*common, "--plan", str(plan)], stamp, out)
        first_test_start([*common, "--plan", str(plan_dir)], stamp, out)
        for _ in range(repeat):  # interleaved, so that every mode sees the same machine load
            replan.append(first_test_start(replan_argv, stamp, out))
            planned.append(first_test_start([*common, "--plan", str(plan)], stamp, out))
            staged.append(first_test_start([*common, "--plan", str(plan_dir)], stamp, out))
        return statistics.median(replan), statistics.median(planned), statistics.median(staged)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gates", action="store_true", help="the files of the timed stage declare a gate")
    args = parser.parse_args()
    gated = ", its files declaring a gate" if args.gates else ""
    print(f"time to the first test's start, median of {args.repeat} runs each{gated}")
    print(f"{'test files':>10} {'replan s':>9} {'--plan s':>9} {'stage s':>8} {'plan/replan':>12} {'stage/replan':>13}")
    for n in args.sizes:
        replan, planned, staged = bench(n, args.repeat, args.gates)
        print(f"{n:>10} {replan:9.3f} {planned:9.3f} {staged:8.3f} {planned / replan:12.3f} {staged / replan:13.3f}",
              flush=True)


if __name__ == "__main__":
    main()
