"""Job logs (`ci_policy.adapters.tuning.logs`) -> FileEvidence rows.

Evidence paths (files and directories walked) are in `test_sources.py`."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tuning_cases import H200, SGLANG_JOB, ev, sglang_retry_timeout_rows, text_of

from ci_policy.adapters.tuning.evidence import STATUSES, FileEvidence
from ci_policy.adapters.tuning.logs import clean_line, read_log

# -- golden logs ------------------------------------------------------------------------------------------

def test_golden_sglang_retry_timeout_failure():
    rows = read_log(text_of("sglang_retry_timeout.txt"), source="sglang_retry_timeout.txt", run_id="19",
                    job_id="55", job_name=SGLANG_JOB)
    assert rows == sglang_retry_timeout_rows("sglang_retry_timeout.txt", run_id="19", job_id="55")


def test_golden_ci_policy_runner_fast_fail():
    kw = dict(source="ci.log", stage=H200, shard=1, job_name="ignored (7)")
    # stage and shard come from the runner's own header, not the job name
    assert read_log(text_of("ci_policy_fastfail.txt"), source="ci.log", job_name="ignored (7)") == [
        # TIMEOUT on its last attempt line and in the FAILED entry
        ev("tests/e2e/test_long_rollout.py", "timeout", 1800.3, 1200.0, 39, **kw),
        ev("tests/e2e/test_megatron_sft.py", "passed", 870.0, 900.0, 37, note="retried: 2 attempts", **kw),
        ev("tests/e2e/test_fsdp_grpo.py", "passed", 612.4, 600.0, 36, **kw),
        ev("tests/e2e/test_ckpt_resume.py", "not_run", None, 700.0, 43, note="fast-fail", **kw),
        ev("tests/e2e/test_eval.py", "not_run", None, 500.0, 44, note="fast-fail", **kw),
    ]  # tests/e2e/test_weekly_scale.py is listed as skipped, not planned: no row


def test_golden_cancelled_job():
    kw = dict(source="c.txt", stage="stage-c-4-gpu-mi350", shard=2, run_id="8")
    assert read_log(text_of("ci_policy_cancelled.txt"), source="c.txt", run_id="8") == [
        ev("tests/e2e/test_rocm_grpo.py", "cancelled", 577.9, 600.0, 9,
           note="job cancelled; no final summary; last attempt: PASS", **kw),
        ev("tests/e2e/test_rocm_sft.py", "cancelled", None, 500.0, 5, note="job cancelled; no result logged", **kw),
        ev("tests/e2e/test_rocm_eval.py", "cancelled", None, 400.0, 6, note="job cancelled; no result logged", **kw),
    ]


def test_golden_sglang_log_without_final_summary():
    kw = dict(source="k.txt", stage="stage-b-test-small-2-gpu", shard=None, job_name="stage-b-test-small-2-gpu")
    assert read_log(text_of("sglang_no_summary.txt"), source="k.txt", job_name="stage-b-test-small-2-gpu") == [
        # `./tests/...` in the End block is the same file as `tests/...`
        ev("tests/e2e/test_tp2_serving.py", "unknown", 402.5, 450.0, 13, note="no final summary", **kw),
        ev("tests/e2e/test_dp_attention.py", "unknown", 33.0, 240.5, 24, note="no final summary", **kw),
    ]  # test_pp_serving.py only began (no End block): not evidence


def test_golden_ci_policy_runner_crashed_with_a_planned_file_never_run():
    kw = dict(source="x.log", stage="stage-a-cpu", shard=0)
    assert read_log(text_of("ci_policy_crashed.txt"), source="x.log") == [
        ev("tests/fast/test_config.py", "unknown", 28.1, 30.5, 4, note="no final summary; last attempt: PASS", **kw),
        ev("tests/fast/test_partition.py", "not_run", None, 100.0, 3, note="no final summary", **kw),
    ]


# -- details ------------------------------------------------------------------------------------------------

def test_clean_line_strips_timestamp_ansi_and_cr():
    assert clean_line("2026-11-30T04:43:27.1234567Z \x1b[32m[1/2] a.py PASS\x1b[0m elapsed=1s\r") == \
        "[1/2] a.py PASS elapsed=1s"
    assert clean_line("2026-11-30T04:43:27Z x") == "x"
    assert clean_line("\x1b]0;title\x07\x1b[1;31mred\x1b(B\x1b[") == "red["


def test_gate_failure_after_a_passing_attempt():
    log = "\n".join([
        "[1/1] tests/a.py PASS elapsed=12.5s est=10s attempt=1",
        "==== ci-policy run: gpu shard 0 ====",
        "PASSED (0):",
        "FAILED (1):",
        "  tests/a.py GATE-FAIL after 1 attempt(s) (1 enforced metric gate coordinate(s) failed)",
        "RETRIED (0):",
        "RESULT: FAIL",
    ])
    assert read_log(log, source="s") == [
        ev("tests/a.py", "failed", 12.5, 10.0, 5, source="s", stage="gpu", shard=0,
           note="the test passed; a metric gate failed")]


def test_the_last_attempt_line_decides_timeout_even_without_a_reason():
    log = "\n".join(["[1/1] t/a.py FAIL elapsed=3s est=9s attempt=1", "[1/1] t/a.py TIMEOUT elapsed=9.5s attempt=2",
                     "FAILED:", "  t/a.py"])
    assert [(r.status, r.elapsed, r.logged_est, r.line, r.note) for r in read_log(log, source="s")] == [
        ("timeout", 9.5, 9.0, 4, "retried: 2 attempts")]


def test_end_block_paths_map_to_the_summary_names_they_end_with():
    log = "\n".join([
        "End (0/1):", "filename='/runner/_work/repo/repo/test/srt/test_x.py', elapsed=50, estimated_time=60",
        "End (1/1):", "filename='/runner/_work/repo/repo/test/srt/models/test_x.py', elapsed=70, estimated_time=80",
        "End (2/2):", "filename='/elsewhere/test_y.py', elapsed=5, estimated_time=6",
        "\u2713 PASSED:", "  test_x.py", "  models/test_x.py", "",
    ])
    assert [(r.file, r.status, r.elapsed) for r in read_log(log, source="s")] == [
        ("test_x.py", "passed", 50.0), ("models/test_x.py", "passed", 70.0),
        ("/elsewhere/test_y.py", "unknown", 5.0)]


def test_sections_end_at_a_blank_line_a_header_or_a_line_that_is_not_a_file():
    log = "\n".join([
        "End (0/3):", "filename='a.py', elapsed=1, estimated_time=2",
        "End (1/3):", "filename='b.py', elapsed=1, estimated_time=2",
        "End (2/3):", "filename='c.py', elapsed=1, estimated_time=2",
        "End (3/3):", "filename='d.py', elapsed=1, estimated_time=2",
        "PASSED:", "a.py", "- b.py elapsed=1.0s",        # bare and bulleted entries
        "Fail. Time elapsed: 3s",                        # not a file: ends the section
        "  c.py",                                        # outside any section
        "FAILED (1):", "  d.py some reason", "",
        "  c.py",                                        # after a blank line: outside
    ])
    assert [(r.file, r.status, r.note) for r in read_log(log, source="s")] == [
        ("a.py", "passed", ""), ("b.py", "passed", ""), ("c.py", "unknown", "not in the final summary"),
        ("d.py", "failed", "")]


def test_group_lines_are_ignored_and_crlf_and_int_or_float_values_parse():
    log = "\r\n".join([
        "::group::tests/a.py (attempt 1)", "End (0/1):", "##[group]noise", "::endgroup::",
        "filename=\"tests/a.py\", elapsed=1.5e2, _estimated_time=None", "PASSED (1):", "::endgroup::",
        "  tests/a.py",
    ])
    assert [(r.file, r.status, r.elapsed, r.logged_est, r.line) for r in read_log(log, source="s")] == [
        ("tests/a.py", "passed", 150.0, None, 8)]


def test_cancelled_after_the_final_summary_keeps_the_results():
    log = "\n".join([
        "Enabled 3 test(s) (est total 3s) for gpu shard 1:", "  a.py (est 1s)", "  b.py (est 1s)", "  c.py (est 1s)",
        "[1/3] a.py PASS elapsed=1.0s est=1s attempt=1",
        "[2/3] b.py FAIL elapsed=2.0s est=1s attempt=1",
        "PASSED (1):", "  a.py elapsed=1.0s est=1s", "FAILED (1):", "  b.py FAIL after 1 attempt(s) (unknown: x)",
        "RESULT: FAIL", "The operation was canceled.",
    ])
    assert [(r.file, r.status, r.note) for r in read_log(log, source="s")] == [
        ("a.py", "passed", ""), ("b.py", "failed", ""), ("c.py", "not_run", "")]


def test_elapsed_from_the_summary_entry_when_nothing_else_has_it():
    log = "PASSED (2):\n  tests/a.py elapsed=4.25s est=5s\n  tests/b.py\n"
    assert [(r.file, r.elapsed, r.logged_est, r.note) for r in read_log(log, source="s")] == [
        ("tests/a.py", 4.25, 5.0, ""), ("tests/b.py", None, None, "no elapsed time in the log")]


def test_a_filename_line_without_an_end_line_is_not_a_block():
    assert read_log("filename='a.py', elapsed=1, estimated_time=2\nEnd (0/1):\nsomething else\n", source="s") == []


def test_nothing_to_read():
    assert read_log("", source="s") == []
    assert read_log("\ufeff\n\n", source="s") == []


# -- properties ---------------------------------------------------------------------------------------------

FRAGMENTS = st.sampled_from([
    "End (0/2):", "filename='a.py', elapsed=12, estimated_time=30", "filename='./b.py', elapsed=1.5, _estimated_time=2",
    "filename='a.py', elapsed=1e999, estimated_time=1e999", "[1/2] a.py PASS elapsed=1.0s est=2s attempt=1",
    "[2/2] b.py TIMEOUT elapsed=9s", "[1/1] a.py FAIL elapsed=.5s est=None attempt=99999999999",
    "PASSED:", "PASSED (3):", "FAILED (1):", "RETRIED (0):", "NOT RUN (1, fast-fail):", "  a.py", "  b.py (timeout)",
    "  /abs/a.py", "Enabled 2 test(s) (est total 3s) for gpu shard 4:", "  a.py (est 1s)", "  c.py (est 2.5s)",
    "==== ci-policy run: gpu shard 1 ====", "##[error]The operation was canceled.", "::group::x", "##[endgroup]",
    "", " ", "\x1b[32m", "2026-11-30T04:43:27.1234567Z ", "\r", "\ufeff",
])
LOG_TEXT = st.one_of(st.text(max_size=300), st.lists(st.one_of(FRAGMENTS, st.text(max_size=20)), max_size=30)
                     .map("\n".join))


@settings(max_examples=500, deadline=None)
@given(LOG_TEXT, st.sampled_from(["", "gpu (1)", "  ", "(", "stage / shard 2"]))
def test_read_log_never_raises_and_every_row_has_one_valid_status(text, job_name):
    rows = read_log(text, source="s", job_name=job_name)
    assert all(isinstance(r, FileEvidence) and r.status in STATUSES for r in rows)
    assert len({r.file for r in rows}) == len(rows)
    assert all(1 <= r.line <= text.count("\n") + 1 for r in rows)
    assert all(r.elapsed is None or r.elapsed >= 0 for r in rows)
