"""Raw GitHub Actions job logs -> `FileEvidence` rows.

- In: the text of one job log of a suite runner: sglang-family runners (`End (i/N):`
  blocks followed by `filename='tests/x.py', elapsed=123, estimated_time=300`, final
  `PASSED:`/`FAILED:` lists) and ci-policy's own runner (`Enabled N test(s) ...` with
  the planned files, `[i/N] FILE PASS|FAIL|TIMEOUT elapsed=12.3s est=30s attempt=1`
  lines, the `PASSED (n):`/`FAILED (n):`/`RETRIED (n):`/`NOT RUN (n, ...):` summary).
- Every line loses its GitHub timestamp prefix and ANSI colour codes first;
  `##[group]`/`##[endgroup]`/`::group::`/`::endgroup::` lines are ignored.
- Out: one row per file, with exactly one status: listed under PASSED -> passed (the
  last PASS attempt line's elapsed, else the last End block's); listed under FAILED ->
  timeout if its last attempt line says TIMEOUT or the entry's reason starts with
  "timeout"/"TIMEOUT" (sglang: `(timeout after 1800s)`), else failed; seen in End
  blocks or attempt lines but not in a final summary -> unknown; listed under NOT RUN or
  planned and never seen -> not_run. In a cancelled job (`The operation was canceled.`)
  every file without a final result is cancelled (planned files too, unless a final
  summary was printed before the cancellation).
- File names: a leading `./` is dropped; a name found only in End blocks (sglang prints
  absolute paths there) that ends with `/` + a name of the summary, the plan or an
  attempt line becomes that name.
- Refused: nothing; never raises on any text: a log is evidence, not a configuration; lines that
  mean nothing to this reader are ignored.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ci_policy.adapters.tuning.evidence import FileEvidence, stage_and_shard

NUM = r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"

TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z ?")
ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]+[0-~]|[@-Z\\-_])")
IGNORED_PREFIXES = ("##[group]", "##[endgroup]", "::group::", "::endgroup::")
CANCELLED = "The operation was canceled."

END_RE = re.compile(r"^\s*End \(\s*\d+\s*/\s*\d+\s*\):\s*$")
FILENAME_RE = re.compile(
    r"^\s*filename=(?P<q>['\"])(?P<file>.+?)(?P=q)\s*,\s*elapsed=(?P<elapsed>" + NUM + r")s?"
    r"(?:\s*,\s*_?estimated_time=(?P<est>" + NUM + r"|None))?")
ATTEMPT_RE = re.compile(
    r"^\s*\[\s*\d+\s*/\s*\d+\s*\]\s+(?P<file>\S(?:.*?\S)?)\s+(?P<status>PASS|FAIL|TIMEOUT)"
    r"\s+elapsed=(?P<elapsed>" + NUM + r")s?(?=\s|$)(?P<rest>.*)$")
EST_RE = re.compile(r"(?:^|\s)est=(?P<est>" + NUM + r")s?(?=\s|$)")
ELAPSED_RE = re.compile(r"(?:^|\s)elapsed=(?P<elapsed>" + NUM + r")s?(?=\s|$)")
HEADER_RE = re.compile(r"^\s*(?:[^\w\s]+\s*)?(?P<kind>PASSED|FAILED|RETRIED|NOT RUN)(?:\s*\([^)]*\))?\s*:\s*$")
ENTRY_RE = re.compile(r"^\s*(?:[-*\u2022]\s+)?(?P<file>[^\s:]*[^\s:/]\.py)(?=$|[\s:(,])(?P<rest>.*)$")
TIMEOUT_REASON_RE = re.compile(r"^[\s:,]*\(?\s*timeout\b", re.IGNORECASE)
GATE_FAIL_RE = re.compile(r"^\s*GATE-FAIL\b")
ENABLED_RE = re.compile(r"^\s*Enabled \d+ test\(s\)(?P<rest>.*)$")
FOR_STAGE_RE = re.compile(r"\bfor (?P<stage>\S+) shard (?P<shard>\d{1,9})\b")
PLANNED_RE = re.compile(r"^\s*(?P<file>\S(?:.*?\S)?)\s+\(est\s+(?P<est>" + NUM + r")s?\)\s*$")
RUN_HEADER_RE = re.compile(r"^\s*=+ ci-policy run: (?P<stage>\S+) shard (?P<shard>\d{1,9}) =+\s*$")


def clean_line(raw: str) -> str:
    """A log line without its GitHub timestamp, ANSI codes and trailing CR."""
    line = raw.rstrip("\r")
    line = TIMESTAMP_RE.sub("", line, count=1)
    return ANSI_RE.sub("", line).replace("\x1b", "")


def _number(text: str | None) -> float | None:
    if text is None or text == "None":
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _name(raw: str) -> str:
    name = raw
    while name.startswith("./") and len(name) > 2:
        name = name[2:]
    return name


@dataclass
class _Event:
    kind: str                 # plan | end | attempt | passed | failed | not_run
    name: str
    line: int
    context: tuple            # (stage, shard) of the runner header in force, or (None, None)
    elapsed: float | None = None
    est: float | None = None
    status: str = ""          # attempt lines: PASS | FAIL | TIMEOUT
    rest: str = ""            # summary entries: the text after the file name


@dataclass
class _Scan:
    events: list = field(default_factory=list)
    has_summary: bool = False
    cancelled: bool = False


def _scan(text: str) -> _Scan:
    scan = _Scan()
    context: tuple = (None, None)
    section: str | None = None      # PASSED | FAILED | RETRIED | NOT RUN | plan
    pending_end = False
    raw_lines = text.split("\n")
    if raw_lines and raw_lines[0].startswith("\ufeff"):
        raw_lines[0] = raw_lines[0][1:]
    for lineno, raw in enumerate(raw_lines, start=1):
        line = clean_line(raw)
        if CANCELLED in line:
            scan.cancelled = True
        if line.lstrip().startswith(IGNORED_PREFIXES):
            continue
        if not line.strip():
            section = None
            continue
        if pending_end:
            pending_end = False
            m = FILENAME_RE.match(line)
            if m:
                scan.events.append(_Event("end", _name(m.group("file")), lineno, context,
                                          elapsed=_number(m.group("elapsed")), est=_number(m.group("est"))))
                continue
        if section == "plan":
            m = PLANNED_RE.match(line)
            if m:
                scan.events.append(_Event("plan", _name(m.group("file")), lineno, context,
                                          est=_number(m.group("est"))))
                continue
            section = None
        elif section is not None:
            m = ENTRY_RE.match(line)
            if m:
                if section != "RETRIED":
                    kind = {"PASSED": "passed", "FAILED": "failed", "NOT RUN": "not_run"}[section]
                    rest = m.group("rest")
                    elapsed = ELAPSED_RE.search(rest)
                    est = EST_RE.search(rest)
                    scan.events.append(_Event(kind, _name(m.group("file")), lineno, context,
                                              elapsed=_number(elapsed.group("elapsed")) if elapsed else None,
                                              est=_number(est.group("est")) if est else None, rest=rest))
                continue
            section = None
        m = HEADER_RE.match(line)
        if m:
            section = m.group("kind")
            scan.has_summary = scan.has_summary or section in ("PASSED", "FAILED")
            continue
        m = ENABLED_RE.match(line)
        if m:
            section = "plan"
            where = FOR_STAGE_RE.search(m.group("rest"))
            if where:
                context = (where.group("stage"), int(where.group("shard")))
            continue
        m = RUN_HEADER_RE.match(line)
        if m:
            context = (m.group("stage"), int(m.group("shard")))
            continue
        if END_RE.match(line):
            pending_end = True
            continue
        m = ATTEMPT_RE.match(line)
        if m:
            est = EST_RE.search(m.group("rest"))
            scan.events.append(_Event("attempt", _name(m.group("file")), lineno, context,
                                      elapsed=_number(m.group("elapsed")),
                                      est=_number(est.group("est")) if est else None, status=m.group("status")))
    return scan


def _canonical_names(events: list[_Event]) -> dict[str, str]:
    """End-block names (sglang: absolute paths) -> the longest summary/plan/attempt name they end with."""
    known = {e.name for e in events if e.kind != "end"}
    out = {name: name for name in known}
    for e in events:
        if e.name not in out:
            out[e.name] = next((e.name[i + 1:] for i, ch in enumerate(e.name)
                                if ch == "/" and e.name[i + 1:] in known), e.name)
    return out


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def _row_fields(evs: list[_Event], has_summary: bool, cancelled: bool) -> tuple:
    """(status, elapsed, logged_est, line, note) of one file's events."""
    by = {kind: [e for e in evs if e.kind == kind] for kind in ("plan", "end", "attempt", "passed", "failed",
                                                                 "not_run")}
    attempts, ends = by["attempt"], by["end"]
    timings = sorted(attempts + ends, key=lambda e: e.line)
    last_timing = timings[-1] if timings else None
    last_attempt = attempts[-1] if attempts else None
    attempt_est = next((a.est for a in reversed(attempts) if a.est is not None), None)
    plan_est = by["plan"][-1].est if by["plan"] else None
    end_est = ends[-1].est if ends else None
    notes = []
    tries = len(attempts) if attempts else len(ends)
    if tries > 1:
        notes.append(f"retried: {tries} attempts")

    if by["passed"]:
        entry = by["passed"][-1]
        passes = [a for a in attempts if a.status == "PASS"]
        source = passes[-1] if passes else (ends[-1] if ends else None)
        elapsed = source.elapsed if source is not None else entry.elapsed
        if elapsed is None:
            notes.append("no elapsed time in the log")
        est = _first(source.est if source is not None else None, attempt_est, end_est, plan_est, entry.est)
        return "passed", elapsed, est, entry.line, notes
    if by["failed"]:
        entry = by["failed"][-1]
        timed_out = ((last_attempt is not None and last_attempt.status == "TIMEOUT")
                     or bool(TIMEOUT_REASON_RE.match(entry.rest)))
        if last_attempt is not None and last_attempt.status == "PASS":
            notes.append("the test passed; a metric gate failed" if GATE_FAIL_RE.match(entry.rest)
                         else "listed under FAILED although its last attempt passed")
        elapsed = last_timing.elapsed if last_timing is not None else entry.elapsed
        est = _first(attempt_est, end_est, plan_est, entry.est)
        return ("timeout" if timed_out else "failed"), elapsed, est, entry.line, notes
    if last_timing is not None:
        if cancelled:
            notes.append("job cancelled")
        notes.append("not in the final summary" if has_summary else "no final summary")
        if last_attempt is not None:
            notes.append(f"last attempt: {last_attempt.status}")
        est = _first(attempt_est, end_est, plan_est)
        return ("cancelled" if cancelled else "unknown"), last_timing.elapsed, est, last_timing.line, notes
    if by["not_run"]:
        entry = by["not_run"][-1]
        notes.append("fast-fail")
        return "not_run", None, _first(plan_est, entry.est), entry.line, notes
    planned = by["plan"][-1]
    if cancelled and not has_summary:
        notes.append("job cancelled; no result logged")
        return "cancelled", None, plan_est, planned.line, notes
    if not has_summary:
        notes.append("no final summary")
    return "not_run", None, plan_est, planned.line, notes


def read_log(text: str, *, source: str, run_id: str = "", job_id: str = "",
             job_name: str = "") -> list[FileEvidence]:
    """The rows of one job log, in the order the files first appear in it."""
    scan = _scan(text)
    names = _canonical_names(scan.events)
    per_file: dict[str, list[_Event]] = {}
    for e in scan.events:
        per_file.setdefault(names[e.name], []).append(e)
    job_stage, job_shard = stage_and_shard(job_name) if job_name.strip() else (None, None)
    rows = []
    for file, evs in per_file.items():
        status, elapsed, est, line, notes = _row_fields(evs, scan.has_summary, scan.cancelled)
        stage, shard = next((e.context for e in evs if e.context[0] is not None), (None, None))
        if stage is None:
            stage, shard = job_stage, job_shard
        rows.append(FileEvidence(run_id=run_id, job_id=job_id, job_name=job_name, stage=stage, shard=shard,
                                 file=file, status=status, elapsed=elapsed, logged_est=est, source=source,
                                 line=line, note="; ".join(notes)))
    return rows
