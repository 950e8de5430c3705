"""The scan cache on disk (an adapter): `model.scan.ScanCache` over a directory.

- In: a cache directory (`--cache DIR`, else `$XDG_CACHE_HOME/ci-policy/scan`, else
  `~/.cache/ci-policy/scan`), a scan context (`model.scan.scan_context`, 64 hex digits)
  and keys made by `model.scan.scan_key` (the file's path and its content id; the
  pack is the context's, so a key need not name it).
- Out: one pack per context, `<context>.pack.json`: a header line
  `{"cache":CACHE_VERSION,"context":CONTEXT,"sha256":HEX}`, then the entries, whose bytes HEX
  is the SHA-256 of: their keys as one JSON array on a line, then each key's value (a JSON
  array) on a line of its own, in the keys' order. `load` reads it with one open, one hash,
  one split at the line breaks and one decode of the keys, and returns its entries
  (`Entries`), each value decoded when it is looked up: a value that is no JSON is then
  `UNREADABLE`, which every reader of an entry refuses as it refuses any value not an
  array. Keys are opaque: one that names no file of the checkout is never looked up, so it
  is not checked entry by entry; the values are checked by the snapshot's strict decoder
  (`model.scan_codec.StrictDecoder`), which names the ones it refused (`reject`).
- `store` merges a command's new entries into the pack as it is on disk now (one command
  writes at most one pack, and none when it found every entry): the keys the command used
  and its new entries first, then the other stored entries while the pack holds fewer than
  `MAX_PACK_ENTRIES`. The pack is written atomically (a temporary file in the directory,
  named by the process and the context, created with `O_EXCL`, then `os.replace`), so a
  reader never sees half a pack; its body is written and hashed a slice of entries at a time,
  never held whole, each value as it was read or encoded when it was put (`new_entries`).
  Two commands storing at once: the last one's pack wins,
  and the other's new entries are scanned again by a later command (never a wrong hit).
  A pack larger than `MAX_PACK_BYTES` is neither written nor read.
- Ignored (no entries, and the pack is rewritten by the next command that scans a file):
  a missing pack or one of another `CACHE_VERSION` (another release's format) silently; an
  unreadable, oversized, truncated or otherwise damaged pack (its checksum does not match,
  its first line is not a JSON array of keys, each with a line of its own after it that
  opens and closes an array), a pack of another context, and entries the
  decoder refused (`reject`; they are left out when the pack is next written) with one
  warning per command (`warn`), naming only the cache directory and pack, never text read
  from it. The checksum catches a damaged pack (a truncated write, a changed byte); someone
  able to write the directory can write a matching one, so every entry is decoded strictly too. Any OSError
  while writing is swallowed: the cache only ever saves work.
- Shard splits (`DirSplitCache`, the core's `plan.partition.SplitCache`): a pack of their own
  in the same directory (`SPLITS_CONTEXT`), written as a scan pack is, holding the splits the
  command used and others up to `MAX_SPLITS`; `plan.partition` checks each split it reads.
- Refused: by `open_cache`: a directory inside the checkout (a usage error naming the option: a
  pull request could plant entries), a cache directory or parent that is a symlink, one owned by
  another user or writable by group or others, or one that cannot be created or written (a
  warning: the command runs uncached). Directories it creates are 0700.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import stat
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any

# Where the cache is by default: a module of its own, which a stage job imports after its tests.
from ci_policy.adapters.cache_dir import default_dir as default_dir

CACHE_VERSION = 6
MAX_PACK_BYTES = 256 * 1024 * 1024
MAX_PACK_ENTRIES = 200_000
_CONTEXT_RE = re.compile(r"[0-9a-f]{64}")
# The pack's first line: its format, its context, and the SHA-256 of the rest (the entries).
_HEADER_RE = re.compile(rb'\{"cache":([0-9]{1,9}),"context":"([0-9a-f]{64})","sha256":"([0-9a-f]{64})"\}\n')
_VERSION_RE = re.compile(rb'\{"cache":([0-9]{1,9}),')
_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
               | getattr(os, "O_NONBLOCK", 0))
_WRITE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                | getattr(os, "O_CLOEXEC", 0))


def inside(path: Path, repo: Path) -> bool:
    """Whether `path` is `repo` or below it (both resolved as far as they exist)."""
    try:
        target = Path(os.path.realpath(path))
        top = Path(os.path.realpath(repo))
    except (OSError, ValueError):
        return True
    return target == top or top in target.parents


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


_RESCANNED = "the test files read and parsed again (the cache is rewritten as they are)"
# The shard splits' pack: a context of its own (no scan context is the hash of these bytes).
SPLITS_CONTEXT = hashlib.sha256(b"ci-policy shard splits").hexdigest()
_SPLIT_AGAIN = "the shards split again (and stored again)"


def _ignore(_message: str) -> None:
    pass


class DirScanCache:
    """`ScanCache` over a directory (see the module doc); `warn` says, once per command, that
    stored scans were ignored."""

    def __init__(self, directory: Path, warn: Callable[[str], None] = _ignore) -> None:
        self.directory = Path(directory)
        self.warn = warn
        self._warned = False
        # The pack this process last read per context, with the identity of the file it came from,
        # for `store` to merge with unless the pack was replaced since: held only while the
        # command that loaded it holds it (a warm snapshot's entries, 14 MiB at 20,000 test files,
        # go with its stored scans, not at the command's end); `store` reads it again otherwise.
        self._read: dict[str, tuple[tuple[int, int, int, int] | None, weakref.ref[Entries]]] = {}
        self._rejected: dict[str, set[str]] = {}

    def _path(self, context: str) -> Path | None:
        if not _CONTEXT_RE.fullmatch(context):
            return None
        return self.directory / f"{context}.pack.json"

    def _ignored(self, why: str, then: str = _RESCANNED) -> None:
        # Once per command: a damaged pack and the entries of another are one problem to the reader.
        # Only the cache's own path and counts: nothing read from a pack is shown.
        if not self._warned:
            self._warned = True
            self.warn(f"scan cache {self.directory}: {why}; ignored, and {then}")

    def new_entries(self) -> Entries:
        return Entries()

    def load(self, context: str, then: str | None = None) -> Entries:
        path = self._path(context)
        if path is None:
            return Entries()
        identity, entries = self._read_pack(path, context, then=then)
        self._read[context] = (identity, weakref.ref(entries))
        return entries

    def reject(self, context: str, keys: Collection[str],
               what: str = "stored scan(s) are damaged or not of the file they are stored for",
               then: str = _RESCANNED) -> None:
        if keys:
            self._rejected.setdefault(context, set()).update(keys)
            self._ignored(f"{len(set(keys))} {what}", then)

    def _read_pack(self, path: Path, context: str, *, quiet: bool = False, then: str | None = None
                   ) -> tuple[tuple[int, int, int, int] | None, Entries]:
        then = then or (_SPLIT_AGAIN if context == SPLITS_CONTEXT else _RESCANNED)
        ignored = _ignore if quiet else lambda why: self._ignored(why, then)
        try:
            fd = os.open(path, _READ_FLAGS)
        except FileNotFoundError:
            return None, Entries()
        except OSError as exc:
            ignored(f"{path.name} cannot be read ({exc.strerror})")
            return None, Entries()
        try:
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_PACK_BYTES:
                    ignored(f"{path.name} is not a regular file of at most {MAX_PACK_BYTES} bytes")
                    return None, Entries()
                data = fh.read(MAX_PACK_BYTES + 1)
        except OSError as exc:
            ignored(f"{path.name} cannot be read ({exc.strerror})")
            return None, Entries()
        header = _HEADER_RE.match(data)
        version = _VERSION_RE.match(data)  # what every format so far begins with
        if version is not None and int(version[1]) != CACHE_VERSION:
            return None, Entries()  # another release's format: rewritten, nothing wrong with it
        if len(data) > MAX_PACK_BYTES or header is None or header[2].decode() != context:
            ignored(f"{path.name} is not a pack of this context")
            return None, Entries()
        start, checksum = header.end(), header[3].decode()
        del header, version  # each holds `data`
        if hashlib.sha256(memoryview(data)[start:]).hexdigest() != checksum:
            ignored(f"{path.name} is damaged (its checksum does not match)")
            return None, Entries()
        # The header is the first line: the body's lines are split off `data` (no copy of the
        # body), which is let go of before the keys are decoded.
        lines = data.split(b"\n")
        del data
        entries = _entries(lines)
        if entries is None:
            ignored(f"{path.name} is damaged (its entries are not keys with a JSON array each)")
            return None, Entries()
        return _identity(st), entries

    def store(self, context: str, new: Mapping[str, list[Any]], used: Collection[str] = (),
              limit: int | None = None) -> None:
        path = self._path(context)
        if path is None or not new:
            return
        # The pack as it is now: what this process read, unless another process replaced it since.
        try:
            now: tuple[int, int, int, int] | None = _identity(os.lstat(path))
        except OSError:
            now = None
        identity, held = self._read.pop(context, (None, None))
        read = held() if held is not None else None
        if now is None:
            read = Entries()
        elif read is None or identity != now:
            identity, read = self._read_pack(path, context, quiet=True)
        rejected = self._rejected.get(context, set())
        # Values as the bytes they were read or put as: none is decoded or encoded again here.
        base = read.raw
        merged: dict[str, bytes] = {k: base[k] for k in used if k in base}
        if isinstance(new, Entries):
            merged.update(new.raw)
        else:
            try:
                merged.update((k, _encoded(v)) for k, v in new.items() if type(k) is str and type(v) is list)
            except (TypeError, ValueError, RecursionError):  # no JSON: nothing is stored
                return
        for k, v in base.items():
            if len(merged) >= (MAX_PACK_ENTRIES if limit is None else limit):
                break
            if k not in rejected:
                merged.setdefault(k, v)
        try:
            # Named by process and context: no other writer uses this name at the same time,
            # and O_EXCL refuses whatever (a planted symlink) is in the way.
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = self.directory / f".tmp-{os.getpid()}-{context}.json"
            try:
                fd = os.open(tmp, _WRITE_FLAGS, 0o600)
            except FileExistsError:  # left by a crashed process that had this pid: not in use
                os.unlink(tmp)
                fd = os.open(tmp, _WRITE_FLAGS, 0o600)
            try:
                with os.fdopen(fd, "wb") as fh:
                    written = _write_pack(fh, context, merged)
                if not written:
                    os.unlink(tmp)
                    return
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            return


def _header(context: str, digest: str) -> bytes:
    return f'{{"cache":{CACHE_VERSION},"context":"{context}","sha256":"{digest}"}}\n'.encode()


# Keys and values written at a time: the pack's body is written (and hashed) in slices, never
# held whole, neither as text nor as bytes (two copies of a 9 MiB body at 20,000 files: peak RSS,
# issue 33).
_SLICE = 512


def _write_pack(fh: Any, context: str, entries: Mapping[str, bytes]) -> bool:
    """The pack of `entries` (each value the JSON bytes of an array) written to `fh` (a new,
    empty file): its header (a placeholder checksum, rewritten once the body is hashed), then
    the body. False, with some of it written, when the pack would exceed `MAX_PACK_BYTES`."""
    head = _header(context, "0" * 64)
    fh.write(head)
    digest = hashlib.sha256()
    size = len(head)
    keys = iter(entries)
    part: list[Any]
    # The keys' line: the bytes of one json.dumps of them all (ASCII, `separators=(",", ":")`).
    opening = b"["
    while part := list(itertools.islice(keys, _SLICE)):
        piece = opening + json.dumps(part, separators=(",", ":"))[1:-1].encode("ascii")
        opening = b","
        size += len(piece)
        if size + 1 > MAX_PACK_BYTES:
            return False
        digest.update(piece)
        fh.write(piece)
    values = iter(entries.values())
    piece = b"[]" if opening == b"[" else b"]"
    while True:
        size += len(piece)
        if size > MAX_PACK_BYTES:
            return False
        digest.update(piece)
        fh.write(piece)
        if not (part := list(itertools.islice(values, _SLICE))):
            break
        piece = b"\n" + b"\n".join(part)
    fh.seek(0)
    fh.write(_header(context, digest.hexdigest()))
    return True


# A value is JSON as json.dumps writes it with `separators=(",", ":")`: ASCII (`ensure_ascii`),
# a line break in a text escaped, so one value is one line. Without the check for cycles (no
# value holds one: each is data a scan was encoded or decoded as), one a file costs a fifth less.
_encode = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
_decoder = json.JSONDecoder()
# What `Entries` gives for a value that is no JSON (in a pack whose checksum someone able to
# write the cache directory made match): not an array, so every reader of an entry refuses it
# as it refuses any other damaged value (`ScanCache.reject`).
UNREADABLE: Any = object()


def _encoded(value: list[Any]) -> bytes:
    return _encode(value).encode("ascii")


def _decoded(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
        value, end = _decoder.raw_decode(text)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return UNREADABLE
    return value if end == len(text) else UNREADABLE


class Entries(MutableMapping[str, Any]):
    """A pack's entries (`load`), or a command's new ones (`new_entries`), each value held as
    the JSON bytes of an array (`raw`): decoded when looked up (`UNREADABLE` when it is no
    JSON), encoded when set. Decoded at once, as one `json.loads` of the body made them, the
    40,000 entries of 20,000 test files (a scan and an identity record each) took 44 MiB at
    the command's peak RSS; as bytes they take 9 (issue 33). A command looks an entry up once."""

    __slots__ = ("raw", "__weakref__")

    def __init__(self, raw: dict[str, bytes] | None = None) -> None:
        self.raw: dict[str, bytes] = {} if raw is None else raw

    def get(self, key: str, default: Any = None) -> Any:
        raw = self.raw.get(key)
        return default if raw is None else _decoded(raw)

    def __getitem__(self, key: str) -> Any:
        return _decoded(self.raw[key])

    def __setitem__(self, key: str, value: Any) -> None:
        if type(value) is not list:
            raise TypeError(f"a pack's values are arrays, not {type(value).__name__}")
        self.raw[key] = _encoded(value)

    def __delitem__(self, key: str) -> None:
        del self.raw[key]

    def update(self, other: Any = (), /, **more: Any) -> None:
        # Another's entries are taken as they are held, not decoded and encoded again.
        if isinstance(other, Entries) and not more:
            self.raw.update(other.raw)
        else:
            super().update(other, **more)

    def __contains__(self, key: object) -> bool:
        return key in self.raw

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)


def _entries(lines: list[bytes]) -> Entries | None:
    """The entries of a pack whose lines (the header's first) are `lines`, or None when its body
    is not the keys' line then one line a key, each opening and closing a JSON array."""
    try:
        keys = json.loads(lines[1])
    except (ValueError, RecursionError):
        return None
    values = lines[2:]
    if (type(keys) is not list or len(keys) != len(values) or not all(type(k) is str for k in keys)
            # Not decoded: each value is when it is looked up, and checked then as it is read.
            or not all(map(bytes.startswith, values, itertools.repeat(b"[")))
            or not all(map(bytes.endswith, values, itertools.repeat(b"]")))):
        return None
    return Entries(dict(zip(keys, values, strict=True)))


def open_cache(directory: Path, *, own: int = 1, warn: Callable[[str], None] = _ignore
               ) -> tuple[DirScanCache | None, str | None]:
    """The cache at `directory`, created if needed; or (None, why) when it cannot be used.

    `own`: how many trailing components of `directory` are the cache's own (1 for
    `--cache DIR`, 2 for the default `.../ci-policy/scan`); a symlink at any of them is
    refused (it could point anywhere, e.g. into a checkout), as is a directory that is not
    one or not writable. A symlink higher up (`/home` on some systems) is the machine's.
    """
    directory = Path(os.path.abspath(directory))
    for part in (directory, *directory.parents)[:own]:
        try:
            st = os.lstat(part)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return None, f"{part} cannot be read: {exc.strerror}"
        if stat.S_ISLNK(st.st_mode):
            return None, f"{part} is a symlink"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        return None, f"{directory} cannot be created: {exc.strerror}"
    st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode):
        return None, f"{directory} is not a directory"
    # Another user (a test run as an unprivileged user, say) could plant entries otherwise.
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return None, f"{directory} belongs to another user"
    if st.st_mode & 0o022:
        return None, f"{directory} is writable by others"
    if not os.access(directory, os.W_OK | os.X_OK):
        return None, f"{directory} is not writable"
    return DirScanCache(directory, warn), None

# Splits kept beside the ones a command used: those of other triggers' plans (a schedule's
# stages beside a pull request's), but not every split the checkout ever had.
MAX_SPLITS = 2048


class DirSplitCache:
    """`plan.partition.SplitCache` over a scan cache's directory: one pack (`SPLITS_CONTEXT`),
    read on the first lookup and written by `save` when a split was computed, with the splits
    used and at most `MAX_SPLITS` in all. A refused split is one warning per command, as a
    refused scan is; the split computed again replaces it."""

    def __init__(self, cache: DirScanCache) -> None:
        self.cache = cache
        self._entries: Mapping[str, Any] | None = None
        self._used: set[str] = set()
        self._new: dict[str, list[int]] = {}

    def get(self, key: str) -> object:
        if self._entries is None:
            self._entries = self.cache.load(SPLITS_CONTEXT)
        self._used.add(key)
        return self._new.get(key) or self._entries.get(key)

    def put(self, key: str, value: list[int]) -> None:
        self._new[key] = value

    def refuse(self, key: str) -> None:
        self.cache.reject(SPLITS_CONTEXT, [key], "stored shard split(s) are damaged or not of the stage they are "
                          "stored for", _SPLIT_AGAIN)

    def save(self) -> None:
        self.cache.store(SPLITS_CONTEXT, self._new, self._used, limit=MAX_SPLITS)
