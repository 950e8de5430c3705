#!/usr/bin/env python3
"""Fuzz every parser of ci_policy that reads untrusted input, for longer than the tests do.

- Usage: `python scripts/fuzz.py [--seconds N] [--target NAME ...] [--save] [--engine E]`: N seconds
  per target (default 60), every target of `tests/hostile/fuzz/targets.py` unless
  `--target` names some. The test command runs the same targets for a bounded number of
  examples (`tests/hostile/test_fuzz.py`).
- Prints per target: the inputs tried and every exception that escaped the parser (one
  per type and raising line), with the minimal input hypothesis shrank it to. `--save`
  keeps each such input as `tests/hostile/fuzz/<target>/found-<n><suffix>`, to be added
  to the replayed corpus with its expected outcome once the parser is fixed.
- Exit 1 when an exception escaped, 0 otherwise.
- Targets are hypothesis strategies: hypothesis is already a test dependency and shrinks
  what it finds. `--engine atheris` runs each target coverage-guided instead, through
  atheris (libFuzzer; a test dependency on Linux), one process per target
  (`scripts/fuzz_atheris.py`, which says what it keeps where).

The runs that closed issue 14's fuzzing (29 minutes on a shared 2-core machine, 101,288
inputs; found -> where it went):
  access 6,600, comment_event 4,500, diff 4,500, estimates 6,900, grammar 6,300,
  labels_json 6,600, log 6,600, needs_json 5,100, strictjson 6,000, timings 4,500,
  workflows 4,200: nothing escaped.
  labels 7,730: MemoryError from a labels file nested past the parser's limits -> CP408.
  unified 8,008: ValueError from `diff --git b/x.py"` -> refused as an unreadable header.
  markers 6,300: a SyntaxWarning echoing the file's line to stderr -> never shown (and a
    target now fails on any warning).
  pull_request 3,900: nothing random; a seed mutated by hand while writing the target
    (labels: 5) raised TypeError -> refused as "labels is not a list".
  config 4,832: OverflowError from a 400-digit integer (finding 5).
  metric_records 3,817: AttributeError, KeyError (finding 8).
  archive 4,901: BadZipFile, zlib.error, OSError, EOFError, RuntimeError (encrypted),
    NotImplementedError (finding 6).
The first atheris run over every target (5 s each, issue 32) found what 101,288 hypothesis
inputs had not: archive (an empty member name: IndexError in zipfile), workflows (900 unclosed
`{`: RecursionError in PyYAML's parser) and glob (the reference's re warning). Fixed, then
10 s each of archive, workflows, glob, config, markers and scan_cache: nothing escaped.
Every crashing input is kept and replayed with its exact expected outcome by
tests/hostile/test_fuzz.py.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from hostile.fuzz.harness import fuzz  # noqa: E402
from hostile.fuzz.targets import CORPUS, TARGETS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="seconds per target (default 60)")
    parser.add_argument("--target", action="append", choices=sorted(TARGETS), help="a target (repeatable)")
    parser.add_argument("--save", action="store_true", help="keep each minimal crashing input as a corpus file")
    parser.add_argument("--engine", choices=("hypothesis", "atheris"), default="hypothesis",
                        help="hypothesis strategies (default), or coverage-guided atheris")
    args = parser.parse_args(argv)
    if args.seconds <= 0:
        parser.error("--seconds must be positive")
    if args.engine == "atheris":
        script = ROOT / "scripts" / "fuzz_atheris.py"
        codes = [subprocess.run([sys.executable, str(script), name, str(args.seconds)], check=False,
                                stderr=subprocess.DEVNULL).returncode
                 for name in args.target or sorted(TARGETS)]
        return max(codes)
    escaped = 0
    for name in args.target or sorted(TARGETS):
        report = fuzz(TARGETS[name], args.seconds)
        print(f"{name}: {report.tried} inputs, {len(report.found)} exception(s)", flush=True)
        for n, found in enumerate(report.found, start=1):
            escaped += 1
            first = found.message.splitlines()[0] if found.message else ""
            print(f"  {found.kind} at ci_policy/{found.where}: {first}")
            print(f"    minimal input: {found.data!r}")
            if args.save:
                path = CORPUS / name / f"found-{n}{TARGETS[name].suffix}"
                path.parent.mkdir(exist_ok=True)
                path.write_bytes(found.data)
                print(f"    saved: {path.relative_to(ROOT)}")
    return 1 if escaped else 0


if __name__ == "__main__":
    sys.exit(main())
