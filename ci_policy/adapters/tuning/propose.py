"""est_time proposals (pure): evidence of past runs -> one proposal per registration.

- In: `FileEvidence` rows (any number of runs and shards), the `Snapshot` (current
  est_times, stages) and the `TuneConfig`.
- Out: one `Proposal` per (test file, backend) with evidence, grouped across every run
  and shard given (never per job). Only passed samples count; failed, timed-out,
  cancelled, unknown and not-run samples never enter `q`, never block a lower and never
  cancel a raise.
- Refused: nothing: the evidence was checked by its readers; what cannot be proposed is a
  `skip` with its reason.
- `q` is the max of the passed samples when there are fewer than
  `min_samples_for_quantile`, else their nearest-rank `quantile`; `raw = ceil(q * safety)`
  rounded UP to a bucket (10 s buckets up to 200 s, 100 s above; never down), and at most
  `MAX_EST_TIME` (7 days), the most an est_time may be.
- Actions: raise, lower, keep (also inside the dead-band, so estimates do not churn),
  skip with a reason (no passed sample; several registrations of the same backend; an
  implicit registration or a stage's command, whose est_time is configuration, not a literal),
  report_only when not applying.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal

from ci_policy.adapters.tuning.evidence import FileEvidence
from ci_policy.config.tune import TuneConfig
from ci_policy.plan.partition import imbalance, makespan, stage_shards
from ci_policy.read.numbers import MAX_EST_TIME

RAISE, LOWER, KEEP, SKIP, REPORT_ONLY = "raise", "lower", "keep", "skip", "report_only"


def bucket(raw: float) -> int:
    """Round up: 10 s buckets up to 200 s, 100 s buckets above (200 -> 200, 201 -> 300)."""
    raw = math.ceil(raw)
    if raw <= 200:
        return int(math.ceil(raw / 10) * 10)
    return int(math.ceil(raw / 100) * 100)


def quantile_nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def q_of(samples: list[float], tune: TuneConfig) -> float:
    if len(samples) < tune.min_samples_for_quantile:
        return max(samples)
    return quantile_nearest_rank(samples, tune.quantile)


def proposed_for(samples: list[float], tune: TuneConfig) -> tuple[float, int]:
    q = q_of(samples, tune)
    # Decimal, not float: 100 * 1.1 is 110.00000000000001 in floats, and its ceil would be 111.
    # Capped before bucketing: a proposal is an est_time, so never above MAX_EST_TIME (which
    # lint would refuse), however long a recorded sample claims to be.
    return q, bucket(min(math.ceil(Decimal(repr(q)) * Decimal(repr(tune.safety))), MAX_EST_TIME))


@dataclass(frozen=True)
class Proposal:
    file: str
    backend: str
    suite: str | None
    samples: tuple[float, ...]
    q: float | None
    current: float | None
    proposed: int | None
    action: str
    reason: str = ""
    # The marker the registration is written with (`register_amd_ci`), for `--apply`.
    marker: str | None = field(default=None, compare=False)

    @property
    def changes(self) -> bool:
        return self.proposed is not None and self.action in (RAISE, LOWER, REPORT_ONLY)


def backend_of(row: FileEvidence, snapshot) -> str | None:
    if row.stage:
        stage = snapshot.config.stage(row.stage)
        if stage is not None:
            return stage.backend
    backends = {r.backend for r in snapshot.registrations_for(row.file)}
    return backends.pop() if len(backends) == 1 else None


def normalise_paths(evidence: Iterable[FileEvidence], files: Iterable[str]) -> list[FileEvidence]:
    """Runner logs may print absolute paths (`/__w/repo/repo/tests/x.py`): map each to the one
    discovered test file it ends with; a path matching none or several is kept as printed."""
    known = set(files)
    out = []
    for row in evidence:
        if row.file not in known and row.file.startswith("/"):
            matches = [f for f in known if row.file.endswith("/" + f)]
            if len(matches) == 1:
                note = "; ".join(x for x in (row.note, f"path printed as {row.file}") if x)
                row = dataclasses.replace(row, file=matches[0], note=note)
        out.append(row)
    return out


def deduplicate(evidence: Iterable[FileEvidence]) -> list[FileEvidence]:
    """A ci-policy job's log and its uploaded timing records describe the same attempts;
    counting both would double the samples. Where timing records exist for a (run, stage,
    shard, file), the log rows for it are dropped (records are exact to the millisecond).
    Rows of the same kind are never merged (a re-run attempt is its own sample), and rows
    without a run id cannot be matched and stay."""
    rows = list(evidence)

    def is_record(row: FileEvidence) -> bool:
        return row.source.endswith(".jsonl") or "/artifacts/" in row.source

    def key(row: FileEvidence) -> tuple:
        return (row.run_id, row.stage, row.shard, row.file)

    recorded = {key(r) for r in rows if r.run_id and is_record(r)}
    return [r for r in rows if is_record(r) or not r.run_id or key(r) not in recorded]


def propose(evidence: Iterable[FileEvidence], snapshot, tune: TuneConfig, *, applying: bool) -> list[Proposal]:
    groups: dict[tuple[str, str], list[FileEvidence]] = {}
    unplaced: dict[str, list[FileEvidence]] = {}
    for row in evidence:
        backend = backend_of(row, snapshot)
        if backend is None:
            unplaced.setdefault(row.file, []).append(row)
        else:
            groups.setdefault((row.file, backend), []).append(row)
    out = []
    for (file, backend), rows in sorted(groups.items()):
        proposal = _proposal(file, backend, rows, snapshot, tune, applying)
        regs = [r for r in snapshot.registrations_for(file) if r.backend == backend]
        out.append(replace(proposal, marker=regs[0].marker) if len(regs) == 1 else proposal)
    for file in sorted(unplaced):
        if any((file, b) in groups for b in ("cpu", "cuda", "rocm")):
            continue
        out.append(Proposal(file, "?", None, (), None, None, None, SKIP,
                            "no stage in the evidence and the file is not registered for exactly one backend"))
    return out


def _proposal(file, backend, rows, snapshot, tune, applying) -> Proposal:
    regs = [r for r in snapshot.registrations_for(file) if r.backend == backend]
    samples = tuple(sorted(r.elapsed for r in rows if r.passed and r.elapsed is not None))
    stage = snapshot.config.stage(file)
    if not regs and stage is not None and stage.command and all(r.stage == file for r in rows):
        # A stage's command, its one result named by the stage (`plan.selection.command_registration`).
        return Proposal(file, backend, file, samples, None, stage.est_time, None, SKIP,
                        "a stage's command: its est_time is configuration (stages[].est_time), not a literal")
    if not regs:
        return Proposal(file, backend, None, samples, None, None, None, SKIP, f"not registered for {backend}")
    if len(regs) > 1:
        return Proposal(file, backend, None, samples, None, None, None, SKIP,
                        f"{len(regs)} {backend} registrations (lines {', '.join(str(r.line) for r in regs)})")
    reg = regs[0]
    current = reg.est_time
    if reg.implicit:
        return Proposal(file, backend, reg.suite, samples, None, current, None, SKIP,
                        "implicit registration: its est_time is configuration, not a literal")
    if not samples:
        # A passed row without an elapsed time (a log that printed none) is no sample either.
        statuses = sorted({r.status if r.elapsed is not None or not r.passed else "passed without an elapsed time"
                           for r in rows})
        return Proposal(file, backend, reg.suite, (), None, current, None, SKIP,
                        f"no passed sample ({', '.join(statuses)})")
    q, proposed = proposed_for(list(samples), tune)
    if proposed == current:
        return Proposal(file, backend, reg.suite, samples, q, current, proposed, KEEP, "unchanged")
    if current and abs(proposed - current) / current <= tune.deadband:
        return Proposal(file, backend, reg.suite, samples, q, current, proposed, KEEP,
                        f"within the {tune.deadband:.0%} dead-band")
    action = RAISE if proposed > current else LOWER
    if not applying:
        return Proposal(file, backend, reg.suite, samples, q, current, proposed, REPORT_ONLY, f"would {action}")
    return Proposal(file, backend, reg.suite, samples, q, current, proposed, action)


@dataclass(frozen=True)
class StageBalance:
    stage: str
    partitions: int
    before_makespan: float
    before_imbalance: float
    after_makespan: float
    after_imbalance: float


def balance(snapshot, proposals: list[Proposal]) -> list[StageBalance]:
    """Each stage's shard makespan and imbalance (max/mean) before and after, by the plan's partitioner."""
    new = {(p.file, p.backend): p.proposed for p in proposals if p.changes or p.action in (RAISE, LOWER)}
    out = []
    for stage in snapshot.config.stages:
        if stage.external:
            continue
        regs = [r for r in snapshot.registrations
                if r.suite == stage.name and r.backend == stage.backend and r.disabled is None]
        if not regs:
            continue
        # `partitions: auto` sizes the stage from its est_time: before and after may differ in count.
        before = stage_shards(stage, ((r.file, r.est_time) for r in regs))[0]
        after = stage_shards(stage, ((r.file, new.get((r.file, r.backend), r.est_time)) for r in regs))[0]
        out.append(StageBalance(stage.key, len(before), makespan(before), imbalance(before),
                                makespan(after), imbalance(after)))
    return out
