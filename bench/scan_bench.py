"""Benchmark: lint, registry and plan against a bare read-and-parse loop, cold and warm cache.

For the example repository and generated checkouts (git work trees) of 1,000, 5,000 and
20,000 test files (`--huge` adds 50,000), it times, in the same run and process:

- bare:   reading and `ast.parse`-ing every test file (the least any scanner must do), with
          the cycle collector off as in the commands;
- COMMAND --no-cache: the command as `ci-policy` runs it (`cli.main.main`, output discarded);
- COMMAND cold: with an empty `--cache DIR` (every file scanned and stored), in as many
  processes as the command takes by default (`--jobs`: the CPUs this process may use);
- COMMAND cold -j1: the same with `--jobs 1` (every file parsed in the command's own process);
- COMMAND warm: the same command again with that cache filled (a checkout kept between runs:
          its files are found by their identity records, unread);
- COMMAND clone: the same cache on a copy of the checkout (a fresh clone: the same paths and
          bytes, new inodes; every file read and hashed, none parsed).

and prints each as a ratio to the bare loop of the same checkout (targets, issue 15:
warm <= 0.1, cold <= 1.0). These rows run in this process, its imports loaded: they compare
the work of the commands, not what a job waits for. The `process` rows then time whole
processes of the real interpreter (`sys.executable`, not a shim), alternating: the bare loop as
a process of its own (`python -c`, reading and parsing the same files), and each command warm
and cold (an empty cache directory; with the default jobs and with `--jobs 1`), as ratios to
that process; warm, also as a ratio to the floor (a process that only starts, runs git's two
listings and reads the cache's packs: issue 33's target for warm `plan` and `list`, whose row
the generated checkouts add); and each command's peak RSS (the largest of its runs, warm, cold
and cold -j1 apart) against 2 KiB a test file plus 40 MiB (each process started by a small
launcher, which reports its time and peak: a child of this process would count this
process's own size). Last, the start of
`ci-policy --help` and `--version` as a ratio to `python -c pass` (both subprocesses).
Timings are medians of `--repeat` runs; a cold run gets a fresh cache directory each time.

Usage: python bench/scan_bench.py [--sizes 1000,5000,20000] [--huge] [--repeat R] [--no-git]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import gc
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from processes import measure
from synthetic import compile_bytecode, git_commit, gpu_checkout

from ci_policy.adapters.parallel import available_cores
from ci_policy.cli.main import main as cli_main
from ci_policy.model.snapshot import load_snapshot

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gpu-repo"
COMMANDS = {
    "lint": ["lint", "--format", "json"],
    "registry": ["registry", "--format", "json"],
    "plan": ["plan", "--event", "pull_request", "--labels-json", '["run-ci-megatron"]', "--diff", "",
             "--format", "json"],
}


def make_checkout(root: Path, n: int, git: bool) -> None:
    gpu_checkout(root, n, groups=97)
    if git:
        git_commit(root)


def median_time(fn: Callable[[], object], repeat: int, before: Callable[[], object] | None = None) -> float:
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_command(argv: list[str]) -> None:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli_main(argv)
    if code != 0:  # a time of a failed command measures nothing
        raise SystemExit(f"ci-policy {' '.join(argv)} exited {code}:\n{err.getvalue()}")


def bench_checkout(label: str, repo: Path, repeat: int, work: Path) -> None:
    files = load_snapshot(repo).files

    def bare() -> None:
        # With the cycle collector off, as every command runs: the ratios compare work, not
        # collector settings.
        gc.disable()
        try:
            for rel in files:
                ast.parse((repo / rel).read_bytes())
        finally:
            gc.enable()

    base = median_time(bare, repeat)
    print(f"\n{label}: {len(files)} test files; bare read+parse {base * 1000:.0f} ms (= 1.00)")
    print(f"  {'command':<10} {'no-cache':>9} {'cold':>7} {'cold -j1':>9} {'warm':>7} {'clone':>7}"
          f"   (jobs: {available_cores()})")
    clone = work / "clone"
    if (repo / ".git").exists():  # git's own clone: an index that matches its work tree, as in CI
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(repo), str(clone)], check=True,
                       env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
    else:
        shutil.copytree(repo, clone, symlinks=True)
    for name, argv in COMMANDS.items():
        cache = work / f"cache-{name}"
        full = [*argv, "--repo", str(repo)]
        uncached = median_time(lambda full=full: run_command([*full, "--no-cache"]), repeat)
        cold = median_time(lambda full=full, cache=cache: run_command([*full, "--cache", str(cache)]), repeat,
                           before=lambda cache=cache: shutil.rmtree(cache, ignore_errors=True))
        serial = median_time(lambda full=full, cache=cache: run_command([*full, "--cache", str(cache), "--jobs", "1"]),
                             repeat, before=lambda cache=cache: shutil.rmtree(cache, ignore_errors=True))
        warm = median_time(lambda full=full, cache=cache: run_command([*full, "--cache", str(cache)]), repeat)
        cloned = [*argv, "--repo", str(clone), "--cache", str(cache)]
        fresh = median_time(lambda cloned=cloned: run_command(cloned), repeat)
        print(f"  {name:<10} {uncached / base:>9.2f} {cold / base:>7.2f} {serial / base:>9.2f} {warm / base:>7.2f}"
              f" {fresh / base:>7.2f}   (warm {warm * 1000:.0f} ms, clone {fresh * 1000:.0f} ms)")
    shutil.rmtree(clone)


BARE_PROCESS = """\
import ast, gc, sys
gc.disable()
root = sys.argv[1]
for rel in sys.argv[2:]:
    with open(root + "/" + rel, "rb") as fh:
        ast.parse(fh.read())
"""


# The warm floor (issue 33): the interpreter's start, git's two listings of the checkout (as
# `adapters.git` runs them) and reading the cache's packs (one read, one hash, the keys' line
# decoded, and every entry: the command decodes each when it looks it up).
FLOOR_PROCESS = """\
import glob, hashlib, json, subprocess, sys
repo, cache = sys.argv[1], sys.argv[2]
for args in (["ls-files", "-s", "-v", "-z"], ["ls-files", "-m", "-o", "--exclude-standard", "-z"]):
    subprocess.run(["git", "-C", repo, *args], stdout=subprocess.PIPE, check=True)
decode = json.JSONDecoder().raw_decode
for pack in glob.glob(cache + "/*.pack.json"):
    with open(pack, "rb") as fh:
        header, _, body = fh.read().partition(b"\\n")
    hashlib.sha256(body).hexdigest()
    keys, *values = body.split(b"\\n")
    json.loads(keys)
    for value in values:
        decode(value.decode())
"""
# `list` of one shard, with the plan's inputs: warm, against the floor (issue 33).
LIST = ["list", "--stage", "stage-b", "--shard", "0", *COMMANDS["plan"][1:-2], "--format", "json"]


def bench_processes(repo: Path, repeat: int, work: Path, *, generated: bool = False) -> None:
    """Whole processes of the real interpreter: each command warm and cold (with the default jobs
    and with one) against the bare loop; warm `plan` and `list` against the floor; peak RSS."""
    files = [str(f) for f in load_snapshot(repo).files]
    script = str(Path(sys.executable).parent / "ci-policy")
    commands = {**COMMANDS, "list": LIST} if generated else COMMANDS  # stage-b: the generated checkouts' stage
    samples: dict[str, list[float]] = {"bare": [], "floor": []}
    rss: dict[str, int] = {}  # by "NAME WAY"
    for name, argv in commands.items():
        measure([sys.executable, script, *argv, "--repo", str(repo), "--cache", str(work / f"process-{name}")])
        samples.update({f"{name} {way}": [] for way in ("warm", "cold", "cold -j1")})
    for _ in range(repeat):  # alternating: a slow moment of the machine hits every row
        samples["bare"].append(measure([sys.executable, "-c", BARE_PROCESS, str(repo), *files]).wall)
        samples["floor"].append(measure([sys.executable, "-c", FLOOR_PROCESS, str(repo),
                                         str(work / "process-plan")]).wall)
        for name, argv in commands.items():
            full = [sys.executable, script, *argv, "--repo", str(repo)]
            usage = measure([*full, "--cache", str(work / f"process-{name}")])
            samples[f"{name} warm"].append(usage.wall)
            rss[f"{name} warm"] = max(rss.get(f"{name} warm", 0), usage.rss_kib)
            for way, jobs in (("cold", []), ("cold -j1", ["--jobs", "1"])):
                cold = work / f"process-cold-{name}"
                shutil.rmtree(cold, ignore_errors=True)
                usage = measure([*full, "--cache", str(cold), *jobs])
                samples[f"{name} {way}"].append(usage.wall)
                rss[f"{name} {way}"] = max(rss.get(f"{name} {way}", 0), usage.rss_kib)
    base, floor = statistics.median(samples["bare"]), statistics.median(samples["floor"])
    print(f"  process: bare read+parse as a process {base * 1000:.0f} ms (= 1.00); "
          f"floor (start, git ls-files, packs) {floor * 1000:.0f} ms")
    bound = 2 * len(files) + 40 * 1024  # issue 33: 2 KiB a test file plus 40 MiB
    for name in commands:
        warm, cold, serial = (statistics.median(samples[f"{name} {way}"]) for way in ("warm", "cold", "cold -j1"))
        peaks = "/".join(f"{rss[f'{name} {way}'] / 1024:.0f}" for way in ("warm", "cold", "cold -j1"))
        print(f"  process {name:<10} warm {warm / base:5.2f}  cold {cold / base:5.2f}  cold -j1 {serial / base:5.2f}"
              f"  warm/floor {warm / floor:5.2f}   (warm {warm * 1000:.0f} ms, cold {cold * 1000:.0f} ms, "
              f"peak RSS warm/cold/cold -j1 {peaks} MiB, bound {bound / 1024:.0f})")


def bench_start(repeat: int) -> None:
    script = Path(sys.executable).parent / "ci-policy"

    def spawn(argv: list[str]) -> Callable[[], object]:
        return lambda: subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)

    base = median_time(spawn([sys.executable, "-c", "pass"]), repeat)
    print(f"\nstart: python -c pass {base * 1000:.0f} ms (= 1.00)")
    for flag in ("--help", "--version"):
        took = median_time(spawn([str(script), flag]), repeat)
        print(f"  ci-policy {flag:<10} {took / base:.2f}   ({took * 1000:.0f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,5000,20000", help="generated checkout sizes (comma-separated)")
    parser.add_argument("--huge", action="store_true", help="also 50,000 files")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-git", action="store_true", help="generated checkouts are no git work trees "
                        "(content ids are SHA-256 of the bytes)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s] + ([50_000] if args.huge else [])
    compile_bytecode()  # as an installed wheel has it: processes time the commands, not compiling them
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["XDG_CACHE_HOME"] = str(work / "xdg")
        example = work / "example"
        shutil.copytree(EXAMPLE, example, ignore=shutil.ignore_patterns("__pycache__"))
        if not args.no_git:
            git_commit(example)
        bench_checkout("example repository", example, args.repeat, work / "ex")
        bench_processes(example, args.repeat, work / "ex")
        for n in sizes:
            repo = work / f"gen{n}"
            make_checkout(repo, n, git=not args.no_git)
            bench_checkout(f"generated ({'git' if not args.no_git else 'no git'})", repo, args.repeat, work / f"g{n}")
            bench_processes(repo, args.repeat, work / f"g{n}", generated=True)
            shutil.rmtree(repo)
    bench_start(max(args.repeat, 5))


if __name__ == "__main__":
    main()
