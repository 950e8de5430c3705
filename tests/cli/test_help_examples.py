"""Every `ci-policy COMMAND --help` (and `ci-policy --help`) ends with examples, and every example runs.

The examples run as a user would run them from the repository root: in a directory holding a
copy of `examples/` (so what they write stays there), one page's examples in order (a later one
may read what an earlier one wrote), each exiting as its comment says (`(exits 1)`, else 0). The
examples of `init` run at the root of a copy of the example checkout without its configuration,
labels file and caller workflow: the checkout `init` is for; those of `report` read the history
that the examples of `history import` fill. Those that talk to GitHub
(`comment`, `report-status`) run against the fake GitHub API (tests/github_fake.py), named by
`$GITHUB_API_URL`, with `$GITHUB_TOKEN`.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from github_fake import FakeGitHub
from helpers import ROOT, clean_env

from ci_policy.cli.main import SUBCOMMANDS, build_parser

EXIT = re.compile(r"\(exits (\d+)\)")
HEAD = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
GITHUB_COMMANDS = ("comment", "report-status")


def pages() -> dict[str, argparse.ArgumentParser]:
    """The top-level parser ("") and each subcommand's, in `--help`'s order."""
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {"": parser, **sub.choices}


def examples_of(help_text: str) -> list[tuple[str, list[str]]]:
    """(comment, argv) of each example at the end of a help page."""
    head, marker, tail = help_text.rpartition("\nexamples:\n")
    assert marker and head, help_text
    found: list[tuple[str, list[str]]] = []
    comment = ""
    lines = iter(tail.splitlines())
    for line in lines:
        text = line.strip()
        if text.startswith("# "):
            comment = text[2:]
            continue
        while text.endswith("\\"):
            text = text[:-1] + " " + next(lines).strip()
        found.append((comment, shlex.split(text)))
    return found


@pytest.mark.parametrize("name", ["", *(n for n, _m, _s in SUBCOMMANDS)])
def test_every_help_ends_with_two_or_three_examples_of_its_command(name, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    text = pages()[name].format_help()
    shown = examples_of(text)
    assert 2 <= len(shown) <= 3, shown
    assert all(argv[0] == "ci-policy" and (not name or argv[1] == name) and comment for comment, argv in shown)
    # Printed as written, never wrapped: each line fits the help's width.
    assert max(map(len, text.splitlines())) <= 118


def test_the_examples_are_kept_as_written_and_the_rest_is_filled(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    text = pages()["gate"].format_help()
    assert text.endswith(
        "examples:\n"
        "  # a nightly run's metric record kept as the baseline (the SQLite history metrics.sqlite is created)\n"
        "  ci-policy gate --repo examples/gpu-repo --file tests/e2e/session_server/test_session_tool_calls.py \\\n"
        "      --record examples/tool-calls.record.json --store metrics.sqlite --cadence nightly \\\n"
        f"      --event schedule --run-id 1 --commit {HEAD}\n"
        "  # a pull request's run checked against that history, which it never writes\n"
        "  ci-policy gate --repo examples/gpu-repo --file tests/e2e/session_server/test_session_tool_calls.py \\\n"
        "      --record examples/tool-calls.record.json --store metrics.sqlite --event pull_request\n")
    description = text.split("\n\n")[1]
    assert max(map(len, description.splitlines())) <= 58


def workspace(tmp_path: Path, name: str) -> Path:
    """Where a page's examples run: a copy of `examples/` (its checkout, diff, payloads, records);
    for `init`, a copy of the example checkout that has not adopted ci-policy yet."""
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    if name == "init":
        checkout = tmp_path / "my-repo"
        shutil.copytree(ROOT / "examples" / "gpu-repo", checkout, ignore=ignore)
        for rel in (".github/ci-policy.yml", "labels.py", ".github/workflows/ci-policy.yml"):
            (checkout / rel).unlink()
        return checkout
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=ignore)
    if name == "report":  # the history `history import`'s examples fill, as its page says
        subprocess.run([sys.executable, "-m", "ci_policy", "history", "import", "examples/timings.jsonl",
                        "--store", "health.sqlite"], cwd=tmp_path, env=clean_env(), check=True, capture_output=True)
    return tmp_path


def fake_github() -> FakeGitHub:
    gh = FakeGitHub("acme", "minirl")
    gh.roles["maria"] = "maintain"
    gh.user_ids["maria"] = 5001
    gh.repo_labels.add("run-ci-megatron")
    gh.add_pull(42, HEAD, labels=("documentation",))
    gh.add_run("ci-policy.yml", head_sha=HEAD, conclusion="success")  # the pipeline's run the label re-runs
    return gh.start()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["", *(n for n, _m, _s in SUBCOMMANDS)])
def test_each_example_runs_as_shown(name, tmp_path) -> None:
    cwd = workspace(tmp_path, name)
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_STATE_HOME=str(home / ".state"))
    gh = fake_github() if name in GITHUB_COMMANDS else None
    try:
        if gh is not None:
            env.update(GITHUB_API_URL=gh.url, GITHUB_TOKEN="ghs_" + "0" * 36)
        for comment, argv in examples_of(pages()[name].format_help()):
            expected = EXIT.search(comment)
            proc = subprocess.run([sys.executable, "-m", "ci_policy", *argv[1:]], cwd=cwd, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == (int(expected.group(1)) if expected else 0), (argv, proc.stdout, proc.stderr)
            assert "Traceback" not in proc.stdout + proc.stderr, argv
    finally:
        if gh is not None:
            gh.stop()
    if name == "comment":  # a dry run: it read, and changed nothing
        assert {r.method for r in gh.requests} == {"GET"}
    if name == "report-status":  # they reached GitHub: the two statuses are on the head
        assert [(s["context"], s["state"]) for s in gh.statuses[HEAD]] == [("ci-policy/result", "success"),
                                                                        ("ci-policy/result", "failure")]
    if name == "init":  # the starter and the caller workflow are written
        assert (cwd / ".github" / "ci-policy.yml").is_file() and (cwd / ".github/workflows/ci-policy.yml").is_file()
