"""`ci-policy list`: the files of one stage shard, exactly as the plan splits them.

Every shard `list` prints is checked against `plan --format json`; that `run` runs exactly
what `list` prints is checked in test_run.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli.partial import BAD, BAD_DIAGNOSTIC, BAD_HINT, BAD_MESSAGE, partial_repo
from helpers import run_cli as run

from ci_policy.cli import main

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART_ARGV = ["plan", "--repo", "examples/gpu-repo", "--event", "pull_request",
                   "--labels-json", '["run-ci-sglang", "documentation"]', "--diff", "examples/pr-42.diff"]
STAGES = ["stage-a-cpu", "stage-b-1-gpu-h200", "stage-c-4-gpu-h200", "stage-c-4-gpu-mi350"]


def plan_json(argv: list[str], capsys) -> dict:
    rc, out, err = run(argv + ["--format", "json"], capsys)
    assert (rc, err) == (0, ""), err
    return json.loads(out)


@pytest.fixture
def at_root(monkeypatch):
    """Run from the repository root (the quickstart's paths are relative to it)."""
    monkeypatch.chdir(ROOT)


LIST_INPUTS = [
    pytest.param(QUICKSTART_ARGV[1:], id="quickstart"),
    pytest.param(["--repo", "examples/gpu-repo", "--event", "schedule", "--schedule", "0 15 * * 6"], id="weekly"),
    pytest.param(["--repo", "examples/gpu-repo", "--event", "workflow_call", "--cadence", "nightly"],
                 id="call-nightly"),
    pytest.param(["--repo", "examples/gpu-repo", "--event", "pull_request", "--label", "run-ci-image"],
                 id="scope-without-diff"),
]


@pytest.mark.parametrize("inputs", LIST_INPUTS)
def test_list_every_shard_equals_the_plan(at_root, capsys, inputs):
    plan = plan_json(["plan", *inputs], capsys)
    assert [s["name"] for s in plan["stages"]] == STAGES
    listed = 0
    for stage in plan["stages"]:
        if stage["decision"] == "skip":
            assert run(["list", *inputs, "--stage", stage["name"]], capsys) == (
                0, "", f"# stage {stage['name']} is skipped: {'; '.join(stage['reasons'])}\n")
            continue
        for sh in stage["shards"]:
            rc, out, err = run(["list", *inputs, "--stage", stage["name"], "--shard", str(sh["index"])], capsys)
            assert (rc, err) == (0, "")
            assert out.splitlines() == sh["files"]
            listed += len(sh["files"])
        if len(stage["shards"]) == 1:
            assert run(["list", *inputs, "--stage", stage["name"]], capsys) == (
                0, "".join(f + "\n" for f in stage["shards"][0]["files"]), "")
    assert listed == sum(len(s["tests"]) for s in plan["stages"])


def test_list_files_of_the_quickstart(at_root, capsys):
    assert run(["list", *QUICKSTART_ARGV[1:], "--stage", "stage-c-4-gpu-h200", "--shard", "2"], capsys) == (
        0, "tests/e2e/session_server/test_session_multiturn.py\n", "")


PLANNED = "planned: stage-a-cpu, stage-b-1-gpu-h200, stage-c-4-gpu-h200, stage-c-4-gpu-mi350"


@pytest.mark.parametrize("extra, message", [
    (["--stage", "stage-z"],
     f"--stage: 'stage-z' is not a planned stage ({PLANNED}); external stages are never planned here"),
    (["--stage", "stage-d-8-gpu-gb200", "--shard", "0"],
     "--stage: 'stage-d-8-gpu-gb200' is an external stage: another system runs it, ci-policy never plans or runs it"),
    (["--stage", "stage-c-4-gpu-h200", "--shard", "3"], "--shard: stage stage-c-4-gpu-h200 has shards 0..2, not 3"),
    (["--stage", "stage-b-1-gpu-h200", "--shard", "-1"], "--shard: stage stage-b-1-gpu-h200 has shards 0..1, not -1"),
    (["--stage", "stage-b-1-gpu-h200"], "--shard: stage stage-b-1-gpu-h200 has 2 shards; pass --shard INDEX"),
])
def test_list_errors(at_root, capsys, extra, message):
    rc, out, err = run(["list", *QUICKSTART_ARGV[1:], *extra], capsys)
    assert (rc, out, err) == (2, "", f"ci-policy list: error: {message}\n")


def test_list_requires_a_stage(at_root, capsys):
    with pytest.raises(SystemExit) as info:
        main(["list", *QUICKSTART_ARGV[1:]])
    assert info.value.code == 2
    assert "the following arguments are required: --stage" in capsys.readouterr().err


# -- --format json -------------------------------------------------------------------------

def test_list_json_of_a_running_shard(at_root, capsys):
    rc, out, err = run(["list", *QUICKSTART_ARGV[1:], "--stage", "stage-c-4-gpu-h200", "--shard", "2",
                        "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    plan = plan_json(QUICKSTART_ARGV, capsys)
    [stage] = [s for s in plan["stages"] if s["name"] == "stage-c-4-gpu-h200"]
    assert json.loads(out) == {"schema": 1, "stage": "stage-c-4-gpu-h200", "decision": "run",
                               "reasons": stage["reasons"], "shard": 2,
                               "files": ["tests/e2e/session_server/test_session_multiturn.py"],
                               "plan_complete": True, "invalid": []}
    assert out == json.dumps(json.loads(out), indent=2) + "\n"


def test_list_json_of_a_skipped_stage(at_root, tmp_path, capsys):
    diff = tmp_path / "docs.diff"
    diff.write_bytes(b"M\0docs/guide.md\0M\0README.md\0")
    inputs = ["--repo", "examples/gpu-repo", "--event", "pull_request", "--labels-json", "[]",
              "--diff", str(diff)]
    [stage] = [s for s in plan_json(["plan", *inputs], capsys)["stages"] if s["name"] == "stage-c-4-gpu-h200"]
    assert stage["decision"] == "skip"
    rc, out, err = run(["list", *inputs, "--stage", "stage-c-4-gpu-h200", "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert json.loads(out) == {"schema": 1, "stage": "stage-c-4-gpu-h200", "decision": "skip",
                               "reasons": stage["reasons"], "shard": None, "files": [],
                               "plan_complete": True, "invalid": []}


def test_list_format_choices(at_root, capsys):
    with pytest.raises(SystemExit) as info:
        main(["list", *QUICKSTART_ARGV[1:], "--stage", "stage-a-cpu", "--format", "github"])
    assert info.value.code == 2
    assert "argument --format: invalid choice: 'github' (choose from 'text', 'json')" in capsys.readouterr().err


# -- a partial plan: one invalid test file ------------------------------------------------------------

INCOMPLETE = f"ci-policy list: incomplete: 1 invalid test file(s) left out: {BAD}\n"
SECTION = (f"invalid (not scheduled): 1 test file\n  {BAD}\n    {BAD}:3:39: CP227 label-unknown: {BAD_MESSAGE}\n"
           f"        hint: {BAD_HINT}\n")


def test_list_of_a_partial_plan_prints_the_shard_then_the_invalid_file_and_exits_1(make_repo, capsys):
    repo, inputs = partial_repo(make_repo)
    argv = ["list", "--repo", str(repo), *inputs, "--stage", "gpu-a", "--shard", "1"]
    assert run(argv, capsys) == (1, "tests/e2e/test_ok2.py\n", SECTION + INCOMPLETE)
    rc, out, err = run([*argv, "--format", "json"], capsys)
    assert (rc, err) == (1, INCOMPLETE)
    assert json.loads(out) == {
        "schema": 1, "stage": "gpu-a", "decision": "run",
        "reasons": [f"run: {BAD} changed and is an invalid test file, so every stage runs (fail safe)",
                    "run: requested by run-ci-megatron"],
        "shard": 1, "files": ["tests/e2e/test_ok2.py"],
        "plan_complete": False, "invalid": [{"file": BAD, "diagnostics": [BAD_DIAGNOSTIC]}]}
    # A skipped stage: nothing on stdout, its reason and the invalid file on stderr.
    assert run(["list", "--repo", str(repo), *inputs, "--stage", "amd"], capsys) == (
        1, "", "# stage amd is skipped: skip: no registered tests\n" + SECTION + INCOMPLETE)
