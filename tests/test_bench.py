"""The benchmarks under bench/ still run: each on the smallest inputs it takes.

Nothing here times anything (speed is what the benchmarks report, as ratios measured in
their own run); these only keep a benchmark from breaking unnoticed when the code it
measures changes, and check the table each prints has its rows.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"

CASES = [
    # (script, arguments, a line start every run prints)
    ("plan_bench.py", ["--files", "30", "--repeat", "1"], ["baseline (read + ast.parse)", "lint", "plan (snapshot",
                                                           "shards (partition only)"]),
    ("scan_bench.py", ["--sizes", "30", "--repeat", "1"], ["example repository:", "generated (git): 30 test files",
                                                           "  lint", "  registry", "  plan", "start: python -c pass",
                                                           "  process: bare read+parse as a process",
                                                           "  process registry   warm "]),
    ("stage_start_bench.py", ["--sizes", "30", "--repeat", "1"],
     ["test files  replan s  --plan s  stage s  plan/replan  stage/replan", "        30 "]),
    ("stage_start_bench.py", ["--sizes", "30", "--repeat", "1", "--gates"],
     ["time to the first test's start, median of 1 runs each, its files declaring a gate",
      "test files  replan s  --plan s  stage s  plan/replan  stage/replan", "        30 "]),
    ("glob_bench.py", ["--sizes", "20,60", "--pathspec-max", "20", "--repeat", "1"],
     ["glob                        n ours cold ms", "*a*a*a*a*b                 60 ", "slowest cold match: ",
      "typical: 10 globs x 500 paths, ours/pathspec time ratio "]),
    ("workflows_bench.py", ["--files", "20", "--workflows", "3", "--kb", "2", "--repeat", "1"],
     ["command            seconds", "python -c pass", "registry", "lint", "lint / registry: ",
      "composing the workflows: libyaml "]),
    ("shards_bench.py", ["--stages", "1", "--small-stages", "1", "--small-max-files", "12"],
     ["shape    files shards planner/LPT", "e2e         20      2", "mean gap to the lower bound over every row:",
      "shape      files/shard shards stages proven unproven", "real                 6    2-2     ",
      "stages of up to 12 files: ", "slowest split: "]),
    ("miles_bench.py", ["--files", "20", "--repeat", "1"],
     ["20 test files, ", "row                 CPU ms  wall ms  RSS MiB  CPU/bare", "needed ", "required ", "collector ",
      "floor+imports ", "floor+own ", "plan cold -j1 ", "list warm ",
      "peak RSS bound (2 KiB a test file + 40 MiB): 40.0 MiB"]),
    ("imports_bench.py", ["--files", "20", "--repeat", "1"],
     ["20 test files; CPU time of each process", "command    state   ms   /pass", "plan       cold ",
      "list       warm ", "python -c pass: ", "command    run ms  modules  module ms  dataclasses", "plan job ",
      "registry "]),
    ("warm_bench.py", ["--sizes", "30", "--repeat", "1"],
     ["30 test files: floor (start, git ls-files, packs) ", "  plan this ", "  list this "]),
    ("plan_job_bench.py", ["--files", "20", "--repeat", "1"],
     ["plan job steps on 20 test files", "way        setup    plan   total  total/bare", "bare  ", "wheels  ",
      "warm  "]),
]


@pytest.mark.slow
@pytest.mark.parametrize("script, args, starts", CASES, ids=[c[0] for c in CASES])
def test_each_benchmark_runs_and_prints_its_table(tmp_path, script, args, starts):
    proc = subprocess.run([sys.executable, str(BENCH / script), *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, check=False)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    for start in starts:
        assert any(line.startswith(start) for line in lines), (start, proc.stdout)
