"""Benchmark: issue 33's process targets on a checkout shaped like radixark/miles's.

On `synthetic.miles_checkout` (382 e2e test files of 0.4 to 6 KB, miles's stages, marker
dialect and label file; a git work tree), it times whole processes of the real interpreter
(`sys.executable` and the `ci-policy` script beside it, never a shim), in alternating rounds,
each started by a small launcher that reports the process's own CPU time (user + system,
`os.wait4`), wall time and peak RSS:

- pass:      `python -c pass`, the interpreter's start;
- bare:      a process reading and `ast.parse`-ing every test file, the collector off (the
             least any scanner does): the baseline of the cold rows;
- needed:    the bare loop plus a walk of each file's module-level statements (the least a
             marker scan adds), after importing every module of the standard library and
             PyYAML that a cold `plan` process imports (read off `-X importtime`): what any
             implementation of ci-policy with its dependencies pays before its own code runs;
- required:  the same with only the modules no implementation of ci-policy goes without: PyYAML
             (the configuration), `json` and `hashlib` (the cache, the plan file), `subprocess`
             (git), `dataclasses` (the core's records) and `argparse` (the command line);
- collector: a process collecting the way miles's own collector does (`tests/ci/run_suite.py`
             with `ci_register.collect_tests`: find the test files, read and parse each, take
             its module-level marker calls' literal arguments into records, keep one suite's
             and split them by LPT), written here from that description: not upstream's code,
             which imports miles's own modules as well. `--collector CMD` adds a row for any
             command run in the checkout (upstream's, where a miles checkout is at hand:
             `--repo ~/miles --collector "python -m tests.ci.run_suite --hw cuda --suite
             stage-c-4-gpu-h200 --list-only"`);
- floor:     a process that starts, runs git's two listings and reads the cache's packs
             (`scan_bench.FLOOR_PROCESS`): the baseline of the warm rows;
- floor+imports: the floor after importing the modules `needed` imports: the least a warm
             command of any implementation with ci-policy's dependencies takes;
- floor+own: the floor after importing every module a warm `plan` imports, ci_policy's own
             too (the floor as the issue's measurement counted it: "interpreter, git ls-files
             twice, the cache pack, imports");
- `plan`, `lint`, `registry` cold (an empty cache directory) with `--jobs 1` and with the
  default jobs; `plan`, `list` (one shard) and `lint` warm (the cache kept, the files settled
  so they are found by their identity records).

Targets (issue 33): cold at most 1.3x bare with one worker, at most 0.7x with two (wall), at
most 1.0x miles's collector; warm `plan` and `list` at most 1.5x the floor; peak RSS at most
2 KiB a test file plus 40 MiB.

Usage: python bench/miles_bench.py [--files 382] [--repeat 7] [--repo DIR] [--config FILE]
       [--collector CMD]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from processes import measure
from scan_bench import FLOOR_PROCESS
from synthetic import compile_bytecode, git_commit, miles_checkout

BARE = """\
import ast, gc, sys
gc.disable()
for rel in sys.argv[1:]:
    with open(rel, "rb") as fh:
        ast.parse(fh.read())
"""

def importing(arg: int) -> str:
    """Code importing the modules named (comma-separated) by the process's argument `arg`, as the
    command does: its attempts at another platform's modules fail here too."""
    return ("import importlib, sys\n"
            f"for name in sys.argv[{arg}].split(','):\n"
            "    try:\n        importlib.import_module(name)\n    except ImportError:\n        pass\n")


NEEDED = importing(1) + """\
import ast, gc, sys
gc.disable()
for rel in sys.argv[2:]:
    with open(rel, "rb") as fh:
        tree = ast.parse(fh.read())
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            pass
"""

# As miles's collector works (see the module doc): the marker calls at module level, their
# literal arguments as records, one suite's records split by LPT.
COLLECTOR = """\
import ast, glob, sys
MARKERS = {"register_cuda_ci": "cuda", "register_rocm_ci": "rocm", "register_cpu_ci": "cpu"}
records = []
for name in sorted(glob.glob("tests/e2e/**/test_*.py", recursive=True)):
    with open(name) as fh:
        tree = ast.parse(fh.read(), filename=name)
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name):
            backend = MARKERS.get(stmt.value.func.id)
            if backend is not None:
                args = {kw.arg: kw.value.value for kw in stmt.value.keywords if isinstance(kw.value, ast.Constant)}
                records.append((backend, name, float(args["est_time"]), args["suite"]))
suite = [r for r in records if r[0] == "cuda" and r[3] == sys.argv[1]]
sums, parts = [0.0] * 3, [[], [], []]
for r in sorted(suite, key=lambda r: (-r[2], r[1])):
    i = min(range(3), key=sums.__getitem__)
    parts[i].append(r)
    sums[i] += r[2]
for line in parts[0]:
    print(line[1])
"""

LABELS = '["run-ci-megatron", "run-ci-fsdp", "run-ci-ckpt"]'
PLAN = ["plan", "--event", "pull_request", "--labels-json", LABELS, "--diff", "", "--format", "json"]


def run(cwd: Path, argv: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s, peak RSS KiB) of one process of `argv` run in `cwd`."""
    usage = measure(argv, cwd=cwd)
    return usage.wall, usage.cpu, usage.rss_kib


def imported(cwd: Path, argv: list[str], *, own: bool = False) -> list[str]:
    """The modules a process of `argv` (a `ci-policy` command) imports (ci_policy's own only when
    `own`), in the order `-X importtime` lists them."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=cwd, capture_output=True, text=True,
                          check=True)
    names = [line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    left_out = ("__editable__",) if own else ("ci_policy", "__editable__")
    return list(dict.fromkeys(n for n in names[1:] if not n.startswith(left_out)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=382, help="test files of the generated checkout")
    parser.add_argument("--repeat", type=int, default=7, help="alternating rounds (medians are reported)")
    parser.add_argument("--repo", type=Path, help="a checkout to time instead of a generated one (a git work tree)")
    parser.add_argument("--config", help="its ci-policy configuration (`--config`), when not the default path")
    parser.add_argument("--suite", default="stage-c-4-gpu-h200", help="the suite the collector lists")
    parser.add_argument("--collector", action="append", default=[], help="another collector command, run in "
                        "the checkout: a row of its own (repeatable)")
    args = parser.parse_args()
    compile_bytecode()  # as an installed wheel has it
    script = str(Path(sys.executable).parent / "ci-policy")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        repo = args.repo.resolve() if args.repo else work / "miles"
        if args.repo is None:
            miles_checkout(repo, args.files)
            git_commit(repo)
        files = subprocess.run(["git", "ls-files", "-z", "tests"], cwd=repo, capture_output=True, check=True,
                               text=True).stdout.split("\0")
        files = [f for f in files if f.endswith(".py") and "/test_" in f]
        kib = sum(os.path.getsize(repo / f) for f in files) // 1024
        config = ["--config", args.config] if args.config else []
        plan_argv = [script, *PLAN, "--repo", str(repo), *config, "--cache", str(work / "probe"), "--jobs", "1"]
        needed = ",".join(imported(repo, plan_argv))
        rows: dict[str, list[str]] = {
            "pass": [sys.executable, "-c", "pass"],
            "bare": [sys.executable, "-c", BARE, *files],
            "needed": [sys.executable, "-c", NEEDED, needed, *files],
            "required": [sys.executable, "-c", NEEDED, "yaml,json,hashlib,subprocess,dataclasses,argparse", *files],
            "collector": [sys.executable, "-c", COLLECTOR, args.suite],
            **{f"collector {i + 1}": shlex.split(cmd) for i, cmd in enumerate(args.collector)},
            "floor": [sys.executable, "-c", FLOOR_PROCESS, str(repo), str(work / "warm-plan")],
            "floor+imports": [sys.executable, "-c", importing(3) + FLOOR_PROCESS, str(repo), str(work / "warm-plan"),
                              needed],
            # Filled in once the warm cache is (below): the modules of a warm `plan`.
            "floor+own": [],
        }
        for name, argv in (("plan", PLAN), ("lint", ["lint", "--format", "json"]),
                           ("registry", ["registry", "--format", "json"])):
            full = [sys.executable, script, *argv, "--repo", str(repo), *config]
            rows[f"{name} cold -j1"] = [*full, "--cache", str(work / "cold"), "--jobs", "1"]
            rows[f"{name} cold"] = [*full, "--cache", str(work / "cold")]
            if name != "registry":
                rows[f"{name} warm"] = [*full, "--cache", str(work / f"warm-{name}")]
        list_argv = ["list", "--stage", args.suite, "--shard", "0", *PLAN[1:-2], "--format", "json"]
        rows["list warm"] = [sys.executable, script, *list_argv, "--repo", str(repo), *config,
                             "--cache", str(work / "warm-plan")]
        # Warm caches hold identity records only for files settled when read (read.checkout.SETTLED_NS).
        time.sleep(3.2)
        for name in ("plan", "lint"):
            for _ in range(2):
                run(repo, rows[f"{name} warm"])
        warm_modules = ",".join(imported(repo, rows["plan warm"][1:], own=True))
        rows["floor+own"] = [sys.executable, "-c", importing(3) + FLOOR_PROCESS, str(repo), str(work / "warm-plan"),
                             warm_modules]
        samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in rows}
        for _ in range(args.repeat):  # alternating: a slow moment of the machine hits every row
            for name, argv in rows.items():
                if " cold" in name:
                    shutil.rmtree(work / "cold", ignore_errors=True)
                samples[name].append(run(repo, argv))
    med = {name: (statistics.median(s[0] for s in got), statistics.median(s[1] for s in got),
                  max(s[2] for s in got)) for name, got in samples.items()}
    bound = 2 * len(files) + 40 * 1024
    print(f"{len(files)} test files, {kib} KiB; medians of {args.repeat} alternating rounds; "
          "CPU = user + system of the process")
    print(f"{'row':<18} {'CPU ms':>7} {'wall ms':>8} {'RSS MiB':>8}  {'CPU/bare':>8} {'wall/bare':>9}"
          f" {'CPU/coll':>8} {'CPU/floor':>9}")
    for name, (wall, cpu, rss) in med.items():
        print(f"{name:<18} {cpu * 1000:7.0f} {wall * 1000:8.0f} {rss / 1024:8.1f}  {cpu / med['bare'][1]:8.2f}"
              f" {wall / med['bare'][0]:9.2f} {cpu / med['collector'][1]:8.2f} {cpu / med['floor'][1]:9.2f}")
    print(f"peak RSS bound (2 KiB a test file + 40 MiB): {bound / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
