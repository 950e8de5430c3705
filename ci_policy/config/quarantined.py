"""A quarantined test file as a value, apart from the `quarantine:` section's table.

- In: nothing; `config.quarantine` reads the entries from the configuration, and a per-stage
  plan carries those of its stage (`plan.document.QuarantineDoc`, `plan.stagejob`).
- Out: the frozen `Quarantine` (a file, optionally one stage, the reason, an issue link and/or
  an owner, and `until`, the last day it holds), with what a stage job and `lint` ask of it:
  whether it applies to a stage, whether it has expired on a day, and how it is named in
  messages (`describe`).
- Refused: nothing: its values were checked where they were read (`config.quarantine`, or the
  per-stage plan's reader).
- Apart from the section's table and PyYAML, so that a stage job running from its per-stage
  plan imports neither (tests/cli/test_startup.py).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field

# Within this many days of `until`, `lint` warns that the quarantine ends soon (CP909).
EXPIRING_DAYS = 7


@dataclass(frozen=True, kw_only=True)
class Quarantine:
    """A test file whose failures are reported but fail no shard and no required check, until `until`.

    Keyword-only: `stage`, `issue` and `owner` are optional (at least one of `issue` and `owner`
    is given, which the section's parser checks).
    """

    file: str
    stage: str | None = None
    reason: str
    issue: str | None = None
    owner: str | None = None
    until: datetime.date  # the last day the quarantine holds (inclusive)
    # Line of the entry, and of each of its keys, in the configuration (for lint's errors).
    line: int | None = field(default=None, compare=False)
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)

    def applies_to(self, stage_key: str, base_key: str | None = None) -> bool:
        """Whether it holds in the planned stage `stage_key` (a variant's `base_key` names all its variants)."""
        return self.stage is None or self.stage in (stage_key, base_key)

    def expired(self, today: datetime.date) -> bool:
        """Whether `until` has passed on `today` (a UTC date): the file's failures count again."""
        return today > self.until

    def expiring(self, today: datetime.date) -> bool:
        """Whether it ends within `EXPIRING_DAYS` days of `today` and has not ended yet."""
        return not self.expired(today) and (self.until - today).days <= EXPIRING_DAYS

    @property
    def tracked_by(self) -> str:
        """`issue URL, owner @name`: who follows it up, as messages name it."""
        return ", ".join(part for part in (f"issue {self.issue}" if self.issue else "",
                                           f"owner {self.owner}" if self.owner else "") if part)

    def describe(self) -> str:
        """`quarantined until 2027-01-15: REASON (issue URL, owner @name)`."""
        return f"quarantined until {self.until.isoformat()}: {self.reason} ({self.tracked_by})"


def quarantine_of(entries: tuple[Quarantine, ...], file: str) -> Quarantine | None:
    """The entry that quarantines `file` among a stage's `entries` (the first, when several do)."""
    return next((q for q in entries if q.file == file), None)
