"""Writing the estimates file: `ci-policy tune --write-estimates FILE`.

- In: the estimates file to update (it may not exist yet) and the proposals that change
  an est_time (raise or lower).
- Out: the file rewritten with every earlier entry kept and each proposal's (file, suite)
  set to its proposed value, in the format `ci_policy.model.estimates` reads; the number
  of entries it now holds.
- Refused: an existing file that is not a valid estimates file (an `InputError` or
  `InputErrors`, as the plan would refuse it); it is left untouched.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ci_policy.adapters.tuning.propose import Proposal
from ci_policy.model import estimates


def merge_estimates(target: Path, changing: Iterable[Proposal]) -> int:
    table: dict[tuple[str, str], float] = {}
    if target.exists():
        table = estimates.parse_estimates(target.read_text(encoding="utf-8"), str(target))
    for p in changing:
        if p.suite is not None and p.proposed is not None:
            table[(p.file, p.suite)] = p.proposed
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(estimates.render((f, s, e) for (f, s), e in table.items()), encoding="utf-8")
    return len(table)
