"""render.github: diagnostics, run results and gates as workflow commands; `$GITHUB_OUTPUT` blocks."""

from __future__ import annotations

import datetime

import pytest
from partial_cases import HOSTILE_FILE, HOSTILE_MESSAGE, partial_plan
from render_cases import FILE_PLAN, gate_outcome, shard_result
from workflow_commands import commands

from ci_policy.config.quarantine import Quarantine
from ci_policy.errors import Diagnostic, UsageError
from ci_policy.plan.jobs import stage_jobs
from ci_policy.render.github import (
    diagnostic_github,
    file_run_outputs,
    gate_annotations,
    github_output_lines,
    run_annotations,
    usage_error_github,
)


def test_diagnostic_github_one_command_per_diagnostic():
    err = Diagnostic("bad\n::error::injected", path="a,b:c.py", line=3, col=7, hint="fix\r\nit")
    assert diagnostic_github(err) == (
        "::error file=a%2Cb%3Ac.py,line=3,col=7::bad%0A::error::injected (hint: fix%0D%0Ait)")
    warn = Diagnostic("w", severity="warning")
    assert diagnostic_github(warn) == "::warning::w"
    assert diagnostic_github(Diagnostic("m", path="p.py", line=2)) == "::error file=p.py,line=2::m"


def test_diagnostic_github_carries_the_code_in_the_title():
    err = Diagnostic("m", path="p.py", line=2, col=1, code="CP201")
    assert diagnostic_github(err) == "::error file=p.py,line=2,col=1,title=CP201 marker-not-module-level::m"
    warn = Diagnostic("w", path="labels.py", line=1, code="CP902", severity="warning", hint="h")
    assert diagnostic_github(warn) == "::warning file=labels.py,line=1,title=CP902 label-unused::w (hint: h)"
    # Neither location nor title: a problem no file locates (a remote answer), with no code.
    assert diagnostic_github(Diagnostic("x")) == "::error::x"


def test_diagnostic_github_paths_go_through_path_of():
    err = Diagnostic("m", path="tests/t.py", line=1)
    assert diagnostic_github(err, lambda p: "repo/" + p) == "::error file=repo/tests/t.py,line=1::m"
    # Without a path there is no file to map.
    assert diagnostic_github(Diagnostic("m"), lambda p: "repo/" + p) == "::error::m"


def test_usage_error_github():
    err = UsageError("needs --base\n::x", source="--head", hint="pass --base REV")
    assert usage_error_github("plan", err) == (
        "::error::ci-policy plan: --head: needs --base%0A::x (hint: pass --base REV)")
    assert usage_error_github("run", UsageError("m")) == "::error::ci-policy run: m"


def test_run_annotations_one_error_per_file_that_did_not_pass():
    out = run_annotations(shard_result())
    assert out == (
        "::error file=tests/test_a|b.py::tests/test_a|b.py gate-fail after 2 attempt(s) "
        "(1 enforced metric gate coordinate(s) failed)\n"
        "::error file=tests/test_slow.py::tests/test_slow.py timeout after 1 attempt(s) (timeout: killed at 20s)")
    assert [c[0] for c in commands(out)] == ["error", "error"]


def test_run_annotations_one_warning_per_record_not_written():
    result = shard_result()
    result.warnings = ["cannot write the timing record of tests/x.py attempt 1 to /full\n::error::x: "
                       "No space left on device (ENOSPC)"]
    out = run_annotations(result)
    assert out.splitlines()[-1] == ("::warning::cannot write the timing record of tests/x.py attempt 1 to "
                                    "/full%0A::error::x: No space left on device (ENOSPC)")
    assert [c[0] for c in commands(out)] == ["error", "error", "warning"]


def test_gate_annotations_only_the_blocking_coordinates():
    assert gate_annotations(gate_outcome()) == "::error file=tests/test_a|b.py::gate train/kl step 2: FAIL: above 0.6"


def test_github_output_lines_and_the_delimiter():
    assert github_output_lines({"a": "1", "b": "x\ny", "c": ""}, "EOF_1") == (
        "a<<EOF_1\n1\nEOF_1\nb<<EOF_1\nx\ny\nEOF_1\nc<<EOF_1\n\nEOF_1\n")
    with pytest.raises(ValueError, match=r"^delimiter occurs in an output value$"):
        github_output_lines({"a": "1", "b": "x EOF_1 y"}, "EOF_1")


def test_file_run_outputs_round_the_timeout_up_to_minutes_plus_five():
    assert file_run_outputs(FILE_PLAN, "D") == (
        'hw<<D\nh200\nD\nsuite<<D\ngpu\nD\nruns_on<<D\n["self-hosted", "h200"]\nD\n'
        "container_image<<D\nghcr.io/x/img:1\nD\ncontainer_options<<D\n--gpus all\nD\ntimeout_seconds<<D\n61\nD\n"
        "timeout_minutes<<D\n7\nD\n")


# -- a partial plan: invalid files, from a hostile checkout -----------------------------------------------

def test_plan_annotations_one_error_per_diagnostic_of_an_invalid_file(tmp_path):
    from ci_policy.render.github import plan_annotations

    plan = partial_plan(tmp_path)
    out = plan_annotations(plan, stage_jobs(plan, None), lambda p: "ws/" + p)
    assert out.splitlines()[0] == ("::error file=ws/tests/a%2Cb%3Ac%25d|`*_%0A%3A%3Aerror%3A%3Apwned.py,line=3,col=7,"
                                   "title=CP227 label-unknown::bad%0D%0A::warning::x | <b> (hint: fix it)")
    assert [(name, props.get("file"), data) for name, props, data in commands(out)][0] == (
        "error", "ws/" + HOSTILE_FILE, HOSTILE_MESSAGE + " (hint: fix it)")
    assert [name for name, _, _ in commands(out)] == ["error"] + ["warning"] * len(plan.warnings)


def test_github_outputs_of_a_partial_plan(tmp_path):
    from ci_policy.app.plan_documents import github_outputs

    out = github_outputs(partial_plan(tmp_path), "EOF")
    assert out.endswith('invalid_files<<EOF\n["tests/a,b:c%d|`*_\\n::error::pwned.py"]\nEOF\n'
                        "plan_complete<<EOF\nfalse\nEOF\n")
    assert commands(out) == []


def test_a_quarantined_failure_is_one_warning_whatever_its_reason_holds():
    result = shard_result()
    failed = result.results[2]
    failed.quarantine = Quarantine(file=failed.file, reason="hangs\n::error::forged", owner="@a,b",
                                   until=datetime.date(2027, 1, 15))
    out = run_annotations(result)
    assert out.splitlines()[-1] == (
        "::warning file=tests/test_slow.py,title=quarantined::tests/test_slow.py timeout after 1 attempt(s) "
        "(timeout: killed at 20s); quarantined until 2027-01-15: hangs\\n::error::forged (owner @a,b): reported, "
        "not failing the run")
    assert [c[0] for c in commands(out)] == ["error", "warning"]
    assert run_annotations(result, command=True).splitlines()[-1].startswith(
        "::warning title=quarantined::tests/test_slow.py timeout")
