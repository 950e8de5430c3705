"""A test attempt's outcome, as the test history keeps it: one row per attempt of one file.

- In: what the runner knows of an attempt (its status, the retry verdict's kind, the signal
  that ended it, whether a later attempt of the same file in the same run passed) and where it
  ran (the run, its attempt, commit, event, cadence, stage, shard, runner labels).
- Out: `Outcome`, a frozen document declared once through `read.codec` (the store's
  `test_attempts` rows, `history import`'s rows and the report's input are all this value);
  `attempt_status(...)`: the history's status of an attempt; `STATUSES`. `PlanHours`: one
  workflow run attempt's plan, as the history keeps it (the accelerator hours it scheduled and
  those it skipped per group: the store's `plan_hours` rows, read from the plan artifacts).
- Statuses: `pass`; `flaky` (did not pass, and a later attempt of the same file in the same
  run did: a retry hid it); `infra` (the retry rules classified it as an infrastructure
  failure); `killed` (ended by a signal it did not ask for); `timeout`; `fail` (anything
  else). The retry class keeps the verdict's kind, so a `flaky` attempt still says whether
  it timed out.
- Refused: a value outside its field's range (`DecodeError` when read through the codec; the
  constructor trusts its caller, the runner or a reader that decoded it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

from ci_policy.model.skips import SKIP_GROUPS
from ci_policy.read.declare import document, spec
from ci_policy.read.numbers import MAX_SECONDS

Status = Literal["pass", "fail", "timeout", "killed", "infra", "flaky"]
STATUSES: tuple[str, ...] = get_args(Status)
# The verdict kinds of `runner.retry.classify` (`plan.results.FailureKind`), or None for a pass.
RETRY_CLASSES = ("infra", "flaky", "code", "timeout", "unknown")
RETRY_CLASS = Literal["infra", "flaky", "code", "timeout", "unknown"]
# ISO 8601 UTC, as the runner writes `started_at`.
TIMESTAMP = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z"


@document(kw_only=True)
class Outcome:
    """One attempt of one test file in one workflow run attempt."""

    run_id: str = spec(pattern=r"\S+", description="The workflow run id.")
    run_attempt: int = spec(minimum=1, description="The workflow run's attempt (a re-run is the next).")
    commit: str | None = spec(default=None, description="The commit tested.")
    event: str | None = spec(default=None, description="The triggering event (schedule, push, ...).")
    cadence: str | None = spec(default=None, description="The run's cadence (regular, nightly, weekly, release).")
    stage: str = spec(pattern=r"\S(.*\S)?", description="The stage the file ran in.")
    shard: int = spec(minimum=0, description="The shard of the stage.")
    runner_labels: tuple[str, ...] = spec(default=(), description="The stage's runner labels (`runs_on`).")
    file: str = spec(pattern=r"\S(.*\S)?", description="The test file, repository-relative.")
    attempt: int = spec(minimum=1, description="The attempt of the file within the run, from 1.")
    status: Status = spec(description="What happened to the attempt.")
    retry_class: RETRY_CLASS | None = spec(default=None, description="The retry verdict's kind of an attempt "
                                                                      "that did not pass; null for a pass.")
    started_at: str = spec(pattern=TIMESTAMP, description="When the attempt started (UTC).")
    elapsed: float = spec(minimum=0, maximum=MAX_SECONDS, description="Its wall time, in seconds.")
    est_time: float | None = spec(default=None, minimum=0, maximum=MAX_SECONDS,
                                  description="The file's est_time when it ran, in seconds.")

    @property
    def key(self) -> tuple[str, int, str, int, str, int]:
        """What makes the row unique: importing it again changes nothing."""
        return (self.run_id, self.run_attempt, self.stage, self.shard, self.file, self.attempt)


def attempt_status(status: str, retry_class: str | None, *, signal: str | None, passed_later: bool) -> Status:
    """The history's status of an attempt whose runner status is `status` (pass, fail, timeout)."""
    if status == "pass":
        return "pass"
    if passed_later:
        return "flaky"
    if retry_class == "infra":
        return "infra"
    if status == "timeout":
        return "timeout"
    if signal is not None:
        return "killed"
    return "fail"


def _group_problem(value: object) -> str | None:
    if type(value) is str and value not in SKIP_GROUPS:
        return f"{value!r} is not one of {', '.join(SKIP_GROUPS)}"
    return None


@document(kw_only=True)
class PlanHours:
    """The accelerator hours one workflow run attempt's plan scheduled and skipped."""

    run_id: str = spec(pattern=r"\S+", description="The workflow run id.")
    run_attempt: int = spec(minimum=1, description="The workflow run's attempt.")
    event: str | None = spec(default=None, description="The event planned for (pull_request, schedule, ...).")
    commit: str | None = spec(default=None, description="The commit planned.")
    created: str = spec(pattern=TIMESTAMP, description="When the plan was made (UTC).")
    scheduled: float = spec(minimum=0, maximum=1e9, description="Accelerator hours scheduled.")
    skipped: Mapping[str, float] = spec(minimum=0, maximum=1e9, key_check=_group_problem,
                                        description="Accelerator hours skipped, by group: diff, labels, cadence, "
                                                    "trust.")

    @property
    def key(self) -> tuple[str, int]:
        return (self.run_id, self.run_attempt)
