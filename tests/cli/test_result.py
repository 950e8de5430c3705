"""`ci-policy result`: the pipeline's required check, from the plan's completeness and `toJSON(needs)`.

Exact outputs (text, json, github annotations and summary) for: every stage skipped (a
pass that lists the jobs and stages skipped), the plan job failed, a partial plan, a
shard failed, a shard cancelled, everything succeeded; and the usage errors of each input.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from helpers import clean_env, console_script
from helpers import run_cli as run

from ci_policy.plan.outcome import Job, outcome, parse_needs

PLAN_OUTPUTS = {"plan_complete": "true", "invalid_files": "[]",
                "skipped_stages": '["stage-b-1-gpu-h200","stage-c-4-gpu-h200"]', "has_stage_jobs": "false"}


def needs(**jobs) -> str:
    return json.dumps({name: ({"result": value, "outputs": {}} if isinstance(value, str) else value)
                       for name, value in jobs.items()})


ALL_SKIPPED = needs(plan={"result": "success", "outputs": PLAN_OUTPUTS}, images="skipped", stages="skipped")

CASES = [
    pytest.param(
        "true", ALL_SKIPPED, 0,
        "ci-policy result: PASS\n  plan: success\n  images: skipped\n  stages: skipped\n"
        "pass: every stage skipped: jobs skipped: images, stages; stages the plan skipped: stage-b-1-gpu-h200, "
        "stage-c-4-gpu-h200\n",
        id="all-skipped"),
    pytest.param(
        "", needs(plan="failure", images="skipped", stages="skipped"), 1,
        "ci-policy result: FAIL\n  plan: failure\n  images: skipped\n  stages: skipped\n"
        "fail: the plan is missing: the plan job wrote no plan_complete output, so nothing says which stages "
        "had to run\n"
        "fail: job plan failed\n",
        id="plan-job-failed"),
    pytest.param(
        "false", needs(plan={"result": "success", "outputs": {**PLAN_OUTPUTS, "plan_complete": "false",
                                                              "invalid_files": '["tests/e2e/test_bad.py"]'}},
                       stages="success"), 1,
        "ci-policy result: FAIL\n  plan: success\n  stages: success\n"
        "fail: the plan is partial: 1 invalid test file(s) not scheduled: tests/e2e/test_bad.py (see the plan "
        "job's annotations)\n",
        id="plan-partial"),
    pytest.param(
        "true", needs(plan="success", images="success", stages="failure"), 1,
        "ci-policy result: FAIL\n  plan: success\n  images: success\n  stages: failure\n"
        "fail: job stages failed\n",
        id="a-shard-failed"),
    pytest.param(
        "true", needs(plan="success", images="success", stages="cancelled"), 1,
        "ci-policy result: FAIL\n  plan: success\n  images: success\n  stages: cancelled\n"
        "fail: job stages was cancelled\n",
        id="a-shard-cancelled"),
    pytest.param(
        "true", needs(plan="success", images="success", stages="success"), 0,
        "ci-policy result: PASS\n  plan: success\n  images: success\n  stages: success\n"
        "pass: every needed job succeeded (plan, images, stages)\n",
        id="all-succeeded"),
    pytest.param(
        "true", needs(plan="success", images="skipped", stages="success"), 0,
        "ci-policy result: PASS\n  plan: success\n  images: skipped\n  stages: success\n"
        "pass: every needed job succeeded (plan, stages) or was skipped (images)\n",
        id="stages-ran-without-an-image-build"),
]


@pytest.mark.parametrize("plan_complete, needs_json, rc, text", CASES)
def test_text(capsys, plan_complete, needs_json, rc, text):
    argv = ["result", "--plan-complete", plan_complete, "--needs-json", needs_json]
    assert run(argv, capsys) == (rc, text, "")


@pytest.mark.parametrize("plan_complete, needs_json, rc, text", CASES)
def test_github_has_one_error_per_reason_and_a_summary(capsys, tmp_path, monkeypatch, plan_complete, needs_json,
                                                       rc, text):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    argv = ["result", "--plan-complete", plan_complete, "--needs-json", needs_json, "--format", "github"]
    reasons = [line[len("fail: "):] for line in text.splitlines() if line.startswith("fail: ")]
    assert run(argv, capsys) == (rc, text + "".join(f"::error::{r}\n" for r in reasons), "")
    written = summary.read_text()
    assert written.startswith("## ci-policy result: " + ("✅ pass" if rc == 0 else "❌ fail") + "\n")
    for reason in reasons:
        assert f"- {reason.replace('_', chr(92) + '_')}\n" in written


def test_json(capsys):
    rc, out, err = run(["result", "--plan-complete", "true", "--needs-json", ALL_SKIPPED, "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert json.loads(out) == {
        "schema": 1, "ok": True, "plan_complete": True,
        "jobs": {"plan": "success", "images": "skipped", "stages": "skipped"}, "failures": [],
        "summary": "every stage skipped: jobs skipped: images, stages; stages the plan skipped: stage-b-1-gpu-h200, "
                   "stage-c-4-gpu-h200"}
    rc, out, err = run(["result", "--plan-complete", "", "--needs-json", needs(plan="cancelled"), "--format",
                        "json"], capsys)
    assert (rc, json.loads(out)["plan_complete"], json.loads(out)["failures"][1]) == (1, None, "job plan was cancelled")


def test_a_stage_job_that_ran_is_not_every_stage_skipped():
    # The plan job is found by its plan_complete output, whatever its id.
    jobs = parse_needs(needs(decide={"result": "success", "outputs": {"plan_complete": "true"}},
                             gpu="success", cpu="skipped"))
    assert outcome(True, jobs).summary == "every needed job succeeded (decide, gpu) or was skipped (cpu)"
    assert outcome(True, (Job("plan", "success"), Job("stages", "skipped"))).summary == (
        "every stage skipped: jobs skipped: stages")


HINT = "    hint: pass ${{ toJSON(needs) }} through an env: variable\n"


@pytest.mark.parametrize("plan_complete, needs_json, message", [
    ("yes", "{}", "--plan-complete: expected true, false or empty, got 'yes'\n"
                  "    hint: pass ${{ needs.plan.outputs.plan_complete }}\n"),
    ("true", "", "--needs-json: is empty\n" + HINT),
    ("true", "  ", "--needs-json: is empty\n" + HINT),
    ("true", "{", "--needs-json: not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 "
                  "(char 1)\n" + HINT),
    ("true", "[]", "--needs-json: expected a JSON object of job id -> {result, outputs}, got '[]'\n" + HINT),
    ("true", '{"plan": "success"}', '--needs-json: plan: expected an object with a result, got "success"\n' + HINT),
    ("true", '{"plan": {"result": "neutral"}}',
     '--needs-json: plan.result: expected one of success, failure, cancelled, skipped, got "neutral"\n' + HINT),
    ("true", '{"plan": {"result": "success", "outputs": {"n": 1}}}',
     '--needs-json: plan.outputs: expected an object of strings, got {"n": 1}\n' + HINT),
    ("true", '{"plan": {"result": "success"}, "x": {"result": NaN}}',
     "--needs-json: not valid JSON: NaN is not allowed\n" + HINT),
])
def test_usage_errors(capsys, plan_complete, needs_json, message):
    argv = ["result", "--plan-complete", plan_complete, "--needs-json", needs_json]
    assert run(argv, capsys) == (2, "", "ci-policy result: error: " + message)
    # In github format the error is an annotation too.
    rc, out, err = run([*argv, "--format", "github"], capsys)
    assert (rc, err) == (2, "ci-policy result: error: " + message)
    assert out.startswith("::error::ci-policy result: ")


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_a_lone_surrogate_in_an_input_is_shown_escaped_not_a_crash(fmt):
    """`\\ud800` is valid JSON that no UTF-8 output can carry: shown as its escape."""
    proc = subprocess.run([console_script(), "result", "--plan-complete", "true", "--needs-json",
                           '{"\\ud800": {"result": "failure"}}', "--format", fmt],
                          capture_output=True, text=True, env=clean_env(), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "job \\ud800 failed" in proc.stdout
