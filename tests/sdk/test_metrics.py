"""Producer side of metric gates: TITO session metrics, the per-process recorder, merged records.

The recorder is exercised by real processes (subprocesses and a forked child) writing into
one record directory, and every file it writes is parsed as strict JSON.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import re
import subprocess
import sys
import textwrap
import time
from fractions import Fraction
from pathlib import Path

import pytest

from ci_policy.read.records import merge_records, read_record, read_record_file, write_record
from ci_policy.sdk.metrics import (
    CAPTURE_ENV,
    DEFAULT_CAPTURE,
    RECORD_DIR_ENV,
    MetricRecorder,
    TitoMismatchError,
    rollout_metrics,
    session_server_version,
    tito_mismatch_metrics,
)

ROOT = Path(__file__).resolve().parents[2]

V1_TEXT = "rollout/tito_session_mismatch_rate/v1/assistant_text"
V2_TEXT = "rollout/tito_session_mismatch_rate/v2/assistant_text"
FILE_RE = re.compile(r"metrics-(\d+)-[0-9a-f]{12}\.jsonl")


def strict_constant(name):
    raise AssertionError(f"non-standard JSON constant {name} in a record")


def strict_lines(path: Path) -> list:
    """Every line of a per-process file, parsed as strict JSON (NaN/Infinity literals refused)."""
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line, parse_constant=strict_constant) for line in text.splitlines()]


def shown(series) -> dict:
    """Series with each value as its repr, so NaN compares equal to NaN."""
    return {key: [(step, repr(value)) for step, value in points] for key, points in series.items()}


def version_error(value) -> str:
    return (f"TITO metrics require session server v1 or v2, got {value!r} "
            "(configure the session server version: True or 'v1' for v1, 'v2' for v2)")


def mismatch(*types):
    return [{"type": t} for t in types]


def run_python(code: str, *args: str, env=None, optimize=False, timeout=120) -> subprocess.CompletedProcess:
    cmd = [sys.executable] + (["-O"] if optimize else []) + ["-c", textwrap.dedent(code), *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


# -- session_server_version ---------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [(True, "v1"), ("v1", "v1"), ("v2", "v2")])
def test_session_server_version_accepted(value, expected):
    assert session_server_version(value) == expected


REJECTED_VERSIONS = [None, False, "v3", 1, 1.0, "V1", "", " v1", "v1 ", 2, ["v1"], b"v1"]


@pytest.mark.parametrize("value", REJECTED_VERSIONS, ids=repr)
def test_session_server_version_rejected(value):
    with pytest.raises(ValueError) as info:
        session_server_version(value)
    assert str(info.value) == version_error(value)
    assert "TITO metrics require session server v1 or v2" in str(info.value)


def test_session_server_version_checks_survive_python_O():
    """Under -O asserts vanish; the version check and the CI-test check must still raise."""
    result = run_python("""
        import json, sys
        from ci_policy.sdk.metrics import session_server_version, tito_mismatch_metrics
        assert False, "asserts are compiled in"  # proves -O is in effect when this line does nothing
        out = {"optimize": sys.flags.optimize, "accepted": [session_server_version(v) for v in (True, "v1", "v2")]}
        rejected = []
        for value in (None, False, "v3", 1, 1.0, "V1"):
            try:
                session_server_version(value)
            except ValueError as exc:
                rejected.append(str(exc))
            else:
                rejected.append("accepted " + repr(value))
        out["rejected"] = rejected
        try:
            tito_mismatch_metrics([[{"type": "special_token_count"}]], "v2", ci_test=True)
        except ValueError as exc:
            out["ci_test"] = str(exc)
        else:
            out["ci_test"] = "no error"
        print(json.dumps(out))
    """, optimize=True)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out == {
        "optimize": 1,
        "accepted": ["v1", "v1", "v2"],
        "rejected": [version_error(v) for v in (None, False, "v3", 1, 1.0, "V1")],
        "ci_test": ("tito_session_mismatch_rate/v2/special_token_count = 1 in a CI test; it must be 0: "
                    "a nonzero rate indicates a bug in the TITO algorithm or the chat template"),
    }


# -- tito_mismatch_metrics ----------------------------------------------------------------------

def rates(version, any_rate, **by_type):
    base = f"tito_session_mismatch_rate/{version}"
    out = {base: any_rate}
    for kind in ("special_token_count", "special_token_type", "non_assistant_text", "assistant_text"):
        out[f"{base}/{kind}"] = by_type.get(kind, 0.0)
    return out


@pytest.mark.parametrize("mismatches, version, expected", [
    pytest.param([], "v1", {}, id="no-samples"),
    pytest.param([None, None, None], "v2", {}, id="no-sample-has-metadata"),
    pytest.param([[]], "v1", rates("v1", 0.0), id="one-clean-sample"),
    pytest.param([None, [], None, []], "v2", rates("v2", 0.0), id="clean-samples-none-ignored"),
    pytest.param([mismatch("assistant_text"), [], None, []], "v1",
                 rates("v1", 1 / 3, assistant_text=1 / 3), id="none-not-counted-in-denominator"),
    pytest.param([mismatch("assistant_text", "special_token_count"), mismatch("assistant_text"), [], []], "v2",
                 rates("v2", 0.5, assistant_text=0.5, special_token_count=0.25), id="several-types"),
    pytest.param([mismatch("non_assistant_text", "non_assistant_text", "non_assistant_text"), []], "v1",
                 rates("v1", 0.5, non_assistant_text=0.5), id="a-type-counts-once-per-sample"),
    pytest.param([mismatch("special_token_type"), mismatch("special_token_count"),
                  mismatch("non_assistant_text"), mismatch("assistant_text")], True,
                 rates("v1", 1.0, special_token_type=0.25, special_token_count=0.25,
                       non_assistant_text=0.25, assistant_text=0.25), id="true-means-v1"),
])
def test_tito_mismatch_rates(mismatches, version, expected):
    assert tito_mismatch_metrics(mismatches, version) == expected


def test_tito_rates_are_fractions_of_samples_exactly():
    samples = [mismatch("assistant_text")] * 3 + [[]] * 5 + [None] * 7
    out = tito_mismatch_metrics(samples, "v2")
    assert out["tito_session_mismatch_rate/v2"] == 3 / 8
    assert out["tito_session_mismatch_rate/v2/assistant_text"] == 3 / 8
    assert list(out) == ["tito_session_mismatch_rate/v2"] + [
        f"tito_session_mismatch_rate/v2/{k}"
        for k in ("special_token_count", "special_token_type", "non_assistant_text", "assistant_text")]


@pytest.mark.parametrize("version", ["v1", "v2", True])
def test_ci_test_records_assistant_text_without_enforcing_it(version):
    v = session_server_version(version)
    samples = [mismatch("assistant_text"), mismatch("assistant_text")]
    assert tito_mismatch_metrics(samples, version, ci_test=True) == rates(v, 1.0, assistant_text=1.0)


def test_ci_test_with_clean_or_missing_metadata_passes():
    assert tito_mismatch_metrics([[], [], None], "v1", ci_test=True) == rates("v1", 0.0)
    assert tito_mismatch_metrics([None], "v2", ci_test=True) == {}


@pytest.mark.parametrize("kind", ["special_token_count", "special_token_type", "non_assistant_text"])
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_ci_test_strict_type_nonzero_is_an_error(kind, version):
    samples = [mismatch(kind), [], [], None, [], mismatch("assistant_text")]
    with pytest.raises(TitoMismatchError) as info:
        tito_mismatch_metrics(samples, version, ci_test=True)
    assert isinstance(info.value, ValueError)
    assert str(info.value) == (
        f"tito_session_mismatch_rate/{version}/{kind} = 0.2 in a CI test; it must be 0: "
        "a nonzero rate indicates a bug in the TITO algorithm or the chat template")
    # Outside a CI test the same samples are only recorded.
    assert tito_mismatch_metrics(samples, version)[f"tito_session_mismatch_rate/{version}/{kind}"] == 0.2


def test_ci_test_reports_the_first_strict_type_with_its_rate():
    samples = [mismatch("non_assistant_text"), mismatch("special_token_type"), mismatch("special_token_type")]
    with pytest.raises(TitoMismatchError) as info:
        tito_mismatch_metrics(samples, "v1", ci_test=True)
    assert str(info.value).startswith("tito_session_mismatch_rate/v1/special_token_type = 0.666667 in a CI test")


@pytest.mark.parametrize("sample, shown_item", [
    ([{"type": "trailing_newline"}], "{'type': 'trailing_newline'}"),
    ([{"kind": "assistant_text"}], "{'kind': 'assistant_text'}"),
    (["assistant_text"], "'assistant_text'"),
])
def test_unknown_mismatch_names_the_sample_by_its_index(sample, shown_item):
    with pytest.raises(ValueError) as info:
        tito_mismatch_metrics([None, [], None, sample], "v1")
    assert str(info.value) == (
        f"sample 3: unknown TITO mismatch {shown_item}; expected a dict with type in "
        "special_token_count, special_token_type, non_assistant_text, assistant_text")


@pytest.mark.parametrize("version", [None, False, "v3", 1])
def test_tito_metrics_reject_a_bad_version_even_without_samples(version):
    with pytest.raises(ValueError, match="TITO metrics require session server v1 or v2"):
        tito_mismatch_metrics([], version)


# -- rollout_metrics ----------------------------------------------------------------------------

def test_rollout_metrics_fan_out_both_versions_apart():
    out = rollout_metrics({"v1": [mismatch("assistant_text"), []], "v2": [[], [], [], mismatch("assistant_text")]})
    expected = {f"rollout/{k}": v for k, v in {**rates("v1", 0.5, assistant_text=0.5),
                                               **rates("v2", 0.25, assistant_text=0.25)}.items()}
    assert out == expected
    assert out[V1_TEXT] == 0.5 and out[V2_TEXT] == 0.25


def test_rollout_metrics_true_is_v1_and_a_version_without_metadata_adds_nothing():
    out = rollout_metrics({True: [[]], "v2": [None, None]})
    assert out == {f"rollout/{k}": v for k, v in rates("v1", 0.0).items()}


def test_rollout_metrics_refuse_one_version_given_twice():
    with pytest.raises(ValueError) as info:
        rollout_metrics({True: [mismatch("assistant_text")], "v1": [[]]})
    assert str(info.value) == ("session server v1 is given twice (True and 'v1'); "
                               "its metrics would overwrite each other")


def test_rollout_metrics_enforce_in_ci_tests():
    with pytest.raises(TitoMismatchError, match="^tito_session_mismatch_rate/v2/non_assistant_text = 1 "):
        rollout_metrics({"v1": [[]], "v2": [mismatch("non_assistant_text")]}, ci_test=True)
    with pytest.raises(ValueError, match="got 'v3'"):
        rollout_metrics({"v3": [[]]})


# -- MetricRecorder: activation, whitelist, values ------------------------------------------------

def only_file(directory: Path) -> Path:
    files = sorted(directory.iterdir())
    assert len(files) == 1, files
    assert FILE_RE.fullmatch(files[0].name), files[0].name
    return files[0]


@pytest.mark.parametrize("value", [None, ""])
def test_recorder_is_inactive_without_the_record_dir(tmp_path, monkeypatch, value):
    monkeypatch.chdir(tmp_path)
    if value is None:
        monkeypatch.delenv(RECORD_DIR_ENV, raising=False)
    else:
        monkeypatch.setenv(RECORD_DIR_ENV, value)
    rec = MetricRecorder.from_env()
    assert not rec.active and rec.path is None
    rec.log({"train/grad_norm": 1.0, "train/ppo_kl": "not even a number"}, 0)
    assert list(tmp_path.iterdir()) == []


def test_recorder_from_env_uses_the_dir_and_the_capture_list(tmp_path, monkeypatch):
    monkeypatch.setenv(RECORD_DIR_ENV, str(tmp_path / "rec"))
    monkeypatch.delenv(CAPTURE_ENV, raising=False)
    rec = MetricRecorder.from_env()
    assert rec.active and rec.directory == tmp_path / "rec"
    assert rec.capture == frozenset(DEFAULT_CAPTURE)
    monkeypatch.setenv(CAPTURE_ENV, json.dumps(["train/loss"]))
    rec = MetricRecorder.from_env()
    assert rec.capture == frozenset({"train/loss"})
    rec.log({"train/loss": 0.5, "train/grad_norm": 1.0}, 3)
    assert strict_lines(only_file(tmp_path / "rec"))[1:] == [{"key": "train/loss", "points": [[3, 0.5]]}]


def test_recorder_captures_only_whitelisted_keys(tmp_path):
    rec = MetricRecorder(tmp_path)
    rec.log({"train/grad_norm": 1.5, "train/loss": 2.0, "perf/tokens": "fast", "misc": None, "flag": True,
             "list": [1, 2], "rollout/tito_session_mismatch_rate/v1": 0.5, V1_TEXT: 0.25}, 0)
    rec.log({"train/loss": 9.0}, 1)  # nothing whitelisted: no new points
    lines = strict_lines(only_file(tmp_path))
    assert lines == [{"schema": 1, "pid": os.getpid()},
                     {"key": V1_TEXT, "points": [[0, 0.25]]},
                     {"key": "train/grad_norm", "points": [[0, 1.5]]}]


@pytest.mark.parametrize("value, shown_value", [
    ("1.5", "str '1.5'"), (None, "NoneType None"), (True, "bool True"), (False, "bool False"),
    ([1.0], "list [1.0]"), ({"v": 1.0}, "dict {'v': 1.0}"),
])
def test_recorder_keeps_a_non_numeric_whitelisted_value_as_an_error_marker(tmp_path, value, shown_value):
    rec = MetricRecorder(tmp_path)
    rec.log({"train/grad_norm": 1.0}, 0)
    rec.log({"train/ppo_kl": 0.5, "train/grad_norm": value}, 1)  # never raises into the training loop
    rec.log({"train/ppo_kl": 0.25}, 2)
    assert strict_lines(only_file(tmp_path))[1:] == [
        {"key": "train/grad_norm", "points": [[0, 1.0]],
         "errors": [[1, f"metric 'train/grad_norm' must be a number, got {shown_value}"]]},
        {"key": "train/ppo_kl", "points": [[1, 0.5], [2, 0.25]]}]


def test_recorder_accepts_real_numbers_and_scalar_objects(tmp_path):
    class Scalar:  # the `.item()` protocol of numpy / torch scalars
        def __init__(self, v):
            self.v = v

        def item(self):
            return self.v

    rec = MetricRecorder(tmp_path)
    rec.log({"train/grad_norm": 3, "train/ppo_kl": Fraction(1, 4), "rollout/raw_reward": Scalar(0.75)}, 0)
    assert strict_lines(only_file(tmp_path))[1:] == [
        {"key": "rollout/raw_reward", "points": [[0, 0.75]]},
        {"key": "train/grad_norm", "points": [[0, 3.0]]},
        {"key": "train/ppo_kl", "points": [[0, 0.25]]},
    ]
    rec.log({"train/ppo_kl": Scalar(True)}, 1)
    rec.log({"train/ppo_kl": Scalar("0.5")}, 2)
    [kl] = [line for line in strict_lines(only_file(tmp_path)) if line.get("key") == "train/ppo_kl"]
    assert kl["points"] == [[0, 0.25]]
    assert [(step, reason.split(" <")[0]) for step, reason in kl["errors"]] == [
        (1, "metric 'train/ppo_kl' must be a number, got Scalar"),
        (2, "metric 'train/ppo_kl' must be a number, got Scalar")]


@pytest.mark.parametrize("step", [-1, True, 1.0, "3", None])
def test_recorder_keeps_a_bad_step_as_an_error_marker(tmp_path, step):
    rec = MetricRecorder(tmp_path)
    rec.log({"train/grad_norm": 1.0, "train/loss": 2.0}, step)  # never raises into the training loop
    assert strict_lines(only_file(tmp_path))[1:] == [
        {"key": "train/grad_norm", "points": [], "errors": [[None, f"step must be an int >= 0, got {step!r}"]]}]


def test_recorder_never_raises_for_what_it_cannot_write_or_read(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    rec = MetricRecorder(blocker / "records")  # its directory cannot be created
    rec.log({"train/grad_norm": 1.0}, 0)
    rec.log({"train/grad_norm": 2.0}, 1)
    rec.log(None, 2)  # type: ignore[arg-type]
    assert capsys.readouterr().err == (f"ci_policy MetricRecorder: cannot write {rec.path}: "
                                       f"[Errno 20] Not a directory: '{blocker / 'records'}'\n")
    assert rec.series == {"train/grad_norm": [(0, 1.0), (1, 2.0)]}


def test_recorder_stores_non_finite_values_as_strict_json_strings(tmp_path):
    rec = MetricRecorder(tmp_path)
    rec.log({"train/grad_norm": math.nan, "rollout/raw_reward": -math.inf}, 0)
    rec.log({"train/grad_norm": math.inf, "rollout/raw_reward": 0.0}, 1)
    rec.log({"train/grad_norm": -0.5}, 2)
    path = only_file(tmp_path)
    assert strict_lines(path) == [
        {"schema": 1, "pid": os.getpid()},
        {"key": "rollout/raw_reward", "points": [[0, "-Infinity"], [1, 0.0]]},
        {"key": "train/grad_norm", "points": [[0, "NaN"], [1, "Infinity"], [2, -0.5]]},
    ]
    assert shown(read_record_file(path)) == {
        "rollout/raw_reward": [(0, "-inf"), (1, "0.0")],
        "train/grad_norm": [(0, "nan"), (1, "inf"), (2, "-0.5")],
    }


def test_every_log_rewrites_a_complete_snapshot_by_rename(tmp_path):
    rec = MetricRecorder(tmp_path)
    held = []  # a reader that opened an earlier snapshot keeps reading exactly that snapshot
    try:
        for step in range(4):
            rec.log({"train/grad_norm": step / 2, "train/ppo_kl": step * 2}, step)
            path = only_file(tmp_path)  # no temporary file is left behind
            assert path == rec.path
            assert strict_lines(path)[1:] == snapshot_lines(step)
            held.append(open(path, encoding="utf-8"))
        assert len({os.fstat(fh.fileno()).st_ino for fh in held}) == 4  # a new file renamed over the old
        for step, fh in enumerate(held):
            lines = [json.loads(line, parse_constant=strict_constant) for line in fh.read().splitlines()]
            assert lines[1:] == snapshot_lines(step)
    finally:
        for fh in held:
            fh.close()


def snapshot_lines(step):
    return [{"key": "train/grad_norm", "points": [[s, s / 2] for s in range(step + 1)]},
            {"key": "train/ppo_kl", "points": [[s, s * 2] for s in range(step + 1)]}]


WRITER = """
    import sys
    from ci_policy.sdk.metrics import MetricRecorder
    rec = MetricRecorder.from_env()
    print(rec.path, flush=True)
    sys.stdin.readline()
    import time
    for step in range(300):
        rec.log({"train/grad_norm": step + 0.25, "train/ppo_kl": -step, "rollout/raw_reward": float(step)}, step)
        time.sleep(0.001)
"""


def test_a_concurrent_reader_only_ever_sees_complete_snapshots(tmp_path):
    env = {**os.environ, RECORD_DIR_ENV: str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER)], cwd=ROOT, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        path = Path(proc.stdout.readline().strip())
        proc.stdin.write("go\n")
        proc.stdin.flush()
        seen = set()
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                lines = strict_lines(path)
            except FileNotFoundError:
                continue
            keys = [line["key"] for line in lines[1:]]
            assert keys == ["rollout/raw_reward", "train/grad_norm", "train/ppo_kl"]
            n = len(lines[1]["points"])
            assert lines[1:] == [
                {"key": "rollout/raw_reward", "points": [[s, float(s)] for s in range(n)]},
                {"key": "train/grad_norm", "points": [[s, s + 0.25] for s in range(n)]},
                {"key": "train/ppo_kl", "points": [[s, -s] for s in range(n)]},
            ]
            seen.add(n)
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=120) == 0
    assert len(strict_lines(path)[1]["points"]) == 300
    assert len(seen) >= 2  # the reader really overlapped the writer
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


# -- several processes, one record directory, one merged record ---------------------------------

PRODUCER = """
    import math, sys
    from ci_policy.sdk.metrics import MetricRecorder, rollout_metrics
    rank, world = int(sys.argv[1]), int(sys.argv[2])
    rec = MetricRecorder.from_env()
    for step in range(rank, 12, world):
        v1 = [[{"type": "assistant_text"}] if i < step % 4 else [] for i in range(4)]
        v2 = [[{"type": "assistant_text"}] if i < step % 2 else [] for i in range(4)] + [None]
        grad = {5: math.nan, 7: math.inf, 8: -math.inf}.get(step, step + 0.5)
        metrics = {"train/grad_norm": grad, "train/loss": "not captured", "perf/step_time": None,
                   **rollout_metrics({True: v1, "v2": v2}, ci_test=True)}
        rec.log(metrics, step)
    print(rec.path.name)
"""


def expected_merged() -> dict:
    grad = {5: "nan", 7: "inf", 8: "-inf"}
    return {
        V1_TEXT: [(s, repr((s % 4) / 4)) for s in range(12)],
        V2_TEXT: [(s, repr((s % 2) / 4)) for s in range(12)],
        "train/grad_norm": [(s, grad.get(s, repr(s + 0.5))) for s in range(12)],
    }


def test_processes_write_their_own_files_and_merge_into_one_record(tmp_path):
    record_dir = tmp_path / "attempt-1"
    env = {**os.environ, RECORD_DIR_ENV: str(record_dir)}
    env.pop(CAPTURE_ENV, None)
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(PRODUCER), str(rank), "3"], cwd=ROOT,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for rank in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _out, err in outs]
    names = [out.strip() for out, _err in outs]
    files = sorted(p.name for p in record_dir.iterdir())
    assert files == sorted(names) and len(set(names)) == 3
    assert {int(FILE_RE.fullmatch(n).group(1)) for n in names} == {p.pid for p in procs}
    for name in names:
        lines = strict_lines(record_dir / name)
        assert lines[0]["schema"] == 1
        assert [line["key"] for line in lines[1:]] == [V1_TEXT, V2_TEXT, "train/grad_norm"]

    merged = merge_records(record_dir)
    assert list(merged) == [V1_TEXT, V2_TEXT, "train/grad_norm"]  # v1 and v2 never merge
    assert shown(merged) == expected_merged()

    out = tmp_path / "merged" / "record.json"
    write_record(merged, out)
    json.loads(out.read_text(), parse_constant=strict_constant)
    assert shown(read_record(out)) == expected_merged()


def _forked_child_logs(rec: MetricRecorder) -> None:
    rec.log({"train/grad_norm": 2.0}, 1)


def test_a_forked_child_writes_its_own_file(tmp_path):
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork start method on this platform")
    rec = MetricRecorder(tmp_path)
    rec.log({"train/grad_norm": 1.0}, 0)
    child = multiprocessing.get_context("fork").Process(target=_forked_child_logs, args=(rec,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    rec.log({"train/grad_norm": 3.0}, 2)
    files = sorted(tmp_path.iterdir())
    assert len(files) == 2
    pids = {int(FILE_RE.fullmatch(f.name).group(1)): f for f in files}
    assert set(pids) == {os.getpid(), child.pid}
    assert strict_lines(pids[child.pid])[1:] == [{"key": "train/grad_norm", "points": [[1, 2.0]]}]
    assert strict_lines(pids[os.getpid()])[1:] == [{"key": "train/grad_norm", "points": [[0, 1.0], [2, 3.0]]}]
    assert merge_records(tmp_path) == {"train/grad_norm": [(0, 1.0), (1, 2.0), (2, 3.0)]}


# -- what a test process pays for ------------------------------------------------------------------

def test_importing_the_sdk_loads_only_the_standard_library_and_the_sdk():
    proc = run_python("""
        import sys
        before = set(sys.modules)
        from ci_policy.sdk import MetricRecorder, rollout_metrics
        new = sorted(m for m in set(sys.modules) - before if m.split(".")[0] not in sys.stdlib_module_names)
        print(" ".join(new))
    """)
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.split()
    # The package itself is unavoidable; beyond it, only the sdk and the exception base its
    # errors derive from (standard library only): no PyYAML, no core, no adapter.
    assert [m for m in loaded if m not in ("ci_policy", "ci_policy.errors", "ci_policy.sdk")
            and not m.startswith("ci_policy.sdk.")] == []
    assert {"ci_policy.sdk.markers", "ci_policy.sdk.metrics"} <= set(loaded)


def test_importing_a_marker_does_not_load_the_metric_producers():
    """`import ci_policy` is paid by every command and by every test file that imports a marker."""
    proc = run_python("""
        import sys
        from ci_policy import register_cuda_ci
        import ci_policy.sdk
        print("ci_policy.sdk.metrics" in sys.modules)
        ci_policy.sdk.MetricRecorder
        print("ci_policy.sdk.metrics" in sys.modules)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "False\nTrue\n"
