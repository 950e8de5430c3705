"""`ci-policy result`: the pipeline's required check, from the plan (its file, or its
completeness) and the needed jobs' results.

Exact outputs (text, json, github annotations and summary) for: every stage skipped (a
pass that lists the jobs and stages skipped), the plan job failed, a partial plan, a
shard failed, a shard cancelled, everything succeeded; with the plan file: an unapproved
outside contributor's head (never a pass: awaiting `/ok-to-test <sha>`, one reason per
stage held back), the same head approved (passes when its lanes pass, fails when one
fails); and the usage errors of each input and of a bad plan file.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from helpers import EXAMPLE_REPO, clean_env, console_script
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
                   "stage-c-4-gpu-h200", "awaiting_approval": None, "held_for_trust": {}}
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


HINT = ('    hint: pass the needed jobs\' results as a JSON object of job id -> {"result": ...} through an env: '
        'variable\n')


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


# -- with the plan file: the stages the plan held back for trust -----------------------------------------

HEAD = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
LANES_PASSED = needs(plan="success", images="success", stages="success")
UNTRUSTED_LANES = needs(plan="success", images="skipped", stages="success")  # the cpu lane ran
AWAITING = (f"awaiting `/ok-to-test {HEAD}` from a maintainer: this head is an outside contributor's, not "
            "approved, so its accelerator stages did not run")
HELD = ("stage-b-1-gpu-h200", "stage-c-4-gpu-h200", "stage-c-4-gpu-mi350")


def plan_file(tmp_path, capsys, trust: str) -> str:
    """The plan file `ci-policy plan --json-out` writes for a megatron-labelled PR of examples/gpu-repo."""
    path = tmp_path / f"{trust}.json"
    rc, _out, err = run(["plan", "--repo", str(EXAMPLE_REPO), "--event", "pull_request", "--labels-json",
                         '["run-ci-megatron"]', "--trust", trust, "--json-out", str(path)], capsys)
    assert (rc, err) == (0, "")
    return str(path)


def test_an_unapproved_outside_contributors_head_never_passes(tmp_path, capsys, monkeypatch):
    """Its accelerator stages were held back for trust: every job that ran passed, yet the check
    fails, naming the approval it awaits and each stage with its reason."""
    plan = plan_file(tmp_path, capsys, "untrusted")
    argv = ["result", "--plan", plan, "--needs-json", UNTRUSTED_LANES, "--head-sha", HEAD]
    reasons = [AWAITING, *(f"stage {stage} did not run: untrusted head not approved" for stage in HELD)]
    text = ("ci-policy result: FAIL\n  plan: success\n  images: skipped\n  stages: success\n"
            + "".join(f"fail: {r}\n" for r in reasons))
    assert run(argv, capsys) == (1, text, "")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert run([*argv, "--format", "github"], capsys) == (1, text + "".join(f"::error::{r}\n" for r in reasons), "")
    assert "- awaiting \\`/ok-to-test " in summary.read_text()
    rc, out, err = run([*argv, "--format", "json"], capsys)
    assert (rc, err) == (1, "")
    assert json.loads(out) == {
        "schema": 1, "ok": False, "plan_complete": True,
        "jobs": {"plan": "success", "images": "skipped", "stages": "success"}, "failures": reasons,
        "summary": "4 reason(s) to fail", "awaiting_approval": HEAD,
        "held_for_trust": dict.fromkeys(HELD, "untrusted head not approved")}


def test_without_the_head_sha_the_approval_is_named_with_a_placeholder(tmp_path, capsys):
    rc, out, _err = run(["result", "--plan", plan_file(tmp_path, capsys, "untrusted"), "--needs-json",
                         UNTRUSTED_LANES], capsys)
    assert rc == 1
    assert out.splitlines()[4] == ("fail: awaiting `/ok-to-test <head sha>` from a maintainer: this head is an "
                                   "outside contributor's, not approved, so its accelerator stages did not run")


def test_the_same_head_approved_passes_when_its_lanes_pass_and_fails_when_one_fails(tmp_path, capsys):
    plan = plan_file(tmp_path, capsys, "approved")
    assert run(["result", "--plan", plan, "--needs-json", LANES_PASSED, "--head-sha", HEAD], capsys) == (
        0, "ci-policy result: PASS\n  plan: success\n  images: success\n  stages: success\n"
           "pass: every needed job succeeded (plan, images, stages)\n", "")
    failed = needs(plan="success", images="success", stages="failure")
    assert run(["result", "--plan", plan, "--needs-json", failed, "--head-sha", HEAD], capsys) == (
        1, "ci-policy result: FAIL\n  plan: success\n  images: success\n  stages: failure\n"
           "fail: job stages failed\n", "")


def test_the_plan_files_completeness_and_invalid_files_are_the_plans(tmp_path, capsys):
    plan = json.loads(open(plan_file(tmp_path, capsys, "trusted"), encoding="utf-8").read())
    plan["plan_complete"] = False
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(plan), encoding="utf-8")
    rc, out, err = run(["result", "--plan", str(partial), "--plan-complete", "false", "--needs-json",
                        LANES_PASSED, "--format", "json"], capsys)
    assert (rc, err, json.loads(out)["plan_complete"], json.loads(out)["failures"]) == (
        1, "", False, ["the plan is partial (see the plan job's annotations)"])


def test_a_docs_only_plan_passes_naming_the_stages_it_skipped(tmp_path, capsys):
    """With the cpu stage diff-pruned, a docs-only change plans no stage: nothing ran, and it passes."""
    config = tmp_path / "ci-policy.yml"
    config.write_text((EXAMPLE_REPO / ".github" / "ci-policy.yml").read_text(encoding="utf-8").replace(
        "    backend: cpu\n    runner: pytest\n", "    backend: cpu\n    runner: pytest\n    diff_pruned: true\n"),
        encoding="utf-8")
    (tmp_path / "pr.diff").write_bytes(b"M\0docs/guide.md\0")
    path = tmp_path / "docs.json"
    rc, _out, err = run(["plan", "--repo", str(EXAMPLE_REPO), "--config", str(config), "--event", "pull_request",
                         "--labels-json", "[]", "--diff", str(tmp_path / "pr.diff"), "--trust", "trusted",
                         "--json-out", str(path)], capsys)
    assert (rc, err) == (0, "")
    skipped = needs(plan="success", images="skipped", stages="skipped")
    assert run(["result", "--plan", str(path), "--needs-json", skipped], capsys) == (
        0, "ci-policy result: PASS\n  plan: success\n  images: skipped\n  stages: skipped\n"
           "pass: every stage skipped: jobs skipped: images, stages; stages the plan skipped: stage-a-cpu, "
           "stage-b-1-gpu-h200, stage-c-4-gpu-h200, stage-c-4-gpu-mi350\n", "")


def test_an_empty_plan_option_means_no_plan_file(capsys):
    """The result job passes "" when the plan job wrote no plan: --plan-complete decides."""
    assert run(["result", "--plan", "", "--plan-complete", "", "--needs-json",
                needs(plan="failure", images="skipped", stages="skipped")], capsys)[0] == 1


PLAN_HINT = "    hint: pass the file `ci-policy plan --format json` wrote in this run's plan job\n"


@pytest.mark.parametrize("content, extra, message", [
    (None, (), "--plan: cannot read {path}: No such file or directory\n" + PLAN_HINT),
    ("{", (), "--plan: {path}: not a JSON plan: Expecting property name enclosed in double quotes: line 1 "
              "column 2 (char 1)\n" + PLAN_HINT),
    ('{"schema": 1}', (), "--plan: {path}: missing key 'inputs'\n" + PLAN_HINT),
    ('{"schema": 2}', (), "--plan: {path}: schema: expected schema 1, got 2\n" + PLAN_HINT),
    ("trusted", ("--plan-complete", "false"),
     "--plan-complete: says false, but the plan file {path} says plan_complete true\n"
     "    hint: pass the plan job's own plan file and output, from the same run attempt\n"),
    ("trusted", ("--head-sha", "1a2b3c"),
     "--head-sha: expected a 40-hex commit SHA, got '1a2b3c'\n"
     "    hint: pass ${{{{ needs.plan.outputs.head_sha }}}}\n"),
])
def test_a_bad_plan_file_is_a_located_usage_error(tmp_path, capsys, content, extra, message):
    if content == "trusted":
        path = plan_file(tmp_path, capsys, "trusted")
    else:
        path = str(tmp_path / "plan.json")
        if content is not None:
            (tmp_path / "plan.json").write_text(content, encoding="utf-8")
    argv = ["result", "--plan", path, "--needs-json", LANES_PASSED, *extra]
    assert run(argv, capsys) == (2, "", "ci-policy result: error: " + message.format(path=path))


def test_neither_the_plan_nor_its_completeness_is_a_usage_error(capsys):
    assert run(["result", "--needs-json", LANES_PASSED], capsys) == (
        2, "", "ci-policy result: error: --plan: nothing says whether the plan is complete\n"
               "    hint: pass --plan FILE (the plan job's plan file) or --plan-complete BOOL\n")
