"""Benchmark: warm `lint` of a checkout with many workflow files, against warm `registry`.

`lint` reads every workflow of the checkout (`read.workflows`, through libyaml where PyYAML
has it); `registry` reads none. Builds a synthetic checkout (`synthetic.gpu_checkout`, a git
work tree) with `--workflows` workflow files of about `--kb` KB each, runs each command once
to warm the scan cache (a private cache directory), then times whole processes of the real
interpreter (`sys.executable`, not a shim), alternating the commands, `--repeat` rounds:

- python -c pass: the interpreter's start, the floor of any command;
- registry:       the warm registry;
- lint:           the warm lint, workflows included;
- and, in this process, composing the workflow files with libyaml and with the pure-Python
  loader (`read.yamlnodes.compose_any(fast=...)`).

It prints medians and ratios (lint / registry: the target is at most 1.3x; pure-Python /
libyaml for the composing). Usage: python bench/workflows_bench.py [--files N] [--workflows W]
[--kb K] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic import compile_bytecode, git_commit, gpu_checkout

from ci_policy.read.yamlnodes import compose_any

STEP = """\
      - name: Run suite {suite} part {part}
        if: ${{{{ !cancelled() && needs.plan.outputs.run_{suite} == 'true' }}}}
        env:
          SUITE: {suite}
          PART: "{part}"
        run: |
          cd test/
          python3 run_suite.py --suite "$SUITE" --part "$PART" --timeout-per-file 1800
          echo "done {suite} {part}"
"""


def workflow(index: int, size: int) -> str:
    head = (f"name: Suite {index}\n"
            "on:\n  pull_request:\n    branches: [main]\n  workflow_dispatch:\n"
            "permissions:\n  contents: read\n"
            "concurrency:\n  group: suite-${{ github.ref }}\n  cancel-in-progress: true\n"
            "jobs:\n")
    jobs, job = [head], 0
    while sum(map(len, jobs)) < size:
        jobs.append(f"  suite-{index}-{job}:\n    runs-on: [self-hosted, h200, 8gpu]\n    timeout-minutes: 90\n"
                    "    steps:\n      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683\n")
        jobs += [STEP.format(suite=f"stage-{index}-{job}", part=part) for part in range(4)]
        job += 1
    return "".join(jobs)


def run_once(argv: list[str], env: dict[str, str]) -> float:
    """One whole-process run of `argv`, timed."""
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--workflows", type=int, default=80)
    parser.add_argument("--kb", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    compile_bytecode()  # as an installed wheel has it: processes time the commands, not compiling them
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        gpu_checkout(root, args.files)
        flows = root / ".github" / "workflows"
        flows.mkdir(parents=True)
        texts = [workflow(i, args.kb * 1024) for i in range(args.workflows)]
        for i, text in enumerate(texts):
            (flows / f"suite-{i}.yml").write_text(text)
        git_commit(root)
        env = {**os.environ, "XDG_CACHE_HOME": str(Path(tmp) / "cache")}
        script = str(Path(sys.executable).parent / "ci-policy")
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "registry": [sys.executable, script, "registry", "--repo", str(root)],
            "lint": [sys.executable, script, "lint", "--repo", str(root)],
        }
        for argv in commands.values():  # warm the scan cache
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
        totals: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeat):  # alternating: a slow moment of the machine hits every command
            for name, argv in commands.items():
                totals[name].append(run_once(argv, env))
        results = {name: statistics.median(samples) for name, samples in totals.items()}

        def compose_all(fast: bool) -> float:
            start = time.perf_counter()
            for text in texts:
                compose_any(text, strict=False, fast=fast)
            return time.perf_counter() - start

        fast = statistics.median(compose_all(True) for _ in range(args.repeat))
        slow = statistics.median(compose_all(False) for _ in range(args.repeat))
    size = sum(map(len, texts)) / len(texts) / 1024
    print(f"{args.files} test files, {args.workflows} workflows of {size:.1f} KB, warm, "
          f"median of {args.repeat} alternating runs")
    print(f"{'command':16} {'seconds':>9}")
    for name, seconds in results.items():
        print(f"{name:16} {seconds:9.3f}")
    print(f"lint / registry: {results['lint'] / results['registry']:.2f}x (target: at most 1.3x)")
    print(f"composing the workflows: libyaml {fast:.3f} s, pure Python {slow:.3f} s "
          f"({slow / fast:.1f}x slower)")


if __name__ == "__main__":
    main()
