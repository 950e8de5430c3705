"""Benchmark: warm `plan` and `list` against the floor, as CPU time of whole processes.

Issue 33's target for a warm run: at most 1.5x the floor, a process that only starts, runs
git's two listings and reads the cache's packs (`scan_bench.FLOOR_PROCESS`). For generated
checkouts (git work trees, `synthetic.gpu_checkout`) of each size, it fills a cache per command
(two runs, the first `SETTLED` seconds after the checkout was made, so the second finds every
file by its identity record and reads none), then times alternating rounds of the floor,
`plan` and `list` (`scan_bench`'s arguments), each a process of the real interpreter measured
by `os.wait4` (user + sys CPU time: on a shared machine a wall clock measures the neighbours),
and prints the medians and their ratios to the floor's.

`--against DIR`: a directory holding another copy of the `ci_policy` package (a checkout of
another commit, say), timed in the same rounds as this one, each put first on `PYTHONPATH`:
a before-and-after comparison on one machine at one time. Bytecode is written first for both.

Usage: python bench/warm_bench.py [--sizes 400,5000,20000] [--repeat 7] [--against DIR]
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from processes import measure
from scan_bench import COMMANDS, FLOOR_PROCESS, LIST
from synthetic import compile_bytecode, git_commit, gpu_checkout

HERE = Path(__file__).resolve().parent.parent
# Longer than `read.checkout.SETTLED_NS`: a file read sooner after its change gets no identity record.
SETTLED = 3.5


def cpu_seconds(argv: list[str], env: dict[str, str]) -> float:
    """User + sys CPU seconds of one process of `argv`; it must exit 0."""
    return measure(argv, env=env, cwd=tempfile.gettempdir()).cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="400,5000,20000", help="generated checkout sizes (comma-separated)")
    parser.add_argument("--repeat", type=int, default=7, help="alternating rounds")
    parser.add_argument("--against", type=Path, help="a directory holding another ci_policy package, timed alongside")
    args = parser.parse_args()
    compile_bytecode()
    codes = {"this": HERE}
    if args.against is not None:
        if not (args.against / "ci_policy").is_dir():
            raise SystemExit(f"{args.against} holds no ci_policy package")
        compileall.compile_dir(args.against / "ci_policy", quiet=1)
        codes["against"] = args.against.resolve()
    envs = {name: {**os.environ, "PYTHONPATH": str(path)} for name, path in codes.items()}
    script = str(Path(sys.executable).parent / "ci-policy")
    commands = {"plan": COMMANDS["plan"], "list": LIST}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for n in (int(s) for s in args.sizes.split(",") if s):
            repo = work / f"gen{n}"
            gpu_checkout(repo, n, groups=97)
            git_commit(repo)
            time.sleep(SETTLED)

            def argv(name: str, code: str, repo: Path = repo, n: int = n) -> list[str]:
                return [sys.executable, script, *commands[name], "--repo", str(repo),
                        "--cache", str(work / f"cache-{code}-{name}-{n}")]
            for code in codes:
                for name in commands:
                    for _ in range(2):
                        cpu_seconds(argv(name, code), envs[code])
            samples: dict[str, list[float]] = {"floor": []}
            for _ in range(args.repeat):  # alternating: a busy moment of the machine hits every row
                floor_argv = [sys.executable, "-c", FLOOR_PROCESS, str(repo), str(work / f"cache-this-plan-{n}")]
                samples["floor"].append(cpu_seconds(floor_argv, dict(os.environ)))
                for name in commands:
                    for code in codes:
                        samples.setdefault(f"{name} {code}", []).append(cpu_seconds(argv(name, code), envs[code]))
            floor = statistics.median(samples["floor"])
            print(f"{n} test files: floor (start, git ls-files, packs) {floor * 1000:.0f} ms CPU (= 1.00), "
                  f"medians of {args.repeat}")
            for row, times in samples.items():
                if row != "floor":
                    took = statistics.median(times)
                    print(f"  {row:<14} {took * 1000:6.0f} ms  {took / floor:5.2f}x floor"
                          f"  (min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})")
            shutil.rmtree(repo)


if __name__ == "__main__":
    main()
