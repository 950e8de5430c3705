"""Hostile corpus, secrets and evidence (issue 14, findings 3, 4 and the tune half of 9).

Each case runs a program of `tests/hostile/secrets/` as a PR's test file under the real
runner (the installed console script), or a hostile timing file or run through `ci-policy
tune`, and asserts its exact outcome: exit code, output lines, the records on disk, the API
requests sent.

- finding 3: a test sees neither a secret of the runner's environment nor one on any
  ancestor's command line; `--store` refuses a URL with a password, `--store-file` carries it.
- finding 4: records a test forges in, or swaps for, the timing file are gone when the runner
  ends; a reported `infra` buys no retry; `tune --github-run` reads only trusted runs.
- finding 9: a torn last line drops that line only, with a warning naming the file and line.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest
from github_fake import FakeGitHub
from helpers import console_script, root_warning

from ci_policy.cli.main import main

CORPUS = Path(__file__).parent / "secrets"
SECRET = "hunter2-s3cret-value"

CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: gpu, backend: cuda, runs_on: [h200], timeout_per_file: 20}
runner: {kill_grace: 1}
"""
PLAN_ARGS = ["--event", "workflow_dispatch", "--label", "run-ci-megatron"]

# The runner's environment: the secrets a CI job holds, and the variables a test needs.
RUNNER_ENV = {
    "GITHUB_TOKEN": SECRET,
    "ACTIONS_RUNTIME_TOKEN": SECRET,
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": SECRET,
    "ACTIONS_ID_TOKEN_REQUEST_URL": f"https://token.example/?s={SECRET}",
    "ACTIONS_CACHE_URL": f"https://cache.example/{SECRET}/",
    "CI_POLICY_DATABASE_URL": f"postgresql://ci:{SECRET}@127.0.0.1:1/metrics",
    "HF_TOKEN": SECRET,
    "AWS_SECRET_ACCESS_KEY": SECRET,
    "DB_PASSWORD": SECRET,
    "PGPASSWORD": SECRET,
    "GITHUB_ENV": "/nonexistent/github-env",
    "NCCL_DEBUG": "INFO",
    "CUDA_VISIBLE_DEVICES": "0,1",
    "GITHUB_SHA": "a" * 40,
    "SOME_OTHER_VARIABLE": "not on the allowlist",
    "LC_ALL": "C.UTF-8",
}
# What the runner adds for each attempt.
RUNNER_SET = {"CI_POLICY_ATTEMPT", "CI_POLICY_FAILURE_KIND_FILE", "CI_POLICY_SHARD", "CI_POLICY_STAGE",
              "CI_POLICY_RECORD_DIR", "CI_POLICY_CAPTURE", "CI_POLICY_ATTEMPT_ID"}


def runner_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    import os

    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), **RUNNER_ENV, **extra}


# The variables of RUNNER_ENV that hold secrets, as the root warning names them.
RUNNER_SECRETS = ("ACTIONS_CACHE_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL",
                  "ACTIONS_RUNTIME_TOKEN", "AWS_SECRET_ACCESS_KEY", "CI_POLICY_DATABASE_URL", "DB_PASSWORD",
                  "GITHUB_TOKEN", "HF_TOKEN", "PGPASSWORD")


def repo_with(make_repo, files: dict[str, str], config: str = CONFIG) -> Path:
    return make_repo({path: (CORPUS / name).read_text(encoding="utf-8") for path, name in files.items()},
                     config=config)


def ci_policy(repo: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run([console_script(), *args], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


def run(repo: Path, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return ci_policy(repo, "run", "--stage", "gpu", *PLAN_ARGS, "--timings-out", str(tmp_path / "t.jsonl"),
                     "--records-out", str(tmp_path / "records"), *args, env=env or runner_env(tmp_path))


def probe(proc: subprocess.CompletedProcess) -> dict:
    [line] = [line for line in proc.stdout.splitlines() if line.startswith("PROBE ")]
    return json.loads(line[len("PROBE "):])


def records(path: Path) -> list[tuple[str, str, int]]:
    return [(r["file"], r["status"], r["attempt"]) for r in map(json.loads, path.read_text().splitlines())]


# -- finding 3: the test's environment and its ancestors' command lines --------------------------

ENV_CASES = [
    # (id, the runner.env configuration, the runner's extra variables, what the test sees besides RUNNER_SET)
    ("finding 3: the default allowlist", "", {},
     {"PATH", "HOME", "LC_ALL", "NCCL_DEBUG", "CUDA_VISIBLE_DEVICES", "GITHUB_SHA"}),
    ("finding 3: allow everything; the secrets are still dropped", "  env: {allow: ['*']}\n", {},
     {"PATH", "HOME", "LC_ALL", "NCCL_DEBUG", "CUDA_VISIBLE_DEVICES", "GITHUB_SHA", "SOME_OTHER_VARIABLE"}),
    ("finding 3: allowing a token by name does not pass it",
     "  env: {allow: [PATH, GITHUB_TOKEN, HF_TOKEN, CI_POLICY_DATABASE_URL, 'ACTIONS_*']}\n", {},
     # Without LC_ALL the test's own Python sets LC_CTYPE (PEP 538 locale coercion).
     {"PATH", "LC_CTYPE"}),
    ("finding 3: drop takes variables out of the allowlist", "  env: {drop: ['NCCL_*', GITHUB_SHA]}\n", {},
     {"PATH", "HOME", "LC_ALL", "CUDA_VISIBLE_DEVICES"}),
]


@pytest.mark.parametrize("runner_config, extra, seen", [c[1:] for c in ENV_CASES], ids=[c[0] for c in ENV_CASES])
def test_a_test_sees_no_secret_in_its_environment_or_on_a_command_line(make_repo, tmp_path, runner_config, extra,
                                                                        seen):
    config = CONFIG.replace("runner: {kill_grace: 1}\n", "runner:\n  kill_grace: 1\n" + runner_config)
    repo = repo_with(make_repo, {"tests/gpu/test_probe.py": "probe_env_cmdline.py"}, config)
    proc = run(repo, tmp_path, env=runner_env(tmp_path, **extra))
    assert (proc.returncode, proc.stderr) == (0, root_warning(*RUNNER_SECRETS)), proc.stdout
    found = probe(proc)
    assert set(found["env"]) == seen | RUNNER_SET
    # The probe printed its whole environment, every ancestor's command line and environment block.
    assert SECRET not in proc.stdout
    # The runner's own command line was read (the interpreter, then the script).
    assert found["cmdlines"][0][1:5] == [console_script(), "run", "--stage", "gpu"]
    # Issue 32, finding 7: a test running as root reads the runner's environment block although the
    # runner is not dumpable; the runner re-executed itself without its secrets, so the block holds none.
    runner_block = found["environs"][0]
    if os.geteuid() == 0:
        assert "NCCL_DEBUG=INFO" in runner_block.split("\0")  # it was read: the check above is not vacuous
        assert not any(name + "=" in runner_block for name in RUNNER_SECRETS)
    else:
        assert runner_block == "unreadable: Permission denied"


def test_the_store_url_reaches_the_runner_in_a_file_never_on_its_command_line(make_repo, tmp_path):
    # finding 3: the password of the store URL was read from /proc/<ppid>/cmdline.
    repo = repo_with(make_repo, {"tests/gpu/test_probe.py": "probe_env_cmdline.py"})
    store_file = tmp_path / "store-url"
    store_file.write_text(f"postgresql://ci:{SECRET}@127.0.0.1:1/metrics\n", encoding="utf-8")
    proc = run(repo, tmp_path, "--store-file", str(store_file))
    assert (proc.returncode, proc.stderr) == (
        0, root_warning(*RUNNER_SECRETS, store_file=str(store_file))), proc.stdout
    found = probe(proc)
    assert found["cmdlines"][0][-3:] == ["--store-file", str(store_file), ""]  # NUL-terminated arguments
    assert SECRET not in proc.stdout


def system_python() -> str:
    """An interpreter every user may run (the test's one may live under root's home)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        mode = os.stat(candidate).st_mode if os.path.exists(candidate) else 0
        if mode & 0o001:
            return candidate
    pytest.fail("no interpreter every user may run: /usr/bin/python3 or /usr/local/bin/python3")


def test_a_root_runner_runs_the_tests_as_runner_user_who_cannot_read_its_secrets(make_repo, tmp_path):
    # finding 7: a test running as root read the store URL from /proc/<runner>/environ although the
    # runner was not dumpable, and a same-user test read the --store-file. With runner.user, a root
    # runner starts each test as that user: /proc of the runner, its memory and the file are closed.
    import pwd
    import shutil
    import tempfile

    nobody = pwd.getpwnam("nobody")
    shared = Path(tempfile.mkdtemp(prefix="ci-policy-shared-"))  # a checkout the test's user can read
    try:
        shared.chmod(0o755)
        store_file = tmp_path / "store-url"
        store_file.write_text(f"postgresql://ci:{SECRET}@127.0.0.1:1/metrics\n", encoding="utf-8")
        store_file.chmod(0o600)
        probe_text = (CORPUS / "probe_identity.py").read_text(encoding="utf-8").replace("@STORE_FILE@",
                                                                                       str(store_file))
        config = CONFIG.replace("runner: {kill_grace: 1}\n", "runner: {kill_grace: 1, user: nobody}\n")
        repo = shutil.copytree(make_repo({"tests/gpu/test_probe.py": probe_text}, config=config), shared / "repo")
        proc = run(repo, tmp_path, "--store-file", str(store_file), "--python", system_python())
        found = probe(proc)
        assert SECRET not in proc.stdout
        if os.geteuid() == 0:
            # Without runner.user the same test, as root, reads the file and the runner's memory opens.
            (repo / ".github" / "ci-policy.yml").write_text(CONFIG)
            as_root = probe(run(repo, tmp_path, "--store-file", str(store_file), "--python", system_python()))
            assert (as_root["uid"], as_root["store_file"]) == (
                0, f"postgresql://ci:{SECRET}@127.0.0.1:1/metrics\n")
            assert as_root["mem"] == "unreadable: Input/output error"  # opened; address 0 is not mapped
            (repo / ".github" / "ci-policy.yml").write_text(config)
            assert (proc.returncode, proc.stderr) == (0, ""), proc.stdout
            assert found == {"uid": nobody.pw_uid, "gid": nobody.pw_gid, "groups": [], "home": nobody.pw_dir,
                             "user": "nobody", "environ": "unreadable: Permission denied",
                             "mem": "unreadable: Permission denied", "store_file": "unreadable: Permission denied"}
        else:  # a runner that is not root cannot switch users: it says so once and runs the tests as itself
            assert (proc.returncode, proc.stderr) == (0, (
                f"ci-policy run: warning: runner.user is 'nobody', but ci-policy runs as user id {os.geteuid()}, "
                f"not root, so it cannot switch: the tests run as user id {os.geteuid()}\n")), proc.stdout
            assert found["uid"] == os.geteuid()
    finally:
        shutil.rmtree(shared)


def test_a_runner_user_this_machine_does_not_have_is_a_usage_error_before_any_test_runs(make_repo, tmp_path):
    config = CONFIG.replace("runner: {kill_grace: 1}\n", "runner: {kill_grace: 1, user: ci-no-such-user}\n")
    repo = repo_with(make_repo, {"tests/gpu/test_probe.py": "probe_env_cmdline.py"}, config)
    proc = run(repo, tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", (
        "ci-policy run: error: runner.user: no user 'ci-no-such-user' on this machine\n"
        "    hint: create it (e.g. useradd --no-create-home ci-tests), or name another user\n"))


@pytest.mark.parametrize("value, why", [
    ("x", "'x' is not a file descriptor"),
    ("99", "descriptor 99 cannot be read (Bad file descriptor)"),
    ("0", "descriptor 0 does not hold the secrets ci-policy run hands over"),  # stdin: /dev/null
])
def test_a_forged_secrets_descriptor_is_a_usage_error(make_repo, tmp_path, value, why):
    repo = repo_with(make_repo, {"tests/gpu/test_probe.py": "probe_env_cmdline.py"})
    proc = run(repo, tmp_path, env=runner_env(tmp_path, CI_POLICY_SECRETS_FD=value))
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", (
        f"ci-policy run: error: $CI_POLICY_SECRETS_FD: {why}; it is set only by ci-policy run itself\n"
        "    hint: unset CI_POLICY_SECRETS_FD\n"))


STORE_HINT = "    hint: pass the URL as $CI_POLICY_DATABASE_URL or in a file with --store-file FILE\n"
PASSWORD_URLS = [
    # (id, the --store value)
    ("finding 3: a password in the user info", f"postgresql://ci:{SECRET}@db.example/metrics"),
    ("finding 3: a password parameter", f"postgresql://ci@db.example/metrics?sslmode=require&password={SECRET}"),
    ("finding 3: a password in a URL's user info and a port", f"postgres://ci:{SECRET}@db.example:5432/metrics"),
]
# A libpq keyword string or a sqlite URL with user info is no store location at all: that error
# comes first, also without echoing the value (tests/hostile/test_store.py, finding 7).


@pytest.mark.parametrize("command", ["run", "gate"])
@pytest.mark.parametrize("url", [c[1] for c in PASSWORD_URLS], ids=[c[0] for c in PASSWORD_URLS])
def test_a_store_url_with_a_password_on_the_command_line_is_refused_without_echoing_it(make_repo, tmp_path,
                                                                                      command, url):
    repo = repo_with(make_repo, {"tests/gpu/test_probe.py": "probe_env_cmdline.py"})
    args = (["run", "--stage", "gpu", *PLAN_ARGS] if command == "run"
            else ["gate", "--file", "tests/gpu/test_probe.py", "--record", "r.json"])
    proc = ci_policy(repo, *args, "--store", url, env=runner_env(tmp_path))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"ci-policy {command}: error: --store: the store URL holds a password, and a command line is "
               "readable by every process of the machine (a test reads it from /proc)\n" + STORE_HINT)
    assert not (repo / ".ci-policy").exists()


STORE_FILES = [
    # (id, the file's content (None: no file), the error)
    ("finding 3: a missing store file", None, "cannot read {f}: No such file or directory",
     "write the store URL on the first line of the file"),
    ("finding 3: an empty store file", "\n\n", "{f} must hold exactly one store URL, found 0 non-empty lines",
     "write the store URL on one line"),
    ("finding 3: two URLs in a store file", f"postgresql://ci:{SECRET}@a/m\npostgresql://ci:{SECRET}@b/m\n",
     "{f} must hold exactly one store URL, found 2 non-empty lines", "write the store URL on one line"),
]


@pytest.mark.parametrize("content, message, hint", [c[1:] for c in STORE_FILES], ids=[c[0] for c in STORE_FILES])
def test_a_bad_store_file_is_a_usage_error_that_never_shows_its_content(make_repo, tmp_path, content, message, hint):
    repo = repo_with(make_repo, {"tests/gpu/test_probe.py": "probe_env_cmdline.py"})
    store_file = tmp_path / "store-url"
    if content is not None:
        store_file.write_text(content, encoding="utf-8")
    proc = run(repo, tmp_path, "--store-file", str(store_file))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"ci-policy run: error: --store-file: {message.format(f=store_file)}\n    hint: {hint}\n")


def test_store_and_store_file_are_exclusive(make_repo, tmp_path):
    repo = repo_with(make_repo, {"tests/gpu/test_probe.py": "probe_env_cmdline.py"})
    proc = run(repo, tmp_path, "--store", "x.sqlite", "--store-file", "f")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == (
        "ci-policy run: error: argument --store-file: not allowed with argument --store")


def test_the_runner_cannot_be_read_through_proc_by_an_unprivileged_test():
    # finding 3: /proc/<ppid>/environ still holds the runner's secrets; a non-dumpable runner hides it.
    code = ("from ci_policy.adapters.runner.environment import dumpable, hide_from_tests\n"
            "before = dumpable(); done = hide_from_tests(); print(before, done, dumpable())")
    proc = subprocess.run([str(Path(console_script()).with_name("python")), "-c", code], capture_output=True,
                          text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "True True False\n", "")


# -- finding 4: timing records a test forges ------------------------------------------------------

def test_records_a_test_appends_to_the_timing_file_are_removed(make_repo, tmp_path):
    repo = repo_with(make_repo, {"tests/gpu/test_a_forger.py": "forge_timings.py",
                                 "tests/gpu/test_b_probe.py": "probe_env_cmdline.py"})
    timings = tmp_path / "t.jsonl"
    proc = run(repo, tmp_path)
    assert (proc.returncode, proc.stderr) == (0, root_warning(*RUNNER_SECRETS)), proc.stdout
    [forged] = [line for line in proc.stdout.splitlines() if line.startswith("FORGED ")]
    assert forged == f"FORGED {timings} .ci-policy/timings.jsonl"  # no $RUNNER_TEMP in its environment
    assert records(timings) == [("tests/gpu/test_a_forger.py", "pass", 1), ("tests/gpu/test_b_probe.py", "pass", 1)]
    assert (f"ci-policy: warning: the timing records {timings} were changed by something other than the runner "
            "(a test?) 1 time(s); the runner's records were restored") in proc.stdout.splitlines()
    # The forger wrote its records into the checkout too: nothing reads them there.
    assert (repo / ".ci-policy" / "timings.jsonl").read_text().count("\n") == 150


def test_a_timing_file_a_test_replaces_is_restored(make_repo, tmp_path):
    repo = repo_with(make_repo, {"tests/gpu/test_a_probe.py": "probe_env_cmdline.py",
                                 "tests/gpu/test_b_replacer.py": "replace_timings.py"})
    timings = tmp_path / "t.jsonl"
    timings.write_text('{"earlier": "run"}\n', encoding="utf-8")  # an earlier run's lines are kept
    proc = run(repo, tmp_path)
    assert (proc.returncode, proc.stderr) == (0, root_warning(*RUNNER_SECRETS)), proc.stdout
    lines = timings.read_text().splitlines()
    assert lines[0] == '{"earlier": "run"}'
    assert [(r["file"], r["status"]) for r in map(json.loads, lines[1:])] == [
        ("tests/gpu/test_a_probe.py", "pass"), ("tests/gpu/test_b_replacer.py", "pass")]
    assert (f"ci-policy: warning: the timing records {timings} were changed by something other than the runner "
            "(a test?) 1 time(s); the runner's records were restored") in proc.stdout.splitlines()


def test_a_timings_file_inside_the_checkout_is_refused(make_repo, tmp_path):
    repo = repo_with(make_repo, {"tests/gpu/test_probe.py": "probe_env_cmdline.py"})
    proc = ci_policy(repo, "run", "--stage", "gpu", *PLAN_ARGS, "--timings-out", "out/t.jsonl",
                     env=runner_env(tmp_path))
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"ci-policy run: error: --timings-out: out/t.jsonl is inside the checkout {Path('.')}, where the "
               "tests can write; the timing records are evidence for `ci-policy tune`\n"
               "    hint: write them outside the checkout, e.g. $RUNNER_TEMP/ci-policy-timings.jsonl\n")


KINDS = [
    # (id, program, --max-attempts, attempts made, exit code, the verdict line)
    ("finding 4: a reported infra failure buys no retry", "report_infra.py", 3, 1, 1,
     "      unknown: failure not classified as retriable (the test reported an infra failure, which alone never "
     "earns a retry); not retried"),
    ("finding 4: a reported code failure stops an infra retry", "report_code.py", 3, 1, 1,
     "      code: the test reported a code failure; not retried"),
]


@pytest.mark.parametrize("program, max_attempts, made, rc, verdict", [c[1:] for c in KINDS],
                         ids=[c[0] for c in KINDS])
def test_a_reported_failure_kind_never_grants_a_retry(make_repo, tmp_path, program, max_attempts, made, rc, verdict):
    repo = repo_with(make_repo, {"tests/gpu/test_kind.py": program})
    proc = run(repo, tmp_path, "--max-attempts", str(max_attempts))
    assert (proc.returncode, proc.stderr) == (rc, root_warning(*RUNNER_SECRETS))
    assert verdict in proc.stdout.splitlines()
    assert records(tmp_path / "t.jsonl") == [("tests/gpu/test_kind.py", "fail", n) for n in range(1, made + 1)]


# -- finding 4: tune reads only runs it can trust ---------------------------------------------------

TRUST = [
    # (id, run metadata file, trusted, the CSV origin)
    ("finding 4: a scheduled run of the default branch", "run-schedule-main.json", True, "github schedule on main"),
    ("finding 4: a push to the default branch", "run-push-main.json", True, "github push on main"),
    ("finding 4: a pull request run, even from a branch named main", "run-pull-request.json", False,
     "github pull_request on main (untrusted)"),
    ("finding 4: a push to another branch", "run-push-feature.json", False, "github push on feature (untrusted)"),
    ("finding 4: a dispatched run", "run-dispatch-main.json", False, "github workflow_dispatch on main (untrusted)"),
]


@pytest.fixture
def gh():
    fake = FakeGitHub("acme", "minirl").start()
    yield fake
    fake.stop()


def add_corpus_run(gh: FakeGitHub, name: str, member: str = "run-artifact-timings.jsonl") -> dict:
    meta = json.loads((CORPUS / name).read_text(encoding="utf-8"))
    meta["branch"] = meta["head_branch"]  # the field the fake's `branch` filter matches
    gh.runs.setdefault("pr-test.yml", []).append(meta)
    gh.run_jobs.setdefault(meta["id"], [])
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("timings.jsonl", (CORPUS / member).read_text(encoding="utf-8"))
    gh.add_artifact(meta["id"], "ci-policy-timings-stage-b-1-gpu-h200-0", archive.getvalue(),
                    artifact_id=meta["id"] + 1)
    return meta


def downloaded(gh: FakeGitHub, meta: dict) -> str:
    """tune's line on stderr (not a terminal) for the one timing artifact of the corpus run."""
    size = len(gh.artifact_zips[meta["id"] + 1])
    return (f"ci-policy tune: run {meta['id']}: timing artifact 1/1 'ci-policy-timings-stage-b-1-gpu-h200-0' "
            f"({size} bytes)\n")


def requests(gh: FakeGitHub) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in gh.requests if not r.path.startswith("/_blob/")]


@pytest.mark.parametrize("name, trusted, origin", [c[1:] for c in TRUST], ids=[c[0] for c in TRUST])
@pytest.mark.parametrize("allow", [False, True], ids=["default", "allow-untrusted-runs"])
def test_tune_reads_a_github_run_only_when_it_can_trust_it(gh, example_repo, tmp_path, capsys, monkeypatch, name,
                                                           trusted, origin, allow):
    monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
    meta = add_corpus_run(gh, name)
    out = tmp_path / "evidence.csv"
    rc = main(["tune", "--repo", str(example_repo), "--github-run", f"acme/minirl/{meta['id']}", "--api-url", gh.url,
               "--csv", str(out), *(["--allow-untrusted-runs"] if allow else [])])
    stdout, stderr = capsys.readouterr()
    checks = [("GET", "/repos/acme/minirl"), ("GET", f"/repos/acme/minirl/actions/runs/{meta['id']}")]
    if trusted or allow:
        assert (rc, stderr) == (0, downloaded(gh, meta))
        assert requests(gh) == [*checks, ("GET", f"/repos/acme/minirl/actions/runs/{meta['id']}/jobs"),
                                ("GET", f"/repos/acme/minirl/actions/runs/{meta['id']}/artifacts"),
                                ("GET", f"/repos/acme/minirl/actions/artifacts/{meta['id'] + 1}/zip")]
        rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
        assert [(r["test_file"], r["elapsed_s"], r["origin"]) for r in rows] == [
            ("tests/e2e/test_fsdp_grpo.py", "30.5", origin)]
        return
    assert (rc, stdout) == (1, "")
    assert stderr == (
        f"acme/minirl/{meta['id']}: run {meta['id']} of acme/minirl is a {meta['event']} run on "
        f"{meta['head_branch']}, not a schedule or push run on the default branch main: its tests could have "
        "written the timings it reports\n"
        "    hint: read scheduled runs (--github-runs N --workflow FILE), or pass --allow-untrusted-runs to read "
        "this one anyway\nci-policy: 1 error\n")
    assert requests(gh) == checks  # nothing of the run was downloaded
    assert not out.exists()


@pytest.mark.parametrize("allow", [False, True], ids=["default", "allow-untrusted-runs"])
def test_tune_reads_the_runs_of_another_branch_only_when_told(gh, example_repo, tmp_path, capsys, monkeypatch, allow):
    # finding 4: --github-runs --branch B reads the scheduled runs of a branch nobody reviewed.
    monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
    meta = add_corpus_run(gh, "run-push-feature.json")
    meta["event"] = "schedule"
    out = tmp_path / "evidence.csv"
    rc = main(["tune", "--repo", str(example_repo), "--github-runs", "1", "--workflow", "pr-test.yml", "--branch",
               "feature", "--repository", "acme/minirl", "--api-url", gh.url, "--csv", str(out),
               *(["--allow-untrusted-runs"] if allow else [])])
    stdout, stderr = capsys.readouterr()
    if not allow:
        assert (rc, stdout, stderr) == (
            2, "", "ci-policy tune: error: --branch: feature is not the default branch main: its runs ran code "
                   "nobody reviewed, whose tests could have written the timings they report\n"
                   "    hint: read the default branch's runs (leave out --branch), or pass --allow-untrusted-runs to "
                   "read these anyway\n")
        assert requests(gh) == [("GET", "/repos/acme/minirl")]
        return
    assert (rc, stderr) == (0, downloaded(gh, meta))
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert [(r["test_file"], r["origin"]) for r in rows] == [
        ("tests/e2e/test_fsdp_grpo.py", "github schedule on feature (untrusted)")]


def test_allow_untrusted_runs_only_applies_to_github_run(example_repo, capsys):
    rc = main(["tune", "--repo", str(example_repo), "--from", str(CORPUS / "torn-final-line.jsonl"),
               "--allow-untrusted-runs"])
    assert (rc, *capsys.readouterr()) == (2, "", "ci-policy tune: error: --allow-untrusted-runs: only applies to "
                                                 "--github-run and --github-runs\n")


def test_local_evidence_says_it_is_local(example_repo, tmp_path, capsys):
    out = tmp_path / "evidence.csv"
    rc = main(["tune", "--repo", str(example_repo), "--from", str(CORPUS / "no-final-newline.jsonl"), "--csv",
               str(out)])
    capsys.readouterr()
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert [(r["test_file"], r["source"], r["line"], r["origin"]) for r in rows] == [
        ("tests/e2e/test_fsdp_grpo.py", str(CORPUS / "no-final-newline.jsonl"), "1", "local"),
        ("tests/e2e/test_megatron_sft.py", str(CORPUS / "no-final-newline.jsonl"), "2", "local")]


# -- finding 9 (tune): a torn last line ----------------------------------------------------------------

TORN = [
    # (id, file, exit code, samples used per file, stderr)
    ("finding 9: a torn last line after two complete records", "torn-final-line.jsonl", 0,
     {"tests/e2e/test_fsdp_grpo.py": "1", "tests/e2e/test_megatron_sft.py": "1"},
     "{f}:3: warning: the last line has no newline and is not a valid record (not valid JSON: Unterminated "
     "string starting at (column 57)): a torn write; dropped 1 line, used the 2 complete record(s) before it\n"
     "    hint: the runner was stopped while writing it; the records before it are complete\n"),
    ("finding 9: a file that is only a torn line", "torn-only-line.jsonl", 0, {},
     "{f}:1: warning: the last line has no newline and is not a valid record (not valid JSON: Unterminated "
     "string starting at (column 23)): a torn write; dropped 1 line, used the 0 complete record(s) before it\n"
     "    hint: the runner was stopped while writing it; the records before it are complete\n"),
    ("finding 9: a complete last record without a newline is used", "no-final-newline.jsonl", 0,
     {"tests/e2e/test_fsdp_grpo.py": "1", "tests/e2e/test_megatron_sft.py": "1"}, ""),
    ("finding 9: a broken line before the last is still an error", "broken-middle-line.jsonl", 1, None,
     "{f}:2: not valid JSON: Unterminated string starting at (column 57)\n"
     "    hint: each line of a timing-records file is one JSON object written by `ci-policy run`\n"
     "ci-policy: 1 error\n"),
]


@pytest.mark.parametrize("name, rc, samples, stderr", [c[1:] for c in TORN], ids=[c[0] for c in TORN])
def test_a_torn_last_line_drops_that_line_only(example_repo, capsys, name, rc, samples, stderr):
    path = CORPUS / name
    code = main(["tune", "--repo", str(example_repo), "--from", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert (code, err) == (rc, stderr.format(f=path))
    if samples is None:
        assert out == ""
        return
    used = {p["file"]: str(len(p["samples"])) for p in json.loads(out)["proposals"] if p["samples"]}
    assert used == samples


def test_a_torn_last_line_of_a_downloaded_timing_file_drops_that_line_only(gh, example_repo, tmp_path, capsys,
                                                                          monkeypatch):
    # finding 9: the runner was killed mid-write, and the job uploaded its timing file anyway.
    monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
    meta = add_corpus_run(gh, "run-schedule-main.json", "torn-final-line.jsonl")
    out = tmp_path / "evidence.csv"
    rc = main(["tune", "--repo", str(example_repo), "--github-run", f"acme/minirl/{meta['id']}", "--api-url", gh.url,
               "--csv", str(out)])
    _stdout, stderr = capsys.readouterr()
    member = f"acme/minirl/runs/{meta['id']}/artifacts/ci-policy-timings-stage-b-1-gpu-h200-0/timings.jsonl"
    assert (rc, stderr) == (0, downloaded(gh, meta) + f"{member}:3: warning: the last line has no newline and is "
                               "not a valid record (not valid JSON: Unterminated string starting at (column 57)): "
                               "a torn write; dropped 1 line, used the 2 complete record(s) before it\n"
                               "    hint: the runner was stopped while writing it; the records before it are "
                               "complete\n")
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert [(r["test_file"], r["elapsed_s"], r["source"], r["line"]) for r in rows] == [
        ("tests/e2e/test_fsdp_grpo.py", "250.5", member, "1"),
        ("tests/e2e/test_megatron_sft.py", "140.25", member, "2")]


def test_every_corpus_file_is_used_by_a_case():
    used = {"probe_env_cmdline.py", "probe_identity.py", "forge_timings.py", "replace_timings.py", "report_infra.py",
            "report_code.py", "run-artifact-timings.jsonl"} | {c[1] for c in TRUST} | {c[1] for c in TORN}
    assert {p.name for p in CORPUS.iterdir()} == used
    assert not [p for p in CORPUS.glob("*.py") if not re.search(r"^# finding \d+: ", p.read_text(), re.M)]
