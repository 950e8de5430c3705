"""Whether a run may write metric-history baselines: the rule, stated once.

- In: the run's cadence and its GitHub event name (None when unknown).
- Out: `writes_baseline(cadence, event)`: `(True, "")`, or `(False, why not)`.
- Refused: nothing: every cadence and event get an answer; a cadence it does not know writes none.
- Rule: never for a pull-request event of any kind (`pull_request`, `pull_request_target`,
  `pull_request_review`, ...: a PR's code must not move the baselines it is judged by), nor
  for a `merge_group` event (a merge queue entry is not merged yet and may be dequeued);
  otherwise only the cadences in `WRITING_CADENCES` (nightly, weekly; never regular or
  release). The store adds its own conditions (trusted, first attempt).
"""

from __future__ import annotations

WRITING_CADENCES = ("nightly", "weekly")


def writes_baseline(cadence: str, event: str | None) -> tuple[bool, str]:
    if event is not None and event.startswith("pull_request"):
        return False, "pull request runs never write baselines"
    if event == "merge_group":
        return False, "merge queue runs never write baselines"
    if cadence not in WRITING_CADENCES:
        return False, f"the {cadence} cadence does not write baselines"
    return True, ""
