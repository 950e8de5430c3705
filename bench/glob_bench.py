"""Benchmark: glob matching in time linear in the path (issue 32, finding 3).

For globs with many `*` in one segment and `**` chains, against a path whose one segment
is n characters of `a` (almost matching: no `b`), prints per glob and n:

- ours ms:      ci-policy's matcher (`ci_policy.read.globs`), the first match (cold: its
                lazy DFA is built while it reads the path) and the median warm one;
- bound:        whether the cold match took under 10 ms (the issue's bound per glob and path);
- pathspec ms:  pathspec's backtracking regex (what ci-policy matched with before), only up
                to `--pathspec-max` characters (it takes seconds at 100, minutes at 200);
- growth:       ours (warm) at n over ours at the smallest n, against n over the smallest n
                (linear: never faster than n; pathspec's grows exponentially).

Then a typical configuration (stage paths, selection rules) over a typical diff, both ways,
as a time ratio. Usage: python bench/glob_bench.py [--sizes 12,24,60,100,200,255] [--pathspec-max 24]
[--repeat N] (tests/test_bench.py runs it on the smallest inputs).
"""

from __future__ import annotations

import argparse
import statistics
import time

from pathspec import GitIgnoreSpec

from ci_policy.read.globs import compile_glob, matches_any

GLOBS = ("*a*a*a*a*b", "*a*a*a*a*a*a*a*a*b", "**/*a*a*a*b/**/x", "a*/**/**/*a*a*a*b", "[a-z]*a*[!x]*a*b")
BOUND_MS = 10.0


def timed(call, repeat: int) -> tuple[float, float]:
    """The first call's time and the median of `repeat` more, in ms."""
    started = time.perf_counter()
    call()
    cold = (time.perf_counter() - started) * 1000
    warm = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        warm.append((time.perf_counter() - started) * 1000)
    return cold, statistics.median(warm) if warm else cold


def fresh(glob: str):
    """The glob compiled anew (an empty DFA cache): what a first match pays."""
    compile_glob.cache_clear()
    return compile_glob(glob)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="12,24,60,100,200,255", help="segment lengths, comma-separated")
    parser.add_argument("--pathspec-max", type=int, default=24, help="the longest segment pathspec is timed on")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.sizes.split(","))
    print(f"{'glob':24} {'n':>4} {'ours cold ms':>12} {'ours warm ms':>12} {'bound':>6} {'pathspec ms':>11} "
          f"{'growth':>7} {'n growth':>8}")
    worst = 0.0
    for glob in GLOBS:
        base = None
        for n in sizes:
            path = "x/" + "a" * n
            cold, warm = timed(lambda glob=glob, path=path: fresh(glob).match(path), 0)
            _, warm = timed(lambda glob=glob, path=path: compile_glob(glob).match(path), args.repeat)
            assert compile_glob(glob).match(path) is None
            worst = max(worst, cold)
            base = base or warm
            if n <= args.pathspec_max:
                spec = GitIgnoreSpec.from_lines([glob])
                theirs = f"{timed(lambda spec=spec, path=path: spec.match_file(path), 0)[0]:11.2f}"
            else:
                theirs = f"{'-':>11}"
            print(f"{glob:24} {n:4d} {cold:12.3f} {warm:12.3f} {'yes' if cold < BOUND_MS else 'NO':>6} {theirs} "
                  f"{warm / base:7.2f} {n / sizes[0]:8.2f}")
    print(f"slowest cold match: {worst:.3f} ms (bound {BOUND_MS:g} ms): {'within' if worst < BOUND_MS else 'OVER'}")

    # A typical configuration and diff: what every `plan` pays, both ways.
    config = ["docs/**", "**/*.md", "!docs/api/**", "python/sglang/srt/layers/**", "test/registered/**",
              "sgl-kernel/", "*.toml", "/setup.py", "benchmark/**/bench_*.py", ".github/workflows/*.yml"]
    diff = [f"python/sglang/srt/layers/attention/backend_{i}.py" for i in range(200)] + \
           [f"docs/guide/page_{i}.md" for i in range(100)] + [f"test/registered/test_{i}.py" for i in range(200)]
    spec = GitIgnoreSpec.from_lines(config)
    ours_time = timed(lambda: [matches_any(config, p) for p in diff], args.repeat)[1]
    theirs_time = timed(lambda: [spec.match_file(p) for p in diff], args.repeat)[1]
    assert [matches_any(config, p) for p in diff] == [spec.match_file(p) for p in diff]
    print(f"typical: {len(config)} globs x {len(diff)} paths, ours/pathspec time ratio {ours_time / theirs_time:.2f}")


if __name__ == "__main__":
    main()
