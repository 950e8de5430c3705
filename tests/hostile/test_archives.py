"""Hostile archives for `tune --github-run` (issue 32, item 6): the corpus under `archives/`.

Each archive alone gives exactly its outcome (rows, or the archive skipped with the reason,
the member and the line); together, in one run, each costs only itself: one located warning
apiece, and the good archives' rows are used. Nothing is left expanded on disk, never a
traceback.
"""

from __future__ import annotations

import io
import json
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from ci_policy.adapters.github import download
from ci_policy.adapters.tuning.records import read_records
from ci_policy.cli import main

HERE = Path(__file__).parent / "archives"
sys.path.insert(0, str(HERE))
import corpus  # noqa: E402

CITE = "acme/minirl/runs/7/artifacts/timings"
SKIP_HINT = "none of its timing records are used; the run's other artifacts and job logs are"

# name -> ("rows", [(file, source)]) or ("skipped", reason, member cited, line)
OUTCOMES: dict[str, tuple] = {
    "bomb-ratio.zip": ("skipped", "member 't.jsonl' expands to more than 100 times its 8265 compressed bytes "
                                  "(a zip bomb)", None, None),
    "bomb-overlap.zip": ("skipped", "members 't.jsonl' and 't.jsonl' overlap (a zip bomb)", None, None),
    "nested.zip": ("rows", [("tests/gpu/test_good.py", f"{CITE}/t.jsonl")]),
    "zip-as-records.zip": ("skipped", "member 't.jsonl' has 1 malformed record(s): line 1: not valid UTF-8 "
                                      "(byte 0xc3 at column 15)", f"{CITE}/t.jsonl", 1),
    "traversal.zip": ("rows", [("tests/gpu/test_a.py", f"{CITE}/../../../tmp/evil.jsonl"),
                               ("tests/gpu/test_b.py", f"{CITE}//etc/evil.jsonl"),
                               ("tests/gpu/test_c.py", f"{CITE}/..\\..\\evil.jsonl")]),
    "symlink.zip": ("skipped", "member 't.jsonl' is a symbolic link", None, None),
    "truncated.zip": ("skipped", "not a readable zip archive (File is not a zip file)", None, None),
    "malformed-directory.zip": ("skipped", "not a readable zip archive (Bad magic number for central directory)",
                                None, None),
    "forged-numbers.zip": ("skipped", "member 't.jsonl' has 3 malformed record(s): line 1: field 'elapsed': "
                                      "expected a number in [0, 604800], got number 1e+308; line 2: field "
                                      "'elapsed': expected a number in [0, 604800], got number "
                                      "9999999999999999999999999999999999999...; line 3: field 'est_time': "
                                      "expected a number in [0, 604800] or null, got number 1e+300",
                           f"{CITE}/t.jsonl", 1),
}


def test_the_corpus_on_disk_is_what_its_builder_writes():
    built = corpus.build()
    assert sorted(built) == sorted(OUTCOMES) == sorted(p.name for p in HERE.glob("*.zip"))
    for name, data in built.items():
        assert (HERE / name).read_bytes() == data, f"{name}: run tests/hostile/archives/corpus.py --write"


@pytest.mark.parametrize("name", sorted(OUTCOMES))
def test_each_hostile_archive_gives_exactly_its_outcome(name, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    blob = (HERE / name).read_bytes()
    outcome = OUTCOMES[name]
    if outcome[0] == "rows":
        rows = download._records_of_archive(blob, "acme/minirl", 7, "timings", read_records, None, [])
        assert [(r.file, r.source) for r in rows] == outcome[1]
    else:
        with pytest.raises(download.ArchiveSkipped) as caught:
            download._records_of_archive(blob, "acme/minirl", 7, "timings", read_records, None, [])
        assert (str(caught.value), caught.value.member, caught.value.line) == outcome[1:]
    assert list(tmp_path.iterdir()) == []  # nothing left expanded, nothing written beside it


def test_a_bomb_by_count_is_skipped_before_any_member_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for i in range(download.MAX_MEMBERS + 1):
            archive.writestr(f"{i}.jsonl", b"")
    with pytest.raises(download.ArchiveSkipped) as caught:
        download._records_of_archive(buffer.getvalue(), "acme/minirl", 7, "timings", read_records)
    assert str(caught.value) == "more than 10000 members"
    assert list(tmp_path.iterdir()) == []


def test_a_small_member_that_compresses_well_is_not_a_bomb():
    # The ratio cap starts past 1 MiB: a short file of repeated lines compresses honestly past 100:1.
    blob = corpus.zip_of([("t.jsonl", corpus.record() + b"\n" * (512 * 1024))], method=zipfile.ZIP_DEFLATED)
    rows = download._records_of_archive(blob, "acme/minirl", 7, "timings", read_records, None, [])
    assert [r.file for r in rows] == ["tests/gpu/test_good.py"]


def test_one_run_with_every_hostile_archive_warns_once_for_each_and_uses_the_rest(gh, example_repo, monkeypatch,
                                                                                     capsys):
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_" + "0" * 36)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    gh.add_run("tune.yml", head_sha="a" * 40, conclusion="success", event="schedule", run_id=7,
               head_branch="main")  # a run tune trusts: scheduled, on the default branch
    gh.run_jobs[7] = []
    for i, name in enumerate(sorted(OUTCOMES)):
        gh.add_artifact(7, f"ci-policy-timings-{name}", (HERE / name).read_bytes(), artifact_id=900 + i)
    rc = main(["tune", "--repo", str(example_repo), "--github-run", "acme/minirl/7", "--api-url", gh.url,
               "--format", "json"])
    stdout, stderr = capsys.readouterr()
    assert rc == 0
    warnings = [line for line in stderr.splitlines() if ": warning: " in line]
    expected = []
    for name in sorted(OUTCOMES):
        outcome = OUTCOMES[name]
        if outcome[0] == "skipped":
            artifact = f"ci-policy-timings-{name}"
            where = (outcome[2].replace(CITE, f"acme/minirl/runs/7/artifacts/{artifact}") + f":{outcome[3]}"
                     if outcome[2] else f"acme/minirl/runs/7/artifacts/{artifact}")
            expected.append(f"{where}: warning: artifact '{artifact}' of run 7 skipped: {outcome[1]}")
    assert warnings == expected
    assert stderr.count(f"    hint: {SKIP_HINT}") == len(expected) == 7
    assert "Traceback" not in stderr
    # The rows of the good archives (nested.zip's outer member, traversal.zip's three) are used.
    assert [p["file"] for p in json.loads(stdout)["proposals"]] == [
        "tests/gpu/test_a.py", "tests/gpu/test_b.py", "tests/gpu/test_c.py", "tests/gpu/test_good.py"]
