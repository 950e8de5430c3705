"""app: each use case called with a request on a real checkout (a copy of examples/gpu-repo, or a
checkout of a few files), its result compared value by value.

The example's weekly plan is the split tests/cli/test_tune.py's comment works out by hand: stage-b
[360 + 180, 300 + 240], stage-c [2400, 1500 + 480, 900 + 600 + 360], mi350 [540, 480]."""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path

import pytest
from helpers import read_golden

from ci_policy.app import tune
from ci_policy.app.file_run import FileRunRequest, file_run
from ci_policy.app.init import InitRequest, init
from ci_policy.app.lint import lint
from ci_policy.app.listing import list_shard
from ci_policy.app.planning import PlanCommand, plan, plan_command
from ci_policy.app.registry import registry
from ci_policy.app.requests import CheckoutRequest, PlanInputs, PlanRequest, PlanSource, ScanRequest
from ci_policy.app.result import ResultRequest, result
from ci_policy.app.run import RunRequest, execute, prepare
from ci_policy.errors import InputErrors, UsageError

EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "tuning_e2e"
WEEKLY = PlanInputs(event="schedule", schedule="0 15 * * 6")
FAST = ("tests/fast/test_advantages.py", "tests/fast/test_kl.py", "tests/fast/test_rollout.py",
        "tests/fast/test_session_protocol.py")


def scan(repo: Path) -> ScanRequest:
    return ScanRequest(repo, no_cache=True, jobs=1)


def shards(stage) -> list[tuple[int, float, tuple[str, ...]]]:
    return [(s.index, s.est_seconds, s.files) for s in stage.shards]


# -- plan and list ------------------------------------------------------------------------------

def test_plan_of_a_push_runs_the_cpu_stage_only(example_repo) -> None:
    planned = plan(PlanRequest(example_repo, None, PlanInputs(event="push"), scan(example_repo))).plan
    assert [(s.stage.name, s.decision, shards(s)) for s in planned.stages] == [
        ("stage-a-cpu", "run", [(0, 20, FAST)]),
        ("stage-b-1-gpu-h200", "skip", []),
        ("stage-c-4-gpu-h200", "skip", []),
        ("stage-c-4-gpu-mi350", "skip", []),
    ]
    assert planned.invalid == ()


def test_plan_of_the_weekly_schedule_splits_every_gpu_stage(example_repo) -> None:
    planned = plan(PlanRequest(example_repo, None, WEEKLY, scan(example_repo))).plan
    assert {s.stage.name: shards(s) for s in planned.stages} == {
        "stage-a-cpu": [(0, 20, FAST)],
        "stage-b-1-gpu-h200": [
            (0, 540, ("tests/e2e/session_server/test_session_tool_calls.py", "tests/e2e/test_sglang_rollout.py")),
            (1, 540, ("tests/e2e/test_megatron_sft.py", "tests/e2e/test_fsdp_grpo.py"))],
        "stage-c-4-gpu-h200": [
            (0, 2400, ("tests/e2e/test_megatron_long_context.py",)),
            (1, 1980, ("tests/e2e/test_megatron_nightly_convergence.py",
                       "tests/e2e/session_server/test_session_multiturn.py")),
            (2, 1860, ("tests/e2e/test_megatron_ppo_4gpu.py", "tests/e2e/test_fsdp_dpo_4gpu.py",
                       "tests/e2e/test_rocm_fsdp_grpo.py"))],
        "stage-c-4-gpu-mi350": [
            (0, 540, ("tests/e2e/test_rocm_megatron_sft.py",)),
            (1, 480, ("tests/e2e/test_rocm_fsdp_grpo.py",))],
    }


def test_plan_inputs_that_disagree_are_refused_naming_the_option(example_repo) -> None:
    inputs = PlanInputs(event="push", head="abc")
    with pytest.raises(UsageError) as err:
        plan(PlanRequest(example_repo, None, inputs, scan(example_repo)))
    assert (err.value.source, err.value.message) == ("--head", "needs --base")


def test_list_takes_the_same_shard_from_the_plan_inputs_and_from_the_plan_file(example_repo, tmp_path) -> None:
    request = PlanRequest(example_repo, None, WEEKLY, scan(example_repo))
    planned = plan_command(PlanCommand(request, whole=True, json_out=str(tmp_path / "plan.json")))
    assert planned.document is not None and (tmp_path / "plan.json").read_text() == planned.document + "\n"
    expected = (1, 1980, ("tests/e2e/test_megatron_nightly_convergence.py",
                          "tests/e2e/session_server/test_session_multiturn.py"))
    for source in (PlanSource(example_repo, None, "stage-c-4-gpu-h200", inputs=request),
                   PlanSource(example_repo, None, "stage-c-4-gpu-h200", plan_file=str(tmp_path / "plan.json"))):
        listed = list_shard(source, 1)
        assert listed.stage.stage.name == "stage-c-4-gpu-h200"
        assert listed.shard is not None
        assert (listed.shard.index, listed.shard.est_seconds, listed.shard.files) == expected
        assert listed.invalid == ()


# -- run ------------------------------------------------------------------------------------------

def two_file_repo(root: Path) -> Path:
    """One `runner: python` stage `unit`: tests/test_a.py passes, tests/test_b.py exits 3."""
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "ci-policy.yml").write_text(
        "version: 1\ndiscovery: {roots: [tests]}\nstages:\n  - {name: unit, backend: cpu, runner: python}\n")
    (root / "tests").mkdir()
    for name, body in (("test_a", 'print("test_a ran")'), ("test_b", "raise SystemExit(3)")):
        (root / "tests" / f"{name}.py").write_text(
            'from ci_policy import register_cpu_ci\n\nregister_cpu_ci(est_time=5, suite="unit")\n\n'
            f'if __name__ == "__main__":\n    {body}\n')
    return root


def test_run_runs_the_shard_and_reports_each_file(tmp_path, capfd) -> None:
    repo = two_file_repo(tmp_path / "repo")
    source = PlanSource(repo, None, "unit", inputs=PlanRequest(repo, None, PlanInputs(event="push"), scan(repo)))
    request = RunRequest(source, records_out=str(tmp_path / "records"))
    prepared = prepare(request)
    assert (prepared.job.stage.stage.name, prepared.timings_out, prepared.store) == ("unit", None, None)
    assert [(s.index, s.est_seconds, s.files) for s in prepared.shards] == [
        (0, 10, ("tests/test_a.py", "tests/test_b.py"))]
    shown: list[str] = []
    executed = execute(request, prepared, shown.append)
    assert shown == ["Enabled 2 test(s) (est total 10s) for unit shard 0:\n  tests/test_a.py (est 5s)\n"
                     "  tests/test_b.py (est 5s)"]
    assert executed.signal is None and executed.result is not None
    assert executed.result.ok is False and executed.result.not_run == []
    assert [(r.registration.file, r.passed, [(a.status, a.returncode) for a in r.attempts])
            for r in executed.result.results] == [("tests/test_a.py", True, [("pass", 0)]),
                                                  ("tests/test_b.py", False, [("fail", 3)])]
    assert "test_a ran" in capfd.readouterr().out


def test_run_excuses_a_quarantined_failure_through_its_until_day_and_not_after(tmp_path, capfd) -> None:
    repo = two_file_repo(tmp_path / "repo")
    with (repo / ".github" / "ci-policy.yml").open("a") as fh:
        fh.write("quarantine:\n  - {file: tests/test_b.py, reason: exits 3, owner: '@alice', until: 2027-01-15}\n")
    source = PlanSource(repo, None, "unit", inputs=PlanRequest(repo, None, PlanInputs(event="push"), scan(repo)))
    outcomes = []
    for today in (datetime.date(2027, 1, 15), datetime.date(2027, 1, 16)):
        request = RunRequest(source, records_out=str(tmp_path / "records"), continue_on_error=True, today=today)
        executed = execute(request, prepare(request), lambda _text: None)
        assert executed.result is not None
        outcomes.append((executed.result.ok, [(r.file, r.passed, r.excused) for r in executed.result.results],
                         executed.result.warnings))
    capfd.readouterr()
    assert outcomes == [
        (True, [("tests/test_a.py", True, False), ("tests/test_b.py", False, True)], []),
        (False, [("tests/test_a.py", True, False), ("tests/test_b.py", False, False)],
         ["the quarantine of tests/test_b.py has expired: it held until 2027-01-15 (exits 3; owner @alice), so its "
          "failures count again; renew or remove the entry"])]


def test_lint_judges_a_quarantine_on_the_day_it_is_given(tmp_path) -> None:
    repo = two_file_repo(tmp_path / "repo")
    with (repo / ".github" / "ci-policy.yml").open("a") as fh:
        fh.write("quarantine:\n  - {file: tests/test_b.py, reason: exits 3, owner: '@alice', until: 2027-01-15}\n")
    codes = {}
    for day in (7, 8, 15, 16):
        report = lint(CheckoutRequest(repo, None, scan(repo), today=datetime.date(2027, 1, day)))
        codes[day] = [(d.severity, d.code, d.line) for d in report.errors + report.warnings]
    # The entry (and its `until`) is on line 6; `until` is the last day it holds.
    assert codes == {7: [], 8: [("warning", "CP909", 6)], 15: [("warning", "CP909", 6)], 16: [("error", "CP233", 6)]}


def test_run_refuses_a_shard_the_stage_does_not_have(tmp_path) -> None:
    repo = two_file_repo(tmp_path / "repo")
    source = PlanSource(repo, None, "unit", inputs=PlanRequest(repo, None, PlanInputs(event="push"), scan(repo)))
    with pytest.raises(UsageError) as err:
        prepare(RunRequest(source, shard=4))
    assert (err.value.source, err.value.message) == ("--shard", "stage unit has shards 0..0, not 4")


# -- lint, registry, file-run, result -------------------------------------------------------------

def test_lint_of_the_example_has_one_warning_and_no_error(example_repo) -> None:
    report = lint(CheckoutRequest(example_repo, None, scan(example_repo)))
    assert report.ok is True and report.errors == ()
    assert [(w.code, w.path) for w in report.warnings] == [("CP905", "tests/e2e/test_fsdp_checkpoint_resume.py")]


def test_registry_of_the_example_is_every_registration_of_the_golden_listing(example_repo) -> None:
    snapshot = registry(CheckoutRequest(example_repo, None, scan(example_repo)))
    golden = json.loads(read_golden("cli/registry/example.json"))["registrations"]
    assert [(r.file, r.line, r.backend, r.suite, r.est_time, list(r.labels)) for r in snapshot.registrations] == [
        (g["file"], g["line"], g["backend"], g["suite"], g["est_time"], g["labels"]) for g in golden]
    assert len(snapshot.registrations) == 18 and snapshot.invalid_files == ()


def test_file_run_resolves_the_stage_runners_image_and_timeout(example_repo) -> None:
    planned = file_run(FileRunRequest(example_repo, None, "tests/e2e/test_fsdp_grpo.py", scan(example_repo)))
    assert planned.as_dict() == {
        "file": "tests/e2e/test_fsdp_grpo.py", "hw": "cuda", "suite": "stage-b-1-gpu-h200",
        "runs_on": ["h200", "1gpu"], "container_image": "ghcr.io/minirl/ci-cuda:latest",
        "container_options": "--gpus all", "timeout_seconds": 900}


def test_result_passes_on_success_and_skipped_and_fails_naming_the_failed_job() -> None:
    passed = result(ResultRequest(
        "true", '{"a": {"result": "success", "outputs": {}}, "b": {"result": "skipped", "outputs": {}}}'))
    assert (passed.plan_complete, passed.outcome.ok, passed.outcome.failures, passed.outcome.summary) == (
        True, True, (), "every needed job succeeded (a) or was skipped (b)")
    failed = result(ResultRequest("true", '{"a": {"result": "failure", "outputs": {}}}'))
    assert (failed.outcome.ok, failed.outcome.failures) == (False, ("job a failed",))
    with pytest.raises(UsageError) as err:
        result(ResultRequest("true", " "))
    assert (err.value.source, err.value.message) == ("--needs-json", "is empty")


# -- init ---------------------------------------------------------------------------------------

def test_init_writes_the_starter_files_and_lists_what_is_left(tmp_path) -> None:
    repo = tmp_path / "fresh"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_x.py").write_text(
        'from ci_policy import register_cuda_ci\n\nregister_cuda_ci(est_time=60, suite="gpu-a", labels=["fsdp"])\n')
    (repo / "tests" / "test_y.py").write_text(
        'from ci_policy import register_cpu_ci\n\nregister_cpu_ci(est_time=5, suite="unit")\n')
    done = init(InitRequest(repo))
    assert (done.written, done.shown_config, done.ok) == (
        (".github/ci-policy.yml", "labels.py"), ".github/ci-policy.yml", True)
    assert done.todo == [(".github/ci-policy.yml", 17, "stages[1].runs_on: the runner labels of stage gpu-a (cuda)"),
                         ("labels.py", 4, "the description of label fsdp")]
    assert [(s.name, s.backend, s.files, s.est_time, s.runner) for s in done.start.stages] == [
        ("unit", "cpu", 1, 5, "pytest"), ("gpu-a", "cuda", 1, 60, "pytest")]
    assert done.start.labels == ("fsdp",)
    assert done.report.errors == ()
    assert [(w.code, w.path, w.line, w.message) for w in done.report.warnings] == [
        ("CP908", ".github/ci-policy.yml", 14, "runs_on of 1 stage is still the placeholder 'TODO-runner': gpu-a")]
    assert (repo / ".github" / "ci-policy.yml").read_text() == done.start.config_text
    assert (repo / "labels.py").read_text() == done.start.labels_text
    with pytest.raises(InputErrors) as err:  # a second time, without force
        init(InitRequest(repo))
    assert [d.path for d in err.value.errors] == [".github/ci-policy.yml", "labels.py"]


# -- tune (offline, from the recorded timings of tests/data/tuning_e2e) ---------------------------

CHANGES = [("tests/e2e/test_fsdp_grpo.py", "cuda", 240, 300, "raise"),
           ("tests/e2e/test_megatron_long_context.py", "cuda", 2400, 3400, "raise"),
           ("tests/e2e/test_megatron_ppo_4gpu.py", "cuda", 900, 700, "lower"),
           ("tests/e2e/test_megatron_sft.py", "cuda", 300, 180, "lower"),
           ("tests/e2e/test_rocm_fsdp_grpo.py", "cuda", 360, 500, "raise"),
           ("tests/e2e/test_rocm_fsdp_grpo.py", "rocm", 480, 800, "raise")]


def tune_request(repo: Path, **mode) -> tune.TuneRequest:
    return tune.TuneRequest(repo, None, scan(repo), sources=(str(EVIDENCE),), **mode)


def test_tune_proposes_from_recorded_timings(example_repo) -> None:
    warned: list = []
    tuning = tune.prepare(tune_request(example_repo, check=True, warn=warned.append))
    assert [(p.file, p.backend, p.current, p.proposed, p.action) for p in tuning.changing] == CHANGES
    assert tuning.summary + "\n" == read_golden("cli/tune/summary-applying.txt")
    assert [(b.stage, b.before_makespan, b.after_makespan) for b in tuning.balances] == [
        ("stage-a-cpu", 20, 20), ("stage-b-1-gpu-h200", 540, 540), ("stage-c-4-gpu-h200", 2400, 3400),
        ("stage-c-4-gpu-mi350", 540, 800)]
    assert (warned, tuning.requester, tuning.repository, tuning.runs_read) == ([], None, None, ())


def test_tune_applies_each_change_and_writes_an_estimates_file(example_repo, tmp_path) -> None:
    request = tune_request(example_repo, apply=True)
    applied = tune.apply(request, tune.prepare(request))
    assert [(a.file, a.backend, a.current, a.proposed, a.status, a.reason) for a in applied] == [
        (f, b, c, p, "changed", None) for f, b, c, p, _action in CHANGES]
    assert 'register_cuda_ci(est_time=300, suite="stage-b-1-gpu-h200", labels=["fsdp"])' in (
        example_repo / "tests" / "e2e" / "test_fsdp_grpo.py").read_text()

    fresh = tmp_path / "fresh"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "gpu-repo", fresh,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    request = tune_request(fresh, write_estimates=str(tmp_path / "estimates.json"))
    written = tune.write_estimates(request, tune.prepare(request))
    assert (written.file, written.entries, written.before) == (str(tmp_path / "estimates.json"), 6, None)


def test_tune_refuses_before_reading_anything(example_repo) -> None:
    for request, source, message in (
            (tune.TuneRequest(example_repo, None, scan(example_repo)), "--from", "no evidence"),
            (tune_request(example_repo, workflow="pr-test.yml"), "--github-runs",
             "--github-runs and --workflow go together"),
            (tune_request(example_repo, open_pr=True), "--open-pr",
             "needs --write-estimates FILE (the estimates file the pull request changes)")):
        with pytest.raises(UsageError) as err:
            tune.prepare(request)
        assert (err.value.source, err.value.message) == (source, message)
