"""Hostile corpus, area "store": metric records and the recorder (finding 8), store locations
(finding 7) and the archives `tune` reads (finding 6), each case with its exact outcome.

- Records: the files under `store/records/` (and generated ones: nesting too deep), each
  read into its exact series and located problems; a shard whose tests write such records
  runs every file, prints its summary, and turns each bad record into its file's ERROR.
- Recorder: a whitelisted key logged as None, "1.0" or True never raises into the test and
  yields an ERROR naming the key and the step; parent and child logging the same step
  with the same value collapse, with different values give an ERROR naming both.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from helpers import assert_golden, clean_env, console_script

from ci_policy.adapters.store import open_store
from ci_policy.read.records import load_record, read_process_file

HERE = Path(__file__).parent / "store"
GRAD = "train/grad_norm"


def cli(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([console_script(), *args], cwd=cwd, env=clean_env(**env), capture_output=True,
                          text=True, timeout=300)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


# -- finding 8: metric records ------------------------------------------------------------------

RECORD_CASES = [
    # (case file, series read, problems: metric key ("" = the whole record) -> messages)
    ("list.jsonl", {}, {"": ["list.jsonl:1: expected a JSON object, got array [1]"]}),  # finding 8: `[1]`
    ("string.jsonl", {}, {"": ['string.jsonl:1: expected a JSON object, got string "x"']}),  # finding 8: `"x"`
    ("nan-constant.jsonl", {},  # finding 8: NaN as a JSON constant
     {"": ["nan-constant.jsonl:2: not valid JSON: non-standard JSON constant NaN"]}),
    ("huge-int.jsonl", {},  # finding 8: a 5,000-digit number
     {"": ["huge-int.jsonl:2: not valid JSON: an integer with too many digits"]}),
    ("huge-float.jsonl", {GRAD: [(0, float("inf"))]}, {}),  # finding 8: 1e999 is read as infinity (the gate ERRORs)
    ("points-object.jsonl", {},  # finding 8: points that are not an array
     {GRAD: ['points-object.jsonl:2: train/grad_norm: \'points\' must be an array, got {"0": 1.0}']}),
    ("bad-points.jsonl", {},  # finding 8: a boolean step, a point without a value
     {GRAD: ["bad-points.jsonl:2: train/grad_norm: a step must be an integer, got true",
             "bad-points.jsonl:2: train/grad_norm: a point must be [step, value], got [0]"]}),
    ("key-not-string.jsonl", {},  # finding 8: a key that is not a string
     {"": ['key-not-string.jsonl:2: \'key\' must be a non-empty string, got ["train/grad_norm"]']}),
    ("schema-string.jsonl", {}, {"": ['schema-string.jsonl:1: unsupported record schema "1"']}),  # finding 8
    ("not-utf8.jsonl", {}, {"": ["not-utf8.jsonl: not valid UTF-8 (byte 1)"]}),  # finding 8: binary bytes
]


@pytest.mark.parametrize("name, series, problems", RECORD_CASES, ids=[c[0] for c in RECORD_CASES])
def test_a_hostile_record_file_is_read_into_located_problems(name, series, problems):
    assert read_process_file(HERE / "records" / name) == (series, problems)


@pytest.mark.parametrize("depth, problems", [
    (500, {GRAD: ["metrics-1-000000000000.jsonl:2: train/grad_norm: a point must be [step, value], got "
                  "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[..."]}),
    (100_000, {"": ["metrics-1-000000000000.jsonl:2: not valid JSON: nested too deeply"]}),
])
def test_a_deeply_nested_record_is_a_problem_not_a_recursion_error(tmp_path, depth, problems):
    # finding 8: a deeply nested structure
    path = tmp_path / "metrics-1-000000000000.jsonl"
    path.write_text('{"schema": 1, "pid": 1}\n{"key": "train/grad_norm", "points": ' + "[" * depth + "]" * depth
                    + "}\n")
    assert read_process_file(path) == ({}, problems)


STORE_CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: gpu, backend: cuda, runs_on: [h200], timeout_per_file: 60}
runner: {kill_grace: 1}
"""

HEADER = '''\
import os
import pathlib
import sys

from ci_policy import register_ci_gate, register_cuda_ci
from ci_policy.sdk.metrics import MetricRecorder

register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])
register_ci_gate(metric_key="train/grad_norm", steps="all", enforce=True)
register_ci_gate(metric_key="train/ppo_kl", steps="last", enforce=True)

'''

# A test that writes a record file of its own (the code under test controls the record directory).
WRITES_FILE = HEADER + '''\
def main():
    directory = pathlib.Path(os.environ["CI_POLICY_RECORD_DIR"])
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "metrics-1-000000000000.jsonl").write_bytes({content!r})
    print("wrote a record by hand")


if __name__ == "__main__":
    main()
'''

# A training loop that logs values the recorder cannot record, and a forked child that logs the
# same steps as its parent: step 1 with the same value, step 2 with a different one.
RECORDER = HEADER + '''\
def main():
    recorder = MetricRecorder.from_env()
    recorder.log({"train/grad_norm": 1.0, "train/ppo_kl": None}, 0)
    recorder.log({"train/grad_norm": 2.0, "train/ppo_kl": "1.0"}, 1)
    recorder.log({"train/grad_norm": 3.0, "train/ppo_kl": True}, 2)
    pid = os.fork()
    if pid == 0:
        recorder.log({"train/grad_norm": 2.0}, 1)
        recorder.log({"train/grad_norm": 30.0}, 2)
        os._exit(0)
    os.waitpid(pid, 0)
    print("the recorder never raised")


if __name__ == "__main__":
    main()
'''

GOOD = HEADER + '''\
def main():
    recorder = MetricRecorder.from_env()
    for step in range(3):
        recorder.log({"train/grad_norm": 1.0 + step, "train/ppo_kl": 0.1}, step)


if __name__ == "__main__":
    main()
'''


def mask(text: str) -> str:
    text = re.sub(r"metrics-\d+-[0-9a-f]{12}\.jsonl", "metrics-<PID>-<HEX>.jsonl", text)
    return re.sub(r"elapsed=\d+\.\ds", "elapsed=<T>", re.sub(r"\| \d+\.\ds \|", "| <T> |", text))


def test_a_shard_whose_tests_write_hostile_records_runs_every_file_and_errors_only_theirs(make_repo, tmp_path):
    # finding 8: `[1]` and `"x"` as records, bad values logged and parent/child duplicates:
    # every file runs, the summary is printed, each bad record is its own file's ERROR.
    files = {
        "tests/gpu/test_a_list.py": WRITES_FILE.format(content=b"[1]\n"),
        "tests/gpu/test_b_string.py": WRITES_FILE.format(content=b'"x"\n'),
        "tests/gpu/test_c_recorder.py": RECORDER,
        "tests/gpu/test_d_good.py": GOOD,
    }
    repo = make_repo(files, config=STORE_CONFIG)
    store = tmp_path / "history.sqlite"
    open_store(str(store), default_path=tmp_path / "unused.sqlite").close()
    records = tmp_path / "records"
    proc = cli(repo, "run", "--stage", "gpu", "--event", "workflow_dispatch", "--label", "run-ci-megatron",
               "--continue-on-error", "--records-out", str(records), "--store", str(store),
               "--timings-out", str(tmp_path / "t.jsonl"))
    assert (proc.returncode, proc.stderr) == (1, "")
    assert_golden("hostile/store-run-hostile-records.txt", mask(proc.stdout))
    assert sorted(p.name for p in records.iterdir()) == [
        "tests__gpu__test_a_list.py.json", "tests__gpu__test_b_string.py.json",
        "tests__gpu__test_c_recorder.py.json", "tests__gpu__test_d_good.py.json"]
    assert load_record(records / "tests__gpu__test_a_list.py.json") == (
        {}, {"": ["metrics-1-000000000000.jsonl:1: expected a JSON object, got array [1]"]})
    series, problems = load_record(records / "tests__gpu__test_c_recorder.py.json")
    assert series == {GRAD: [(0, 1.0), (1, 2.0), (1, 2.0), (2, 3.0), (2, 30.0)]}
    assert [m.split(": ", 1)[1] for m in problems["train/ppo_kl"]] == [
        "train/ppo_kl at step 0 was not recorded: metric 'train/ppo_kl' must be a number, got NoneType None",
        "train/ppo_kl at step 1 was not recorded: metric 'train/ppo_kl' must be a number, got str '1.0'",
        "train/ppo_kl at step 2 was not recorded: metric 'train/ppo_kl' must be a number, got bool True"]
    assert list(problems) == ["train/ppo_kl"]
    assert json.loads((records / "tests__gpu__test_d_good.py.json").read_text()) == {
        "schema": 1, "series": {GRAD: [[0, 1.0], [1, 2.0], [2, 3.0]], "train/ppo_kl": [[0, 0.1], [1, 0.1], [2, 0.1]]}}


# -- finding 7: store locations -------------------------------------------------------------------

PASSWORD = "hunter2"
NOT_SHOWN = "(the value is not shown: it may hold a password)"
FORMS_HINT = ("hint: write postgresql://USER@HOST[:PORT]/DATABASE, sqlite:///absolute/path.sqlite, "
              "sqlite:relative/path.sqlite, or a file path ending in .sqlite, .sqlite3 or .db")
NEITHER = ("is neither a store URL nor a SQLite file path (a path ends in .sqlite, .sqlite3 or .db and holds no '=', "
           "'@', whitespace or control characters; a libpq keyword string is not accepted)")
PG_HINT = ("hint: write postgresql://USER@HOST[:PORT]/DATABASE, with reserved characters of the password "
           "percent-encoded (or the password in $PGPASSWORD or ~/.pgpass)")
SQLITE_HINT = "hint: write sqlite:///absolute/path.sqlite or sqlite:relative/path.sqlite"

LOCATION_CASES = [
    # (store location, message after the source, hint line)
    (f"host=db.example user=ci password={PASSWORD} dbname=metrics", NEITHER, FORMS_HINT),  # finding 7: libpq string
    (f"password={PASSWORD}", NEITHER, FORMS_HINT),  # finding 7: a libpq keyword without spaces
    (f"postgresql://ci:{PASSWORD}@[::1/db", "is not a valid postgresql:// URL", PG_HINT),  # finding 7: malformed URL
    (f"postgres://ci:{PASSWORD}@db:port/metrics", "is not a valid postgres:// URL", PG_HINT),  # finding 7: bad port
    (f"sqlite://user:{PASSWORD}@host/x.db",  # finding 7: a sqlite URL with a user and password
     "is a sqlite URL with a host or user; a sqlite URL names a local file only", SQLITE_HINT),
    (f"sqlite:user:{PASSWORD}@host/x.db",
     "is a sqlite URL with '@', '?' or '='; a sqlite URL names a local file only", SQLITE_HINT),
    (f"ci:{PASSWORD}@db.example/metrics.db", "is neither a store URL nor a SQLite file path", FORMS_HINT),
    ("metrics", NEITHER, FORMS_HINT),  # finding 7: a bare word is not a file path form
    (f"history-{PASSWORD}.sqlite\r\n::warning::x.db", NEITHER, FORMS_HINT),  # finding 7: control characters
]


@pytest.mark.parametrize("location, message, hint", LOCATION_CASES, ids=[str(i) for i in range(len(LOCATION_CASES))])
@pytest.mark.parametrize("given_as", ["--store", "$CI_POLICY_DATABASE_URL"])
def test_a_store_location_that_is_not_one_is_a_usage_error_that_never_echoes_it(make_repo, tmp_path, location,
                                                                              message, hint, given_as):
    repo = make_repo({"tests/gpu/test_good.py": GOOD}, config=STORE_CONFIG)
    record = tmp_path / "record.json"
    record.write_text('{"schema": 1, "series": {}}\n')
    store = ["--store", location] if given_as == "--store" else []
    env = {} if given_as == "--store" else {"CI_POLICY_DATABASE_URL": location}
    before = sorted(p.name for p in repo.iterdir())
    gate = cli(repo, "gate", "--file", "tests/gpu/test_good.py", "--record", str(record), *store, **env)
    run = cli(repo, "run", "--stage", "gpu", "--event", "workflow_dispatch", "--label", "run-ci-megatron",
              "--records-out", str(tmp_path / "records"), "--timings-out", str(tmp_path / "t.jsonl"), *store, **env)
    for command, proc in (("gate", gate), ("run", run)):
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr == f"ci-policy {command}: error: {given_as}: {message} {NOT_SHOWN}\n    {hint}\n"
        assert PASSWORD not in proc.stderr
    assert not (tmp_path / "records").exists() and not (tmp_path / "t.jsonl").exists()  # refused before any test
    assert sorted(p.name for p in repo.iterdir()) == before  # no SQLite file created in the working directory


def test_the_default_store_is_outside_the_checkout_and_a_pr_supplied_one_is_never_read(make_repo, tmp_path,
                                                                                       state_home):
    # finding 7: a PR adds .ci-policy/metrics.sqlite with a fabricated baseline of 1000; the
    # gate reads the default store in the state directory instead (here: missing, an ERROR).
    from ci_policy.adapters.store import RunKey, Sample, default_store_path

    repo = make_repo({"tests/gpu/test_good.py": GOOD}, config=STORE_CONFIG)
    planted = repo / ".ci-policy" / "metrics.sqlite"
    planted.parent.mkdir()
    identity = ("tests/gpu/test_good.py", "cuda", "gpu", "train/ppo_kl", '{"constraint":null,"steps":"last"}')
    with open_store(str(planted), default_path=tmp_path / "unused.sqlite") as store:
        for run_id in ("1", "2", "3"):
            store.write(RunKey(run_id, 1, "tests/gpu/test_good.py", "cuda", "gpu"), cadence="nightly", commit=None,
                        trusted=True, samples=[Sample(identity, -1, 1000.0)], write_baseline=True)
    record = tmp_path / "record.json"
    record.write_text('{"schema": 1, "series": {"train/ppo_kl": [[0, 1000.0]]}}\n')
    default = default_store_path(repo)
    assert default.parent.parent == state_home / "ci-policy"
    proc = cli(repo, "gate", "--file", "tests/gpu/test_good.py", "--record", str(record))
    assert (proc.returncode, proc.stderr) == (1, "")
    assert (f"train/ppo_kl     last  1000   -         -     ERROR    metric history unavailable: SQLite metric "
            f"history {default}: does not exist") in proc.stdout
    assert "PASS" not in proc.stdout


@pytest.mark.parametrize("link", ["ci-policy", "key", "file"])
def test_a_symlink_on_the_default_stores_path_is_refused(make_repo, tmp_path, state_home, link):
    # finding 7: the default store's path must hold no symbolic link (a link could lead it
    # into a checkout, to a PR-supplied history).
    from ci_policy.adapters.store import default_store_path

    repo = make_repo({"tests/gpu/test_good.py": GOOD}, config=STORE_CONFIG)
    default = default_store_path(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    open_store(str(elsewhere / "metrics.sqlite"), default_path=tmp_path / "unused.sqlite").close()
    if link == "ci-policy":
        (elsewhere / default.parent.name).mkdir()
        (elsewhere / default.parent.name / "metrics.sqlite").symlink_to(elsewhere / "metrics.sqlite")
        default.parent.parent.symlink_to(elsewhere)
        linked = default.parent.parent
    elif link == "key":
        default.parent.parent.mkdir(parents=True)
        default.parent.symlink_to(elsewhere)
        linked = default.parent
    else:
        default.parent.mkdir(parents=True)
        default.symlink_to(elsewhere / "metrics.sqlite")
        linked = default
    record = tmp_path / "record.json"
    record.write_text('{"schema": 1, "series": {"train/ppo_kl": [[0, 1.0]]}}\n')
    proc = cli(repo, "gate", "--file", "tests/gpu/test_good.py", "--record", str(record))
    assert (proc.returncode, proc.stderr) == (1, "")
    assert (f"ERROR    metric history unavailable: SQLite metric history {default}: {linked} is a symbolic link; "
            "the default metric store refuses symbolic links on its path\n") in proc.stdout


@pytest.mark.parametrize("url, error", [
    # finding 7: libpq's own text never carries the password (an option libpq refuses, a refused connection)
    (f"postgresql://ci:{PASSWORD}@127.0.0.1:9/db?badoption={PASSWORD}",
     'InputError: invalid PostgreSQL URL postgresql://ci:***@127.0.0.1:9/db?badoption=***: invalid URI query '
     'parameter: "badoption"'),
    (f"postgresql://ci:{PASSWORD}@127.0.0.1:9/db?connect_timeout=1&password={PASSWORD}",
     "StoreUnavailable: PostgreSQL metric history postgresql://ci:***@127.0.0.1:9/db?connect_timeout=1&password=***: "
     'connection failed: connection to server at "127.0.0.1", port 9 failed: Connection refused Is the server '
     "running on that host and accepting TCP/IP connections?"),
])
def test_psycopg_errors_are_redacted(tmp_path, url, error):
    from ci_policy.errors import CiPolicyError

    with pytest.raises(CiPolicyError) as caught:
        open_store(url, default_path=tmp_path / "unused.sqlite", read_only=True)
    assert f"{type(caught.value).__name__}: {caught.value}" == error


# -- finding 6: archives `tune --github-run` reads ---------------------------------------------------

RECORD_LINE = json.dumps({"schema": 1, "file": "tests/gpu/test_good.py", "stage": "gpu", "shard": 0, "attempt": 1,
                          "status": "pass", "elapsed": 12.5, "run_id": "7"}) + "\n"


def archive(members: dict[str, bytes], *, compression: int = 0) -> bytes:
    """A zip archive written by the test (tiny bytes, no binary committed)."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def patched(blob: bytes, *, local: int, central: int, value: bytes) -> bytes:
    """`blob` with `value` written at offset `local` of its first local header and `central`
    of its first central directory entry (a forged header field)."""
    out = bytearray(blob)
    lh, cd = out.index(b"PK\x03\x04"), out.index(b"PK\x01\x02")
    out[lh + local:lh + local + len(value)] = value
    out[cd + central:cd + central + len(value)] = value
    return bytes(out)


def bad_crc() -> bytes:
    blob = bytearray(archive({"t.jsonl": RECORD_LINE.encode()}))
    blob[blob.index(b'"tests/gpu')] ^= 0x01  # one byte of the stored member changed: its CRC no longer matches
    return bytes(blob)


BOMB = archive({"bomb.jsonl": b"\n" * (3 * 1024 * 1024)}, compression=8)  # ~3 KiB expanding to 3 MiB
SKIP_HINT = "none of its timing records are used; the run's other artifacts and job logs are"

ARCHIVE_CASES = [
    # (case, archive bytes, why it is skipped)
    ("bad-crc", bad_crc(), "member 't.jsonl': Bad CRC-32 for file 't.jsonl'"),  # finding 6: a bad CRC
    ("false-size", patched(archive({"t.jsonl": RECORD_LINE.encode()}), local=22, central=24,  # finding 6
                           value=(10).to_bytes(4, "little")), "member 't.jsonl': Bad CRC-32 for file 't.jsonl'"),
    ("encrypted", patched(archive({"t.jsonl": RECORD_LINE.encode()}), local=6, central=8,  # finding 6
                          value=b"\x01\x00"), "member 't.jsonl' is encrypted"),
    ("deflate64", patched(archive({"t.jsonl": RECORD_LINE.encode()}), local=8, central=10,  # finding 6
                          value=b"\x09\x00"),
     "member 't.jsonl': unsupported (That compression method is not supported)"),
    ("truncated", archive({"t.jsonl": RECORD_LINE.encode()})[:60],  # finding 6: a truncated download
     "not a readable zip archive (File is not a zip file)"),
    ("not-a-zip", b"<html>Service Unavailable</html>\n", "not a readable zip archive (File is not a zip file)"),
    ("bomb", BOMB,  # finding 6: 1.47 MB expanding to 1.51 GB, in small: past the archive's cap
     "expands to more than tune.archive_max_bytes (1048576 bytes) at member 'bomb.jsonl'"),
    ("control-name", archive({"a\r\n::warning::x.jsonl": b"\n" * (2 * 1024 * 1024)}),
     "expands to more than tune.archive_max_bytes (1048576 bytes) at member 'a??::warning::x.jsonl'"),
]


@pytest.mark.parametrize("case, blob, why", ARCHIVE_CASES, ids=[c[0] for c in ARCHIVE_CASES])
def test_a_hostile_archive_is_skipped_with_the_reason_never_a_traceback(tmp_path, monkeypatch, case, blob, why):
    import tempfile

    from ci_policy.adapters.github import download
    from ci_policy.adapters.tuning.records import read_records

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    budget = download.ExpansionBudget(archive_max_bytes=1024 * 1024, run_max_bytes=4 * 1024 * 1024)
    with pytest.raises(download.ArchiveSkipped) as caught:
        download._records_of_archive(blob, "acme/minirl", 7, "timings", read_records, budget)
    assert str(caught.value) == why
    assert list(tmp_path.iterdir()) == []  # nothing left expanded on disk


def test_the_runs_archives_share_one_expansion_budget_and_one_member_is_on_disk_at_a_time(tmp_path, monkeypatch):
    # finding 6: a cap per run as well as per archive; members are streamed one at a time.
    import tempfile

    from ci_policy.adapters.github import download
    from ci_policy.adapters.tuning import records

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    on_disk = []

    def spy(path, **kwargs):
        on_disk.append(sorted(p.name for p in tmp_path.rglob("*") if p.is_file()))
        return records.read_records(path, **kwargs)

    padded = (RECORD_LINE + "\n" * (600 * 1024)).encode()
    budget = download.ExpansionBudget(archive_max_bytes=2 * 1024 * 1024, run_max_bytes=1024 * 1024)
    rows = download._records_of_archive(archive({"a.jsonl": padded}), "acme/minirl", 7, "first", spy, budget)
    assert [(r.file, r.status, r.elapsed, r.source) for r in rows] == [
        ("tests/gpu/test_good.py", "passed", 12.5, "acme/minirl/runs/7/artifacts/first/a.jsonl")]
    assert budget.run_used == len(padded)
    with pytest.raises(download.ArchiveSkipped) as caught:
        download._records_of_archive(archive({"b.jsonl": padded}), "acme/minirl", 7, "second", spy, budget)
    assert str(caught.value) == ("the run's archives expand to more than tune.run_max_bytes (1048576 bytes) at "
                                 "member 'b.jsonl'")
    assert on_disk == [["member.jsonl"]]
    assert list(tmp_path.iterdir()) == []


def test_an_archive_with_too_many_members_is_skipped(monkeypatch):
    from ci_policy.adapters.github import download
    from ci_policy.adapters.tuning.records import read_records

    monkeypatch.setattr(download, "MAX_MEMBERS", 3)
    blob = archive({f"{i}.jsonl": RECORD_LINE.encode() for i in range(4)})
    with pytest.raises(download.ArchiveSkipped) as caught:
        download._records_of_archive(blob, "acme/minirl", 7, "many", read_records)
    assert str(caught.value) == "more than 3 members"


def test_the_expansion_caps_are_tune_configuration_keys(tmp_path):
    from ci_policy.config.top import parse_config

    config = parse_config(STORE_CONFIG + "tune: {archive_max_bytes: 1000, run_max_bytes: 5000}\n")
    assert (config.tune.archive_max_bytes, config.tune.run_max_bytes) == (1000, 5000)
    default = parse_config(STORE_CONFIG)
    assert (default.tune.archive_max_bytes, default.tune.run_max_bytes) == (256 * 1024 * 1024, 1024 * 1024 * 1024)


def test_tune_says_which_archive_it_skipped_and_uses_the_others(gh, example_repo, monkeypatch, capsys):
    # finding 6, end to end: a zip bomb among a run's artifacts is one warning; the rest is read.
    from ci_policy.cli import main

    monkeypatch.setenv("GITHUB_TOKEN", "ghs_" + "0" * 36)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    (example_repo / ".github" / "ci-policy.yml").write_text(
        (example_repo / ".github" / "ci-policy.yml").read_text() + "\ntune: {archive_max_bytes: 1048576}\n")
    gh.add_run("tune.yml", head_sha="a" * 40, conclusion="success", event="schedule", run_id=7,
               head_branch="main")  # a run tune trusts: scheduled, on the default branch
    gh.run_jobs[7] = []
    gh.add_artifact(7, "ci-policy-timings-bomb", BOMB, artifact_id=901)
    gh.add_artifact(7, "ci-policy-timings-0", archive({"t.jsonl": RECORD_LINE.encode()}), artifact_id=902)
    rc = main(["tune", "--repo", str(example_repo), "--github-run", "acme/minirl/7", "--api-url", gh.url,
               "--format", "json"])
    stdout, stderr = capsys.readouterr()
    assert rc == 0
    assert stderr == (f"ci-policy tune: run 7: timing artifact 1/2 'ci-policy-timings-bomb' ({len(BOMB)} bytes)\n"
                      "ci-policy tune: run 7: timing artifact 2/2 'ci-policy-timings-0' "
                      f"({len(gh.artifact_zips[902])} bytes)\n"
                      "acme/minirl/runs/7/artifacts/ci-policy-timings-bomb: warning: artifact 'ci-policy-timings-bomb' "
                      "of run 7 skipped: expands to more than tune.archive_max_bytes (1048576 bytes) at member "
                      "'bomb.jsonl'\n"
                      f"    hint: {SKIP_HINT}\n")
    assert json.loads(stdout)["schema"] == 1
