"""`ci-policy history import --github-run(s)`: the timing and plan artifacts of a workflow's runs, pull
requests included, fetched through the fake GitHub API (tests/github_fake.py) and imported into a real
SQLite store. The API requests are asserted exactly; an artifact that does not read (a fork's pull
request can upload anything) is skipped with a warning naming it, and the rest is imported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from github_fake import FakeGitHub
from github_git_fake import zip_of

from ci_policy.adapters.store import open_store
from ci_policy.cli import main

HOSTILE = Path(__file__).resolve().parents[1] / "hostile" / "archives"
REPO = "acme/minirl"
P = f"/repos/{REPO}"
WORKFLOW = "pr-pipeline.yml"
TOKEN = "ghs_" + "5" * 36


@pytest.fixture
def gh():
    fake = FakeGitHub("acme", "minirl").start()
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def token(monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    for name in ("GITHUB_API_URL", "GITHUB_REPOSITORY", "CI_POLICY_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)


def record(file: str, attempt: int, status: str, *, run_id: str, kind: str | None = None) -> bytes:
    return (json.dumps({"schema": 1, "file": file, "stage": "gpu", "shard": 0, "attempt": attempt, "status": status,
                        "elapsed": 4.5, "est_time": 4, "failure_kind": kind,
                        "retriable": None if kind is None else True, "started_at": "2026-11-02T03:00:00Z",
                        "commit": "c1", "run_id": run_id, "run_attempt": "1"}) + "\n").encode()


def plan_artifact(run_id: int, *, scheduled: float, skipped: dict, event: str = "pull_request") -> bytes:
    plan = {"schema": 1, "event": event, "accelerator_hours": {
        "scheduled_hours": scheduled, "skipped_hours": skipped, "scheduled_cost": None, "skipped_cost": None,
        "stages": []}}
    run = {"run_id": str(run_id), "run_attempt": 1, "commit": "c1", "created": "2026-11-02T03:00:00Z"}
    # What the plan job uploads beside them is never extracted: the diff, the per-stage plans.
    return zip_of({"plan.json": json.dumps(plan).encode(), "run.json": json.dumps(run).encode(),
                   "pr.diff": b"diff --git a/x b/x\n", "stages/gpu.json": b"{}"})


def add_run(gh: FakeGitHub, run_id: int, event: str, *, status: str = "completed") -> None:
    gh.add_run(WORKFLOW, head_sha=f"{run_id:040d}", conclusion="success" if status == "completed" else None,
               status=status, event=event, run_id=run_id, head_branch="main" if event == "schedule" else "feature")
    gh.run_jobs.setdefault(run_id, [])


def history(capsys, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    code = main(["history", "import", "--repo", str(tmp_path), "--store", str(tmp_path / "history.sqlite"),
                 "--api-url", *args])
    out, err = capsys.readouterr()
    return code, out, err


def api_calls(gh: FakeGitHub) -> list[tuple]:
    """Every request but the blob-storage downloads the redirects lead to."""
    return [c for c in gh.calls() if not c[1].startswith("/_blob/")]


def artifact_reads(run_id: int, *zips: int) -> list[tuple]:
    return [("GET", f"{P}/actions/runs/{run_id}/artifacts", {"per_page": "100", "page": "1"}, None),
            *[("GET", f"{P}/actions/artifacts/{z}/zip", {}, None) for z in zips]]


def stored(tmp_path: Path) -> tuple[list[tuple], list[tuple]]:
    with open_store(str(tmp_path / "history.sqlite"), default_path=tmp_path / "unused.db", read_only=True) as opened:
        return ([(o.run_id, o.file, o.attempt, o.status) for o in opened.attempts()],
                [(p.run_id, p.event, p.scheduled, dict(p.skipped)) for p in opened.plans()])


def test_the_last_completed_runs_of_every_event_are_fetched_and_imported_idempotently(gh, tmp_path, capsys):
    add_run(gh, 3001, "schedule")
    gh.add_artifact(3001, "ci-policy-timings-gpu-lane-0-1", zip_of({"timings.jsonl": record(
        "tests/a.py", 1, "fail", run_id="3001", kind="flaky") + record("tests/a.py", 2, "pass", run_id="3001")}),
        artifact_id=71)
    add_run(gh, 3002, "pull_request")
    gh.add_artifact(3002, "ci-policy-plan-1", plan_artifact(3002, scheduled=1.5, skipped={"diff": 4.25}),
                    artifact_id=72)
    gh.add_artifact(3002, "ci-policy-timings-gpu-lane-0-1", zip_of({"timings.jsonl": record(
        "tests/b.py", 1, "pass", run_id="3002")}), artifact_id=73)
    gh.add_artifact(3002, "wheels", b"never fetched", artifact_id=74)
    gh.add_artifact(3002, "ci-policy-timings-expired", b"never fetched", artifact_id=75, expired=True)
    add_run(gh, 3003, "pull_request", status="in_progress")  # not completed: never listed
    code, out, err = history(capsys, tmp_path, gh.url, "--github-runs", "2", "--workflow", WORKFLOW,
                             "--repository", REPO)
    assert (code, err) == (0, f"ci-policy history import: 2 completed run(s) of {WORKFLOW}: 3002, 3001\n")
    assert out == ("ci-policy history import: 3 attempt(s) read, 3 new, 0 already in the store; 1 plan(s) read, "
                   "1 new\n")
    assert api_calls(gh) == [
        ("GET", f"{P}/actions/workflows/{WORKFLOW}/runs", {"status": "completed", "per_page": "2", "page": "1"},
         None),
        *artifact_reads(3002, 72, 73), *artifact_reads(3001, 71)]
    assert all(c[0] == "GET" for c in gh.calls())
    assert stored(tmp_path) == ([("3001", "tests/a.py", 1, "flaky"), ("3001", "tests/a.py", 2, "pass"),
                                 ("3002", "tests/b.py", 1, "pass")],
                                [("3002", "pull_request", 1.5, {"diff": 4.25})])

    gh.requests.clear()
    code, out, err = history(capsys, tmp_path, gh.url, "--github-runs", "2", "--workflow", WORKFLOW,
                             "--repository", REPO, "--format", "json")
    assert code == 0
    assert json.loads(out) == {"schema": 1, "read": 3, "added": 0, "plans_read": 1, "plans_added": 0,
                               "runs_read": [3002, 3001], "warnings": []}


def test_one_run_by_its_url(gh, tmp_path, capsys):
    add_run(gh, 3101, "pull_request")
    gh.add_artifact(3101, "ci-policy-plan-2", plan_artifact(3101, scheduled=0.5, skipped={}), artifact_id=81)
    code, out, err = history(capsys, tmp_path, gh.url, "--github-run",
                             f"https://github.com/{REPO}/actions/runs/3101")
    # The artifact of attempt 2 holds a run.json of attempt 1: not this artifact's, skipped.
    cite = f"{REPO}/runs/3101/artifacts/ci-policy-plan-2"
    assert (code, out) == (0, "ci-policy history import: 0 attempt(s) read, 0 new, 0 already in the store\n")
    assert err == (f"{cite}: warning: artifact of run 3101 skipped: 1 problem(s): {cite}/run.json: run.json names "
                   "run 3101 attempt 1, its directories another\n"
                   "    hint: none of it is imported; the run's other artifacts are\n")
    assert api_calls(gh) == artifact_reads(3101, 81)


def test_a_pull_requests_forged_artifacts_are_skipped_each_with_a_warning_and_the_rest_imported(gh, tmp_path,
                                                                                                   capsys):
    add_run(gh, 3201, "pull_request")
    # Records claiming another run (a scheduled one's id): they would stand in for its attempts.
    gh.add_artifact(3201, "ci-policy-timings-a", zip_of({"t.jsonl": record("tests/a.py", 1, "pass", run_id="3001")}),
                    artifact_id=91)
    # A plan whose hours no reader accepts.
    gh.add_artifact(3201, "ci-policy-plan-1", zip_of({
        "plan.json": b'{"schema": 1, "accelerator_hours": {"scheduled_hours": 1e300, "skipped_hours": {}, '
                     b'"scheduled_cost": null, "skipped_cost": null, "stages": []}}',
        "run.json": b'{"run_id": "3201", "run_attempt": 1, "created": "2026-11-02T03:00:00Z"}'}), artifact_id=92)
    # Archives shaped by an attacker (tests/hostile/archives): each skipped as tune skips it.
    for i, name in enumerate(("bomb-ratio.zip", "symlink.zip", "traversal.zip")):
        gh.add_artifact(3201, f"ci-policy-timings-{name}", (HOSTILE / name).read_bytes(), artifact_id=93 + i)
    gh.add_artifact(3201, "ci-policy-timings-good", zip_of({"t.jsonl": record("tests/c.py", 1, "pass",
                                                                             run_id="3201")}), artifact_id=96)
    code, out, err = history(capsys, tmp_path, gh.url, "--github-run", f"{REPO}/3201")
    assert (code, out) == (0, "ci-policy history import: 1 attempt(s) read, 1 new, 0 already in the store\n")
    hint = "    hint: none of it is imported; the run's other artifacts are\n"
    arts = f"{REPO}/runs/3201/artifacts"
    assert err == (
        f"{arts}/ci-policy-timings-bomb-ratio.zip: warning: artifact 'ci-policy-timings-bomb-ratio.zip' of run 3201 "
        "skipped: member 't.jsonl' expands to more than 100 times its 8265 compressed bytes (a zip bomb)\n" + hint
        + f"{arts}/ci-policy-timings-symlink.zip: warning: artifact 'ci-policy-timings-symlink.zip' of run 3201 "
        "skipped: member 't.jsonl' is a symbolic link\n" + hint
        + f"{arts}/ci-policy-plan-1: warning: artifact of run 3201 skipped: 1 problem(s): {arts}/ci-policy-plan-1/"
        "plan.json: accelerator_hours: scheduled_hours: expected a number in [0, 1000000000.0], got 1e+300\n" + hint
        + f"{arts}/ci-policy-timings-a: warning: artifact of run 3201 skipped: 1 problem(s): {arts}/"
        "ci-policy-timings-a: records of run 3001, not of run 3201 they were downloaded from\n" + hint
        + f"{arts}/ci-policy-timings-traversal.zip/../../../tmp/evil.jsonl: warning: left out 1 record(s) with no "
        "start time\n    hint: the test history keeps the attempts of workflow runs (GITHUB_RUN_ID set)\n"
        + f"{arts}/ci-policy-timings-traversal.zip//etc/evil.jsonl: warning: left out 1 record(s) with no "
        "start time\n    hint: the test history keeps the attempts of workflow runs (GITHUB_RUN_ID set)\n"
        + f"{arts}/ci-policy-timings-traversal.zip/..\\..\\evil.jsonl: warning: left out 1 record(s) with no "
        "start time\n    hint: the test history keeps the attempts of workflow runs (GITHUB_RUN_ID set)\n")
    assert stored(tmp_path) == ([("3201", "tests/c.py", 1, "pass")], [])
    assert not (tmp_path / "tmp").exists() and "Traceback" not in err


@pytest.mark.parametrize("args, message", [
    (["--github-runs", "2"], "ci-policy history: error: --workflow: --github-runs and --workflow go together\n"
                             "    hint: e.g. --github-runs 50 --workflow ci.yml\n"),
    (["--github-runs", "2", "--workflow", WORKFLOW],
     "ci-policy history: error: --repository: --github-runs needs OWNER/REPO, got ''\n    hint: pass --repository "
     "OWNER/REPO, or run in GitHub Actions ($GITHUB_REPOSITORY)\n"),
    (["--github-run", "not-a-run"], "ci-policy history: error: --github-run: 'not-a-run' is not OWNER/REPO/RUN_ID or "
                                    "a run URL\n    hint: e.g. org/repo/123456789 or "
                                    "https://github.com/org/repo/actions/runs/123456789\n"),
])
def test_inconsistent_options_are_refused_before_any_request(gh, tmp_path, capsys, args, message):
    code, out, err = history(capsys, tmp_path, gh.url, *args)
    assert (code, out, err) == (2, "", message)
    assert gh.calls() == [] and not (tmp_path / "history.sqlite").exists()


def test_a_missing_token_is_refused_before_any_request(gh, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN")
    code, out, err = history(capsys, tmp_path, gh.url, "--github-run", f"{REPO}/1")
    assert (code, out) == (2, "")
    assert err == ("ci-policy history: error: $GITHUB_TOKEN: is empty: --github-run needs a token\n    hint: set "
                   "GITHUB_TOKEN, or name another variable with --token-env\n")
    assert gh.calls() == []


def test_an_api_error_names_the_run_and_imports_nothing(gh, tmp_path, capsys):
    gh.fail("GET", f"{P}/actions/runs/3301/artifacts", 404, "Not Found")
    code, out, err = history(capsys, tmp_path, gh.url, "--github-run", f"{REPO}/3301")
    assert (code, out) == (1, "")
    assert err == f"GitHub API error 404 while reading run 3301 of {REPO}: Not Found\nci-policy: 1 error\n"
    assert not (tmp_path / "history.sqlite").exists()



def test_an_artifact_listed_over_the_download_cap_is_never_fetched(gh, tmp_path, capsys):
    add_run(gh, 3401, "pull_request")
    gh.add_artifact(3401, "ci-policy-timings-huge", b"never fetched", artifact_id=97)["size_in_bytes"] = 2 ** 30
    code, out, err = history(capsys, tmp_path, gh.url, "--github-run", f"{REPO}/3401")
    assert (code, out) == (0, "ci-policy history import: 0 attempt(s) read, 0 new, 0 already in the store\n")
    assert err == (f"{REPO}/runs/3401/artifacts/ci-policy-timings-huge: warning: artifact 'ci-policy-timings-huge' of "
                   "run 3401 skipped: 1073741824 bytes is over the 268435456-byte cap of one artifact download\n"
                   "    hint: none of it is imported; the run's other artifacts are\n")
    assert api_calls(gh) == artifact_reads(3401)
