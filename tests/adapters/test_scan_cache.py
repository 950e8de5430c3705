"""The scan cache directory (`ci_policy/adapters/scan_cache.py`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ci_policy.adapters import scan_cache
from ci_policy.adapters.scan_cache import CACHE_VERSION, DirScanCache, default_dir, inside, open_cache

KEY = "tests/test_a.py\0git:" + "ab" * 20


CTX = "cd" + "1" * 62
PACK = f"{CTX}.pack.json"


def test_store_then_load_round_trips_and_writes_one_pack(tmp_path: Path) -> None:
    cache = DirScanCache(tmp_path)
    assert cache.load(CTX) == {}
    cache.store(CTX, {KEY: [1, [1, 2.5, "s", None], {"t": ["x"]}]})
    assert DirScanCache(tmp_path).load(CTX) == {KEY: [1, [1, 2.5, "s", None], {"t": ["x"]}]}
    assert sorted(p.name for p in tmp_path.iterdir()) == [PACK]
    pack = json.loads((tmp_path / PACK).read_text())
    assert pack["cache"] == CACHE_VERSION and pack["context"] == CTX
    assert DirScanCache(tmp_path).load("ef" + "1" * 62) == {}  # another context: another pack


def test_store_merges_with_the_pack_on_disk_and_writes_nothing_new_for_no_entries(tmp_path: Path) -> None:
    first, second = DirScanCache(tmp_path), DirScanCache(tmp_path)
    other = "ef" + "0" * 62
    assert first.load(CTX) == {} and second.load(CTX) == {}
    first.store(CTX, {KEY: ["v", 1]})
    second.store(CTX, {other: ["v", 2]})  # written by another process since this one read: merged
    assert DirScanCache(tmp_path).load(CTX) == {KEY: ["v", 1], other: ["v", 2]}
    before = (tmp_path / PACK).stat().st_mtime_ns
    second.store(CTX, {})
    assert (tmp_path / PACK).stat().st_mtime_ns == before


def test_the_pack_keeps_used_and_new_entries_first_and_is_bounded(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(scan_cache, "MAX_PACK_ENTRIES", 3)
    cache = DirScanCache(tmp_path)
    keys = [f"{i:02x}" + "0" * 62 for i in range(5)]
    cache.store(CTX, {k: ["v", i] for i, k in enumerate(keys[:4])})
    cache.store(CTX, {keys[4]: ["v", 4]}, used=[keys[2]])
    assert list(DirScanCache(tmp_path).load(CTX)) == [keys[2], keys[4], keys[0]]


def test_a_context_that_is_not_64_hex_is_never_stored(tmp_path: Path) -> None:
    cache = DirScanCache(tmp_path)
    for bad in ("", "../" + "a" * 61, "A" * 64, "a" * 63, "a" * 65):
        cache.store(bad, {KEY: ["v", 1]})
        assert cache.load(bad) == {}
    assert list(tmp_path.iterdir()) == []


def test_keys_are_opaque_and_only_arrays_are_stored(tmp_path: Path) -> None:
    # A key is looked up, never used as a path: any string is as safe as another.
    cache = DirScanCache(tmp_path)
    cache.store(CTX, {"../x": ["v", 1], KEY: ["v", 2], "y": {"v": 3}})  # type: ignore[dict-item]
    assert DirScanCache(tmp_path).load(CTX) == {"../x": ["v", 1], KEY: ["v", 2]}
    assert sorted(p.name for p in tmp_path.iterdir()) == [PACK]


def test_corrupt_foreign_or_oversized_packs_are_empty_and_get_rewritten(tmp_path: Path, monkeypatch) -> None:
    cache = DirScanCache(tmp_path)
    pack = tmp_path / PACK
    for data in (b"{not json", b"[]", json.dumps({"cache": 1, "context": CTX, "entries": {}}).encode(),
                 json.dumps({"cache": CACHE_VERSION, "context": "ef" + "0" * 62, "entries": {KEY: {}}}).encode(),
                 json.dumps({"cache": CACHE_VERSION, "context": CTX, "entries": [1]}).encode(), b"\xff\xfe"):
        pack.write_bytes(data)
        assert cache.load(CTX) == {}
    pack.write_bytes(json.dumps({"cache": CACHE_VERSION, "context": CTX,
                                 "entries": {KEY: {"v": 1}, "ef" + "0" * 62: ["v", 0], "x": []}}).encode())
    assert cache.load(CTX) == {"ef" + "0" * 62: ["v", 0], "x": []}  # values that are no arrays: left out
    pack.write_bytes(b"{not json")
    cache.store(CTX, {KEY: ["v", 2]})
    assert DirScanCache(tmp_path).load(CTX) == {KEY: ["v", 2]}
    monkeypatch.setattr(scan_cache, "MAX_PACK_BYTES", 10)
    assert DirScanCache(tmp_path).load(CTX) == {}  # over the cap: not read
    cache.store(CTX, {"ef" + "0" * 62: ["v", "a long value"]})
    monkeypatch.setattr(scan_cache, "MAX_PACK_BYTES", 1 << 20)
    assert DirScanCache(tmp_path).load(CTX) == {KEY: ["v", 2]}  # over the cap: not written


def test_a_pack_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    cache = DirScanCache(tmp_path / "c")
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_text(json.dumps({"cache": CACHE_VERSION, "context": CTX, "entries": {KEY: ["v", 1]}}))
    os.symlink(elsewhere, tmp_path / "c" / PACK)
    assert cache.load(CTX) == {}


def test_open_cache_refuses_a_symlinked_or_unusable_directory(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert open_cache(tmp_path / "link") == (None, f"{tmp_path / 'link'} is a symlink")
    assert open_cache(tmp_path / "link" / "scan", own=2) == (None, f"{tmp_path / 'link'} is a symlink")
    (tmp_path / "file").write_text("")
    cache, why = open_cache(tmp_path / "file")
    assert cache is None and why == f"{tmp_path / 'file'} cannot be created: File exists"
    cache, why = open_cache(tmp_path / "new" / "dir")
    assert why is None and cache is not None and cache.directory == tmp_path / "new" / "dir"
    assert (tmp_path / "new" / "dir").is_dir()


def test_default_dir_follows_xdg_cache_home_when_absolute() -> None:
    assert default_dir({"XDG_CACHE_HOME": "/x/cache"}) == Path("/x/cache/ci-policy/scan")
    assert default_dir({"XDG_CACHE_HOME": "relative"}) == Path.home() / ".cache" / "ci-policy" / "scan"
    assert default_dir({}) == Path.home() / ".cache" / "ci-policy" / "scan"


def test_inside_resolves_symlinks(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    os.symlink(repo / "sub", tmp_path / "alias")
    assert inside(repo, repo) and inside(repo / "sub" / "new", repo) and inside(tmp_path / "alias", repo)
    assert not inside(tmp_path / "cache", repo)


def test_open_cache_refuses_a_directory_others_can_write(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert open_cache(shared) == (None, f"{shared} is writable by others")
    shared.chmod(0o700)
    assert open_cache(shared)[1] is None


def test_a_stale_temporary_file_of_this_process_id_is_replaced(tmp_path: Path) -> None:
    cache = DirScanCache(tmp_path)
    (tmp_path / f".tmp-{os.getpid()}-{CTX}.json").write_text("half")
    cache.store(CTX, {KEY: ["v", 3]})
    assert DirScanCache(tmp_path).load(CTX) == {KEY: ["v", 3]}
    assert sorted(p.name for p in tmp_path.iterdir()) == [PACK]
