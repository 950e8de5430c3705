"""The reusable PR pipeline (.github/workflows/pr-pipeline.yml), evaluated as GitHub would run it
(tests/workflow_eval.py), its expressions by GitHub's own engine (tests/github_js.py).

- Each scenario is one run: the caller's event (examples/gpu-repo's pr-test.yml, its `with:`
  and `secrets:` evaluated), what `ci-policy pull-request` reads, and the plan. The plan is
  the workflow's own `ci-policy plan` line run on the example repository, whose outputs
  must be exactly the scenario's expected ones; every assertion about stage jobs is made
  against the plan's outputs.
- The workflow's bash steps that decide something (the plan inputs, the pin and image
  checks, the result) run in bash: the result job's own `ci-policy result` line reads the
  plan file the plan job's own `ci-policy plan` line wrote.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from github_js import condition_expression
from helpers import EXAMPLE_REPO, EXAMPLE_RUN_SETTINGS, EXAMPLE_RUNNERS, clean_env, console_script, in_process
from workflow_eval import (
    Event,
    ExpressionError,
    JobRun,
    Simulation,
    Status,
    call_event,
    condition,
    evaluate,
    expand_matrix,
    interpolate,
    loose_equal,
    simulate,
    to_string,
    truthy,
    workflow_triggers,
)

CTX = {
    "github": {"event_name": "pull_request", "event": {"action": "labeled", "pull_request": {"number": 7}},
               "run_attempt": "2"},
    "inputs": {"pull-request": "", "ci-policy-ref": "a" * 40},
    "needs": {"plan": {"result": "success", "outputs": {"trust": "approved", "matrix": '{"include": [{"a": 1}]}',
                                                        "empty": ""}}},
    "matrix": {"stage": "gpu-a", "lane": 0, "runs_on": ["h200", "1gpu"]},
    "steps": {"pr": {"outcome": "success", "outputs": {"head_sha": "b" * 40}}},
    "secrets": {"metrics-store-url": "postgresql://w"},
    "vars": {},
}


# -- the evaluator ------------------------------------------------------------------------------

@pytest.mark.parametrize("expression, value", [
    ("null", None), ("true", True), ("false", False), ("42", 42.0), ("-1.5", -1.5), ("0xff", 255.0),
    ("1e3", 1000.0), ("'it''s'", "it's"), ("''", ""),
    ("github.event_name", "pull_request"), ("github.EVENT_NAME", "pull_request"),
    ("github.event.pull_request.number", 7), ("github.event.nothing.deeper", None),
    ("inputs.pull-request", ""), ("inputs['ci-policy-ref']", "a" * 40), ("matrix.runs_on[1]", "1gpu"),
    ("matrix.runs_on[2]", None), ("steps.pr.outputs.head_sha", "b" * 40), ("secrets.metrics-store-url", "postgresql://w"),
    ("needs.plan.outputs.missing", None),
])
def test_literals_contexts_and_property_access(expression, value):
    assert evaluate(expression, CTX) == value


@pytest.mark.parametrize("expression, value", [
    # && and || give one of their operands, as on GitHub.
    ("'' || 'x'", "x"), ("'a' || 'x'", "a"), ("'a' && 'b'", "b"), ("0 && 'b'", 0.0), ("null || null", None),
    ("inputs.pull-request || github.event.pull_request.number || 'run'", 7),
    ("github.event.action == 'synchronize' && 'cancel' || 'wait'", "wait"),
    # ! binds tighter than ==, == tighter than &&, && tighter than ||.
    ("!true == false", True), ("true || false && false", True), ("(true || false) && false", False),
    ("!(1 == 2)", True), ("!''", True), ("!'false'", False),
])
def test_operators_and_precedence(expression, value):
    assert evaluate(expression, CTX) == value


@pytest.mark.parametrize("a, b, equal", [
    ("abc", "ABC", True),  # strings ignore case
    ("1", 1, True), ("", 0, True), ("", None, True), (None, 0, True), (True, 1, True), ("true", True, False),
    ("x", 0, False), ("0x10", 16, True), (" 2 ", 2, True), (math.nan, math.nan, False),
    ([], [], False), ({}, None, False), ("null", None, False),
])
def test_loose_equality(a, b, equal):
    assert loose_equal(a, b) is equal
    assert loose_equal(b, a) is equal


@pytest.mark.parametrize("value, expected", [
    (None, False), (False, False), (0, False), (0.0, False), (math.nan, False), ("", False),
    ("false", True), ("0", True), ([], True), ({}, True), (-1, True),
])
def test_truthiness(value, expected):
    assert truthy(value) is expected


@pytest.mark.parametrize("value, text", [(None, ""), (True, "true"), (3.0, "3"), (2.5, "2.5"), ([1], "Array"),
                                         ({}, "Object"), ("s", "s")])
def test_to_string(value, text):
    assert to_string(value) == text


@pytest.mark.parametrize("expression, value", [
    ("contains(fromJSON('[\"a\", \"B\"]'), 'b')", True), ("contains(fromJSON('[\"a\"]'), 'c')", False),
    ("contains('Hello world', 'WORLD')", True), ("contains(fromJSON('[1, 2]'), '2')", True),
    ("startsWith('ghcr.io/o/i:x', 'GHCR.IO/')", True), ("startsWith('', 'a')", False),
    ("fromJSON(needs.plan.outputs.matrix).include[0].a", 1), ("fromJSON('true')", True),
    ("toJSON(fromJSON('{\"a\": [1]}'))", '{\n  "a": [\n    1\n  ]\n}'), ("toJSON('x')", '"x"'),
    ("format('refs/heads/{0}', 'main')", "refs/heads/main"), ("format('{1}{0}{{}}', 'a', 'b')", "ba{}"),
    ("join(fromJSON('[\"a\", 1, true]'), ' ')", "a 1 true"), ("join(fromJSON('[\"a\", \"b\"]'))", "a,b"),
    ("join('x', '-')", "x"),
])
def test_functions(expression, value):
    assert evaluate(expression, CTX) == value


@pytest.mark.parametrize("status, values", [
    (Status(), {"always()": True, "success()": True, "failure()": False, "cancelled()": False}),
    (Status(success=False, failure=True), {"always()": True, "success()": False, "failure()": True,
                                            "cancelled()": False}),
    (Status(cancelled=True), {"always()": True, "success()": False, "failure()": False, "cancelled()": True}),
])
def test_status_functions(status, values):
    assert {e: evaluate(e, CTX, status) for e in values} == values


@pytest.mark.parametrize("text, status, expected", [
    (None, Status(), True), (None, Status(success=False, failure=True), False),
    # Without a status function, an `if` is `success() && (...)`.
    ("needs.plan.outputs.trust != 'untrusted'", Status(), True),
    ("needs.plan.outputs.trust != 'untrusted'", Status(success=False, failure=True), False),
    ("always() && needs.plan.outputs.trust == 'approved'", Status(success=False, failure=True), True),
    ("${{ !cancelled() }}", Status(success=False, failure=True), True),
    ("${{ !cancelled() }}", Status(cancelled=True), False),
    ("${{ needs.plan.outputs.empty }}", Status(), False),
    (True, Status(), True),
])
def test_conditions(text, status, expected):
    assert condition(text, CTX, status) is expected


@pytest.mark.parametrize("value, expected", [
    ("${{ matrix.runs_on }}", ["h200", "1gpu"]),  # a lone expression keeps its type
    ("${{ matrix.lane }}", 0),
    ("lane ${{ matrix.lane }} of ${{ matrix.stage }}", "lane 0 of gpu-a"),
    ("t-${{ github.run_attempt }}", "t-2"),
    ("${{ format('}}{0}', 'x') }}", "}x"),  # `}}` inside a string literal does not end the expression
    ({"a": ["${{ matrix.stage }}", 3]}, {"a": ["gpu-a", 3]}),
    ("plain", "plain"),
])
def test_interpolation(value, expected):
    assert interpolate(value, CTX) == expected


@pytest.mark.parametrize("expression, value", [
    # GitHub's engine has what the workflows do not use yet: comparisons and `*` filters.
    ("1 < 2", True), ("'b' >= 'A'", True), ("matrix.runs_on.*", ["h200", "1gpu"]),
    ("github.event.labels.*.name", []), ("fromJSON('[{\"n\": \"a\"}, {\"n\": \"b\"}]').*.n", ["a", "b"]),
])
def test_comparisons_and_filters(expression, value):
    assert evaluate(expression, CTX) == value


@pytest.mark.parametrize("expression, message", [
    ("a.b", "Unrecognized named-value: 'a'"), ("env.X", "Unrecognized named-value: 'env'"),
    ("hashFiles('x')", "Unrecognized function: 'hashFiles'"), ("(true", "Unexpected end of expression: 'true'"),
    ("true false", "Unexpected symbol: 'false'"), ("'open", "Unexpected symbol: ''open'"),
    ("", "An expression was expected"), ("contains('a')", "Too few parameters supplied: 'contains'"),
    ("fromJSON('')", "empty input"),
    ("format('{1}', 'a')", "The following format string references more arguments than were supplied: {1}"),
    ("github.", "Unexpected symbol: 'EOF'"),
])
def test_unsupported_or_malformed_expressions_are_refused(expression, message):
    with pytest.raises(ExpressionError) as raised:
        evaluate(expression, CTX)
    assert str(raised.value).startswith(message)


def test_status_functions_outside_if_and_unterminated_interpolation_are_refused():
    with pytest.raises(ExpressionError, match=r"^Unrecognized function: 'always'"):
        interpolate("${{ always() }}", CTX)
    with pytest.raises(ExpressionError, match=r"^The expression is not closed\. An unescaped \$\{\{ sequence"):
        interpolate("${{ github.sha", CTX)


def test_text_around_an_if_expression_makes_it_always_true():
    # GitHub makes `x ${{ false }}` the string format('x {0}', false), which is truthy; actionlint
    # reports such an `if:` (tests/test_workflow_lint.py), so no workflow here has one.
    assert condition_expression("x ${{ false }}", ["github"]) == "success() && (format('x {0}', false))"
    assert condition("x ${{ false }}", CTX, Status()) is True


@pytest.mark.parametrize("matrix, combos", [
    ({"include": [{"a": 1}, {"a": 2}]}, [{"a": 1}, {"a": 2}]),
    ({"os": ["x", "y"], "v": [1, 2], "exclude": [{"os": "y", "v": 1}]},
     [{"os": "x", "v": 1}, {"os": "x", "v": 2}, {"os": "y", "v": 2}]),
    # include: merged where it changes no original value, else its own combination.
    ({"os": ["x", "y"], "include": [{"os": "x", "extra": True}, {"os": "z"}, {"color": "g"}]},
     [{"os": "x", "extra": True, "color": "g"}, {"os": "y", "color": "g"}, {"os": "z"}]),
])
def test_matrix_expansion(matrix, combos):
    assert expand_matrix(matrix) == combos


@pytest.mark.parametrize("matrix, message", [
    ({"include": []}, "no combination"), ({"os": []}, "non-empty list"), ("x", "must be a mapping"),
    ({"include": ["x"]}, "must be a mapping"), ({"include": [{"i": i} for i in range(257)]}, "256"),
])
def test_impossible_matrices_fail_as_on_github(matrix, message):
    with pytest.raises(ExpressionError, match=message):
        expand_matrix(matrix)


def test_simulate_resolves_needs_and_skips_what_a_failure_skips():
    workflow = {"jobs": {
        "c": {"needs": ["b"], "runs-on": "x", "steps": []},
        "b": {"needs": "a", "runs-on": "x", "steps": []},
        "a": {"runs-on": "x", "steps": [{"id": "s"}]},
        "d": {"needs": ["a", "c"], "if": "always()", "runs-on": "x", "steps": []},
        "e": {"needs": ["a", "c"], "if": "failure()", "runs-on": "x", "steps": []},
    }}
    sim = simulate(workflow, Event("push"), hooks={("a", "s"): lambda step: ("failure", {})})
    assert {j: r.result for j, r in sim.jobs.items()} == {
        "a": "failure", "b": "skipped", "c": "skipped", "d": "success", "e": "success"}
    with pytest.raises(ExpressionError, match="unknown jobs"):
        simulate({"jobs": {"a": {"needs": "z", "runs-on": "x"}, "z": {"needs": "y", "runs-on": "x"}}}, Event("push"))
    with pytest.raises(ExpressionError, match="cycle"):
        simulate({"jobs": {"a": {"needs": "z", "runs-on": "x"}, "z": {"needs": "a", "runs-on": "x"}}}, Event("push"))


CALLEE = {"on": {"workflow_call": {"inputs": {"ref": {"type": "string", "required": True},
                                               "mode": {"type": "string", "default": "fast"}},
                                    "secrets": {"token": {"required": True}, "extra": {}}}},
          "jobs": {}}


def caller_of(with_: dict, secrets: dict | str) -> dict:
    return {"name": "Caller", "on": {"workflow_dispatch": {"inputs": {"pr": {"type": "string", "default": "0"},
                                                                     "go": {"type": "boolean"}}}},
            "jobs": {"call": {"uses": "o/r/.github/workflows/x.yml@" + "c" * 40, "with": with_, "secrets": secrets}}}


def test_a_call_evaluates_with_and_secrets_in_the_callers_context():
    caller = caller_of({"ref": "${{ inputs.pr }}-${{ inputs.go }}-${{ github.workflow }}"},
                       {"token": "${{ secrets.T }}"})
    called = call_event(caller, "call", CALLEE, Event("workflow_dispatch", {}, {"pr": "7"}, {"T": "t0"},
                                                      github={"sha": HEAD}))
    assert (called.inputs, called.secrets) == ({"ref": "7-false-Caller", "mode": "fast"}, {"token": "t0"})
    # The callee's github context is the caller's, its workflow the caller's name.
    assert (called.github["workflow"], called.github["sha"], called.name) == ("Caller", HEAD, "workflow_dispatch")
    # No inputs context but a dispatch's: `inputs.pr` is null on a push.
    pushed = call_event(caller, "call", CALLEE, Event("push", {}, {}, {"T": "t0"}))
    assert pushed.inputs["ref"] == "--Caller"
    inherited = call_event(caller_of({"ref": "x"}, "inherit"), "call", CALLEE, Event("push", {}, {}, {"T": "t0"}))
    assert inherited.secrets == {"T": "t0"}


@pytest.mark.parametrize("with_, secrets, event_inputs, message", [
    ({"ref": "x", "other": "y"}, {"token": "t"}, {}, r"inputs not declared by the workflow: \['other'\]"),
    ({}, {"token": "t"}, {}, "required input 'ref' not given"),
    ({"ref": "x"}, {"token": "t", "nope": "n"}, {}, r"secrets not declared by the called workflow: \['nope'\]"),
    ({"ref": "x"}, {"extra": "e"}, {}, r"required secrets not passed: \['token'\]"),
    ({"ref": "x"}, {"token": "t"}, {"nope": "1"}, r"workflow_dispatch inputs not declared by the workflow: \['nope'\]"),
    ({"ref": "${{ secrets.T }}"}, {"token": "t"}, {}, "Unrecognized named-value: 'secrets'"),
])
def test_a_call_github_would_refuse_is_refused(with_, secrets, event_inputs, message):
    with pytest.raises(ExpressionError, match=message):
        call_event(caller_of(with_, secrets), "call", CALLEE, Event("workflow_dispatch", {}, event_inputs, {"T": "t"}))


@pytest.mark.parametrize("needed, status", [
    ([], Status(True, False, False)), (["success", "success"], Status(True, False, False)),
    (["success", "skipped"], Status(False, False, False)), (["failure", "skipped"], Status(False, True, False)),
    (["cancelled"], Status(False, False, False)),
])
def test_a_jobs_status_is_its_ancestors(needed, status):
    assert Status.job(needed) == status


def test_each_value_sees_only_the_contexts_github_gives_it():
    workflow = {"jobs": {"a": {"if": "secrets.T != ''", "runs-on": "x", "steps": []}}}
    with pytest.raises(ExpressionError, match="Unrecognized named-value: 'secrets'"):
        simulate(workflow, Event("push", secrets={"T": "t"}))
    workflow = {"env": {"W": "w"}, "jobs": {"a": {"runs-on": "x", "env": {"J": "${{ env.W }}"}, "steps": []}}}
    with pytest.raises(ExpressionError, match="Unrecognized named-value: 'env'"):
        simulate(workflow, Event("push"))
    workflow = {"jobs": {"a": {"runs-on": "x", "steps": [{"if": "secrets.T != ''"}]}}}
    with pytest.raises(ExpressionError, match="Unrecognized named-value: 'secrets'"):
        simulate(workflow, Event("push", secrets={"T": "t"}))
    workflow = {"env": {"W": "w"}, "jobs": {"a": {"runs-on": "x", "env": {"J": "${{ github.event_name }}-j"}, "steps": [
        {"id": "s", "if": "env.J == 'push-j' && env.W == 'w' && job.status == 'success'",
         "env": {"S": "${{ secrets.T }}", "B": "${{ true }}", "N": "${{ strategy.job-total }}", "Z": "${{ null }}"},
         "with": {"v": "${{ env.S }}/${{ env.B }}"}}]}}}
    [run] = simulate(workflow, Event("push", secrets={"T": "t"})).jobs["a"].runs
    # env, with and outputs are strings on GitHub: true is 'true', 1 is '1', null is ''.
    assert (run.steps[0].ran, run.steps[0].env, run.steps[0].with_) == (
        True, {"S": "t", "B": "true", "N": "1", "Z": ""}, {"v": "t/true"})


def test_a_list_where_github_wants_a_string_is_refused():
    workflow = {"jobs": {"a": {"runs-on": "x", "steps": [{"env": {"L": "${{ fromJSON('[1]') }}"}}]}}}
    with pytest.raises(ExpressionError, match="^L: A sequence was not expected$"):
        simulate(workflow, Event("push"))


# -- the pipeline, evaluated ---------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / ".github" / "workflows" / "pr-pipeline.yml"
CALLER = EXAMPLE_REPO / ".github" / "workflows" / "ci-policy.yml"
HEAD = "a" * 40
BASE = "b" * 40
PR_DIFF = "ci-policy-plan/pr.diff"
SECRETS = {"CI_POLICY_METRICS_STORE_URL": "postgresql://writer@store/metrics",
           "CI_POLICY_METRICS_STORE_READ_URL": "postgresql://reader@store/metrics"}
CUDA_OPTIONS = "--gpus all"
ROCM_OPTIONS = "--device /dev/kfd --device /dev/dri --group-add video --group-add render"


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def read_github_output(text: str) -> dict[str, str]:
    """`name=value` and `name<<DELIMITER ... DELIMITER` lines, as the runner reads $GITHUB_OUTPUT."""
    out, lines = {}, iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = []
            for more in lines:
                if more == delimiter:
                    break
                value.append(more)
            out[name] = "\n".join(value)
        elif line:
            name, value = line.split("=", 1)
            out[name] = value
    return out


def run_step(step: dict, env: dict, cwd: Path, stdout: list[str] | None = None) -> tuple[str, dict]:
    """A `run:` step as the runner runs it (bash -eo pipefail), in `cwd`, with its evaluated env;
    its standard output appended to `stdout` when given."""
    output = cwd / f"github-output-{len(list(cwd.glob('github-output-*')))}"
    output.write_text("")
    full = {"PATH": f"{Path(console_script()).parent}{os.pathsep}{os.environ['PATH']}",
            **{k: to_string(v) for k, v in env.items()},
            "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(cwd / "summary.md")}
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                          cwd=cwd, env=clean_env(**full), capture_output=True, text=True, timeout=120, check=False)
    if stdout is not None:
        stdout.append(proc.stdout)
    return ("success" if proc.returncode == 0 else "failure"), read_github_output(output.read_text())


def result_step(workspace: Path, stdout: list[str] | None = None) -> Callable[[dict], tuple[str, dict]]:
    """The result job's own `ci-policy result` line, run in the workspace where the plan job's
    own `ci-policy plan` line wrote the plan file (the artifact the job fetches)."""
    def hook(step: dict) -> tuple[str, dict]:
        return run_step(step["step"], step["env"], workspace, stdout)
    return hook


def result_step_of_outputs(workspace: Path) -> Callable[[dict], tuple[str, dict]]:
    """The result job's line where the plan job's outputs are given, not made: no plan file was
    written, so the result decides from `plan_complete` and the needed jobs' results."""
    def hook(step: dict) -> tuple[str, dict]:
        return run_step(step["step"], {**step["env"], "PLAN_FILE": ""}, workspace)
    return hook


def entry(stage: str, lane: int, shards: str, backend: str, runs_on: list[str], image: str = "",
          timeout: int = 60) -> dict:
    options = {"cuda": CUDA_OPTIONS, "rocm": ROCM_OPTIONS}.get(backend, "")
    return {"stage": stage, "lane": lane, "shards": shards, "backend": backend, "runs_on": runs_on,
            "image": image, "container_options": options, "timeout_minutes": timeout}


# Timeouts: the lane's per-file limits summed, in minutes, plus 10; none configured: GitHub's 360.
CPU = [entry("stage-a-cpu", 0, "0", "cpu", ["ubuntu-latest"], timeout=360)]
GPU = [entry("stage-b-1-gpu-h200", 0, "0", "cuda", ["h200", "1gpu"], f"ghcr.io/minirl/ci-cuda:{HEAD}", 40),
       entry("stage-c-4-gpu-h200", 0, "0", "cuda", ["h200", "4gpu"], f"ghcr.io/minirl/ci-cuda:{HEAD}", 70),
       entry("stage-c-4-gpu-h200", 1, "1", "cuda", ["h200", "4gpu"], f"ghcr.io/minirl/ci-cuda:{HEAD}", 70),
       entry("stage-c-4-gpu-mi350", 0, "0", "rocm", ["mi350", "4gpu"], f"ghcr.io/minirl/ci-rocm:{HEAD}", 70)]
# The nightly cadence runs every registered file: each stage fills all of its shards.
NIGHTLY = CPU + [
    entry("stage-b-1-gpu-h200", 0, "0", "cuda", ["h200", "1gpu"], f"ghcr.io/minirl/ci-cuda:{HEAD}", 70),
    entry("stage-b-1-gpu-h200", 1, "1", "cuda", ["h200", "1gpu"], f"ghcr.io/minirl/ci-cuda:{HEAD}", 70),
    entry("stage-c-4-gpu-h200", 0, "0", "cuda", ["h200", "4gpu"], f"ghcr.io/minirl/ci-cuda:{HEAD}", 70),
    entry("stage-c-4-gpu-h200", 1, "1", "cuda", ["h200", "4gpu"], f"ghcr.io/minirl/ci-cuda:{HEAD}", 130),
    entry("stage-c-4-gpu-h200", 2, "2", "cuda", ["h200", "4gpu"], f"ghcr.io/minirl/ci-cuda:{HEAD}", 130),
    entry("stage-c-4-gpu-mi350", 0, "0", "rocm", ["mi350", "4gpu"], f"ghcr.io/minirl/ci-rocm:{HEAD}", 70),
    entry("stage-c-4-gpu-mi350", 1, "1", "rocm", ["mi350", "4gpu"], f"ghcr.io/minirl/ci-rocm:{HEAD}", 70)]
IMAGES = [{"backend": "cuda", "image": f"ghcr.io/minirl/ci-cuda:{HEAD}", "dockerfile": "docker/cuda.Dockerfile",
           "context": "."},
          {"backend": "rocm", "image": f"ghcr.io/minirl/ci-rocm:{HEAD}", "dockerfile": "docker/rocm.Dockerfile",
           "context": "."}]


def contract_outputs(entries: list[dict], *, images: list[dict] | None = None, trust: str = "trusted",
                     complete: bool = True, write_baseline: bool = False, cadence: str = "regular") -> dict:
    """What `ci-policy plan --format github` writes, by the contract, for examples/gpu-repo."""
    return {"cadence": cadence, "write_baseline": "true" if write_baseline else "false", "trust": trust,
            # The example orders no stage: every lane is in wave 0, the other wave jobs have none.
            "stage_matrix_0": json.dumps({"include": entries}), "wave_jobs": json.dumps([len(entries), 0, 0, 0]),
            **{f"stage_matrix_{wave}": json.dumps({"include": []}) for wave in (1, 2, 3)},
            "merged_lanes": "[]", "has_stage_jobs": "true" if entries else "false",
            "images_to_build": json.dumps(images or []), "plan_complete": "true" if complete else "false",
            "image_runs_on": '["self-hosted","image-builder"]', "image_registry": "ghcr.io",
            "invalid_files": "[]" if complete else '["tests/e2e/test_broken.py"]'}


def pull_request_event(action: str, *, fork: bool = False, labels: tuple[str, ...] = ()) -> dict:
    head_repo = "someone/gpu-repo" if fork else "octo/gpu-repo"
    return {"action": action, "number": 42,
            "pull_request": {"number": 42, "head": {"sha": HEAD, "repo": {"full_name": head_repo}},
                             "base": {"sha": BASE, "repo": {"full_name": "octo/gpu-repo"}},
                             "author_association": "CONTRIBUTOR" if fork else "MEMBER",
                             "labels": [{"name": n} for n in labels]},
            "repository": {"full_name": "octo/gpu-repo", "default_branch": "main"}}


@dataclass
class Scenario:
    """One run of the pipeline: its trigger, what `ci-policy pull-request` reads, the checkout
    and diff the plan reads, and the plan the contract gives for them."""

    event: str
    payload: dict
    dispatch: dict  # the caller's workflow_dispatch inputs
    pr: dict | None  # `ci-policy pull-request` outputs (None: no PR)
    diff: bytes | None
    plan: dict  # contract outputs of `ci-policy plan --format github`
    repo_patch: dict[str, str] = field(default_factory=dict)  # files changed in the checkout (real plan)
    github: dict = field(default_factory=dict)


def pr_outputs(trust: str, labels: tuple[str, ...], diff: bool = True) -> dict:
    return {"number": "42", "head_sha": HEAD, "base_sha": BASE, "labels_json": json.dumps(list(labels)),
            "trust": trust, "diff_file": PR_DIFF if diff else ""}


MEGATRON = ("run-ci-megatron",)
MEGATRON_DIFF = b"M\0minirl/backends/megatron.py\0"
DOCS_DIFF = b"M\0docs/guide.md\0"
# With the CPU stage diff-pruned, a docs-only change runs no stage at all.
CPU_PRUNED = {".github/ci-policy.yml": (EXAMPLE_REPO / ".github" / "ci-policy.yml").read_text().replace(
    "    backend: cpu\n    runner: pytest\n", "    backend: cpu\n    runner: pytest\n    diff_pruned: true\n")}
BROKEN = {"tests/e2e/test_broken.py": "register_cuda_ci(est_time=1, suite=\n"}

SCENARIOS = {
    "docs-only": Scenario("pull_request", pull_request_event("synchronize"), {}, pr_outputs("trusted", ()),
                          DOCS_DIFF, contract_outputs([]), CPU_PRUNED),
    "megatron": Scenario("pull_request", pull_request_event("labeled", labels=MEGATRON), {},
                         pr_outputs("trusted", MEGATRON), MEGATRON_DIFF, contract_outputs(CPU + GPU, images=IMAGES)),
    "partial": Scenario("pull_request", pull_request_event("synchronize", labels=MEGATRON), {},
                        pr_outputs("trusted", MEGATRON), MEGATRON_DIFF,
                        contract_outputs(CPU + GPU, images=IMAGES, complete=False), BROKEN),
    "fork-unapproved": Scenario("pull_request", pull_request_event("opened", fork=True, labels=MEGATRON), {},
                                pr_outputs("untrusted", MEGATRON), MEGATRON_DIFF,
                                contract_outputs(CPU, trust="untrusted")),
    # An approved head: the gateway dispatched the caller with the PR number after /ok-to-test.
    "fork-approved": Scenario("workflow_dispatch", {"inputs": {"pull-request": "42"}}, {"pull-request": "42"},
                              pr_outputs("approved", MEGATRON), MEGATRON_DIFF,
                              contract_outputs(CPU + GPU, images=IMAGES, trust="approved")),
    "nightly": Scenario("schedule", {"schedule": "0 15 * * 0-5"}, {}, None, None,
                        contract_outputs(NIGHTLY, images=IMAGES, write_baseline=True, cadence="nightly"),
                        github={"sha": HEAD}),
}


def caller_event(s: Scenario, run_attempt: str = "1") -> Event:
    """The pipeline's view of the run: the caller's job called for the scenario's event."""
    caller = load(CALLER)
    github = {"ref": "refs/heads/main", "sha": HEAD, "run_attempt": run_attempt, **s.github}
    return call_event(caller, "pipeline", load(PIPELINE), Event(s.event, s.payload, s.dispatch, SECRETS, github=github))


def prepare_workspace(s: Scenario, workspace: Path) -> None:
    """The runner's workspace after the plan job's checkouts: the scenario's checkout at `repo`,
    and the diff `ci-policy pull-request` wrote."""
    repo = workspace / "repo"
    shutil.copytree(EXAMPLE_REPO, repo, ignore=shutil.ignore_patterns("__pycache__"))
    # The sparse checkout of the base commit's configuration, for an untrusted head.
    (workspace / "trusted" / ".github").mkdir(parents=True)
    shutil.copy(EXAMPLE_REPO / ".github" / "ci-policy.yml", workspace / "trusted" / ".github" / "ci-policy.yml")
    for rel, text in s.repo_patch.items():
        (repo / rel).write_text(text)
    (workspace / "ci-policy-plan").mkdir()
    if s.diff is not None:
        (workspace / PR_DIFF).write_bytes(s.diff)


JSON_OUTPUTS = {"stage_matrix_0", "stage_matrix_1", "stage_matrix_2", "stage_matrix_3", "wave_jobs", "merged_lanes",
                "images_to_build", "invalid_files"}
WAVE_JOBS = ("stages-0", "stages-1", "stages-2", "stages-3")
# A plan of one wave: the later wave jobs have nothing to run, and no wave failed.
ONE_WAVE = {"stages-1": "skipped", "stages-2": "skipped", "stages-3": "skipped", "fast-fail": "skipped"}


def decoded(name: str, value: str | None) -> object:
    return json.loads(value) if name in JSON_OUTPUTS and value is not None else value


def pipeline(s: Scenario, workspace: Path, *, stage_results: Callable[[dict], str | None] | None = None,
             image_results: Callable[[dict], str | None] | None = None, run_attempt: str = "1",
             plan_fails: bool = False, result_out: list[str] | None = None) -> Simulation:
    prepare_workspace(s, workspace)

    def plan_step(step: dict) -> tuple[str, dict]:
        """The workflow's own `ci-policy plan` line; its outputs are the scenario's expected ones."""
        if plan_fails:
            return "failure", {}
        status, outputs = run_step(step["step"], step["env"], workspace)
        assert {name: decoded(name, outputs.get(name)) for name in s.plan} == \
            {name: decoded(name, value) for name, value in s.plan.items()}
        return status, outputs

    pr = s.pr or {}
    return simulate(load(PIPELINE), caller_event(s, run_attempt),
                    step_outputs={"plan": {"pr-event": pr, "pr-number": pr}},
                    hooks={("plan", "inputs"): lambda step: run_step(step["step"], step["env"], workspace),
                           ("plan", "plan"): plan_step,
                           ("images", "image"): lambda step: run_step(step["step"], step["env"], workspace),
                           ("result", "result"): result_step(workspace, result_out)},
                    results={**({job: stage_results for job in WAVE_JOBS} if stage_results else {}),
                             **({"images": image_results} if image_results else {})} or None)


def planned_entries(sim: Simulation) -> list[dict]:
    return [e for job in WAVE_JOBS for e in json.loads(sim.jobs["plan"].outputs[f"stage_matrix_{job[-1]}"])["include"]]


def stage_runs(sim: Simulation) -> list[JobRun]:
    return [run for job in WAVE_JOBS for run in sim.jobs[job].runs]


def check_stage_jobs_follow_the_plan(sim: Simulation) -> None:
    """Each lane of the plan is one stage job: its name, runners, container and timeout."""
    entries = planned_entries(sim)
    assert [run.matrix for run in stage_runs(sim)] == entries
    for run, e in zip(stage_runs(sim), entries, strict=True):
        assert run.name == f"{e['stage']} (lane {e['lane']})"
        assert run.runs_on == e["runs_on"]
        assert run.timeout_minutes == e["timeout_minutes"]
        # The example's images are on ghcr.io and its caller passes no registry secrets: the job's token.
        assert run.container == {"image": e["image"], "options": e["container_options"],
                                 "credentials": {"username": "octocat", "password": "***"}}
        assert e["container_options"] == {"cuda": CUDA_OPTIONS, "rocm": ROCM_OPTIONS}.get(e["backend"], "")
        step = run.step("Run the lane's shards")
        assert (step.env["STAGE"], step.env["SHARDS"], step.env["PYTHON"]) == (e["stage"], e["shards"], "python3")


def plan_inputs_of(env: dict) -> dict:
    return {k: env[k] for k in ("EVENT_NAME", "LABELS_JSON", "SCHEDULE", "CADENCE", "DIFF_FILE", "BASE_REV",
                                "HEAD_REV", "FORCED", "TRUST", "CONFIG")}


def results(sim: Simulation) -> dict[str, str]:
    return {job: r.result for job, r in sim.jobs.items()}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_stage_job_runs_its_lane_with_the_plan_jobs_inputs(name, tmp_path):
    s = SCENARIOS[name]
    sim = pipeline(s, tmp_path)
    check_stage_jobs_follow_the_plan(sim)
    plan_step = sim.jobs["plan"].runs[0].step("plan")
    # The repository is checked out, planned and run at the head SHA.
    assert sim.jobs["plan"].runs[0].step("Check out the repository under test").with_["ref"] == HEAD
    # Images are tagged with it, except in a fork's pull_request run, which could push none.
    assert plan_step.env["IMAGE_SHA"] == ("" if name == "fork-unapproved" else HEAD)
    # The plan file comes from the same planning, written whole (a partial plan too) and kept with the diff.
    assert "--json-out ci-policy-plan/plan.json --stage-plans ci-policy-plan/stages" in plan_step.step["run"]
    assert [step.name for step in sim.jobs["plan"].runs[0].steps if "ci-policy plan " in step.step.get("run", "")] \
        == [plan_step.name]
    keep = sim.jobs["plan"].runs[0].step("Keep the plan for the stage jobs")
    assert keep.with_ == {"name": "ci-policy-plan-1", "path": "ci-policy-plan/", "if-no-files-found": "error"}
    planned = json.loads((tmp_path / "ci-policy-plan" / "plan.json").read_text())
    assert planned["plan_complete"] is (s.plan.get("plan_complete", "true") == "true")
    # One plan file per stage, each the plan with that stage alone and no test file's content id:
    # what the stage jobs read when their checkout is the tree planned.
    stage_files = tmp_path / "ci-policy-plan" / "stages"
    assert sorted(p.name for p in stage_files.iterdir()) == sorted(f"{st['name']}.json" for st in planned["stages"])
    shared = {key: value for key, value in planned["inputs"].items() if key != "files"}
    for st in planned["stages"]:
        runner, timeout = EXAMPLE_RUNNERS[st["name"]]
        assert json.loads((stage_files / f"{st['name']}.json").read_text()) == {
            **planned, "stages": [st], "inputs": shared,
            "run_settings": {**EXAMPLE_RUN_SETTINGS, "runner": runner, "timeout_per_file": timeout}}
    for run in stage_runs(sim):
        assert run.step("Check out the repository under test").with_["ref"] == HEAD
        fetch = run.step("Fetch the plan")
        assert (fetch.ran, fetch.with_) == (True, {"name": "ci-policy-plan-1", "path": "ci-policy-plan"})
        # The stage job plans nothing: its shards come from the plan file, checked against its checkout.
        step = run.step("Run the lane's shards")
        assert "--plan ci-policy-plan --stage \"$STAGE\"" in step.step["run"]
        assert step.env["STAGE"] == run.matrix["stage"]
        assert not {"EVENT_NAME", "LABELS_JSON", "DIFF_FILE", "BASE_REV", "TRUST"} & set(step.env)
        assert step.env["CONFIG"] == plan_step.env["CONFIG"]
        stage = next(st for st in planned["stages"] if st["name"] == run.matrix["stage"])
        for shard in run.matrix["shards"].split():
            # What the shard runs (`list` prints exactly the files `run` runs), in process.
            listed = in_process(tmp_path, [
                "list", "--repo", "repo", "--config", step.env["CONFIG"], "--plan", "ci-policy-plan",
                "--stage", stage["name"], "--shard", shard, "--format", "json"])
            assert listed.returncode == (0 if planned["plan_complete"] else 1), listed.stderr
            assert json.loads(listed.stdout)["files"] == stage["shards"][int(shard)]["files"]


def test_a_docs_only_pr_runs_no_stage_job_and_passes(tmp_path):
    sim = pipeline(SCENARIOS["docs-only"], tmp_path)
    assert sim.jobs["plan"].outputs["has_stage_jobs"] == "false"
    assert results(sim) == {"plan": "success", "images": "skipped", "stages-0": "skipped", **ONE_WAVE,
                            "result": "success", "report": "skipped"}
    # A run on a pull_request event reports no commit status: its check is `pr-test / result`.
    assert sim.jobs["report"].runs == []


def test_a_pr_that_selects_gpu_tests_builds_its_images_and_runs_every_lane(tmp_path):
    sim = pipeline(SCENARIOS["megatron"], tmp_path)
    plan = sim.jobs["plan"].outputs
    assert results(sim) == {"plan": "success", "images": "success" if plan["images_to_build"] != "[]" else "skipped",
                            "stages-0": "success", **ONE_WAVE, "result": "success", "report": "skipped"}
    assert {e["backend"] for e in planned_entries(sim)} >= {"cuda", "rocm"}
    images = json.loads(plan["images_to_build"])
    assert [run.matrix for run in sim.jobs["images"].runs] == images
    for run in sim.jobs["images"].runs:
        assert run.runs_on == ["self-hosted", "image-builder"]
        assert run.matrix["image"].endswith(f":{HEAD}")
        assert run.step("Check out the repository at the head SHA").with_["ref"] == HEAD
        assert run.step("Log in to the registry").with_ == {"registry": "ghcr.io", "username": "octocat",
                                                            "password": "***"}
        build = run.step("Build and push the image")
        assert build.env == {"IMAGE": run.matrix["image"], "DOCKERFILE": run.matrix["dockerfile"],
                             "CONTEXT": run.matrix["context"]}


def test_an_incomplete_plan_fails_the_result_though_every_job_passed(tmp_path):
    sim = pipeline(SCENARIOS["partial"], tmp_path)
    assert sim.jobs["plan"].outputs["plan_complete"] == "false"
    assert (sim.jobs["stages-0"].result, sim.jobs["result"].result) == ("success", "failure")


def test_a_failed_plan_job_skips_every_other_job_and_fails_the_result(tmp_path):
    sim = pipeline(SCENARIOS["megatron"], tmp_path, plan_fails=True)
    assert results(sim) == {"plan": "failure", "images": "skipped", "stages-0": "skipped", **ONE_WAVE,
                            "result": "failure", "report": "skipped"}


@pytest.mark.parametrize("outcome", ["failure", "cancelled"])
def test_one_failed_or_cancelled_lane_fails_the_result_and_the_other_lanes_run(tmp_path, outcome):
    workflow = load(PIPELINE)
    assert all(workflow["jobs"][job]["strategy"]["fail-fast"] is False for job in WAVE_JOBS)
    sim = pipeline(SCENARIOS["megatron"], tmp_path,
                   stage_results=lambda e: outcome if (e["stage"], e["lane"]) == ("stage-c-4-gpu-h200", 1) else None)
    lanes = {(r.matrix["stage"], r.matrix["lane"]): r.result for r in stage_runs(sim)}
    assert lanes.pop(("stage-c-4-gpu-h200", 1)) == outcome
    assert lanes and set(lanes.values()) == {"success"}
    assert (sim.jobs["stages-0"].result, sim.jobs["result"].result) == (outcome, "failure")


def test_a_failed_image_build_skips_the_stages_and_fails_the_result(tmp_path):
    said: list[str] = []
    sim = pipeline(SCENARIOS["megatron"], tmp_path, image_results=lambda e: "failure" if e["backend"] == "rocm"
                   else None, result_out=said)
    assert results(sim) == {"plan": "success", "images": "failure", "stages-0": "skipped", **ONE_WAVE,
                            "result": "failure", "report": "skipped"}
    assert said == ["ci-policy result: FAIL\n  plan: success\n  images: failure\n  stages-0: skipped\n"
                    "  stages-1: skipped\n  stages-2: skipped\n  stages-3: skipped\n"
                    "fail: job images failed\n::error::job images failed\n"]


# -- waves ---------------------------------------------------------------------------------------

def test_the_wave_jobs_are_one_job_but_for_their_needs_condition_and_matrix():
    jobs = load(PIPELINE)["jobs"]
    bodies = []
    for wave, job_id in enumerate(WAVE_JOBS):
        job = dict(jobs[job_id])
        assert job.pop("needs") == ["plan", "images", *WAVE_JOBS[:wave]]
        assert f"fromJSON(needs.plan.outputs.wave_jobs)[{wave}] != 0" in job.pop("if")
        assert job["strategy"].pop("matrix") == f"${{{{ fromJSON(needs.plan.outputs.stage_matrix_{wave}) }}}}"
        bodies.append(job)
    assert all(body == bodies[0] for body in bodies)
    assert jobs["result"]["needs"] == ["plan", "images", *WAVE_JOBS]


def waved_plan(waves: list[list[dict]], *, bypass: bool = False) -> dict:
    """`ci-policy plan --format github` outputs of a plan whose stages run in waves."""
    flat = [e for wave in waves for e in wave]
    return {**contract_outputs(flat), "bypass_fastfail": "true" if bypass else "false",
            **{f"stage_matrix_{w}": json.dumps({"include": waves[w] if w < len(waves) else []}) for w in range(4)},
            "wave_jobs": json.dumps([len(waves[w]) if w < len(waves) else 0 for w in range(4)], separators=(",", ":"))}


WAVES = [CPU, GPU[:1], GPU[1:3]]


def waves_run(tmp_path: Path, plan: dict, failing: set[str] = frozenset()) -> Simulation:
    s = SCENARIOS["megatron"]
    prepare_workspace(s, tmp_path)
    return simulate(load(PIPELINE), caller_event(s), step_outputs={"plan": {"pr-event": s.pr, "plan": plan}},
                    hooks={("plan", "inputs"): lambda step: run_step(step["step"], step["env"], tmp_path),
                           ("result", "result"): result_step_of_outputs(tmp_path)},
                    results={job: (lambda e: "failure" if e["stage"] in failing else None) for job in WAVE_JOBS})


def test_waves_run_one_after_another_each_its_own_lanes(tmp_path):
    sim = waves_run(tmp_path, waved_plan(WAVES))
    assert results(sim) == {"plan": "success", "images": "skipped", "stages-0": "success", "stages-1": "success",
                            "stages-2": "success", "stages-3": "skipped", "fast-fail": "skipped",
                            "result": "success", "report": "skipped"}
    assert [[run.matrix for run in sim.jobs[job].runs] for job in WAVE_JOBS[:3]] == WAVES
    assert [run.name for run in sim.jobs["stages-2"].runs] == ["stage-c-4-gpu-h200 (lane 0)",
                                                              "stage-c-4-gpu-h200 (lane 1)"]


def test_a_failed_wave_skips_the_later_ones_and_says_why(tmp_path):
    sim = waves_run(tmp_path, waved_plan(WAVES), failing={"stage-a-cpu"})
    assert results(sim) == {"plan": "success", "images": "skipped", "stages-0": "failure", "stages-1": "skipped",
                            "stages-2": "skipped", "stages-3": "skipped", "fast-fail": "success",
                            "result": "failure", "report": "skipped"}
    step = sim.jobs["fast-fail"].runs[0].steps[0]
    assert step.env == {"WAVE_JOBS": "[1,1,2,0]", "WAVE_RESULTS": "failure skipped skipped skipped"}
    proc = subprocess.run(["bash", "-e", "-c", step.step["run"]], env={"PATH": os.environ["PATH"], **step.env},
                          capture_output=True, text=True, timeout=60, check=False)
    said = "did not run: wave 0 failed, and a run on the regular cadence stops at its first failed wave (fast-fail); " \
           "the bypass-fastfail label (/bypass-fastfail) runs every wave"
    assert (proc.returncode, proc.stdout) == (0, f"::warning title=wave 1 skipped::wave 1 (1 job(s)) {said}\n"
                                                 f"::warning title=wave 2 skipped::wave 2 (2 job(s)) {said}\n")


def test_a_failed_middle_wave_skips_only_the_waves_after_it(tmp_path):
    sim = waves_run(tmp_path, waved_plan(WAVES), failing={"stage-b-1-gpu-h200"})
    assert [sim.jobs[job].result for job in (*WAVE_JOBS, "fast-fail", "result")] == [
        "success", "failure", "skipped", "skipped", "success", "failure"]


def test_with_bypass_fastfail_every_wave_runs_after_a_failure(tmp_path):
    # The PR label bypass-fastfail, or a nightly, weekly or release cadence: the plan's bypass_fastfail.
    sim = waves_run(tmp_path, waved_plan(WAVES, bypass=True), failing={"stage-a-cpu"})
    assert [sim.jobs[job].result for job in (*WAVE_JOBS, "fast-fail", "result")] == [
        "failure", "success", "success", "skipped", "skipped", "failure"]


def test_an_empty_wave_between_two_others_does_not_stop_them(tmp_path):
    sim = waves_run(tmp_path, waved_plan([CPU, [], GPU[1:3]]))
    assert [sim.jobs[job].result for job in (*WAVE_JOBS, "result")] == [
        "success", "skipped", "success", "skipped", "success"]


def test_a_rerun_of_the_failed_wave_runs_the_waves_it_skipped(tmp_path):
    """"Re-run failed jobs" (`/rerun-failed-ci`) runs the failed wave again and, as its dependents,
    the waves it skipped; the plan job stands as it was."""
    first = waves_run(tmp_path, waved_plan(WAVES), failing={"stage-a-cpu"})
    second = simulate(load(PIPELINE), caller_event(SCENARIOS["megatron"], run_attempt="2"),
                      kept={job: first.jobs[job] for job in ("plan", "images")},
                      hooks={("result", "result"): result_step_of_outputs(tmp_path)})
    assert [second.jobs[job].result for job in (*WAVE_JOBS, "fast-fail", "result")] == [
        "success", "success", "success", "skipped", "skipped", "success"]
    assert [[run.matrix for run in second.jobs[job].runs] for job in WAVE_JOBS[:3]] == WAVES


def test_a_300_partition_stage_runs_in_256_jobs_covering_every_file(tmp_path):
    """The real plan of a nightly run whose cpu stage asks for 300 shards: GitHub refuses a matrix
    of more than 256 jobs, so its lanes are merged, and every file still runs in one of them."""
    config = (EXAMPLE_REPO / ".github" / "ci-policy.yml").read_text().replace(
        "    backend: cpu\n    runner: pytest\n", "    backend: cpu\n    runner: pytest\n    partitions: 300\n")
    wide = {f"tests/fast/test_wide_{i:03}.py": "def test_ok():\n    pass\n" for i in range(300)}
    s = dataclasses.replace(SCENARIOS["nightly"], plan={}, repo_patch={".github/ci-policy.yml": config, **wide})
    sim = pipeline(s, tmp_path)
    planned = json.loads((tmp_path / "ci-policy-plan" / "plan.json").read_text())
    cpu = next(st for st in planned["stages"] if st["name"] == "stage-a-cpu")
    assert len(cpu["shards"]) == 300
    runs = stage_runs(sim)
    # Wave 0 holds every stage: 7 GPU lanes beside the cpu stage's, which keeps 249.
    assert len(runs) == len(sim.jobs["stages-0"].runs) == 256
    assert json.loads(sim.jobs["plan"].outputs["merged_lanes"]) == [{
        "stage": "stage-a-cpu", "wave": 0, "lanes_from": 300, "lanes_to": 249, "reason": planned["merged_lanes"][0][
            "reason"]}]
    assert planned["merged_lanes"][0]["reason"].startswith(
        "300 lanes merged into 249: wave 0 needs 307 jobs and GitHub runs at most 256 jobs per matrix")
    ran = [f for run in runs if run.matrix["stage"] == "stage-a-cpu"
           for i in run.step("Run the lane's shards").env["SHARDS"].split() for f in cpu["shards"][int(i)]["files"]]
    assert sorted(ran) == sorted(t["file"] for t in cpu["tests"])
    assert {f"tests/fast/test_wide_{i:03}.py" for i in range(300)} <= set(ran)
    assert results(sim) == {"plan": "success", "images": "success", "stages-0": "success", **ONE_WAVE,
                            "result": "success", "report": "skipped"}


def test_the_image_job_runs_on_the_planned_builder_and_logs_in_to_another_registry_with_the_callers_secrets(
        tmp_path):
    """`image_build` travels from the plan job's outputs: the builder's labels, the registry and,
    for a registry other than ghcr.io, the caller's registry secrets (push and pull)."""
    s = SCENARIOS["megatron"]
    prepare_workspace(s, tmp_path)
    quay = {f"ghcr.io/minirl/ci-{b}:{HEAD}": f"{QUAY}/minirl/ci-{b}:{HEAD}" for b in ("cuda", "rocm")}
    images = [{**i, "image": quay[i["image"]]} for i in IMAGES]
    entries = [{**e, "image": quay.get(e["image"], e["image"])} for e in CPU + GPU]
    plan = {**contract_outputs(entries, images=images), "image_runs_on": '["self-hosted","docker","x64"]',
            "image_registry": QUAY}
    event = caller_event(s)
    event.secrets.update({"registry-username": "robot", "registry-password": "***"})
    sim = simulate(load(PIPELINE), event, step_outputs={"plan": {"pr-event": s.pr, "plan": plan}},
                   hooks={("plan", "inputs"): lambda step: run_step(step["step"], step["env"], tmp_path),
                          ("images", "image"): lambda step: run_step(step["step"], step["env"], tmp_path),
                          ("result", "result"): result_step_of_outputs(tmp_path)})
    assert results(sim) == {"plan": "success", "images": "success", "stages-0": "success", "stages-1": "skipped",
                            "stages-2": "skipped", "stages-3": "skipped", "fast-fail": "skipped",
                            "result": "success", "report": "skipped"}
    assert [run.matrix for run in sim.jobs["images"].runs] == images
    for run in sim.jobs["images"].runs:
        assert run.runs_on == ["self-hosted", "docker", "x64"]
        assert run.step("image").env["REGISTRY"] == QUAY
        assert run.step("Log in to the registry").with_ == {"registry": QUAY, "username": "robot", "password": "***"}
    for run in stage_runs(sim):
        assert run.container["credentials"] == {"username": "robot", "password": "***"}
    assert {run.matrix["image"] for run in stage_runs(sim)} == {"", *quay.values()}


def test_without_an_image_to_build_the_image_job_never_queues(tmp_path):
    """No backend with an image (or none built this run): `images_to_build` is `[]`, the job's
    `if` is false, so GitHub skips it without evaluating its `runs-on` or waiting for a builder."""
    sim = pipeline(SCENARIOS["docs-only"], tmp_path)
    assert sim.jobs["plan"].outputs["images_to_build"] == "[]"
    assert (sim.jobs["images"].result, sim.jobs["images"].runs) == ("skipped", [])
    assert sim.jobs["result"].result == "success"


def test_an_unapproved_fork_pr_runs_no_accelerator_job_and_builds_no_image(tmp_path):
    """Every job that ran passed, yet the required check fails until a maintainer approves the head."""
    said: list[str] = []
    sim = pipeline(SCENARIOS["fork-unapproved"], tmp_path, result_out=said)
    plan = sim.jobs["plan"].outputs
    assert plan["trust"] == "untrusted"
    assert sim.jobs["images"].result == "skipped"
    assert {run.matrix["backend"] for run in stage_runs(sim)} <= {"cpu"}
    assert (sim.jobs["stages-0"].result, sim.jobs["result"].result) == ("success", "failure")
    awaiting = (f"awaiting `/ok-to-test {HEAD}` from a maintainer: this head is an outside contributor's, not "
                "approved, so its accelerator stages did not run")
    held = [f"stage {stage} did not run: untrusted head not approved"
            for stage in ("stage-b-1-gpu-h200", "stage-c-4-gpu-h200", "stage-c-4-gpu-mi350")]
    assert said == ["ci-policy result: FAIL\n  plan: success\n  images: skipped\n  stages-0: success\n"
                    "  stages-1: skipped\n  stages-2: skipped\n  stages-3: skipped\n"
                    + "".join(f"fail: {r}\n" for r in [awaiting, *held])
                    + "".join(f"::error::{r}\n" for r in [awaiting, *held])]
    decide = sim.jobs["result"].runs[0].step("result")
    assert decide.env == {
        "PLAN_COMPLETE": "true", "PLAN_FILE": "ci-policy-plan/plan.json", "HEAD_SHA": HEAD,
        "NEEDS": '{"plan":{"result":"success"},"images":{"result":"skipped"},"stages-0":{"result":"success"},'
                 '"stages-1":{"result":"skipped"},"stages-2":{"result":"skipped"},"stages-3":{"result":"skipped"}}'}
    assert sim.jobs["result"].runs[0].step("Fetch the plan").with_ == {"name": "ci-policy-plan-1",
                                                                     "path": "ci-policy-plan"}


CONFIG_CHECKOUT = "Check out the configuration of the base commit"


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_an_untrusted_head_is_planned_and_run_with_the_base_commits_configuration(tmp_path, name):
    """A fork's own configuration would choose the runners, images and container options of
    the jobs that run its code; only a trusted or approved head's configuration is read."""
    sim = pipeline(SCENARIOS[name], tmp_path)
    untrusted = name == "fork-unapproved"
    jobs = [sim.jobs["plan"].runs[0], *stage_runs(sim)]
    assert len(jobs) > 1 or name == "docs-only"
    for run in jobs:
        checkout = run.step(CONFIG_CHECKOUT)
        assert checkout.ran is untrusted
        if untrusted:
            # An action's inputs are strings (its INPUT_* variables): false is 'false'.
            assert checkout.with_ == {"ref": BASE, "path": "trusted", "sparse-checkout": ".github/ci-policy.yml",
                                      "sparse-checkout-cone-mode": "false", "persist-credentials": "false"}
    expected = "trusted/.github/ci-policy.yml" if untrusted else "repo/.github/ci-policy.yml"
    assert sim.jobs["plan"].runs[0].step("plan").env["CONFIG"] == expected


def test_the_image_job_refuses_an_untrusted_head_whatever_the_plan_says(tmp_path):
    s = SCENARIOS["fork-unapproved"]
    prepare_workspace(s, tmp_path)
    plan = contract_outputs(CPU + GPU, images=IMAGES, trust="untrusted")
    sim = simulate(load(PIPELINE), caller_event(s), step_outputs={"plan": {"pr-event": s.pr, "plan": plan}},
                   hooks={("plan", "inputs"): lambda step: run_step(step["step"], step["env"], tmp_path)})
    assert sim.jobs["images"].result == "skipped"


def test_a_pull_request_run_reads_its_pull_request_through_the_api_for_its_event_head(tmp_path):
    """Labels added since the event (a re-run keeps the payload) are read now; the head stays the event's."""
    sim = pipeline(SCENARIOS["megatron"], tmp_path)
    plan_run = sim.jobs["plan"].runs[0]
    assert (plan_run.step("pr-event").ran, plan_run.step("pr-number").ran) == (True, False)
    assert plan_run.step("pr-event").env == {"GITHUB_TOKEN": "***", "PULL_NUMBER": "42", "EVENT_HEAD_SHA": HEAD}
    [argv] = [shlex.split(step["run"]) for step in load(PIPELINE)["jobs"]["plan"]["steps"]
              if step.get("id") == "pr-event"]
    assert argv == ["ci-policy", "pull-request", "--number", "$PULL_NUMBER", "--expect-head", "$EVENT_HEAD_SHA",
                    "--diff-out", "ci-policy-plan/pr.diff", "--format", "github"]


def test_an_approved_fork_head_passes_when_its_lanes_pass(tmp_path):
    """Its pull_request run (re-run after /ok-to-test) holds a read-only token: no image is built,
    and the GPU lanes run in the configured default tag."""
    s = SCENARIOS["fork-approved"]
    latest = [{**e, "image": e["image"].replace(HEAD, "latest")} for e in CPU + GPU]
    approved = Scenario("pull_request", pull_request_event("synchronize", fork=True, labels=MEGATRON), {},
                        s.pr, s.diff, contract_outputs(latest, trust="approved"))
    said: list[str] = []
    sim = pipeline(approved, tmp_path, result_out=said)
    assert sim.jobs["plan"].runs[0].step("plan").env["IMAGE_SHA"] == ""
    assert results(sim) == {"plan": "success", "images": "skipped", "stages-0": "success", **ONE_WAVE,
                            "result": "success", "report": "skipped"}
    assert {run.matrix["image"] for run in stage_runs(sim)} == {"", "ghcr.io/minirl/ci-cuda:latest",
                                                                  "ghcr.io/minirl/ci-rocm:latest"}
    assert said == ["ci-policy result: PASS\n  plan: success\n  images: skipped\n  stages-0: success\n"
                    "  stages-1: skipped\n  stages-2: skipped\n  stages-3: skipped\n"
                    "pass: every needed job succeeded (plan, stages-0) or was skipped (images, stages-1, stages-2, "
                    "stages-3)\n"]
    # A pull_request run reports no commit status: its check run is the one required.
    assert (sim.jobs["report"].result, sim.jobs["report"].runs) == ("skipped", [])


def test_a_dispatched_run_reports_a_failure_on_the_pr_head(tmp_path):
    sim = pipeline(SCENARIOS["fork-approved"], tmp_path, stage_results=lambda e: "failure")
    report = sim.jobs["report"].runs[0].step("Report the result on the pull request head")
    assert (sim.jobs["result"].result, report.ran, report.env["STATE"]) == ("failure", True, "failure")
    assert report.env["DESCRIPTION"] == ("the plan is incomplete, the head awaits a maintainer, or a job failed or "
                                         "was cancelled")
    # The report job declares no grants: it runs with the caller's, which lint asks for (CP610).
    assert "permissions" not in load(PIPELINE)["jobs"]["report"]


def store_urls(sim: Simulation) -> set[str]:
    return {run.step("Run the lane's shards").env["CI_POLICY_DATABASE_URL"] for run in stage_runs(sim)}


def test_only_a_baseline_writing_schedule_gets_the_write_store(tmp_path):
    sim = pipeline(SCENARIOS["nightly"], tmp_path)
    assert sim.jobs["plan"].outputs["write_baseline"] == "true"
    assert store_urls(sim) == {SECRETS["CI_POLICY_METRICS_STORE_URL"]}
    plan_env = sim.jobs["plan"].runs[0].step("plan").env
    assert (plan_env["EVENT_NAME"], plan_env["SCHEDULE"], plan_env["TRUST"]) == ("schedule", "0 15 * * 0-5",
                                                                                 "trusted")


@pytest.mark.parametrize("name", ["megatron", "fork-approved", "partial"])
def test_pull_request_stage_jobs_get_the_read_only_store(tmp_path, name):
    assert store_urls(pipeline(SCENARIOS[name], tmp_path)) == {SECRETS["CI_POLICY_METRICS_STORE_READ_URL"]}


def test_an_unapproved_fork_heads_stage_jobs_get_no_store(tmp_path):
    """Its cpu stages run fork code nobody reviewed, on a hosted runner where sudo reads anything."""
    sim = pipeline(SCENARIOS["fork-unapproved"], tmp_path)
    assert [run.matrix["stage"] for run in stage_runs(sim)]  # its cpu stages do run
    assert store_urls(sim) == {""}


def test_a_pr_plan_that_says_write_baseline_still_gets_the_read_only_store(tmp_path):
    s = SCENARIOS["megatron"]
    prepare_workspace(s, tmp_path)
    plan = contract_outputs(CPU, write_baseline=True)
    sim = simulate(load(PIPELINE), caller_event(s), step_outputs={"plan": {"pr-event": s.pr, "plan": plan}},
                   hooks={("plan", "inputs"): lambda step: run_step(step["step"], step["env"], tmp_path)})
    assert store_urls(sim) == {SECRETS["CI_POLICY_METRICS_STORE_READ_URL"]}


@pytest.mark.parametrize("ref, expected", [("refs/heads/main", "CI_POLICY_METRICS_STORE_URL"),
                                           ("refs/heads/feature", "CI_POLICY_METRICS_STORE_READ_URL")])
def test_a_push_gets_the_write_store_only_on_the_default_branch(tmp_path, ref, expected):
    s = Scenario("push", {"before": BASE, "after": HEAD, "forced": False,
                          "repository": {"default_branch": "main"}}, {}, None, None,
                 contract_outputs(CPU, write_baseline=True), github={"ref": ref})
    prepare_workspace(s, tmp_path)
    sim = simulate(load(PIPELINE), caller_event(s), step_outputs={"plan": {"plan": s.plan}},
                   hooks={("plan", "inputs"): lambda step: run_step(step["step"], step["env"], tmp_path)})
    assert store_urls(sim) == {SECRETS[expected]}
    # A push is planned from its own before..after range (the plan and the plan file the stage jobs run).
    env = sim.jobs["plan"].runs[0].step("plan").env
    assert (env["EVENT_NAME"], env["BASE_REV"], env["HEAD_REV"], env["FORCED"], env["DIFF_FILE"]) == (
        "push", BASE, HEAD, "false", "")


@pytest.mark.parametrize("action, cancels", [("synchronize", True), ("closed", True), ("labeled", False),
                                             ("unlabeled", False), ("opened", False), ("reopened", False)])
def test_a_new_push_or_closing_the_pr_cancels_the_running_pipeline(action, cancels):
    s = Scenario("pull_request", pull_request_event(action), {}, None, None, {})
    sim = simulate({"concurrency": load(PIPELINE)["concurrency"], "jobs": {}}, caller_event(s))
    assert sim.concurrency == {"group": "ci-policy-pr-pipeline-42", "cancel-in-progress": cancels}


def test_a_dispatched_run_waits_in_its_prs_group_and_a_schedule_has_its_own():
    dispatched = simulate({"concurrency": load(PIPELINE)["concurrency"], "jobs": {}},
                          caller_event(SCENARIOS["fork-approved"]))
    scheduled = simulate({"concurrency": load(PIPELINE)["concurrency"], "jobs": {}}, caller_event(SCENARIOS["nightly"]))
    assert dispatched.concurrency == {"group": "ci-policy-pr-pipeline-42", "cancel-in-progress": False}
    assert scheduled.concurrency == {"group": "ci-policy-pr-pipeline-1001", "cancel-in-progress": False}


def test_the_group_does_not_depend_on_the_callers_name_and_a_second_call_can_have_its_own():
    """`github.workflow` is the caller's name in a called workflow: it is not part of the group."""
    s = Scenario("pull_request", pull_request_event("labeled"), {}, None, None, {})
    event = caller_event(s)
    renamed = Event(event.name, event.payload, event.inputs, event.secrets,
                    github={**event.github, "workflow": "Another caller"})
    second = Event(event.name, event.payload, {**event.inputs, "concurrency-group": "pr-pipeline-rocm"},
                   event.secrets, github=event.github)
    groups = [simulate({"concurrency": load(PIPELINE)["concurrency"], "jobs": {}}, e).concurrency["group"]
              for e in (event, renamed, second)]
    assert groups == ["ci-policy-pr-pipeline-42", "ci-policy-pr-pipeline-42", "ci-policy-pr-pipeline-rocm-42"]


def test_a_closed_pr_runs_no_job_and_only_takes_its_group(tmp_path):
    """Merged or closed: the run cancels the PR's running lanes (its group, cancel-in-progress) and
    plans nothing, builds nothing, runs no lane and reports no result."""
    s = Scenario("pull_request", pull_request_event("closed", labels=MEGATRON), {}, None, None, {})
    sim = simulate(load(PIPELINE), caller_event(s))
    assert sim.concurrency == {"group": "ci-policy-pr-pipeline-42", "cancel-in-progress": True}
    assert {job: r.result for job, r in sim.jobs.items()} == {
        "plan": "skipped", "images": "skipped", "stages-0": "skipped", "stages-1": "skipped", "stages-2": "skipped",
        "stages-3": "skipped", "fast-fail": "skipped", "result": "skipped", "report": "skipped"}
    assert sim.ran() == []


def artifact_names(sim: Simulation) -> list[str]:
    return [step.with_["name"] for job in sim.jobs.values() for run in job.runs for step in run.steps
            if step.ran and step.step.get("uses", "").startswith("actions/upload-artifact@")]


def test_artifact_names_are_unique_and_end_in_the_run_attempt(tmp_path):
    first_run = pipeline(SCENARIOS["megatron"], tmp_path / "1")
    first = artifact_names(first_run)
    second = artifact_names(pipeline(SCENARIOS["megatron"], tmp_path / "2", run_attempt="2"))
    # The plan (its file and diff), and one timing upload per stage lane.
    assert len(first) == len(set(first)) == 1 + len(planned_entries(first_run))
    assert "ci-policy-plan-1" in first
    assert all(name.endswith("-1") for name in first) and all(name.endswith("-2") for name in second)
    assert not set(first) & set(second)


def test_a_rerun_of_failed_lanes_fetches_the_plan_of_the_plan_jobs_attempt(tmp_path):
    """Re-running failed jobs keeps the plan job, its outputs and its artifact from attempt 1."""
    s = SCENARIOS["megatron"]
    first = pipeline(s, tmp_path, stage_results=lambda e: "failure" if e["lane"] == 1 else None)
    assert first.jobs["result"].result == "failure"
    second = simulate(load(PIPELINE), caller_event(s, run_attempt="2"),
                      kept={job: first.jobs[job] for job in ("plan", "images")},
                      hooks={("result", "result"): result_step(tmp_path)})
    assert second.jobs["result"].result == "success"
    for run in stage_runs(second):
        assert run.step("Fetch the plan").with_ == {"name": "ci-policy-plan-1", "path": "ci-policy-plan"}
        assert run.step("Upload the timing records").with_["name"].endswith("-2")


# -- the inputs step, as bash runs it -------------------------------------------------------------

def test_the_inputs_step_refuses_a_multi_line_value(tmp_path):
    step = next(st for st in load(PIPELINE)["jobs"]["plan"]["steps"] if st.get("id") == "inputs")
    env = {"EVENT_NAME": "workflow_dispatch", "HEAD_COMMIT": HEAD, "CADENCE": "nightly\nforged=1"}
    outcome, outputs = run_step(step, env, tmp_path)
    assert (outcome, "forged" in outputs) == ("failure", False)


@pytest.mark.parametrize("trust, base, ok", [("untrusted", BASE, True), ("approved", "", True),
                                             ("untrusted", "", False), ("untrusted", "main", False),
                                             ("maybe", BASE, False)])
def test_the_inputs_step_needs_a_known_trust_and_a_base_commit_for_an_untrusted_head(tmp_path, trust, base, ok):
    step = next(st for st in load(PIPELINE)["jobs"]["plan"]["steps"] if st.get("id") == "inputs")
    env = {"EVENT_NAME": "pull_request", "PR_HEAD_SHA": HEAD, "PR_LABELS_JSON": "[]", "PR_TRUST": trust,
           "PR_BASE_SHA": base}
    outcome, outputs = run_step(step, env, tmp_path)
    assert outcome == ("success" if ok else "failure")
    if ok:
        assert (outputs["trust"], outputs["config_ref"]) == (trust, base if trust == "untrusted" else "")


def test_the_inputs_step_refuses_a_head_that_is_not_a_commit_sha(tmp_path):
    step = next(st for st in load(PIPELINE)["jobs"]["plan"]["steps"] if st.get("id") == "inputs")
    outcome, _ = run_step(step, {"EVENT_NAME": "pull_request", "PR_HEAD_SHA": "main"}, tmp_path)
    assert outcome == "failure"


@pytest.mark.parametrize("ref, ok", [("a" * 40, True), ("A" * 40, False), ("v1.0.0", False), ("a" * 39, False),
                                     ("main", False)])
def test_the_plan_job_refuses_a_ci_policy_ref_that_is_not_a_full_sha(tmp_path, ref, ok):
    step = load(PIPELINE)["jobs"]["plan"]["steps"][0]
    assert step["name"] == "Check the ci-policy pin"
    assert run_step(step, {"CI_POLICY_REF": ref}, tmp_path)[0] == ("success" if ok else "failure")


QUAY = "registry.example.com:5000"


@pytest.mark.parametrize("image, registry, credentials, dockerfile, context, ok", [
    (f"ghcr.io/minirl/ci-cuda:{HEAD}", "ghcr.io", "false", "docker/cuda.Dockerfile", ".", True),
    (f"ghcr.io/minirl/ci-cuda:{BASE}", "ghcr.io", "false", "docker/cuda.Dockerfile", ".", False),  # not the head SHA
    (f"docker.io/minirl/ci-cuda:{HEAD}", "ghcr.io", "true", "docker/cuda.Dockerfile", ".", False),  # not the registry
    (f"ghcr.io/minirl/ci-cuda:{HEAD}", "ghcr.io", "false", "../outside/Dockerfile", ".", False),
    (f"ghcr.io/minirl/ci-cuda:{HEAD}", "ghcr.io", "false", "docker/cuda.Dockerfile", "/", False),
    (f"ghcr.io/minirl/ci-cuda:{HEAD}", "ghcr.io", "false", "docker/cuda.Dockerfile", "a/../..", False),
    # Another registry: with the caller's registry secrets only.
    (f"{QUAY}/minirl/ci-cuda:{HEAD}", QUAY, "true", "docker/cuda.Dockerfile", ".", True),
    (f"{QUAY}/minirl/ci-cuda:{HEAD}", QUAY, "false", "docker/cuda.Dockerfile", ".", False),
    (f"ghcr.io/minirl/ci-cuda:{HEAD}", QUAY, "true", "docker/cuda.Dockerfile", ".", False),
])
def test_the_image_job_builds_only_a_head_tagged_image_of_its_registry_from_inside_the_checkout(
        tmp_path, image, registry, credentials, dockerfile, context, ok):
    step = next(st for st in load(PIPELINE)["jobs"]["images"]["steps"] if st.get("id") == "image")
    outcome, outputs = run_step(step, {"IMAGE": image, "HEAD_SHA": HEAD, "REGISTRY": registry, "DOCKERFILE": dockerfile,
                                       "CONTEXT": context, "HAS_CREDENTIALS": credentials}, tmp_path)
    assert (outcome, outputs) == (("success", {"registry": registry}) if ok else ("failure", {}))


# -- the example caller, and the files as GitHub reads them ----------------------------------------

def test_the_example_caller_pins_the_pipeline_and_ci_policy_to_one_commit():
    job = load(CALLER)["jobs"]["pipeline"]
    path, _, sha = job["uses"].partition("@")
    assert path == "ci-policy/ci-policy/.github/workflows/pr-pipeline.yml"
    assert re.fullmatch(r"[0-9a-f]{40}", sha) and job["with"]["ci-policy-ref"] == sha
    # Quoted, so YAML cannot read an all-digit SHA as a number.
    assert f'ci-policy-ref: "{sha}"' in CALLER.read_text(encoding="utf-8")


GRANTS = {"none": 0, "read": 1, "write": 2}


def test_the_example_caller_grants_what_the_pipeline_jobs_ask_and_passes_its_secrets():
    job = load(CALLER)["jobs"]["pipeline"]
    pipeline_ = load(PIPELINE)
    needed: dict[str, str] = {}
    for j in pipeline_["jobs"].values():
        # The images and report jobs declare none (they have the caller's): the example's ghcr.io
        # images need packages: write, and its comment gateway's dispatched runs statuses: write.
        for scope, grant in j.get("permissions", {"contents": "read", "packages": "write",
                                                  "statuses": "write"}).items():
            if GRANTS[grant] > GRANTS[needed.get(scope, "none")]:
                needed[scope] = grant
    assert job["permissions"] == needed
    declared = workflow_triggers(pipeline_)["workflow_call"]["secrets"]
    # The registry secrets are for an image registry other than ghcr.io; the example pushes to ghcr.io.
    assert set(job["secrets"]) == set(declared) - {"registry-username", "registry-password"}
    assert not any(spec["required"] for spec in declared.values())


@pytest.mark.parametrize("event, payload, dispatch, title", [
    ("workflow_dispatch", {"inputs": {"pull-request": "42"}}, {"pull-request": "42"},
     "ci-policy for #42 (started by a comment command)"),
    ("pull_request", {"pull_request": {"number": 42, "title": "Fix the loss"}}, {}, ""),
    ("schedule", {"schedule": "0 15 * * 6"}, {}, ""),
])
def test_a_dispatched_run_is_named_after_its_pr_and_other_runs_keep_githubs_names(event, payload, dispatch, title):
    """A dispatched run's checks show on the default branch: its name says which PR it is for. An
    empty run-name is GitHub's cue to name the run itself (the PR title, the commit)."""
    ctx = {"github": {"event_name": event, "event": payload, "workflow": "PR Test"},
           "inputs": {"pull-request": "", "cadence": "", **dispatch} if event == "workflow_dispatch" else {},
           "vars": {}}
    assert interpolate(load(CALLER)["run-name"], ctx) == title


def test_the_example_caller_runs_on_the_events_the_pipeline_handles():
    on = workflow_triggers(load(CALLER))
    assert on["pull_request"]["types"] == ["opened", "synchronize", "reopened", "labeled", "unlabeled", "closed"]
    config = yaml.safe_load((EXAMPLE_REPO / ".github" / "ci-policy.yml").read_text(encoding="utf-8"))
    # The pipeline's crons, then the tuning's (job tune), which the pipeline job leaves alone.
    assert [c["cron"] for c in on["schedule"]] == [*config["cadences"]["schedules"], "17 4 * * 1"]
    assert {"pull-request", "cadence"} <= set(on["workflow_dispatch"]["inputs"])


@pytest.mark.parametrize("path", [PIPELINE, CALLER], ids=["pr-pipeline.yml", "ci-policy.yml"])
def test_every_run_block_passes_shellcheck(path):
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "shellcheck is not installed (apt-get install shellcheck)"
    scripts = [(job_id, step["run"]) for job_id, job in load(path)["jobs"].items()
               for step in job.get("steps", []) if "run" in step]
    assert scripts or path == CALLER
    for job_id, script in scripts:
        proc = subprocess.run([shellcheck, "--shell=bash", "-"], input=script, capture_output=True, text=True,
                              timeout=60, check=False)
        assert proc.returncode == 0, (job_id, proc.stdout)


@pytest.mark.parametrize("persona", ["regular", "pedantic", "auditor"])
def test_zizmor_finds_nothing_with_each_persona(persona):
    zizmor = Path(sys.executable).parent / "zizmor"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZIZMOR_")}
    proc = subprocess.run([str(zizmor), "--offline", "--no-progress", "--color", "never", "--persona", persona,
                           str(PIPELINE), str(CALLER)], capture_output=True, text=True, timeout=300, check=False,
                          env=env, cwd=ROOT)
    assert proc.returncode == 0 and "No findings to report." in proc.stdout, proc.stdout + proc.stderr


def test_every_inline_zizmor_suppression_is_justified_by_a_comment():
    lines = PIPELINE.read_text(encoding="utf-8").splitlines()
    suppressed = [i for i, line in enumerate(lines) if "# zizmor: ignore[" in line]
    # self-repository x4 (plan, result, report, the wave jobs' steps: stages-1..3 alias
    # stages-0's), unpinned-images (the wave jobs' container), excessive-permissions x3 (the
    # workflow, its images and report jobs).
    assert len(suppressed) == 8
    for i in suppressed:
        assert lines[i - 1].strip().startswith("#"), lines[i]


def test_the_manual_shows_the_example_caller_as_it_is():
    page = (ROOT / "docs" / "adopting" / "caller-file.md").read_text(encoding="utf-8")
    section = page.split("# One caller file\n", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```\n", 1)[0]
    assert block == CALLER.read_text(encoding="utf-8")
    # The site's navigation reads in the manual's order: adopting, the caller file, the PR pipeline,
    # then the security model.
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:\n", 1)[1]
    assert nav.index("  - Adopting on GitHub:\n") < nav.index(": adopting/caller-file.md\n") \
        < nav.index(": adopting/pr-pipeline.md\n") < nav.index(": explanation/security.md\n")
