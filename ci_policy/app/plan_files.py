"""A plan file given to `list` and `run` (`--plan FILE|DIR`): read, and checked against the checkout.

- In: a `PlanSource` with its `plan_file`, and git's look at the checkout (`plan_source.checkout`).
- Out: `read_plan(source, tree)` the plan file (for a directory: the stage's own plan when it
  holds, else the whole plan) and what of the checkout differs from its inputs (None: nothing);
  `plan_of_file(source, plan_file, changed)` its `Plan`, checked against the checkout when it
  does not hold as it is.
- `plan_text(path)`: a plan file's text (`result` reads one too).
- Refused: what `app.plan_source` says of a plan file (exit 2 unreadable, exit 1 differing).

Apart from `app.plan_source`: a command planning its plan inputs here reads no plan file and
imports none of this (tests/cli/test_startup.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ci_policy.adapters.git import CleanTree, checkout_index
from ci_policy.adapters.inputs import checkout_inputs, config_id, unchanged_since, why_changed
from ci_policy.app.requests import PlanSource
from ci_policy.errors import InputError, InputErrors, UsageError
from ci_policy.plan import planfile
from ci_policy.plan.inputs import Inputs
from ci_policy.plan.planfile import PlanFile, check_inputs, plan_of
from ci_policy.read.names import STAGE_KEY_RE

if TYPE_CHECKING:
    from ci_policy.config.top import Config
    from ci_policy.plan.build import Plan


# A plan of 20,000 test files is a few MB; the cap keeps an artifact from filling memory.
MAX_PLAN_FILE_BYTES = 256 * 1024 * 1024
# `--plan DIR`: the plan job's directory, the whole plan and each stage's (`plan --json-out
# DIR/plan.json --stage-plans DIR/stages`).
WHOLE_PLAN = "plan.json"
STAGE_PLANS = "stages"


def plan_text(value: str) -> str:
    try:
        with open(value, "rb") as fh:
            data = fh.read(MAX_PLAN_FILE_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {value}: {exc.strerror}", source="--plan",
                         hint="pass the file `ci-policy plan --format json` wrote in this run's plan job") from None
    if len(data) > MAX_PLAN_FILE_BYTES:
        raise UsageError(f"{value} is larger than {MAX_PLAN_FILE_BYTES} bytes", source="--plan")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{value} is not UTF-8 text", source="--plan",
                         hint="pass the file `ci-policy plan --format json` wrote") from None


def read_plan(source: PlanSource, tree: CleanTree | None) -> tuple[PlanFile, str | None]:
    """The plan file (for a directory: the stage's own plan when it holds, else the whole plan),
    and what of the checkout differs from its inputs (None: it holds as it is)."""
    repo, path = source.repo, source.plan_file
    assert path is not None
    if os.path.isdir(path):
        # The plan job's directory: the stage's own plan when the checkout is the clean tree it
        # recorded (nothing else of the plan is read), else the whole plan beside it.
        own = os.path.join(path, STAGE_PLANS, f"{source.stage}.json")
        if source.stage and STAGE_KEY_RE.fullmatch(source.stage) and os.path.isfile(own):
            stage_plan = planfile.read_plan_file(plan_text(own), own, source.stage)
            if (stage_plan.stage_plan and repo.is_dir()
                    and unchanged_since(repo, source.config, stage_plan.inputs, tree)):
                return stage_plan, None
        path = os.path.join(path, WHOLE_PLAN)
    plan_file = planfile.read_plan_file(plan_text(path), path, source.stage)
    if not repo.is_dir():
        raise InputError(f"repository {repo} is not a directory", path=str(repo),
                         code="CP403", hint="pass --repo with the checkout's root directory")
    return plan_file, why_changed(repo, source.config, plan_file.inputs, tree)


def plan_of_file(source: PlanSource, plan_file: PlanFile, changed: str | None) -> Plan:
    """The `Plan` of a plan file, checked against the checkout when it does not hold as it is."""
    # Imported here: a stage job running from its per-stage plan parses no configuration (tests/cli/
    # test_startup.py::test_a_stage_job_given_its_per_stage_plan_parses_no_configuration).
    from ci_policy.config.load import load_config
    from ci_policy.model.discovery import discover

    repo = source.repo
    if changed is None:
        # The same clean git tree: the same files, ids and configuration as the plan's.
        return _file_plan(plan_file, repo, load_config(repo, source.config),
                          _test_files(plan_file) if plan_file.stage_plan
                          else tuple(name for name, _ in plan_file.inputs.files))
    if plan_file.stage_plan:
        raise InputError(f"a per-stage plan lists no test file's content id, and {changed}", path=plan_file.source,
                         hint="pass the whole plan (`plan --json-out FILE`), or the directory holding it and "
                              "the per-stage plans (`--plan DIR`)")
    index = checkout_index(repo)  # one listing for the configuration, discovery and the content ids
    config_name, current_config = config_id(repo, source.config, index)
    if current_config != plan_file.inputs.config:
        check_inputs(plan_file, Inputs(current_config, plan_file.inputs.labels, plan_file.inputs.files),
                     config_name, "")
    config = load_config(repo, source.config)
    # Discovered as `plan` discovers (from the git index in a git work tree), or the files differ.
    files, errors = discover(repo, config, index)
    # A test file discovery refused (a symlink) was invalid in the plan too; anything else is fatal.
    refused = {file for file, _ in plan_file.invalid}
    fatal = [d for d in errors if d.path not in refused]
    if fatal:
        raise InputErrors(fatal)
    check_inputs(plan_file, checkout_inputs(repo, source.config, config.labels_file, files, index),
                 config.path, config.labels_file)
    return _file_plan(plan_file, repo, config, tuple(files))


def _test_files(plan_file: PlanFile) -> tuple[str, ...]:
    """A per-stage plan's files: its stage's tests and invalid files (it lists no other)."""
    return tuple(sorted({file for stage in plan_file.stages for file in (*(t.file for t in stage.tests),
                                                                          *stage.invalid)}))


def _file_plan(plan_file: PlanFile, repo: Path, config: Config, files: tuple[str, ...]) -> Plan:
    # Imported here, with `plan_of_file`'s imports (tests/cli/test_startup.py::
    # test_a_stage_job_given_its_per_stage_plan_parses_no_configuration).
    from ci_policy.model.snapshot import Snapshot, optional_labels

    labels, _missing = optional_labels(repo, config)
    snapshot = Snapshot(repo=repo, config=config, labels=labels, files=files, registrations=(), gates=(),
                        errors=())
    return plan_of(plan_file, snapshot)
