"""`list --plan FILE` and `run --plan FILE`: one plan per CI run, checked against the checkout.

The plan file is `plan --format json` of the same inputs; on an unchanged checkout `list`
and `run` with it give exactly what they give re-planning. Every refusal is asserted
exactly: a changed checkout (exit 1, naming what differs), a file that is not a plan or a
stage or shard not in it (exit 2), `--plan` together with plan inputs (exit 2).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli.partial import BAD, partial_repo
from cli.test_list import LIST_INPUTS, ROOT
from cli.test_run import PLAN_ARGS, cli, gpu_test, records
from helpers import EXAMPLE_RUN_SETTINGS, EXAMPLE_RUNNERS
from helpers import run_cli as run

from ci_policy import __version__
from ci_policy.plan.planfile import inputs_dict

HINT = ("hint: re-run `ci-policy plan --format json` on this checkout and pass its output, "
        "or leave out --plan to plan here\n")
NOT_A_PLAN = "hint: pass the file `ci-policy plan --format json` wrote in this run's plan job\n"


def write_plan(argv: list[str], capsys, path: Path, *, complete: bool = True) -> dict:
    rc, out, err = run(["plan", *argv, "--format", "json"], capsys)
    assert rc == (0 if complete else 1), err
    assert (err == "") == complete
    path.write_text(out)
    return json.loads(out)


@pytest.fixture
def example(tmp_path) -> Path:
    """A copy of the example repository, free to edit."""
    repo = tmp_path / "gpu-repo"
    shutil.copytree(ROOT / "examples" / "gpu-repo", repo)
    return repo


@pytest.mark.parametrize("inputs", LIST_INPUTS)
def test_list_with_the_plan_equals_list_replanning(monkeypatch, tmp_path, capsys, inputs):
    monkeypatch.chdir(ROOT)
    plan = write_plan(inputs, capsys, tmp_path / "plan.json")
    checked = 0
    for stage in plan["stages"]:
        for shard in [sh["index"] for sh in stage["shards"]] or [None]:
            where = ["--stage", stage["name"], *([] if shard is None else ["--shard", str(shard)])]
            for fmt in ("text", "json"):
                replanned = run(["list", *inputs, *where, "--format", fmt], capsys)
                assert run(["list", "--repo", "examples/gpu-repo", "--plan", str(tmp_path / "plan.json"), *where,
                            "--format", fmt], capsys) == replanned
                checked += 1
    assert checked >= 4


def test_the_inputs_name_every_discovered_test_file(example, capsys, tmp_path):
    plan = write_plan(["--repo", str(example), "--event", "push"], capsys, tmp_path / "plan.json")
    inputs = plan["inputs"]
    rc, out, _err = run(["registry", "--repo", str(example), "--format", "json"], capsys)
    assert rc == 0
    assert set(inputs["files"]) == {r["file"] for r in json.loads(out)["registrations"]}
    assert all(cid.startswith(("sha256:", "git:")) for cid in inputs["files"].values())
    assert inputs["labels"] is not None and inputs["config"] is not None
    assert inputs == inputs_dict(inputs["config"], inputs["labels"], inputs["files"], inputs["tree"])


# -- run --plan runs what run runs ------------------------------------------------------------

def test_run_with_the_plan_runs_exactly_what_run_replanning_runs(make_repo, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    files = {f"tests/multi/test_{name}.py": gpu_test(f'open({str(state / name)!r}, "a").write("x")',
                                                      suite="multi", est=est)
             for name, est in [("a", 10), ("b", 7), ("c", 5), ("d", 4), ("e", 3), ("f", 1)]}
    repo = make_repo(files, config=RUN_CONFIG)
    plan = cli(repo, "plan", *PLAN_ARGS, "--format", "json")
    assert (plan.returncode, plan.stderr) == (0, "")
    (tmp_path / "plan.json").write_text(plan.stdout)
    for shard in range(3):
        replanned, planned = tmp_path / f"replanned-{shard}.jsonl", tmp_path / f"planned-{shard}.jsonl"
        first = cli(repo, "run", "--stage", "multi", "--shard", str(shard), *PLAN_ARGS, "--timings-out",
                    str(replanned))
        second = cli(repo, "run", "--stage", "multi", "--shard", str(shard), "--plan", str(tmp_path / "plan.json"),
                     "--timings-out", str(planned))
        assert (first.returncode, second.returncode) == (0, 0), second.stdout + second.stderr
        assert mask(second.stdout) == mask(first.stdout)
        assert ([(r["file"], r["est_time"], r["status"]) for r in records(planned)]
                == [(r["file"], r["est_time"], r["status"]) for r in records(replanned)])
    # Every file ran twice: once re-planning, once from the plan.
    assert {p.name: p.read_text() for p in state.iterdir()} == {name: "xx" for name in "abcdef"}
    lanes = cli(repo, "run", "--stage", "multi", "--shards", "0 2", "--plan", str(tmp_path / "plan.json"),
                "--timings-out", str(tmp_path / "lanes.jsonl"))
    assert lanes.returncode == 0, lanes.stdout + lanes.stderr
    assert [r["shard"] for r in records(tmp_path / "lanes.jsonl")] == [0] + [2] * (
        len(json.loads(plan.stdout)["stages"][1]["shards"][2]["files"]))


RUN_CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: gpu, backend: cuda, runs_on: [h200], timeout_per_file: 2}
  - {name: multi, backend: cuda, runs_on: [h200], partitions: 3, timeout_per_file: 2}
runner: {kill_grace: 1}
"""


def mask(text: str) -> str:
    import re

    return re.sub(r"elapsed=\d+\.\ds", "elapsed=<T>", text)


def test_run_with_the_plan_refuses_a_changed_file_before_running_anything(make_repo, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    repo = make_repo({"tests/gpu/test_ok.py": gpu_test(f'open({str(state / "ran")!r}, "w").close()')},
                     config=RUN_CONFIG)
    plan = cli(repo, "plan", *PLAN_ARGS, "--format", "json")
    (tmp_path / "plan.json").write_text(plan.stdout)
    with open(repo / "tests" / "gpu" / "test_ok.py", "a") as fh:
        fh.write("# edited after planning\n")
    proc = cli(repo, "run", "--stage", "gpu", "--plan", "../plan.json", "--timings-out", str(tmp_path / "t.jsonl"))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == ("../plan.json: the plan does not match the checkout: tests/gpu/test_ok.py changed\n"
                           "    " + HINT + "ci-policy: 1 error\n")
    assert list(state.iterdir()) == []


# -- refusals ---------------------------------------------------------------------------------

def edit(repo: Path, rel: str, text: str = "# edited\n") -> None:
    with open(repo / rel, "a") as fh:
        fh.write(text)


MISMATCHES = [
    pytest.param(lambda r: edit(r, ".github/ci-policy.yml"), "configuration .github/ci-policy.yml changed",
                 id="config"),
    pytest.param(lambda r: edit(r, "labels.py"), "labels.py changed", id="labels"),
    pytest.param(lambda r: (edit(r, "tests/fast/test_kl.py"),
                            shutil.copy(r / "tests/fast/test_kl.py", r / "tests/fast/test_new.py"),
                            (r / "tests/fast/test_rollout.py").unlink()),
                 "tests/fast/test_kl.py changed; tests/fast/test_new.py is not in the plan; "
                 "tests/fast/test_rollout.py is missing", id="files"),
    pytest.param(lambda r: [edit(r, "labels.py")] + [shutil.copy(r / "tests/fast/test_kl.py",
                                                                 r / f"tests/fast/test_n{i}.py") for i in range(6)],
                 "labels.py changed; tests/fast/test_n0.py is not in the plan; tests/fast/test_n1.py is not in the "
                 "plan; tests/fast/test_n2.py is not in the plan; tests/fast/test_n3.py is not in the plan; "
                 "and 2 more", id="and-more"),
    pytest.param(lambda r: (r / "labels.py").unlink(), "labels.py is missing", id="labels-gone"),
    # Compared before it is parsed: a configuration that no longer parses is a changed one.
    pytest.param(lambda r: (r / ".github/ci-policy.yml").write_text("version: [\n"),
                 "configuration .github/ci-policy.yml changed", id="config-broken"),
]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
                           "-c", "commit.gpgsign=false", *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def committed(repo: Path, monkeypatch) -> Path:
    """`repo` made a git work tree with everything committed: a clean tree."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "planned")
    return repo


@pytest.mark.parametrize("change, named", MISMATCHES)
@pytest.mark.parametrize("command", ["list", "run"])
@pytest.mark.parametrize("in_git", [False, True], ids=["plain", "git"])
def test_a_changed_checkout_is_refused_naming_what_differs(example, monkeypatch, tmp_path, capsys, change, named,
                                                           command, in_git):
    if in_git:
        committed(example, monkeypatch)
    monkeypatch.chdir(tmp_path)
    plan = write_plan(["--repo", str(example), "--event", "push"], capsys, tmp_path / "plan.json")
    assert (plan["inputs"]["tree"] is not None) is in_git
    change(example)
    if in_git and command == "run":  # committed: a clean checkout, but of another tree
        git(example, "add", "-A")
        git(example, "commit", "-q", "-m", "changed")
    assert run([command, "--repo", str(example), "--plan", "plan.json", "--stage", "stage-a-cpu"], capsys) == (
        1, "", f"plan.json: the plan does not match the checkout: {named}\n    {HINT}ci-policy: 1 error\n")


def _doc(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "plan.json").read_text())


LONE_SURROGATE = "not a JSON plan: a string holds a lone surrogate escape (\\ud800 to \\udfff)"
NOT_PLANS = [
    pytest.param(lambda d: "{", "not a JSON plan: Expecting property name enclosed in double quotes: "
                 "line 1 column 2 (char 1)", id="bad-json"),
    pytest.param(lambda d: '{"schema": 1, "schema": 1}', "not a JSON plan: duplicate key 'schema'", id="duplicate"),
    pytest.param(lambda d: "[" * 100_000 + "]" * 100_000, "not a JSON plan: nested too deeply", id="deep"),
    # Nested less deeply than the JSON reader refuses, with an escape the surrogate check walks into
    # (with its own stack: it finds the surrogate, whatever the depth).
    pytest.param(lambda d: "[" * 600 + '"\\ud800"' + "]" * 600,
                 "not a JSON plan: a string holds a lone surrogate escape (\\ud800 to \\udfff)", id="deep-escape"),
    pytest.param(lambda d: "[1]", "expected an object, got an array", id="array"),
    pytest.param(lambda d: {**d, "inputs": {**d["inputs"], "files": {**d["inputs"]["files"], "tests/\ud800.py": "x"}}},
                 LONE_SURROGATE, id="lone-surrogate-key"),
    pytest.param(lambda d: _set(d, ["stages", 0, "reasons"], ["\udc00"]),
                 LONE_SURROGATE, id="lone-surrogate"),
    pytest.param(lambda d: {**d, "schema": 2}, "schema: expected schema 1, got 2", id="schema"),
    pytest.param(lambda d: {k: v for k, v in d.items() if k != "inputs"}, "missing key 'inputs'", id="no-inputs"),
    pytest.param(lambda d: {**d, "inputs": {**d["inputs"], "files": {**d["inputs"]["files"], "tests/x.py": "abc"}}},
                 'inputs.files["tests/x.py"]: expected a content id (git:<40 hex> or sha256:<64 hex>), got "abc"',
                 id="content-id"),
    pytest.param(lambda d: {**d, "inputs": {**d["inputs"], "labels": None}},
                 "inputs.digest: does not match the inputs it covers (the file was edited)", id="digest"),
    pytest.param(lambda d: _set(d, ["stages", 0, "tests", 0, "file"], "../x.py"),
                 'stages[0].tests[0].file: "../x.py" is not a plain repo-relative path', id="dotdot"),
    pytest.param(lambda d: _set(d, ["stages", 0, "tests", 0, "file"], "/etc/passwd"),
                 'stages[0].tests[0].file: "/etc/passwd" is not a plain repo-relative path', id="absolute"),
    pytest.param(lambda d: _set(d, ["stages", 0, "tests", 0, "file"], "tests/fast/./test_kl.py"),
                 'stages[0].tests[0].file: "tests/fast/./test_kl.py" is not a plain repo-relative path',
                 id="not-normal"),
    pytest.param(lambda d: _set(d, ["stages", 0, "tests", 0, "est_time"], -1),
                 "stages[0].tests[0].est_time: expected a number in [0, 604800], got -1", id="est-negative"),
    pytest.param(lambda d: _set(d, ["stages", 0, "tests", 0, "est_time"], True),
                 "stages[0].tests[0].est_time: expected a number in [0, 604800], got true", id="est-bool"),
    pytest.param(lambda d: _set(d, ["stages", 0, "shards", 0, "index"], 3),
                 "stages[0].shards[0].index: expected 0: shards are numbered from 0 in order", id="index"),
    pytest.param(lambda d: _set(d, ["stages", 0, "shards", 0, "files"],
                                d["stages"][0]["shards"][0]["files"] + ["tests/e2e/test_fsdp_grpo.py"]),
                 'stages[0].shards[0].files[4]: "tests/e2e/test_fsdp_grpo.py" is not a test of the stage, '
                 "or is in two shards", id="foreign-file"),
    pytest.param(lambda d: _set(d, ["stages", 0, "decision"], "maybe"),
                 'stages[0].decision: expected run or skip, got "maybe"', id="decision"),
    pytest.param(lambda d: _set(d, ["stages", 0, "name"], "stage-x"),
                 "stage 'stage-x' is not a stage ci-policy plans in the configuration", id="unknown-stage"),
]


def _set(doc: dict, keys: list, value) -> dict:
    target = doc
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    return doc


@pytest.mark.parametrize("make, message", NOT_PLANS)
def test_a_file_that_is_not_a_plan_is_a_usage_error(example, monkeypatch, tmp_path, capsys, make, message):
    monkeypatch.chdir(tmp_path)
    write_plan(["--repo", str(example), "--event", "push"], capsys, tmp_path / "plan.json")
    made = make(_doc(tmp_path))
    (tmp_path / "plan.json").write_text(made if isinstance(made, str) else json.dumps(made))
    hint = HINT if message.startswith("stage ") else NOT_A_PLAN
    assert run(["list", "--repo", str(example), "--plan", "plan.json", "--stage", "stage-a-cpu"], capsys) == (
        2, "", f"ci-policy list: error: --plan: plan.json: {message}\n    {hint}")


def test_a_character_outside_the_bmp_is_no_lone_surrogate(example, monkeypatch, tmp_path, capsys):
    # json.dumps writes it as a surrogate pair escape, which reads back as the character.
    monkeypatch.chdir(tmp_path)
    write_plan(["--repo", str(example), "--event", "push"], capsys, tmp_path / "plan.json")
    doc = _set(_doc(tmp_path), ["stages", 0, "reasons"], ["rocket \U0001F680"])
    (tmp_path / "plan.json").write_text(json.dumps(doc))
    assert "\\ud83d\\ude80" in (tmp_path / "plan.json").read_text()
    code, out, err = run(["list", "--repo", str(example), "--plan", "plan.json", "--stage", "stage-a-cpu"], capsys)
    assert (code, err) == (0, "")


def test_a_stage_or_shard_not_in_the_plan(example, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    write_plan(["--repo", str(example), "--event", "push"], capsys, tmp_path / "plan.json")
    base = ["run", "--repo", str(example), "--plan", "plan.json"]
    assert run([*base, "--stage", "nope"], capsys) == (
        2, "", "ci-policy run: error: --stage: 'nope' is not a planned stage (planned: stage-a-cpu, "
               "stage-b-1-gpu-h200, stage-c-4-gpu-h200, stage-c-4-gpu-mi350); external stages are never planned here\n")
    assert run([*base, "--stage", "stage-a-cpu", "--shard", "1"], capsys) == (
        2, "", "ci-policy run: error: --shard: stage stage-a-cpu has shards 0..0, not 1\n")


@pytest.mark.parametrize("args, message, hint", [
    (["--plan", "plan.json", "--event", "push"], "--plan: the plan file holds the plan inputs; --event is not taken "
     "with it", "pass either --plan FILE or the plan inputs (--event ...), not both"),
    (["--plan", "plan.json", "--trust", "trusted"], "--plan: the plan file holds the plan inputs; --trust is not "
     "taken with it", "pass either --plan FILE or the plan inputs (--event ...), not both"),
    (["--plan", "missing.json"], "--plan: cannot read missing.json: No such file or directory",
     "pass the file `ci-policy plan --format json` wrote in this run's plan job"),
    ([], "--event: is required", "pass the plan inputs (--event ...), or --plan FILE from this run's plan job"),
], ids=["with-event", "with-trust", "missing", "neither"])
@pytest.mark.parametrize("command", ["list", "run"])
def test_usage_errors(example, monkeypatch, tmp_path, capsys, command, args, message, hint):
    monkeypatch.chdir(tmp_path)
    write_plan(["--repo", str(example), "--event", "push"], capsys, tmp_path / "plan.json")
    assert run([command, "--repo", str(example), "--stage", "stage-a-cpu", *args], capsys) == (
        2, "", f"ci-policy {command}: error: {message}\n    hint: {hint}\n")


def test_a_partial_plan_lists_its_invalid_files_as_replanning_does(make_repo, tmp_path, capsys, monkeypatch):
    repo, inputs = partial_repo(make_repo)
    write_plan(["--repo", str(repo), *inputs], capsys, tmp_path / "plan.json", complete=False)
    for fmt in ("text", "json"):
        where = ["--stage", "gpu-a", "--shard", "1", "--format", fmt]
        replanned = run(["list", "--repo", str(repo), *inputs, *where], capsys)
        assert replanned[0] == 1 and BAD in replanned[2]
        assert run(["list", "--repo", str(repo), "--plan", str(tmp_path / "plan.json"), *where], capsys) == replanned


def test_the_plan_file_is_enough_no_test_file_is_parsed(example, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    write_plan(["--repo", str(example), "--event", "push"], capsys, tmp_path / "plan.json")
    expected = run(["list", "--repo", str(example), "--event", "push", "--stage", "stage-a-cpu"], capsys)

    def no_parse(*args, **kwargs):
        raise AssertionError("a test file was parsed")
    monkeypatch.setattr("ci_policy.read.markers.scan", no_parse)
    monkeypatch.setattr("ci_policy.model.scan.scan", no_parse)
    assert run(["list", "--repo", str(example), "--plan", "plan.json", "--stage", "stage-a-cpu"], capsys) == expected


def test_a_configuration_outside_the_checkout_is_named_as_given(example, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "trusted").mkdir()
    shutil.copy(example / ".github" / "ci-policy.yml", tmp_path / "trusted" / "ci-policy.yml")
    base = ["--repo", str(example), "--config", "trusted/ci-policy.yml"]
    write_plan([*base, "--event", "push"], capsys, tmp_path / "plan.json")
    expected = run(["list", *base, "--event", "push", "--stage", "stage-a-cpu"], capsys)
    assert run(["list", *base, "--plan", "plan.json", "--stage", "stage-a-cpu"], capsys) == expected
    edit(tmp_path, "trusted/ci-policy.yml")
    assert run(["list", *base, "--plan", "plan.json", "--stage", "stage-a-cpu"], capsys) == (
        1, "", "plan.json: the plan does not match the checkout: configuration trusted/ci-policy.yml changed\n"
               f"    {HINT}ci-policy: 1 error\n")


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "github"])
@pytest.mark.parametrize("inputs", LIST_INPUTS[:2])
def test_json_out_writes_the_plan_json_beside_any_format(monkeypatch, tmp_path, capsys, fmt, inputs):
    monkeypatch.chdir(ROOT)
    for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
        monkeypatch.setenv(name, str(tmp_path / name))
    expected = run(["plan", *inputs, "--format", "json"], capsys)
    alone = run(["plan", *inputs, "--format", fmt], capsys)
    out = tmp_path / "out" / "plan.json"
    out.parent.mkdir()
    assert run(["plan", *inputs, "--format", fmt, "--json-out", str(out)], capsys) == alone
    assert out.read_text() == expected[1]
    assert sorted(p.name for p in out.parent.iterdir()) == ["plan.json"]


def test_json_out_is_written_whole_for_a_partial_plan(make_repo, tmp_path, capsys):
    repo, inputs = partial_repo(make_repo)
    rc, out, err = run(["plan", "--repo", str(repo), *inputs, "--format", "json"], capsys)
    assert rc == 1 and BAD in err
    assert run(["plan", "--repo", str(repo), *inputs, "--json-out", str(tmp_path / "plan.json")], capsys)[0] == 1
    assert (tmp_path / "plan.json").read_text() == out


def test_json_out_usage_errors(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(ROOT)
    inputs = LIST_INPUTS[0].values[0]
    assert run(["plan", *inputs, "--json-out", str(tmp_path / "missing" / "plan.json")], capsys) == (
        2, "", "ci-policy plan: error: --json-out: cannot write the plan file: No such file or directory\n"
               "    hint: name a file in an existing, writable directory\n")
    assert run(["plan", *inputs, "--explain", "tests/fast/test_kl.py", "--json-out", str(tmp_path / "p.json")],
               capsys) == (
        2, "", "ci-policy plan: error: --json-out: --explain prints an explanation instead of the plan, so there "
               "is no plan to write\n    hint: run the plan and the explanation as two commands\n")
    assert not (tmp_path / "p.json").exists()


def plan_directory(tmp_path: Path, capsys, *argv: str) -> Path:
    """`plan ARGV --json-out DIR/plan.json --stage-plans DIR/stages`, as the plan job writes it: DIR."""
    planned = tmp_path / "planned"
    planned.mkdir()
    assert run(["plan", *argv, "--json-out", str(planned / "plan.json"), "--stage-plans", str(planned / "stages")],
               capsys)[0] == 0
    return planned


STAGE_PLAN_REFUSED = ("{file}: a per-stage plan lists no test file's content id, and {why}\n    hint: pass the "
                      "whole plan (`plan --json-out FILE`), or the directory holding it and the per-stage plans "
                      "(`--plan DIR`)\nci-policy: 1 error\n")
NOT_THE_TREE = "the checkout is not the clean git tree it was planned on"


@pytest.mark.parametrize("inputs", [["--event", "push"], ["--event", "pull_request", "--label", "run-ci-megatron"],
                                    ["--event", "schedule", "--schedule", "0 15 * * 6"]], ids=["push", "pr", "weekly"])
def test_stage_plans_hold_one_stage_each_and_read_as_the_whole_plan_on_its_clean_tree(
        example, monkeypatch, tmp_path, capsys, inputs):
    committed(example, monkeypatch)
    planned = tmp_path / "planned"
    planned.mkdir()
    argv = ["--repo", str(example), *inputs]
    alone = run(["plan", *argv], capsys)
    assert run(["plan", *argv, "--json-out", str(planned / "plan.json"), "--stage-plans", str(planned / "stages")],
               capsys) == alone
    whole = json.loads((planned / "plan.json").read_text())
    assert whole["inputs"]["tree"] is not None
    names = [stage["name"] for stage in whole["stages"]]
    assert sorted(p.name for p in (planned / "stages").iterdir()) == sorted(f"{name}.json" for name in names)
    shared = {key: value for key, value in whole["inputs"].items() if key != "files"}
    checked = 0
    for stage in whole["stages"]:
        file = planned / "stages" / f"{stage['name']}.json"
        runner, timeout = EXAMPLE_RUNNERS[stage["name"]]
        assert json.loads(file.read_text()) == {**whole, "stages": [stage], "inputs": shared, "run_settings": {
            **EXAMPLE_RUN_SETTINGS, "runner": runner, "timeout_per_file": timeout}}
        for shard in [sh["index"] for sh in stage["shards"]] or [None]:
            where = ["--stage", stage["name"], *([] if shard is None else ["--shard", str(shard)])]
            from_whole = run(["list", "--repo", str(example), "--plan", str(planned / "plan.json"), *where,
                              "--format", "json"], capsys)
            assert from_whole[0] == 0
            for plan in (file, planned):  # the stage plan, and the directory (which reads it)
                assert run(["list", "--repo", str(example), "--plan", str(plan), *where, "--format", "json"],
                           capsys) == from_whole
            checked += 1
    assert checked >= 2
    # A stage plan holds no other stage.
    first, other = names[0], names[-1]
    assert run(["list", "--repo", str(example), "--plan", str(planned / "stages" / f"{first}.json"),
                "--stage", other], capsys) == (
        2, "", f"ci-policy list: error: --stage: {other!r} is not a planned stage (planned: {first}); "
               "external stages are never planned here\n")


def test_a_stage_plan_holds_only_on_its_clean_tree_and_the_directory_falls_back_to_the_whole_plan(
        example, monkeypatch, tmp_path, capsys):
    from ci_policy.app import plan_files
    from ci_policy.plan import planfile

    committed(example, monkeypatch)
    planned = plan_directory(tmp_path, capsys, "--repo", str(example), "--event", "push")
    own = planned / "stages" / "stage-a-cpu.json"
    listed = ["list", "--repo", str(example), "--stage", "stage-a-cpu", "--format", "json"]
    expected = run([*listed, "--plan", str(planned / "plan.json")], capsys)
    read: list[str] = []
    real = planfile.read_plan_file
    monkeypatch.setattr(planfile, "read_plan_file", lambda text, source, stage=None: (
        read.append(source), real(text, source, stage))[1])
    assert run([*listed, "--plan", str(planned)], capsys) == expected
    assert read == [str(own)]  # the clean tree: the stage's own plan, nothing else
    # An untracked file (not a test) makes the tree unclean: the stage plan is refused, the
    # directory falls back to the whole plan, compared file by file and still the plan's.
    (example / "notes.txt").write_text("notes\n")
    read.clear()
    assert run([*listed, "--plan", str(own)], capsys) == (1, "", STAGE_PLAN_REFUSED.format(file=own, why=NOT_THE_TREE))
    assert run([*listed, "--plan", str(planned)], capsys) == expected
    assert read == [str(own), str(own), str(planned / "plan.json")]
    # A changed test file: the whole plan names it.
    (example / "notes.txt").unlink()
    with open(example / "tests" / "fast" / "test_kl.py", "a") as fh:
        fh.write("# edited\n")
    assert run([*listed, "--plan", str(planned)], capsys) == (
        1, "", f"{planned / 'plan.json'}: the plan does not match the checkout: tests/fast/test_kl.py changed\n"
               f"    {HINT}ci-policy: 1 error\n")
    # Without the stage's own plan, the whole plan.
    own.unlink()
    assert run([*listed, "--plan", str(planned)], capsys)[0] == 1
    assert plan_files.STAGE_PLANS == "stages" and plan_files.WHOLE_PLAN == "plan.json"


def test_another_configuration_of_the_same_clean_tree_is_not_the_one_planned(example, monkeypatch, tmp_path,
                                                                             capsys):
    # Both files are in the tree the plan recorded: which one `--config` names is compared too.
    config = (example / ".github" / "ci-policy.yml").read_text()
    (example / ".github" / "alt.yml").write_text(config.replace("partitions: 3", "partitions: 1"))
    committed(example, monkeypatch)
    planned = plan_directory(tmp_path, capsys, "--repo", str(example), "--event", "push")
    own = planned / "stages" / "stage-a-cpu.json"
    listed = ["list", "--repo", str(example), "--config", str(example / ".github" / "alt.yml"),
              "--stage", "stage-a-cpu"]
    assert run([*listed, "--plan", str(own)], capsys) == (1, "", STAGE_PLAN_REFUSED.format(
        file=own, why="the configuration .github/alt.yml is not the one it was planned with"))
    for plan in (planned, planned / "plan.json"):  # the whole plan, compared: the configuration changed
        assert run([*listed, "--plan", str(plan)], capsys) == (
            1, "", f"{planned / 'plan.json'}: the plan does not match the checkout: configuration .github/alt.yml "
                   f"changed\n    {HINT}ci-policy: 1 error\n")
    # The configuration planned, named explicitly, is the one planned.
    default = ["list", "--repo", str(example), "--config", str(example / ".github" / "ci-policy.yml"),
               "--stage", "stage-a-cpu"]
    assert run([*default, "--plan", str(own)], capsys) == run([*default, "--plan", str(planned / "plan.json")],
                                                              capsys)


def test_a_stage_plan_names_a_configuration_outside_the_checkout_that_changed(example, monkeypatch, tmp_path,
                                                                                capsys):
    outside = tmp_path / "trusted.yml"
    outside.write_text((example / ".github" / "ci-policy.yml").read_text())
    committed(example, monkeypatch)
    planned = plan_directory(tmp_path, capsys, "--repo", str(example), "--config", str(outside), "--event", "push")
    own = planned / "stages" / "stage-a-cpu.json"
    listed = ["list", "--repo", str(example), "--config", str(outside), "--stage", "stage-a-cpu"]
    expected = run([*listed, "--plan", str(planned / "plan.json")], capsys)
    assert expected[0] == 0 and run([*listed, "--plan", str(own)], capsys) == expected
    edit(outside.parent, outside.name)
    assert run([*listed, "--plan", str(own)], capsys) == (1, "", STAGE_PLAN_REFUSED.format(
        file=own, why=f"the configuration {outside} is not the one it was planned with"))


def test_a_stage_plan_of_a_checkout_that_is_no_git_tree_is_refused(example, tmp_path, capsys):
    planned = plan_directory(tmp_path, capsys, "--repo", str(example), "--event", "push")
    own = planned / "stages" / "stage-a-cpu.json"
    assert json.loads(own.read_text())["inputs"]["tree"] is None
    listed = ["list", "--repo", str(example), "--stage", "stage-a-cpu"]
    assert run([*listed, "--plan", str(own)], capsys) == (1, "", STAGE_PLAN_REFUSED.format(file=own, why=NOT_THE_TREE))
    assert run([*listed, "--plan", str(planned)], capsys) == run([*listed, "--plan", str(planned / "plan.json")],
                                                                   capsys)


def test_run_with_the_plan_directory_runs_what_run_with_the_whole_plan_runs(make_repo, monkeypatch, tmp_path):
    files = {f"tests/multi/test_{name}.py": gpu_test("pass", suite="multi", est=est)
             for name, est in [("a", 10), ("b", 7), ("c", 5), ("d", 4)]}
    files["tests/gpu/test_ok.py"] = gpu_test("pass")
    repo = committed(make_repo(files, config=RUN_CONFIG), monkeypatch)
    planned = tmp_path / "planned"
    planned.mkdir()
    plan = cli(repo, "plan", *PLAN_ARGS, "--json-out", str(planned / "plan.json"),
               "--stage-plans", str(planned / "stages"))
    assert (plan.returncode, plan.stderr) == (0, ""), plan.stdout
    outs: dict[str, list[str]] = {"whole": [], "dir": []}
    for mode, plan_file in (("whole", planned / "plan.json"), ("dir", planned)):
        if mode == "dir":  # nothing but the stage's own plan to read: the checkout is its clean tree
            (planned / "plan.json").unlink()
        for shard in range(3):
            # The records outside the checkout, which stays the clean tree planned.
            proc = cli(repo, "run", "--stage", "multi", "--shard", str(shard), "--plan", str(plan_file),
                       "--timings-out", str(tmp_path / f"{mode}-{shard}.jsonl"),
                       "--records-out", str(tmp_path / "records"))
            assert proc.returncode == 0, proc.stdout + proc.stderr
            outs[mode].append(mask(proc.stdout))
    assert outs["whole"] == outs["dir"]
    for shard in range(3):
        assert ([r["file"] for r in records(tmp_path / f"whole-{shard}.jsonl")]
                == [r["file"] for r in records(tmp_path / f"dir-{shard}.jsonl")] != [])


def test_a_stage_name_near_the_file_name_limit_gets_its_plan(make_repo, tmp_path, capsys):
    name = "s" * 240  # `<name>.json` is 245 bytes; its temporary file's name must stay under 255 too
    repo = make_repo({"tests/unit/test_a.py": gpu_test("pass", suite=name)},
                     config=f"version: 1\ndiscovery: {{roots: [tests]}}\nstages:\n"
                            f"  - {{name: {name}, backend: cuda, runs_on: [h200]}}\n")
    assert run(["plan", "--repo", str(repo), "--event", "push", "--stage-plans", str(tmp_path / "stages")],
               capsys)[0] == 0
    assert [p.name for p in (tmp_path / "stages").iterdir()] == [f"{name}.json"]


def test_stage_plans_usage_errors(example, monkeypatch, tmp_path, capsys):
    inputs = ["--repo", str(example), "--event", "push"]
    assert run(["plan", *inputs, "--stage-plans", str(example / "plans")], capsys) == (
        2, "", f"ci-policy plan: error: --stage-plans: {example / 'plans'} is inside the checkout\n"
               "    hint: name a directory outside the checkout (a pull request could have put a symlink there)\n")
    (tmp_path / "file").write_text("")
    assert run(["plan", *inputs, "--stage-plans", str(tmp_path / "file" / "plans")], capsys) == (
        2, "", f"ci-policy plan: error: --stage-plans: cannot create {tmp_path / 'file' / 'plans'}: Not a directory\n"
               "    hint: name a directory that can be created and written\n")
    assert run(["plan", *inputs, "--explain", "tests/fast/test_kl.py", "--stage-plans", str(tmp_path / "p")],
               capsys) == (
        2, "", "ci-policy plan: error: --stage-plans: --explain prints an explanation instead of the plan, so there "
               "is no plan to write\n    hint: run the plan and the explanation as two commands\n")
    assert not (example / "plans").exists() and not (tmp_path / "p").exists()


def test_a_clean_checkout_of_the_planned_tree_is_not_listed_again(example, monkeypatch, tmp_path, capsys):
    from ci_policy.model import discovery

    committed(example, monkeypatch)
    monkeypatch.chdir(tmp_path)
    plan = write_plan(["--repo", str(example), "--event", "push"], capsys, tmp_path / "plan.json")
    assert plan["inputs"]["tree"] == git(example, "rev-parse", "HEAD^{tree}")
    expected = run(["list", "--repo", str(example), "--event", "push", "--stage", "stage-a-cpu"], capsys)
    calls = []
    real = discovery.discover

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(discovery, "discover", counted)
    listed = ["list", "--repo", str(example), "--plan", "plan.json", "--stage", "stage-a-cpu"]
    assert run(listed, capsys) == expected
    assert calls == []
    # An untracked file (not a test) makes the tree unclean: listed, discovered, compared, and still the plan's.
    (example / "notes.txt").write_text("notes\n")
    assert run(listed, capsys) == expected
    assert calls == [example]


QUARANTINED = {"file": "tests/fast/test_a.py", "reason": "flaky", "owner": "@alice", "until": "2027-01-15"}
NOT_RUN_SETTINGS = [
    pytest.param(lambda r: {k: v for k, v in r.items() if k != "env"}, "run_settings: missing key 'env'", id="missing"),
    pytest.param(lambda r: {**r, "runner": "bash"}, 'run_settings.runner: expected one of python, pytest, got "bash"',
                 id="runner"),
    pytest.param(lambda r: {**r, "timeout_per_file": 0},
                 "run_settings.timeout_per_file: expected null or a number in (0, 604800], got 0", id="timeout"),
    pytest.param(lambda r: {**r, "timeout_from_est_time": {"factor": 2}},
                 "run_settings.timeout_from_est_time: missing key 'floor'", id="from-est-floor"),
    pytest.param(lambda r: {**r, "timeout_from_est_time": {"factor": 101, "floor": 60}},
                 "run_settings.timeout_from_est_time.factor: expected null or a number in (0, 100], got 101",
                 id="from-est-factor"),
    pytest.param(lambda r: {**r, "kill_grace": 3601},
                 "run_settings.kill_grace: expected a number in [0, 3600], got 3601", id="kill-grace"),
    pytest.param(lambda r: {**r, "retry": {**r["retry"], "never": ["ok", "("]}},
                 "run_settings.retry.never[1]: '(' is not a valid regular expression: missing ), unterminated "
                 "subpattern at position 0", id="regex"),
    pytest.param(lambda r: {**r, "retry": {**r["retry"], "never": ["(" * 200_000]}},
                 None, id="regex-too-deep"),
    pytest.param(lambda r: {**r, "shell": True}, "run_settings: unknown key \"shell\"", id="unknown-key"),
    pytest.param(lambda r: {**r, "env": {**r["env"], "keep": ["*"]}}, "run_settings.env: unknown key \"keep\"",
                 id="unknown-env-key"),
    pytest.param(lambda r: {**r, "env": {**r["env"], "drop": ["A", "B", "A"]}},
                 "run_settings.env.drop[2]: duplicate entry 'A'", id="duplicate"),
    pytest.param(lambda r: {**r, "capture": []}, "run_settings.capture: must not be empty", id="capture-empty"),
    pytest.param(lambda r: {**r, "ci_policy": 1}, "run_settings.ci_policy: expected a string, got a number",
                 id="version-type"),
    pytest.param(lambda r: {**r, "env": {**r["env"], "allow": ["PATH", "A=B"]}},
                 "run_settings.env.allow[1]: 'A=B' is not a variable name pattern (letters, digits, `_`, and the "
                 "wildcards `*` and `?`)", id="env-pattern"),
    pytest.param(lambda r: {**r, "capture": "loss"}, "run_settings.capture: expected an array, got a string",
                 id="capture"),
    pytest.param(lambda r: {**r, "quarantine": [{**QUARANTINED, "until": "2027-02-30"}]},
                 'run_settings.quarantine[0].until: "2027-02-30" is not a date: day is out of range for month',
                 id="quarantine-until"),
    pytest.param(lambda r: {**r, "quarantine": [{**QUARANTINED, "until": "next week"}]},
                 'run_settings.quarantine[0].until: expected a date YYYY-MM-DD, got "next week"',
                 id="quarantine-not-a-date"),
    pytest.param(lambda r: {**r, "quarantine": [{**QUARANTINED, "reason": " "}]},
                 "run_settings.quarantine[0].reason: expected a non-empty reason", id="quarantine-reason"),
    pytest.param(lambda r: {**r, "quarantine": [{**QUARANTINED, "file": "../x.py"}]},
                 'run_settings.quarantine[0].file: "../x.py" is not a plain repo-relative path', id="quarantine-file"),
    pytest.param(lambda r: {**r, "quarantine": []}, "run_settings.quarantine: must not be empty",
                 id="quarantine-empty"),
]


@pytest.mark.parametrize("make, message", NOT_RUN_SETTINGS)
def test_a_per_stage_plan_with_wrong_run_settings_is_a_usage_error(example, monkeypatch, tmp_path, capsys, make,
                                                                   message):
    # Refused as the plan's other fields are: a stage job never runs with settings the configuration refuses.
    committed(example, monkeypatch)
    planned = plan_directory(tmp_path, capsys, "--repo", str(example), "--event", "push")
    own = planned / "stages" / "stage-a-cpu.json"
    doc = json.loads(own.read_text())
    own.write_text(json.dumps({**doc, "run_settings": make(doc["run_settings"])}))
    rc, out, err = run(["run", "--repo", str(example), "--plan", str(planned), "--stage", "stage-a-cpu"], capsys)
    if message is None:  # too long to show whole: the message starts as the others do
        assert (rc, out) == (2, "")
        assert err.startswith(f"ci-policy run: error: --plan: {own}: run_settings.retry.never[0]: '((((")
        assert "is not a valid regular expression: " in err and err.endswith(NOT_A_PLAN)
        return
    assert (rc, out, err) == (2, "", f"ci-policy run: error: --plan: {own}: {message}\n    {NOT_A_PLAN}")


SETTINGS_CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: gpu, backend: cuda, runs_on: [h200], runner: python, timeout_per_file: 30}
runner:
  kill_grace: 1
  timeout_from_est_time: {factor: 0.1, floor: 0.3}
  retry: {retriable: ["flaky threshold"]}
  env: {allow: [PATH, "SETTINGS_*"], drop: [SETTINGS_HIDDEN]}
gates:
  capture: [train/loss]
"""


def test_run_from_a_per_stage_plan_runs_with_its_run_settings(make_repo, monkeypatch, tmp_path):
    """The per-stage plan's settings are the configuration's: the variables a test sees, the
    captured metric, the retry rules and the est_time-derived timeout, as from the whole plan."""
    flaky = tmp_path / "flaky"
    files = {
        "tests/test_env.py": gpu_test("import os; print('seen', sorted(k for k in os.environ if k.startswith("
                                      "'SETTINGS_')), os.environ.get('CI_POLICY_CAPTURE'))", est=100),
        # Fails once with retriable output, then passes: retried only under `runner.retry`.
        "tests/test_flaky.py": gpu_test(f"import os, sys\nif not os.path.exists({str(flaky)!r}):\n"
                                        f"    open({str(flaky)!r}, 'w').close()\n"
                                        "    sys.exit('AssertionError: flaky threshold')", est=100),
        # est 2 s: a timeout of max(0.3, 0.1 * 2) = 0.3 s, well under the stage's 30 s.
        "tests/test_slow.py": gpu_test("import time; time.sleep(20)", est=2),
    }
    repo = committed(make_repo(files, config=SETTINGS_CONFIG), monkeypatch)
    monkeypatch.setenv("SETTINGS_SEEN", "1")
    monkeypatch.setenv("SETTINGS_HIDDEN", "1")
    planned = tmp_path / "planned"
    planned.mkdir()
    plan = cli(repo, "plan", *PLAN_ARGS, "--json-out", str(planned / "plan.json"),
               "--stage-plans", str(planned / "stages"))
    assert (plan.returncode, plan.stderr) == (0, ""), plan.stdout
    outs = []
    for mode, plan_file in (("whole", planned / "plan.json"), ("dir", planned)):
        if mode == "dir":  # nothing but the stage's own plan to read: the checkout is its clean tree
            (planned / "plan.json").unlink()
        flaky.unlink(missing_ok=True)
        proc = cli(repo, "run", "--stage", "gpu", "--plan", str(plan_file), "--continue-on-error",
                   "--max-attempts", "2", "--timings-out", str(tmp_path / f"{mode}.jsonl"),
                   "--records-out", str(tmp_path / f"records-{mode}"))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "seen ['SETTINGS_SEEN'] [\"train/loss\"]\n" in proc.stdout
        assert "output matches retriable pattern 'flaky threshold'; retrying" in proc.stdout
        assert proc.stdout.count("est=2s attempt=1 (timeout 0.3s)") == 1
        outs.append(mask(proc.stdout))
        assert [(r["file"], r["attempt"], r["status"]) for r in records(tmp_path / f"{mode}.jsonl")] == [
            ("tests/test_env.py", 1, "pass"), ("tests/test_flaky.py", 1, "fail"), ("tests/test_flaky.py", 2, "pass"),
            ("tests/test_slow.py", 1, "timeout"), ("tests/test_slow.py", 2, "timeout")]
    assert outs[0] == outs[1]
    # It is the per-stage plan's settings the stage job runs with (no configuration is read),
    # unless another ci_policy version resolved them: then the configuration's.
    own = planned / "stages" / "gpu.json"
    doc = json.loads(own.read_text())
    for written_by, seen in ((__version__, '["x/y"]'), ("0.0.0", '["train/loss"]')):
        own.write_text(json.dumps({**doc, "run_settings": {**doc["run_settings"], "ci_policy": written_by,
                                                           "capture": ["x/y"]}}))
        proc = cli(repo, "run", "--stage", "gpu", "--plan", str(planned), "--timings-out", str(tmp_path / "t.jsonl"),
                   "--records-out", str(tmp_path / "records"), "--continue-on-error")
        assert f"seen ['SETTINGS_SEEN'] {seen}\n" in proc.stdout, proc.stdout + proc.stderr


def test_a_stage_job_from_its_plan_checks_the_run_attempt_where_other_files_declare_gates(example, monkeypatch,
                                                                                           tmp_path, capsys):
    # Their records would name it: refused from the per-stage plan as from the whole plan.
    committed(example, monkeypatch)
    planned = plan_directory(tmp_path, capsys, "--repo", str(example), "--event", "push")
    assert json.loads((planned / "stages" / "stage-a-cpu.json").read_text())["gates"] != []
    monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "0")
    refused = (2, "", "ci-policy run: error: $GITHUB_RUN_ATTEMPT: must be at least 1, got 0\n"
                      "    hint: pass --run-attempt N, or leave GITHUB_RUN_ATTEMPT to GitHub Actions\n")
    for plan in (planned / "plan.json", planned):
        assert run(["run", "--repo", str(example), "--plan", str(plan), "--stage", "stage-a-cpu",
                    "--records-out", str(tmp_path / "records"), "--timings-out", str(tmp_path / "t.jsonl")],
                   capsys) == refused
