"""cli.options: the options several subcommands share, parsed the same way everywhere."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from ci_policy.app.planning import plan as plan_of
from ci_policy.cli import options, output
from ci_policy.errors import UsageError

CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: gpu, backend: cuda, runs_on: [h200]}
"""
TEST_FILE = ('from ci_policy import register_cuda_ci\n\nregister_cuda_ci(60, "gpu", labels=["x"])\n'
             '\nif __name__ == "__main__":\n    main()\n')


class Refused(Exception):
    pass


class Parser(argparse.ArgumentParser):
    """A parser whose errors are raised, so a test can read the message."""

    def error(self, message: str):
        raise Refused(message)


def plan_parser() -> Parser:
    p = Parser(prog="ci-policy plan")
    options.add_checkout(p)
    options.add_plan_inputs(p)
    return p


def write_repo(root: Path) -> Path:
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "ci-policy.yml").write_text(CONFIG)
    (root / "labels.py").write_text('KNOWN_LABELS = {"x": "x tests"}\n')
    (root / "tests").mkdir()
    (root / "tests" / "test_a.py").write_text(TEST_FILE)
    return root


def test_the_checkout_options_and_their_defaults():
    args = plan_parser().parse_args(["--event", "pull_request"])
    assert (args.repo, args.config) == (".", None)
    assert (args.labels_json, args.label, args.schedule, args.cadence, args.diff, args.base, args.head) == (
        None, None, None, None, None, None, None)
    with pytest.raises(Refused, match=r"^the following arguments are required: --event$"):
        plan_parser().parse_args([])


def test_a_parsed_plan_input_becomes_the_plan(tmp_path):
    repo = write_repo(tmp_path / "repo")
    args = plan_parser().parse_args(["--repo", str(repo), "--event", "pull_request", "--labels-json",
                                     json.dumps(["run-ci-x", "bug"]), "--schedule", "", "--cadence", "",
                                     "--base", "", "--head", ""])
    plan = plan_of(options.plan_request(args)).plan
    # A workflow passes "" for an input the event lacks: it reads as not given.
    assert (args.schedule, args.cadence, args.base, args.head) == (None, None, None, None)
    # Only the labels CI policy reads are kept.
    assert (plan.policy.event, plan.policy.cadence, plan.policy.raw_labels, plan.policy.include_labels) == (
        "pull_request", "regular", ("run-ci-x",), ("x",))
    assert (plan.diff.available, plan.diff.reason) == (False, "no --diff or --base was given")
    assert [s.name for s in plan.stages] == ["gpu"]

    labels = plan_parser().parse_args(["--repo", str(repo), "--event", "schedule", "--label", "run-ci-x",
                                       "--label", "b", "--cadence", "nightly"])
    assert labels.label == ["run-ci-x", "b"]
    plan = plan_of(options.plan_request(labels)).plan
    assert (plan.policy.event, plan.policy.cadence, plan.policy.raw_labels) == ("schedule", "nightly", ("run-ci-x",))


@pytest.mark.parametrize("argv, source, message, hint", [
    (["--head", "abc"], "--head", "needs --base", "pass --base REV, or --diff FILE without --head"),
    (["--diff", "d.txt", "--base", "main"], "--diff", "pass either --diff or --base, not both", None),
    (["--labels-json", "[]", "--label", "a"], "--labels-json", "pass either --labels-json or --label, not both",
     None),
])
def test_conflicting_plan_inputs_are_usage_errors(tmp_path, argv, source, message, hint):
    args = plan_parser().parse_args(["--repo", str(tmp_path / "missing"), "--event", "pull_request", *argv])
    with pytest.raises(UsageError) as err:
        plan_of(options.plan_request(args))
    assert (err.value.source, err.value.message, err.value.hint, err.value.exit_code) == (source, message, hint, 2)


def test_the_format_choices_are_the_commands_own_and_each_is_explained():
    p = Parser(prog="ci-policy lint")
    options.add_format(p, ("text", "json", "github"))
    assert p.parse_args([]).format == "text"
    assert p.parse_args(["--format", "github"]).format == "github"
    with pytest.raises(Refused, match=r"^argument --format: invalid choice: 'markdown' \(choose from "):
        p.parse_args(["--format", "markdown"])
    action = next(a for a in p._actions if a.dest == "format")
    assert action.choices == ("text", "json", "github")
    assert action.help == ("output format (default text). text: for people; json: for programs (schema 1); "
                           "github: annotations, step outputs and summary inside GitHub Actions")
    md = Parser()
    options.add_format(md, ("markdown", "json"), default="markdown")
    assert md.parse_args([]).format == "markdown"
    assert next(a for a in md._actions if a.dest == "format").help == (
        "output format (default markdown). markdown: a job summary; json: for programs (schema 1)")


def test_positive_int():
    assert options.positive_int("3") == 3
    for text, message in (("0", "must be at least 1, got 0"), ("-2", "must be at least 1, got -2"),
                          ("1.5", "expected a whole number, got '1.5'"), ("", "expected a whole number, got ''")):
        with pytest.raises(argparse.ArgumentTypeError) as err:
            options.positive_int(text)
        assert str(err.value) == message


def test_non_negative_float():
    assert options.non_negative_float("0") == 0.0
    assert options.non_negative_float("2.5") == 2.5
    for text, message in (("-1", "must be a finite number >= 0, got '-1'"),
                          ("inf", "must be a finite number >= 0, got 'inf'"),
                          ("nan", "must be a finite number >= 0, got 'nan'"),
                          ("soon", "expected a number of seconds, got 'soon'")):
        with pytest.raises(argparse.ArgumentTypeError) as err:
            options.non_negative_float(text)
        assert str(err.value) == message


def test_the_token_comes_from_the_named_variable(monkeypatch):
    p = Parser()
    options.add_token(p, "to comment")
    args = p.parse_args(["--token-env", "MY_TOKEN"])
    monkeypatch.setenv("MY_TOKEN", "t0k")
    assert options.token(args, "comment") == "t0k"
    monkeypatch.setenv("MY_TOKEN", "")
    with pytest.raises(UsageError) as err:
        options.token(args, "comment")
    assert str(err.value) == ("$MY_TOKEN: is empty: comment needs a token "
                              "(hint: set MY_TOKEN, or name another variable with --token-env)")
    assert p.parse_args([]).token_env == "GITHUB_TOKEN"


def test_the_api_url_falls_back_to_the_environment_then_github(monkeypatch):
    p = Parser()
    options.add_token(p, "to comment")
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    assert options.api_url(p.parse_args([])) == "https://api.github.com"
    monkeypatch.setenv("GITHUB_API_URL", "https://ghe.example/api/v3")
    assert options.api_url(p.parse_args([])) == "https://ghe.example/api/v3"
    assert options.api_url(p.parse_args(["--api-url", "http://127.0.0.1:9"])) == "http://127.0.0.1:9"


def test_github_file_needs_its_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "out"))
    assert output.github_file("GITHUB_OUTPUT") == tmp_path / "out"
    monkeypatch.setenv("GITHUB_OUTPUT", "")
    with pytest.raises(UsageError) as err:
        output.github_file("GITHUB_OUTPUT")
    assert str(err.value) == ("$GITHUB_OUTPUT: is not set; --format github runs inside a GitHub Actions step "
                              "(hint: use --format text or json outside GitHub Actions)")


def test_the_step_summary_is_appended_only_inside_actions(monkeypatch, tmp_path, capsys):
    summary = tmp_path / "summary.md"
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    output.append_step_summary("gate", "# a\n")
    assert not summary.exists()
    assert capsys.readouterr() == ("", "ci-policy gate: notice: $GITHUB_STEP_SUMMARY is not set; "
                                       "the job summary is not written\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    output.append_step_summary("gate", "# a\n")
    output.append_step_summary("gate", "")
    output.append_step_summary("gate", "# b\n")
    assert summary.read_text() == "# a\n# b\n"
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("fmt, out, err", [
    ("github", "::warning::ci-policy plan: a%0Ab\n", ""),
    ("text", "", "ci-policy plan: warning: a\\nb\n"),
    ("json", "", "ci-policy plan: warning: a\\nb\n"),
])
def test_a_warning_prints_once_in_its_format(capsys, fmt, out, err):
    output.warn("plan", fmt, "a\nb")
    assert capsys.readouterr() == (out, err)


@pytest.mark.parametrize("text, value", [("1", 1), ("0000000000000000000001", 1),
                                         ("9223372036854775807", 2**63 - 1)])
def test_run_attempt_takes_ascii_digits_up_to_a_64_bit_integer(text, value):
    assert options.run_attempt(text) == value


@pytest.mark.parametrize("text, message", [
    ("0", "must be at least 1, got 0"),
    ("9223372036854775808", "must be at most 9223372036854775807, got '9223372036854775808'"),
    ("1_0", "is not a number: '1_0'"),
    ("", "is not a number: ''"),
])
def test_run_attempt_refusals(text, message):
    with pytest.raises(ValueError) as err:
        options.run_attempt(text)
    assert str(err.value) == message
