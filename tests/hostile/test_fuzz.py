"""The fuzz targets of tests/hostile/fuzz/: bounded runs and the replayed corpus.

- `test_fuzz_target` (slow): every target for a bounded number of hypothesis examples,
  derandomized so the run is the same on every machine; only the parser's own errors
  (or its documented return values) may come out. `scripts/fuzz.py` runs the same
  targets for as long as asked.
- `test_corpus` (not slow): every input a fuzz run found to crash a parser, kept under
  `tests/hostile/fuzz/<target>/`, replayed with its exact expected outcome.
- `test_corpus_not_fixed_here`: crashes in readers another change of issue 14 hardens
  (numbers in the configuration: the numbers slice; archives and metric records: the
  store slice), kept as strict xfails naming the finding, so they turn into failures the
  day the reader is fixed and the case must get its exact outcome in `CASES`; the bounded
  run of such a target is a strict xfail for the same reason.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest
from hostile.fuzz.harness import fuzz
from hostile.fuzz.targets import CORPUS, TARGETS, Target
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

# The finding owned by another slice of issue 14, per target whose crashes it closes.
ELSEWHERE = {
    "config": "finding 5 (out-of-range numbers; slice numbers): a 400-digit integer, a 5,000-digit `requires` "
              "and a stage without a name beside an implicit root raise OverflowError/ValueError/TypeError",
    "archive": "finding 6 (archives in tune; slice store): zipfile and decompressor errors escape the reader",
    "metric_records": "finding 8 (metric records; slice store): a record that is not an object of points "
                      "raises AttributeError/KeyError",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz_target(name, request):
    # 18 targets x 40 examples stay under 60 s on 2 cores; scripts/fuzz.py runs longer.
    target = TARGETS[name]
    if name in ELSEWHERE:
        # Its corpus (replayed first, below) meets the known crash on every run; fixed, it passes.
        request.applymarker(pytest.mark.xfail(strict=True, reason=ELSEWHERE[name]))

    @settings(max_examples=40, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(target.strategy())
    def run(data):
        target.run(data)

    # The corpus first: a known crash is met on every run, not only when the draw finds it.
    for path in sorted((CORPUS / name).glob("*")):
        run = example(path.read_bytes())(run)
    run()


HERE = "InputError: labels.py:1:1: labels file labels.py is too deeply nested for the Python parser " \
       "(hint: KNOWN_LABELS is a flat dict literal; remove the nesting)"

CASES = [
    # finding (fuzz): a labels file nested past CPython's parser limits raised MemoryError
    ("labels", "deep-nesting.txt", HERE),
    # finding (fuzz): a SyntaxWarning echoed the file's line, a workflow command, to stderr
    # finding (fuzz): a diff --git header ending in an unopened quote raised ValueError
    ("unified", "quote-without-opening.diff",
     "InputError: pr.diff: pr.diff: cannot read the path of diff --git 'b/t\\\\303\\\\251.py\"'"),
    # found writing the pull_request target: a payload whose labels are a number raised TypeError
    ("pull_request", "labels-not-a-list.json",
     "InputError: event.json: event payload: labels is not a list "
     "(hint: pass the payload of a pull_request event, or --number N)"),
    ("markers", "syntax-warning-echo.txt", "ok: 1 registration(s), 0 gate(s), 0 suppression(s), errors none"),
]

NOT_FIXED_HERE = [
    # finding 5: the fuzzer found the 400-digit integer; the two others are the issue's, made minimal
    ("config", "huge-integer.yml", OverflowError),
    ("config", "huge-requires.yml", ValueError),
    ("config", "stage-without-name.yml", TypeError),
    # finding 6: the fuzzer found each kind but a bad CRC; the first four are small hand-made
    # equivalents, the others the inputs it shrank to
    ("archive", "bad-header-magic.zip", zipfile.BadZipFile),
    ("archive", "bad-crc.zip", zipfile.BadZipFile),
    ("archive", "bad-deflate.zip", zlib.error),
    ("archive", "bad-bzip2.zip", OSError),
    ("archive", "truncated-bzip2.zip", EOFError),
    ("archive", "encrypted-flag.zip", RuntimeError),
    ("archive", "unsupported-version.zip", NotImplementedError),
    ("archive", "patched-data-flag.zip", NotImplementedError),
    # finding 8: found by the fuzzer
    ("metric_records", "not-an-object.jsonl", AttributeError),
    ("metric_records", "no-points.jsonl", KeyError),
    ("metric_records", "empty-string-value.jsonl", KeyError),
]


@pytest.mark.parametrize(("name", "file", "expected"), CASES)
def test_corpus(name, file, expected):
    assert TARGETS[name].run((CORPUS / name / file).read_bytes()) == expected


@pytest.mark.parametrize(("name", "file", "kind"), NOT_FIXED_HERE)
def test_corpus_not_fixed_here(name, file, kind, request):
    # `raises`: only the crash this case was kept for counts as expected, not another one.
    request.applymarker(pytest.mark.xfail(strict=True, raises=kind, reason=ELSEWHERE[name]))
    TARGETS[name].run((CORPUS / name / file).read_bytes())


def test_every_corpus_file_is_replayed():
    listed = {(n, f) for n, f, _ in CASES} | {(n, f) for n, f, _ in NOT_FIXED_HERE}
    on_disk = {(p.parent.name, p.name) for p in CORPUS.glob("*/*") if p.is_file()}
    assert on_disk == listed


def test_every_target_has_a_corpus_directory_name():
    # A corpus directory is named after its target: a typo would leave its cases unreplayed.
    assert {p.name for p in CORPUS.iterdir() if p.is_dir() and p.name != "__pycache__"} <= set(TARGETS)


def test_the_harness_reports_each_escaping_exception_once_with_its_minimal_input():
    def run(data: bytes) -> str:
        if b"!" in data:
            raise ZeroDivisionError("boom")
        return "ok"

    target = Target("boom", run, lambda: st.binary(min_size=1, max_size=8))
    report = fuzz(target, 2.0, round_size=50)
    assert report.tried > 50
    assert [(f.kind, f.where, f.message, f.data) for f in report.found] == [("ZeroDivisionError", "?", "boom", b"!")]


def test_the_script_prints_inputs_tried_per_target():
    script = Path(__file__).resolve().parents[2] / "scripts" / "fuzz.py"
    done = subprocess.run([sys.executable, str(script), "--seconds", "1", "--target", "grammar", "--target", "diff"],
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    # In the order the targets are named.
    assert re.fullmatch(r"grammar: [1-9][0-9]* inputs, 0 exception\(s\)\ndiff: [1-9][0-9]* inputs, 0 exception\(s\)\n",
                        done.stdout)
