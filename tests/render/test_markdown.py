"""render.markdown: the step summary of a plan, a shard's run and its gates, every value escaped."""

from __future__ import annotations

from render_cases import REG, gate_outcome, pr_plan, shard_result, write_repo

from ci_policy.plan.jobs import stage_jobs
from ci_policy.plan.results import GateOutcome
from ci_policy.render.markdown import gate_markdown, plan_markdown, run_summary_markdown

GATES = (
    "### Metric gates: tests/test\\_a\\|b.py\n"
    "\n"
    "| Metric | Step | Value | Baseline | Band | Verdict | Detail |\n"
    "|---|---:|---:|---:|---|---|---|\n"
    "| train/loss | last | 1.5 | 1.4 (n=5) | \\[1.2, 1.6\\] | PASS |  |\n"
    "| train/kl | 2 | 0.75 | 0.5 (n=3) | \\[0.4, 0.6\\] | FAIL | above 0.6 |\n"
    "| train/grad\\|norm | last | 9 | - | - | FAIL (report only) | above 2 |\n"
    "| train/x | 0 | - | - | - | ERROR (allowlisted: known drift) | no value |\n"
    "\n"
    "Run **not trusted**; baseline: 5 trusted run(s)\n"
    "\n")


def test_gate_markdown():
    assert gate_markdown(gate_outcome()) == GATES
    assert gate_markdown(GateOutcome(REG.file, REG, [], baseline="no gates declared")) == ""


def test_run_summary_markdown_then_the_gates_of_each_file():
    assert run_summary_markdown(shard_result()) == (
        "## ci-policy run: gpu shard 1\n"
        "\n"
        "| File | Status | Attempts | Elapsed | Est. | |\n"
        "|---|---|---:|---:|---:|---|\n"
        "| tests/test\\_quick.py | PASS | 1 | 13s | 20s |  |\n"
        "| tests/test\\_a\\|b.py | GATE-FAIL | 2 | 1m1s | 1m0s | ⚠️ over est_time |\n"
        "| tests/test\\_slow.py | TIMEOUT | 1 | 20s | 10s | ⚠️ over est_time |\n"
        "| tests/test\\_left.py | NOT RUN | 0 | - | 30s | fast-fail |\n"
        "\n" + GATES)


def test_run_summary_markdown_lists_the_records_not_written_after_the_table():
    result = shard_result()
    result.warnings = ["cannot write the timing record of tests/a|b.py attempt 1 to t.jsonl: "
                       "No space left on device (ENOSPC)"]
    assert run_summary_markdown(result).split("\n\n")[2] == (
        "- ⚠️ cannot write the timing record of tests/a\\|b.py attempt 1 to t.jsonl: "
        "No space left on device (ENOSPC)")


def test_plan_markdown(tmp_path):
    plan = pr_plan(write_repo(tmp_path / "repo"), "run-ci-megatron", "bug")
    assert plan_markdown(plan, stage_jobs(plan, None)) == (
        "## ci-policy plan\n"
        "\n"
        "- **Event:** pull\\_request, **cadence:** regular, **trust:** trusted\n"
        "- **PR labels:** bug run-ci-megatron\n"
        "- **Included labels:** megatron\n"
        "- **Diff:** unavailable (no --diff or --base was given); every runnable stage runs\n"
        "- **Images:** cuda build, rocm skip\n"
        "\n"
        "| Stage | Backend | Decision | Tests | Shards | Est. wall | Reasons |\n"
        "|---|---|---|---:|---:|---:|---|\n"
        "| gpu | cuda | ✅ run | 2 | 2 | 5m0s | run: the diff is unavailable (no --diff or --base was given), "
        "so every runnable stage runs<br>run: requested by run-ci-megatron |\n"
        "| cpu | cpu | ⏭️ skip | 0 | 0 | - | skip: no registered tests |\n"
        "\n"
        "**Accelerator hours** (est_time × accelerators per runner): 0.10 scheduled, 0.00 skipped\n"
        "\n"
        "| Stage | Scheduled h | Skipped h | Accelerators |\n"
        "|---|---:|---:|---|\n"
        "| gpu | 0.10 | 0.00 | 1 accelerator per runner (no accelerators entry matches) |\n"
        "\n"
        "### gpu\n"
        "\n"
        "**Split:** makespan 5m0s / lower bound 5m0s (optimal)\n"
        "\n"
        "```mermaid\n"
        "gantt\n"
        "    title gpu shards (estimated seconds)\n"
        "    dateFormat X\n"
        "    axisFormat %s\n"
        "    section shard 0\n"
        "    test_big_model.py :s0t0, 0, 300s\n"
        "    section shard 1\n"
        "    test_small.py :s1t0, 0, 60s\n"
        "```\n"
        "\n"
        "<details><summary>shard 0: 1 file, est 5m0s</summary>\n"
        "\n"
        "- tests/test\\_big\\_model.py (5m0s)\n"
        "\n"
        "</details>\n"
        "\n"
        "<details><summary>shard 1: 1 file, est 1m0s</summary>\n"
        "\n"
        "- tests/test\\_small.py (1m0s)\n"
        "\n"
        "</details>\n"
        "\n"
        "**Warnings**\n"
        "\n"
        "- diff unavailable: no --diff or --base was given\n"
        "- gpu: tests/test\\_big\\_model.py alone (est 300s) exceeds the stage's mean shard time (180s); "
        "the stage cannot finish sooner than this file\n")


def test_the_invalid_section_of_a_partial_plan_is_escaped(tmp_path):
    from partial_cases import partial_plan

    plan = partial_plan(tmp_path)
    out = plan_markdown(plan, stage_jobs(plan, None))
    assert ("\n\n**Invalid, not scheduled: 1 file(s); the plan is incomplete**\n\n"
            "- tests/a,b:c%d\\|\\`\\*\\_ ::error::pwned.py (stages: gpu)\n"
            "  - line 3: CP227 label-unknown: bad  ::warning::x \\| \\<b\\>\n\n**Warnings**") in out


def test_a_partly_read_file_has_its_own_markdown_section_naming_the_stages_it_keeps(make_repo):
    from cli.partial import TWO, two_repo

    from ci_policy.model.snapshot import load_snapshot
    from ci_policy.plan.build import build_plan
    from ci_policy.plan.policy import Trigger
    from ci_policy.read.diff import Diff

    plan = build_plan(load_snapshot(two_repo(make_repo)), Trigger(event="pull_request", labels=("run-ci-megatron",)),
                      Diff.unavailable("none"))
    out = plan_markdown(plan, stage_jobs(plan, None))
    assert "Invalid, not scheduled" not in out
    assert ("\n\n**Partly read, invalid registrations not scheduled: 1 file(s); the plan is incomplete**\n\n"
            f"- {TWO.replace('_', chr(92) + '_')} (still scheduled in: gpu-a)\n"
            "  - line 4: CP225 suite-unknown: register\\_rocm\\_ci: suite 'nosuch' is not a configured rocm stage\n"
            ) in out
