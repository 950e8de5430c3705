"""Benchmark: what starting a command costs: its imports, and its whole process, cold and warm.

On a generated checkout (a git work tree of `--files` test files, `synthetic.gpu_checkout`),
for `plan --format json`, the plan job (`plan --format github --json-out --stage-plans`),
`lint --format json`, `registry --format json` and `list` (one shard), it times whole
processes of the real interpreter (`sys.executable` and the `ci-policy` script beside it):

- cold (an empty `--cache DIR` each round) and warm (that cache filled): CPU time of the
  process (user + system, `os.wait4`), the median of `--repeat` rounds, alternating with the
  baseline, `python -c pass`, and printed as a ratio to it;
- imports: the `-X importtime` self times of every module the warm command imports after the
  interpreter's start (`site` and what it imports left out), summed, and how many modules;
  `-X importtime` of `import ci_policy.cli.COMMAND` alone (its cumulative time); and how many
  dataclasses the command creates (each costs about 0.4 ms: `dataclasses` compiles its
  generated methods).

`--against PYTHON`: also the same processes with another installation's interpreter (another
checkout's virtualenv, say the code before a change), in the same rounds, alternating, with
the ratio of this one's time to that one's. Bytecode of ci_policy is written first (as `pip
install` does: `synthetic.compile_bytecode`); with `--against`, that interpreter's too.

Usage: python bench/imports_bench.py [--files 400] [--repeat 7] [--against PYTHON]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from processes import measure
from synthetic import compile_bytecode, git_commit, gpu_checkout

LABELS = '["run-ci-megatron"]'
COMMANDS: dict[str, list[str]] = {
    "plan": ["plan", "--event", "pull_request", "--labels-json", LABELS, "--diff", "", "--format", "json"],
    "plan job": ["plan", "--event", "pull_request", "--labels-json", LABELS, "--diff", "", "--format", "github",
                 "--json-out", "{out}/plan.json", "--stage-plans", "{out}/stages"],
    "lint": ["lint", "--format", "json"],
    "registry": ["registry", "--format", "json"],
    "list": ["list", "--stage", "stage-b", "--shard", "0", "--event", "pull_request", "--labels-json", LABELS,
             "--diff", ""],
}

# Counts the dataclasses a command creates, in a process of its own.
DATACLASSES_PROBE = """
import dataclasses, sys
made = []
process = dataclasses._process_class
def counted(cls, *args, **kwargs):
    made.append(cls)
    return process(cls, *args, **kwargs)
dataclasses._process_class = counted
from ci_policy.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stderr.write("\\n%d\\n" % len(made))
"""


def cpu_ms(argv: list[str], env: dict[str, str]) -> float:
    """CPU time (user + system) of one process, its output discarded (`lint` may exit 1)."""
    return measure(argv, env=env, ok=(0, 1)).cpu * 1000


def importtime_rows(stderr: str) -> list[tuple[int, int, str, int]]:
    """(self us, cumulative us, module, depth) of each `-X importtime` line."""
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line.split(":", 1)[1].split("|")
        rows.append((int(own), int(cumulative), name.strip(), len(name) - len(name.lstrip())))
    return rows


def run_imports(python: str, argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(ms, modules): the self times of the modules a command imports after `site`, summed."""
    proc = subprocess.run([python, "-X", "importtime", *argv], capture_output=True, text=True, env=env, check=False)
    rows = importtime_rows(proc.stderr)
    after = next(i for i, row in enumerate(rows) if row[2] == "site" and row[3] == 1) + 1
    return sum(row[0] for row in rows[after:]) / 1000, len(rows) - after


def module_ms(python: str, module: str, env: dict[str, str]) -> float:
    proc = subprocess.run([python, "-X", "importtime", "-c", f"import {module}"], capture_output=True, text=True,
                          env=env, check=True)
    return next(row[1] for row in importtime_rows(proc.stderr) if row[2] == module) / 1000


def dataclasses_made(python: str, args: list[str], env: dict[str, str]) -> int:
    proc = subprocess.run([python, "-c", DATACLASSES_PROBE, *args], capture_output=True, text=True, env=env,
                          check=False)
    return int(proc.stderr.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--against", metavar="PYTHON", help="another installation's interpreter, timed alike")
    args = parser.parse_args()
    pythons = {"this": sys.executable}
    if args.against:
        pythons["against"] = args.against
        subprocess.run([args.against, "-c", "import compileall, ci_policy, pathlib; compileall.compile_dir("
                        "pathlib.Path(ci_policy.__file__).parent, quiet=1)"], check=True)
    compile_bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        root, out = Path(tmp) / "repo", Path(tmp) / "out"
        gpu_checkout(root, args.files)
        git_commit(root)
        out.mkdir()
        env = {**os.environ, "GITHUB_OUTPUT": os.devnull, "GITHUB_STEP_SUMMARY": os.devnull}
        floor = {name: [] for name in pythons}
        print(f"{args.files} test files; CPU time of each process (user + system), median of {args.repeat} rounds")
        header = "command    state   ms   /pass"
        if args.against:
            header += "  against ms  this/against"
        print(header)
        for command, template in COMMANDS.items():
            argv = [arg.replace("{out}", str(out)) for arg in template] + ["--repo", str(root)]
            for state in ("cold", "warm"):
                caches = {name: Path(tmp) / f"cache-{name}" for name in pythons}
                for name, python in pythons.items():
                    shutil.rmtree(caches[name], ignore_errors=True)
                    if state == "warm":
                        cpu_ms([str(Path(python).parent / "ci-policy"), *argv, "--cache", str(caches[name])], env)
                times: dict[str, list[float]] = {name: [] for name in pythons}
                for i in range(args.repeat):
                    order = list(pythons) if i % 2 == 0 else list(pythons)[::-1]
                    for name in order:
                        python = pythons[name]
                        floor[name].append(cpu_ms([python, "-c", "pass"], env))
                        if state == "cold":
                            shutil.rmtree(caches[name], ignore_errors=True)
                        times[name].append(cpu_ms([str(Path(python).parent / "ci-policy"), *argv, "--cache",
                                                   str(caches[name])], env))
                this = statistics.median(times["this"])
                line = f"{command:10} {state:5} {this:5.0f}  {this / statistics.median(floor['this']):5.2f}"
                if args.against:
                    against = statistics.median(times["against"])
                    line += f"  {against:10.0f}  {this / against:12.2f}"
                print(line, flush=True)
        print(f"python -c pass: {statistics.median(floor['this']):.1f} ms"
              + (f" (against: {statistics.median(floor['against']):.1f} ms)" if args.against else ""))
        print("imports (warm, -X importtime, median of the rounds): the run's modules after site, summed;"
              " import ci_policy.cli.COMMAND alone; dataclasses the command creates")
        print("command    run ms  modules  module ms  dataclasses" + ("   (against: run ms, module ms, dataclasses)"
                                                                      if args.against else ""))
        for command, template in COMMANDS.items():
            argv = [arg.replace("{out}", str(out)) for arg in template] + ["--repo", str(root)]
            module = f"ci_policy.cli.{template[0]}"
            runs: dict[str, list[tuple[float, int]]] = {name: [] for name in pythons}
            alone: dict[str, list[float]] = {name: [] for name in pythons}
            for i in range(args.repeat):
                for name in list(pythons) if i % 2 == 0 else list(pythons)[::-1]:
                    python = pythons[name]
                    runs[name].append(run_imports(python, [str(Path(python).parent / "ci-policy"), *argv, "--cache",
                                                           str(Path(tmp) / f"cache-{name}")], env))
                    alone[name].append(module_ms(python, module, env))
            shown = [(statistics.median(ms for ms, _ in runs[name]), statistics.median(n for _, n in runs[name]),
                      statistics.median(alone[name]),
                      dataclasses_made(python, [*argv, "--cache", str(Path(tmp) / f"cache-{name}")], env))
                     for name, python in pythons.items()]
            run_ms, modules, alone, made = shown[0]
            line = f"{command:10} {run_ms:6.1f}  {modules:7.0f}  {alone:9.1f}  {made:11d}"
            if args.against:
                line += f"   ({shown[1][0]:.1f}, {shown[1][2]:.1f}, {shown[1][3]})"
            print(line, flush=True)


if __name__ == "__main__":
    main()
