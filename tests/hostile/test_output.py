"""Hostile corpus, finding 1 of issue 14: no text from a PR becomes a workflow command.

The checkout built from `tests/hostile/output/` has a discovery root named
`::notice::PWNED`, directories named `::warning::PWNED` and `x##[error]PWNED`, a disabled
reason and label descriptions holding CR, LF, `::` commands, `##[error]` and a bidi
override, and a test that prints commands of its own; the diffs, labels, PR event, comment
and timing file carry the same payloads. Every subcommand runs on it with
`GITHUB_ACTIONS=true`, and `workflow_commands.executed` (the model of the runner) finds in
stdout and stderr only the commands ci-policy writes itself: `::error`, `::warning`,
`::notice`, `::group`, `::endgroup`, each of a command's exact shape, none whose data
starts with a payload (every payload's data starts with `PWNED`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from github_world import PR, P
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workflow_commands import COMMAND, executed

from ci_policy.cli import main

DATA = Path(__file__).parent / "output"
# Where each data file goes in the hostile checkout.
LAYOUT = {
    ".github/ci-policy.yml": "ci-policy.yml",
    "labels.py": "labels.py",
    "tests/test_runs.py": "runs.src",
    "tests/::warning::PWNED/test_gpu.py": "gpu.src",        # finding 1: `::` in a directory name
    "tests/x##[error]PWNED/test_disabled.py": "disabled.src",  # finding 1: legacy `##[` in a name
    "::notice::PWNED/test_root.py": "runs.src",              # finding 1: a root that starts a line with `::`
    "tests/test_mask.py": "mask.src",                        # issue 32: `##[add-mask]` in a plain file's reason
}
MASK = "tests/test_mask.py"
GPU = "tests/::warning::PWNED/test_gpu.py"
DISABLED = "tests/x##[error]PWNED/test_disabled.py"
ROOT_FILE = "::notice::PWNED/test_root.py"
# finding 1: PR labels as `--labels-json` passes them (the event's labels, unfiltered).
LABELS = json.dumps(["run-ci-fsdp", "run-ci-megatron", "::warning::PWNED", "x\r::set-output name=PWNED::1",
                     "##[error]PWNED", "\u202e"])
OURS = {"error", "warning", "notice", "group", "endgroup"}


def injected(text: str) -> list:
    """The commands in `text` ci-policy did not mean to write."""
    return [c for c in executed(text)
            if c.syntax != "::" or c.name not in OURS or not COMMAND.match(c.line)
            or c.data.startswith("PWNED") or any(v.startswith("PWNED") for v in c.props.values())]


def ours(text: str) -> list[tuple[str, str]]:
    return [(c.name, c.data) for c in executed(text)]


@pytest.fixture
def github(tmp_path, monkeypatch):
    for name in list(__import__("os").environ):
        if name.startswith(("GITHUB_", "CI_POLICY_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    return tmp_path


@pytest.fixture
def repo(github) -> Path:
    root = github / "repo"
    for target, source in LAYOUT.items():
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / source, root / target)
    return root


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse's own usage errors, which quote the argument
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


PLAN_INPUTS = ("--event", "pull_request", "--labels-json", LABELS)


def every_command(repo: Path) -> list[pytest.param]:
    r = str(repo)
    diff = str(DATA / "hostile.diff")
    return [
        pytest.param(["lint", "--repo", r], 0, id="lint"),
        pytest.param(["lint", "--repo", r, "--format", "github"], 0, id="lint-github"),
        pytest.param(["registry", "--repo", r], 0, id="registry"),
        pytest.param(["registry", "--repo", r, "--format", "json"], 0, id="registry-json"),
        *[pytest.param(["plan", "--repo", r, *PLAN_INPUTS, "--diff", d, "--format", fmt], 0, id=f"plan-{fmt}-{n}")
          for fmt in ("text", "json", "markdown", "github")
          for n, d in (("hostile", diff), ("cr", str(DATA / "cr.diff")), ("bidi", str(DATA / "bidi.diff")))],
        pytest.param(["plan", "--repo", r, *PLAN_INPUTS, "--explain", DISABLED], 0, id="plan-explain"),
        *[pytest.param(["list", "--repo", r, "--stage", s, *PLAN_INPUTS, "--diff", diff, "--format", fmt], 0,
                       id=f"list-{s}-{fmt}") for s in ("cpu", "gpu") for fmt in ("text", "json")],
        pytest.param(["file-run", "--repo", r, "--file", "tests/test_runs.py", "--format", "github"], 0,
                     id="file-run-github"),
        # `--file` takes plain path segments only: a usage error quoting the argument.
        pytest.param(["file-run", "--repo", r, "--file", GPU, "--format", "github"], 2, id="file-run-hostile"),
        pytest.param(["file-run", "--repo", r, "--file", DISABLED, "--format", "text"], 2, id="file-run-legacy"),
        pytest.param(["gate", "--repo", r, "--file", GPU, "--record", str(repo / "::warning::PWNED.json"),
                      "--format", "github"], 1, id="gate-unreadable-record"),
        pytest.param(["tune", "--repo", r, "--from", str(DATA / "timings.jsonl")], 0, id="tune"),
        pytest.param(["result", "--plan-complete", "true", "--needs-json",
                      json.dumps({"::warning::PWNED": {"result": "failure"},
                                  "x\r::set-output name=PWNED::1": {"result": "cancelled"}}),
                      "--format", "github"], 1, id="result-github"),
        pytest.param(["plan", "--repo", r, "--event", "pull_request", "--labels-json", "::warning::PWNED"], 2,
                     id="usage-error"),
    ]


def test_every_command_on_the_hostile_checkout_injects_nothing(repo, capsys, github):
    for case in every_command(repo):
        argv, rc = case.values
        got = cli(capsys, *argv)
        assert got[0] == rc, (case.id, got)
        assert injected(got[1]) == [] and injected(got[2]) == [], case.id
    # init writes a configuration for the same tests (a copy without one).
    fresh = github / "fresh"
    shutil.copytree(repo, fresh, ignore=shutil.ignore_patterns("ci-policy.yml", "labels.py"))
    rc, out, err = cli(capsys, "init", "--repo", str(fresh))
    assert (rc, injected(out), injected(err)) == (0, [], [])
    # The disabled reason, as the lint of the written configuration lists it: one line, inert.
    rc, out, err = cli(capsys, "lint", "--repo", str(fresh), "--verbose")
    assert (rc, injected(out), injected(err)) == (0, [], [])
    assert ("tests/x##\\u005berror]PWNED/test_disabled.py:4:1: warning: CP905 registration-disabled: "
            "register_cuda_ci for suite gpu is disabled: flaky\\r::set-output name=PWNED::1\\n::warning::PWNED "
            "##\\u005berror]PWNED \\u202e\n") in out + err


# -- issue 32, findings 4 and 5: every command, every format, with and without GITHUB_ACTIONS ----

FORMATS = {"init": ("text", "json"), "lint": ("text", "json", "github"), "registry": ("text", "json"),
           "plan": ("text", "json", "markdown", "github"), "list": ("text", "json"), "run": ("text", "github"),
           "result": ("text", "json", "github"), "gate": ("text", "github"), "tune": ("text", "json"),
           "file-run": ("json", "text", "github"), "schema": ("json", "text"), "history": ("text", "json"),
           "report": ("text", "json", "markdown")}


def every_command_in_every_format(repo: Path, fresh: Path, tmp: Path) -> list[tuple[str, list[str]]]:
    r = str(repo)
    diff = str(DATA / "hostile.diff")
    needs = json.dumps({"::warning::PWNED": {"result": "failure"},
                        "x\r::set-output name=PWNED::1": {"result": "cancelled"},
                        "##[add-mask]PWNED": {"result": "success"}})
    # The timing file's hostile names as a run's artifact: the test history, then its report.
    (tmp / "run-77").mkdir(exist_ok=True)
    shutil.copyfile(DATA / "timings.jsonl", tmp / "run-77" / "timings.jsonl")
    store = str(tmp / "history.sqlite")
    cases: dict[str, list[list[str]]] = {
        "init": [["--repo", str(fresh), "--force"]],
        "lint": [["--repo", r]],
        "registry": [["--repo", r]],
        "plan": [["--repo", r, *PLAN_INPUTS, "--diff", diff], ["--repo", r, *PLAN_INPUTS, "--explain", MASK]],
        "list": [["--repo", r, "--stage", s, *PLAN_INPUTS, "--diff", diff] for s in ("cpu", "gpu")],
        "run": [["--repo", r, "--stage", "cpu", *PLAN_INPUTS, "--timings-out", str(tmp / "timings.jsonl")]],
        "result": [["--plan-complete", "true", "--needs-json", needs]],
        "gate": [["--repo", r, "--file", MASK, "--record", str(tmp / "##[add-mask]PWNED.json")]],
        "tune": [["--repo", r, "--from", str(DATA / "timings.jsonl")]],
        "file-run": [["--repo", r, "--file", MASK], ["--repo", r, "--file", DISABLED]],
        "schema": [["config"]],
        "history": [["import", "--store", store, str(tmp / "run-77")]],
        "report": [["--store", store, "--today", "2026-11-30", "--since", "7d", "--propose-quarantine",
                    "--min-runs", "1"]],
    }
    return [(f"{name}-{fmt}-{n}", [name, *argv, "--format", fmt])
            for name, runs in cases.items() for fmt in FORMATS[name] for n, argv in enumerate(runs)]


def test_the_matrix_names_every_subcommand_and_format():
    from ci_policy.cli.main import SUBCOMMANDS, build_parser

    parser = build_parser()
    choices = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    # completion prints the parser for a shell, no value of a checkout: its own tests (test_completion.py).
    formats = {name: tuple(next(a for a in choices[name]._actions if a.dest == "format").choices)
               for name, _, _ in SUBCOMMANDS if name != "completion"}
    # comment, pull-request and report-status talk to GitHub: their own tests below.
    assert {n: f for n, f in formats.items() if n not in ("comment", "pull-request", "report-status")} == FORMATS


@pytest.mark.parametrize("actions", [None, "true"], ids=["no-GITHUB_ACTIONS", "GITHUB_ACTIONS"])
def test_every_command_in_every_format_writes_no_raw_workflow_command(repo, capsys, github, monkeypatch, actions):
    """issue 32, finding 5: `lint`, `registry`, `init` (text) and `file-run` (text and json)
    printed `##[warning]`, `##[error]` and `##[add-mask]` raw when `GITHUB_ACTIONS` was unset.
    Every line passes the escaping layer; a command is written only in github format, and then
    only ci-policy's own."""
    if actions is None:
        monkeypatch.delenv("GITHUB_ACTIONS")
    fresh = github / "fresh"
    shutil.copytree(repo, fresh, ignore=shutil.ignore_patterns("ci-policy.yml", "labels.py"))
    seen = 0
    for case, argv in every_command_in_every_format(repo, fresh, github):
        rc, out, err = cli(capsys, *argv)
        if argv[-1] == "github":
            assert injected(out) == [] and injected(err) == [], (case, rc, out, err)
        else:
            assert executed(out) == [] and executed(err) == [], (case, rc, out, err)
        if argv[-1] == "json" and out and rc in (0, 1):
            json.loads(out)  # the escaping keeps a document a document
        seen += "##\\u005b" in out + err
    # The payloads did reach the output, made inert.
    assert seen >= 10


def test_text_and_json_show_a_legacy_command_inert_without_github_actions(repo, capsys, monkeypatch):
    """issue 32, finding 5, as reported: the disabled reason's `##[add-mask]`, in text and in JSON."""
    monkeypatch.delenv("GITHUB_ACTIONS")
    reason = "x\\n...##\\u005badd-mask]ci-policy ##\\u005bwarning]PWNED ##\\u005berror]PWNED"
    for fmt in ("text", "json"):  # file-run refuses a disabled file on stderr, in both formats
        assert cli(capsys, "file-run", "--repo", str(repo), "--file", MASK, "--format", fmt) == (
            1, "", f"{MASK}:5: {MASK} is disabled: {reason}\n    hint: re-enable the registration to rerun it\n"
                   "ci-policy: 1 error\n")
    rc, out, err = cli(capsys, "registry", "--repo", str(repo))
    assert rc == 0 and "##[" not in out + err and f"disabled: {reason}" in out
    # In a JSON document `##\u005b` is a JSON escape of `##[`: the document parses to the same reason.
    rc, out, err = cli(capsys, "registry", "--repo", str(repo), "--format", "json")
    assert rc == 0 and "##[" not in out + err and "##\\u005badd-mask]" in out
    assert "x\n...##[add-mask]ci-policy ##[warning]PWNED ##[error]PWNED" in [
        r.get("disabled") for r in json.loads(out)["registrations"]]


def test_list_prints_each_path_on_its_own_line_without_a_command(repo, capsys):
    diff = str(DATA / "hostile.diff")
    assert cli(capsys, "list", "--repo", str(repo), "--stage", "cpu", *PLAN_INPUTS, "--diff", diff) == (
        0, f"./{ROOT_FILE}\ntests/test_runs.py\n", "")
    assert cli(capsys, "list", "--repo", str(repo), "--stage", "gpu", *PLAN_INPUTS, "--diff", diff) == (
        0, f"{GPU}\n", "")


def test_a_diff_path_with_a_cr_is_refused_and_every_stage_runs(repo, capsys):
    # finding 1: a CR in a diff path was accepted (only LF was refused).
    rc, out, err = cli(capsys, "plan", "--repo", str(repo), *PLAN_INPUTS, "--diff", str(DATA / "cr.diff"))
    assert (rc, err, injected(out)) == (0, "", [])
    assert (f"{DATA / 'cr.diff'}: path 'docs/b\\r::set-output name=PWNED::1.md' in record 2 has control "
            "characters; ci-policy refuses such names") in out


def test_plan_github_writes_only_its_own_annotations(repo, capsys):
    rc, out, err = cli(capsys, "plan", "--repo", str(repo), *PLAN_INPUTS, "--diff", str(DATA / "hostile.diff"),
                       "--format", "github")
    assert (rc, err, injected(out)) == (0, "", [])
    # The plan's warnings, one annotation each; the rest of stdout is the plan as text.
    assert {name for name, _ in ours(out)} <= {"warning"}


def test_run_neutralises_the_tests_own_output(repo, capsys):
    rc, out, err = cli(capsys, "run", "--repo", str(repo), "--stage", "cpu", *PLAN_INPUTS, "--format", "github",
                       "--timings-out", str(repo.parent / "timings.jsonl"))
    assert (rc, err, injected(out)) == (0, "", [])
    assert ours(out) == [("group", f"{ROOT_FILE} (attempt 1)"), ("endgroup", ""),
                         ("group", "tests/test_runs.py (attempt 1)"), ("endgroup", "")]
    # What the test printed, each payload on a line of its own and inert.
    assert out.count("\\::warning::PWNED from the test\nprogress 50%\n\\::set-output name=PWNED::1\n"
                     "tail ##\\u005berror]PWNED\n\\u202eevil\n") == 2
    # The shard header and the summary name the root's file at a line start: the console guard.
    assert out.startswith(f"Enabled 2 test(s) (est total 2s) for cpu shard 0:\n  \\{ROOT_FILE} (est 1s)\n")
    assert f"PASSED (2):\n  \\{ROOT_FILE} elapsed=" in out


def test_comment_prints_a_disabled_reason_inert(world, monkeypatch):
    # finding 1: `ci-policy comment` printed the message (here a disabled reason) raw.
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    for checkout in (world.trusted, world.pr):
        shutil.copyfile(DATA / "comment_disabled.src", checkout / "tests/e2e/test_hostile.py")
    result = world.run("/rerun-test tests/e2e/test_hostile.py", "--dry-run", login="maria")
    assert injected(result.out) == [] and injected(result.err) == []
    # one_line keeps it on its line (CR and LF shown as escapes), the guard makes `##[` inert.
    assert result.err == ("ci-policy comment: refused: tests/e2e/test_hostile.py is disabled: flaky\\r::set-output "
                          "name=PWNED::1\\n::warning::PWNED ##\\u005berror]PWNED \\u202e\n")
    # The reply posted to the PR (a request not sent, on stdout) is valid JSON under the guard.
    assert [json.loads(line)["path"] for line in result.out.splitlines()] == [f"{P}/issues/{PR}/comments"]


@pytest.mark.parametrize("actions", [None, "true"], ids=["no-GITHUB_ACTIONS", "GITHUB_ACTIONS"])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_comment_prints_a_legacy_command_of_a_disabled_reason_inert(world, monkeypatch, actions, fmt):
    # issue 32, finding 4: `disabled="x\n...##[add-mask]ci-policy"` reached the issue_comment
    # job's log raw on stdout (the runner parses `##[` anywhere in a line).
    if actions is None:
        monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    else:
        monkeypatch.setenv("GITHUB_ACTIONS", actions)
    for checkout in (world.trusted, world.pr):
        shutil.copyfile(DATA / "comment_mask.src", checkout / "tests/e2e/test_hostile.py")
    result = world.run("/rerun-test tests/e2e/test_hostile.py", "--format", fmt, login="maria")
    assert executed(result.out) == [] and executed(result.err) == []
    reason = "x\\n...##\\u005badd-mask]ci-policy ##\\u005bwarning]PWNED ##\\u005berror]PWNED"
    if fmt == "text":
        assert (result.rc, result.out, result.err) == (
            0, f"ci-policy comment: refused: tests/e2e/test_hostile.py is disabled: {reason}\n", "")
    else:
        assert (result.rc, result.err) == (0, "") and "##[" not in result.out and reason in result.out
        json.loads(result.out)


@pytest.mark.parametrize("actions", [None, "true"], ids=["no-GITHUB_ACTIONS", "GITHUB_ACTIONS"])
def test_pull_request_on_a_hostile_event(gh, github, capsys, monkeypatch, actions):
    if actions is None:
        monkeypatch.delenv("GITHUB_ACTIONS")
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_" + "0" * 36)
    pull = gh.add_pull(7, "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b", labels=("run-ci-megatron",))
    pull.diff = ("diff --git a/docs/b\r::set-output name=PWNED::1 b/docs/b\r::set-output name=PWNED::1\n"
                 "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
    for fmt in ("text", "json", "github"):
        rc, out, err = cli(capsys, "pull-request", "--event-path", str(DATA / "pr_event.json"), "--api-url", gh.url,
                           "--diff-out", str(github / "pr.diff"), "--format", fmt)
        assert rc == 0 and injected(out) == [] and injected(err) == [], fmt


@pytest.mark.parametrize("actions", [None, "true"], ids=["no-GITHUB_ACTIONS", "GITHUB_ACTIONS"])
def test_report_status_with_hostile_text(gh, github, capsys, monkeypatch, actions):
    if actions is None:
        monkeypatch.delenv("GITHUB_ACTIONS")
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_" + "0" * 36)
    for fmt in ("text", "json"):
        rc, out, err = cli(capsys, "report-status", "--sha", "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b",
                           "--context", "ci-policy/x\r::warning::PWNED", "--state", "success",
                           "--description", "##[error]PWNED \u202e", "--repository", "acme/minirl",
                           "--api-url", gh.url, "--format", fmt)
        assert injected(out) == [] and injected(err) == [], (fmt, rc, out, err)


# -- generated inputs ------------------------------------------------------------------------

PAYLOAD = st.sampled_from(["::warning::PWNED", "##[error]PWNED", "\r::set-output name=PWNED::1", "\n::error::PWNED",
                           "  ::notice::PWNED", "\u202e", "\u2066", "%0A::warning::PWNED", ":", "#", "["])
TEXT = st.lists(st.one_of(PAYLOAD, st.text(max_size=6)), max_size=6).map("".join)
SEGMENT = TEXT.filter(lambda s: s and s not in (".", "..") and "/" not in s and "\0" not in s)
DIFF_PATHS = st.lists(st.lists(SEGMENT, min_size=1, max_size=3).map("/".join), min_size=1, max_size=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(paths=DIFF_PATHS, labels=st.lists(TEXT, max_size=4))
def test_generated_diffs_and_labels_inject_nothing(repo, capsys, tmp_path, paths, labels):
    diff = tmp_path / "gen.diff"
    diff.write_bytes(b"".join(b"M\0" + p.encode("utf-8", "surrogatepass") + b"\0" for p in paths))
    argv = ("--repo", str(repo), "--event", "pull_request", "--labels-json", json.dumps(labels), "--diff", str(diff))
    for command in (["plan", *argv, "--format", "github"], ["list", "--stage", "gpu", *argv]):
        rc, out, err = cli(capsys, *command)
        assert injected(out) == [] and injected(err) == [], command


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=SEGMENT)
def test_generated_names_inject_nothing(repo, capsys, name):
    target = repo / "tests" / name
    try:
        target.mkdir()
    except (OSError, ValueError):
        return  # a name the file system refuses is no checkout
    try:
        shutil.copyfile(DATA / "runs.src", target / "test_gen.py")
        for command in (["plan", "--repo", str(repo), *PLAN_INPUTS, "--format", "github"],
                        ["list", "--repo", str(repo), "--stage", "cpu", *PLAN_INPUTS]):
            rc, out, err = cli(capsys, *command)
            assert injected(out) == [] and injected(err) == [], (command, rc)
    finally:
        shutil.rmtree(target)


COMMENT = st.tuples(st.sampled_from(["/rerun-test ", "/rerun-test tests/e2e/", "/rerun-stage ", "/", ""]),
                    TEXT, st.sampled_from(["", " cuda", " rocm", " gpu", "\n", "\r\n/rerun-test x"])).map("".join)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=COMMENT)
def test_generated_comment_bodies_inject_nothing(world, monkeypatch, body):
    # finding 1 through `ci-policy comment`: whatever a commenter writes (and it is echoed in
    # refusals and replies), stdout and stderr hold no command ci-policy did not write. Run
    # twice: without the console guard (GITHUB_ACTIONS unset), the reply's own escaping must
    # hold alone (an unsafe character of an echoed path becomes `?`); with it, both layers.
    for actions in (None, "true"):
        if actions is None:
            monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
        else:
            monkeypatch.setenv("GITHUB_ACTIONS", actions)
        result = world.run(body, "--dry-run", login="maria")
        assert "Traceback" not in result.out + result.err
        assert injected(result.out) == [] and injected(result.err) == [], (actions, body, result)
