"""The scan cache directory (`ci_policy/adapters/scan_cache.py`)."""

from __future__ import annotations

import hashlib
import json
import os
import weakref
from pathlib import Path

from helpers import pack_body, pack_entries, pack_text

from ci_policy.adapters import scan_cache
from ci_policy.adapters.scan_cache import CACHE_VERSION, UNREADABLE, DirScanCache, default_dir, inside, open_cache

KEY = "tests/test_a.py\0git:" + "ab" * 20


CTX = "cd" + "1" * 62
PACK = f"{CTX}.pack.json"


def pack_bytes(entries: dict, *, context: str = CTX, version: int = CACHE_VERSION,
               body: bytes | None = None) -> bytes:
    """A pack as `store` writes it: a header line with the checksum of the entries, then the entries."""
    data = pack_body(entries) if body is None else body
    return (f'{{"cache":{version},"context":"{context}","sha256":"{hashlib.sha256(data).hexdigest()}"}}\n'
            .encode() + data)


def read_pack(path: Path) -> tuple[dict, object]:
    header, _, body = path.read_bytes().partition(b"\n")
    return json.loads(header), pack_entries(body)


def test_store_then_load_round_trips_and_writes_one_pack(tmp_path: Path) -> None:
    cache = DirScanCache(tmp_path)
    assert cache.load(CTX) == {}
    cache.store(CTX, {KEY: [1, [1, 2.5, "s", None], {"t": ["x"]}]})
    assert DirScanCache(tmp_path).load(CTX) == {KEY: [1, [1, 2.5, "s", None], {"t": ["x"]}]}
    assert sorted(p.name for p in tmp_path.iterdir()) == [PACK]
    header, entries = read_pack(tmp_path / PACK)
    assert header == {"cache": CACHE_VERSION, "context": CTX,
                      "sha256": hashlib.sha256((tmp_path / PACK).read_bytes().partition(b"\n")[2]).hexdigest()}
    assert entries == {KEY: [1, [1, 2.5, "s", None], {"t": ["x"]}]}
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


def test_the_cache_holds_no_entries_its_reader_let_go_of_and_store_reads_the_pack_again(tmp_path: Path) -> None:
    other = "ef" + "0" * 62
    DirScanCache(tmp_path).store(CTX, {KEY: ["v", 1]})
    cache = DirScanCache(tmp_path)
    loaded = cache.load(CTX)
    assert loaded == {KEY: ["v", 1]}
    held = weakref.ref(loaded)
    del loaded
    assert held() is None  # gone with the command's own reference (a warm snapshot's stored scans)
    cache.store(CTX, {other: ["v", 2]}, used=[KEY])
    assert list(DirScanCache(tmp_path).load(CTX).items()) == [(KEY, ["v", 1]), (other, ["v", 2])]
    cache.store(CTX, {"x": ["v", 3]})  # after its own store too: the pack as written
    assert DirScanCache(tmp_path).load(CTX) == {KEY: ["v", 1], other: ["v", 2], "x": ["v", 3]}


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
    warnings: list[str] = []
    cache = DirScanCache(tmp_path, warnings.append)
    pack = tmp_path / PACK
    good = pack_bytes({KEY: ["v", 1]})
    damaged = {
        "not json": b"{not json",
        "another context": pack_bytes({KEY: ["v", 1]}, context="ef" + "0" * 62),
        "keys not an array": pack_bytes({}, body=b'{"k":1}'),
        "a key not a string": pack_bytes({}, body=b'[1]\n["v",1]'),
        "a value not an array": pack_bytes({KEY: {"v": 1}, "ef" + "0" * 62: ["v", 0]}),
        "a value missing": pack_bytes({}, body=pack_body({KEY: ["v", 1], "ef" + "0" * 62: ["v", 0]})[:-8]),
        "a value too many": pack_bytes({}, body=pack_body({KEY: ["v", 1]}) + b'\n["v",0]'),
        "a line break inside a value": pack_bytes({}, body=pack_text({KEY: '["v",\n1]'})),
        "truncated": good[:-3],
        "one byte changed": good.replace(b'"v",1', b'"v",2'),
        "checksum of other bytes": good[:good.index(b"\n") + 1] + b'["x"]\n[]',
        "not UTF-8": pack_bytes({}, body=b"\xff\xfe"),
        "nested past the parser": pack_bytes({}, body=b"[" * 100_000),
    }
    for why, data in damaged.items():
        pack.write_bytes(data)
        assert cache.load(CTX) == {}, why
    # One warning for the command, naming only the cache's own directory and file.
    assert warnings == [f"scan cache {tmp_path}: {PACK} is not a pack of this context; ignored, and the test files "
                        "read and parsed again (the cache is rewritten as they are)"]
    quiet: list[str] = []
    for other_release in (pack_bytes({KEY: ["v", 1]}, version=CACHE_VERSION + 1),
                          # the format before: the entries as one JSON object
                          pack_bytes({}, version=5, body=json.dumps({KEY: ["v", 1]}).encode()),
                          json.dumps({"cache": 4, "context": CTX, "entries": {KEY: ["v", 1]}},  # the format before
                                     separators=(",", ":")).encode()):
        pack.write_bytes(other_release)  # silently none, and rewritten
        assert DirScanCache(tmp_path, quiet.append).load(CTX) == {} and quiet == []
    pack.write_bytes(b"{not json")
    cache.store(CTX, {KEY: ["v", 2]})
    assert DirScanCache(tmp_path).load(CTX) == {KEY: ["v", 2]}
    monkeypatch.setattr(scan_cache, "MAX_PACK_BYTES", 10)
    assert DirScanCache(tmp_path).load(CTX) == {}  # over the cap: not read
    cache.store(CTX, {"ef" + "0" * 62: ["v", "a long value"]})
    monkeypatch.setattr(scan_cache, "MAX_PACK_BYTES", 1 << 20)
    assert DirScanCache(tmp_path).load(CTX) == {KEY: ["v", 2]}  # over the cap: not written



def test_a_pack_written_in_slices_is_its_keys_line_then_a_line_a_value_and_an_oversized_one_leaves_no_file(
        tmp_path: Path, monkeypatch) -> None:
    entries = {f"tests/t{i}.py\0git:{i:040x}": ["v", i, "\u00e9\u202e", {"t": [1.5, None]}]
               for i in range(2 * scan_cache._SLICE + 1)}
    DirScanCache(tmp_path).store(CTX, entries)
    assert (tmp_path / PACK).read_bytes() == pack_bytes(entries)
    assert DirScanCache(tmp_path).load(CTX) == entries
    size = len(pack_bytes(entries))
    monkeypatch.setattr(scan_cache, "MAX_PACK_BYTES", size - 1)  # the last value's last byte over the cap
    DirScanCache(tmp_path / "over").store(CTX, entries)
    assert list((tmp_path / "over").iterdir()) == []
    monkeypatch.setattr(scan_cache, "MAX_PACK_BYTES", size)
    DirScanCache(tmp_path / "at").store(CTX, entries)
    assert (tmp_path / "at" / PACK).read_bytes() == pack_bytes(entries)


def test_a_value_is_decoded_when_looked_up_and_one_that_is_no_json_is_unreadable(tmp_path: Path) -> None:
    # A value that opens and closes an array but is no JSON spoils no other entry: `UNREADABLE`
    # is no array, so every reader of an entry refuses it (tests/hostile/test_cache.py).
    other = "ef" + "0" * 62
    texts = {KEY: '["v",1]', other: '["v",]', "x": "[1]]", "y": '["\\ud800",1e999]', "z": '["\xe9"]'}
    body = pack_text(texts).replace("\xe9".encode(), b"\xff")  # a byte that is no UTF-8
    (tmp_path / PACK).write_bytes(pack_bytes({}, body=body))
    warnings: list[str] = []
    entries = DirScanCache(tmp_path, warnings.append).load(CTX)
    assert list(entries) == [KEY, other, "x", "y", "z"] and len(entries) == 5 and KEY in entries
    assert entries[KEY] == ["v", 1] and entries.get(KEY) == ["v", 1]
    assert entries[other] is UNREADABLE and entries.get("x") is UNREADABLE and entries.get("z") is UNREADABLE
    assert entries.get("y") == ["\ud800", float("inf")]  # as json.loads reads it: its readers check values
    assert entries.get("missing") is None and "missing" not in entries and warnings == []


def test_a_value_read_is_written_again_as_it_was_read(tmp_path: Path) -> None:
    other = "ef" + "0" * 62
    body = pack_text({KEY: '[1.0,"\\u00e9"]'})  # not as this encoder writes it: kept byte for byte
    (tmp_path / PACK).write_bytes(pack_bytes({}, body=body))
    cache = DirScanCache(tmp_path)
    assert cache.load(CTX) == {KEY: [1.0, "\u00e9"]}
    new, more = cache.new_entries(), cache.new_entries()
    new[other] = ["w", 2]
    more["y"] = [1.0]
    new.update(more)  # taken as held
    new.update({"z": [2]})
    assert new == {other: ["w", 2], "y": [1.0], "z": [2]}
    cache.store(CTX, new, used=[KEY])
    assert (tmp_path / PACK).read_bytes() == pack_bytes({}, body=pack_text(
        {KEY: '[1.0,"\\u00e9"]', other: '["w",2]', "y": "[1.0]", "z": "[2]"}))


def test_rejected_entries_warn_once_and_are_dropped_when_the_pack_is_next_written(tmp_path: Path) -> None:
    warnings: list[str] = []
    other = "ef" + "0" * 62
    (tmp_path / PACK).write_bytes(pack_bytes({KEY: ["v", 1], other: ["v", 2], "x": ["v", 3]}))
    cache = DirScanCache(tmp_path, warnings.append)
    assert len(cache.load(CTX)) == 3
    cache.reject(CTX, [KEY, other])
    cache.reject(CTX, ["x"])
    assert warnings == [f"scan cache {tmp_path}: 2 stored scan(s) are damaged or not of the file they are stored "
                        "for; ignored, and the test files read and parsed again (the cache is rewritten as they are)"]
    cache.store(CTX, {"y": ["v", 4]})
    assert DirScanCache(tmp_path).load(CTX) == {"y": ["v", 4]}


def test_a_pack_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    cache = DirScanCache(tmp_path / "c")
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_bytes(pack_bytes({KEY: ["v", 1]}))
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
