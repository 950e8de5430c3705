"""What running a plan produced: attempts, file and shard results, metric-gate outcomes.

- In: nothing; the suite runner (`adapters.runner`) and the gate command (`adapters.gate`)
  build these values, the renderers (`render`) read them.
- Out: plain result types with the few derived facts every reader needs (passed, excused: a
  quarantined file's failure, ok, trusted, blocking), so no renderer has to guess a result's shape.
- Refused: nothing: the runner and the gate command build these from what they checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ci_policy.config.quarantined import Quarantine
    from ci_policy.gates.evaluate import GateResult
    from ci_policy.model.registry import Registration

AttemptStatus = Literal["pass", "fail", "timeout"]
FailureKind = Literal["infra", "flaky", "code", "timeout", "unknown"]


@dataclass(frozen=True)
class Verdict:
    kind: FailureKind
    retriable: bool
    reason: str


@dataclass
class GateOutcome:
    file: str
    registration: Registration
    results: list[GateResult] = field(default_factory=list)
    baseline: str = ""

    @property
    def trusted(self) -> bool:
        # Loaded when a gate's outcome is read: test_a_stage_job_given_its_per_stage_plan_parses_no_configuration
        from ci_policy.gates.evaluate import trusted

        return trusted(self.results)

    @property
    def blocking(self) -> list[GateResult]:
        return [r for r in self.results if r.blocking]


@dataclass(frozen=True)
class Attempt:
    attempt: int
    status: AttemptStatus
    elapsed: float
    started_at: str
    returncode: int | None
    verdict: Verdict | None = None
    killed: int = 0


@dataclass
class FileResult:
    registration: Registration
    timeout: float | None
    attempts: list[Attempt] = field(default_factory=list)
    gate: GateOutcome | None = None  # of the passing attempt
    # The `quarantine:` entry in force for the file on the day it ran (none once `until` has passed).
    quarantine: Quarantine | None = None

    @property
    def file(self) -> str:
        return self.registration.file

    @property
    def test_passed(self) -> bool:
        return bool(self.attempts) and self.attempts[-1].status == "pass"

    @property
    def gate_failed(self) -> bool:
        return self.gate is not None and bool(self.gate.blocking)

    @property
    def passed(self) -> bool:
        return self.test_passed and not self.gate_failed

    @property
    def excused(self) -> bool:
        """Its test failed while it is quarantined: reported, failing neither the shard nor the run.
        A blocking metric gate of a test that passed is never excused."""
        return self.quarantine is not None and not self.test_passed

    @property
    def ok(self) -> bool:
        """Whether it lets its shard pass: it passed, or its failure is excused."""
        return self.passed or self.excused


@dataclass
class ShardResult:
    stage: str
    shard: int
    results: list[FileResult]
    not_run: list[Registration]
    # Every shard this result covers, when one job ran several one after another (`run --shards`).
    shards: tuple[int, ...] = ()
    # What the runner could not do without failing a test: records it could not write (a full disk).
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.not_run and all(r.ok for r in self.results)

    @property
    def shard_label(self) -> str:
        """`shard 0`, or `shards 0 2` for several."""
        if len(self.shards) > 1:
            return "shards " + " ".join(str(i) for i in self.shards)
        return f"shard {self.shard}"


def combined(shards: tuple[int, ...], results: list[ShardResult], skipped: list[Registration]) -> ShardResult:
    """One result for the `shards` of a stage run one after another (`results`, in order; at least
    one); `skipped`: the files of the shards that fast-fail left unrun."""
    return ShardResult(stage=results[0].stage, shard=shards[0],
                       results=[r for result in results for r in result.results],
                       not_run=[reg for result in results for reg in result.not_run] + skipped,
                       shards=shards, warnings=[w for result in results for w in result.warnings])
