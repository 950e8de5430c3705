"""Evidence out: the CSV of every (run, job, file) row and the proposal summary.

- In: `FileEvidence` rows, `Proposal`s and `StageBalance`s.
- Out: CSV text with the columns `run_id,job_id,job_name,stage,shard,test_file,status,
  elapsed_s,logged_est_s,current_est_s,proposed_est_s,action,source,line,note,origin`
  (`source`/`line` cite the record or log line each row came from, `origin` the evidence:
  `local`, or the run's event and branch), and a text summary:
  per file `samples, q, current -> proposed, action`; per stage the estimated shard
  makespan and imbalance (max/mean) before and after.
- Refused: nothing: it formats rows and proposals already read and checked.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

from ci_policy.adapters.tuning.evidence import FileEvidence
from ci_policy.adapters.tuning.propose import Proposal, StageBalance
from ci_policy.render.durations import duration
from ci_policy.render.text import table

COLUMNS = ("run_id", "job_id", "job_name", "stage", "shard", "test_file", "status", "elapsed_s",
           "logged_est_s", "current_est_s", "proposed_est_s", "action", "source", "line", "note", "origin")


def _n(value) -> str:
    """A number as written: 600.0 -> "600", 1800.312 -> "1800.312" (never rounded to 6 digits like :g)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)
    return str(value)


def csv_text(evidence: Iterable[FileEvidence], proposals: list[Proposal], backend_of, counted=None) -> str:
    """`counted`: the rows the proposals used (see propose.deduplicate); others are noted."""
    by_key = {(p.file, p.backend): p for p in proposals}
    counted_ids = None if counted is None else {id(r) for r in counted}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in evidence:
        p = by_key.get((row.file, backend_of(row))) or by_key.get((row.file, "?"))
        fields = [row.run_id, row.job_id, row.job_name, row.stage or "", _n(row.shard), row.file,
                  row.status, _n(row.elapsed), _n(row.logged_est), _n(p.current if p else None),
                  _n(p.proposed if p else None), p.action if p else "", row.source, row.line,
                  "; ".join(x for x in (row.note, p.reason if p else "",
                                        "" if counted_ids is None or id(row) in counted_ids
                                        else "also in the timing records; counted once") if x),
                  row.origin]
        # csv quotes \n but not a lone \r, which would split the row for most readers.
        writer.writerow([str(f).replace("\r", " ") for f in fields])
    return out.getvalue()


def summary_text(proposals: list[Proposal], balances: list[StageBalance]) -> str:
    rows: list[tuple[str, ...]] = [("FILE", "BACKEND", "SAMPLES", "Q", "CURRENT -> PROPOSED", "ACTION", "REASON")]
    for p in proposals:
        change = f"{_n(p.current)} -> {_n(p.proposed)}" if p.proposed is not None else f"{_n(p.current) or '-'}"
        rows.append((p.file, p.backend, str(len(p.samples)), _n(p.q) or "-", change, p.action, p.reason))
    lines = [table(rows, right={2, 3})]
    if balances:
        lines.append("")
        rows = [("STAGE", "SHARDS", "MAKESPAN BEFORE", "IMBALANCE BEFORE", "MAKESPAN AFTER", "IMBALANCE AFTER")]
        for b in balances:
            rows.append((b.stage, str(b.partitions), duration(b.before_makespan), f"{b.before_imbalance:.2f}",
                         duration(b.after_makespan), f"{b.after_imbalance:.2f}"))
        lines.append(table(rows, right={1, 2, 3, 4, 5}))
    counts: dict[str, int] = {}
    for p in proposals:
        counts[p.action] = counts.get(p.action, 0) + 1
    lines.append("")
    lines.append("ci-policy tune: " + (", ".join(f"{n} {a}" for a, n in sorted(counts.items())) or "no evidence"))
    return "\n".join(lines)
