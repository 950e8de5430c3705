#!/usr/bin/env python3
"""Coverage-guided fuzzing of one target with atheris (libFuzzer), where atheris is installed.

- Usage: `python scripts/fuzz_atheris.py TARGET SECONDS [DIR]`: the target of
  `tests/hostile/fuzz/targets.py` named TARGET, for SECONDS seconds of libFuzzer's own
  clock (`-max_total_time`), its corpus and any crashing input kept in DIR (default: a
  temporary directory, printed). `scripts/fuzz.py --engine atheris` runs every target so.
- Seeds: the target's kept inputs (`tests/hostile/fuzz/<target>/`) and 50 inputs of its
  hypothesis strategy. Only ci_policy's modules are instrumented for coverage: those imported
  with the targets, and the parser the target reaches (run once on a seed to import it).
- `planted` is a target that fails on any input holding `!`: it shows the engine finds
  and reports a crash (`tests/hostile/test_fuzz.py`).
- Out: libFuzzer's report on stderr, then one line `TARGET: atheris, N runs, nothing
  escaped` or `TARGET: atheris: EXCEPTION escaped (input in DIR/crash-...)`. Exit 0 when
  nothing escaped, 1 when an exception did, 2 for a usage error or no atheris.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _planted(data: bytes) -> str:
    if b"!" in data:
        raise ValueError("planted: the input holds '!'")
    return "accepted"


def _seeds(name: str, directory: Path) -> None:
    from hostile.fuzz.targets import CORPUS, TARGETS
    from hypothesis import HealthCheck, Phase, given, settings

    kept = CORPUS / name
    for n, path in enumerate(sorted(kept.iterdir()) if kept.is_dir() else []):
        (directory / f"kept-{n}").write_bytes(path.read_bytes())
    if name not in TARGETS:
        (directory / "seed-0").write_bytes(b"a")
        return
    drawn: list[bytes] = []

    @settings(max_examples=50, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(TARGETS[name].strategy())
    def draw(data: bytes) -> None:
        drawn.append(data)

    draw()
    for n, data in enumerate(drawn):
        (directory / f"drawn-{n}").write_bytes(data)


def child(name: str, seconds: float, directory: Path) -> None:
    """The fuzzing process itself (libFuzzer ends it)."""
    import atheris

    corpus = directory / "corpus"
    # Only ci_policy is instrumented for coverage: its modules imported here, the parser the target
    # reaches imported by running it once on a seed.
    with atheris.instrument_imports(include=["ci_policy"]):
        from hostile.fuzz.targets import TARGETS

        target = _planted if name == "planted" else TARGETS[name].run
        for seed in sorted(corpus.iterdir())[:1]:
            try:
                target(seed.read_bytes())
            except Exception:  # noqa: BLE001 - a seed may fail; libFuzzer reports it below
                pass

    def run(data: bytes) -> None:
        try:
            target(data)
        except UnicodeDecodeError as exc:
            # A target that reads text decodes its input first (`targets._text`): bytes that are no
            # UTF-8 are not an input of it, as they are never one of its hypothesis strategy.
            if traceback.extract_tb(exc.__traceback__)[-1].name != "_text":
                raise

    atheris.Setup([sys.argv[0], f"-max_total_time={max(1, int(seconds))}", f"-artifact_prefix={directory}/",
                   "-print_final_stats=1", str(corpus)], run)
    atheris.Fuzz()


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "--child":
        child(argv[1], float(argv[2]), Path(argv[3]))
        return 0
    if len(argv) not in (2, 3):
        print("usage: fuzz_atheris.py TARGET SECONDS [DIR]", file=sys.stderr)
        return 2
    from hostile.fuzz.targets import TARGETS

    name, seconds = argv[0], argv[1]
    if name not in TARGETS and name != "planted":
        print(f"fuzz_atheris.py: no target {name!r} (one of: {', '.join(sorted(TARGETS))}, planted)", file=sys.stderr)
        return 2
    try:
        import atheris  # noqa: F401
    except ImportError:
        print("fuzz_atheris.py: atheris is not installed (pip install atheris)", file=sys.stderr)
        return 2
    directory = Path(argv[2]) if len(argv) == 3 else Path(tempfile.mkdtemp(prefix=f"ci-policy-atheris-{name}-"))
    (directory / "corpus").mkdir(parents=True, exist_ok=True)
    _seeds(name, directory / "corpus")
    proc = subprocess.run([sys.executable, __file__, "--child", name, seconds, str(directory)],
                          capture_output=True, text=True, check=False, env={**os.environ, "PYTHONHASHSEED": "0"})
    sys.stderr.write(proc.stdout + proc.stderr)
    runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", proc.stderr)
    crashes = sorted(directory.glob("crash-*"))
    if proc.returncode == 0 and not crashes:
        print(f"{name}: atheris, {runs.group(1) if runs else '?'} runs, nothing escaped")
        return 0
    escaped = re.findall(r"^ *=== Uncaught Python exception: ===\n(\w+)",
                         proc.stdout + proc.stderr, re.M)
    what = escaped[0] if escaped else f"exit {proc.returncode}"
    print(f"{name}: atheris: {what} escaped (input in {crashes[0] if crashes else directory})")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
