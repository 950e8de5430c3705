"""Flaky tests found in the history (`model.flaky.flaky_files`): examples, then properties."""

from __future__ import annotations

import dataclasses
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from ci_policy.model.flaky import FlakyFile, RunRef, flaky_files
from ci_policy.model.outcomes import Outcome


def row(run: str, file: str, attempt: int, status: str, *, day: int = 1, commit: str | None = "c1",
        run_attempt: int = 1, stage: str = "gpu", shard: int = 0) -> Outcome:
    return Outcome(run_id=run, run_attempt=run_attempt, commit=commit, stage=stage, shard=shard, file=file,
                   attempt=attempt, status=status,  # type: ignore[arg-type]
                   retry_class=None if status == "pass" else "unknown",
                   started_at=f"2026-11-{day:02d}T00:00:{attempt:02d}Z", elapsed=1.0)


def ref(run: str, day: int) -> RunRef:
    return RunRef(run_id=run, started_at=f"2026-11-{day:02d}T00:00:01Z",
                  url=f"https://github.com/o/r/actions/runs/{run}")


def test_a_retry_that_passed_after_a_failure_is_a_flaky_run():
    rows = [row("1", "a.py", 1, "flaky", day=1), row("1", "a.py", 2, "pass", day=1),
            row("2", "a.py", 1, "pass", day=2, commit="c2"),
            row("3", "a.py", 1, "flaky", day=3, commit="c3"), row("3", "a.py", 2, "pass", day=3, commit="c3"),
            row("4", "a.py", 1, "pass", day=4, commit="c4"),
            row("1", "b.py", 1, "pass", day=1)]
    assert flaky_files(rows, "o/r") == (
        FlakyFile(file="a.py", runs=4, flaky_runs=2, flake_rate=0.5, retried=2, same_commit=0,
                  first=ref("1", 1), last=ref("3", 3)),)


def test_a_failure_and_a_pass_on_the_same_commit_in_different_runs_is_flaky():
    rows = [row("10", "a.py", 1, "fail", day=5), row("11", "a.py", 1, "pass", day=6),
            row("12", "a.py", 1, "fail", day=7, commit="c9")]  # failed on a commit nothing passed: a real failure
    assert flaky_files(rows, None) == (
        FlakyFile(file="a.py", runs=3, flaky_runs=1, flake_rate=0.3333, retried=0, same_commit=1,
                  first=RunRef(run_id="10", started_at="2026-11-05T00:00:01Z", url=None),
                  last=RunRef(run_id="10", started_at="2026-11-05T00:00:01Z", url=None)),)


def test_a_re_run_of_a_failed_job_that_passed_is_a_retry_of_the_same_run():
    rows = [row("7", "a.py", 1, "timeout", run_attempt=1), row("7", "a.py", 1, "pass", run_attempt=2)]
    [found] = flaky_files(rows, "o/r")
    assert (found.runs, found.flaky_runs, found.retried, found.same_commit) == (1, 1, 1, 0)


def test_an_infrastructure_failure_and_a_failure_without_a_pass_are_not_flaky():
    rows = [row("1", "a.py", 1, "infra"), row("2", "a.py", 1, "pass"),
            row("3", "b.py", 1, "fail", commit="c3"), row("3", "b.py", 2, "fail", commit="c3"),
            row("4", "c.py", 1, "fail", commit=None), row("5", "c.py", 1, "pass", commit=None)]
    assert flaky_files(rows) == ()


def test_files_are_ranked_by_flake_rate_then_flaky_runs_then_name():
    rows = [row("1", "z.py", 1, "flaky"), row("1", "z.py", 2, "pass"),
            row("1", "a.py", 1, "flaky"), row("1", "a.py", 2, "pass"), row("2", "a.py", 1, "pass", commit="c2"),
            row("1", "m.py", 1, "flaky"), row("1", "m.py", 2, "pass")]
    assert [f.file for f in flaky_files(rows)] == ["m.py", "z.py", "a.py"]


# -- properties -----------------------------------------------------------------------------------

FILES = ("a.py", "b.py", "c.py")
STATUSES = ("pass", "fail", "timeout", "killed", "infra")


@st.composite
def histories(draw) -> list[Outcome]:
    """Runs of a few files: each a sequence of attempts that stops at the first pass."""
    rows = []
    for run in range(draw(st.integers(0, 8))):
        commit = draw(st.sampled_from(("c1", "c2", None)))
        for file in draw(st.lists(st.sampled_from(FILES), unique=True, max_size=3)):
            tries = draw(st.lists(st.sampled_from(STATUSES), min_size=1, max_size=3))
            if "pass" in tries:
                tries = tries[:tries.index("pass") + 1]
            for n, status in enumerate(tries, start=1):
                later = "pass" in tries[n:]
                rows.append(row(str(run), file, n, "flaky" if later else status, day=run + 1, commit=commit))
    return rows


@settings(max_examples=200, deadline=None)
@given(histories(), st.randoms(use_true_random=False))
def test_the_result_does_not_depend_on_the_order_of_the_rows(rows, rng: random.Random):
    shuffled = list(rows)
    rng.shuffle(shuffled)
    assert flaky_files(shuffled, "o/r") == flaky_files(rows, "o/r")


@settings(max_examples=200, deadline=None)
@given(histories())
def test_every_found_file_is_consistent(rows):
    runs_of = {f: {o.run_id for o in rows if o.file == f} for f in FILES}
    for found in flaky_files(rows, "o/r"):
        assert 1 <= found.flaky_runs <= found.runs == len(runs_of[found.file])
        assert max(found.retried, found.same_commit) <= found.flaky_runs <= found.retried + found.same_commit
        assert found.flake_rate == round(found.flaky_runs / found.runs, 4)
        assert (found.first.started_at, found.first.run_id) <= (found.last.started_at, found.last.run_id)
        assert found.first.url == f"https://github.com/o/r/actions/runs/{found.first.run_id}"


@settings(max_examples=200, deadline=None)
@given(histories())
def test_a_history_where_every_attempt_passed_or_failed_for_good_has_no_retried_flake(rows):
    no_retry = [o for o in rows if o.status != "flaky"]
    assert all(f.retried == 0 for f in flaky_files(no_retry))
    all_passed = [dataclasses.replace(o, status="pass", retry_class=None) for o in no_retry]
    assert flaky_files(all_passed) == ()
