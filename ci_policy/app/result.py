"""`result`: the pipeline's result, from the plan job's `plan_complete` and the needed jobs' results.

- In: the `--plan-complete` and `--needs-json` texts.
- Out: a `Result`: the `Outcome` (each needed job's result, the reasons to fail) and the plan's
  completeness as read.
- Refused (`UsageError`): a plan_complete other than true, false or empty; a needs JSON that is
  empty, not JSON, or not GitHub's shape of needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_policy.errors import UsageError
from ci_policy.plan.outcome import Outcome, outcome, parse_needs, parse_plan_complete


@dataclass(frozen=True)
class Result:
    outcome: Outcome
    plan_complete: bool | None


def result(plan_complete: str, needs_json: str) -> Result:
    complete = parse_plan_complete(plan_complete)
    if not needs_json.strip():
        raise UsageError("is empty", source="--needs-json", hint="pass ${{ toJSON(needs) }} through an env: variable")
    return Result(outcome(complete, parse_needs(needs_json)), complete)
