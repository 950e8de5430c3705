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
