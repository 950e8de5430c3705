"""What a stage job runs: one planned stage, its shards, and the settings its files run with.

- In: a `Plan` and the name of one of its stages (`StageJob.of`), or a per-stage plan read
  back (`plan.planfile.stage_job`), which carries its `run_settings` as the plan job resolved
  them from the configuration.
- Out: a frozen `StageJob`: the stage (`RunStage`: its name, decision, reasons, tests and
  shards), the `RunSettings` its files run with (the stage's `runner` and
  `timeout_per_file`, and for a stage with a `command` that command and its working directory;
  `runner:`'s retry rules, est_time-derived timeout, kill grace and
  environment rules; `gates.capture`; the stage's `quarantine:` entries), the plan's fast-fail
  switch and invalid files, and
  the `Plan` itself when there is one (the metric gates read its snapshot).
- Refused: a stage the plan does not hold (an external one named so) and a shard the stage
  does not have, as a `UsageError` naming `--stage` or `--shard` (exit 2, `plan.picking`).
- `pick_shard` and `RunStage` (`plan.picking`, which `plan.build` imports too): the shard
  `--shard` names, with the errors `list` and `run` print.
- `settings_doc` (`settings_dict`: as JSON data): the `run_settings` of a per-stage plan
  (`plan.document`); `settings_of`: the `RunSettings` they give back (`plan.planfile`).
- Imports none of the configuration's tables, PyYAML or the planner: a stage job running
  from its per-stage plan parses no configuration and plans nothing.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ci_policy import __version__
from ci_policy.config.quarantined import Quarantine
from ci_policy.config.runrules import KILL_GRACE, EnvRules, RetryRules
from ci_policy.plan.document import EnvDoc, EstTimeoutDoc, QuarantineDoc, RetryDoc, SettingsDoc
from ci_policy.plan.picking import RunStage as RunStage
from ci_policy.plan.picking import pick_shard as pick_shard
from ci_policy.plan.picking import planned_stage
from ci_policy.read.codec import encode

if TYPE_CHECKING:
    from ci_policy.config.stages import Stage
    from ci_policy.config.top import Config
    from ci_policy.model.registration import Registration
    from ci_policy.model.snapshot import InvalidFile
    from ci_policy.plan.build import Plan
    from ci_policy.plan.partition import Shard


@dataclass(frozen=True)
class PlannedStage:
    """A stage as a per-stage plan records it (it does not record why a test was not selected)."""

    name: str
    decision: str
    reasons: tuple[str, ...]
    tests: tuple[Registration, ...]
    shards: tuple[Shard, ...]
    not_selected: tuple[tuple[Registration, str], ...] = ()


@dataclass(frozen=True)
class RunSettings:
    runner: str = "pytest"  # `python FILE` or `python -m pytest FILE`
    timeout_per_file: float | None = None
    timeout_from_est_time: tuple[float, float] | None = None
    kill_grace: float = KILL_GRACE
    retry: RetryRules = RetryRules()
    env: EnvRules = EnvRules()
    capture: tuple[str, ...] = ()
    user: str | None = None  # `runner.user`: who the tests run as when the runner is root
    # A stage with a command (a suite without markers): the argv run instead of a test file, in
    # `working_directory` (repo-relative; None: the root).
    command: tuple[str, ...] | None = None
    working_directory: str | None = None
    # The `quarantine:` entries of the stage (for every stage, or naming this one), expired ones too:
    # the stage job judges `until` on the day it runs.
    quarantine: tuple[Quarantine, ...] = ()


def run_settings(config: Config, stage: Stage) -> RunSettings:
    runner = config.runner
    return RunSettings(runner=stage.runner, timeout_per_file=stage.timeout_per_file,
                       timeout_from_est_time=runner.timeout_from_est_time, kill_grace=runner.kill_grace,
                       retry=runner.retry, env=runner.env, capture=config.gates.capture, user=runner.user,
                       command=stage.command or None,
                       working_directory=stage.working_directory if stage.command else None,
                       quarantine=tuple(q for q in config.quarantine if q.applies_to(stage.key, stage.base_key)))


def quarantine_doc(q: Quarantine) -> QuarantineDoc:
    return QuarantineDoc(file=q.file, reason=q.reason, issue=q.issue, owner=q.owner, until=q.until.isoformat())


def quarantine_of_doc(doc: QuarantineDoc) -> Quarantine:
    """An entry a per-stage plan carries, for its one stage (its `until` checked a date by `plan.document`)."""
    return Quarantine(file=doc.file, reason=doc.reason, issue=doc.issue, owner=doc.owner,
                      until=datetime.date.fromisoformat(doc.until))


def settings_doc(settings: RunSettings) -> SettingsDoc:
    """The `run_settings` of a per-stage plan (`plan.document`), as this version resolved them."""
    from_est = settings.timeout_from_est_time
    return SettingsDoc(
        ci_policy=__version__,  # the version whose configuration checks resolved them
        runner=settings.runner,  # type: ignore[arg-type]
        timeout_per_file=settings.timeout_per_file,
        timeout_from_est_time=None if from_est is None else EstTimeoutDoc(factor=from_est[0], floor=from_est[1]),
        kill_grace=settings.kill_grace,
        retry=RetryDoc(infra=settings.retry.infra, never=settings.retry.never, retriable=settings.retry.retriable),
        env=EnvDoc(allow=settings.env.allow, drop=settings.env.drop),
        capture=settings.capture, user=settings.user, command=settings.command,
        working_directory=settings.working_directory,
        quarantine=tuple(map(quarantine_doc, settings.quarantine)) or None)


def settings_of(doc: SettingsDoc) -> RunSettings:
    """The settings a per-stage plan's `run_settings` give (read as `plan.document` declares them)."""
    from_est = doc.timeout_from_est_time
    factor, floor = (None, None) if from_est is None else (from_est.factor, from_est.floor)
    return RunSettings(runner=doc.runner, timeout_per_file=doc.timeout_per_file,
                       # `plan.planfile` refuses one without the other
                       timeout_from_est_time=None if factor is None or floor is None else (factor, floor),
                       kill_grace=doc.kill_grace,
                       retry=RetryRules(infra=doc.retry.infra, never=doc.retry.never, retriable=doc.retry.retriable),
                       env=EnvRules(allow=doc.env.allow, drop=doc.env.drop), capture=doc.capture,
                       user=doc.user, command=doc.command,
                       working_directory=doc.working_directory if doc.command else None,
                       quarantine=tuple(map(quarantine_of_doc, doc.quarantine or ())))


def settings_dict(settings: RunSettings) -> dict[str, Any]:
    """`settings_doc` as JSON data."""
    data: dict[str, Any] = encode(settings_doc(settings))
    return data


@dataclass(frozen=True)
class StageJob:
    stage: RunStage
    settings: RunSettings
    bypass_fastfail: bool
    invalid: tuple[InvalidFile, ...] = ()
    # The plan the stage was taken from; None for a per-stage plan's job, none of whose files
    # declares gates (`plan.planfile.stage_job`), with whether any other file of the plan does.
    plan: Plan | None = None
    declares_gates: bool = False

    @classmethod
    def of(cls, plan: Plan, stage: str) -> StageJob:
        """The planned stage `stage` of `plan`; `UsageError` for a stage not planned (naming an external one)."""
        planned = planned_stage(plan, stage)
        return cls(stage=planned, settings=run_settings(plan.config, planned.stage),
                   bypass_fastfail=plan.policy.bypass_fastfail, invalid=plan.invalid, plan=plan,
                   declares_gates=bool(plan.snapshot.gates))
