"""The render package: its dispatchers, and end to end, no output line a checkout can turn into a command.

A checkout is untrusted (a fork PR): its file names, disabled reasons and configuration
end up in messages. Printed in a GitHub Actions step, any output line that starts with
`::` (after leading whitespace) is a workflow command, so:
- in `--format github`, each diagnostic is exactly one `::error`/`::warning` command whose
  data escapes `%`, CR, LF and whose properties also escape `:` and `,`;
- in text and JSON output, no untrusted value can start a line of its own.
Each format's own renderers are tested in the module of that format (`test_escape`,
`test_text`, `test_github`, `test_jsondoc`, `test_markdown`).
"""

from __future__ import annotations

import json
from pathlib import Path

from workflow_commands import commands

from ci_policy.cli import main
from ci_policy.errors import Diagnostic
from ci_policy.render.report import diagnostics, summarised

CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: gpu, backend: cuda, runs_on: [h200]}
"""
LABELS = 'KNOWN_LABELS = {"megatron": "Megatron tests"}\n'
MAIN = '\nif __name__ == "__main__":\n    main()\n'
# A disabled reason written with escapes in the test file's source: it reaches ci-policy as
# a string holding CR/LF, `::` and `%`.
HOSTILE_REASON_SOURCE = r'"flaky 100%\r\n::error file=evil.py,line=1::injected\n::stop-commands::tok"'
HOSTILE_REASON = "flaky 100%\r\n::error file=evil.py,line=1::injected\n::stop-commands::tok"
HOSTILE_FILE = "tests/test_a,line=9::x%41.py"


def write_repo(root: Path) -> Path:
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "ci-policy.yml").write_text(CONFIG)
    (root / "labels.py").write_text(LABELS)
    (root / "tests").mkdir()
    (root / "tests" / "test_disabled.py").write_text(
        "from ci_policy import register_cuda_ci\n\n"
        f'register_cuda_ci(60, "gpu", labels=["megatron"], disabled={HOSTILE_REASON_SOURCE})\n' + MAIN)
    # Matches test_*.py but registers nothing: an error located in a file whose name holds
    # `,`, `:` and `%`.
    (root / HOSTILE_FILE).write_text("x = 1\n")
    return root


# -- the dispatchers -------------------------------------------------------------------------

def test_diagnostics_in_each_format():
    errors = [Diagnostic("e", path="tests/t.py", line=2, hint="h"), Diagnostic("w", severity="warning")]
    assert diagnostics(errors, "text") == "tests/t.py:2: e\n    hint: h\nwarning: w"
    assert diagnostics(errors, "github", lambda p: "repo/" + p) == (
        "::error file=repo/tests/t.py,line=2::e (hint: h)\n::warning::w")
    assert json.loads(diagnostics(iter(errors), "json")) == {
        "schema": 1, "errors": [{"path": "tests/t.py", "line": 2, "col": None, "message": "e", "hint": "h"}],
        "warnings": [{"path": None, "line": None, "col": None, "message": "w", "hint": None}]}
    assert diagnostics([], "text") == ""


# -- end to end: a hostile checkout cannot inject a second workflow command ------------------

def test_github_format_cannot_be_injected(tmp_path, monkeypatch, capsys):
    repo = write_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    assert main(["lint", "--format", "github"]) == 1
    out, err = capsys.readouterr()
    assert err == ""
    unregistered = (f"{HOSTILE_FILE} matches the discovery pattern 'test_*.py' but has no registration and "
                    "is not under an implicit root, so no stage would run it (hint: add register_cpu_ci/"
                    "register_cuda_ci/register_rocm_ci(...) at module level, or add an implicit root for its "
                    "directory in the configuration)")
    disabled = f"register_cuda_ci for suite gpu is disabled: {HOSTILE_REASON}"
    # Exactly the two diagnostics, each one command, round-tripping to the original text.
    assert commands(out) == [
        ("error", {"file": HOSTILE_FILE, "line": "1", "col": "1", "title": "CP231 test-file-unregistered"},
         unregistered),
        ("warning", {"file": "tests/test_disabled.py", "line": "3", "col": "1",
                     "title": "CP905 registration-disabled"}, disabled),
    ]
    assert out == (
        "::error file=tests/test_a%2Cline=9%3A%3Ax%2541.py,line=1,col=1,title=CP231 test-file-unregistered::"
        + unregistered.replace("%", "%25") + "\n"
        "::warning file=tests/test_disabled.py,line=3,col=1,title=CP905 registration-disabled::"
        "register_cuda_ci for suite gpu is disabled: "
        "flaky 100%25%0D%0A::error file=evil.py,line=1::injected%0A::stop-commands::tok\n"
        "ci-policy lint: FAILED: 1 error, 1 warning (2 test files, 1 registration, 0 gates)\n")


def test_text_format_cannot_be_injected(tmp_path, capsys):
    repo = write_repo(tmp_path / "repo")
    assert main(["lint", "--repo", str(repo)]) == 1
    out, err = capsys.readouterr()
    assert err == ""
    assert commands(out) == []
    assert "tests/test_disabled.py:3:1: warning: CP905 registration-disabled: " \
           "register_cuda_ci for suite gpu is disabled: " \
           "flaky 100%\\r\\n::error file=evil.py,line=1::injected\\n::stop-commands::tok\n" in out
    assert len(out.splitlines()) == 4  # error, its hint, the warning, the summary


def test_json_format_cannot_be_injected(tmp_path, capsys):
    repo = write_repo(tmp_path / "repo")
    assert main(["lint", "--repo", str(repo), "--format", "json"]) == 1
    out = capsys.readouterr().out
    assert commands(out) == []
    assert json.loads(out)["warnings"][0]["message"] == f"register_cuda_ci for suite gpu is disabled: {HOSTILE_REASON}"


def test_registry_text_cannot_be_injected(tmp_path, capsys):
    repo = write_repo(tmp_path / "repo")
    (repo / HOSTILE_FILE).unlink()
    assert main(["registry", "--repo", str(repo)]) == 0
    out = capsys.readouterr().out
    assert commands(out) == []
    assert out.splitlines()[1].endswith(
        "disabled: flaky 100%\\r\\n::error file=evil.py,line=1::injected\\n::stop-commands::tok")
    assert len(out.splitlines()) == 2
    assert main(["registry", "--repo", str(repo), "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert commands(out) == []
    assert json.loads(out)["registrations"][0]["disabled"] == HOSTILE_REASON


def test_a_path_starting_with_a_workflow_command_cannot_start_a_line(tmp_path, monkeypatch, capsys):
    """A discovery root comes from the (untrusted) configuration; a line starting with it
    must not start with `::`."""
    root = "::error title=pwned::x"
    repo = tmp_path / "repo"
    (repo / ".github").mkdir(parents=True)
    (repo / ".github" / "ci-policy.yml").write_text(CONFIG.replace("roots: [tests]", f'roots: ["{root}"]'))
    (repo / "labels.py").write_text(LABELS)
    (repo / root).mkdir()
    (repo / root / "test_a.py").write_text("x = 1\n")
    (repo / root / "test_b.py").write_text(
        'from ci_policy import register_cuda_ci\n\nregister_cuda_ci(60, "gpu", labels=["megatron"])\n' + MAIN)
    monkeypatch.chdir(repo)
    for fmt in ("text", "github", "json"):
        assert main(["lint", "--format", fmt]) == 1
        out = capsys.readouterr().out
        assert [c[0] for c in commands(out)] == (["error"] if fmt == "github" else [])
    assert main(["lint"]) == 1
    assert capsys.readouterr().out.startswith(f"./{root}/test_a.py:1:1: CP231 test-file-unregistered: "
                                              f"{root}/test_a.py matches")
    assert main(["registry"]) == 1
    out, err = capsys.readouterr()
    assert commands(out + err) == []
    assert out.splitlines()[1].startswith(f"./{root}/test_b.py:3 ")
    assert err.startswith(f"invalid (not scheduled): 1 test file\n  ./{root}/test_a.py\n"
                          f"    ./{root}/test_a.py:1:1: CP231 test-file-unregistered: ")
    (repo / root / "test_a.py").unlink()
    assert main(["registry"]) == 0
    out = capsys.readouterr().out
    assert commands(out) == []
    assert out.splitlines()[1].startswith(f"./{root}/test_b.py:3 ")


def test_several_disabled_registrations_summarise_where_the_first_was_and_one_stays_as_it_is():
    def off(path: str, line: int) -> Diagnostic:
        return Diagnostic(f"register_cuda_ci for suite s is disabled: r{line}", path=path, line=line, col=1,
                          code="CP905", severity="warning")

    other = Diagnostic("stage cpu has no registered test files", path="c.yml", line=7, code="CP901",
                       severity="warning")
    assert summarised([off("a.py", 3), other, off("a.py", 4), off("b.py", 1)]) == [
        Diagnostic("3 registrations in 2 files are disabled", code="CP905", severity="warning",
                   hint="`ci-policy lint --verbose` lists each one (so does --format json)"),
        other]
    assert summarised([other, off("a.py", 3)]) == [other, off("a.py", 3)]
