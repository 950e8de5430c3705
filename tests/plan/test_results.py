"""plan.results: the facts derived from a run's results (passed, ok, trusted, blocking)."""

from __future__ import annotations

from ci_policy.gates.evaluate import ERROR, FAIL, NO_BASELINE, PASS, GateResult, GateSpec
from ci_policy.model.registry import Registration
from ci_policy.plan.results import Attempt, FileResult, GateOutcome, ShardResult

REG = Registration(file="tests/test_a.py", line=3, backend="cuda", suite="gpu", est_time=60)
OTHER = Registration(file="tests/test_b.py", line=3, backend="cuda", suite="gpu", est_time=30)


def spec(*, enforce: bool = True, allowlist_reason: str | None = None) -> GateSpec:
    return GateSpec(file=REG.file, backend="cuda", suite="gpu", metric_key="train/loss", steps="last",
                    constraint=(("rel_tol", 0.1),), enforce=enforce, allowlist_reason=allowlist_reason,
                    written="{}")


def result(verdict, **kw) -> GateResult:
    return GateResult(spec(**kw), 0, 1.0, verdict, "m")


def attempt(status, n: int = 1) -> Attempt:
    return Attempt(attempt=n, status=status, elapsed=1.0, started_at="2026-01-01T00:00:00Z", returncode=0)


def outcome(*results: GateResult) -> GateOutcome:
    return GateOutcome(REG.file, REG, list(results))


def test_a_gate_outcome_is_trusted_without_fail_or_error():
    assert outcome().trusted is True
    assert outcome(result(PASS), result(NO_BASELINE)).trusted is True
    assert outcome(result(PASS), result(FAIL)).trusted is False
    assert outcome(result(ERROR)).trusted is False
    # Not enforced or allowlisted: still not trusted, so its values are not written as baselines.
    assert outcome(result(FAIL, enforce=False)).trusted is False
    assert outcome(result(ERROR, allowlist_reason="known")).trusted is False


def test_blocking_is_an_enforced_not_allowlisted_fail_or_error():
    fail, error = result(FAIL), result(ERROR)
    gates = outcome(result(PASS), fail, result(NO_BASELINE), result(FAIL, enforce=False),
                    result(ERROR, allowlist_reason="known"), error)
    assert gates.blocking == [fail, error]
    assert outcome(result(PASS), result(NO_BASELINE, enforce=True)).blocking == []


def test_a_file_passes_when_its_last_attempt_passed_and_no_gate_blocks():
    assert FileResult(REG, None).test_passed is False  # never ran
    assert FileResult(REG, None).passed is False
    retried = FileResult(REG, 90.0, [attempt("fail"), attempt("pass", 2)])
    assert retried.file == "tests/test_a.py"
    assert (retried.test_passed, retried.gate_failed, retried.passed) == (True, False, True)
    for status in ("fail", "timeout"):
        last_failed = FileResult(REG, 90.0, [attempt("pass"), attempt(status, 2)])
        assert (last_failed.test_passed, last_failed.passed) == (False, False)


def test_a_blocking_gate_fails_a_passing_file():
    gated = FileResult(REG, None, [attempt("pass")], gate=outcome(result(FAIL)))
    assert (gated.test_passed, gated.gate_failed, gated.passed) == (True, True, False)
    warned = FileResult(REG, None, [attempt("pass")], gate=outcome(result(FAIL, enforce=False)))
    assert (warned.gate_failed, warned.passed) == (False, True)
    empty = FileResult(REG, None, [attempt("pass")], gate=outcome())
    assert (empty.gate_failed, empty.passed) == (False, True)


def test_a_shard_is_ok_when_every_file_passed_and_none_was_left_unrun():
    passed = FileResult(REG, None, [attempt("pass")])
    failed = FileResult(OTHER, None, [attempt("fail")])
    assert ShardResult("gpu", 0, [], []).ok is True
    assert ShardResult("gpu", 0, [passed], []).ok is True
    assert ShardResult("gpu", 0, [passed, failed], []).ok is False
    assert ShardResult("gpu", 0, [passed], [OTHER]).ok is False  # fast-fail left a file unrun
