"""`ci-policy tune` end to end on a copy of examples/gpu-repo with the evidence of
tests/data/tuning_e2e: timing records of five CI runs (shards, a retry, a timeout, a re-run
job) and a developer's local runs, a GitHub log archive of an sglang-family runner (ANSI
codes, timestamps, a retry, a cancelled job, a job without a final summary, a since-deleted
test) and a fast-failed job log of ci-policy's own runner.

Golden summary and CSV (tests/data/golden/cli/tune/), --check exit codes, --apply as a diff of
exactly the est_time literals, ambiguous files skipped and reported, --write-estimates and then the
estimates-file mode through plan, list and run, and the error paths."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import assert_golden, assert_run_golden, console_script, read_golden
from schema_check import assert_valid

from ci_policy.adapters.tuning.evidence import STATUSES
from ci_policy.adapters.tuning.logs import clean_line
from ci_policy.adapters.tuning.report import COLUMNS
from ci_policy.cli import main

EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "tuning_e2e"
WEEKLY = ["--event", "schedule", "--schedule", "0 15 * * 6"]
ESTIMATES = ".github/ci-estimates.json"
GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.invalid",
           "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.invalid"}

# The golden summaries tests/data/golden/cli/tune/summary-report.txt (without --apply/--check/--write-estimates
# a change is only reported) and summary-applying.txt are hand-checked
# (tune: safety 1.25, quantile 0.9, min_samples_for_quantile 5, deadband 0.2):
# - test_fsdp_grpo: 5 passed samples (runs 1001-1005), p90 = rank 5 = 236.207 -> 295.26 -> 296 -> 300;
#   run 1006 logged 251.7 without a final summary (unknown): not a sample.
# - test_megatron_long_context: 2650.347 and 2702.561 (run 1002's re-run); run 1002 timed out twice
#   (3600.208 s): not a sample, and it does not cancel the raise. 3378.2 -> 3379 -> 3400.
# - test_megatron_nightly_convergence: 1387.962 -> 1735 -> 1800, +300 of 1500 is exactly 20%: keep.
# - test_session_multiturn: 389.531 -> 487 -> 500, +4%: keep.   test_fsdp_dpo_4gpu: 470.918 -> 589 -> 600.
# - test_megatron_ppo_4gpu: 512.873 -> 642 -> 700; run 1007 failed after 1480.9 s: does not block the lower.
# - test_megatron_sft: 140.693 (attempt 2 of a retry), 133.027, 121.406 -> 176 -> 180.
# - test_rocm_fsdp_grpo: CUDA 371.538, 389.917 -> 488 -> 500; ROCm 588.024 and 603.8 (sglang log, after a
#   HIP fault on attempt 1) -> 755 -> 800. The two backends never mix.
# - test_sglang_rollout: 10 samples (5 CI, 5 local), p90 = rank 9 = 142.634 (the 410.276 cold-cache
#   outlier is rank 10) -> 179 -> 180: unchanged.
# - test_session_tool_calls: failed, timed out, failed, failed: no passed sample.
# - test_rocm_megatron_sft: failed (run 1001), cancelled (run 1006): no passed sample.
# Stage balance, by the plan's partitioner over every enabled registration:
# - stage-b: [360 + 180, 300 + 240] -> [360 + 180, 300 + 180]: 540 / 1.00 -> 540 / 540/510 = 1.06
# - stage-c: [2400, 1500 + 480, 900 + 600 + 360] (2080 mean, 1.15) -> [3400, 1500 + 480, 700 + 600 + 500]
#   (2393.3 mean, 1.42)
# - mi350: [540, 480] (1.06) -> [800, 540] (1.19)

APPLIED = [
    # (file, the registration line before, after)
    ("tests/e2e/test_fsdp_grpo.py",
     'register_cuda_ci(est_time=240, suite="stage-b-1-gpu-h200", labels=["fsdp"])\n',
     'register_cuda_ci(est_time=300, suite="stage-b-1-gpu-h200", labels=["fsdp"])\n'),
    ("tests/e2e/test_megatron_long_context.py",
     'register_cuda_ci(est_time=2400, suite="stage-c-4-gpu-h200", labels=["megatron", "long"])\n',
     'register_cuda_ci(est_time=3400, suite="stage-c-4-gpu-h200", labels=["megatron", "long"])\n'),
    ("tests/e2e/test_megatron_ppo_4gpu.py",
     'register_cuda_ci(900, "stage-c-4-gpu-h200", labels=["megatron"])\n',
     'register_cuda_ci(700, "stage-c-4-gpu-h200", labels=["megatron"])\n'),
    ("tests/e2e/test_megatron_sft.py",
     'register_cuda_ci(est_time=300, suite="stage-b-1-gpu-h200", labels=["megatron"])\n',
     'register_cuda_ci(est_time=180, suite="stage-b-1-gpu-h200", labels=["megatron"])\n'),
    ("tests/e2e/test_rocm_fsdp_grpo.py",
     'register_cuda_ci(est_time=360, suite="stage-c-4-gpu-h200", labels=["fsdp"])\n'
     'register_rocm_ci(est_time=480, suite="stage-c-4-gpu-mi350", labels=["fsdp", "rocm"])\n',
     'register_cuda_ci(est_time=500, suite="stage-c-4-gpu-h200", labels=["fsdp"])\n'
     'register_rocm_ci(est_time=800, suite="stage-c-4-gpu-mi350", labels=["fsdp", "rocm"])\n'),
]

@pytest.fixture
def work(example_repo: Path, tmp_path: Path, monkeypatch) -> Path:
    """tmp_path holding gpu-repo/ (a copy of the example) and evidence/; the current directory."""
    shutil.copytree(EVIDENCE, tmp_path / "evidence")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    return tmp_path


def tune(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["tune", "--repo", "gpu-repo", *args])
    out, err = capsys.readouterr()
    return code, out, err


def texts(repo: Path) -> dict[str, str]:
    return {p.relative_to(repo).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(repo.rglob("*")) if p.is_file() and ".git" not in p.relative_to(repo).parts}


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **GIT_ENV}).stdout


# -- the report ---------------------------------------------------------------------------------------------

def test_report_only_summary_and_csv_golden(work, capsys):
    before = texts(work / "gpu-repo")
    assert_run_golden(tune(capsys, "--from", "evidence", "--csv", "tune.csv"), 0, "cli/tune/summary-report.txt")
    assert_golden("cli/tune/report.csv", (work / "tune.csv").read_text(encoding="utf-8"))
    assert texts(work / "gpu-repo") == before  # a report changes nothing


def test_the_scan_cache_changes_no_report(work, tmp_path, capsys):
    uncached = tune(capsys, "--from", "evidence", "--no-cache")
    cache = tmp_path / "scan-cache"
    assert tune(capsys, "--from", "evidence", "--cache", str(cache)) == uncached  # cold: written
    assert [p.name.endswith(".pack.json") for p in cache.rglob("*.json")] == [True]
    assert tune(capsys, "--from", "evidence", "--cache", str(cache)) == uncached  # warm: read


def test_csv_has_every_column_and_status_and_cites_its_source(work, capsys):
    assert tune(capsys, "--from", "evidence", "--csv", "tune.csv")[0] == 0
    with open(work / "tune.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == list(COLUMNS)
    assert [len(row) for row in rows[1:]] == [len(COLUMNS)] * 46
    rows = [dict(zip(COLUMNS, row, strict=True)) for row in rows[1:]]
    assert sorted({r["status"] for r in rows}) == sorted(STATUSES)
    assert {r["action"] for r in rows} == {"keep", "report_only", "skip"}
    for r in rows:
        cited = (work / r["source"]).read_text(encoding="utf-8").lstrip("\ufeff").split("\n")[int(r["line"]) - 1]
        if r["source"].endswith(".jsonl"):
            record = json.loads(cited)
            assert (record["file"], record["stage"], record["shard"]) == (r["test_file"], r["stage"], int(r["shard"]))
            assert (record["run_id"] or "") == r["run_id"]
            assert float(r["elapsed_s"]) == record["elapsed"]
        else:
            assert r["test_file"] in clean_line(cited)
    # the step logs of the archive (run-1006/<job name>/) are never read: the job's own log is
    assert not [r for r in rows if "/stage-c-4-gpu-mi350 (1)/" in r["source"]]


def test_the_csv_of_an_applying_run_differs_only_in_action_and_note(work, capsys):
    assert tune(capsys, "--from", "evidence", "--csv", "report.csv")[0] == 0
    assert_run_golden(tune(capsys, "--from", "evidence", "--csv", "check.csv", "--check"), 1,
                      "cli/tune/summary-applying.txt")
    report = list(csv.DictReader(io.StringIO((work / "report.csv").read_text(encoding="utf-8"))))
    check = list(csv.DictReader(io.StringIO((work / "check.csv").read_text(encoding="utf-8"))))
    assert len(report) == len(check) == 46
    for r, c in zip(report, check, strict=True):
        same = [k for k in COLUMNS if k not in ("action", "note")]
        assert [r[k] for k in same] == [c[k] for k in same]
        if r["action"] == "report_only":
            would = r["note"].rsplit("; ", 1)[-1]
            assert would in ("would raise", "would lower")
            assert c["action"] == would.split()[1]
            assert c["note"] == r["note"][:-len(would)].removesuffix("; ")
        else:
            assert (c["action"], c["note"]) == (r["action"], r["note"])


def test_evidence_can_be_named_file_by_file(work, capsys):
    # the same rows from files given one by one as from their directory
    files = sorted(str(p.relative_to(work)) for p in (work / "evidence").rglob("*")
                   if p.is_file() and "stage-c-4-gpu-mi350 (1)" not in p.parent.name)
    assert len(files) == 24
    args = [a for f in files for a in ("--from", f)]
    assert_run_golden(tune(capsys, *args, "--csv", "files.csv"), 0, "cli/tune/summary-report.txt")
    assert_golden("cli/tune/report.csv", (work / "files.csv").read_text(encoding="utf-8"))


# -- --check -----------------------------------------------------------------------------------------------

def test_check_exits_1_when_a_proposal_would_change_a_file(work, capsys):
    before = texts(work / "gpu-repo")
    assert_run_golden(tune(capsys, "--from", "evidence", "--check"), 1, "cli/tune/summary-applying.txt")
    assert texts(work / "gpu-repo") == before  # --check writes nothing


def test_check_exits_0_when_every_proposal_is_keep_or_skip(work, capsys):
    # run 1001's stage-c shard 1: the nightly test (dead-band) and the multiturn test (dead-band)
    code, out, err = tune(capsys, "--from", "evidence/run-1001/timings-stage-c-4-gpu-h200-1.jsonl", "--check")
    assert (code, err) == (0, "")
    assert out.splitlines()[:3] == [
        "FILE                                                BACKEND  SAMPLES         Q  CURRENT -> PROPOSED  "
        "ACTION  REASON",
        "tests/e2e/session_server/test_session_multiturn.py  cuda           1   372.184  480 -> 500           "
        "keep    within the 20% dead-band",
        "tests/e2e/test_megatron_nightly_convergence.py      cuda           1  1387.962  1500 -> 1800         "
        "keep    within the 20% dead-band",
    ]
    assert out.endswith("\nci-policy tune: 2 keep\n")
    # failed and timed-out evidence alone proposes nothing either
    code, out, _ = tune(capsys, "--from", "evidence/run-1002/timings-stage-b-1-gpu-h200-0.jsonl", "--check")
    assert code == 0
    assert out.endswith("\nci-policy tune: 1 keep, 1 skip\n")


# -- --apply ---------------------------------------------------------------------------------------------------

def test_apply_rewrites_exactly_the_est_time_literals(work, capsys):
    repo = work / "gpu-repo"
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    before = texts(repo)

    assert tune(capsys, "--from", "evidence", "--apply") == (
        0, read_golden("cli/tune/summary-applying.txt") + read_golden("cli/tune/apply.txt"), "")

    after = texts(repo)
    changed = {rel for rel in before if after[rel] != before[rel]}
    assert changed == {rel for rel, _, _ in APPLIED}
    assert sorted(after) == sorted(before)
    for rel, old, new in APPLIED:
        assert before[rel].count(old) == 1
        assert after[rel] == before[rel].replace(old, new)
    diff = git(repo, "diff", "-U0", "--no-color", "--no-ext-diff")
    without_index = "\n".join(line for line in diff.split("\n") if not line.startswith("index "))
    assert_golden("cli/tune/git-diff.txt", without_index)
    assert git(repo, "diff", "--numstat") == (
        "1\t1\ttests/e2e/test_fsdp_grpo.py\n1\t1\ttests/e2e/test_megatron_long_context.py\n"
        "1\t1\ttests/e2e/test_megatron_ppo_4gpu.py\n1\t1\ttests/e2e/test_megatron_sft.py\n"
        "2\t2\ttests/e2e/test_rocm_fsdp_grpo.py\n")

    # The edited repository is valid, plans with the new values, and tuning it again changes nothing.
    assert cli(capsys, "lint", "--repo", "gpu-repo")[0] == 0
    code, out, _ = cli(capsys, "registry", "--repo", "gpu-repo", "--format", "json")
    est = {(r["file"], r["suite"]): r["est_time"] for r in json.loads(out)["registrations"]}
    assert [est[k] for k in [("tests/e2e/test_fsdp_grpo.py", "stage-b-1-gpu-h200"),
                             ("tests/e2e/test_megatron_long_context.py", "stage-c-4-gpu-h200"),
                             ("tests/e2e/test_megatron_ppo_4gpu.py", "stage-c-4-gpu-h200"),
                             ("tests/e2e/test_megatron_sft.py", "stage-b-1-gpu-h200"),
                             ("tests/e2e/test_rocm_fsdp_grpo.py", "stage-c-4-gpu-h200"),
                             ("tests/e2e/test_rocm_fsdp_grpo.py", "stage-c-4-gpu-mi350")]] == [300, 3400, 700, 180,
                                                                                               500, 800]
    code, out, err = tune(capsys, "--from", "evidence", "--check")
    assert (code, err) == (0, "")
    assert out.endswith("\nci-policy tune: 10 keep, 7 skip\n")
    assert out.splitlines()[-6:-2] == [
        "stage-a-cpu               1              20s              1.00             20s             1.00",
        "stage-b-1-gpu-h200        2             9m0s              1.06            9m0s             1.06",
        "stage-c-4-gpu-h200        3           56m40s              1.42          56m40s             1.42",
        "stage-c-4-gpu-mi350       2           13m20s              1.19          13m20s             1.19",
    ]


def test_apply_skips_and_reports_ambiguous_files(work, capsys):
    repo = work / "gpu-repo"
    grpo = repo / "tests/e2e/test_fsdp_grpo.py"
    line = 'register_cuda_ci(est_time=240, suite="stage-b-1-gpu-h200", labels=["fsdp"])\n'
    second = 'register_cuda_ci(est_time=420, suite="stage-c-4-gpu-h200", labels=["fsdp"])\n'
    grpo.write_text(grpo.read_text().replace(line, line + second))
    sft = repo / "tests/e2e/test_megatron_sft.py"
    sft.write_text(sft.read_text().replace("register_cuda_ci(est_time=300,", "register_cuda_ci(est_time=+300,"))
    assert cli(capsys, "lint", "--repo", "gpu-repo")[0] == 0  # both are valid registrations
    before = texts(repo)

    code, out, err = tune(capsys, "--from", "evidence", "--apply")
    # A proposal that could not be applied fails the command: the balance shown assumed it.
    assert (code, err) == (1, "ci-policy tune: 1 proposal(s) were not applied (see above); edit them by hand\n")
    assert out == read_golden("cli/tune/summary-applying.txt").replace(
        "tests/e2e/test_fsdp_grpo.py                          cuda           5   236.207  240 -> 300           raise\n",
        "tests/e2e/test_fsdp_grpo.py                          cuda           5         -  -                    skip    "
        "2 cuda registrations (lines 9, 10)\n",
    ).replace(
        # test_fsdp_grpo.py is in stage-c now, and stays at 240 in stage-b
        "stage-b-1-gpu-h200        2             9m0s              1.00            9m0s             1.06\n"
        "stage-c-4-gpu-h200        3            40m0s              1.15          56m40s             1.42\n",
        "stage-b-1-gpu-h200        2             9m0s              1.00            9m0s             1.12\n"
        "stage-c-4-gpu-h200        3            40m0s              1.08          56m40s             1.34\n",
    ).replace(
        "ci-policy tune: 4 keep, 2 lower, 4 raise, 7 skip\n", "ci-policy tune: 4 keep, 2 lower, 3 raise, 8 skip\n",
    ) + (
        "tests/e2e/test_megatron_long_context.py: changed (cuda est_time 2400 -> 3400)\n"
        "tests/e2e/test_megatron_ppo_4gpu.py: changed (cuda est_time 900 -> 700)\n"
        "tests/e2e/test_megatron_sft.py: skipped (cuda est_time 300 -> 180): "
        "est_time is not a plain non-negative numeric literal: `+300`\n"
        "tests/e2e/test_rocm_fsdp_grpo.py: changed (cuda est_time 360 -> 500)\n"
        "tests/e2e/test_rocm_fsdp_grpo.py: changed (rocm est_time 480 -> 800)\n")
    after = texts(repo)
    assert after["tests/e2e/test_fsdp_grpo.py"] == before["tests/e2e/test_fsdp_grpo.py"]
    assert after["tests/e2e/test_megatron_sft.py"] == before["tests/e2e/test_megatron_sft.py"]
    assert {rel for rel in before if after[rel] != before[rel]} == {
        "tests/e2e/test_megatron_long_context.py", "tests/e2e/test_megatron_ppo_4gpu.py",
        "tests/e2e/test_rocm_fsdp_grpo.py"}


# -- --write-estimates and the estimates-file mode -----------------------------------------------------------

def plan_json(capsys, *args: str) -> dict:
    code, out, err = cli(capsys, "plan", "--repo", "gpu-repo", *WEEKLY, "--format", "json", *args)
    assert (code, err) == (0, "")
    return json.loads(out)


def shard_files(capsys, stage: str, shard: int) -> list[str]:
    """The files `list` prints for a shard: the files `run` runs (see test_run.py)."""
    code, out, err = cli(capsys, "list", "--repo", "gpu-repo", "--stage", stage, "--shard", str(shard), *WEEKLY)
    assert (code, err) == (0, "")
    return out.splitlines()


def test_write_estimates_then_plan_and_list_use_them(work, capsys):
    repo = work / "gpu-repo"
    before = texts(repo)
    literal_plan = plan_json(capsys)
    assert shard_files(capsys, "stage-c-4-gpu-mi350", 0) == ["tests/e2e/test_rocm_megatron_sft.py"]
    assert shard_files(capsys, "stage-b-1-gpu-h200", 1) == ["tests/e2e/test_megatron_sft.py",
                                                                   "tests/e2e/test_fsdp_grpo.py"]

    assert tune(capsys, "--from", "evidence", "--write-estimates", f"gpu-repo/{ESTIMATES}") == (
        0,
        read_golden("cli/tune/summary-applying.txt") + f"ci-policy tune: wrote 6 estimate(s) to gpu-repo/{ESTIMATES}\n",
        "")
    assert_golden("cli/tune/ci-estimates.json", (repo / ESTIMATES).read_text(encoding="utf-8"))
    after = texts(repo)
    assert after.pop(ESTIMATES) == read_golden("cli/tune/ci-estimates.json")
    assert after == before  # no test file is edited
    assert plan_json(capsys) == literal_plan  # not configured yet: the literals still count

    config = repo / ".github" / "ci-policy.yml"
    config.write_text(config.read_text() + f"estimates_file: {ESTIMATES}\n")
    plan = plan_json(capsys)
    # The est_time of each test and where it came from (the entries' other keys do not change).
    assert {s["name"]: [{k: t[k] for k in ("file", "est_time", "est_source")} for t in s["tests"]]
            for s in plan["stages"]} == {
        "stage-a-cpu": [{"file": f"tests/fast/{name}", "est_time": 5, "est_source": "implicit"}
                        for name in ("test_advantages.py", "test_kl.py", "test_rollout.py",
                                     "test_session_protocol.py")],
        "stage-b-1-gpu-h200": [
            {"file": "tests/e2e/session_server/test_session_tool_calls.py", "est_time": 360, "est_source": "literal"},
            {"file": "tests/e2e/test_fsdp_grpo.py", "est_time": 300, "est_source": "estimates"},
            {"file": "tests/e2e/test_megatron_sft.py", "est_time": 180, "est_source": "estimates"},
            {"file": "tests/e2e/test_sglang_rollout.py", "est_time": 180, "est_source": "literal"},
        ],
        "stage-c-4-gpu-h200": [
            {"file": "tests/e2e/session_server/test_session_multiturn.py", "est_time": 480, "est_source": "literal"},
            {"file": "tests/e2e/test_fsdp_dpo_4gpu.py", "est_time": 600, "est_source": "literal"},
            {"file": "tests/e2e/test_megatron_long_context.py", "est_time": 3400, "est_source": "estimates"},
            {"file": "tests/e2e/test_megatron_nightly_convergence.py", "est_time": 1500, "est_source": "literal"},
            {"file": "tests/e2e/test_megatron_ppo_4gpu.py", "est_time": 700, "est_source": "estimates"},
            {"file": "tests/e2e/test_rocm_fsdp_grpo.py", "est_time": 500, "est_source": "estimates"},
        ],
        "stage-c-4-gpu-mi350": [
            {"file": "tests/e2e/test_rocm_fsdp_grpo.py", "est_time": 800, "est_source": "estimates"},
            {"file": "tests/e2e/test_rocm_megatron_sft.py", "est_time": 540, "est_source": "literal"},
        ],
    }
    assert {s["name"]: s["shards"] for s in plan["stages"][1:]} == {
        "stage-b-1-gpu-h200": [
            {"index": 0, "est_seconds": 540, "files": ["tests/e2e/session_server/test_session_tool_calls.py",
                                                       "tests/e2e/test_sglang_rollout.py"]},
            {"index": 1, "est_seconds": 480, "files": ["tests/e2e/test_fsdp_grpo.py",
                                                       "tests/e2e/test_megatron_sft.py"]}],
        "stage-c-4-gpu-h200": [
            {"index": 0, "est_seconds": 3400, "files": ["tests/e2e/test_megatron_long_context.py"]},
            {"index": 1, "est_seconds": 1980, "files": ["tests/e2e/test_megatron_nightly_convergence.py",
                                                        "tests/e2e/session_server/test_session_multiturn.py"]},
            {"index": 2, "est_seconds": 1800, "files": ["tests/e2e/test_megatron_ppo_4gpu.py",
                                                        "tests/e2e/test_fsdp_dpo_4gpu.py",
                                                        "tests/e2e/test_rocm_fsdp_grpo.py"]}],
        "stage-c-4-gpu-mi350": [
            {"index": 0, "est_seconds": 800, "files": ["tests/e2e/test_rocm_fsdp_grpo.py"]},
            {"index": 1, "est_seconds": 540, "files": ["tests/e2e/test_rocm_megatron_sft.py"]}],
    }
    # the makespans are the "after" column of the tune report
    assert [max(sh["est_seconds"] for sh in s["shards"]) for s in plan["stages"]] == [20, 540, 3400, 800]

    # list computes the same shards from the estimates
    assert shard_files(capsys, "stage-c-4-gpu-mi350", 0) == ["tests/e2e/test_rocm_fsdp_grpo.py"]
    assert shard_files(capsys, "stage-b-1-gpu-h200", 1) == ["tests/e2e/test_fsdp_grpo.py",
                                                                   "tests/e2e/test_megatron_sft.py"]
    assert shard_files(capsys, "stage-c-4-gpu-h200", 2) == [
        "tests/e2e/test_megatron_ppo_4gpu.py", "tests/e2e/test_fsdp_dpo_4gpu.py", "tests/e2e/test_rocm_fsdp_grpo.py"]

    # the text plan names the files whose est_time came from the estimates file
    code, out, _ = cli(capsys, "plan", "--repo", "gpu-repo", *WEEKLY)
    assert code == 0
    assert ("est_time from the estimates file for 6 tests:\n"
            "  tests/e2e/test_fsdp_grpo.py(stage-b-1-gpu-h200)\n"
            "  tests/e2e/test_megatron_sft.py(stage-b-1-gpu-h200)\n"
            "  tests/e2e/test_megatron_long_context.py(stage-c-4-gpu-h200)\n"
            "  tests/e2e/test_megatron_ppo_4gpu.py(stage-c-4-gpu-h200)\n"
            "  tests/e2e/test_rocm_fsdp_grpo.py(stage-c-4-gpu-h200)\n"
            "  tests/e2e/test_rocm_fsdp_grpo.py(stage-c-4-gpu-mi350)\n") in out

    # tuning again from the same evidence compares against the estimates: nothing to change
    code, out, err = tune(capsys, "--from", "evidence", "--check")
    assert (code, err) == (0, "")
    assert ("tests/e2e/test_megatron_long_context.py              cuda           2  2702.561  3400 -> 3400         "
            "keep    unchanged") in out.splitlines()
    assert out.endswith("\nci-policy tune: 10 keep, 7 skip\n")
    assert cli(capsys, "lint", "--repo", "gpu-repo")[0] == 0


def test_write_estimates_merges_into_the_existing_file(work, capsys):
    repo = work / "gpu-repo"
    (repo / ESTIMATES).write_text(json.dumps({"schema": 1, "estimates": [
        {"file": "tests/e2e/test_gone.py", "suite": "stage-b-1-gpu-h200", "est_time": 60},
        {"file": "tests/e2e/test_megatron_sft.py", "suite": "stage-b-1-gpu-h200", "est_time": 999}]}))
    code, out, err = tune(capsys, "--from", "evidence/run-1003", "--write-estimates", f"gpu-repo/{ESTIMATES}")
    assert (code, err) == (0, "")
    assert out.endswith(f"\nci-policy tune: wrote 3 estimate(s) to gpu-repo/{ESTIMATES}\n")
    # run 1003 alone: test_fsdp_grpo 201.344 -> 252 -> 300, test_megatron_sft 121.406 -> 152 -> 160
    assert json.loads((repo / ESTIMATES).read_text()) == {"schema": 1, "estimates": [
        {"file": "tests/e2e/test_fsdp_grpo.py", "suite": "stage-b-1-gpu-h200", "est_time": 300},
        {"file": "tests/e2e/test_gone.py", "suite": "stage-b-1-gpu-h200", "est_time": 60},
        {"file": "tests/e2e/test_megatron_sft.py", "suite": "stage-b-1-gpu-h200", "est_time": 160}]}


def test_apply_is_refused_when_estimates_file_is_set(work, capsys):
    repo = work / "gpu-repo"
    config = repo / ".github" / "ci-policy.yml"
    config.write_text(config.read_text() + f"estimates_file: {ESTIMATES}\n")
    (repo / ESTIMATES).write_text('{"schema": 1, "estimates": []}\n')
    before = texts(repo)
    assert tune(capsys, "--from", "evidence", "--apply") == (2, "", (
        f"ci-policy tune: error: --apply: this repository keeps est_time in {ESTIMATES} (estimates_file); "
        "--apply would edit literals the plan does not use\n"
        f"    hint: use --write-estimates {ESTIMATES}\n"))
    assert texts(repo) == before
    # the estimates file itself can be written
    code, out, err = tune(capsys, "--from", "evidence", "--write-estimates", f"gpu-repo/{ESTIMATES}")
    assert (code, err) == (0, "")
    assert_golden("cli/tune/ci-estimates.json", (repo / ESTIMATES).read_text())


# -- errors ----------------------------------------------------------------------------------------------------

def make_fifo(work: Path) -> str:
    os.mkfifo(work / "pipe.jsonl")
    return "pipe.jsonl"


def make_symlink(work: Path) -> str:
    (work / "linked").mkdir()
    (work / "linked" / "run.jsonl").symlink_to(work / "evidence" / "local" / "timings.jsonl")
    return "linked"


def make_malformed(work: Path) -> str:
    good = (work / "evidence" / "run-1004" / "timings-stage-b-1-gpu-h200-0.jsonl").read_text()
    (work / "bad.jsonl").write_text(good + '{"schema": 1, "file": "tests/e2e/test_fsdp_grpo.py",\n[]\n')
    return "bad.jsonl"


def make_unknown(work: Path) -> str:
    (work / "notes.md").write_text("# timings\n")
    return "notes.md"


RECORDS_HINT = "    hint: each line of a timing-records file is one JSON object written by `ci-policy run`\n"


@pytest.mark.parametrize("make, stderr", [
    (lambda w: "missing", "missing: no such evidence file or directory\nci-policy: 1 error\n"),
    (lambda w: "evidence/run-1009", "evidence/run-1009: no such evidence file or directory\nci-policy: 1 error\n"),
    (make_unknown, "notes.md: unknown evidence file type (expected *.jsonl timing records, or *.txt/*.log job logs)\n"
                   "    hint: extract archives first; remove other files or name the evidence files to read\n"
                   "ci-policy: 1 error\n"),
    (make_fifo, "pipe.jsonl: not a regular file or directory\nci-policy: 1 error\n"),
    (make_symlink, "linked/run.jsonl: a symbolic link; evidence directories are walked without following links\n"
                   "    hint: give the link's target as a path of its own\n"
                   "ci-policy: 1 error\n"),
    (make_malformed, "bad.jsonl:2: not valid JSON: Expecting property name enclosed in double quotes (column 53)\n"
                     + RECORDS_HINT
                     + "bad.jsonl:3: a timing record must be a JSON object, got array []\n" + RECORDS_HINT
                     + "ci-policy: 2 errors\n"),
])
def test_unreadable_evidence_exits_1_with_exact_messages(work, capsys, make, stderr):
    source = make(work)
    assert tune(capsys, "--from", "evidence", "--from", source, "--csv", "tune.csv") == (1, "", stderr)
    assert not (work / "tune.csv").exists()  # nothing is written from partial evidence


def test_every_evidence_problem_is_reported_at_once(work, capsys):
    make_unknown(work)
    assert tune(capsys, "--from", "missing", "--from", "notes.md", "--from", "evidence") == (1, "", (
        "missing: no such evidence file or directory\n"
        "notes.md: unknown evidence file type (expected *.jsonl timing records, or *.txt/*.log job logs)\n"
        "    hint: extract archives first; remove other files or name the evidence files to read\n"
        "ci-policy: 2 errors\n"))


@pytest.mark.parametrize("args, stderr", [
    ([], "--from: no evidence\n    hint: pass --from PATH or --github-run RUN\n"),
    (["--github-run", "org/repo/123"], "$GITHUB_TOKEN: is empty: --github-run needs a token\n"
                                       "    hint: set GITHUB_TOKEN, or name another variable with --token-env\n"),
    (["--from", "evidence", "--github-run", "org/repo/123", "--token-env", "CI_POLICY_TEST_NO_SUCH_TOKEN"],
     "$CI_POLICY_TEST_NO_SUCH_TOKEN: is empty: --github-run needs a token\n"
     "    hint: set CI_POLICY_TEST_NO_SUCH_TOKEN, or name another variable with --token-env\n"),
])
def test_missing_evidence_or_token_is_a_usage_error_with_exact_messages(work, capsys, args, stderr):
    assert tune(capsys, *args) == (2, "", "ci-policy tune: error: " + stderr)


def test_a_bad_checkout_or_estimates_target_exits_1(work, capsys):
    assert cli(capsys, "tune", "--repo", "nowhere", "--from", "evidence") == (1, "", (
        "nowhere: CP403 path-wrong-type: repository nowhere is not a directory\n"
        "    hint: pass --repo with the checkout's root directory\n"
        "ci-policy: 1 error\n"))
    (work / "old.json").write_text('{"schema": 2, "estimates": []}')
    summary = read_golden("cli/tune/summary-applying.txt")
    assert tune(capsys, "--from", "evidence", "--write-estimates", "old.json") == (1, summary, (
        'old.json: CP421 estimates-wrong-shape: estimates file old.json must be {"schema": 1, "estimates": [...]}\n'
        "    hint: regenerate it with ci-policy tune --write-estimates\n"
        "ci-policy: 1 error\n"))
    assert (work / "old.json").read_text() == '{"schema": 2, "estimates": []}'


@pytest.mark.parametrize("flags", [["--apply", "--check"], ["--check", "--write-estimates", "x.json"],
                                   ["--apply", "--write-estimates", "x.json"]])
def test_modes_are_mutually_exclusive(work, capsys, flags):
    with pytest.raises(SystemExit) as info:
        main(["tune", "--repo", "gpu-repo", "--from", "evidence", *flags])
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("usage: ci-policy tune")
    assert "not allowed with argument" in err


# -- the console script ------------------------------------------------------------------------------------------


def test_console_script_golden(work):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    proc = subprocess.run([console_script(), "tune", "--repo", "gpu-repo", "--from", "evidence", "--csv", "tune.csv"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert_run_golden((proc.returncode, proc.stdout, proc.stderr), 0, "cli/tune/summary-report.txt")
    assert_golden("cli/tune/report.csv", (work / "tune.csv").read_text(encoding="utf-8"))
    proc = subprocess.run([console_script(), "tune", "--repo", "gpu-repo", "--from", "evidence", "--check"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert_run_golden((proc.returncode, proc.stdout, proc.stderr), 1, "cli/tune/summary-applying.txt")
    proc = subprocess.run([console_script(), "tune", "--repo", "gpu-repo"], cwd=work, env=env, capture_output=True,
                          text=True, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", "ci-policy tune: error: --from: no evidence\n    hint: pass --from PATH or --github-run RUN\n")


# -- --format json ---------------------------------------------------------------------------------------------

def by_file(data: dict) -> dict[tuple[str, str], dict]:
    return {(p["file"], p["backend"]): p for p in data["proposals"]}


def test_json_report_has_every_proposal_and_the_balance(work, capsys):
    code, out, err = tune(capsys, "--from", "evidence", "--format", "json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert_valid("tune", data)
    assert list(data) == ["schema", "proposals", "balance"]
    assert data["schema"] == 1
    # The same rows as the text report, in its order.
    rows = [line.split()[:2] for line in read_golden("cli/tune/summary-report.txt").splitlines()[1:18]]
    assert [[p["file"], p["backend"]] for p in data["proposals"]] == rows
    long_context = by_file(data)[("tests/e2e/test_megatron_long_context.py", "cuda")]
    assert {k: long_context[k] for k in ("suite", "q", "current", "proposed", "action", "reason")} == {
        "suite": "stage-c-4-gpu-h200", "q": 2702.561, "current": 2400, "proposed": 3400,
        "action": "report_only", "reason": "would raise"}
    assert sorted(long_context["samples"]) == [2650.347, 2702.561]
    assert by_file(data)[("tests/e2e/session_server/test_session_tool_calls.py", "cuda")]["proposed"] is None
    assert [(b["stage"], b["partitions"], b["before_makespan"], b["after_makespan"]) for b in data["balance"]] == [
        ("stage-a-cpu", 1, 20, 20), ("stage-b-1-gpu-h200", 2, 540, 540), ("stage-c-4-gpu-h200", 3, 2400, 3400),
        ("stage-c-4-gpu-mi350", 2, 540, 800)]
    assert [round(b["after_imbalance"], 2) for b in data["balance"]] == [1.0, 1.06, 1.42, 1.19]


def test_json_check_and_write_estimates(work, capsys):
    code, out, err = tune(capsys, "--from", "evidence", "--check", "--format", "json")
    assert (code, err) == (1, "")
    assert_valid("tune", out)
    actions = {key: p["action"] for key, p in by_file(json.loads(out)).items()}
    assert sorted(key[0] for key, action in actions.items() if action in ("raise", "lower")) == [
        "tests/e2e/test_fsdp_grpo.py", "tests/e2e/test_megatron_long_context.py", "tests/e2e/test_megatron_ppo_4gpu.py",
        "tests/e2e/test_megatron_sft.py", "tests/e2e/test_rocm_fsdp_grpo.py", "tests/e2e/test_rocm_fsdp_grpo.py"]
    code, out, err = tune(capsys, "--from", "evidence", "--write-estimates", f"gpu-repo/{ESTIMATES}",
                          "--format", "json")
    assert (code, err) == (0, "")
    assert json.loads(out)["estimates_written"] == {"file": f"gpu-repo/{ESTIMATES}", "entries": 6}
    assert_valid("tune", out)
    assert_valid("estimates", (work / "gpu-repo" / ESTIMATES).read_text(encoding="utf-8"))
    assert_golden("cli/tune/ci-estimates.json", (work / "gpu-repo" / ESTIMATES).read_text(encoding="utf-8"))


def test_json_apply_lists_each_edit(work, capsys):
    repo = work / "gpu-repo"
    before = texts(repo)
    code, out, err = tune(capsys, "--from", "evidence", "--apply", "--format", "json")
    assert (code, err) == (0, "")
    assert_valid("tune", out)
    applied = [(a["file"], a["backend"], a["current"], a["proposed"], a["status"], a["reason"])
               for a in json.loads(out)["applied"]]
    expected = [re.fullmatch(r"(\S+): (\w+) \((\w+) est_time (\d+) -> (\d+)\)", line).groups()
                for line in read_golden("cli/tune/apply.txt").splitlines()]
    assert applied == [(f, b, int(c), int(p), s, None) for f, s, b, c, p in expected]
    after = texts(repo)
    assert {rel for rel in before if after[rel] != before[rel]} == {rel for rel, _, _ in APPLIED}


# -- the downloads' progress ----------------------------------------------------------------------------------

class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_downloads_show_one_updating_line_on_a_terminal_and_one_line_per_artifact_otherwise():
    from ci_policy.adapters.github.download import Step
    from ci_policy.cli.tune import Progress

    steps = [Step(7, "log", 1, 2, "stage-a (shard 0)"), Step(7, "log", 2, 2, "stage-b\r(shard 1)"),
             Step(7, "artifact", 1, 1, "ci-policy-timings-stage-a-0", 1234)]
    terminal, log = Terminal(), io.StringIO()
    for stream in (terminal, log):
        progress = Progress(stream)
        for step in steps:
            progress(step)
        progress.done()
    assert terminal.getvalue() == (
        "\r\x1b[Kci-policy tune: run 7: job log 1/2 'stage-a (shard 0)'"
        "\r\x1b[Kci-policy tune: run 7: job log 2/2 'stage-b?(shard 1)'"
        "\r\x1b[Kci-policy tune: run 7: timing artifact 1/1 'ci-policy-timings-stage-a-0'"
        "\r\x1b[K")
    assert log.getvalue() == "ci-policy tune: run 7: timing artifact 1/1 'ci-policy-timings-stage-a-0' (1234 bytes)\n"


def test_a_retry_line_clears_the_updating_line_first_and_the_next_step_draws_it_again():
    from ci_policy.adapters.github.download import Step
    from ci_policy.cli.tune import Progress

    terminal, log = Terminal(), io.StringIO()
    for stream in (terminal, log):
        progress = Progress(stream)
        progress(Step(7, "log", 1, 2, "stage-a"))
        progress.notice("ci-policy: GitHub API request GET /x answered HTTP 502; attempt 2 of 5 now")
        progress(Step(7, "log", 2, 2, "stage-b"))
        progress.done()
    assert terminal.getvalue() == (
        "\r\x1b[Kci-policy tune: run 7: job log 1/2 'stage-a'"
        "\r\x1b[Kci-policy: GitHub API request GET /x answered HTTP 502; attempt 2 of 5 now\n"
        "\r\x1b[Kci-policy tune: run 7: job log 2/2 'stage-b'"
        "\r\x1b[K")
    assert log.getvalue() == "ci-policy: GitHub API request GET /x answered HTTP 502; attempt 2 of 5 now\n"
