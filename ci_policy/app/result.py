"""`result`: the pipeline's result, from the plan and the needed jobs' results.

- In: a `ResultRequest`: the `--plan-complete` text (None: not given), the `--needs-json`
  text (job id -> `{"result"}`; outputs optional), the plan file's path (None or "": the plan
  job wrote none, or the caller passes only its outputs) and the head SHA the plan is for
  ("" when unknown).
- Out: a `Result`: the `Outcome` (each needed job's result, the reasons to fail, the head
  awaiting `/ok-to-test` and the stages held back for trust) and the plan's completeness as
  read. With a plan file, its `plan_complete`, invalid files and skipped stages are the plan's; its stages
  skipped with `plan.policy.UNTRUSTED_REASON` fail the result until a maintainer approves
  the head (`plan.outcome`).
- Refused: as a `UsageError` naming the option: neither --plan nor --plan-complete; a
  plan_complete other than true, false or empty, or one the plan file contradicts; a needs JSON
  that is empty, not JSON, or not GitHub's shape of needs; a head SHA that is not 40 hex digits;
  a plan file that cannot be read or is not a plan (naming `--plan`, the file and the place in
  it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ci_policy.app.plan_files import plan_text
from ci_policy.errors import UsageError
from ci_policy.plan.outcome import NEEDS_HINT, Outcome, held_for_trust, outcome, parse_needs, parse_plan_complete
from ci_policy.plan.planfile import read_plan_file

SHA_RE = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class ResultRequest:
    plan_complete: str | None
    needs_json: str
    plan: str | None = None
    head_sha: str = ""


@dataclass(frozen=True)
class Result:
    outcome: Outcome
    plan_complete: bool | None


def result(request: ResultRequest) -> Result:
    if request.head_sha and not SHA_RE.fullmatch(request.head_sha):
        raise UsageError(f"expected a 40-hex commit SHA, got {request.head_sha[:80]!r}", source="--head-sha",
                         hint="pass ${{ needs.plan.outputs.head_sha }}")
    given = parse_plan_complete(request.plan_complete) if request.plan_complete is not None else None
    if not request.needs_json.strip():
        raise UsageError("is empty", source="--needs-json", hint=NEEDS_HINT)
    jobs = parse_needs(request.needs_json)
    if not request.plan:
        if request.plan_complete is None:
            raise UsageError("nothing says whether the plan is complete", source="--plan",
                             hint="pass --plan FILE (the plan job's plan file) or --plan-complete BOOL")
        return Result(outcome(given, jobs), given)
    plan = read_plan_file(plan_text(request.plan), request.plan)
    if given is not None and given != plan.plan_complete:
        raise UsageError(f"says {str(given).lower()}, but the plan file {request.plan} says plan_complete "
                         f"{str(plan.plan_complete).lower()}", source="--plan-complete",
                         hint="pass the plan job's own plan file and output, from the same run attempt")
    held = held_for_trust((stage.name, stage.decision, stage.reasons) for stage in plan.stages)
    invalid = tuple(file for file, _diagnostics in plan.invalid)
    skipped = tuple(stage.name for stage in plan.stages if stage.decision == "skip")
    decided = outcome(plan.plan_complete, jobs, held=held, head_sha=request.head_sha, invalid=invalid,
                      skipped_stages=skipped)
    return Result(decided, plan.plan_complete)
