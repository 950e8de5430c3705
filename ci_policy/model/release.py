"""Quarantined files ready to leave quarantine: those that passed every run of a window (pure).

- In: the configuration's `quarantine:` entries (`config.quarantined.Quarantine`), the test
  history's attempts (`model.outcomes.Outcome`) and the window (`since`, `until`: dates, both
  included; `--release-after`, 14 days unless given).
- Out: `release_status(...)`: one `QuarantineStatus` per entry, in the configuration's order:
  `ready` when every attempt of its file (in its stage, when the entry names one) in the
  window passed and there was at least one; `failing` when one did not pass (a failure a retry
  hid included: a flake is what the quarantine is for); `not-run` when none ran in the window.
  Each carries the runs counted, the runs with a failure and the latest of them, and the
  entry as YAML, to delete once the status is `ready`.
- Refused: nothing: the entries were checked when the configuration was read, the attempts when
  they were recorded or imported.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable
from typing import Literal

from ci_policy.config.quarantined import Quarantine
from ci_policy.model.outcomes import Outcome
from ci_policy.read.declare import document, spec

RELEASE_DAYS = 14
_PLAIN = re.compile(r"[A-Za-z0-9_./-]+")


@document
class QuarantineStatus:
    file: str
    stage: str | None = spec(description="The stage the entry names; null: every stage.")
    until: str = spec(description="The entry's until (YYYY-MM-DD).")
    line: int | None = spec(description="The entry's line in the configuration.")
    status: Literal["ready", "failing", "not-run"] = spec(
        description="ready: passed every run of the window, and ran; failing: an attempt did not pass; "
                    "not-run: no attempt in the window.")
    runs: int = spec(minimum=0, description="Workflow runs (and their attempts) in the window that ran the file.")
    failed_runs: int = spec(minimum=0, description="Of which an attempt of the file did not pass.")
    last_failure: str | None = spec(description="The run id of the latest of them.")
    entry: str = spec(description="The entry as YAML: what to delete from `quarantine:` once ready.")


def yaml_text(value: str) -> str:
    """A YAML scalar for `value`: plain when YAML reads it back as that string, else quoted."""
    return value if _PLAIN.fullmatch(value) and not value[0].isdigit() else json.dumps(value)


def entry_yaml(q: Quarantine) -> str:
    """The entry as a `quarantine:` list item, its keys in the configuration's order."""
    lines = [f"- file: {yaml_text(q.file)}"]
    if q.stage is not None:
        lines.append(f"  stage: {yaml_text(q.stage)}")
    lines.append(f"  reason: {json.dumps(q.reason)}")
    lines += [f"  {key}: {json.dumps(value)}" for key, value in (("issue", q.issue), ("owner", q.owner)) if value]
    lines.append(f"  until: {q.until.isoformat()}")
    return "\n".join(lines) + "\n"


def release_status(entries: Iterable[Quarantine], outcomes: Iterable[Outcome], *, since: datetime.date,
                   until: datetime.date) -> tuple[QuarantineStatus, ...]:
    first, last = since.isoformat(), (until + datetime.timedelta(days=1)).isoformat()
    rows = [o for o in outcomes if first <= o.started_at < last]
    out = []
    for q in entries:
        mine = [o for o in rows if o.file == q.file and (q.stage is None or o.stage == q.stage)]
        runs = {(o.run_id, o.run_attempt) for o in mine}
        failed = sorted({(o.started_at, o.run_id, o.run_attempt) for o in mine if o.status != "pass"})
        failed_runs = {(run, attempt) for _, run, attempt in failed}
        status: Literal["ready", "failing", "not-run"] = "not-run" if not runs else "failing" if failed else "ready"
        out.append(QuarantineStatus(file=q.file, stage=q.stage, until=q.until.isoformat(), line=q.line,
                                    status=status, runs=len(runs), failed_runs=len(failed_runs),
                                    last_failure=failed[-1][1] if failed else None, entry=entry_yaml(q)))
    return tuple(out)
