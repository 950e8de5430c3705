"""The tampered scan-cache corpus (tests/hostile/cache/cases.json, written by its generate.py).

- Every tampered entry is refused by the strict decoder (`StrictDecoder.decode` is None).
- `registry`, `plan` and `lint` over a cache holding the tampered entries (the pack's checksum
  made to match, as someone able to write the cache directory could) print exactly what
  `--no-cache` prints, plus one warning: no traceback, no text from the cache, no workflow
  command the runner would execute.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import EXAMPLE_REPO, pack_body, pack_entries, pack_text, run_cli
from workflow_commands import executed

from ci_policy.adapters.scan_cache import CACHE_VERSION
from ci_policy.model.scan_codec import StrictDecoder
from ci_policy.model.snapshot import load_snapshot

CORPUS = json.loads((Path(__file__).resolve().parent / "cache" / "cases.json").read_text())
CASES: list[dict[str, Any]] = CORPUS["cases"]
PACK_CASES = [c for c in CASES if "pack" in c]
EXPANDED = {"@DEEP@": "[" * 100_000 + "]" * 100_000, "@DIGITS@": "9" * 5000, "@LONG@": json.dumps("a" * 70_000)}
# Values no JSON reader of Python takes (5,000 digits, nesting past the parser): the entry is
# unreadable, and refused as any damaged one. Entries whose line does not open and close an array
# refuse the whole pack: packed last, so that the other cases reach the decoder.
UNREADABLE = ("@DEEP@", "@DIGITS@")


def _whole_pack(case: dict[str, Any]) -> bool:
    value = _value(case)
    return case["at"] == [] and not (value.startswith("[") and value.endswith("]"))


def _value(case: dict[str, Any]) -> str:
    text = case["value"]
    for token, value in EXPANDED.items():
        text = text.replace(token, value)
    return text


ENTRY_CASES = sorted((c for c in CASES if "at" in c), key=_whole_pack)
COPIES = 40  # tampered files per pack: one entry each
COMMANDS = (["registry"], ["lint"],
            ["plan", "--event", "pull_request", "--labels-json", '["run-ci-megatron"]', "--diff", ""])


def _tampered(entry: Any, case: dict[str, Any]) -> str:
    """The JSON text of `entry` with the case's value at its place."""
    at = case["at"]
    if not at:
        return _value(case)
    entry = json.loads(json.dumps(entry))
    holder = entry
    for step in at[:-1]:
        holder = holder[step]
    holder[at[-1]] = "@@CASE@@"
    return json.dumps(entry, separators=(",", ":")).replace('"@@CASE@@"', _value(case))


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("tampered") / "repo"
    shutil.copytree(EXAMPLE_REPO, repo, ignore=shutil.ignore_patterns("__pycache__"))
    for k in range(COPIES):
        (repo / f"tests/e2e/test_tampered_{k:02}.py").write_text(CORPUS["tampered"])
    return repo


def test_every_tampered_entry_is_refused_by_the_decoder(checkout: Path) -> None:
    snapshot = load_snapshot(checkout)
    decoder = StrictDecoder(snapshot.config, snapshot.labels)
    from ci_policy.model.scan import scan_file
    from ci_policy.model.scan_codec import encode_scan
    from ci_policy.read.checkout import read_text

    file = "tests/e2e/test_tampered_00.py"
    entry = encode_scan(scan_file(read_text(checkout, file), file, snapshot.config, snapshot.labels))
    assert [len(part) for part in entry] == [1, 1, 1, 1, 2]  # every part has a row to damage
    assert decoder.decode(entry, file) is not None
    accepted, unreadable = [], []
    for case in ENTRY_CASES:
        try:
            value = json.loads(_tampered(entry, case))
        except (ValueError, RecursionError):
            unreadable.append(case["name"])  # the entry is unreadable, refused as a damaged one (the command test)
            continue
        if decoder.decode(value, file) is not None:
            accepted.append(case["name"])
    assert accepted == []
    assert len(unreadable) == sum(any(t in c["value"] for t in UNREADABLE) for c in ENTRY_CASES) == 13


def _pack(context: str, body: bytes, *, checksum: bytes | None = None) -> bytes:
    digest = hashlib.sha256(body if checksum is None else checksum).hexdigest()
    return f'{{"cache":{CACHE_VERSION},"context":"{context}","sha256":"{digest}"}}\n'.encode() + body


def _groups(good: dict[str, Any], context: str, files: list[str]) -> list[tuple[str, bytes]]:
    """(what, pack bytes) for every case: COPIES entry cases per pack, each pack case alone."""
    key_of = {key.split("\0")[0]: key for key in good}
    out = []
    for start in range(0, len(ENTRY_CASES), COPIES):
        group = ENTRY_CASES[start:start + COPIES]
        damaged = {key_of[file]: _tampered(good[key_of[file]], case) for file, case in zip(files, group, strict=False)}
        body = pack_text({k: damaged.get(k) or json.dumps(v) for k, v in good.items()})
        out.append((f"entries {start}-{start + len(group) - 1}", _pack(context, body)))
    whole = pack_body(good)
    for case in PACK_CASES:
        kind = case["pack"]
        data = {"truncated": _pack(context, whole)[:-10],
                "another context": _pack("ef" * 32, whole),
                "checksum of other bytes": _pack(context, whole, checksum=b"{}"),
                "body not JSON": _pack(context, b"{not json"),
                "body nested past the parser": _pack(context, b"[" * 100_000),
                "an int of 5000 digits": _pack(context, b"[" + b"9" * 5000 + b"]"),  # the keys' line
                "header only": _pack(context, b"")}[kind]
        out.append((case["name"], data))
    return out


def test_commands_over_a_tampered_cache_print_what_no_cache_prints_with_one_warning(checkout: Path, tmp_path: Path,
                                                                                    capsys: Any) -> None:
    cache = tmp_path / "cache"
    truth = {c[0]: run_cli([*c, "--repo", str(checkout), "--no-cache"], capsys) for c in COMMANDS}
    assert run_cli(["registry", "--repo", str(checkout), "--cache", str(cache)], capsys) == truth["registry"]
    (pack_path,) = cache.glob("*.pack.json")
    header, _, body = pack_path.read_bytes().partition(b"\n")
    # Without identity records: each file is read and looked up by its hash (the path the corpus damages).
    context = json.loads(header)["context"]
    good = {k: v for k, v in pack_entries(body).items() if not k.endswith("\0stat")}
    files = [f"tests/e2e/test_tampered_{k:02}.py" for k in range(COPIES)]
    seen: list[str] = []
    for what, data in _groups(good, context, files):
        for command in COMMANDS:
            pack_path.write_bytes(data)  # each command rewrites what it refused
            rc, out, err = run_cli([*command, "--repo", str(checkout), "--cache", str(cache)], capsys)
            expected_rc, expected_out, expected_err = truth[command[0]]
            warnings = [line for line in err.splitlines() if line.startswith(f"ci-policy {command[0]}: warning: "
                                                                            f"scan cache {cache}: ")]
            assert (rc, out) == (expected_rc, expected_out), (what, command[0])
            assert len(warnings) == 1 and err.replace(warnings[0] + "\n", "", 1) == expected_err, (what, err)
            assert executed(out + err) == [] and "Traceback" not in err, (what, command[0])
            seen.append(warnings[0].split(f"scan cache {cache}: ", 1)[1])
    # Refused entries heal: the pack the last command wrote holds good scans again.
    assert run_cli(["registry", "--repo", str(checkout), "--cache", str(cache)], capsys) == truth["registry"]
    # The groups of readable entries reach the decoder: every entry of the group refused, one warning.
    groups = -(-len(ENTRY_CASES) // COPIES)
    assert seen[:3 * (groups - 1)] == [
        f"{COPIES} stored scan(s) are damaged or not of the file they are stored for; ignored, and the test files "
        "read and parsed again (the cache is rewritten as they are)"] * 3 * (groups - 1)
    assert len(seen) == 3 * (groups + len(PACK_CASES))


def test_the_corpus_is_what_its_generator_writes() -> None:
    from hostile.cache.generate import TAMPERED, cases

    assert CORPUS == {"tampered": TAMPERED, "cases": cases()}
