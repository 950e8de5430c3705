"""`--trust` on the commands that take plan inputs: `plan`, `list` and `run`.

The Quickstart pull request of the bundled example, planned for an untrusted head: every
accelerator stage is skipped with the one documented reason, no image is built, and the
trust shows in every format. A missing or unknown trust is a usage error (exit 2),
never a silent `trusted`.
"""

from __future__ import annotations

import json

import pytest
from cli.test_plan import GRPO_WARNING, QUICKSTART_ARGV, ROOT, parse_github_output, without_warnings
from helpers import assert_run_golden, read_golden
from helpers import run_cli as run

UNTRUSTED_ARGV = [*QUICKSTART_ARGV, "--trust", "untrusted"]
HELD = "skip: untrusted head not approved"


@pytest.fixture
def at_root(monkeypatch):
    """Run from the repository root (the Quickstart's paths are relative to it)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def test_untrusted_quickstart_text(at_root, capsys):
    assert_run_golden(run(UNTRUSTED_ARGV, capsys), 0, "cli/plan/untrusted.txt")


def test_untrusted_quickstart_json_and_github(at_root, tmp_path, monkeypatch, capsys):
    rc, out, err = run([*UNTRUSTED_ARGV, "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    doc = json.loads(out)
    assert (doc["event"], doc["cadence"], doc["trust"]) == ("pull_request", "regular", "untrusted")
    assert {s["name"]: (s["decision"], s["reasons"]) for s in doc["stages"]} == {
        "stage-a-cpu": ("run", ["run: stage is not diff-pruned (4 selected)"]),
        "stage-b-1-gpu-h200": ("skip", [HELD]),
        "stage-c-4-gpu-h200": ("skip", [HELD]),
        # run-ci-sglang calls for no test of this stage, but the diff (megatron.py) does: it waits
        # for an approval too.
        "stage-c-4-gpu-mi350": ("skip", [HELD]),
    }
    assert doc["images"] == {"cuda": "skip", "rocm": "skip"}
    outputs, summary = tmp_path / "output", tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert run([*UNTRUSTED_ARGV, "--format", "github"], capsys) == (
        0, without_warnings(read_golden("cli/plan/untrusted.txt")) + f"::warning::{GRPO_WARNING}\n", "")
    values = parse_github_output(outputs.read_text())
    assert (values["trust"], values["cuda_image"], values["rocm_image"]) == ("untrusted", "skip", "skip")
    assert values["skipped_stages"] == '["stage-b-1-gpu-h200","stage-c-4-gpu-h200","stage-c-4-gpu-mi350"]'
    assert "- **Event:** pull\\_request, **cadence:** regular, **trust:** untrusted\n" in summary.read_text()


def test_approved_is_shown_and_runs_the_labelled_stages(at_root, capsys):
    rc, out, err = run([*QUICKSTART_ARGV, "--trust", "approved", "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    doc = json.loads(out)
    assert doc["trust"] == "approved"
    assert [s["name"] for s in doc["stages"] if s["decision"] == "run"] == [
        "stage-a-cpu", "stage-b-1-gpu-h200", "stage-c-4-gpu-h200"]


def test_list_of_an_untrusted_accelerator_stage_is_empty(at_root, capsys):
    argv = ["list", "--stage", "stage-b-1-gpu-h200", *UNTRUSTED_ARGV[1:], "--format", "json"]
    rc, out, err = run(argv, capsys)
    assert (rc, err) == (0, "")
    assert json.loads(out) == {"schema": 1, "stage": "stage-b-1-gpu-h200", "decision": "skip", "reasons": [HELD],
                               "shard": None, "files": [], "plan_complete": True, "invalid": []}


def test_run_of_an_untrusted_accelerator_stage_runs_nothing(at_root, capsys):
    argv = ["run", "--stage", "stage-c-4-gpu-h200", "--shard", "1", *UNTRUSTED_ARGV[1:]]
    assert run(argv, capsys) == (0, f"Stage stage-c-4-gpu-h200 has nothing to run: {HELD}\n", "")


HINT = "    hint: pass the trust output of ci-policy pull-request\n"


@pytest.mark.parametrize("value", ["", "Trusted", "maybe"])
@pytest.mark.parametrize("command", [["plan"], ["list", "--stage", "stage-a-cpu"], ["run", "--stage", "stage-a-cpu"]])
def test_a_missing_or_unknown_trust_is_a_usage_error(at_root, capsys, command, value):
    argv = [*command, *QUICKSTART_ARGV[1:], "--trust", value]
    assert run(argv, capsys) == (2, "", f"ci-policy {command[0]}: error: --trust: expected one of trusted, "
                                         f"untrusted, approved, got {value!r}\n" + HINT)
