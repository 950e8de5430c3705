"""Why accelerator hours were skipped: the groups a plan's skip reasons fall in.

- In: nothing; declared here once for the planner (`plan.hours`), the plan document
  (`plan.document`'s `skipped_hours` keys, which a stage job reads without the planner) and the
  test history's plan rows (`model.outcomes.PlanHours`, one column per group).
- Out: `SKIP_GROUPS` in the order every output lists them; `SkipGroup`, their type.
- Refused: nothing: a constant (the plan document refuses a key outside it).
"""

from __future__ import annotations

from typing import Literal

SkipGroup = Literal["diff", "labels", "cadence", "trust"]
SKIP_GROUPS: tuple[SkipGroup, ...] = ("diff", "labels", "cadence", "trust")
