"""`quarantine:` end to end: a quarantined file that fails lets `run` exit 0 and the required check
pass, reported as a warning (text summary, `::warning` annotation, step summary); past its `until`
the same entry excuses nothing and `lint` fails with CP233.

Subprocess tests through the installed console script, as in test_run.py. The dates are far from
today (2999, 2000) so that the outcome never depends on the day the tests run; the day itself is
a request field (`app.requests.CheckoutRequest.today`, `app.run.RunRequest.today`), pinned in
tests/model/test_diagnostics.py and tests/app.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cli.test_run import CONFIG, cli, gpu_test, mask, run
from helpers import clean_env

FLAKY = "tests/gpu/test_flaky.py"
OK = "tests/gpu/test_ok.py"
ISSUE = "https://github.com/org/repo/issues/7"


def quarantine(until: str, stage: str = "gpu") -> str:
    return CONFIG + f"""\
quarantine:
  - file: {FLAKY}
    stage: {stage}
    reason: NCCL init times out on one host in ten
    issue: {ISSUE}
    owner: "@alice"
    until: {until}
"""


def files(flaky_fails: bool = True) -> dict[str, str]:
    # The flaky file is the longer one: it runs first, and fast-fail must not stop at it.
    return {FLAKY: gpu_test('print("flaky")' + ("\nsys.exit(1)" if flaky_fails else ""), est=30),
            OK: gpu_test('print("ok")', est=5)}


EXCUSED = (f"{FLAKY} fail after 1 attempt(s) (unknown: failure not classified as retriable); quarantined until "
           f"2999-12-31: NCCL init times out on one host in ten (issue {ISSUE}, owner @alice)")


def test_a_quarantined_failing_file_still_runs_and_its_failure_fails_nothing(make_repo, tmp_path):
    repo = make_repo(files(), config=quarantine("2999-12-31"))
    proc = run(repo, timings=tmp_path / "t.jsonl")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert mask(proc.stdout).endswith(
        f"[1/2] {FLAKY} FAIL elapsed=<T> est=30s attempt=1\n"
        "      unknown: failure not classified as retriable; not retried\n"
        "ok\n"
        f"[2/2] {OK} PASS elapsed=<T> est=5s attempt=1\n"
        "\n"
        "==== ci-policy run: gpu shard 0 ====\n"
        "PASSED (1):\n"
        f"  {OK} elapsed=<T> est=5s\n"
        "FAILED (0):\n"
        "QUARANTINED (1, failed, not failing the run):\n"
        f"  {EXCUSED}\n"
        "RETRIED (0):\n"
        "RESULT: PASS\n")


def test_a_quarantined_file_that_passes_is_reported_passing(make_repo, tmp_path):
    repo = make_repo(files(flaky_fails=False), config=quarantine("2999-12-31"))
    proc = run(repo, timings=tmp_path / "t.jsonl")
    assert proc.returncode == 0
    assert mask(proc.stdout).endswith(
        "PASSED (2):\n"
        f"  {FLAKY} elapsed=<T> est=30s (passed while quarantined)\n"
        f"  {OK} elapsed=<T> est=5s\n"
        "FAILED (0):\n"
        "RETRIED (0):\n"
        "RESULT: PASS\n")
    summary = tmp_path / "summary.md"
    proc = run(repo, "--format", "github", timings=tmp_path / "t.jsonl",
               env=clean_env(GITHUB_STEP_SUMMARY=str(summary)))
    assert proc.returncode == 0 and "::warning" not in proc.stdout
    assert mask(summary.read_text()).endswith(
        "| tests/gpu/test\\_flaky.py | PASS (quarantined) | 1 | <T> | 30s |  |\n"
        "| tests/gpu/test\\_ok.py | PASS | 1 | <T> | 5s |  |\n\n"
        "**Quarantined** (a failure is reported, not failing the run)\n\n"
        "- ✅ tests/gpu/test\\_flaky.py passed while quarantined until 2999-12-31: NCCL init times out on one host in "
        "ten (issue https:&#8203;//github.com/org/repo/issues/7, owner @&#8203;alice)\n")


def test_a_quarantine_of_another_stage_excuses_nothing_here(make_repo, tmp_path):
    both = files()[FLAKY].replace("\n\ndef main", "\nregister_cuda_ci(est_time=30, suite='other', labels=['megatron'])"
                                                  "\n\ndef main")
    repo = make_repo({**files(), FLAKY: both}, config=quarantine("2999-12-31", stage="other"))
    proc = run(repo, timings=tmp_path / "t.jsonl")
    assert proc.returncode == 1
    assert f"FAILED (1):\n  {FLAKY} FAIL after 1 attempt(s)" in proc.stdout and "QUARANTINED" not in proc.stdout
    proc = run(repo, stage="other", timings=tmp_path / "t.jsonl")
    assert proc.returncode == 0
    assert f"QUARANTINED (1, failed, not failing the run):\n  {EXCUSED}\n" in proc.stdout


def committed(repo: Path) -> Path:
    """`repo` as a clean git tree, which a per-stage plan holds for."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
                                                 "-c", "commit.gpgsign=false", "commit", "-q", "-m", "planned"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env)
    return repo


def test_the_stage_job_honours_the_quarantine_its_per_stage_plan_carries_and_the_result_passes(make_repo, tmp_path):
    repo = committed(make_repo(files(), config=quarantine("2999-12-31")))
    planned = tmp_path / "planned"
    planned.mkdir()
    plan = cli(repo, "plan", "--event", "workflow_dispatch", "--label", "run-ci-megatron", "--json-out",
               str(planned / "plan.json"), "--stage-plans", str(planned / "stages"))
    assert plan.returncode == 0, plan.stderr
    settings = json.loads((planned / "stages" / "gpu.json").read_text())["run_settings"]
    assert settings["quarantine"] == [{"file": FLAKY, "reason": "NCCL init times out on one host in ten",
                                       "issue": ISSUE, "owner": "@alice", "until": "2999-12-31"}]
    assert "quarantine" not in json.loads((planned / "stages" / "unit.json").read_text())["run_settings"]
    # The stage job runs from its per-stage plan (reading no configuration: tests/cli/test_startup.py).
    summary = tmp_path / "summary.md"
    proc = cli(repo, "run", "--plan", str(planned), "--stage", "gpu", "--format", "github", "--timings-out",
               str(tmp_path / "t.jsonl"), env=clean_env(GITHUB_STEP_SUMMARY=str(summary)))
    assert (proc.returncode, proc.stderr) == (0, "")
    assert mask(proc.stdout).endswith(
        "RESULT: PASS\n"
        f"::warning file={FLAKY},title=quarantined::{EXCUSED}: reported, not failing the run\n")
    # Markdown-escaped, as every checkout-controlled value is (no link, no mention of @alice).
    assert mask(summary.read_text()) == (
        "## ci-policy run: gpu shard 0\n\n"
        "| File | Status | Attempts | Elapsed | Est. | |\n"
        "|---|---|---:|---:|---:|---|\n"
        "| tests/gpu/test\\_flaky.py | FAIL (quarantined) | 1 | <T> | 30s |  |\n"
        "| tests/gpu/test\\_ok.py | PASS | 1 | <T> | 5s |  |\n\n"
        "**Quarantined** (a failure is reported, not failing the run)\n\n"
        "- ⚠️ tests/gpu/test\\_flaky.py fail after 1 attempt(s) (unknown: failure not classified as retriable); "
        "quarantined until 2999-12-31: NCCL init times out on one host in ten (issue "
        "https:&#8203;//github.com/org/repo/issues/7, owner @&#8203;alice)\n")
    needs = json.dumps({"plan": {"result": "success", "outputs": {}},
                        "stages-0": {"result": "success" if proc.returncode == 0 else "failure", "outputs": {}}})
    result = cli(repo, "result", "--plan", str(planned / "plan.json"), "--needs-json", needs)
    assert (result.returncode, result.stdout) == (
        0, "ci-policy result: PASS\n  plan: success\n  stages-0: success\n"
           "pass: every needed job succeeded (plan, stages-0)\n")


def test_past_its_until_the_entry_excuses_nothing_and_lint_fails_with_cp233(make_repo, tmp_path):
    repo = make_repo(files(), config=quarantine("2000-01-15"))
    proc = run(repo, timings=tmp_path / "t.jsonl")
    assert proc.returncode == 1
    assert mask(proc.stdout).endswith(
        "FAILED (1):\n"
        f"  {FLAKY} FAIL after 1 attempt(s) (unknown: failure not classified as retriable)\n"
        "RETRIED (0):\n"
        "NOT RUN (1, fast-fail):\n"
        f"  {OK}\n"
        "WARNINGS (1):\n"
        f"  the quarantine of {FLAKY} has expired: it held until 2000-01-15 (NCCL init times out on one host in ten; "
        f"issue {ISSUE}, owner @alice), so its failures count again; renew or remove the entry\n"
        "RESULT: FAIL\n")
    lint = cli(repo, "lint")
    assert lint.returncode == 1
    assert lint.stdout.splitlines()[:2] == [
        f".github/ci-policy.yml:17: CP233 quarantine-expired: quarantine[0].until: the quarantine of {FLAKY} has "
        f"expired: it held until 2000-01-15 (NCCL init times out on one host in ten; issue {ISSUE}, owner @alice), "
        "and its failures fail the run again",
        "    hint: renew it with a later until and an updated reason (and issue or owner), or remove the entry once "
        "the test is fixed"]


@pytest.mark.parametrize("entry, where, message", [
    ("{file: tests/gpu/test_gone.py, reason: r, owner: '@a', until: 2999-12-31}", "12",
     "CP232 quarantine-file-unknown: quarantine[0].file: tests/gpu/test_gone.py is not a registered test file; "
     "did you mean 'tests/gpu/test_ok.py'?"),
    ("{file: tests/gpu/test_ok.py, reason: r, owner: '@a', until: 15.01.2027}", "12:65",
     "CP104 config-wrong-type: quarantine[0].until: expected a date (YYYY-MM-DD), got a string ('15.01.2027')"),
], ids=["unknown-file", "not-a-date"])
def test_lint_locates_a_bad_entry(make_repo, entry, where, message):
    repo = make_repo(files(), config=CONFIG + f"quarantine:\n  - {entry}\n")
    lint = cli(repo, "lint")
    assert lint.returncode == 1
    assert lint.stdout.splitlines()[0] == f".github/ci-policy.yml:{where}: {message}"
