"""The scan cache as the snapshot uses it: stored scans read back equal, a hit never changes
an output, and every test file is parsed at most once per command."""

from __future__ import annotations

import ast
import dataclasses
import datetime
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers import EXAMPLE_REPO, MAIN_BLOCK, MINIMAL_CONFIG, MINIMAL_LABELS, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_policy.adapters.scan_cache import DirScanCache
from ci_policy.config.quarantine import Quarantine
from ci_policy.model import scan as scan_mod
from ci_policy.model import snapshot as snapshot_mod
from ci_policy.model.scan import scan_context, scan_file, scan_key
from ci_policy.model.scan_codec import StrictDecoder, encode_scan
from ci_policy.model.snapshot import load_snapshot

SNIPPETS = (
    "from ci_policy import register_cuda_ci\nregister_cuda_ci(est_time=300, suite='gpu-a', labels=['megatron'])\n",
    "register_cuda_ci(12.5, 'gpu-b', labels=['fsdp', 'long'], nightly=True)\n",
    "register_rocm_ci(est_time=1_800, suite='amd', labels=['fsdp'], disabled='flaky')\n",
    "register_cpu_ci(est_time=5, suite='cpu')\n",
    "register_cpu_ci(est_time=60 * 30, suite='cpu')\n",
    "register_cuda_ci(est_time=1, suite='gpu-c', labels=['megatrn'])\n",
    "register_cuda_ci(est_time=1, suite='gpu-a')  # ci-policy: ignore[CP228]\n",
    "register_ci_gate(metric_key='train/x', steps=[1, 2], constraint={'rel_up': 0.5})\n",
    "def f(:\n",
    "# ci-policy: ignore\nx = 1\n",
    "def helper():\n    register_cuda_ci(est_time=1, suite='gpu-a', labels=['megatron'])\n",
    "register_amd_ci(est_time=1, suite='amd')\n",
    "import os\n",
    "\nif __name__ == '__main__':\n    main()\n",
)
PATHS = ("tests/test_a.py", "tests/e2e/test_b.py", "tests/unit/test_c.py", "tests/e2e/test_d.py",
         "tests/unit/deep/test_e.py")
COMMANDS = (
    ["lint", "--format", "json"],
    ["registry", "--format", "json"],
    ["plan", "--event", "pull_request", "--labels-json", '["run-ci-megatron", "run-ci-fsdp"]', "--diff", "",
     "--format", "json"],
)

sources = st.lists(st.sampled_from(SNIPPETS), min_size=0, max_size=3).map("".join)
trees = st.dictionaries(st.sampled_from(PATHS), sources, min_size=1, max_size=len(PATHS))
edits = st.lists(st.tuples(st.sampled_from(PATHS), st.one_of(st.none(), sources)), max_size=3)
CONFIG_VARIANTS = (MINIMAL_CONFIG, MINIMAL_CONFIG.replace("partitions: 2", "partitions: 3"),
                   MINIMAL_CONFIG + "markers:\n  names: {register_amd_ci: rocm}\n")
# None: the labels file deleted (the scans' label calls then say why it is needed).
LABEL_VARIANTS = (MINIMAL_LABELS, MINIMAL_LABELS.replace('"long": "slow"', '"megatrn": "typo"'), None)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
                    "-c", "commit.gpgsign=false", *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})


def _commit(repo: Path) -> None:
    """`repo` made a git work tree with everything committed."""
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")


def _checkout(tmp: Path, tree: dict[str, str], use_git: bool) -> Path:
    """A minimal checkout holding `tree`, committed to git when `use_git`."""
    repo = tmp / "repo"
    _write(repo, {".github/ci-policy.yml": MINIMAL_CONFIG, "labels.py": MINIMAL_LABELS, **tree})
    if use_git:
        _commit(repo)
    return repo


def _write(repo: Path, files: dict[str, str | None]) -> None:
    for rel, text in files.items():
        path = repo / rel
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


def _outputs(repo: Path, cache: list[str], capsys: Any) -> list[tuple[int, str, str]]:
    return [run_cli([*command, "--repo", str(repo), *cache], capsys) for command in COMMANDS]


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=trees, changes=edits, use_git=st.booleans(), config=st.sampled_from(CONFIG_VARIANTS),
       labels=st.sampled_from(LABEL_VARIANTS))
def test_a_cache_hit_never_changes_an_output(tree, changes, use_git, config, labels, capsys) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo, cache_dir = _checkout(Path(tmp), tree, use_git), Path(tmp) / "cache"
        cached = ["--cache", str(cache_dir)]
        uncached = _outputs(repo, ["--no-cache"], capsys)
        assert _outputs(repo, cached, capsys) == uncached  # cold
        assert _outputs(repo, cached, capsys) == uncached  # warm
        # Edits after the cache was filled: changed, new and deleted files, another dialect or registry.
        _write(repo, {".github/ci-policy.yml": config, "labels.py": labels, **dict(changes)})
        uncached = _outputs(repo, ["--no-cache"], capsys)
        assert _outputs(repo, cached, capsys) == uncached
        assert _outputs(repo, cached, capsys) == uncached


def test_stored_scans_read_back_equal_for_every_example_file() -> None:
    snapshot = load_snapshot(EXAMPLE_REPO)
    from ci_policy.read.checkout import read_text

    decoder = StrictDecoder(snapshot.config, snapshot.labels)
    for file in snapshot.files:
        result = scan_file(read_text(EXAMPLE_REPO, file), file, snapshot.config, snapshot.labels)
        assert decoder.decode(encode_scan(result), file) == result
        assert decoder.encode_checked(result, file) == encode_scan(result)
        # Every item but a label call names its file: stored for another path, it is refused.
        assert (decoder.decode(encode_scan(result), "tests/other.py") is None) == any(encode_scan(result)[:4])
    assert decoder.decode({"format": 2, "scan": [[], [], [], [], []]}, "a.py") is None  # the format before
    assert decoder.decode({"format": 1, "registrations": [{"nope": 1}]}, "a.py") is None
    file = "tests/unit/test_a.py"
    stored = encode_scan(scan_file("register_cpu_ci(5, 'stage-a-cpu')\n", file, snapshot.config, snapshot.labels))
    assert len(stored) == 5 and len(stored[0]) == 1 and len(stored[0][0]) == 12
    for corrupt in (stored[:4], [[[1]], [], [], [], []], [[{"x": 1}], [], [], [], []], "x", [[], [], [], [], "x"],
                    [[], [], [], [], {"l": []}], [[[{"q": [1]}] * 12], [], [], [], []]):
        assert decoder.decode(corrupt, file) is None
    assert decoder.decode(stored, file) is not None and decoder.decode(stored, "tests/unit/test_b.py") is None


def test_a_warm_cache_without_the_labels_file_still_names_the_registration_that_needs_it(tmp_path: Path,
                                                                                          capsys) -> None:
    # With the labels file there, a warm read leaves the label calls unmade; without it they say why it is needed.
    repo = _checkout(tmp_path, {"tests/test_a.py": SNIPPETS[0]}, use_git=True)
    cached = ["--cache", str(tmp_path / "cache")]
    with_labels = _outputs(repo, ["--no-cache"], capsys)
    assert _outputs(repo, cached, capsys) == with_labels  # cold
    assert _outputs(repo, cached, capsys) == with_labels  # warm
    (repo / "labels.py").unlink()
    uncached = _outputs(repo, ["--no-cache"], capsys)
    assert _outputs(repo, cached, capsys) == uncached  # cold: another scan context
    assert _outputs(repo, cached, capsys) == uncached  # warm
    code, out, _err = uncached[0]
    assert code == 1
    assert [(d["code"], d["message"]) for d in json.loads(out)["errors"] if d["code"] == "CP402"] == [
        ("CP402", "labels file labels.py does not exist, but 1 registration(s) use labels (first: tests/test_a.py:2)")]


@pytest.mark.parametrize("settled", [False, True], ids=["fresh-files", "settled-files"])
def test_a_warm_cache_parses_no_file_and_reads_each_once_as_bytes(settled: bool, tmp_path: Path,
                                                                  monkeypatch) -> None:
    # Every file is read, whatever git says of it: the key is the hash of the bytes read. Files
    # last changed long enough before they were read (settled) are found by their identity
    # record in a later run, and not read.
    from ci_policy.read import checkout

    monkeypatch.setattr(checkout, "SETTLED_NS", -10**12 if settled else 10**18)
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE_REPO, repo, ignore=shutil.ignore_patterns("__pycache__"))
    _commit(repo)
    from ci_policy.adapters.git import checkout_index
    from ci_policy.read.checkout import FileReader

    cache = DirScanCache(tmp_path / "cache")
    index = checkout_index(repo)
    assert index is not None
    cold = load_snapshot(repo, cache=cache, listing=lambda: index)
    texts: list[str] = []
    reads: list[str] = []
    parsed: list[str] = []
    real_text, real_read, real_scan = snapshot_mod.read_text, FileReader.read, scan_mod.scan_file

    def counting_text(root: Path, rel: str, **kw: Any) -> str:
        texts.append(rel)
        return real_text(root, rel, **kw)

    def counting_read(self: FileReader, rel: str) -> Any:
        reads.append(rel)
        return real_read(self, rel)

    def counting_scan(text: str, file: str, *args: Any) -> Any:
        parsed.append(file)
        return real_scan(text, file, *args)

    monkeypatch.setattr(snapshot_mod, "read_text", counting_text)
    monkeypatch.setattr(FileReader, "read", counting_read)
    monkeypatch.setattr(scan_mod, "scan_file", counting_scan)
    warm = load_snapshot(repo, cache=cache, listing=lambda: index)
    assert warm == cold
    assert (sorted(reads), parsed, [t for t in texts if t in cold.files]) == ([] if settled else sorted(cold.files),
                                                                             [], [])


def test_the_key_names_path_and_content() -> None:
    assert scan_key("tests/a.py", "git:" + "1" * 40) == "tests/a.py\0git:" + "1" * 40
    keys = {scan_key(p, c) for p in ("a.py", "b.py") for c in ("git:1", "sha256:1")}
    assert len(keys) == 4


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("cache", [["--no-cache"], ["--cache", "CACHE"]], ids=["uncached", "cold"])
def test_every_test_file_is_parsed_at_most_once_per_command(command, cache, tmp_path, monkeypatch, capsys) -> None:
    counts: dict[str, int] = {}
    real = ast.parse

    def counting(source: Any, filename: str = "<unknown>", *args: Any, **kwargs: Any) -> ast.AST:
        counts[filename] = counts.get(filename, 0) + 1
        return real(source, filename, *args, **kwargs)

    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE_REPO, repo, ignore=shutil.ignore_patterns("__pycache__"))
    # A suppression comment makes the suppression reader want statement spans too.
    with open(repo / "tests/e2e/test_fsdp_grpo.py", "a") as fh:
        fh.write("x = (1,\n     2)  # ci-policy: ignore[CP201]\n")
    monkeypatch.setattr(ast, "parse", counting)
    argv = [*command, "--repo", str(repo), *[str(tmp_path / a) if a == "CACHE" else a for a in cache]]
    run_cli(argv, capsys)
    monkeypatch.setattr(ast, "parse", real)
    files = load_snapshot(repo).files
    assert files and {f: counts.get(f, 0) for f in files} == dict.fromkeys(files, 1)


@pytest.fixture
def parallel_always(monkeypatch):
    """Workers for any number of files, in chunks of two: small repositories take the parallel path."""
    from ci_policy.adapters import parallel

    monkeypatch.setattr(parallel, "PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr(parallel, "MAX_CHUNK", 2)
    return parallel


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=trees, changes=edits, use_git=st.booleans(), config=st.sampled_from(CONFIG_VARIANTS))
def test_the_number_of_workers_never_changes_an_output(tree, changes, use_git, config, parallel_always,
                                                        capsys) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo, cache_dir = _checkout(Path(tmp), tree, use_git), Path(tmp) / "cache"
        for edit in (False, True):
            if edit:
                _write(repo, {".github/ci-policy.yml": config, **dict(changes)})
            serial = _outputs(repo, ["--no-cache", "--jobs", "1"], capsys)
            assert _outputs(repo, ["--no-cache", "--jobs", "3"], capsys) == serial
            assert _outputs(repo, ["--cache", str(cache_dir), "--jobs", "2"], capsys) == serial  # cold, then warm
            assert _outputs(repo, ["--cache", str(cache_dir), "--jobs", "2"], capsys) == serial


def _generated(root: Path, n: int) -> Path:
    files = {".github/ci-policy.yml": MINIMAL_CONFIG, "labels.py": MINIMAL_LABELS}
    for i in range(n):
        snippet = SNIPPETS[(i * 7) % len(SNIPPETS)] + SNIPPETS[(i * 3) % len(SNIPPETS)]
        files[f"{PATHS[i % len(PATHS)][:-3]}_{i}.py"] = snippet
    _write(root, files)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    return root


def counted_chunks(parallel, monkeypatch) -> list[int]:
    """The sizes of the chunks the scan's workers are handed, as `parallel._chunks` makes them."""
    chunks: list[int] = []
    real = parallel._chunks

    def counted(items, jobs):
        found = real(items, jobs)
        chunks.append(len(found))
        return found

    monkeypatch.setattr(parallel, "_chunks", counted)
    return chunks


def test_one_and_several_workers_give_byte_identical_json(tmp_path: Path, parallel_always, monkeypatch,
                                                          capsys) -> None:
    repo = _generated(tmp_path / "repo", 120)
    chunks = counted_chunks(parallel_always, monkeypatch)
    serial = _outputs(repo, ["--no-cache", "--jobs", "1"], capsys)
    assert chunks == []
    assert [json.loads(out)["schema"] for _code, out, _err in serial] == [1, 1, 1]
    assert _outputs(repo, ["--no-cache", "--jobs", "4"], capsys) == serial
    assert chunks == [60, 60, 60]  # 120 files in chunks of two, for each command
    cache = ["--cache", str(tmp_path / "cache"), "--jobs", "2"]
    assert _outputs(repo, cache, capsys) == serial  # cold: the workers' scans are stored
    assert _outputs(repo, cache, capsys) == serial  # warm: nothing left to scan
    assert chunks == [60, 60, 60, 60]


def test_files_scanned_in_batches_give_the_same_outputs_and_pack(tmp_path: Path, parallel_always, monkeypatch,
                                                                 capsys) -> None:
    repo = _generated(tmp_path / "repo", 120)
    whole = ["--cache", str(tmp_path / "whole"), "--jobs", "2"]
    serial = _outputs(repo, whole, capsys)
    chunks = counted_chunks(parallel_always, monkeypatch)
    monkeypatch.setattr(snapshot_mod, "_SCAN_BATCH", 50)
    for jobs in ("2", "1"):
        batched = tmp_path / f"batched{jobs}"
        assert _outputs(repo, ["--cache", str(batched), "--jobs", jobs], capsys) == serial
        assert ({p.name: p.read_bytes() for p in batched.iterdir()}
                == {p.name: p.read_bytes() for p in (tmp_path / "whole").iterdir()})
    assert chunks == [20, 20, 20]  # three batches of 40 files, in chunks of two; none with one job

def test_workers_that_fail_leave_the_scan_to_this_process(tmp_path: Path, parallel_always, monkeypatch,
                                                          capsys) -> None:
    import concurrent.futures

    repo = _generated(tmp_path / "repo", 20)
    serial = _outputs(repo, ["--no-cache", "--jobs", "1"], capsys)

    class Broken:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise OSError("no processes")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Broken)
    assert _outputs(repo, ["--no-cache", "--jobs", "2"], capsys) == serial


def test_the_context_changes_with_the_configuration_labels_version_and_parser(monkeypatch) -> None:
    snapshot = load_snapshot(EXAMPLE_REPO)
    config, labels = snapshot.config, snapshot.labels
    first = scan_context(config, labels)
    assert first == scan_context(config, labels) and len(first) == 64
    others = {scan_context(dataclasses.replace(config, gpu_requires_labels=not config.gpu_requires_labels), labels),
              scan_context(config, dataclasses.replace(labels, labels=labels.labels[1:]))}
    monkeypatch.setattr(scan_mod, "PARSER", ("cpython", 3, 99))
    others.add(scan_context(config, labels))
    monkeypatch.setattr(scan_mod, "PARSER", ("pypy", *scan_mod.PARSER[1:]))
    others.add(scan_context(config, labels))
    monkeypatch.setattr(scan_mod, "__version__", "0.0.0-other")
    others.add(scan_context(config, labels))
    assert len(others) == 5 and first not in others


def test_the_context_is_the_configuration_content_not_its_path() -> None:
    snapshot = load_snapshot(EXAMPLE_REPO)
    config, labels = snapshot.config, snapshot.labels
    assert config.path == ".github/ci-policy.yml"
    assert scan_context(dataclasses.replace(config, path="/elsewhere/copy.yml"), labels) == scan_context(config,
                                                                                                         labels)


def test_a_quarantine_entry_keeps_the_context() -> None:
    """No scan reads `quarantine:`; adding or renewing an entry leaves every stored scan a hit."""
    snapshot = load_snapshot(EXAMPLE_REPO)
    config, labels = snapshot.config, snapshot.labels
    entry = Quarantine(file="tests/e2e/test_x.py", reason="flaky", owner="@alice", until=datetime.date(2027, 1, 15))
    assert scan_context(dataclasses.replace(config, quarantine=(entry,)), labels) == scan_context(config, labels)


BAD_SUITE = ("from ci_policy import register_cuda_ci\n\n"
             'register_cuda_ci(60, "gpu-a", labels=["megatron"])\n'
             'register_cuda_ci(60, "nosuch", labels=["megatron"])\n' + MAIN_BLOCK)
BAD_SUITE_HINT = "configured cuda stages: gpu-a, gpu-b (stages are listed in {})"


def test_a_copy_of_the_configuration_elsewhere_reads_the_stored_scans_and_names_itself(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    repo = tmp_path / "repo"
    _write(repo, {".github/ci-policy.yml": MINIMAL_CONFIG, "labels.py": MINIMAL_LABELS,
                  "tests/unit/test_u.py": "x = 1\n", "tests/e2e/test_two.py": BAD_SUITE})
    copy = tmp_path / "elsewhere" / "copied.yml"
    copy.parent.mkdir()
    copy.write_text(MINIMAL_CONFIG)
    cache = DirScanCache(tmp_path / "cache")
    cold = load_snapshot(repo, cache=cache)
    packs = sorted((tmp_path / "cache").rglob("*.pack.json"))
    parsed: list[str] = []
    real_scan = scan_mod.scan_file

    def counting_scan(text: str, file: str, *args: Any) -> Any:
        parsed.append(file)
        return real_scan(text, file, *args)

    monkeypatch.setattr(scan_mod, "scan_file", counting_scan)
    warm = load_snapshot(repo, str(copy), cache=cache)
    assert (parsed, sorted((tmp_path / "cache").rglob("*.pack.json"))) == ([], packs)
    assert len(packs) == 1
    assert warm.config.path == str(copy)
    assert [(d.code, d.hint) for d in cold.errors] == [("CP225", BAD_SUITE_HINT.format(".github/ci-policy.yml"))]
    assert [(d.code, d.hint) for d in warm.errors] == [("CP225", BAD_SUITE_HINT.format(copy))]
    # And a scan of it without the cache says the same.
    assert load_snapshot(repo, str(copy)).errors == warm.errors


def test_the_configuration_placeholder_is_read_back_only_in_a_hint_and_as_the_text_it_becomes() -> None:
    config = load_snapshot(EXAMPLE_REPO).config
    labels = load_snapshot(EXAMPLE_REPO).labels
    placeholder = scan_mod.CONFIG_PATH
    file = "tests/e2e/test_fsdp_grpo.py"

    def stored(message: str, hint: str | None) -> list[Any]:
        return [[], [], [[message, file, 1, 1, hint, "CP225", "error"]], [], []]

    decoder = StrictDecoder(config, labels)
    hit = decoder.decode(stored("m", f"listed in {placeholder}"), file)
    assert hit is not None and hit.errors[0].hint == f"listed in {placeholder}"
    assert scan_mod.placed(hit, "other.yml").errors[0].hint == "listed in other.yml"
    assert decoder.decode(stored(f"listed in {placeholder}", "h"), file) is None
    assert decoder.decode(stored("m", f"listed in {placeholder[:-1]}"), file) is None
    # Next to the path it becomes, a stored colon would make `::`: refused as that text.
    colon = StrictDecoder(dataclasses.replace(config, path=":copy.yml"), labels)
    assert colon.decode(stored("m", f"in {placeholder}"), file) is not None
    assert colon.decode(stored("m", f"in :{placeholder}"), file) is None


def test_a_partly_read_file_is_partly_read_from_a_warm_cache(tmp_path: Path) -> None:
    """A stored scan keeps the diagnostic that drops one registration: a warm snapshot keeps the
    file's good registration and lists it partly read, as the cold one does."""
    repo = tmp_path / "repo"
    _write(repo, {".github/ci-policy.yml": MINIMAL_CONFIG, "labels.py": MINIMAL_LABELS,
                  "tests/unit/test_u.py": "x = 1\n",
                  "tests/e2e/test_two.py": "from ci_policy import register_cuda_ci, register_rocm_ci\n\n"
                  'register_cuda_ci(60, "gpu-a", labels=["megatron"])\n'
                  'register_rocm_ci(60, "nosuch", labels=["megatron"])\n'
                  'if __name__ == "__main__":\n    main()\n'})
    cache = DirScanCache(tmp_path / "cache")
    cold = load_snapshot(repo, cache=cache).usable()
    warm = load_snapshot(repo, cache=cache).usable()
    assert warm == cold
    assert [(f.file, f.kept, [d.code for d in f.diagnostics]) for f in warm.invalid_files] == [
        ("tests/e2e/test_two.py", ("gpu-a",), ["CP225"])]
    assert [(r.file, r.line, r.suite) for r in warm.registrations] == [
        ("tests/e2e/test_two.py", 3, "gpu-a"), ("tests/unit/test_u.py", None, "cpu")]
