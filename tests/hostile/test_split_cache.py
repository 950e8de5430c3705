"""The tampered shard splits (tests/hostile/cache/splits.json, written by its generate.py).

- A plan whose splits come from the cache prints, byte for byte, what the plan that computed
  them prints, and what `--no-cache` prints; the warm plan writes no pack.
- `plan` over a cache holding a tampered split of the stage (the pack's checksum made to
  match, as someone able to write the cache directory could) prints exactly what `--no-cache`
  prints, plus one warning: the split is computed again and stored again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import pack_entries, pack_text, run_cli

from ci_policy.adapters.scan_cache import CACHE_VERSION, SPLITS_CONTEXT
from ci_policy.plan.partition import _lower_bound, _lpt, _makespan

CORPUS = json.loads((Path(__file__).resolve().parent / "cache" / "splits.json").read_text())
STAGE = "stage-s"
PLAN = ["plan", "--event", "pull_request", "--labels-json", '["run-ci-split"]', "--diff", "", "--format", "json"]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("splits") / "repo"
    (repo / ".github").mkdir(parents=True)
    (repo / "labels.py").write_text('KNOWN_LABELS = {"split": "split tests"}\n')
    (repo / ".github" / "ci-policy.yml").write_text(
        "version: 1\ndiscovery: {roots: [tests]}\nstages:\n"
        f"  - {{name: {STAGE}, backend: cuda, runs_on: [gpu], partitions: 3}}\n")
    (repo / "tests").mkdir()
    for k, est in enumerate(CORPUS["stage"]):
        (repo / f"tests/test_split_{k:02}.py").write_text(
            f'from ci_policy import register_cuda_ci\n\nregister_cuda_ci(est_time={est}, suite="{STAGE}", '
            'labels=["split"])\n\nif __name__ == "__main__":\n    main()\n')
    return repo


def _pack(body: bytes) -> bytes:
    return (f'{{"cache":{CACHE_VERSION},"context":"{SPLITS_CONTEXT}","sha256":"{hashlib.sha256(body).hexdigest()}"}}\n'
            .encode() + body)


def _stage_entry(entries: dict[str, list[int]], weights: list[int]) -> str:
    """The key of the stage's split: the one entry of as many files and three shards."""
    (key,) = [k for k, v in entries.items() if len(v) == len(weights) + 1 and set(v[1:]) == {0, 1, 2}]
    return key


def _tampered(good: list[int], case: dict[str, Any]) -> str:
    count = 3
    if "op" in case:
        n = len(good) - 1
        value = {"one shard": [1] + [0] * n,
                 "piled": [1] + list(range(1, count)) + [0] * (n - count + 1),
                 "unproven": [0, *good[1:]],
                 "shifted": [1] + [s + 1 for s in good[1:]]}[case["op"]]
        return json.dumps(value)
    if "cut" in case:
        return json.dumps(good[:-case["cut"]])
    if "add" in case:
        return json.dumps(good)[:-1] + "," + case["add"] + "]"
    if "at" not in case:
        return case["value"]
    parts = [json.dumps(v) for v in good]
    parts[case["at"]] = case["value"]
    return "[" + ",".join(parts) + "]"


def test_a_warm_plan_prints_what_a_cold_plan_and_no_cache_print(checkout: Path, tmp_path: Path, capsys: Any) -> None:
    cache = tmp_path / "cache"
    truth = run_cli([*PLAN, "--repo", str(checkout), "--no-cache"], capsys)
    assert truth[0] == 0 and "invalid" not in truth[2]
    assert run_cli([*PLAN, "--repo", str(checkout), "--cache", str(cache)], capsys) == truth
    pack = cache / f"{SPLITS_CONTEXT}.pack.json"
    written = pack.stat()
    assert run_cli([*PLAN, "--repo", str(checkout), "--cache", str(cache)], capsys) == truth
    assert pack.stat().st_mtime_ns == written.st_mtime_ns and pack.stat().st_ino == written.st_ino  # all hits
    shards = {s["name"]: s["shards"] for s in json.loads(truth[1])["stages"]}[STAGE]
    assert [s["est_seconds"] for s in shards] == [810, 820, 810]


def test_a_tampered_split_is_refused_and_computed_again(checkout: Path, tmp_path: Path, capsys: Any) -> None:
    cache = tmp_path / "cache"
    truth = run_cli([*PLAN, "--repo", str(checkout), "--no-cache"], capsys)
    run_cli([*PLAN, "--repo", str(checkout), "--cache", str(cache)], capsys)
    pack = cache / f"{SPLITS_CONTEXT}.pack.json"
    body = pack.read_bytes().partition(b"\n")[2]
    entries = pack_entries(body)
    weights = [est // 10 for est in CORPUS["stage"]]  # longest first, in units of their greatest common divisor
    key = _stage_entry(entries, weights)
    good = entries[key]
    assert good[0] == 1 and _makespan(weights, good[1:], 3) == _lower_bound(weights, 3)
    assert _makespan(weights, _lpt(weights, 3), 3) > _makespan(weights, good[1:], 3)  # LPT is not optimal here
    refused = (f"ci-policy plan: warning: scan cache {cache}: 1 stored shard split(s) are damaged or not of the stage "
               "they are stored for; ignored, and the shards split again (and stored again)")
    for case in CORPUS["cases"]:
        value = _tampered(good, case)
        if case.get("op") == "piled":
            piled = json.loads(value)[1:]
            assert _makespan(weights, piled, 3) > _makespan(weights, _lpt(weights, 3), 3)
        pack.write_bytes(_pack(pack_text({k: value if k == key else json.dumps(v) for k, v in entries.items()})))
        rc, out, err = run_cli([*PLAN, "--repo", str(checkout), "--cache", str(cache)], capsys)
        assert (rc, out) == truth[:2], case["name"]
        whole = (f"ci-policy plan: warning: scan cache {cache}: {SPLITS_CONTEXT}.pack.json is damaged (its entries "
                 "are not keys with a JSON array each); ignored, and the shards split again (and stored again)")
        # A value whose line does not open and close an array spoils the whole pack; any other is refused alone.
        spoils = not (value.startswith("[") and value.endswith("]"))
        assert err == (whole if spoils else refused) + "\n", (case["name"], err)
        # The split computed again is stored again: the pack heals.
        assert pack_entries(pack.read_bytes().partition(b"\n")[2])[key] == good, case["name"]


def test_the_split_corpus_is_what_its_generator_writes() -> None:
    from hostile.cache.generate import SPLIT_STAGE, split_cases

    assert CORPUS == {"stage": SPLIT_STAGE, "cases": split_cases()}
