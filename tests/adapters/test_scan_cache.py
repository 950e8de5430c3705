"""The scan cache directory (`ci_policy/adapters/scan_cache.py`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ci_policy.adapters import scan_cache
from ci_policy.adapters.scan_cache import CACHE_VERSION, DirScanCache, default_dir, inside, open_cache

KEY = "ab" + "0" * 62


def test_put_then_get_round_trips_and_writes_one_json_file(tmp_path: Path) -> None:
    cache = DirScanCache(tmp_path)
    cache.put(KEY, {"format": 1, "x": [1, 2.5, "s", None]})
    assert cache.get(KEY) == {"format": 1, "x": [1, 2.5, "s", None]}
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["ab", f"ab/{KEY}.json"]
    assert json.loads((tmp_path / "ab" / f"{KEY}.json").read_text())["cache"] == CACHE_VERSION


def test_a_key_that_is_not_64_hex_is_never_a_path(tmp_path: Path) -> None:
    cache = DirScanCache(tmp_path)
    for key in ("../../etc/passwd", "AB" + "0" * 62, "ab"):
        cache.put(key, {"v": 1})
        assert cache.get(key) is None
    assert list(tmp_path.iterdir()) == []


def test_corrupt_foreign_or_oversized_entries_are_misses_and_get_rewritten(tmp_path: Path, monkeypatch) -> None:
    cache = DirScanCache(tmp_path)
    entry = tmp_path / "ab" / f"{KEY}.json"
    entry.parent.mkdir()
    for data in (b"{not json", b"[]", json.dumps({"cache": 99, "key": KEY, "value": {}}).encode(),
                 json.dumps({"cache": CACHE_VERSION, "key": "cd" + "0" * 62, "value": {}}).encode(),
                 json.dumps({"cache": CACHE_VERSION, "key": KEY, "value": [1]}).encode(), b"\xff\xfe"):
        entry.write_bytes(data)
        assert cache.get(KEY) is None
    cache.put(KEY, {"v": 2})
    assert cache.get(KEY) == {"v": 2}
    monkeypatch.setattr(scan_cache, "MAX_ENTRY_BYTES", 10)
    assert cache.get(KEY) is None  # over the cap: not read
    cache.put("cd" + "0" * 62, {"v": "a long value"})
    assert not (tmp_path / "cd").exists() or list((tmp_path / "cd").iterdir()) == []


def test_an_entry_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    cache = DirScanCache(tmp_path / "c")
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_text(json.dumps({"cache": CACHE_VERSION, "key": KEY, "value": {"v": 1}}))
    (tmp_path / "c" / "ab").mkdir(parents=True)
    os.symlink(elsewhere, tmp_path / "c" / "ab" / f"{KEY}.json")
    assert cache.get(KEY) is None


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
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / f".tmp-{os.getpid()}-{KEY}.json").write_text("half")
    cache.put(KEY, {"v": 3})
    assert cache.get(KEY) == {"v": 3}
    assert sorted(p.name for p in (tmp_path / "ab").iterdir()) == [f"{KEY}.json"]
