"""render.text: diagnostics, tables and summaries as plain text, one value per line."""

from __future__ import annotations

from render_cases import FILE_PLAN, REG, gate_outcome, shard_result
from workflow_commands import commands

from ci_policy.config.stages import Stage
from ci_policy.errors import Diagnostic, UsageError
from ci_policy.model.registry import Registration
from ci_policy.plan.build import StagePlan
from ci_policy.plan.jobs import stage_jobs
from ci_policy.plan.partition import Shard
from ci_policy.plan.results import GateOutcome
from ci_policy.render.text import (
    count,
    diagnostic_text,
    file_run_text,
    gate_text,
    registry_text,
    run_summary_text,
    split_phrase,
    table,
    usage_error_text,
    with_hint,
)


def test_diagnostic_text_keeps_one_diagnostic_on_its_lines():
    err = Diagnostic("bad\n::error::injected\rx", path="p.py", line=3, col=7, hint="h\n::warning::w")
    text = diagnostic_text(err)
    assert text == "p.py:3:7: bad\\n::error::injected\\rx\n    hint: h\\n::warning::w"
    assert commands(text) == []


def test_diagnostic_text_shows_the_code_and_name_before_the_message():
    err = Diagnostic("m", path="p.py", line=3, col=7, hint="h", code="CP201")
    assert diagnostic_text(err) == "p.py:3:7: CP201 marker-not-module-level: m\n    hint: h"
    warn = Diagnostic("w", path="labels.py", line=1, code="CP902", severity="warning")
    assert diagnostic_text(warn) == "labels.py:1: warning: CP902 label-unused: w"
    assert diagnostic_text(Diagnostic("u", path="pr.diff")) == "pr.diff: u"
    assert diagnostic_text(Diagnostic("no file locates this")) == "no file locates this"


def test_diagnostic_text_without_a_path_or_starting_with_a_command():
    assert diagnostic_text(Diagnostic("m")) == "m"
    assert diagnostic_text(Diagnostic("m", path="::error::x.py", line=1)) == "./::error::x.py:1: m"


def test_with_hint_and_count():
    assert with_hint("m", None) == "m"
    assert with_hint("m", "") == "m"
    assert with_hint("m", "a\nb") == "m\n    hint: a\\nb"
    assert [count(0, "error"), count(1, "error"), count(2, "gate")] == ["0 errors", "1 error", "2 gates"]


def test_usage_error_text():
    err = UsageError("a\nb", source="--head", hint="h\ni")
    assert usage_error_text("plan", err) == "ci-policy plan: error: --head: a\\nb\n    hint: h\\ni"
    assert usage_error_text("run", UsageError("m")) == "ci-policy run: error: m"


def test_table_pads_columns_and_right_aligns_the_asked_ones():
    assert table([("A", "BB", "C"), ("xxx", "y", "1234")], right={2}) == "A    BB     C\nxxx  y   1234"
    assert table([("A", "B"), ("", "")]) == "A  B\n"


def test_registry_text_keeps_each_registration_on_its_line():
    odd = Registration(file="::x\ny.py", line=None, backend="cpu", suite="c", est_time=1.5, labels=("a", "b"),
                       nightly=True, implicit=True, disabled="r\nx")
    assert registry_text([REG, odd]) == (
        "FILE                 BACKEND  SUITE  EST   LABELS  NOTES\n"
        "tests/test_a|b.py:3  cuda     gpu    1m0s  -\n"
        "./::x\\ny.py          cpu      c      2s    a,b     implicit; nightly; disabled: r\\nx")


def test_run_summary_text():
    assert run_summary_text(shard_result()) == (
        "\n==== ci-policy run: gpu shard 1 ====\n"
        "PASSED (1):\n"
        "  tests/test_quick.py elapsed=12.5s est=20s\n"
        "FAILED (2):\n"
        "  tests/test_a|b.py GATE-FAIL after 2 attempt(s) (1 enforced metric gate coordinate(s) failed)\n"
        "  tests/test_slow.py TIMEOUT after 1 attempt(s) (timeout: killed at 20s)\n"
        "RETRIED (1):\n"
        "  tests/test_a|b.py: attempt 1: fail (flaky: NCCL timeout); attempt 2: pass\n"
        "NOT RUN (1, fast-fail):\n"
        "  tests/test_left.py\n"
        "RESULT: FAIL")


def test_run_summary_text_lists_the_records_not_written_before_the_result():
    result = shard_result()
    result.warnings = ["cannot write the timing record of tests/test_quick.py attempt 1 to t.jsonl: "
                       "No space left on device (ENOSPC)", "cannot write the metric record of b"]
    assert run_summary_text(result).splitlines()[-4:] == [
        "WARNINGS (2):",
        "  cannot write the timing record of tests/test_quick.py attempt 1 to t.jsonl: "
        "No space left on device (ENOSPC)",
        "  cannot write the metric record of b",
        "RESULT: FAIL"]


def test_run_summary_text_without_warnings_leaves_them_to_the_annotations():
    result = shard_result()
    result.warnings = ["cannot write the metric record of b"]
    text = run_summary_text(result, warnings=False)
    assert "WARNINGS" not in text and "metric record" not in text
    assert text == run_summary_text(shard_result())


def test_gate_text():
    assert gate_text(gate_outcome()) == (
        "ci-policy gate: tests/test_a|b.py (cuda, gpu)\n"
        "METRIC           STEP  VALUE  BASELINE   BAND        VERDICT                           DETAIL\n"
        "train/loss       last  1.5    1.4 (n=5)  [1.2, 1.6]  PASS\n"
        "train/kl         2     0.75   0.5 (n=3)  [0.4, 0.6]  FAIL                              above 0.6\n"
        "train/grad|norm  last  9      -          -           FAIL (report only)                above 2\n"
        "train/x          0     -      -          -           ERROR (allowlisted: known drift)  no value\n"
        "run: NOT trusted; baseline: 5 trusted run(s)\n"
        "FAILED: 1 enforced gate coordinate(s) failed")
    empty = GateOutcome(REG.file, REG, [], baseline="no gates declared")
    assert gate_text(empty) == "ci-policy gate: tests/test_a|b.py (cuda, gpu): no gates declared"


def test_file_run_text():
    assert file_run_text(FILE_PLAN) == ("file: tests/test_a.py\nstage: gpu (h200)\nruns on: self-hosted, h200\n"
                                        "image: ghcr.io/x/img:1\ncontainer options: --gpus all\ntimeout: 1m1s")


def test_the_invalid_section_of_a_partial_plan_keeps_each_value_on_its_line(tmp_path):
    from partial_cases import partial_plan

    from ci_policy.render.text import invalid_text, plan_text

    plan = partial_plan(tmp_path)
    section = ("invalid (not scheduled): 1 test file\n"
               "  tests/a,b:c%d|`*_\\n::error::pwned.py (stages: gpu)\n"
               "    tests/a,b:c%d|`*_\\n::error::pwned.py:3:7: CP227 label-unknown: bad\\r\\n::warning::x | <b>\n"
               "        hint: fix it")
    assert invalid_text(plan.invalid) == section
    assert "\n\n" + section + "\n\nimages: " in plan_text(plan, stage_jobs(plan, None))
    assert commands(plan_text(plan, stage_jobs(plan, None))) == []
    assert invalid_text([]) == "invalid (not scheduled): 0 test files"


def test_split_phrase_says_whether_the_split_is_proven_optimal():
    shards = (Shard(0, 7138, ("a",)), Shard(1, 7130.5, ("b",)))
    stage = Stage(name="gpu", backend="cuda", partitions=2)
    proven = StagePlan(stage, "run", (), (), shards, lower_bound=7130, optimal=True)
    unproven = StagePlan(stage, "run", (), (), shards, lower_bound=7134.25, optimal=False)
    assert split_phrase(proven) == "makespan 1h58m58s / lower bound 1h58m50s (optimal)"
    assert split_phrase(unproven) == "makespan 1h58m58s / lower bound 1h58m54s (not proven optimal)"
