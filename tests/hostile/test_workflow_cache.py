"""The tampered stored workflows (tests/hostile/cache/workflows.json, written by its generate.py).

- `lint` whose workflows come from the cache prints, byte for byte, what the lint that composed
  them prints, and what `--no-cache` prints; the warm lint writes no pack.
- `lint` over a cache holding a tampered entry of the workflow (the pack's checksum made to match,
  as someone able to write the cache directory could) prints exactly what `--no-cache` prints,
  plus one warning: the workflow is composed again and stored again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import pack_entries, pack_text, run_cli

from ci_policy.adapters.scan_cache import CACHE_VERSION
from ci_policy.model.workflow_cache import workflow_context

CORPUS = json.loads((Path(__file__).resolve().parent / "cache" / "workflows.json").read_text())
LINT = ["lint", "--format", "json"]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("workflows") / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / "labels.py").write_text('KNOWN_LABELS = {"w": "w tests"}\n')
    (repo / ".github" / "ci-policy.yml").write_text(
        "version: 1\ndiscovery: {roots: [tests]}\nstages:\n"
        "  - {name: stage-w, backend: cuda, runs_on: [gpu], partitions: 1}\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_w.py").write_text(
        'from ci_policy import register_cuda_ci\n\nregister_cuda_ci(est_time=60, suite="stage-w", labels=["w"])\n\n'
        'if __name__ == "__main__":\n    main()\n')
    (repo / ".github" / "workflows" / "gpu.yml").write_text(CORPUS["workflow"])
    return repo


def _pack(body: bytes) -> bytes:
    digest = hashlib.sha256(body).hexdigest()
    return f'{{"cache":{CACHE_VERSION},"context":"{workflow_context()}","sha256":"{digest}"}}\n'.encode() + body


def _tampered(good: list[Any], case: dict[str, Any]) -> str:
    value = case["value"].replace("@DIGITS@", "1" * 5000)
    if not case["at"]:
        return value
    entry = json.loads(json.dumps(good))
    place = entry
    for index in case["at"][:-1]:
        place = place[index]
    place[case["at"][-1]] = "@PLACE@"
    return json.dumps(entry).replace('"@PLACE@"', value)


def test_a_warm_lint_prints_what_a_cold_lint_and_no_cache_print(checkout: Path, tmp_path: Path, capsys: Any) -> None:
    cache = tmp_path / "cache"
    truth = run_cli([*LINT, "--repo", str(checkout), "--no-cache"], capsys)
    codes = [d["code"] for d in json.loads(truth[1])["errors"]]
    assert truth[0] == 1 and codes == ["CP608", "CP607"], truth  # what the workflow's entry says
    assert run_cli([*LINT, "--repo", str(checkout), "--cache", str(cache)], capsys) == truth
    pack = cache / f"{workflow_context()}.pack.json"
    written = pack.stat()
    assert run_cli([*LINT, "--repo", str(checkout), "--cache", str(cache)], capsys) == truth
    assert pack.stat().st_mtime_ns == written.st_mtime_ns and pack.stat().st_ino == written.st_ino  # all hits
    (key,) = pack_entries(pack.read_bytes().partition(b"\n")[2])
    text = CORPUS["workflow"].encode()
    assert key == f".github/workflows/gpu.yml\0sha256:{hashlib.sha256(text).hexdigest()}"


def test_a_tampered_workflow_is_refused_and_composed_again(checkout: Path, tmp_path: Path, capsys: Any) -> None:
    cache = tmp_path / "cache"
    truth = run_cli([*LINT, "--repo", str(checkout), "--no-cache"], capsys)
    run_cli([*LINT, "--repo", str(checkout), "--cache", str(cache)], capsys)
    pack = cache / f"{workflow_context()}.pack.json"
    entries = pack_entries(pack.read_bytes().partition(b"\n")[2])
    ((key, good),) = entries.items()
    refused = (f"ci-policy lint: warning: scan cache {cache}: 1 stored workflow(s) are damaged or not of the file "
               "they are stored for; ignored, and the workflows read and composed again (the cache is rewritten as "
               "they are)")
    whole = (f"ci-policy lint: warning: scan cache {cache}: {workflow_context()}.pack.json is damaged (its entries "
             "are not keys with a JSON array each); ignored, and the workflows read and composed again (the cache is "
             "rewritten as they are)")
    wholes = 0
    for case in CORPUS["cases"]:
        value = _tampered(good, case)
        pack.write_bytes(_pack(pack_text({key: value})))
        rc, out, err = run_cli([*LINT, "--repo", str(checkout), "--cache", str(cache)], capsys)
        assert (rc, out) == truth[:2], case["name"]
        # A value whose line does not open and close an array spoils the whole pack; any other (one
        # past the JSON parser too) is refused alone.
        spoils = not (value.startswith("[") and value.endswith("]"))
        assert err == (whole if spoils else refused) + "\n", (case["name"], err)
        wholes += spoils
        # The workflow composed again is stored again: the pack heals.
        assert pack_entries(pack.read_bytes().partition(b"\n")[2]) == {key: good}, case["name"]
    assert 0 < wholes < len(CORPUS["cases"])  # both ways of refusing are taken


def test_the_workflow_corpus_is_what_its_generator_writes() -> None:
    from hostile.cache.generate import WORKFLOW, workflow_cases

    assert CORPUS == {"workflow": WORKFLOW, "cases": workflow_cases()}
