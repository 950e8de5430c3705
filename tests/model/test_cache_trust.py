"""The scan cache believes only what it read: two checkouts sharing one cache, one of them
lying in its own metadata (`.git/index`), and a test that writes the cache directory."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import MAIN_BLOCK, MINIMAL_CONFIG, MINIMAL_LABELS, pack_body, pack_entries, run_cli

TRUSTED = 'from ci_policy import register_cuda_ci\n\nregister_cuda_ci(60, "gpu-a", labels=["megatron"])\n' + MAIN_BLOCK
POISONED = TRUSTED.replace('labels=["megatron"])', 'labels=["megatron"], disabled="poisoned-by-A")')


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
                           "-c", "commit.gpgsign=false", *args], check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}).stdout


def _checkout(repo: Path, test_file: str) -> None:
    for rel, text in {".github/ci-policy.yml": MINIMAL_CONFIG, "labels.py": MINIMAL_LABELS,
                      "tests/e2e/test_a.py": test_file}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")


def _lying_checkout(repo: Path) -> None:
    """A checkout whose index names the trusted file's blob id for the poisoned bytes, with the
    poisoned file's own stat data, so that git lists it unmodified under the trusted id."""
    _checkout(repo, TRUSTED)
    trusted = _git(repo, "rev-parse", "HEAD:tests/e2e/test_a.py").strip()
    path = repo / "tests/e2e/test_a.py"
    path.write_text(POISONED)
    past = path.stat().st_mtime_ns - 10 * 10**9  # older than the index: git does not compare the bytes
    os.utime(path, ns=(past, past))
    _git(repo, "add", "tests/e2e/test_a.py")
    poisoned = _git(repo, "rev-parse", ":tests/e2e/test_a.py").strip()
    index = repo / ".git" / "index"
    body = index.read_bytes()[:-20]
    assert body.count(bytes.fromhex(poisoned)) == 1
    body = body.replace(bytes.fromhex(poisoned), bytes.fromhex(trusted))
    index.write_bytes(body + hashlib.sha1(body).digest())
    # What the attack needs: git lists the poisoned bytes as the trusted blob, unmodified.
    assert _git(repo, "ls-files", "-s", "-v", "tests/e2e/test_a.py").startswith(f"H 100644 {trusted} 0")
    assert _git(repo, "ls-files", "-m") == ""


def test_a_checkout_whose_index_lies_cannot_poison_another_sharing_the_cache(tmp_path: Path, capsys: Any) -> None:
    lying, trusted = tmp_path / "a", tmp_path / "b"
    _lying_checkout(lying)
    _checkout(trusted, TRUSTED)
    cache = ["--cache", str(tmp_path / "cache")]
    truth = run_cli(["registry", "--repo", str(trusted), "--no-cache"], capsys)
    assert truth[0] == 0 and "poisoned-by-A" not in truth[1]
    # The lying checkout's own scan is of the bytes it holds, cached or not.
    lied = run_cli(["registry", "--repo", str(lying), *cache], capsys)
    assert lied == run_cli(["registry", "--repo", str(lying), "--no-cache"], capsys)
    assert "disabled: poisoned-by-A" in lied[1]
    # The trusted checkout, warm or cold, shows its own file.
    assert run_cli(["registry", "--repo", str(trusted), *cache], capsys) == truth
    assert run_cli(["registry", "--repo", str(trusted), *cache], capsys) == truth
    # And in the other order: the trusted scan stored first is not the lying checkout's.
    assert run_cli(["registry", "--repo", str(lying), *cache], capsys) == lied


def test_the_cache_sweep_removes_what_changed_since_the_listing_and_nothing_else(tmp_path: Path) -> None:
    from ci_policy.adapters.cache_dir import discard_changed, listing

    cache = tmp_path / "scan"
    cache.mkdir()
    for name in ("kept.pack.json", "rewritten.pack.json", "chmod.pack.json"):
        (cache / name).write_text("{}")
    (cache / "sub").mkdir()
    before = listing(cache)
    assert sorted(before) == ["chmod.pack.json", "kept.pack.json", "rewritten.pack.json"]
    stat = (cache / "rewritten.pack.json").stat()
    (cache / "rewritten.pack.json").write_text("[]")  # same size, and the mtime set back: the ctime tells
    os.utime(cache / "rewritten.pack.json", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    (cache / "chmod.pack.json").chmod(0o600 if stat.st_mode & 0o777 != 0o600 else 0o644)
    (cache / "new.pack.json").write_text("{}")
    os.symlink(tmp_path / "elsewhere", cache / "link.pack.json")
    (cache / "sub" / "x").write_text("")
    assert discard_changed(cache, before) == 4
    assert sorted(p.name for p in cache.iterdir()) == ["kept.pack.json", "sub"]
    assert discard_changed(tmp_path / "missing", before) == 0


WRITER = '''from ci_policy import register_cpu_ci

register_cpu_ci(est_time=5, suite="unit")

if __name__ == "__main__":
    import shutil
    # A test of the pull request, planting a scan in the runner's cache.
    shutil.copy(PLANTED, CACHE)
    print("planted")
'''
UNIT = "version: 1\ndiscovery: {roots: [tests]}\nstages:\n  - {name: unit, backend: cpu, runner: python}\n"


def _unit_checkout(repo: Path, text: str) -> None:
    (repo / ".github").mkdir(parents=True)
    (repo / ".github" / "ci-policy.yml").write_text(UNIT)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_a.py").write_text(text)


def _planted_pack(tmp_path: Path, capsys: Any, writer: str) -> tuple[str, bytes]:
    """A pack whose checksum matches, holding for the trusted file's bytes a valid scan of others:
    what a test able to write the cache could plant. Returns its name and bytes."""
    trusted, twin = tmp_path / "trusted", tmp_path / "twin"
    _unit_checkout(trusted, writer)
    _unit_checkout(twin, writer.replace('suite="unit")', 'suite="unit", disabled="poisoned-by-a-test")'))
    packs = {}
    for repo in (trusted, twin):
        run_cli(["registry", "--repo", str(repo), "--cache", str(tmp_path / f"c-{repo.name}")], capsys)
        (path,) = (tmp_path / f"c-{repo.name}").glob("*.pack.json")
        header, _, body = path.read_bytes().partition(b"\n")
        packs[repo.name] = (path.name, json.loads(header), pack_entries(body))
    name, header, entries = packs["trusted"]
    (key,), (value,) = entries, packs["twin"][2].values()
    body = pack_body({key: value})
    return name, (f'{{"cache":{header["cache"]},"context":"{header["context"]}","sha256":'
                  f'"{hashlib.sha256(body).hexdigest()}"}}\n').encode() + body


def test_what_a_test_writes_to_the_cache_is_removed_after_the_run(tmp_path: Path, capsys: Any) -> None:
    default = Path(os.environ["XDG_CACHE_HOME"]) / "ci-policy" / "scan"
    # The pack's name is its context, which the file's text does not change: written once it is known.
    writer = WRITER.replace("PLANTED", repr(str(tmp_path / "planted"))).replace("CACHE", repr(str(default / "NAME")))
    name, _ = _planted_pack(tmp_path / "probe", capsys, writer)
    writer = writer.replace("NAME", name)
    name, planted = _planted_pack(tmp_path, capsys, writer)
    repo = tmp_path / "trusted"
    truth = run_cli(["registry", "--repo", str(repo), "--no-cache"], capsys)
    assert truth[0] == 0 and "poisoned" not in truth[1]
    # What the planted pack would do, were it left: a valid scan, of other bytes.
    default.mkdir(parents=True, exist_ok=True)
    (default / name).write_bytes(planted)
    poisoned = run_cli(["registry", "--repo", str(repo)], capsys)
    assert "disabled: poisoned-by-a-test" in poisoned[1]
    (default / name).unlink()
    # A damaged pack beside it: a stage job reads no cache, so it warns of nothing.
    (default / ("0" * 64 + ".pack.json")).write_bytes(b"damaged")
    rc, plan, _err = run_cli(["plan", "--repo", str(repo), "--event", "push", "--format", "json", "--no-cache"],
                             capsys)
    assert rc == 0
    (tmp_path / "plan.json").write_text(plan)
    (tmp_path / "planted").write_bytes(planted)
    rc, out, err = run_cli(["run", "--repo", str(repo), "--plan", str(tmp_path / "plan.json"), "--stage", "unit",
                            "--records-out", str(tmp_path / "records"), "--timings-out",
                            str(tmp_path / "timings.jsonl")], capsys)
    assert (rc, err) == (0, ""), out
    assert "planted" in out
    assert (f"ci-policy: removed 1 file(s) written to the scan cache while the tests ran ({default}); later "
            "commands read those test files again") in out.splitlines()
    assert sorted(p.name for p in default.iterdir()) == ["0" * 64 + ".pack.json"]  # what was there before stays
    assert run_cli(["registry", "--repo", str(repo)], capsys)[:2] == truth[:2]


def test_a_file_changed_since_its_identity_was_recorded_is_read_again(tmp_path: Path, capsys: Any,
                                                                      monkeypatch: Any) -> None:
    # Every file settled: a warm run finds each by its identity record, unread.
    from ci_policy.read import checkout

    monkeypatch.setattr(checkout, "SETTLED_NS", -10**12)
    repo = tmp_path / "repo"
    _checkout(repo, TRUSTED)
    cache = ["--cache", str(tmp_path / "cache")]
    assert run_cli(["registry", "--repo", str(repo), *cache], capsys)[0] == 0
    (pack,) = (tmp_path / "cache").glob("*.pack.json")
    assert sorted(k.split("\0")[1] for k in pack_entries(pack.read_bytes().partition(b"\n")[2]) if "stat" in k) == [
        "stat"]
    # The same size and mtime, other bytes: only the ctime (which no user sets) tells.
    path = repo / "tests/e2e/test_a.py"
    before = path.stat()
    path.write_text(POISONED.replace(', disabled="poisoned-by-A"', "").replace("60", "61"))
    assert path.stat().st_size == before.st_size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    truth = run_cli(["registry", "--repo", str(repo), "--no-cache"], capsys)
    assert "1m1s" in truth[1]
    assert run_cli(["registry", "--repo", str(repo), *cache], capsys) == truth


def test_identity_records_of_another_checkout_cost_a_read_and_no_write(tmp_path: Path, capsys: Any,
                                                                      monkeypatch: Any) -> None:
    from ci_policy.read import checkout

    monkeypatch.setattr(checkout, "SETTLED_NS", -10**12)
    first, second = tmp_path / "first", tmp_path / "second"
    _checkout(first, TRUSTED)
    _checkout(second, TRUSTED)  # a fresh clone: the same paths and bytes, other inodes
    cache = ["--cache", str(tmp_path / "cache")]
    truth = run_cli(["registry", "--repo", str(first), *cache], capsys)
    (pack,) = (tmp_path / "cache").glob("*.pack.json")
    written = pack.stat().st_mtime_ns, pack.read_bytes()
    assert run_cli(["registry", "--repo", str(second), *cache], capsys) == truth
    assert (pack.stat().st_mtime_ns, pack.read_bytes()) == written


def test_a_malformed_identity_record_is_refused_and_never_used(tmp_path: Path, capsys: Any,
                                                                monkeypatch: Any) -> None:
    from ci_policy.read import checkout

    monkeypatch.setattr(checkout, "SETTLED_NS", -10**12)
    repo = tmp_path / "repo"
    _checkout(repo, TRUSTED)
    cache = tmp_path / "cache"
    truth = run_cli(["registry", "--repo", str(repo), "--cache", str(cache)], capsys)
    (pack,) = cache.glob("*.pack.json")
    header, _, body = pack.read_bytes().partition(b"\n")
    entries = pack_entries(body)
    (stat_key,) = [k for k in entries if k.endswith("\0stat")]
    for bad in ([entries[stat_key][0]], [entries[stat_key][0], "git:" + "0" * 40], [7, entries[stat_key][1]],
                [entries[stat_key][0] + "\r::error::x", entries[stat_key][1]], {"a": 1}):
        damaged = pack_body({**entries, stat_key: bad})
        header_dict = json.loads(header)
        pack.write_bytes(json.dumps({**header_dict, "sha256": hashlib.sha256(damaged).hexdigest()},
                                    separators=(",", ":")).encode() + b"\n" + damaged)
        rc, out, err = run_cli(["registry", "--repo", str(repo), "--cache", str(cache)], capsys)
        assert (rc, out) == truth[:2]
        if isinstance(bad, dict):  # not an array: the pack is refused whole
            assert "is damaged (its entries are not keys with a JSON array each)" in err
        elif bad[0] != entries[stat_key][0] and isinstance(bad[0], str):
            assert err == ""  # another identity: the file is read, and the record replaced, as any stale one
        else:
            assert err == (f"ci-policy registry: warning: scan cache {cache}: 1 stored scan(s) are damaged or not of "
                           "the file they are stored for; ignored, and the test files read and parsed again (the "
                           "cache is rewritten as they are)\n")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_scan_whose_text_the_decoder_refuses_is_not_stored_and_reads_the_same(jobs: str, tmp_path: Path,
                                                                               capsys: Any, monkeypatch: Any) -> None:
    # A reason holding `::` and `##[` is the file's own text: shown as read from the checkout, never
    # from the cache (not stored), with workers (which hand back encoded scans) or without.
    from ci_policy.adapters import parallel
    from ci_policy.read import checkout

    monkeypatch.setattr(parallel, "PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr(checkout, "SETTLED_NS", 10**18)  # no identity record either
    repo = tmp_path / "repo"
    _checkout(repo, TRUSTED.replace('labels=["megatron"])', 'labels=["megatron"], disabled="see a::b ##[x]")'))
    cache = tmp_path / "cache"
    truth = run_cli(["registry", "--repo", str(repo), "--no-cache"], capsys)
    assert "see a::b" in truth[1]
    for _ in range(2):
        assert run_cli(["registry", "--repo", str(repo), "--cache", str(cache), "--jobs", jobs], capsys) == truth
    assert list(cache.glob("*.pack.json")) == []  # nothing else to store
