"""`ci-policy tune --github-run`: ci_policy/adapters/github/download.py through PyGithub, against a local
fake of the GitHub REST API (tests/github_fake.py) that serves a run's jobs, their raw logs
and the run's artifacts, each download behind a 302 to signed "blob storage" URLs, as GitHub
does.

The tests assert the exact `FileEvidence` rows, the exact requests GitHub (and the blob
storage) receive, that the token goes to the API only, and the error messages.
"""

from __future__ import annotations

import csv
import io
import json
import secrets
import tempfile
import zipfile
from pathlib import Path

import pytest
from github_fake import FakeGitHub

from ci_policy.adapters.github import download
from ci_policy.adapters.github.client import NO_THROTTLE
from ci_policy.adapters.github.download import download_run, parse_run
from ci_policy.adapters.tuning import records
from ci_policy.adapters.tuning.evidence import FileEvidence
from ci_policy.cli import main
from ci_policy.errors import CiPolicyError, InputError, UsageError

REPO = "acme/minirl"
P = f"/repos/{REPO}"
RUN = 8812345678
RUN_URL = f"https://github.com/{REPO}/actions/runs/{RUN}"
JOB_C, JOB_MI, JOB_B = 31337000101, 31337000102, 31337000103
ART_TIMINGS, ART_EXPIRED, ART_REPORTS = 2400000001, 2400000002, 2400000003
NAME_C = "stage-c-4-gpu-h200 (shard 2)"
NAME_MI = "stage-c-4-gpu-mi350 (shard 1)"
NAME_B = "pr-test / stage-b-1-gpu-h200 (shard 0)"   # a reusable workflow's job: "caller / job"
TIMINGS = "ci-policy-timings-stage-c-4-gpu-h200-2"
HINT = "e.g. org/repo/123456789 or https://github.com/org/repo/actions/runs/123456789"

# ci-policy's own runner, stage-c shard 2: a retry after an NCCL error, then everything passes.
LOG_C = "\n".join([
    "\ufeff2026-11-30T06:02:11.4438211Z Current runner version: '2.321.0'",                          # 1
    "2026-11-30T06:02:11.4461937Z ##[group]Run ci-policy run --stage stage-c-4-gpu-h200 --shard 2 "
    "--event pull_request --github --max-attempts 2",                                                 # 2
    "2026-11-30T06:02:11.4462512Z \x1b[36;1mci-policy run --stage stage-c-4-gpu-h200 --shard 2 "
    "--event pull_request --github --max-attempts 2\x1b[0m",                                          # 3
    "2026-11-30T06:02:11.4463010Z shell: /usr/bin/bash -e {0}",                                       # 4
    "2026-11-30T06:02:11.4463392Z ##[endgroup]",                                                      # 5
    "2026-11-30T06:02:12.0114520Z Enabled 3 test(s) (est total 1860s) for stage-c-4-gpu-h200 shard 2:",  # 6
    "2026-11-30T06:02:12.0115011Z   tests/e2e/test_megatron_ppo_4gpu.py (est 900s)",                  # 7
    "2026-11-30T06:02:12.0115420Z   tests/e2e/test_fsdp_dpo_4gpu.py (est 600s)",                      # 8
    "2026-11-30T06:02:12.0115833Z   tests/e2e/test_rocm_fsdp_grpo.py (est 360s)",                     # 9
    "2026-11-30T06:02:12.0120104Z ##[group]tests/e2e/test_megatron_ppo_4gpu.py (attempt 1)",          # 10
    "2026-11-30T06:03:13.4471100Z torch.distributed.DistBackendError: NCCL error in: "
    "ProcessGroupNCCL.cpp:1970, unhandled system error",                                              # 11
    "2026-11-30T06:03:13.4477710Z ##[endgroup]",                                                      # 12
    "2026-11-30T06:03:13.4479920Z \x1b[31m[1/3] tests/e2e/test_megatron_ppo_4gpu.py FAIL elapsed=61.4s "
    "est=900s attempt=1\x1b[0m",                                                                      # 13
    "2026-11-30T06:03:13.4480310Z       infra: output matches infra pattern 'NCCL error'; retrying",  # 14
    "2026-11-30T06:03:13.4492001Z ##[group]tests/e2e/test_megatron_ppo_4gpu.py (attempt 2)",          # 15
    "2026-11-30T06:11:46.3310022Z iteration 200/200 | ppo loss: 4.12E-01 | reward: 0.73",             # 16
    "2026-11-30T06:11:46.3318800Z ##[endgroup]",                                                      # 17
    "2026-11-30T06:11:46.3320145Z \x1b[32m[1/3] tests/e2e/test_megatron_ppo_4gpu.py PASS elapsed=512.9s "
    "est=900s attempt=2\x1b[0m",                                                                      # 18
    "2026-11-30T06:11:46.3331090Z ##[group]tests/e2e/test_fsdp_dpo_4gpu.py (attempt 1)",              # 19
    "2026-11-30T06:19:37.2540017Z step 50/50 dpo_loss=0.531",                                         # 20
    "2026-11-30T06:19:37.2545310Z ##[endgroup]",                                                      # 21
    "2026-11-30T06:19:37.2546702Z \x1b[32m[2/3] tests/e2e/test_fsdp_dpo_4gpu.py PASS elapsed=470.9s "
    "est=600s attempt=1\x1b[0m",                                                                      # 22
    "2026-11-30T06:19:37.2560030Z ##[group]tests/e2e/test_rocm_fsdp_grpo.py (attempt 1)",             # 23
    "2026-11-30T06:25:48.8100200Z step 20/20 loss=1.402 reward=0.58",                                 # 24
    "2026-11-30T06:25:48.8105550Z ##[endgroup]",                                                      # 25
    "2026-11-30T06:25:48.8106900Z \x1b[32m[3/3] tests/e2e/test_rocm_fsdp_grpo.py PASS elapsed=371.5s "
    "est=360s attempt=1\x1b[0m",                                                                      # 26
    "2026-11-30T06:25:48.8120000Z ",                                                                  # 27
    "2026-11-30T06:25:48.8120400Z ==== ci-policy run: stage-c-4-gpu-h200 shard 2 ====",               # 28
    "2026-11-30T06:25:48.8120800Z PASSED (3):",                                                       # 29
    "2026-11-30T06:25:48.8121200Z   tests/e2e/test_megatron_ppo_4gpu.py elapsed=512.9s est=900s",     # 30
    "2026-11-30T06:25:48.8121600Z   tests/e2e/test_fsdp_dpo_4gpu.py elapsed=470.9s est=600s",         # 31
    "2026-11-30T06:25:48.8122000Z   tests/e2e/test_rocm_fsdp_grpo.py elapsed=371.5s est=360s",        # 32
    "2026-11-30T06:25:48.8122400Z FAILED (0):",                                                       # 33
    "2026-11-30T06:25:48.8122800Z RETRIED (1):",                                                      # 34
    "2026-11-30T06:25:48.8123200Z   tests/e2e/test_megatron_ppo_4gpu.py: attempt 1: fail (infra: output "
    "matches infra pattern 'NCCL error'); attempt 2: pass",                                          # 35
    "2026-11-30T06:25:48.8123600Z RESULT: PASS",                                                      # 36
    "2026-11-30T06:25:49.0012000Z ##[group]Run actions/upload-artifact@v4",                           # 37
    "2026-11-30T06:25:49.0013000Z ##[endgroup]",                                                      # 38
    "2026-11-30T06:25:50.1000000Z Cleaning up orphan processes",                                      # 39
    "",
])

# ci-policy's runner on the MI350 shard, cancelled in the middle of its only file.
LOG_MI = "\r\n".join([
    "\ufeff2026-11-30T06:02:40.1000000Z ##[group]Run ci-policy run --stage stage-c-4-gpu-mi350 --shard 1 "
    "--event pull_request --github",                                                                  # 1
    "2026-11-30T06:02:40.1010000Z ##[endgroup]",                                                      # 2
    "2026-11-30T06:02:41.2000000Z Enabled 1 test(s) (est total 480s) for stage-c-4-gpu-mi350 shard 1:",  # 3
    "2026-11-30T06:02:41.2010000Z   tests/e2e/test_rocm_fsdp_grpo.py (est 480s)",                     # 4
    "2026-11-30T06:02:41.2020000Z ##[group]tests/e2e/test_rocm_fsdp_grpo.py (attempt 1)",             # 5
    "2026-11-30T06:04:02.3000000Z \x1b[33mHIP_VISIBLE_DEVICES=0,1,2,3\x1b[0m step 3/20 loss=2.71",     # 6
    "2026-11-30T06:09:12.0000000Z ##[error]The operation was canceled.",                              # 7
    "2026-11-30T06:09:12.0100000Z Cleaning up orphan processes",                                      # 8
    "",
])

# An sglang-family runner (run_suite.py) killed before its final summary: stage and shard come
# from the job name only.
LOG_B = "\n".join([
    "2026-11-30T06:02:05.0000000Z ##[group]Run cd test && python3 run_suite.py --suite stage-b-1-gpu-h200 "
    "--auto-partition-id 0 --auto-partition-size 2",                                                  # 1
    "2026-11-30T06:02:05.0010000Z \x1b[36;1mcd test && python3 run_suite.py --suite stage-b-1-gpu-h200 "
    "--auto-partition-id 0 --auto-partition-size 2\x1b[0m",                                           # 2
    "2026-11-30T06:02:05.0020000Z ##[endgroup]",                                                      # 3
    "2026-11-30T06:02:06.0000000Z .",                                                                 # 4
    "2026-11-30T06:02:06.0010000Z .",                                                                 # 5
    "2026-11-30T06:02:06.0020000Z Begin (0/2):",                                                      # 6
    "2026-11-30T06:02:06.0030000Z python3 tests/e2e/test_sglang_rollout.py",                          # 7
    "2026-11-30T06:04:27.3000000Z \x1b[32m[2026-11-30 06:04:27] INFO server_args.py:512: Server is ready"
    "\x1b[0m",                                                                                        # 8
    "2026-11-30T06:04:27.3010000Z Ran 3 tests in 139.870s",                                           # 9
    "2026-11-30T06:04:27.3020000Z ",                                                                  # 10
    "2026-11-30T06:04:27.3030000Z OK",                                                                # 11
    "2026-11-30T06:04:27.3040000Z .",                                                                 # 12
    "2026-11-30T06:04:27.3050000Z .",                                                                 # 13
    "2026-11-30T06:04:27.3060000Z End (0/2):",                                                        # 14
    "2026-11-30T06:04:27.3070000Z filename='./tests/e2e/test_sglang_rollout.py', elapsed=141, "
    "estimated_time=180",                                                                             # 15
    "2026-11-30T06:04:27.3080000Z .",                                                                 # 16
    "2026-11-30T06:04:27.3090000Z .",                                                                 # 17
    "2026-11-30T06:04:27.3100000Z Begin (1/2):",                                                      # 18
    "2026-11-30T06:04:27.3110000Z python3 tests/e2e/session_server/test_session_tool_calls.py",       # 19
    "2026-11-30T06:10:02.0000000Z Killed",                                                            # 20
    "2026-11-30T06:10:02.0100000Z ##[error]Process completed with exit code 137.",                    # 21
    "",
])


def record(file: str, attempt: int, status: str, elapsed: float, est: float, **extra) -> str:
    data = {"schema": 1, "file": file, "stage": "stage-c-4-gpu-h200", "shard": 2, "attempt": attempt,
            "status": status, "elapsed": elapsed, "est_time": est,
            "failure_kind": "infra" if status == "fail" else None, "retriable": True if status == "fail" else None,
            "started_at": "2026-11-30T06:02:12Z", "commit": "3f2a9c1e0b7d4a5f8e6c2b1a0d9e8f7c6b5a4d3e",
            "run_id": str(RUN), "run_attempt": "1"}
    data.update(extra)
    return json.dumps(data)


TIMINGS_JSONL = "\n".join([
    record("tests/e2e/test_megatron_ppo_4gpu.py", 1, "fail", 61.412, 900),   # 1
    record("tests/e2e/test_megatron_ppo_4gpu.py", 2, "pass", 512.873, 900),  # 2
    record("tests/e2e/test_fsdp_dpo_4gpu.py", 1, "pass", 470.918, 600),      # 3
    record("tests/e2e/test_rocm_fsdp_grpo.py", 1, "pass", 371.538, 360),     # 4
    "",
])


def zip_of(members: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, text in members.items():
            z.writestr(name, text)
    return buf.getvalue()


def row(job_id: str, job_name: str, stage: str, shard: int, file: str, status: str, elapsed, est, source: str,
        line: int, note: str = "") -> FileEvidence:
    return FileEvidence(run_id=str(RUN), job_id=job_id, job_name=job_name, stage=stage, shard=shard, file=file,
                        status=status, elapsed=elapsed, logged_est=est, source=source, line=line, note=note)


SRC_C = f"{REPO}/runs/{RUN}/jobs/{JOB_C}"
SRC_MI = f"{REPO}/runs/{RUN}/jobs/{JOB_MI}"
SRC_B = f"{REPO}/runs/{RUN}/jobs/{JOB_B}"
SRC_T = f"{REPO}/runs/{RUN}/artifacts/{TIMINGS}/ci-policy-timings.jsonl"
C4, MI, B1 = "stage-c-4-gpu-h200", "stage-c-4-gpu-mi350", "stage-b-1-gpu-h200"

EXPECTED_ROWS = [
    row(str(JOB_C), NAME_C, C4, 2, "tests/e2e/test_megatron_ppo_4gpu.py", "passed", 512.9, 900.0, SRC_C, 30,
        "retried: 2 attempts"),
    row(str(JOB_C), NAME_C, C4, 2, "tests/e2e/test_fsdp_dpo_4gpu.py", "passed", 470.9, 600.0, SRC_C, 31),
    row(str(JOB_C), NAME_C, C4, 2, "tests/e2e/test_rocm_fsdp_grpo.py", "passed", 371.5, 360.0, SRC_C, 32),
    row(str(JOB_MI), NAME_MI, MI, 1, "tests/e2e/test_rocm_fsdp_grpo.py", "cancelled", None, 480.0, SRC_MI, 4,
        "job cancelled; no result logged"),
    row(str(JOB_B), NAME_B, B1, 0, "tests/e2e/test_sglang_rollout.py", "unknown", 141.0, 180.0, SRC_B, 15,
        "no final summary"),
    row("", TIMINGS, C4, 2, "tests/e2e/test_megatron_ppo_4gpu.py", "passed", 512.873, 900.0, SRC_T, 2,
        "retried: 2 attempts"),
    row("", TIMINGS, C4, 2, "tests/e2e/test_fsdp_dpo_4gpu.py", "passed", 470.918, 600.0, SRC_T, 3),
    row("", TIMINGS, C4, 2, "tests/e2e/test_rocm_fsdp_grpo.py", "passed", 371.538, 360.0, SRC_T, 4),
]


# -- fixtures ------------------------------------------------------------------------------------------------

@pytest.fixture
def token(monkeypatch) -> str:
    value = "ghs_" + secrets.token_hex(18)
    monkeypatch.setenv("GITHUB_TOKEN", value)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    return value


@pytest.fixture
def gh():
    fake = FakeGitHub("acme", "minirl").start()
    yield fake
    fake.stop()


def add_run(gh: FakeGitHub) -> None:
    """Run RUN (a scheduled run of the default branch): three jobs (one cancelled, one without a final
    summary) and three artifacts."""
    gh.add_run("pr-test.yml", head_sha="1" * 40, conclusion="success", event="schedule", run_id=RUN,
               head_branch="main")
    gh.add_job(RUN, NAME_C, LOG_C, job_id=JOB_C, conclusion="success")
    gh.add_job(RUN, NAME_MI, LOG_MI, job_id=JOB_MI, conclusion="cancelled")
    gh.add_job(RUN, NAME_B, LOG_B, job_id=JOB_B, conclusion="failure")
    gh.add_artifact(RUN, TIMINGS, zip_of({"ci-policy-timings.jsonl": TIMINGS_JSONL}), artifact_id=ART_TIMINGS)
    gh.add_artifact(RUN, "ci-policy-timings-stage-b-1-gpu-h200-0", zip_of({"ci-policy-timings.jsonl": "{"}),
                    artifact_id=ART_EXPIRED, expired=True)
    gh.add_artifact(RUN, "test-reports-stage-c-4-gpu-h200-2",
                    zip_of({"reports/junit.xml": "<testsuites/>\n", "reports/timings.jsonl.txt": "not records\n"}),
                    artifact_id=ART_REPORTS)


def api(path: str, token: str, gh: FakeGitHub, **query) -> tuple:
    """An API request as the fake must see it: with the token, to the API's host."""
    return ("GET", path, query, f"token {token}", f"127.0.0.1:{gh.url.rsplit(':', 1)[1]}")


def blob(path: str, gh: FakeGitHub, host: str = "127.0.0.1") -> tuple:
    """A redirected download: the signed URL exactly, without any Authorization."""
    return ("GET", path, {"sv": "2021-08-06", "se": "2026-11-30T08:00:00Z", "sig": gh.signature(path)}, None,
            f"{host}:{gh.url.rsplit(':', 1)[1]}")


def seen(gh: FakeGitHub) -> list[tuple]:
    return [(r.method, r.path, {k: v[0] if len(v) == 1 else v for k, v in r.query.items()}, r.authorization,
             r.host) for r in gh.requests]


def run_requests(gh: FakeGitHub, token: str, host: str = "127.0.0.1") -> list[tuple]:
    return [
        api(f"{P}/actions/runs/{RUN}/jobs", token, gh, filter="all", per_page="100", page="1"),
        api(f"{P}/actions/jobs/{JOB_C}/logs", token, gh),
        blob(f"/_blob/logs/{JOB_C}", gh, host),
        api(f"{P}/actions/jobs/{JOB_MI}/logs", token, gh),
        blob(f"/_blob/logs/{JOB_MI}", gh, host),
        api(f"{P}/actions/jobs/{JOB_B}/logs", token, gh),
        blob(f"/_blob/logs/{JOB_B}", gh, host),
        api(f"{P}/actions/runs/{RUN}/artifacts", token, gh, per_page="100", page="1"),
        api(f"{P}/actions/artifacts/{ART_TIMINGS}/zip", token, gh),
        blob(f"/_blob/artifacts/{ART_TIMINGS}.zip", gh, host),
        # the expired artifact and the test reports (not a timing artifact) are never downloaded
    ]


def policy_error(exc: BaseException) -> dict:
    assert isinstance(exc, InputError)
    return exc.as_dict()


# -- parse_run -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("acme/minirl/8812345678", ("acme/minirl", 8812345678)),
    ("  acme/minirl/8812345678\n", ("acme/minirl", 8812345678)),
    ("acme/minirl/actions/runs/8812345678", ("acme/minirl", 8812345678)),
    ("https://github.com/acme/minirl/actions/runs/8812345678", ("acme/minirl", 8812345678)),
    ("https://github.com/acme/minirl/actions/runs/8812345678/", ("acme/minirl", 8812345678)),
    ("https://github.com/acme/minirl/actions/runs/8812345678/attempts/2", ("acme/minirl", 8812345678)),
    ("https://github.com/acme/minirl/actions/runs/8812345678/attempts/2/", ("acme/minirl", 8812345678)),
    ("http://ghe.example.com/gpu-team/mini_rl.v2/actions/runs/17", ("gpu-team/mini_rl.v2", 17)),
])
def test_parse_run_accepts_owner_repo_run_id_and_run_urls(text, expected):
    assert parse_run(text) == expected


@pytest.mark.parametrize("text", [
    "",
    "8812345678",
    "acme/minirl",
    "acme/minirl/",
    "acme/minirl/abc",
    "acme/minirl/-5",
    "acme/minirl/runs/8812345678",
    "acme/minirl/actions/runs/8812345678/attempts/two",
    "https://github.com/acme/minirl/actions/runs/8812345678/job/31337000101",
    "https://github.com/acme/minirl/actions/runs/8812345678?pr=7",
    "https://github.com/acme/minirl/pull/7",
    "ftp://github.com/acme/minirl/actions/runs/8812345678",
    "acme/mini rl/8812345678",
    "../../8812345678",
    "acme/../8812345678",
    "./minirl/8812345678",
])
def test_parse_run_rejects_everything_else_with_the_exact_message(text):
    with pytest.raises(UsageError) as exc:
        parse_run(text)
    assert (exc.value.source, exc.value.message, exc.value.hint) == (
        "--github-run", f"{text!r} is not OWNER/REPO/RUN_ID or a run URL", HINT)


def test_a_rejected_run_sends_no_request(gh, token):
    with pytest.raises(UsageError):
        download_run("../../8812345678", token, gh.url)
    assert gh.requests == []


# -- download_run: rows and requests -------------------------------------------------------------------------

def test_a_runs_job_logs_and_timing_artifacts_become_exact_rows_through_exact_requests(gh, token):
    add_run(gh)
    rows = download_run(RUN_URL, token, gh.url)
    assert rows == EXPECTED_ROWS
    assert seen(gh) == run_requests(gh, token)
    # The redirects were followed to the signed URLs the API answered with; the token went to
    # the API only, never to the blob storage.
    assert [r.authorization for r in gh.requests if r.path.startswith("/_blob/")] == [None] * 4
    assert all(r.authorization == f"token {token}" for r in gh.requests if r.path.startswith(P))


def test_the_run_url_of_an_attempt_reads_the_same_run(gh, token):
    add_run(gh)
    assert download_run(f"{RUN_URL}/attempts/1", token, gh.url) == EXPECTED_ROWS
    assert download_run(f"{REPO}/{RUN}", token, gh.url + "/") == EXPECTED_ROWS


def test_downloads_redirected_to_another_host_are_fetched_without_the_token(gh, token):
    # GitHub redirects log and artifact downloads to blob storage on another host name.
    gh.blob_host = "localhost"
    add_run(gh)
    assert download_run(RUN_URL, token, gh.url) == EXPECTED_ROWS
    assert seen(gh) == run_requests(gh, token, host="localhost")


def test_every_page_of_jobs_and_of_artifacts_is_read(gh, token):
    gh.max_requests = 400
    log = ("2026-11-30T06:02:12.0000000Z \x1b[32m[1/1] tests/e2e/test_fsdp_grpo.py PASS elapsed=200.5s est=240s "
           "attempt=1\x1b[0m\n")
    job_ids = [41000000000 + i for i in range(1, 102)]
    for i, job_id in enumerate(job_ids, start=1):
        gh.add_job(RUN, f"stage-b-1-gpu-h200 (shard {i % 2})", log, job_id=job_id)
    for i in range(1, 101):
        gh.add_artifact(RUN, f"old-{i}", b"", artifact_id=2500000000 + i, expired=True)
    gh.add_artifact(RUN, TIMINGS, zip_of({"t.jsonl": TIMINGS_JSONL}), artifact_id=2500000101)

    rows = download_run(RUN_URL, token, gh.url, throttle=NO_THROTTLE)

    assert [r.job_id for r in rows[:101]] == [str(j) for j in job_ids]
    assert rows[100] == row(str(job_ids[100]), "stage-b-1-gpu-h200 (shard 1)", B1, 1, "tests/e2e/test_fsdp_grpo.py",
                            "unknown", 200.5, 240.0, f"{REPO}/runs/{RUN}/jobs/{job_ids[100]}", 1,
                            "no final summary; last attempt: PASS")
    assert [r.source for r in rows[101:]] == [f"{REPO}/runs/{RUN}/artifacts/{TIMINGS}/t.jsonl"] * 3
    lists = [c for c in seen(gh) if c[1].endswith(("/jobs", "/artifacts"))]
    assert lists == [
        api(f"{P}/actions/runs/{RUN}/jobs", token, gh, filter="all", per_page="100", page="1"),
        api(f"{P}/actions/runs/{RUN}/jobs", token, gh, filter="all", per_page="100", page="2"),
        api(f"{P}/actions/runs/{RUN}/artifacts", token, gh, per_page="100", page="1"),
        api(f"{P}/actions/runs/{RUN}/artifacts", token, gh, per_page="100", page="2"),
    ]
    assert len(gh.requests) == 2 + 2 * 101 + 2 + 2


def test_a_run_without_jobs_or_artifacts_gives_no_rows(gh, token):
    gh.run_jobs[RUN] = []
    assert download_run(RUN_URL, token, gh.url) == []
    assert seen(gh) == [api(f"{P}/actions/runs/{RUN}/jobs", token, gh, filter="all", per_page="100", page="1"),
                        api(f"{P}/actions/runs/{RUN}/artifacts", token, gh, per_page="100", page="1")]


# -- artifacts: hostile and broken archives ------------------------------------------------------------------

def test_zip_member_names_are_never_paths(gh, token, tmp_path, monkeypatch):
    base = tmp_path / "tmp"
    work = tmp_path / "work" / "a" / "b"
    base.mkdir()
    work.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    monkeypatch.chdir(work)
    read_paths = []
    real_read_records = records.read_records

    def spy(path, **kwargs):
        read_paths.append(Path(path))
        assert Path(path).read_text(encoding="utf-8") == TIMINGS_JSONL  # the member's bytes, as written
        assert list(Path(path).parent.iterdir()) == [Path(path)]  # one member on disk at a time
        return real_read_records(path, **kwargs)

    monkeypatch.setattr(records, "read_records", spy)
    evil = "../../evil.jsonl"
    gh.run_jobs[RUN] = []
    gh.add_artifact(RUN, "ci-policy-timings-evil",
                    zip_of({evil: TIMINGS_JSONL, "x/../../../evil2.jsonl": TIMINGS_JSONL}), artifact_id=ART_TIMINGS)
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))

    rows = download_run(RUN_URL, token, gh.url)

    EVIL = "ci-policy-timings-evil"  # noqa: N806
    evil2 = f"{REPO}/runs/{RUN}/artifacts/{EVIL}/x/../../../evil2.jsonl"
    assert [(r.file, r.source, r.line, r.job_name) for r in rows] == [
        ("tests/e2e/test_megatron_ppo_4gpu.py", f"{REPO}/runs/{RUN}/artifacts/ci-policy-timings-evil/{evil}", 2, EVIL),
        ("tests/e2e/test_fsdp_dpo_4gpu.py", f"{REPO}/runs/{RUN}/artifacts/ci-policy-timings-evil/{evil}", 3, EVIL),
        ("tests/e2e/test_rocm_fsdp_grpo.py", f"{REPO}/runs/{RUN}/artifacts/ci-policy-timings-evil/{evil}", 4, EVIL),
        ("tests/e2e/test_megatron_ppo_4gpu.py", evil2, 2, EVIL),
        ("tests/e2e/test_fsdp_dpo_4gpu.py", evil2, 3, EVIL),
        ("tests/e2e/test_rocm_fsdp_grpo.py", evil2, 4, EVIL),
    ]
    # Each member was streamed to a file of the run's own temporary directory, under a name of
    # ours, read from there and deleted before the next; the directory is gone afterwards and
    # nothing else was created.
    assert [(p.parent.parent, p.parent.name.startswith("ci-policy-tune-"), p.name) for p in read_paths] == [
        (base, True, "member.jsonl"), (base, True, "member.jsonl")]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before
    assert list(base.iterdir()) == []


def test_an_artifact_that_is_not_a_zip_archive_is_skipped_with_a_warning(gh, token):
    gh.run_jobs[RUN] = []
    gh.add_artifact(RUN, TIMINGS, b"<html><body>Service Unavailable</body></html>\n", artifact_id=ART_TIMINGS)
    warnings: list = []
    assert download_run(RUN_URL, token, gh.url, warnings=warnings) == []
    assert [(w.severity, w.path, w.message, w.hint) for w in warnings] == [(
        "warning", f"{REPO}/runs/{RUN}/artifacts/{TIMINGS}",
        f"artifact '{TIMINGS}' of run {RUN} skipped: not a readable zip archive (File is not a zip file)",
        "none of its timing records are used; the run's other artifacts and job logs are")]


def test_malformed_records_in_an_artifact_skip_it_with_a_warning_citing_the_member_and_line(gh, token):
    # A malformed member costs its archive, never the run's other evidence (issue 32, item 6).
    gh.run_jobs[RUN] = []
    bad = TIMINGS_JSONL.splitlines()
    bad[1] = bad[1].replace('"elapsed": 512.873', '"elapsed": "512.873"')
    bad[3] = '{"schema": 1, "file": '
    gh.add_artifact(RUN, TIMINGS, zip_of({"timings/ci-policy-timings.jsonl": "\n".join(bad) + "\n"}),
                    artifact_id=ART_TIMINGS)
    gh.add_artifact(RUN, TIMINGS + "-b", zip_of({"t.jsonl": TIMINGS_JSONL}), artifact_id=ART_TIMINGS + 10)
    warnings: list = []
    rows = download_run(RUN_URL, token, gh.url, warnings=warnings)
    assert {r.source for r in rows} == {f"{REPO}/runs/{RUN}/artifacts/{TIMINGS}-b/t.jsonl"}
    cite = f"{REPO}/runs/{RUN}/artifacts/{TIMINGS}/timings/ci-policy-timings.jsonl"
    assert [(w.severity, w.path, w.line, w.message, w.hint) for w in warnings] == [(
        "warning", cite, 2,
        f"artifact '{TIMINGS}' of run {RUN} skipped: member 'timings/ci-policy-timings.jsonl' has 2 malformed "
        "record(s): line 2: field 'elapsed': expected a number in [0, 604800], got string \"512.873\"; "
        "line 4: not valid JSON: Expecting value (column 23)",
        "none of its timing records are used; the run's other artifacts and job logs are")]


@pytest.mark.parametrize("listed", [True, False], ids=["by-its-listed-size", "by-its-download"])
def test_an_artifact_over_the_download_cap_is_skipped_with_a_warning_and_the_run_goes_on(gh, token, monkeypatch,
                                                                                          listed):
    add_run(gh)
    big = zip_of({"ci-policy-timings.jsonl": TIMINGS_JSONL})
    monkeypatch.setattr(download, "MAX_ARCHIVE_BYTES", len(big) - 1)
    gh.run_artifacts[RUN] = []
    gh.add_artifact(RUN, TIMINGS, big, artifact_id=ART_TIMINGS)
    if not listed:  # the listing understates it: the download itself crosses the cap
        gh.run_artifacts[RUN][0]["size_in_bytes"] = 100
    small = zip_of({"ci-policy-timings.jsonl": TIMINGS_JSONL.splitlines(keepends=True)[1]})
    gh.add_artifact(RUN, "ci-policy-timings-small", small, artifact_id=ART_REPORTS)
    warnings: list = []
    steps: list = []
    rows = download_run(RUN_URL, token, gh.url, warnings=warnings, progress=steps.append)
    # The job logs and the other artifact are still read.
    assert {r.source for r in rows} == {SRC_C, SRC_MI, SRC_B,
                                       f"{REPO}/runs/{RUN}/artifacts/ci-policy-timings-small/ci-policy-timings.jsonl"}
    what = f"{len(big)} bytes" if listed else "its download"
    assert [(w.severity, w.path, w.message, w.hint) for w in warnings] == [(
        "warning", f"{REPO}/runs/{RUN}/artifacts/{TIMINGS}",
        f"artifact '{TIMINGS}' of run {RUN} skipped: {what} is over the {len(big) - 1}-byte cap of one artifact "
        "download", "none of its timing records are used; the run's other artifacts and job logs are")]
    downloaded = [r.path for r in gh.requests if r.path.startswith(f"{P}/actions/artifacts/")]
    assert downloaded == ([] if listed else [f"{P}/actions/artifacts/{ART_TIMINGS}/zip"]) + [
        f"{P}/actions/artifacts/{ART_REPORTS}/zip"]
    assert [(s.kind, s.index, s.count, s.name, s.size) for s in steps] == [
        ("log", 1, 3, NAME_C, None), ("log", 2, 3, NAME_MI, None), ("log", 3, 3, NAME_B, None),
        *([] if listed else [("artifact", 1, 2, TIMINGS, 100)]),
        ("artifact", 2, 2, "ci-policy-timings-small", len(small))]


def test_only_timing_artifacts_are_downloaded(gh, token):
    gh.run_jobs[RUN] = []
    for artifact_id, name in ((2400000011, "test-reports-stage-c"), (2400000012, "ci-policy-plan-1"),
                              (2400000013, "dist-1"), (ART_TIMINGS, TIMINGS)):
        gh.add_artifact(RUN, name, zip_of({"ci-policy-timings.jsonl": TIMINGS_JSONL}), artifact_id=artifact_id)
    assert len(download_run(RUN_URL, token, gh.url)) == 3
    assert [r.path for r in gh.requests if r.path.startswith(f"{P}/actions/artifacts/")] == [
        f"{P}/actions/artifacts/{ART_TIMINGS}/zip"]


# -- API and download errors ---------------------------------------------------------------------------------

def test_a_run_that_does_not_exist_is_an_error_without_the_token(gh, token):
    with pytest.raises(InputError) as exc:
        download_run(f"{REPO}/404404", token, gh.url)
    assert policy_error(exc.value) == {
        "path": None, "line": None, "col": None, "hint": None,
        "message": "GitHub API error 404 while reading run 404404 of acme/minirl: Not Found"}
    assert token not in str(exc.value)
    assert seen(gh) == [api(f"{P}/actions/runs/404404/jobs", token, gh, filter="all", per_page="100", page="1")]


@pytest.mark.parametrize("method_path, status, message, expected", [
    (f"{P}/actions/runs/{RUN}/jobs", 401, "Bad credentials",
     f"GitHub API error 401 while reading run {RUN} of acme/minirl: Bad credentials"),
    (f"{P}/actions/jobs/{JOB_MI}/logs", 404, "Not Found",
     f"GitHub API error 404 while reading run {RUN} of acme/minirl: Not Found"),
    (f"{P}/actions/runs/{RUN}/artifacts", 403, "Resource not accessible by integration",
     f"GitHub API error 403 while reading run {RUN} of acme/minirl: Resource not accessible by integration"),
    (f"{P}/actions/artifacts/{ART_TIMINGS}/zip", 410, "Artifact has expired",
     f"GitHub API error 410 while reading run {RUN} of acme/minirl: Artifact has expired"),
    (f"/_blob/logs/{JOB_MI}", 503, "Server Busy",  # retried as the API calls are (below), then given up
     f"{P}/actions/jobs/{JOB_MI}/logs: the download it redirects to answered HTTP 503 after 5 attempts"),
    (f"/_blob/artifacts/{ART_TIMINGS}.zip", 403, "AuthenticationFailed",
     f"{P}/actions/artifacts/{ART_TIMINGS}/zip: the download it redirects to answered HTTP 403"),
])
def test_api_and_download_errors_are_policy_errors_without_the_token(gh, token, method_path, status, message,
                                                                     expected):
    add_run(gh)
    gh.fail("GET", method_path, status, message)
    with pytest.raises(InputError) as exc:
        download_run(RUN_URL, token, gh.url)
    assert policy_error(exc.value) == {"path": None, "line": None, "col": None, "hint": None,
                                       "message": expected}
    assert token not in str(exc.value) and "sig=" not in str(exc.value)
    assert seen(gh)[-1][1] == method_path  # nothing was requested after the failure


# -- the command line ----------------------------------------------------------------------------------------

def test_tune_github_run_end_to_end(gh, token, example_repo, tmp_path, capsys):
    add_run(gh)
    out = tmp_path / "evidence.csv"
    rc = main(["tune", "--repo", str(example_repo), "--github-run", f"{RUN_URL}/attempts/1", "--api-url", gh.url,
               "--csv", str(out)])
    stdout, stderr = capsys.readouterr()
    # Not a terminal: one line per timing artifact downloaded, on stderr.
    size = len(gh.artifact_zips[ART_TIMINGS])
    assert (rc, stderr) == (0, f"ci-policy tune: run {RUN}: timing artifact 1/1 '{TIMINGS}' ({size} bytes)\n")
    assert token not in stdout
    # The run's metadata first (is it a run tune may trust?), then its logs and artifacts.
    assert seen(gh) == [api(P, token, gh), api(f"{P}/actions/runs/{RUN}", token, gh), *run_requests(gh, token)]

    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert [(r["run_id"], r["job_id"], r["stage"], r["shard"], r["test_file"], r["status"], r["elapsed_s"],
             r["source"], r["line"]) for r in rows] == [
        (str(RUN), str(JOB_C), C4, "2", "tests/e2e/test_megatron_ppo_4gpu.py", "passed", "512.9", SRC_C, "30"),
        (str(RUN), str(JOB_C), C4, "2", "tests/e2e/test_fsdp_dpo_4gpu.py", "passed", "470.9", SRC_C, "31"),
        (str(RUN), str(JOB_C), C4, "2", "tests/e2e/test_rocm_fsdp_grpo.py", "passed", "371.5", SRC_C, "32"),
        (str(RUN), str(JOB_MI), MI, "1", "tests/e2e/test_rocm_fsdp_grpo.py", "cancelled", "", SRC_MI, "4"),
        (str(RUN), str(JOB_B), B1, "0", "tests/e2e/test_sglang_rollout.py", "unknown", "141", SRC_B, "15"),
        (str(RUN), "", C4, "2", "tests/e2e/test_megatron_ppo_4gpu.py", "passed", "512.873", SRC_T, "2"),
        (str(RUN), "", C4, "2", "tests/e2e/test_fsdp_dpo_4gpu.py", "passed", "470.918", SRC_T, "3"),
        (str(RUN), "", C4, "2", "tests/e2e/test_rocm_fsdp_grpo.py", "passed", "371.538", SRC_T, "4"),
    ]
    # The job's log line and the same attempt's timing record are one sample, not two: the
    # record (exact to the millisecond) is counted, the log row stays in the CSV, noted.
    assert {r["origin"] for r in rows} == {"github schedule on main"}
    assert all(r["note"].endswith("also in the timing records; counted once") for r in rows if r["source"] == SRC_C)
    assert not any("counted once" in r["note"] for r in rows if r["source"] == SRC_T)
    assert stdout.splitlines()[:6] == [
        "FILE                                 BACKEND  SAMPLES        Q  CURRENT -> PROPOSED  ACTION       REASON",
        "tests/e2e/test_fsdp_dpo_4gpu.py      cuda           1  470.918  600 -> 600           keep         unchanged",
        "tests/e2e/test_megatron_ppo_4gpu.py  cuda           1  512.873  900 -> 700           report_only  would lower",
        "tests/e2e/test_rocm_fsdp_grpo.py     cuda           1  371.538  360 -> 500           report_only  would raise",
        "tests/e2e/test_rocm_fsdp_grpo.py     rocm           0        -  480                  skip         "
        "no passed sample (cancelled)",
        "tests/e2e/test_sglang_rollout.py     cuda           0        -  180                  skip         "
        "no passed sample (unknown)",
    ]
    assert stdout.splitlines()[-1] == "ci-policy tune: 1 keep, 2 report_only, 2 skip"


@pytest.mark.parametrize("env, args, name", [
    ({"GITHUB_TOKEN": ""}, [], "GITHUB_TOKEN"),
    ({"CI_READ_TOKEN": None}, ["--token-env", "CI_READ_TOKEN"], "CI_READ_TOKEN"),
])
def test_tune_github_run_without_a_token_is_an_error_without_requests(gh, example_repo, monkeypatch, capsys, env,
                                                                      args, name):
    for key, value in env.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    rc = main(["tune", "--repo", str(example_repo), "--github-run", f"{REPO}/{RUN}", "--api-url", gh.url, *args])
    stdout, stderr = capsys.readouterr()
    assert (rc, stdout, stderr) == (2, "", f"ci-policy tune: error: ${name}: is empty: --github-run needs a token\n"
                                           f"    hint: set {name}, or name another variable with --token-env\n")
    assert gh.requests == []


def test_tune_github_run_api_error_exits_1_with_the_message_and_no_token(gh, token, example_repo, capsys):
    rc = main(["tune", "--repo", str(example_repo), "--github-run", f"{REPO}/404404", "--api-url", gh.url])
    stdout, stderr = capsys.readouterr()
    assert (rc, stdout, stderr) == (1, "", "GitHub API error 404 on GET /repos/acme/minirl/actions/runs/404404: "
                                           "Not Found\nci-policy: 1 error\n")
    assert token not in stderr


def test_tune_github_run_rejects_a_bad_run_without_requests(gh, token, example_repo, capsys):
    rc = main(["tune", "--repo", str(example_repo), "--github-run", f"{RUN_URL}/job/{JOB_C}", "--api-url", gh.url])
    stdout, stderr = capsys.readouterr()
    assert (rc, stdout) == (2, "")
    assert stderr == (f"ci-policy tune: error: --github-run: '{RUN_URL}/job/{JOB_C}' is not OWNER/REPO/RUN_ID "
                      f"or a run URL\n    hint: {HINT}\n")
    assert gh.requests == []


# -- transient failures: PyGithub's retry, bounded ------------------------------------------------------------

JOBS = f"{P}/actions/runs/{RUN}/jobs"
JOBS_QUERY = {"filter": "all", "per_page": "100", "page": "1"}


def retried(path: str, answers: list[str], whens: list[str], of: int = 5) -> str:
    return "".join(f"ci-policy: GitHub API request GET {path} answered {answer}; attempt {n} of {of} {when}\n"
                   for n, (answer, when) in enumerate(zip(answers, whens, strict=True), 2))


def test_two_502s_are_retried_with_backoff_and_the_run_is_read(gh, token, github_sleeps, capsys):
    add_run(gh)
    gh.fail_next("GET", JOBS, 502, 502, message="Server Error")
    assert download_run(RUN_URL, token, gh.url) == EXPECTED_ROWS
    assert seen(gh) == [api(JOBS, token, gh, **JOBS_QUERY)] * 2 + run_requests(gh, token)
    assert github_sleeps == [2.0]  # no wait before the first retry, 2 s before the second
    assert capsys.readouterr() == ("", retried(JOBS, ["HTTP 502", "HTTP 502"], ["now", "after 2s"]))


@pytest.mark.parametrize("retry_after, status, sleeps, answer, when", [
    (7, 403, [7.0], "HTTP 403, Retry-After 7", "after 7s"),
    (7, 429, [7.0], "HTTP 429, Retry-After 7", "after 7s"),
    (None, 403, [60.0], "HTTP 403", "after 60s"),  # no Retry-After: PyGithub's 60 s for a secondary rate limit
], ids=["403-retry-after", "429-retry-after", "403-without-retry-after"])
def test_a_secondary_rate_limit_is_waited_out_as_github_asks(gh, token, github_sleeps, capsys, retry_after, status,
                                                             sleeps, answer, when):
    add_run(gh)
    gh.rate_limit_next("GET", f"{P}/actions/runs/{RUN}/artifacts", retry_after, status=status)
    assert download_run(RUN_URL, token, gh.url) == EXPECTED_ROWS
    requests = run_requests(gh, token)
    at = requests.index(api(f"{P}/actions/runs/{RUN}/artifacts", token, gh, per_page="100", page="1"))
    assert seen(gh) == requests[:at + 1] + requests[at:]
    assert github_sleeps == sleeps
    assert capsys.readouterr() == ("", retried(f"{P}/actions/runs/{RUN}/artifacts", [answer], [when]))


BLOB = f"/_blob/artifacts/{ART_TIMINGS}.zip"
ZIP = f"{P}/actions/artifacts/{ART_TIMINGS}/zip"


def test_a_storage_download_that_fails_is_retried_with_the_same_backoff(gh, token, github_sleeps, capsys):
    add_run(gh)
    gh.fail_next("GET", BLOB, 503, 502, message="Server Busy")
    assert download_run(RUN_URL, token, gh.url) == EXPECTED_ROWS
    assert [path for _method, path, *_ in seen(gh)].count(BLOB) == 3
    assert github_sleeps == [2.0]  # at once, then after 2 s: as an API request
    assert capsys.readouterr() == ("", (
        f"ci-policy: the storage download of GET {ZIP} answered HTTP 503; attempt 2 of 5 now\n"
        f"ci-policy: the storage download of GET {ZIP} answered HTTP 502; attempt 3 of 5 after 2s\n"))


def test_a_storage_download_is_not_retried_for_a_client_error_nor_past_the_wait_limit(gh, token, github_sleeps,
                                                                                      monkeypatch, capsys):
    add_run(gh)
    gh.fail_next("GET", BLOB, 404)
    with pytest.raises(InputError) as exc:
        download_run(RUN_URL, token, gh.url)
    assert str(exc.value.diagnostic.message) == f"{ZIP}: the download it redirects to answered HTTP 404"
    assert [path for _method, path, *_ in seen(gh)].count(BLOB) == 1
    assert github_sleeps == [] and "ci-policy: the storage download" not in capsys.readouterr().err
    monkeypatch.setenv("CI_POLICY_GITHUB_MAX_WAIT", "1")
    gh.fail_next("GET", BLOB, 503, 503)  # at once, then 2 s would pass the limit of 1 s
    with pytest.raises(InputError) as exc:
        download_run(RUN_URL, token, gh.url)
    assert str(exc.value.diagnostic.message) == (
        f"{ZIP}: the download it redirects to answered HTTP 503 after 2 attempts")
    assert github_sleeps == []


def test_a_request_that_keeps_failing_gives_up_after_5_attempts_with_a_clear_error(gh, token, github_sleeps,
                                                                                   example_repo, capsys):
    add_run(gh)
    gh.fail("GET", JOBS, 502, "Server Error")
    rc = main(["tune", "--repo", str(example_repo), "--github-run", RUN_URL, "--api-url", gh.url])
    stdout, stderr = capsys.readouterr()
    assert (rc, stdout, stderr) == (1, "", retried(JOBS, ["HTTP 502"] * 4, ["now", "after 2s", "after 4s", "after 8s"])
                                    + f"ci-policy tune: error: GitHub API request GET {JOBS} gave up after 5 "
                                      "attempts (last answer: HTTP 502); waited 14s between them\n")
    assert github_sleeps == [2.0, 4.0, 8.0]
    assert seen(gh) == [api(P, token, gh), api(f"{P}/actions/runs/{RUN}", token, gh)] + [
        api(JOBS, token, gh, **JOBS_QUERY)] * 5
    assert token not in stderr


def test_a_wait_longer_than_the_limit_is_not_begun(gh, token, github_sleeps, example_repo, capsys):
    add_run(gh)
    gh.rate_limit_next("GET", JOBS, 600)
    rc = main(["tune", "--repo", str(example_repo), "--github-run", RUN_URL, "--api-url", gh.url])
    stdout, stderr = capsys.readouterr()
    assert (rc, stdout, stderr) == (
        1, "", f"ci-policy tune: error: GitHub API request GET {JOBS} gave up after 1 attempt (last answer: HTTP 403, "
               "Retry-After 600); waiting 600s more would pass the limit of 120s in all ($CI_POLICY_GITHUB_MAX_WAIT)\n")
    assert github_sleeps == []
    assert seen(gh)[-1] == api(JOBS, token, gh, **JOBS_QUERY)


def test_the_wait_limit_counts_every_wait_of_a_request(gh, token, github_sleeps, monkeypatch):
    monkeypatch.setenv("CI_POLICY_GITHUB_MAX_WAIT", "5")
    add_run(gh)
    gh.fail_next("GET", JOBS, 502, 502, 502)  # waits 0 s, 2 s, then 4 s would make 6 s
    with pytest.raises(CiPolicyError) as exc:
        download_run(RUN_URL, token, gh.url)
    assert str(exc.value) == (f"GitHub API request GET {JOBS} gave up after 3 attempts (last answer: HTTP 502); "
                              "waited 2s between them; waiting 4s more would pass the limit of 5s in all "
                              "($CI_POLICY_GITHUB_MAX_WAIT)")
    assert github_sleeps == [2.0]


def test_a_longer_wait_limit_waits_out_a_long_retry_after(gh, token, github_sleeps, monkeypatch):
    monkeypatch.setenv("CI_POLICY_GITHUB_MAX_WAIT", "900")
    add_run(gh)
    gh.rate_limit_next("GET", JOBS, 600)
    assert download_run(RUN_URL, token, gh.url) == EXPECTED_ROWS
    assert github_sleeps == [600.0]


@pytest.mark.parametrize("value", ["-1", "3601", "soon", "nan"])
def test_a_bad_wait_limit_is_a_usage_error_before_any_request(gh, token, example_repo, monkeypatch, capsys, value):
    monkeypatch.setenv("CI_POLICY_GITHUB_MAX_WAIT", value)
    rc = main(["tune", "--repo", str(example_repo), "--github-run", RUN_URL, "--api-url", gh.url])
    assert (rc, capsys.readouterr()) == (2, (
        "", f"ci-policy tune: error: $CI_POLICY_GITHUB_MAX_WAIT: must be a number of seconds in [0, 3600], got "
            f"{value!r}\n    hint: the longest a GitHub API request may wait in all between its attempts\n"))
    assert gh.requests == []
