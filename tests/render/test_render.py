"""Rendering: GitHub workflow commands are escaped, and no output line can become one.

A checkout is untrusted (a fork PR): its file names, disabled reasons and configuration
end up in messages. Printed in a GitHub Actions step, any output line that starts with
`::` (after leading whitespace) is a workflow command, so:
- in `--format github`, each diagnostic is exactly one `::error`/`::warning` command whose
  data escapes `%`, CR, LF and whose properties also escape `:` and `,`;
- in text and JSON output, no untrusted value can start a line of its own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ci_policy.cli import main
from ci_policy.errors import Diagnostic
from ci_policy.render import diagnostic_github, diagnostic_text, escape_data, escape_property

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


# -- a minimal reader of workflow commands, as the Actions runner parses them -------------

COMMAND = re.compile(r"^::(?P<name>[a-z-]+)(?: (?P<props>[^:]*))?::(?P<data>.*)$")


def unescape_data(value: str) -> str:
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(value: str) -> str:
    return unescape_data(value.replace("%3A", ":").replace("%2C", ","))


def commands(output: str) -> list[tuple[str, dict, str]]:
    """Every line the runner would treat as a workflow command, parsed."""
    out = []
    for line in re.split(r"\r\n|\r|\n", output):
        stripped = line.lstrip()
        if not stripped.startswith("::"):
            continue
        match = COMMAND.match(stripped)
        assert match, f"malformed workflow command: {line!r}"
        props = {}
        if match["props"]:
            for item in match["props"].split(","):
                key, _, value = item.partition("=")
                props[key] = unescape_property(value)
        out.append((match["name"], props, unescape_data(match["data"])))
    return out


# -- escaping ----------------------------------------------------------------------------

def test_escape_data():
    assert escape_data("a%b\rc\nd") == "a%25b%0Dc%0Ad"
    # `%` first: a literal "%0A" in the input must not come back as a newline.
    assert escape_data("%0A") == "%250A"
    assert unescape_data(escape_data("%0A\n")) == "%0A\n"
    assert escape_data("a::b,c:d") == "a::b,c:d"


def test_escape_property():
    assert escape_property("a:b,c%d\re\nf") == "a%3Ab%2Cc%25d%0De%0Af"
    assert escape_property("::") == "%3A%3A"


def test_diagnostic_github_one_command_per_diagnostic():
    err = Diagnostic("bad\n::error::injected", path="a,b:c.py", line=3, col=7, hint="fix\r\nit")
    assert diagnostic_github(err) == (
        "::error file=a%2Cb%3Ac.py,line=3,col=7::bad%0A::error::injected (hint: fix%0D%0Ait)")
    warn = Diagnostic("w", severity="warning")
    assert diagnostic_github(warn) == "::warning::w"
    assert diagnostic_github(Diagnostic("m", path="p.py", line=2)) == "::error file=p.py,line=2::m"


def test_diagnostic_github_carries_the_code_in_the_title():
    err = Diagnostic("m", path="p.py", line=2, col=1, code="CP201")
    assert diagnostic_github(err) == "::error file=p.py,line=2,col=1,title=CP201 marker-not-module-level::m"
    warn = Diagnostic("w", path="labels.py", line=1, code="CP902", severity="warning", hint="h")
    assert diagnostic_github(warn) == "::warning file=labels.py,line=1,title=CP902 label-unused::w (hint: h)"
    # Neither location nor title: a problem no file locates (a remote answer), with no code.
    assert diagnostic_github(Diagnostic("x")) == "::error::x"


def test_diagnostic_text_keeps_one_diagnostic_on_its_lines():
    err = Diagnostic("bad\n::error::injected\rx", path="p.py", line=3, col=7, hint="h\n::warning::w")
    text = diagnostic_text(err)
    assert text == "p.py:3:7: bad\\n::error::injected\\rx\n    hint: h\\n::warning::w"
    assert commands(text) == []


def test_diagnostic_text_shows_the_code_and_name_before_the_message():
    err = Diagnostic("m", path="p.py", line=3, col=7, hint="h", code="CP201")
    assert diagnostic_text(err) == "p.py:3:7: CP201 marker-not-module-level: m\n    hint: h"
    warn = Diagnostic("w", path="labels.py", line=1, code="CP902", severity="warning")
    assert diagnostic_text(warn) == "labels.py:1: warning: CP902 label-unused: w"
    assert diagnostic_text(Diagnostic("u", path="pr.diff")) == "pr.diff: u"
    assert diagnostic_text(Diagnostic("no file locates this")) == "no file locates this"


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
    assert err.startswith(f"./{root}/test_a.py:1:1: ")
    (repo / root / "test_a.py").unlink()
    assert main(["registry"]) == 0
    out = capsys.readouterr().out
    assert commands(out) == []
    assert out.splitlines()[1].startswith(f"./{root}/test_b.py:3 ")
