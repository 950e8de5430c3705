"""The one caller workflow of an adopting repository (examples/gpu-repo/.github/workflows/ci-policy.yml),
and `ci-policy init --workflows`, which writes it.

- Which job runs for which event: the workflow simulator (tests/workflow_eval.py) evaluates each
  job's `if:` for every event the file triggers on; exactly one job runs for each.
- The file is the packaged template rendered for the example's configuration and access policy
  (ci_policy/render/caller.py): one template, no second copy.
- `init --workflows`: the file written, its exact report, the refusals (a pin that is not a full
  SHA, a missing pin, an existing file without --force, a cron the tuning uses).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from helpers import EXAMPLE_REPO
from workflow_eval import Event, interpolate, simulate, workflow_triggers

from ci_policy import __version__
from ci_policy.cli import main
from ci_policy.render.caller import TUNE_CRON, caller_workflow

CALLER = EXAMPLE_REPO / ".github" / "workflows" / "ci-policy.yml"
PIN = "a56405b4601cbaf90ed0fc565d80f4c95a57f60c"
HEAD = "a" * 40


def load() -> dict:
    return yaml.safe_load(CALLER.read_text(encoding="utf-8"))


def dispatch_inputs(**given: str) -> dict:
    """The `inputs` context of a workflow_dispatch run: each declared input's default, then what was sent."""
    declared = workflow_triggers(load())["workflow_dispatch"]["inputs"]
    return {name: spec.get("default", "") for name, spec in declared.items()} | given


def pull_request(action: str) -> Event:
    return Event("pull_request", {"action": action, "number": 7, "pull_request": {"number": 7}})


EVENTS = {
    **{f"pull_request {a}": (pull_request(a), "pipeline")
       for a in ("opened", "synchronize", "reopened", "labeled", "unlabeled", "closed")},
    "issue_comment": (Event("issue_comment", {"action": "created", "comment": {"id": 1, "body": "/ok-to-test"},
                                              "issue": {"number": 7, "pull_request": {}}}), "comment"),
    "schedule nightly": (Event("schedule", {"schedule": "0 15 * * 0-5"}), "pipeline"),
    "schedule weekly": (Event("schedule", {"schedule": "0 15 * * 6"}), "pipeline"),
    "schedule tuning": (Event("schedule", {"schedule": TUNE_CRON}), "tune"),
    "dispatch pipeline": (Event("workflow_dispatch", inputs=dispatch_inputs(**{"pull-request": "7"})), "pipeline"),
    "dispatch by hand": (Event("workflow_dispatch", inputs=dispatch_inputs()), "pipeline"),
    "dispatch rerun-test": (Event("workflow_dispatch", inputs=dispatch_inputs(
        pull_number="7", head_sha=HEAD, test_file="tests/e2e/test_fsdp_sft.py", image_tag="v2.1",
        sglang_pr="4242")), "rerun-test"),
}


@pytest.mark.parametrize("name", list(EVENTS))
def test_exactly_one_job_runs_for_each_event(name):
    event, job = EVENTS[name]
    sim = simulate(load(), event)
    assert sim.ran() == [job]
    assert {j: r.result for j, r in sim.jobs.items() if j != job} == {
        j: "skipped" for j in ("pipeline", "comment", "rerun-test", "tune") if j != job}


def test_every_event_the_file_triggers_on_is_covered():
    on = workflow_triggers(load())
    assert set(on) == {"pull_request", "issue_comment", "schedule", "workflow_dispatch"}
    assert on["pull_request"]["types"] == ["opened", "synchronize", "reopened", "labeled", "unlabeled", "closed"]
    assert on["issue_comment"] == {"types": ["created"]}
    assert [s["cron"] for s in on["schedule"]] == ["0 15 * * 0-5", "0 15 * * 6", TUNE_CRON]


def test_each_job_holds_only_its_own_grants_and_no_job_takes_the_pipelines_group():
    doc = load()
    assert doc["permissions"] == {}
    assert {j: job["permissions"] for j, job in doc["jobs"].items()} == {
        "pipeline": {"contents": "read", "pull-requests": "read", "statuses": "write", "packages": "write"},
        "comment": {"contents": "read", "issues": "write", "pull-requests": "write", "statuses": "write",
                    "actions": "write"},
        "rerun-test": {"contents": "read", "pull-requests": "read", "statuses": "write"},
        "tune": {"actions": "read", "contents": "write", "pull-requests": "write", "issues": "write"},
    }
    # Only /rerun-test has a caller-side group; the pipeline's own is inside pr-pipeline.yml.
    assert [j for j, job in doc["jobs"].items() if "concurrency" in job] == ["rerun-test"]


def test_a_newer_rerun_of_the_same_file_replaces_the_running_one():
    event = EVENTS["dispatch rerun-test"][0]
    group = interpolate(load()["jobs"]["rerun-test"]["concurrency"], {"inputs": event.inputs, "github": {}})
    assert group == {"group": "ci-policy-rerun-test-7-tests/e2e/test_fsdp_sft.py", "cancel-in-progress": True}


@pytest.mark.parametrize("inputs, expected", [
    ({"pull_number": "7", "head_sha": HEAD, "test_file": "tests/e2e/test_a.py"},
     f"rerun tests/e2e/test_a.py for #7 at {HEAD}"),
    ({"pull-request": "7"}, "ci-policy for #7 (started by a comment command)"),
    ({}, ""),
])
def test_the_run_name_is_the_reruns_the_dispatched_pipelines_or_empty(inputs, expected):
    """An empty run-name is GitHub's cue to name the run itself (the PR title, the commit)."""
    assert interpolate(load()["run-name"], {"inputs": dispatch_inputs(**inputs), "github": {}}) == expected


# -- one template -----------------------------------------------------------------------------------

def test_the_example_is_the_template_rendered_for_its_configuration_and_policy():
    pins = list(json.loads((EXAMPLE_REPO / ".github" / "ci-commands.json").read_text())["commands"]["rerun_test"]
                ["pins"])
    assert pins == ["ci-sglang-pr", "ci-megatron-pr"]
    text = caller_workflow(PIN, [("0 15 * * 0-5", "nightly"), ("0 15 * * 6", "weekly")], pins, __version__)
    assert text == CALLER.read_text(encoding="utf-8")


def test_a_repository_without_schedules_or_pins_gets_only_the_tuning_cron_and_the_base_inputs():
    doc = yaml.safe_load(caller_workflow(PIN, [], []))
    on = workflow_triggers(doc)
    assert on["schedule"] == [{"cron": TUNE_CRON}]
    assert list(on["workflow_dispatch"]["inputs"]) == ["pull-request", "cadence", "pull_number", "head_sha",
                                                       "test_file", "stage", "image_tag"]


@pytest.mark.parametrize("args, message", [
    (("A" * 40, [], []), f"'{'A' * 40}' is not a full 40-hex commit SHA"),
    ((PIN, [(TUNE_CRON, "weekly")], []), f"the schedule '{TUNE_CRON}' is the tuning's own cron; the pipeline "
                                         "needs another"),
    ((PIN, [('0 "1', "weekly")], []), "the schedule '0 \"1' is not five cron fields"),
    ((PIN, [], ["sglang-pr"]), "the pin 'sglang-pr' is not a pin name like ci-<name>"),
    ((PIN, [], ["ci-stage"]), "the pin 'ci-stage' would be the dispatch input 'stage', which the caller already has"),
    ((PIN, [], ["ci-a", "ci-a"]), "the pin 'ci-a' would be the dispatch input 'a', which the caller already has"),
])
def test_the_renderer_refuses_what_it_cannot_write(args, message):
    with pytest.raises(ValueError) as info:
        caller_workflow(*args)
    assert str(info.value) == message


# -- ci-policy init --workflows ---------------------------------------------------------------------

@pytest.fixture
def repo(tmp_path: Path) -> Path:
    target = tmp_path / "repo"
    shutil.copytree(EXAMPLE_REPO, target, ignore=shutil.ignore_patterns("__pycache__", "workflows"))
    return target


def test_init_workflows_writes_the_example_caller(repo, capsys):
    rc = main(["init", "--repo", str(repo), "--workflows", "--ci-policy-ref", PIN])
    out, err = capsys.readouterr()
    assert (rc, err) == (0, "")
    assert out == (f"ci-policy init: wrote .github/workflows/ci-policy.yml: jobs pipeline, comment, rerun-test and "
                   f"tune, pinned to {PIN}; pipeline schedules: '0 15 * * 0-5', '0 15 * * 6'; /rerun-test pins: "
                   "ci-sglang-pr, ci-megatron-pr\n")
    assert (repo / ".github" / "workflows" / "ci-policy.yml").read_text() == CALLER.read_text()


def test_init_workflows_json(repo, capsys):
    assert main(["init", "--repo", str(repo), "--workflows", "--ci-policy-ref", PIN, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in data.items() if k != "schema"} == {
        "ok": True, "written": [".github/workflows/ci-policy.yml"], "ci_policy_ref": PIN,
        "schedules": ["0 15 * * 0-5", "0 15 * * 6"], "pins": ["ci-sglang-pr", "ci-megatron-pr"]}


def test_init_workflows_without_a_configuration_or_policy_writes_the_bare_caller(tmp_path, capsys):
    assert main(["init", "--repo", str(tmp_path), "--workflows", "--ci-policy-ref", PIN]) == 0
    assert capsys.readouterr().out == (
        "ci-policy init: wrote .github/workflows/ci-policy.yml: jobs pipeline, comment, rerun-test and tune, "
        f"pinned to {PIN}; pipeline schedules: none; /rerun-test pins: none\n")
    assert (tmp_path / ".github" / "workflows" / "ci-policy.yml").read_text() == caller_workflow(PIN, [], [])


@pytest.mark.parametrize("argv, err", [
    (["--workflows", "--ci-policy-ref", "v0.1.0"],
     "ci-policy init: error: --ci-policy-ref: 'v0.1.0' is not a full 40-hex commit SHA (lowercase)\n"
     "    hint: pin the ci-policy commit to run, e.g. the output of `git rev-parse HEAD` in ci-policy\n"),
    (["--workflows", "--ci-policy-ref", PIN.upper()],
     f"ci-policy init: error: --ci-policy-ref: '{PIN.upper()}' is not a full 40-hex commit SHA (lowercase)\n"
     "    hint: pin the ci-policy commit to run, e.g. the output of `git rev-parse HEAD` in ci-policy\n"),
    (["--workflows"],
     "ci-policy init: error: --ci-policy-ref: --workflows needs the ci-policy commit to pin\n"
     "    hint: pass --ci-policy-ref SHA (the full 40-hex commit)\n"),
    (["--ci-policy-ref", PIN],
     "ci-policy init: error: --ci-policy-ref: only goes with --workflows\n"
     "    hint: pass --workflows to write the caller workflow\n"),
])
def test_init_workflows_refuses_a_bad_or_missing_pin_with_a_usage_error(repo, capsys, argv, err):
    assert main(["init", "--repo", str(repo), *argv]) == 2
    assert capsys.readouterr() == ("", err)
    assert not (repo / ".github" / "workflows").exists()


def test_init_workflows_does_not_overwrite_without_force(repo, capsys):
    target = repo / ".github" / "workflows" / "ci-policy.yml"
    target.parent.mkdir()
    target.write_text("name: mine\n")
    assert main(["init", "--repo", str(repo), "--workflows", "--ci-policy-ref", PIN]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", ".github/workflows/ci-policy.yml: .github/workflows/ci-policy.yml already exists; "
                              "ci-policy init does not overwrite it without --force\n"
                              "    hint: pass --force to replace it, or move it away first\nci-policy: 1 error\n")
    assert target.read_text() == "name: mine\n"
    assert main(["init", "--repo", str(repo), "--workflows", "--ci-policy-ref", PIN, "--force"]) == 0
    assert target.read_text() == CALLER.read_text()


def test_init_workflows_refuses_a_pipeline_cron_the_tuning_uses(repo, capsys):
    config = repo / ".github" / "ci-policy.yml"
    config.write_text(config.read_text().replace('"0 15 * * 6": weekly', f'"{TUNE_CRON}": weekly'))
    assert main(["init", "--repo", str(repo), "--workflows", "--ci-policy-ref", PIN]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f".github/ci-policy.yml: cannot write .github/workflows/ci-policy.yml: the schedule "
                   f"'{TUNE_CRON}' is the tuning's own cron; the pipeline needs another\n"
                   "    hint: give the pipeline's schedule another cron in cadences.schedules, or the /rerun-test pin "
                   "another name in .github/ci-commands.json\nci-policy: 1 error\n")
    assert not (repo / ".github" / "workflows").exists()


def test_lint_reports_a_job_whose_ci_policy_ref_differs_from_its_pin(repo):
    """The commit is written twice per job (GitHub takes no expression in `uses:`): lint keeps them equal."""
    from ci_policy.model.lint import lint

    target = repo / ".github" / "workflows" / "ci-policy.yml"
    target.parent.mkdir()
    text = CALLER.read_text()
    lines = text.splitlines(keepends=True)
    rerun = next(i for i, line in enumerate(lines) if line.startswith("  rerun-test:"))
    at = next(i for i in range(rerun, len(lines)) if "ci-policy-ref:" in lines[i])
    lines[at] = lines[at].replace(PIN, "b" * 40)
    target.write_text("".join(lines))
    assert [(d.code, d.path, d.line, d.message) for d in lint(repo).errors if d.code == "CP603"] == [
        ("CP603", ".github/workflows/ci-policy.yml", at + 1,
         f"jobs.rerun-test.with.ci-policy-ref: '{'b' * 40}' differs from the ref rerun-test.yml is called at "
         f"('{PIN}')")]
    assert [d.code for d in lint(repo).errors if d.code is not None and d.code.startswith("CP6")] == ["CP603"]


def test_init_workflows_reads_the_configuration_it_is_given(repo, capsys):
    missing = repo / "missing.yml"
    assert main(["init", "--repo", str(repo), "--workflows", "--ci-policy-ref", PIN, "--config", str(missing)]) == 1
    assert capsys.readouterr() == ("", "missing.yml: CP402 path-missing: configuration file missing.yml does not "
                                       "exist\n    hint: create it or point the configuration at the right "
                                       "configuration file\nci-policy: 1 error\n")
    assert not (repo / ".github" / "workflows").exists()
