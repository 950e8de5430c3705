"""Fuzz targets: every parser of ci_policy that reads input a pull request (or anyone
able to comment on one) controls.

- A `Target` is a name, a hypothesis strategy of inputs (random text, and mutations of
  real inputs from this repository), and `run(data) -> str`, the outcome: `ok: ...`
  for an accepted input, `TypeName: message` for a refused one.
- `run` lets out only what the parser documents: `CiPolicyError` (and, for the few
  readers whose contract says so, the documented `ValueError`/`RecursionError`). Any
  other exception escapes, and hypothesis reports it with a minimal input.
- The input of every target is one `bytes` value (text targets get UTF-8), so a crashing
  input is kept as a file under `tests/hostile/fuzz/<target>/` and replayed as it is.
- Used by `tests/hostile/test_fuzz.py` (bounded) and `scripts/fuzz.py` (long runs).
"""

from __future__ import annotations

import atexit
import io
import re
import shutil
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TypeVar

from hypothesis import strategies as st

from ci_policy.errors import CiPolicyError

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[3]
CORPUS = Path(__file__).resolve().parent

# Pieces that tend to break readers: numbers at and past every range, nesting, YAML and
# JSON syntax, control and bidi characters, workflow-command prefixes, long runs.
TOKENS = (
    "1e308", "1e309", "-1", "-0", "0", "1_000", "0x10", "0o7", "1.5", ".inf", "-.inf", ".nan", "NaN", "Infinity",
    "9" * 400, "9" * 5000, "True", "False", "None", "null", "~", "yes", "no", "[", "]", "{", "}", "(", ")", ":",
    ",", "\n", "\r", "\r\n", "\0", "\t", " ", '"', "'", "\\", "\\x", "\\u", "*", "**", "..", "/", "./", "#", "- ",
    "? ", "&a ", "*a", "!!python/object:os.system ", "!!binary ", "<<: ", "---\n", "...\n", "%YAML 1.1\n",
    "\u202e", "\u2066", "\ufeff", "\x1b[31m", "::warning::x", "##[error]", "[" * 300, "(" * 300, "{" * 300,
    "a" * 5000, "é", "\U0001f600", "\udfff"[:0], "=", "==", "lambda: 0", "*args", "**kw", "f'{x}'", "\\N{DASH}",
)


# Numbers past every documented range, and forms YAML or JSON read as something else.
NUMBERS = ("1e308", "1e400", "-1", "-0", "0", "9" * 400, "9" * 5000, "1_0", "0x1F", ".inf", ".nan", "1.5", "true")

# A value after `key: ` or `"key": ` (YAML or JSON), up to the next delimiter.
VALUE_RE = re.compile(r"(?<=: )[^\n{}\[\],]+")


@st.composite
def mutated(draw: st.DrawFn, seeds: tuple[str, ...], tokens: tuple[str, ...] = ()) -> str:
    """A seed with one to five edits: insert, delete, replace or duplicate a span."""
    text = draw(st.sampled_from(seeds))
    pieces = st.one_of(st.sampled_from(TOKENS + tokens), st.text(max_size=12))
    for _ in range(draw(st.integers(1, 5))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 60)))
        op = draw(st.sampled_from(("insert", "delete", "replace", "duplicate", "value")))
        values = [m.span() for m in VALUE_RE.finditer(text)]
        if op == "value" and values:
            # One YAML or JSON value swapped whole: how a number out of range reaches a field.
            i, j = draw(st.sampled_from(values))
            text = text[:i] + draw(st.one_of(st.sampled_from(NUMBERS), pieces)) + text[j:]
        elif op == "insert":
            text = text[:i] + draw(pieces) + text[i:]
        elif op == "delete":
            text = text[:i] + text[j:]
        elif op == "replace":
            text = text[:i] + draw(pieces) + text[j:]
        else:
            text = text[:j] + text[i:j] + text[j:]
    return text


def texts(seeds: tuple[str, ...], tokens: tuple[str, ...] = ()) -> st.SearchStrategy[bytes]:
    """Random text, token soup and mutated seeds, as UTF-8 bytes."""
    soup = st.lists(st.one_of(st.sampled_from(TOKENS + tokens), st.text(max_size=8)), max_size=30).map("".join)
    return st.one_of(st.text(max_size=200), soup, mutated(seeds, tokens), mutated(seeds, tokens)).map(
        lambda s: s.encode("utf-8", "surrogatepass"))


def _read(rel: str) -> str:
    return (ROOT / rel).read_text(encoding="utf-8")


def _seeds(pattern: str, *dirs: str) -> tuple[str, ...]:
    found = sorted(p for d in dirs for p in (ROOT / d).rglob(pattern) if p.is_file() and not p.is_symlink())
    return tuple(p.read_text(encoding="utf-8", errors="replace") for p in found)


@dataclass(frozen=True)
class Target:
    name: str
    run: Callable[[bytes], str]
    strategy: Callable[[], st.SearchStrategy[bytes]]
    suffix: str = ".txt"  # of corpus files; Python sources too, so that no linter reads them as code


class WarningShown(AssertionError):
    """A parser let a warning out: shown, a warning may print input to stderr (workflow commands)."""


def quiet(run: Callable[[bytes], str]) -> Callable[[bytes], str]:
    """`run`, failing when the parser emits any warning (each is recorded, none is shown)."""

    def checked(data: bytes) -> str:
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            outcome = run(data)
        if shown:
            raise WarningShown(f"{shown[0].category.__name__}: {shown[0].message}")
        return outcome

    return checked


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def _refused(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".replace(_scratch_dir(), "<dir>")


def _outcome(read: Callable[[], T], accepted: Callable[[T], str],
             refusals: tuple[type[BaseException], ...] = (CiPolicyError,)) -> str:
    """`accepted(read())`, or the refusal when `read` raises one of its documented `refusals`."""
    try:
        value = read()
    except refusals as exc:
        return _refused(exc)
    return accepted(value)


def _scratch() -> Path:
    return Path(_scratch_dir())


@cache
def _scratch_dir() -> str:
    # One directory per process, reused: the readers of files take a path. Removed at exit.
    path = tempfile.mkdtemp(prefix="ci-policy-fuzz-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _file(name: str, data: bytes) -> Path:
    path = _scratch() / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@cache
def _example():  # type: ignore[no-untyped-def]
    """The example repository's configuration and labels: the context of the marker target."""
    from ci_policy.config.top import parse_config
    from ci_policy.read.labels import parse_labels

    return parse_config(_read("examples/gpu-repo/.github/ci-policy.yml")), parse_labels(
        _read("examples/gpu-repo/labels.py"))


# -- the targets ---------------------------------------------------------------------------------


def run_config(data: bytes) -> str:
    from ci_policy.config.top import parse_config

    return _outcome(lambda: parse_config(_text(data), ".github/ci-policy.yml"),
                    lambda config: f"ok: {len(config.stages)} stage(s)")


def run_labels(data: bytes) -> str:
    from ci_policy.read.labels import parse_labels

    return _outcome(lambda: parse_labels(_text(data), "labels.py"),
                    lambda registry: f"ok: {', '.join(registry.names)}")


def run_markers(data: bytes) -> str:
    """A test file as discovery reads it: markers, registrations, gates, suppressions."""
    from ci_policy.gates.declarations import gates_of
    from ci_policy.model.registry import registrations_of
    from ci_policy.model.suppress import inline_suppressions
    from ci_policy.read.markers import mentions_marker, scan

    text = _text(data)
    config, labels = _example()
    mentions_marker(text, frozenset(config.markers.names))
    result = scan(text, "tests/e2e/test_fuzz.py", frozenset(config.markers.names))
    registrations = registrations_of(result, config, labels)
    gates = gates_of(result)
    found, bad = inline_suppressions(text, "tests/e2e/test_fuzz.py")
    codes = sorted({d.code or "-" for d in [*result.errors, *bad]})
    return (f"ok: {len(registrations)} registration(s), {len(gates)} gate(s), {len(found)} suppression(s), "
            f"errors {' '.join(codes) or 'none'}")


def run_diff(data: bytes) -> str:
    from ci_policy.read.diff import parse_name_status

    return _outcome(lambda: parse_name_status(data, "pr.diff"), lambda changes: f"ok: {len(changes)} change(s)")


def run_unified(data: bytes) -> str:
    from ci_policy.read.unified import name_status_from_unified

    return _outcome(lambda: name_status_from_unified(_text(data), "pr.diff"), lambda out: f"ok: {out!r}")


def run_grammar(data: bytes) -> str:
    from ci_policy.adapters.github.grammar import parse

    return _outcome(lambda: parse(_text(data)), lambda command: f"ok: {command}")


def run_access(data: bytes) -> str:
    from ci_policy.adapters.github.access import parse_access_policy

    return _outcome(lambda: parse_access_policy(_text(data), _example()[1]),
                    lambda policy: f"ok: {len(policy.groups)} group(s), {len(policy.commands)} command(s)")


def run_strictjson(data: bytes) -> str:
    """Documented: `DuplicateKey`, else what `json.loads` raises (ValueError, RecursionError)."""
    from ci_policy.read.strictjson import loads

    return _outcome(lambda: loads(_text(data)), lambda value: f"ok: {type(value).__name__}",
                    (CiPolicyError, ValueError, RecursionError))


def run_labels_json(data: bytes) -> str:
    from ci_policy.plan.policy import parse_labels_json

    return _outcome(lambda: parse_labels_json(_text(data)), lambda labels: f"ok: {labels}")


def run_needs_json(data: bytes) -> str:
    from ci_policy.plan.outcome import outcome, parse_needs

    return _outcome(lambda: parse_needs(_text(data)), lambda jobs: f"ok: {outcome(False, jobs).ok}")


def run_estimates(data: bytes) -> str:
    from ci_policy.model.estimates import parse_estimates

    return _outcome(lambda: parse_estimates(_text(data), "ci/estimates.json"),
                    lambda table: f"ok: {len(table)} estimate(s)")


def run_log(data: bytes) -> str:
    """A job log: documented never to raise."""
    from ci_policy.adapters.tuning.logs import read_log

    rows = read_log(_text(data), source="job.txt", job_name="gpu-a (0)")
    return f"ok: {len(rows)} row(s)"


def run_timings(data: bytes) -> str:
    from ci_policy.adapters.tuning.records import read_records

    return _outcome(lambda: read_records(_file("timings.jsonl", data), job_name="gpu-a (0)"),
                    lambda rows: f"ok: {len(rows)} row(s)")


def run_metric_records(data: bytes) -> str:
    """A test's metric records (the per-process files and a merged record).

    Documented: `ValueError` for a constant, an unknown schema or a value that is not a number.
    """
    from ci_policy.read.records import merge_records, read_record

    return "; ".join(_outcome(read, lambda series: f"ok: {len(series)} series", (CiPolicyError, ValueError))
                     for read in (lambda: merge_records(_file("records/metrics-1-a.jsonl", data).parent),
                                  lambda: read_record(_file("record.json", data))))


def run_workflows(data: bytes) -> str:
    from ci_policy.read.workflows import read_workflows

    root = _scratch() / "checkout"
    _file("checkout/.github/workflows/ci.yml", data)
    workflows, problems = read_workflows(root, ".github/workflows")
    return f"ok: {sum(len(w.jobs) for w in workflows)} job(s), problems {[d.code for d in problems]}"


def _event(data: bytes) -> object:
    import json

    return json.loads(_text(data))  # GitHub wrote the payload's syntax; a PR, its values


def run_pull_request(data: bytes) -> str:
    """A pull_request event's `pull_request` object (or the API's answer) as `pull-request` reads it."""
    from ci_policy.adapters.github.pulls import pull_request_of

    # ValueError, RecursionError: json's own.
    return _outcome(lambda: pull_request_of(_event(data), "event payload", "event.json"),
                    lambda pull: f"ok: #{pull.number} labels {list(pull.labels)}",
                    (CiPolicyError, ValueError, RecursionError))


def run_comment_event(data: bytes) -> str:
    """An issue_comment event as the comment gateway screens it, then its body's command."""
    from ci_policy.adapters.github.gateway import screen
    from ci_policy.adapters.github.grammar import parse

    try:
        event = _event(data)
    except (ValueError, RecursionError) as exc:
        return _refused(exc)
    if not isinstance(event, dict):
        return "not an object"  # the command line refuses it before screening (cli/comment.py)
    context, reason = screen(event, "o/r", 1)
    body = event.get("comment", {}).get("body") if isinstance(event.get("comment"), dict) else None
    try:
        command = parse(body) if isinstance(body, str) else None
    except CiPolicyError as exc:
        return _refused(exc)
    return f"ok: {context is not None} {reason!r} {command}"


def run_archive(data: bytes) -> str:
    """A run's artifact as `tune --github-run` reads it."""
    from ci_policy.adapters.github.download import _records_of_archive
    from ci_policy.adapters.tuning.records import read_records

    return _outcome(lambda: _records_of_archive(data, "o/r", 1, "timings", read_records),
                    lambda rows: f"ok: {len(rows)} row(s)")


def run_scan_cache(data: bytes) -> str:
    """A scan-cache pack as `DirScanCache.load` reads it and `StrictDecoder` decodes its entries:
    the bytes as a whole pack file, then as the entries of a pack whose checksum matches (what
    someone able to write the cache directory writes). Documented never to raise: whatever is
    not a pack or not a scan of its file is none (and one warning)."""
    import hashlib

    from ci_policy.adapters.scan_cache import CACHE_VERSION, DirScanCache
    from ci_policy.model.scan_codec import StrictDecoder

    config, labels = _example()
    decoder = StrictDecoder(config, labels)
    context = "c" * 64
    directory = _scratch() / "scan-cache"
    directory.mkdir(exist_ok=True)
    header = f'{{"cache":{CACHE_VERSION},"context":"{context}","sha256":"{hashlib.sha256(data).hexdigest()}"}}\n'
    outcomes = []
    for pack in (data, header.encode() + data):
        (directory / f"{context}.pack.json").write_bytes(pack)
        warnings: list[str] = []
        entries = DirScanCache(directory, warnings.append).load(context)
        decoded = 0
        for key, value in entries.items():
            file = key.split("\0")[0]
            for label_calls in (True, False):
                scan = decoder.decode(value, file, label_calls)
                decoded += scan is not None
                if scan is not None and decoder.encode_checked(scan, file) is None:
                    raise AssertionError(f"a decoded scan of {file!r} does not encode back")
        outcomes.append(f"{len(entries)} entries, {decoded} decoded, {len(warnings)} warning(s)")
    return "ok: " + "; ".join(outcomes)


@cache
def _pack_seeds() -> tuple[str, ...]:
    """The body of a pack of the example repository's scans (`encode_scan`), and of one file each."""
    from helpers import pack_body

    from ci_policy.model.scan import scan_file, scan_key
    from ci_policy.model.scan_codec import encode_scan

    config, labels = _example()
    root = ROOT / "examples" / "gpu-repo"
    entries = {}
    for path in sorted((root / "tests").rglob("test_*.py")):
        file = path.relative_to(root).as_posix()
        entries[scan_key(file, "sha256:" + "0" * 64)] = encode_scan(
            scan_file(path.read_text(encoding="utf-8"), file, config, labels))
    one = [pack_body({k: v}).decode() for k, v in entries.items()]
    return (pack_body(entries).decode(), *one)


CACHE_TOKENS = ("\n[", "]\n", '{"t": [', '{"l": [', "]}", "null", "true", "1e308", "NaN", "Infinity", "-1", "0",
                "9" * 40, '"x\\r::error::x"', '"##[warning]x"', '"\\u202e"', '"\\udfff"', '"tests/e2e/test_x.py"',
                '"stage-c-4-gpu-mi350"', '"register_rocm_ci"', '"CP999"', '"nosuch"', "[[[[[[", "]]]]]]")


# -- strategies ----------------------------------------------------------------------------------

CONFIG_TOKENS = ("stages:", "name:", "backend:", "cuda", "rocm", "cpu", "partitions:", "timeout:", "runs_on:",
                 "requires:", "est_time:", "implicit:", "discovery:", "roots:", "patterns:", "exclude:",
                 "labels_file:", "estimates_file:", "version: 1", "cadences:", "scopes:", "gates:", "markers:",
                 "max_parallel:", "window:", "min_samples:", "retries:", "external: true", ">=1.0", "==1.*")
MARKER_TOKENS = ("register_cuda_ci(", "register_rocm_ci(", "register_cpu_ci(", "register_ci_gate(", "est_time=",
                 "suite=", "labels=", "nightly=", "disabled=", "metric_key=", "steps=", "constraint=",
                 "enforce=", "# ci-policy: ignore[", "CP201]", "if __name__ == '__main__':\n    main()\n",
                 "from ci_policy.sdk import register_cuda_ci\n", "import ci_policy.sdk as reg\n")
JSON_TOKENS = ('"schema": 1', '"estimates": [', '"file": ', '"est_time": ', '"suite": ', '"groups": {',
               '"commands": {', '"version": 1', '"pipeline": {', '"pins": {', '"allowed_labels": [',
               '"user_ids": [', '"repository_permissions": [', '"a{9999999999}"', '"(a+)+$"', '"[z-a]"',
               '"result": "success"', '"outputs": {', '"series": {', '"key": ', '"points": [[1, 2]]',
               '"status": "pass"', '"attempt": ', '"elapsed": ', '"shard": ', '"stage": ', '"run_id": ')
LOG_TOKENS = ("End (1/2):\n", "filename='tests/x.py', elapsed=12, estimated_time=30\n", "PASSED:\n", "FAILED:\n",
              "NOT RUN (1, fast-fail):\n", "RETRIED (1):\n", "[1/2] tests/a.py PASS elapsed=1.5s est=3s attempt=1\n",
              "The operation was canceled.\n", "Enabled 2 test(s) for gpu-a shard 0:\n", "  tests/a.py (est 30s)\n",
              "2024-01-01T00:00:00.000Z ", "==== ci-policy run: gpu-a shard 0 ====\n", "GATE-FAIL", " (timeout ")
WORKFLOW_TOKENS = ("jobs:", "runs-on:", "steps:", "run: ci-policy run --stage ", "uses: ./.github/workflows/x.yml@",
                   "with:", "secrets:", "needs:", "on:", "strategy:", "matrix:", "${{ matrix.x }}", "- run: |\n")
DIFF_TOKENS = ("M\0", "A\0", "D\0", "R100\0", "C050\0", "R\0", "X\0", "T\0", "a.py\0", "/abs\0", "../x\0", "\0",
               "a\nb\0", "a\rb\0")
UNIFIED_TOKENS = ("diff --git ", "a/x b/x\n", "new file mode 100644\n", "deleted file mode 100644\n",
                  "rename from ", "rename to ", "copy from ", "copy to ", "similarity index 90%\n",
                  "similarity index 999%\n", "@@ -1 +1 @@\n", '"a/\\303\\251"', '"\\777"', "\\q", "Binary files ")
COMMENT_TOKENS = ("/run-ci-", "/bypass-fastfail", "/clear-labels", "/rerun-failed-ci", "/rerun-test ",
                  "/ok-to-test ", "abcdef0", "tests/e2e/test_a.py", "\u2215", "\uff0f", "megatron")


PULL = ('{"number": 42, "head": {"sha": "' + "a" * 40 + '", "repo": {"full_name": "fork/r"}}, "base": {"sha": "'
        + "b" * 40 + '", "repo": {"full_name": "o/r"}}, "labels": [{"name": "run-ci-megatron"}], '
        '"author_association": "CONTRIBUTOR"}')
COMMENT = ('{"action": "created", "issue": {"number": 42, "pull_request": {"url": "x"}}, "comment": {"id": 7, '
           '"body": "/run-ci-megatron", "html_url": "https://github.com/o/r/pull/42#c7", "user": {"type": "User", '
           '"id": 5, "login": "dev"}}, "sender": {"id": 5}, "repository": {"full_name": "o/r", "id": 1, '
           '"default_branch": "main"}}')
EVENT_TOKENS = ('"labels": ', '"number": ', '"sha": ', '"user": ', '"id": ', '"body": ', '"type": "Bot"', "5",
                '"x"', "[5]", "{}")


GLOB_TOKENS = ("*", "**", "**/", "/**", "?", "[", "]", "[!", "[^", "-", "!", "\\!", "\\#", "/", "a" * 255,
               "*a" * 12, "\0", "\n")
# The reference is pathspec's backtracking regex: exponential in the `*` of a segment, so it
# is asked only about short inputs (the matcher alone answers the long ones).
REFERENCE_MAX = 24


def run_glob(data: bytes) -> str:
    """A configuration glob and a path (`GLOB\\0PATH`): refused with a `GlobError`, or
    matched in at most (len(path) + 1) x len(program) steps, answering as pathspec does."""
    from glob_reference import reference

    from ci_policy.read.globs import GlobError, compile_glob, deciding_glob

    glob, _, path = _text(data).partition("\0")
    try:
        compiled = compile_glob(glob)
    except GlobError as exc:
        return _refused(exc)
    sizes = compiled.work(path)
    if len(sizes) != len(path) + 1 or max(sizes) > max(1, len(compiled.program)):
        raise AssertionError(f"the matcher did more than one pass: {sizes}")
    decided = deciding_glob((glob,), path)
    if len(path) <= REFERENCE_MAX and len(glob) <= REFERENCE_MAX:
        with warnings.catch_warnings():
            # pathspec's own regex of a class such as `[!a!--c]` makes `re` warn of a set
            # difference: the reference's warning, not one ci_policy lets out (atheris found it).
            warnings.simplefilter("ignore", FutureWarning)
            expected = reference((glob,), path)
        if decided != expected:
            raise AssertionError(f"{glob!r} on {path!r}: {decided!r}, pathspec says {expected!r}")
    return f"ok: {'match' if decided is not None else 'no match'}"


def _unified_seed() -> str:
    return ("diff --git a/docs/guide.md b/docs/guide.md\nindex 1..2 100644\n--- a/docs/guide.md\n"
            "+++ b/docs/guide.md\n@@ -1 +1 @@\n-a\n+b\n"
            "diff --git a/src/a.py b/src/b c.py\nsimilarity index 90%\nrename from src/a.py\nrename to src/b c.py\n"
            "diff --git \"a/t\\303\\251.py\" \"b/t\\303\\251.py\"\nnew file mode 100644\n")


def _timings() -> tuple[str, ...]:
    return _seeds("*.jsonl", "tests/data/tuning")


def _archive() -> st.SearchStrategy[bytes]:
    members = st.lists(st.tuples(st.sampled_from(("t.jsonl", "d/", "x.txt", "../e.jsonl", "a.jsonl", "big.jsonl")),
                                 st.one_of(st.sampled_from(_timings()).map(str.encode), st.binary(max_size=64)),
                                 st.sampled_from((zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2))),
                       max_size=3, unique_by=lambda m: m[0])

    def build(entries: list[tuple[str, bytes, int]]) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, content, method in entries:
                archive.writestr(name, content, compress_type=method)
        return buffer.getvalue()

    @st.composite
    def damaged(draw: st.DrawFn) -> bytes:
        blob = bytearray(draw(members.map(build)))
        for _ in range(draw(st.integers(0, 3))):
            if blob:
                blob[draw(st.integers(0, len(blob) - 1))] = draw(st.integers(0, 255))
        return bytes(blob)

    return st.one_of(st.binary(max_size=64), damaged())


def _diffs() -> st.SearchStrategy[bytes]:
    seeds = (_read("examples/pr-42.diff"), "M\0a.py\0R090\0a.py\0b.py\0")
    return texts(seeds, DIFF_TOKENS)


TARGETS: dict[str, Target] = {t.name: Target(t.name, quiet(t.run), t.strategy, t.suffix) for t in (
    Target("config", run_config, lambda: texts(_seeds("ci-policy.yml", "examples", "tests/data"), CONFIG_TOKENS),
           ".yml"),
    Target("labels", run_labels, lambda: texts((_read("examples/gpu-repo/labels.py"), _read("labels.py")),
                                               ("KNOWN_LABELS", " = {", "'a': 'b',", "KNOWN_LABELS: dict = "))),
    Target("markers", run_markers, lambda: texts(_seeds("test_*.py", "examples/gpu-repo", "tests/data"),
                                                 MARKER_TOKENS)),
    Target("diff", run_diff, _diffs, ".bin"),
    Target("unified", run_unified, lambda: texts((_unified_seed(),), UNIFIED_TOKENS), ".diff"),
    Target("grammar", run_grammar, lambda: texts(("/run-ci-megatron", "/rerun-test tests/e2e/test_a.py",
                                                  "/ok-to-test abcdef0"), COMMENT_TOKENS)),
    Target("access", run_access, lambda: texts((_read("examples/gpu-repo/.github/ci-commands.json"),), JSON_TOKENS),
           ".json"),
    Target("strictjson", run_strictjson, lambda: texts(('{"a": [1, 2.5, "x", null, true]}',), JSON_TOKENS),
           ".json"),
    Target("labels_json", run_labels_json, lambda: texts(('["run-ci-megatron", "documentation"]', "null"),
                                                         JSON_TOKENS), ".json"),
    Target("needs_json", run_needs_json, lambda: texts(
        ('{"plan": {"result": "success", "outputs": {"plan_complete": "false", "invalid_files": "[\\"a\\"]"}}}',),
        JSON_TOKENS), ".json"),
    Target("estimates", run_estimates, lambda: texts(
        ('{"schema": 1, "estimates": [{"file": "tests/e2e/test_a.py", "suite": "gpu-a", "est_time": 30}]}',),
        JSON_TOKENS), ".json"),
    Target("log", run_log, lambda: texts(_seeds("*.txt", "tests/data/tuning"), LOG_TOKENS)),
    Target("timings", run_timings, lambda: texts(_timings(), JSON_TOKENS), ".jsonl"),
    Target("metric_records", run_metric_records, lambda: texts(
        ('{"schema": 1}\n{"key": "train/loss", "points": [[0, 1.5], [1, "NaN"]]}\n',
         '{"schema": 1, "series": {"train/loss": [[0, 1.5], [1, "Infinity"]]}}\n'), JSON_TOKENS), ".jsonl"),
    Target("workflows", run_workflows, lambda: texts(_seeds("*.yml", "tests/data/workflows", "examples"),
                                                     WORKFLOW_TOKENS), ".yml"),
    Target("archive", run_archive, _archive, ".zip"),
    Target("glob", run_glob, lambda: texts(("docs/**\0docs/a.md", "**/*.md\0a/b/README.md", "!a/**/b/\0a/x/b/c",
                                             "*a*a*a*a*b\0x/" + "a" * 255, "[!a-c]?*/\0d/e"), GLOB_TOKENS)),
    Target("pull_request", run_pull_request, lambda: texts((PULL,), JSON_TOKENS + EVENT_TOKENS), ".json"),
    Target("comment_event", run_comment_event, lambda: texts((COMMENT,), JSON_TOKENS + EVENT_TOKENS), ".json"),
    Target("scan_cache", run_scan_cache, lambda: texts(_pack_seeds(), CACHE_TOKENS), ".json"),
)}
