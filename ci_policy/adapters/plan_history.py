"""The history's plan rows from downloaded plan artifacts: what each run's plan scheduled and skipped (an adapter).

- In: a `plan.json` met while `history import` walks a directory, inside the plan artifact's
  directory `ci-policy-plan-<attempt>/` (as the pipeline uploads it and `gh run download`
  extracts it), under a `run-<id>/` directory, with the `run.json` the plan job writes beside
  it: `{"run_id", "run_attempt", "commit", "created"}` (`created`: when the plan was made, UTC).
- Out: `plan_hours_of(path, warnings)`: one `model.outcomes.PlanHours` (the plan's event and
  its `accelerator_hours`: hours scheduled, and skipped per group), or None with a warning:
  a plan without `accelerator_hours` or without `run.json` (written by an earlier version),
  whose hours or time are unknown, is left out, never counted as zero.
- The run id and attempt are `run.json`'s; an enclosing `run-<id>` or `ci-policy-plan-<attempt>`
  directory naming another is refused. Pull request runs count: their plans are artifacts like
  any run's, though they never write into a store themselves.
- Refused: as an `InputError` located at the file, nothing imported: a file that is not UTF-8
  JSON, an `accelerator_hours` or `run.json` that does not read (`read.codec`), hours beyond
  what the history keeps (`PlanHours`: at most 1e9), a run id or attempt that neither names.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ci_policy.adapters.tuning.sources import run_id_of
from ci_policy.errors import Diagnostic, InputError
from ci_policy.model.outcomes import TIMESTAMP, PlanHours
from ci_policy.plan.document import HoursDoc
from ci_policy.read.codec import decode
from ci_policy.read.declare import DecodeError, document, spec
from ci_policy.read.strictjson import DuplicateKey, no_duplicates

PLAN_DIR = re.compile(r"ci-policy-plan-([1-9][0-9]{0,8})")
PLAN_FILE = "plan.json"
RUN_FILE = "run.json"
MAX_BYTES = 64 * 1024 * 1024
HINT = "download the run's artifacts again (`gh run download RUN_ID --dir run-RUN_ID`), or leave this run out"


@document(kw_only=True)
class RunInfo:
    """`run.json`, written by the plan job beside the plan it uploads."""

    run_id: str = spec(pattern=r"[0-9]+", description="GITHUB_RUN_ID.")
    run_attempt: int = spec(minimum=1, description="GITHUB_RUN_ATTEMPT.")
    commit: str | None = spec(default=None, description="The commit planned; null or empty: none.")
    created: str = spec(pattern=TIMESTAMP, description="When the plan was made (UTC).")


def is_plan_file(path: str) -> bool:
    """Whether `path` is the plan of a downloaded plan artifact (not a per-stage plan under `stages/`)."""
    return os.path.basename(path) == PLAN_FILE and PLAN_DIR.fullmatch(os.path.basename(os.path.dirname(path)))\
        is not None


def _json(path: str) -> Any:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    if len(data) > MAX_BYTES:
        raise InputError(f"over {MAX_BYTES} bytes: not a plan document", path=path, hint=HINT)
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=no_duplicates)
    except DuplicateKey as exc:
        raise InputError(f"field {exc.key!r}: given twice", path=path, hint=HINT) from None
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InputError("not a JSON document", path=path, hint=HINT) from None


def plan_hours_of(path: str, warnings: list[Diagnostic]) -> PlanHours | None:
    doc = _json(path)
    hours = doc.get("accelerator_hours") if isinstance(doc, dict) else None
    if hours is None:
        warnings.append(Diagnostic("a plan without accelerator_hours (an earlier version's): its hours are not "
                                   "imported", path=path, severity="warning"))
        return None
    run_path = os.path.join(os.path.dirname(path), RUN_FILE)
    if not os.path.isfile(run_path) or os.path.islink(run_path):
        warnings.append(Diagnostic(f"no {RUN_FILE} beside the plan (an earlier pipeline's): when it was made is "
                                   "unknown, its hours are not imported", path=path, severity="warning"))
        return None
    try:
        accelerator = decode(HoursDoc, hours)
    except DecodeError as exc:
        raise InputError(f"accelerator_hours: {exc}", path=path, hint=HINT) from None
    try:
        run = decode(RunInfo, _json(run_path))
    except DecodeError as exc:
        raise InputError(str(exc), path=run_path, hint=HINT) from None
    event = doc.get("event") if isinstance(doc.get("event"), str) and doc.get("event") else None
    attempt = PLAN_DIR.fullmatch(os.path.basename(os.path.dirname(path)))
    enclosing = run_id_of(path)
    if enclosing is not None and enclosing != run.run_id or attempt and int(attempt.group(1)) != run.run_attempt:
        raise InputError(f"{RUN_FILE} names run {run.run_id} attempt {run.run_attempt}, its directories another",
                         path=run_path, hint=HINT)
    try:
        # Through the history's own reader: its bounds (a forged 1e300 hours) hold for every plan kept.
        return decode(PlanHours, {"run_id": run.run_id, "run_attempt": run.run_attempt, "event": event,
                                  "commit": run.commit or None, "created": run.created,
                                  "scheduled": accelerator.scheduled_hours,
                                  "skipped": dict(accelerator.skipped_hours)})
    except DecodeError as exc:
        where = exc.where.replace("scheduled", "scheduled_hours").replace("skipped", "skipped_hours")
        raise InputError(f"accelerator_hours: {where}: {exc.message}", path=path, hint=HINT) from None
