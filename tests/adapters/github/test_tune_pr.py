"""`ci-policy tune --github-runs N --workflow FILE --write-estimates F --open-pr`, against the local
GitHub fake plus the git data API (tests/github_git_fake.py), through PyGithub.

The scheduled runs of the default branch are the only evidence read (never a pull_request run,
a run of another branch, or a push run unless asked); the first run creates the branch
`ci-policy/tune-estimates` and the pull request; the next one force-updates the branch and edits
that pull request; a run that changes nothing opens nothing. Requests are asserted exactly.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from github_git_fake import GitFakeGitHub, zip_of

from ci_policy.cli import main

EVIDENCE = Path(__file__).resolve().parents[2] / "data" / "tuning_e2e"
REPO = "acme/minirl"
P = f"/repos/{REPO}"
WORKFLOW = "pr-test.yml"
ESTIMATES = ".github/ci-estimates.json"
EVIDENCE_CSV = ".github/ci-estimates.evidence.csv"
MAIN_SHA = "0" * 40
BRANCH = "ci-policy/tune-estimates"


@pytest.fixture
def token(monkeypatch) -> str:
    value = "ghs_" + secrets.token_hex(18)
    monkeypatch.setenv("GITHUB_TOKEN", value)
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    return value


@pytest.fixture
def gh():
    fake = GitFakeGitHub("acme", "minirl").start()
    yield fake
    fake.stop()


def artifact(run: str) -> bytes:
    return zip_of({p.name: p.read_bytes() for p in sorted((EVIDENCE / run).glob("*.jsonl"))})


def add_runs(gh: GitFakeGitHub) -> None:
    """Oldest first: scheduled runs 1001-1003 of main, between them a PR run, a run of another
    branch and a push run, each with timings that would change the estimates."""
    gh.add_scheduled_run(WORKFLOW, 1001, artifact=artifact("run-1001"))
    gh.add_scheduled_run(WORKFLOW, 2001, event="pull_request", artifact=artifact("run-1004"))
    gh.add_scheduled_run(WORKFLOW, 1002, artifact=artifact("run-1002"))
    gh.add_scheduled_run(WORKFLOW, 2002, branch="feature", artifact=artifact("run-1005"))
    gh.add_scheduled_run(WORKFLOW, 1003, artifact=artifact("run-1003"))
    gh.add_scheduled_run(WORKFLOW, 2003, event="push", artifact=artifact("run-1006"))


def tune(capsys, repo: Path, gh, *args: str) -> tuple[int, str, str]:
    code = main(["tune", "--repo", str(repo), "--api-url", gh.url, "--github-runs", "2", "--workflow", WORKFLOW,
                 *args])
    out, err = capsys.readouterr()
    return code, out, err


def reads_of_run(run_id: int) -> list[tuple]:
    return [("GET", f"{P}/actions/runs/{run_id}/jobs", {"filter": "all", "per_page": "100", "page": "1"}, None),
            ("GET", f"{P}/actions/runs/{run_id}/artifacts", {"per_page": "100", "page": "1"}, None),
            ("GET", f"{P}/actions/artifacts/{run_id + 7}/zip", {}, None)]


def downloads(gh, *runs: int) -> str:
    """What tune prints on stderr (not a terminal) while it downloads these runs: their one timing artifact."""
    return "".join(f"ci-policy tune: run {run}: timing artifact 1/1 'ci-policy-timings-{run}' "
                   f"({len(gh.artifact_zips[run + 7])} bytes)\n" for run in runs)


def api_calls(gh) -> list[tuple]:
    """Every request but the blob-storage downloads the redirects lead to."""
    return [c for c in gh.calls() if not c[1].startswith("/_blob/")]


def pr_requests(gh, tree: str, commit: str, *, first: bool, estimates: str, evidence: str, body: str,
                number: int = 41) -> list[tuple]:
    from github_fake import git_blob_sha

    title = "ci-policy: update est_time estimates"
    message = f"ci-policy tune: update {ESTIMATES} from runs 1003, 1002"
    out = [
        ("GET", f"{P}/git/ref/heads/main", {}, None),
        ("GET", f"{P}/git/commits/{MAIN_SHA}", {}, None),
        ("POST", f"{P}/git/blobs", {}, {"content": estimates, "encoding": "utf-8"}),
        ("POST", f"{P}/git/blobs", {}, {"content": evidence, "encoding": "utf-8"}),
        ("POST", f"{P}/git/trees", {}, {"base_tree": "7" * 40, "tree": [
            {"path": ESTIMATES, "mode": "100644", "type": "blob", "sha": git_blob_sha(estimates.encode())},
            {"path": EVIDENCE_CSV, "mode": "100644", "type": "blob", "sha": git_blob_sha(evidence.encode())}]}),
        ("POST", f"{P}/git/commits", {}, {"message": message, "tree": tree, "parents": [MAIN_SHA]}),
        ("GET", f"{P}/git/ref/heads/{BRANCH}", {}, None),
    ]
    if first:
        out += [("POST", f"{P}/git/refs", {}, {"ref": f"refs/heads/{BRANCH}", "sha": commit}),
                ("GET", f"{P}/pulls", {"state": "open", "head": f"acme:{BRANCH}", "base": "main"}, None),
                ("POST", f"{P}/pulls", {}, {"title": title, "head": BRANCH, "base": "main", "body": body})]
    else:
        out += [("PATCH", f"{P}/git/refs/heads/{BRANCH}", {}, {"sha": commit, "force": True}),
                ("GET", f"{P}/pulls", {"state": "open", "head": f"acme:{BRANCH}", "base": "main"}, None),
                ("PATCH", f"{P}/pulls/{number}", {}, {"title": title, "body": body})]
    return out


def test_first_run_creates_the_branch_and_the_pull_request_second_updates_them(example_repo, gh, token, capsys,
                                                                                 tmp_path):
    add_runs(gh)
    target = example_repo / ESTIMATES
    csv_out = tmp_path / "evidence.csv"
    code, out, err = tune(capsys, example_repo, gh, "--write-estimates", str(target), "--open-pr",
                          "--csv", str(csv_out))
    assert (code, err) == (0, downloads(gh, 1003, 1002))
    assert out.startswith(f"ci-policy tune: 2 completed schedule run(s) of {WORKFLOW} on main: 1003, 1002\n")
    assert out.endswith(f"ci-policy tune: opened pull request #41 https://github.com/{REPO}/pull/41\n")
    estimates, evidence = target.read_text(), csv_out.read_text()
    assert "1001" not in evidence and "2001" not in evidence and "1003" in evidence and "1002" in evidence
    [pull] = gh.open_pulls
    body = pull["body"]
    assert body.startswith("est_time estimates from the timings of runs 1003, 1002.\n\n"
                           f"- `{ESTIMATES}`: ")
    commit = gh.branches[BRANCH]
    tree = gh.commits[commit]["tree"]
    calls = api_calls(gh)
    assert calls == [
        ("GET", P, {}, None),
        ("GET", f"{P}/actions/workflows/{WORKFLOW}/runs",
         {"branch": "main", "event": "schedule", "status": "completed", "per_page": "2", "page": "1"}, None),
        *reads_of_run(1003), *reads_of_run(1002),
        *pr_requests(gh, tree, commit, first=True, estimates=estimates, evidence=evidence, body=body)]
    assert all(c[0] == "GET" for c in gh.calls() if c[1].startswith("/_blob/"))
    assert gh.commits[commit]["parents"] == [MAIN_SHA]
    assert (gh.file_at(BRANCH, ESTIMATES), gh.file_at(BRANCH, EVIDENCE_CSV)) == (estimates, evidence)
    assert gh.branches["main"] == MAIN_SHA  # the default branch is never written

    # A week later, the pull request is not merged yet: the job's fresh checkout of main has no
    # estimates file; the same branch and pull request are updated, not a second one opened.
    target.unlink()
    gh.requests.clear()
    code, out, err = tune(capsys, example_repo, gh, "--write-estimates", str(target), "--open-pr",
                          "--csv", str(csv_out))
    assert (code, err) == (0, downloads(gh, 1003, 1002))
    assert out.endswith(f"ci-policy tune: updated pull request #41 https://github.com/{REPO}/pull/41\n")
    assert len(gh.open_pulls) == 1
    assert api_calls(gh)[-10:] == pr_requests(gh, tree, commit, first=False, estimates=estimates, evidence=evidence,
                                              body=body)


def test_nothing_changed_opens_nothing(example_repo, gh, token, capsys):
    add_runs(gh)
    target = example_repo / ESTIMATES
    assert tune(capsys, example_repo, gh, "--write-estimates", str(target))[0] == 0
    gh.requests.clear()
    # The estimates of these runs are already on the default branch (the pull request was merged).
    code, out, err = tune(capsys, example_repo, gh, "--write-estimates", str(target), "--open-pr")
    assert (code, err) == (0, downloads(gh, 1003, 1002))
    assert out.endswith("ci-policy tune: the estimates file did not change; no pull request\n")
    assert [c for c in gh.calls() if c[0] != "GET"] == []
    assert [c[1] for c in api_calls(gh)][:2] == [P, f"{P}/actions/workflows/{WORKFLOW}/runs"]
    assert not any("/git/" in c[1] or "/pulls" in c[1] for c in gh.calls())


def test_push_runs_only_when_asked(example_repo, gh, token, capsys):
    add_runs(gh)
    code, out, _err = tune(capsys, example_repo, gh, "--include-push", "--branch", "main")
    assert code == 0
    assert out.startswith(f"ci-policy tune: 2 completed schedule or push run(s) of {WORKFLOW} on main: 2003, 1003\n")
    # The default branch first: --branch names it, so its runs may be read.
    assert api_calls(gh)[:3] == [
        ("GET", P, {}, None),
        ("GET", f"{P}/actions/workflows/{WORKFLOW}/runs",
         {"branch": "main", "event": "schedule", "status": "completed", "per_page": "2", "page": "1"}, None),
        ("GET", f"{P}/actions/workflows/{WORKFLOW}/runs",
         {"branch": "main", "event": "push", "status": "completed", "per_page": "2", "page": "1"}, None)]
    assert {c[1] for c in gh.calls()} >= {f"{P}/actions/runs/2003/jobs", f"{P}/actions/runs/1003/jobs"}
    assert not any(f"/runs/{r}/" in c[1] for c in gh.calls() for r in (1001, 1002, 2001, 2002))


def test_a_pull_request_run_is_never_read_even_if_the_api_lists_it(example_repo, gh, token, capsys):
    gh.add_scheduled_run(WORKFLOW, 2001, event="pull_request", artifact=artifact("run-1004"))
    gh.add_scheduled_run(WORKFLOW, 1001, artifact=artifact("run-1001"))
    # A misbehaving API: the event filter ignored.
    real = gh.api_runs

    def unfiltered(workflow, *, query, body):
        return real(workflow, query={k: v for k, v in query.items() if k != "event"}, body=body)

    gh.api_runs = unfiltered
    code, out, _err = tune(capsys, example_repo, gh)
    assert code == 0
    assert out.startswith(f"ci-policy tune: 1 completed schedule run(s) of {WORKFLOW} on main: 1001\n")
    assert not any("/runs/2001/" in c[1] for c in gh.calls())


@pytest.mark.parametrize(("args", "stderr"), [
    (["--open-pr"], "ci-policy tune: error: --open-pr: needs --write-estimates FILE (the estimates file the pull "
                    "request changes)\n"),
    (["--write-estimates", "/elsewhere/e.json", "--open-pr"],
     "ci-policy tune: error: --write-estimates: /elsewhere/e.json is outside the checkout {repo}; the pull request "
     "changes a file of the repository\n"),
])
def test_open_pr_usage_errors(example_repo, gh, token, capsys, args, stderr):
    code, out, err = tune(capsys, example_repo, gh, *args)
    assert (code, out, err) == (2, "", stderr.format(repo=example_repo))
    assert gh.requests == []


def test_github_runs_usage_errors(example_repo, gh, token, capsys, monkeypatch):
    def run(*args: str) -> tuple[int, str, str]:
        code = main(["tune", "--repo", str(example_repo), "--api-url", gh.url, *args])
        out, err = capsys.readouterr()
        return code, out, err

    assert run("--github-runs", "3") == (2, "", "ci-policy tune: error: --workflow: --github-runs and --workflow go "
                                                "together\n    hint: e.g. --github-runs 10 --workflow pr-test.yml\n")
    assert run("--from", "x", "--workflow", WORKFLOW) == (
        2, "", "ci-policy tune: error: --github-runs: --github-runs and --workflow go together\n"
               "    hint: e.g. --github-runs 10 --workflow pr-test.yml\n")
    assert run("--from", "x", "--include-push") == (
        2, "", "ci-policy tune: error: --include-push: only applies to --github-runs\n")
    monkeypatch.delenv("GITHUB_REPOSITORY")
    assert run("--github-runs", "3", "--workflow", WORKFLOW) == (
        2, "", "ci-policy tune: error: --repository: --github-runs needs OWNER/REPO, got ''\n"
               "    hint: pass --repository OWNER/REPO, or run in GitHub Actions ($GITHUB_REPOSITORY)\n")
    monkeypatch.delenv("GITHUB_TOKEN")
    assert run("--github-runs", "3", "--workflow", WORKFLOW, "--repository", REPO) == (
        2, "", "ci-policy tune: error: $GITHUB_TOKEN: is empty: --github-runs needs a token\n"
               "    hint: set GITHUB_TOKEN, or name another variable with --token-env\n")
    assert gh.requests == []


def test_more_than_a_page_of_runs(example_repo, gh, token, capsys):
    for run_id in range(3001, 3104):  # 103 scheduled runs, no evidence in them
        gh.add_scheduled_run(WORKFLOW, run_id)
    gh.max_requests = 1000
    code = main(["tune", "--repo", str(example_repo), "--api-url", gh.url, "--github-runs", "101", "--workflow",
                 WORKFLOW, "--from", str(EVIDENCE / "run-1001")])
    out, _err = capsys.readouterr()
    assert code == 0
    assert out.startswith(f"ci-policy tune: 101 completed schedule run(s) of {WORKFLOW} on main: 3103, 3102, ")
    lists = [c for c in gh.calls() if c[1].endswith(f"/workflows/{WORKFLOW}/runs")]
    assert [c[2]["page"] for c in lists] == ["1", "2"]
    assert {c[2]["per_page"] for c in lists} == {"100"}
    read = {int(c[1].split("/")[-2]) for c in gh.calls() if c[1].endswith("/jobs")}
    assert read == set(range(3003, 3104))
