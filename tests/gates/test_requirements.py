"""Required gates: `gates.require` rules, enforced by `ci-policy lint` and by the plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import EXAMPLE_REPO, MAIN_BLOCK, MINIMAL_CONFIG

from ci_policy.cli import main
from ci_policy.errors import Diagnostic
from ci_policy.gates.requirements import MissingGate, missing_gates, violations
from ci_policy.model.lint import lint
from ci_policy.model.snapshot import load_snapshot
from ci_policy.plan.build import build_plan
from ci_policy.plan.policy import Trigger
from ci_policy.read.diff import Diff

V1 = "rollout/tito_session_mismatch_rate/v1/assistant_text"
V2 = "rollout/tito_session_mismatch_rate/v2/assistant_text"

REQUIRE = """\
gates:
  require:
    - files: "tests/e2e/session_server/test_*.py"
      metric_keys: ["rollout/tito_session_mismatch_rate/{version}/assistant_text"]
      versions: [v1, v2]
"""

BOTH = "tests/e2e/session_server/test_both.py"
V1_ONLY = "tests/e2e/session_server/test_v1_only.py"
NONE = "tests/e2e/session_server/test_none.py"
OTHER = "tests/e2e/test_other.py"
FSDP = "tests/e2e/test_fsdp.py"
UNIT = "tests/unit/test_a.py"


def source(registration: str, *gates: str, doc: str = "") -> str:
    marker = registration.split("(", 1)[0]
    names = ", ".join((["register_ci_gate"] if gates else []) + [marker])
    lines = ([f'"""{doc}"""'] if doc else []) + [f"from ci_policy import {names}", "", registration]
    lines += [f'register_ci_gate(metric_key="{key}")' for key in gates]
    return "\n".join(lines) + "\n" + MAIN_BLOCK


FILES = {
    UNIT: "def test_a():\n    pass\n",
    BOTH: source('register_cuda_ci(est_time=60, suite="gpu-a", labels=["megatron"])', V1, V2),
    V1_ONLY: source('register_cuda_ci(est_time=30, suite="gpu-a", labels=["megatron"])', V1, doc="Only v1."),
    NONE: source('register_rocm_ci(est_time=20, suite="amd", labels=["long"])'),
    OTHER: source('register_cuda_ci(est_time=40, suite="gpu-a", labels=["megatron"])'),
    FSDP: source('register_cuda_ci(est_time=10, suite="gpu-b", labels=["fsdp"])'),
}


def lacks(file: str, version: str, key: str, rule: int = 0) -> str:
    return f"{file} lacks the gate required for session server {version} by gates.require[{rule}]: " \
           f"register_ci_gate(metric_key={key!r})"


def lacks_error(file: str, line: int, version: str, key: str, rule: int = 0) -> Diagnostic:
    return Diagnostic(lacks(file, version, key, rule), path=file, line=line, col=1, code="CP520",
                      hint=f"add `register_ci_gate(metric_key={key!r})` at module level")


V1_ONLY_REASON = (f"lacks the gate required for session server v2 by gates.require[0]: "
                  f"register_ci_gate(metric_key={V2!r})")
NONE_REASON = (f"lacks the gate required for session server v1 by gates.require[0]: "
               f"register_ci_gate(metric_key={V1!r}); the gate required for session server v2 by "
               f"gates.require[0]: register_ci_gate(metric_key={V2!r})")


@pytest.fixture
def repo(make_repo) -> Path:
    return make_repo(FILES, config=MINIMAL_CONFIG + REQUIRE)


# -- violations ---------------------------------------------------------------------------------------

def test_violations_name_each_file_and_missing_version(repo):
    snapshot = load_snapshot(repo)
    assert snapshot.errors == ()
    assert violations(snapshot) == [
        lacks_error(NONE, 3, "v1", V1),  # located at the file's registration
        lacks_error(NONE, 3, "v2", V2),
        lacks_error(V1_ONLY, 4, "v2", V2),
    ]


def test_missing_gates_are_values_from_which_both_outputs_are_made(repo):
    snapshot = load_snapshot(repo)
    assert missing_gates(snapshot) == [
        MissingGate(NONE, 3, 0, V1, "v1"),
        MissingGate(NONE, 3, 0, V2, "v2"),
        MissingGate(V1_ONLY, 4, 0, V2, "v2"),
    ]
    assert [m.diagnostic() for m in missing_gates(snapshot)] == violations(snapshot)
    unversioned = MissingGate("tests/e2e/test_x.py", 7, 2, "train/grad_norm", None)
    assert unversioned.what == "the gate required by gates.require[2]: register_ci_gate(metric_key='train/grad_norm')"


def test_no_rule_no_violation(make_repo):
    repo = make_repo(FILES)
    assert violations(load_snapshot(repo)) == []
    assert lint(repo).errors == ()


def test_keys_without_a_version_and_several_rules(make_repo):
    config = MINIMAL_CONFIG + """\
gates:
  require:
    - files: ["tests/e2e/test_other.py", "tests/e2e/test_fsdp.py"]
      metric_keys: [train/grad_norm]
    - files: "tests/e2e/session_server/test_both.py"
      metric_keys: ["rollout/tito_session_mismatch_rate/{version}/assistant_text", train/ppo_kl]
      versions: [v2]
"""
    files = {**FILES, FSDP: source('register_cuda_ci(est_time=10, suite="gpu-b", labels=["fsdp"])',
                                      "train/grad_norm")}
    snapshot = load_snapshot(make_repo(files, config=config))
    hint = "add `register_ci_gate(metric_key='{}')` at module level"
    assert violations(snapshot) == [
        Diagnostic(f"{OTHER} lacks the gate required by gates.require[0]: "
                   "register_ci_gate(metric_key='train/grad_norm')",
                   path=OTHER, line=3, col=1, hint=hint.format("train/grad_norm"), code="CP520"),
        Diagnostic(f"{BOTH} lacks the gate required by gates.require[1]: "
                   "register_ci_gate(metric_key='train/ppo_kl')",
                   path=BOTH, line=3, col=1, hint=hint.format("train/ppo_kl"), code="CP520"),
    ]


def test_an_invalid_gate_declaration_does_not_satisfy_a_rule(make_repo):
    bad = FILES[BOTH].replace(f'register_ci_gate(metric_key="{V2}")',
                              f'register_ci_gate(metric_key="{V2}", steps="first")')
    snapshot = load_snapshot(make_repo({**FILES, BOTH: bad}, config=MINIMAL_CONFIG + REQUIRE))
    assert [e.message for e in snapshot.errors] == [
        'register_ci_gate: steps must be "last", "all" or a list of step indices, got \'first\'']
    assert lacks_error(BOTH, 3, "v2", V2) in violations(snapshot)


# -- lint ---------------------------------------------------------------------------------------------

def test_lint_fails_for_each_file_lacking_a_required_gate(repo):
    report = lint(repo)
    assert not report.ok
    assert report.errors == (lacks_error(NONE, 3, "v1", V1), lacks_error(NONE, 3, "v2", V2),
                             lacks_error(V1_ONLY, 4, "v2", V2))


def test_lint_command_output(repo, capsys):
    assert main(["lint", "--repo", str(repo)]) == 1
    out = capsys.readouterr().out
    assert out == (
        f"{NONE}:3:1: CP520 gate-required-missing: {lacks(NONE, 'v1', V1)}\n"
        f"    hint: add `register_ci_gate(metric_key={V1!r})` at module level\n"
        f"{NONE}:3:1: CP520 gate-required-missing: {lacks(NONE, 'v2', V2)}\n"
        f"    hint: add `register_ci_gate(metric_key={V2!r})` at module level\n"
        f"{V1_ONLY}:4:1: CP520 gate-required-missing: {lacks(V1_ONLY, 'v2', V2)}\n"
        f"    hint: add `register_ci_gate(metric_key={V2!r})` at module level\n"
        "ci-policy lint: FAILED: 3 errors, 0 warnings (6 test files, 6 registrations, 3 gates)\n")


def test_lint_passes_once_the_gates_are_declared(repo, capsys):
    (repo / V1_ONLY).write_text(FILES[V1_ONLY].replace(
        f'register_ci_gate(metric_key="{V1}")',
        f'register_ci_gate(metric_key="{V1}")\nregister_ci_gate(metric_key="{V2}")'))
    (repo / NONE).write_text(source('register_rocm_ci(est_time=20, suite="amd", labels=["long"])', V2, V1))
    assert main(["lint", "--repo", str(repo)]) == 0
    assert capsys.readouterr().out == ("ci-policy lint: OK: 0 errors, 0 warnings (6 test files, 6 "
                                       "registrations, 6 gates)\n")


# -- plan ---------------------------------------------------------------------------------------------

def invalid_of(snapshot) -> dict[str, tuple[Diagnostic, ...]]:
    return {f.file: f.diagnostics for f in snapshot.usable().invalid_files}


def test_a_file_lacking_a_required_gate_is_invalid_with_its_diagnostics(repo):
    assert invalid_of(load_snapshot(repo)) == {
        NONE: (lacks_error(NONE, 3, "v1", V1), lacks_error(NONE, 3, "v2", V2)),
        V1_ONLY: (lacks_error(V1_ONLY, 4, "v2", V2),),
    }


def test_a_file_name_containing_lacks_keeps_its_diagnostic(make_repo):
    odd = "tests/e2e/session_server/test_a lacks b.py"
    files = {UNIT: FILES[UNIT], odd: FILES[V1_ONLY]}
    snapshot = load_snapshot(make_repo(files, config=MINIMAL_CONFIG + REQUIRE))
    assert snapshot.files == (odd, UNIT)
    assert invalid_of(snapshot) == {odd: (lacks_error(odd, 4, "v2", V2),)}


def test_a_suppressed_missing_gate_does_not_make_the_file_invalid(make_repo):
    config = MINIMAL_CONFIG + REQUIRE + """\
lint:
  ignore:
    - paths: ["tests/e2e/session_server/test_v1_only.py"]
      codes: [CP520]
"""
    snapshot = load_snapshot(make_repo(FILES, config=config)).usable()
    assert [f.file for f in snapshot.invalid_files] == [NONE]
    assert V1_ONLY in {r.file for r in snapshot.registrations}


def test_the_plan_refuses_to_schedule_a_file_lacking_a_required_gate(repo):
    plan = build_plan(load_snapshot(repo), Trigger(event="schedule", cadence="nightly"),
                      Diff.unavailable("no diff"))
    gpu_a, amd = plan.stage("gpu-a"), plan.stage("amd")
    assert gpu_a.decision == "run"
    assert [r.file for r in gpu_a.tests] == [BOTH, OTHER]
    assert sorted(f for shard in gpu_a.shards for f in shard.files) == [BOTH, OTHER]
    assert gpu_a.invalid == (V1_ONLY,)
    assert (amd.decision, amd.tests, amd.shards) == ("skip", (), ())
    assert amd.reasons == ("skip: no schedulable tests (1 invalid, listed below)",)
    assert amd.invalid == (NONE,)
    assert [(f.file, f.suites) for f in plan.invalid] == [(NONE, ("amd",)), (V1_ONLY, ("gpu-a",))]
    assert plan.complete is False
    scheduled = {f for s in plan.stages for shard in s.shards for f in shard.files}
    assert scheduled == {UNIT, BOTH, OTHER, FSDP}
    assert plan.stage("gpu-b").invalid == () and plan.stage("cpu").invalid == ()


PLAN_ARGS = ["--event", "schedule", "--cadence", "nightly"]


def test_plan_text_lists_invalid_files_and_exits_1(repo, capsys):
    assert main(["plan", "--repo", str(repo), *PLAN_ARGS]) == 1
    out, err = capsys.readouterr()
    assert ("\ninvalid (not scheduled): 2 test files\n"
            f"  {NONE} (stages: amd)\n"
            f"    {NONE}:3:1: CP520 gate-required-missing: {lacks(NONE, 'v1', V1)}\n"
            f"        hint: add `register_ci_gate(metric_key={V1!r})` at module level\n"
            f"    {NONE}:3:1: CP520 gate-required-missing: {lacks(NONE, 'v2', V2)}\n"
            f"        hint: add `register_ci_gate(metric_key={V2!r})` at module level\n"
            f"  {V1_ONLY} (stages: gpu-a)\n"
            f"    {V1_ONLY}:4:1: CP520 gate-required-missing: {lacks(V1_ONLY, 'v2', V2)}\n"
            f"        hint: add `register_ci_gate(metric_key={V2!r})` at module level\n\n") in out
    shard_lines = [line for line in out.splitlines() if line.startswith("  gpu-a[") or line.startswith("  amd[")]
    assert shard_lines and all(V1_ONLY not in line and NONE not in line for line in shard_lines)
    assert err == f"ci-policy plan: incomplete: 2 invalid test file(s) left out: {NONE}, {V1_ONLY}\n"


def test_plan_json_lists_invalid_files_and_exits_1(repo, capsys):
    assert main(["plan", "--repo", str(repo), *PLAN_ARGS, "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    stages = {s["name"]: s for s in doc["stages"]}
    assert stages["gpu-a"]["invalid"] == [V1_ONLY]
    assert stages["amd"]["invalid"] == [NONE]
    assert doc["plan_complete"] is False
    assert doc["invalid"] == [
        {"file": NONE, "diagnostics": [lacks_error(NONE, 3, "v1", V1).as_dict(),
                                       lacks_error(NONE, 3, "v2", V2).as_dict()]},
        {"file": V1_ONLY, "diagnostics": [lacks_error(V1_ONLY, 4, "v2", V2).as_dict()]},
    ]
    assert [{k: t[k] for k in ("file", "est_time", "est_source")} for t in stages["gpu-a"]["tests"]] == [
                                        {"file": BOTH, "est_time": 60, "est_source": "literal"},
                                        {"file": OTHER, "est_time": 40, "est_source": "literal"}]
    assert stages["amd"]["decision"] == "skip" and stages["amd"]["shards"] == []


def test_plan_github_annotates_invalid_files_and_exits_0(repo, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary"))
    assert main(["plan", "--repo", str(repo), *PLAN_ARGS, "--format", "github"]) == 0
    lines = capsys.readouterr().out.splitlines()
    title = "title=CP520 gate-required-missing"
    assert [line for line in lines if line.startswith("::error")] == [
        f"::error file={NONE},line=3,col=1,{title}::{lacks(NONE, 'v1', V1)} "
        f"(hint: add `register_ci_gate(metric_key={V1!r})` at module level)",
        f"::error file={NONE},line=3,col=1,{title}::{lacks(NONE, 'v2', V2)} "
        f"(hint: add `register_ci_gate(metric_key={V2!r})` at module level)",
        f"::error file={V1_ONLY},line=4,col=1,{title}::{lacks(V1_ONLY, 'v2', V2)} "
        f"(hint: add `register_ci_gate(metric_key={V2!r})` at module level)",
    ]
    output = (tmp_path / "output").read_text()
    matrix = output.split("matrix<<", 1)[1].splitlines()[1]
    assert json.loads(matrix) == {"cpu": [0], "gpu-a": [0, 1], "gpu-b": [0], "amd": []}
    assert output.split("invalid_files<<", 1)[1].splitlines()[1] == json.dumps([NONE, V1_ONLY]).replace(" ", "")
    assert output.split("plan_complete<<", 1)[1].splitlines()[1] == "false"


def test_plan_github_exits_0_when_every_required_gate_is_declared(make_repo, capsys, tmp_path, monkeypatch):
    repo = make_repo({UNIT: FILES[UNIT], BOTH: FILES[BOTH]}, config=MINIMAL_CONFIG + REQUIRE)
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary"))
    assert main(["plan", "--repo", str(repo), *PLAN_ARGS, "--format", "github"]) == 0
    assert "::error" not in capsys.readouterr().out


# -- the bundled example ---------------------------------------------------------------------------------

def test_every_session_e2e_file_of_the_example_declares_both_gates():
    snapshot = load_snapshot(EXAMPLE_REPO)
    session_files = [f for f in snapshot.files if f.startswith("tests/e2e/session_server/")]
    assert len(session_files) >= 2
    assert sorted(p.relative_to(EXAMPLE_REPO).as_posix()
                  for p in (EXAMPLE_REPO / "tests/e2e/session_server").glob("test_*.py")) == session_files
    for file in session_files:
        declared = {g.metric_key for g in snapshot.gates if g.file == file}
        assert {V1, V2} <= declared, file
    assert [(r.files, r.metric_keys, r.versions) for r in snapshot.config.gates.require] == [
        (("tests/e2e/session_server/test_*.py",), ("rollout/tito_session_mismatch_rate/{version}/assistant_text",),
         ("v1", "v2"))]
    assert violations(snapshot) == []


def test_the_example_lint_catches_a_removed_session_gate(example_repo):
    path = example_repo / "tests/e2e/session_server/test_session_tool_calls.py"
    text = path.read_text()
    removed = f'register_ci_gate(metric_key="{V1}")\n'
    assert text.count(removed) == 1
    path.write_text(text.replace(removed, ""))
    file = "tests/e2e/session_server/test_session_tool_calls.py"
    errors = [e for e in lint(example_repo).errors if e.path == file]
    assert [e.message for e in errors] == [lacks(file, "v1", V1)]
