"""The hostile archive corpus for `tune --github-run` (issue 32, item 6): builds every archive.

Run `python tests/hostile/archives/corpus.py --write` to write the `.zip` files next to this
module again; `tests/hostile/test_archives.py` checks that the files on disk are exactly what
`build()` returns, so the corpus cannot drift from its description. Every archive is small on
disk; the bombs are small because they compress well. The bomb by count (more than 10,000
members, about 1 MB) is built by the test instead of committed.
"""

from __future__ import annotations

import io
import stat
import struct
import sys
import zipfile
import zlib
from pathlib import Path

HERE = Path(__file__).parent
# A fixed timestamp: the same bytes on every run.
STAMP = (2026, 1, 1, 0, 0, 0)


def record(file: str = "tests/gpu/test_good.py", elapsed: object = 12.5, **extra: object) -> bytes:
    fields = {"schema": 1, "file": file, "stage": "stage-a", "shard": 0, "attempt": 1, "status": "pass",
              "elapsed": elapsed, "est_time": 10, **extra}
    parts = []
    for key, value in fields.items():
        shown = f'"{value}"' if isinstance(value, str) else str(value)
        parts.append(f'"{key}": {shown}')
    return ("{" + ", ".join(parts) + "}\n").encode()


def zip_of(members: list[tuple[str, bytes]], *, method: int = zipfile.ZIP_STORED,
           mode: int | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=STAMP)
            info.compress_type = method
            if mode is not None:
                info.external_attr = mode << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def overlapping(count: int) -> bytes:
    """One stored member, listed `count` times in the central directory under one name: every
    entry points at the same local header (a bomb by overlap, as in "a better zip bomb")."""
    name = b"t.jsonl"
    data = zlib.compress(b"\n" * (512 * 1024), 9)[2:-4]  # raw deflate
    crc, size = zlib.crc32(b"\n" * (512 * 1024)), 512 * 1024
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x5421, crc, len(data), size, len(name), 0)
    body = local + name + data
    central = b""
    for _ in range(count):
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x5421, crc, len(data), size,
                               len(name), 0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(central), len(body), 0)
    return body + central + end


def build() -> dict[str, bytes]:
    good = record()
    truncated = zip_of([("t.jsonl", good * 20)])
    bad_magic = bytearray(zip_of([("t.jsonl", good)]))
    at = bad_magic.index(b"PK\x01\x02")
    bad_magic[at:at + 4] = b"PK\x09\x09"
    return {
        # a member expanding 8 MiB from a few KiB: under every byte cap, over the ratio cap
        "bomb-ratio.zip": zip_of([("t.jsonl", good + b"\n" * (8 * 1024 * 1024))], method=zipfile.ZIP_DEFLATED),
        # 64 directory entries over one member
        "bomb-overlap.zip": overlapping(64),
        # a zip inside a zip, next to a good member: the inner one is never opened
        "nested.zip": zip_of([("inner.zip", zip_of([("bomb.jsonl", b"\n" * (4 * 1024 * 1024))],
                                                    method=zipfile.ZIP_DEFLATED)),
                              ("t.jsonl", good)]),
        # a zip where records should be: not UTF-8, so malformed records
        "zip-as-records.zip": zip_of([("t.jsonl", zip_of([("x.jsonl", good)]))]),
        # member names that would escape a directory if they were paths: read as data
        "traversal.zip": zip_of([("../../../tmp/evil.jsonl", record(file="tests/gpu/test_a.py")),
                                 ("/etc/evil.jsonl", record(file="tests/gpu/test_b.py")),
                                 ("..\\..\\evil.jsonl", record(file="tests/gpu/test_c.py"))]),
        # a member stored as a symbolic link to a file of the machine
        "symlink.zip": zip_of([("t.jsonl", b"/etc/passwd")], mode=stat.S_IFLNK | 0o777),
        # the download cut short
        "truncated.zip": truncated[:len(truncated) // 2],
        # a central directory entry whose signature is damaged
        "malformed-directory.zip": bytes(bad_magic),
        # forged records: an elapsed time of 1e308 s, a 400-digit one, an est_time of 1e300
        "forged-numbers.zip": zip_of([("t.jsonl", record(elapsed="1e308").replace(b'"1e308"', b"1e308")
                                       + record(elapsed=int("9" * 400))
                                       + record(est_time=1e300))]),
    }


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print("usage: corpus.py --write", file=sys.stderr)
        return 2
    for name, data in build().items():
        (HERE / name).write_bytes(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
