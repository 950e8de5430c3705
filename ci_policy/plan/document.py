"""The plan file, declared once: the document `plan --format json` writes and `list`/`run --plan` read.

- In: nothing but the declarations: frozen dataclasses whose fields (`read.declare.spec`) give
  the writer (`read.codec.encode`, each object's keys in field order), the strict reader
  (`read.codec.decode`, errors located as `stages[1].shards[0].files[2]`) and the JSON
  Schema shipped as `ci_policy/schemas/plan.schema.json` (`render.schemas`).
- Out: `PlanDocument` (the whole plan; a per-stage plan, `plan --stage-plans`, holds one stage,
  `inputs` without `files` and `run_settings`), `StageDoc` (a stage as the file records it),
  `TestRow` (one test of a stage), `GateDoc`, `InvalidDoc` with `DiagnosticDoc`, `InputsDoc`,
  `SettingsDoc` (with its `QuarantineDoc`s), `JobDoc`, `MergeDoc`, `DiffDoc`, `HoursDoc` with
  `StageHoursDoc` (the accelerator hours); a shard is `plan.partition.Shard`, an image to build
  `plan.jobs.ImageBuild`'s fields (`ImageDoc`).
- Refused: what the fields say, as a `read.codec` error located in the document: a path that
  is not plain and repo-relative, a number out of range, a content id or tree id of another
  form (`plan.planfile` checks what spans fields: a test file among `inputs.files`, a shard's
  files among its stage's tests, the digest).
- Imports no planner and no configuration table: a stage job reading its per-stage plan
  loads neither (the gate checks import `config.gates` when a plan has a gate; tests/cli/
  test_startup.py::test_a_stage_job_given_its_per_stage_plan_parses_no_configuration).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any, Literal

from ci_policy.config.runrules import MAX_KILL_GRACE, USER_PATTERN, RunnerKind, check_env_pattern, check_regex
from ci_policy.model.registration import EstSource
from ci_policy.model.skips import SKIP_GROUPS
from ci_policy.plan.partition import Shard
from ci_policy.plan.trust_values import Trust
from ci_policy.read.checkout import is_plain_relative
from ci_policy.read.declare import document, shown, spec
from ci_policy.read.numbers import MAX_EST_TIME, MAX_FACTOR, MAX_SECONDS

# A content id as `ci_policy.adapters.git.content_ids` writes it; a git tree id; the inputs' digest.
CONTENT_ID = r"git:[0-9a-f]{40}|sha256:[0-9a-f]{64}"
TREE = r"[0-9a-f]{40}|[0-9a-f]{64}"
DIGEST = r"sha256:[0-9a-f]{64}"
DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
# The longest stage a plan records: a million files of the longest est_time.
MAX_STAGE_SECONDS = MAX_EST_TIME * 10**6
_CONTENT_ID_EXPECTED = "expected a content id (git:<40 hex> or sha256:<64 hex>)"


def path_problem(value: Any) -> str | None:
    """Why a string is not a plain repo-relative path (`read.checkout`); None for one that is, or no string."""
    if type(value) is str and not is_plain_relative(value):
        return f"{shown(value)} is not a plain repo-relative path"
    return None


def _steps_problem(value: Any) -> str | None:
    # Imported here: PyYAML and the configuration's tables, only for a plan with gates (tests/cli/
    # test_startup.py::test_a_stage_job_given_its_per_stage_plan_parses_no_configuration).
    from ci_policy.config.gates import steps_problems

    problems = steps_problems(value) if value is not None else []
    return problems[0] if problems else None


def _constraint_problem(value: Any) -> str | None:
    # Imported here, as in `_steps_problem` (test_a_stage_job_given_its_per_stage_plan_parses_no_configuration).
    from ci_policy.config.gates import constraint_problems

    problems = constraint_problems(value) if value is not None else []
    return problems[0] if problems else None


def _written_problem(value: Any) -> str | None:
    # Imported here, as in `_steps_problem` (test_a_stage_job_given_its_per_stage_plan_parses_no_configuration).
    from ci_policy.gates.declarations import KEYWORDS

    if isinstance(value, list) and any(w not in KEYWORDS for w in value):
        return f"expected names among {', '.join(KEYWORDS)}"
    return None


def _regex_problem(value: Any) -> str | None:
    return check_regex(value) if isinstance(value, str) else None


def _env_problem(value: Any) -> str | None:
    return check_env_pattern(value) if isinstance(value, str) else None


@document
class TestRow:
    """One test of a stage: what `run` reads of its registration."""

    file: str = spec(check=path_problem)
    est_time: float = spec(minimum=0, maximum=MAX_EST_TIME)
    est_source: EstSource
    line: int | None = spec(minimum=1)
    marker: str | None = spec()


@document
class StageDoc:
    """A planned stage; the sizing keys only where the stage configures them."""

    name: str
    backend: str
    decision: Literal["run", "skip"] = spec(expected="expected run or skip")
    reasons: tuple[str, ...]
    runs_on: tuple[str, ...]
    tests: tuple[TestRow, ...]
    shards: tuple[Shard, ...]
    makespan: float = spec(minimum=0, maximum=MAX_STAGE_SECONDS,
                           description="The longest shard's est_time sum (0 without shards).")
    lower_bound: float = spec(minimum=0, maximum=MAX_STAGE_SECONDS,
                              description="max(sum / shards, longest file): no split is shorter.")
    optimal: bool = spec(description="Whether the split is proven optimal.")
    invalid: tuple[str, ...] = spec(each=path_problem)
    shards_reason: str | None = spec(default=None, omit_none=True)
    max_parallel: int | None = spec(default=None, omit_none=True, minimum=1)
    max_parallel_reason: str | None = spec(default=None, omit_none=True)
    wave: int | None = spec(default=None, omit_none=True, minimum=0,
                            description="The stage's wave (`after`); only where the configuration orders stages.")
    command: tuple[str, ...] | None = spec(
        default=None, omit_none=True, min_items=1,
        description="A stage with a command (a suite without markers): the argv its stage job runs, without a "
                    "shell; its one test is the command, named by the stage.")
    working_directory: str | None = spec(
        default=None, omit_none=True, check=path_problem,
        description="With command: the directory it runs in, relative to the repository root; absent: the root.")


@document
class DiffDoc:
    available: bool
    files: tuple[str, ...]
    reason: str | None = spec(default=None, omit_none=True)


@document
class JobDoc:
    """One stage job (`plan.jobs.MatrixEntry`): a lane of a running stage."""

    stage: str
    lane: int = spec(minimum=0)
    shards: str = spec(pattern="[0-9]+( [0-9]+)*", expected="expected shard indices separated by spaces")
    backend: str
    runs_on: tuple[str, ...]
    image: str
    container_options: str
    timeout_minutes: int = spec(minimum=0)
    wave: int | None = spec(default=None, omit_none=True, minimum=0,
                            description="The wave job that runs it; only where the configuration orders stages.")


@document
class MergeDoc:
    """A stage whose lanes were merged to fit GitHub's 256 jobs per matrix (`plan.jobs.LaneMerge`)."""

    stage: str
    wave: int = spec(minimum=0)
    lanes_from: int = spec(minimum=1)
    lanes_to: int = spec(minimum=1)
    reason: str


@document
class ImageDoc:
    """An image the stage jobs need built first (`plan.jobs.ImageBuild`)."""

    backend: str
    image: str
    dockerfile: str
    context: str


@document(kw_only=True)
class DiagnosticDoc:
    """A diagnostic as `Diagnostic.as_dict` writes it: code and name only when it has a code."""

    code: str | None = spec(default=None, omit_none=True, pattern="CP[0-9]{3}")
    name: str | None = spec(default=None, omit_none=True)
    path: str | None
    line: int | None = spec(minimum=0)
    col: int | None = spec(minimum=0)
    message: str
    hint: str | None


@document
class InvalidDoc:
    file: str = spec(check=path_problem)
    diagnostics: tuple[DiagnosticDoc, ...]
    kept_stages: tuple[str, ...] | None = spec(
        default=None, omit_none=True,
        description="A partly read file: the stages of its registrations that are still scheduled (only the "
                    "registrations its diagnostics locate were dropped).")


@document
class GateDoc:
    """A gate declaration (`gates.declarations.GateDeclaration`), so that `run --plan` parses no test file."""

    file: str = spec(check=path_problem)
    line: int = spec(minimum=1)
    col: int = spec(minimum=1)
    metric_key: str
    steps: Literal["last", "all"] | tuple[int, ...] | None = spec(check=_steps_problem, minimum=0)
    constraint: Mapping[str, float] | None = spec(check=_constraint_problem, minimum=0)
    enforce: bool
    allowlist_reason: str | None
    written: tuple[str, ...] = spec(check=_written_problem)


@document(kw_only=True)
class InputsDoc:
    """Content ids of what the plan read, the checkout's clean tree, and their digest (`run --plan` checks them)."""

    config: str | None = spec(pattern=CONTENT_ID, expected=_CONTENT_ID_EXPECTED)
    labels: str | None = spec(pattern=CONTENT_ID, expected=_CONTENT_ID_EXPECTED)
    files: Mapping[str, str] | None = spec(
        default=None, omit_none=True, pattern=CONTENT_ID, expected=_CONTENT_ID_EXPECTED, key_check=path_problem,
        description="Every discovered test file's content id; absent from a per-stage plan (`plan --stage-plans`), "
                    "which holds for its clean tree only.")
    tree: str | None = spec(pattern=TREE,
                            expected="expected null or a git tree id (40 or 64 hex digits)",
                            description="The git tree the checkout exactly was; null when it had changes or is no "
                                        "git work tree.")
    # `sha256:` of the canonical JSON of the other four (`plan.inputs.inputs_dict`): recomputed
    # where the file lists the files (`plan.planfile`).
    digest: str = spec(pattern=DIGEST, expected="expected sha256:<64 hex digits>")


@document
class EstTimeoutDoc:
    # Either may be null as read, for the refusal to say both are needed (`plan.planfile`).
    factor: float | None = spec(minimum=0, exclusive_minimum=True, maximum=MAX_FACTOR)
    floor: float | None = spec(minimum=0, exclusive_minimum=True, maximum=MAX_SECONDS)


@document
class RetryDoc:
    infra: tuple[str, ...] = spec(unique=True, each=_regex_problem)
    never: tuple[str, ...] = spec(unique=True, each=_regex_problem)
    retriable: tuple[str, ...] = spec(unique=True, each=_regex_problem)


@document
class EnvDoc:
    allow: tuple[str, ...] = spec(unique=True, each=_env_problem)
    drop: tuple[str, ...] = spec(unique=True, each=_env_problem)


def _blank_problem(value: Any) -> str | None:
    return "expected a non-empty reason" if isinstance(value, str) and not value.strip() else None


def _date_problem(value: Any) -> str | None:
    if isinstance(value, str) and re.fullmatch(DATE, value):
        try:
            datetime.date.fromisoformat(value)
        except ValueError as exc:
            return f"{shown(value)} is not a date: {exc}"
    return None


@document(kw_only=True)
class QuarantineDoc:
    """A quarantined file of the stage (`config.quarantined.Quarantine`): its failure fails no shard until `until`."""

    file: str = spec(check=path_problem)
    reason: str = spec(check=_blank_problem)
    issue: str | None = spec(default=None, omit_none=True)
    owner: str | None = spec(default=None, omit_none=True)
    until: str = spec(pattern=DATE, expected="expected a date YYYY-MM-DD", check=_date_problem,
                      description="The last day (UTC) the quarantine holds; the stage job judges it on the day it "
                                  "runs.")


@document
class SettingsDoc:
    """How a per-stage plan's files run (`plan.stagejob.RunSettings`), so that `run` reads no configuration."""

    ci_policy: str = spec(description="The version that resolved them; another version's are not taken.")
    runner: RunnerKind
    timeout_per_file: float | None = spec(minimum=0, exclusive_minimum=True, maximum=MAX_SECONDS)
    timeout_from_est_time: EstTimeoutDoc | None
    kill_grace: float = spec(minimum=0, maximum=MAX_KILL_GRACE)
    retry: RetryDoc
    env: EnvDoc
    capture: tuple[str, ...] = spec(unique=True, min_items=1)
    user: str | None = spec(pattern=USER_PATTERN,
                            description="`runner.user`: who the tests run as when the runner is root.")
    command: tuple[str, ...] | None = spec(default=None, omit_none=True, min_items=1,
                                           description="A stage with a command: the argv run instead of its files.")
    working_directory: str | None = spec(default=None, omit_none=True, check=path_problem,
                                         description="With command: the directory it runs in; absent: the root.")
    quarantine: tuple[QuarantineDoc, ...] | None = spec(
        default=None, omit_none=True, min_items=1,
        description="The stage's quarantined files (`quarantine:` entries for every stage or for this one), expired "
                    "ones too; absent when there are none.")


def _skip_group_problem(value: Any) -> str | None:
    if type(value) is str and value not in SKIP_GROUPS:
        return f"{shown(value)} is not one of {', '.join(SKIP_GROUPS)}"
    return None


@document
class StageHoursDoc:
    """One accelerator stage's hours (`plan.hours.StageHours`)."""

    stage: str
    gpus: int = spec(minimum=1, description="Accelerators per runner: its `accelerators` entry's, else 1.")
    entry: int | None = spec(minimum=0, description="The index of its `accelerators` entry; null: none matches.")
    cost_per_hour: float | None = spec(minimum=0)
    scheduled_hours: float = spec(minimum=0)
    skipped_hours: Mapping[str, float] = spec(minimum=0, key_check=_skip_group_problem,
                                              description="By reason: diff, labels, cadence, trust.")


@document
class HoursDoc:
    """The accelerator hours the plan schedules and skips (est_time x accelerators per runner)."""

    scheduled_hours: float = spec(minimum=0)
    skipped_hours: Mapping[str, float] = spec(minimum=0, key_check=_skip_group_problem,
                                              description="By reason: diff, labels, cadence, trust.")
    scheduled_cost: float | None = spec(minimum=0, description="Null unless an `accelerators` entry has a cost.")
    skipped_cost: float | None = spec(minimum=0)
    stages: tuple[StageHoursDoc, ...]


@document
class PlanDocument:
    """The plan: the policy, the stages, the stage jobs, what was not read, the gates and the inputs."""

    schema: Literal[1] = spec(description="The version of this document's format.")
    event: str
    cadence: str
    trust: Trust
    raw_labels: tuple[str, ...] = spec(description="The PR labels the policy reads (run-ci-<name> and the "
                                       "workflow-only ones), sorted: the form labels are matched in.")
    pr_labels: tuple[str, ...] = spec(description="Every PR label exactly as given (case and spaces kept), "
                                      "sorted, without duplicates.")
    include_labels: tuple[str, ...]
    bypass_fastfail: bool
    write_baseline: bool
    diff: DiffDoc
    stages: tuple[StageDoc, ...]
    skipped_stages: tuple[str, ...]
    images: Mapping[str, str]
    jobs: tuple[JobDoc, ...]
    images_to_build: tuple[ImageDoc, ...]
    warnings: tuple[str, ...]
    plan_complete: bool
    invalid: tuple[InvalidDoc, ...]
    not_fully_read: tuple[str, ...] = spec(each=path_problem)
    gates: tuple[GateDoc, ...]
    inputs: InputsDoc | None = spec(
        default=None, omit_none=True,
        description="Content ids of what the plan read, the checkout's clean tree, and their digest (`run --plan` "
                    "checks them).")
    merged_lanes: tuple[MergeDoc, ...] | None = spec(
        default=None, omit_none=True,
        description="The stages whose lanes were merged so that each wave's matrix fits GitHub's 256 jobs; "
                    "absent when none was.")
    accelerator_hours: HoursDoc | None = spec(
        default=None, omit_none=True,
        description="The whole plan's accelerator hours, scheduled and skipped by reason (a per-stage plan "
                    "holds them too); absent in a plan written by an earlier version.")
    run_settings: SettingsDoc | None = spec(
        default=None, omit_none=True,
        description="A per-stage plan's only: how its stage's files run (the stage's runner and timeout_per_file, "
                    "`runner:` and `gates.capture`), so that `run` reads no configuration.")
