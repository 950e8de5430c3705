"""The configuration's `quarantine:` entries checked against the registry and the calendar.

- In: the `Config`, the registrations (and, for the registry check, the discovered files and the
  errors found in them); for `lint`, the day (a UTC date).
- Out: `registry_errors`: CP232 for an entry whose file has no registration (in its `stage`,
  when it names one), located at the entry; a discovered file whose own errors dropped its
  registrations is left to those errors. `calendar_problems`: CP233 (an error) for an entry
  whose `until` has passed, CP909 (a warning) for one ending within
  `config.quarantined.EXPIRING_DAYS` days, both located at the entry's `until`.
- Refused: nothing raised: each problem is a located diagnostic (CP232, CP233, CP909) above.
- A stage job decides with the same `Quarantine.expired`, on the day it runs: an expired
  entry quarantines nothing, whatever `lint` said when the plan was made.
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Iterable
from typing import Any

from ci_policy.config.quarantined import EXPIRING_DAYS
from ci_policy.config.top import Config
from ci_policy.errors import Diagnostic, warning
from ci_policy.model.registration import Registration
from ci_policy.read.names import did_you_mean

RENEW_HINT = ("renew it with a later until and an updated reason (and issue or owner), or remove the entry once "
              "the test is fixed")


def registry_errors(config: Config, registrations: Iterable[Registration], files: Collection[str],
                    errors: Iterable[Diagnostic]) -> list[Diagnostic]:
    """CP232: an entry whose file is not a registered test file (of its stage, when it names one)."""
    if not config.quarantine:
        return []
    stages: dict[str, set[str]] = {}
    for reg in registrations:
        stages.setdefault(reg.file, set()).add(config.key_of(reg.backend, reg.suite))
    spoilt = {d.path for d in errors if d.path in files}  # their own errors say why they are not registered
    out = []
    for i, entry in enumerate(config.quarantine):
        where = f"quarantine[{i}].file"
        at: dict[str, Any] = {"path": config.path, "line": entry.lines.get("file", entry.line), "code": "CP232"}
        if entry.file in spoilt:
            continue
        if entry.file not in stages:
            out.append(Diagnostic(
                f"{where}: {entry.file} is not a registered test file{did_you_mean(entry.file, stages)}",
                hint="name a test file ci-policy registry lists, or remove the entry", **at))
            continue
        stage = config.stage(entry.stage) if entry.stage is not None else None
        if stage is not None and stage.base_key not in stages[entry.file]:
            out.append(Diagnostic(
                f"{where}: {entry.file} does not run in stage {entry.stage} (its stages: "
                f"{', '.join(sorted(stages[entry.file]))})",
                hint="name one of its stages, or leave stage out for every stage it runs in", **at))
    return out


def calendar_problems(config: Config, today: datetime.date) -> list[Diagnostic]:
    """CP233 for each entry past its `until` on `today`, CP909 for each ending within `EXPIRING_DAYS` days."""
    out = []
    for i, entry in enumerate(config.quarantine):
        at: dict[str, Any] = {"path": config.path, "line": entry.lines.get("until", entry.line)}
        until = entry.until.isoformat()
        if entry.expired(today):
            out.append(Diagnostic(
                f"quarantine[{i}].until: the quarantine of {entry.file} has expired: it held until {until} "
                f"({entry.reason}; {entry.tracked_by}), and its failures fail the run again", hint=RENEW_HINT,
                code="CP233", **at))
        elif entry.expiring(today):
            days = (entry.until - today).days
            out.append(warning(
                f"quarantine[{i}].until: the quarantine of {entry.file} ends on {until}, in {days} day(s) "
                f"(within {EXPIRING_DAYS})", hint=RENEW_HINT, code="CP909", **at))
    return out
