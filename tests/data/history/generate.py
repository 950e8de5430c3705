"""Writes tests/data/history/runs/, the synthetic test history `ci-policy report`'s goldens are made of.

Six weeks of nightly runs (2026-10-19 to 2026-11-29, run ids 7000 + day) and three runs before
them (outside a six-week window), as `ci-policy run` writes its JSONL timing records, one
`run-<id>/timings.jsonl` per run (the layout of downloaded run artifacts):

- gpu-a, two shards: tests/e2e/test_train.py (steady, one infrastructure failure on day 30 that
  no retry passed), tests/e2e/test_ckpt.py (a slow drift: 5 s longer each day, from its est_time
  of 300 s), tests/e2e/test_rollout.py (fails and passes on its retry every fifth day);
- gpu-b: tests/e2e/test_eval.py (fails without a retry on day 20, whose commit a re-run, run 7100,
  passes: flaky on the same commit), tests/e2e/test_server.py (times out and passes on its retry
  every seventh day);
- gpu-c: tests/e2e/test_multi_node.py, on weekdays only (the plan skips the stage at weekends).

Each nightly run and a pull request run each weekday (run ids 8000 + day, no timing records: a
pull request run never writes a store) also leave their plan artifact,
`run-<id>/ci-policy-plan-1/plan.json` and the `run.json` the plan job writes beside it: the plan's
accelerator hours with the accelerators of tests/data/history/checkout (gpu-a 1800 s on 8 GPUs,
gpu-b 180 s on 2, gpu-c 1800 s on 1). The pull requests take turns: docs only (every stage
pruned by the diff), a code change to gpu-b (gpu-a pruned by the diff, gpu-c held for its label)
and a fork's (every stage held for trust). The importer reads a plan's event and
`accelerator_hours` only, so these plans hold just those.

Run `python tests/data/history/generate.py` after changing it; the output is deterministic, and
tests/cli/test_report.py checks the files hold what it writes.
"""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIRST = datetime.date(2026, 10, 19)
START = datetime.time(2, 0, 0)


def _record(file: str, stage: str, shard: int, attempt: int, status: str, elapsed: float, est: float,
            kind: str | None, started: datetime.datetime, commit: str, run_id: str) -> dict:
    return {"schema": 1, "file": file, "stage": stage, "shard": shard, "attempt": attempt, "status": status,
            "elapsed": round(elapsed, 3), "est_time": est, "failure_kind": kind,
            "retriable": None if kind is None else kind != "unknown",
            "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"), "commit": commit, "run_id": run_id,
            "run_attempt": "1"}


def _shard(stage: str, shard: int, tests: list[tuple[str, float, list[tuple[str, float, str | None]]]],
           day: datetime.date, commit: str, run_id: str, hour: int = 2) -> list[dict]:
    """`tests`: (file, est_time, its attempts as (status, elapsed, failure kind)), run one after another."""
    at = datetime.datetime.combine(day, START.replace(hour=hour))
    out = []
    for file, est, attempts in tests:
        for n, (status, elapsed, kind) in enumerate(attempts, start=1):
            out.append(_record(file, stage, shard, n, status, elapsed, est, kind, at, commit, run_id))
            at += datetime.timedelta(seconds=round(elapsed))
    return out


def run_records(i: int) -> list[dict]:
    """The records of the nightly run of day `i` (0: 2026-10-19)."""
    day = FIRST + datetime.timedelta(days=i)
    run_id, commit = str(7000 + i), f"c{i + 100:04d}"
    train = ([("fail", 45.0, "infra")] if i == 30 else [("pass", 600 * (0.97 + 0.01 * (i % 5)), None)])
    rollout = [("pass", 880.0 + (i % 3) * 15, None)]
    if i % 5 == 2:
        rollout = [("fail", 400.0, "flaky"), *rollout]
    server = [("pass", 55.0 + i % 6, None)]
    if i % 7 == 3:
        server = [("timeout", 60.0, "timeout"), *server]
    evaluate = [("fail", 30.0, "unknown")] if i == 20 else [("pass", 118.0 + i % 4, None)]
    records = _shard("gpu-a", 0, [("tests/e2e/test_train.py", 600, train),
                                  ("tests/e2e/test_ckpt.py", 300, [("pass", 300.0 + 5 * max(i, 0), None)])],
                     day, commit, run_id)
    records += _shard("gpu-a", 1, [("tests/e2e/test_rollout.py", 900, rollout)], day, commit, run_id)
    records += _shard("gpu-b", 0, [("tests/e2e/test_eval.py", 120, evaluate),
                                   ("tests/e2e/test_server.py", 60, server)], day, commit, run_id)
    if day.weekday() < 5:
        records += _shard("gpu-c", 0, [("tests/e2e/test_multi_node.py", 1800,
                                        [("pass", 1750.0 + (i % 4) * 20, None)])], day, commit, run_id)
    return records


def runs() -> dict[str, list[dict]]:
    """run id -> its records."""
    out = {str(7000 + i): run_records(i) for i in range(-3, 42)}
    # Day 20's commit again (a re-run dispatched by hand): gpu-b passes.
    day = FIRST + datetime.timedelta(days=20)
    out["7100"] = _shard("gpu-b", 0, [("tests/e2e/test_eval.py", 120, [("pass", 119.0, None)]),
                                      ("tests/e2e/test_server.py", 60, [("pass", 57.0, None)])],
                         day, "c0120", "7100", hour=9)
    return out


# stage -> (est_time of its files in seconds, GPUs per runner, its accelerators entry, cost per hour)
STAGES = {"gpu-a": (1800, 8, 0, 24.0), "gpu-b": (180, 2, 1, 6.5), "gpu-c": (1800, 1, None, None)}
PULL_REQUESTS = ({"gpu-a": "diff", "gpu-b": "diff", "gpu-c": "diff"},
                 {"gpu-a": "diff", "gpu-b": None, "gpu-c": "labels"},
                 {"gpu-a": "trust", "gpu-b": "trust", "gpu-c": "trust"})


def _plan(event: str, skips: dict[str, str | None]) -> dict:
    """A plan document's event and accelerator_hours; `skips`: stage -> its skip group, None: scheduled."""
    stages, scheduled, skipped, costs = [], 0.0, {}, [0.0, 0.0]
    for stage, (seconds, gpus, entry, cost) in STAGES.items():
        hours, why = seconds * gpus / 3600, skips[stage]
        stages.append({"stage": stage, "gpus": gpus, "entry": entry, "cost_per_hour": cost,
                       "scheduled_hours": 0.0 if why else hours, "skipped_hours": {why: hours} if why else {}})
        if why:
            skipped[why] = skipped.get(why, 0.0) + hours
        else:
            scheduled += hours
        costs[bool(why)] += seconds / 3600 * (cost or 0.0)
    return {"schema": 1, "event": event, "accelerator_hours": {
        "scheduled_hours": scheduled, "skipped_hours": skipped, "scheduled_cost": costs[0],
        "skipped_cost": costs[1], "stages": stages}}


def plans() -> dict[str, tuple[dict, dict]]:
    """run id -> (its plan, its run.json)."""
    out = {}
    for i in range(-3, 42):
        day = FIRST + datetime.timedelta(days=i)
        created = datetime.datetime.combine(day, START.replace(hour=1, minute=55))
        nightly = {"gpu-a": None, "gpu-b": None, "gpu-c": None if day.weekday() < 5 else "cadence"}
        out[str(7000 + i)] = (_plan("schedule", nightly), {
            "run_id": str(7000 + i), "run_attempt": 1, "commit": f"c{i + 100:04d}",
            "created": created.strftime("%Y-%m-%dT%H:%M:%SZ")})
        if day.weekday() < 5:
            created = created.replace(hour=14)
            out[str(8000 + i)] = (_plan("pull_request", PULL_REQUESTS[i % 3]), {
                "run_id": str(8000 + i), "run_attempt": 1, "commit": f"p{i + 100:04d}",
                "created": created.strftime("%Y-%m-%dT%H:%M:%SZ")})
    return out


def files() -> dict[str, str]:
    """Relative path under tests/data/history -> text."""
    out = {f"runs/run-{run_id}/timings.jsonl": "".join(json.dumps(r) + "\n" for r in records)
           for run_id, records in sorted(runs().items())}
    for run_id, (plan, run) in sorted(plans().items()):
        out[f"runs/run-{run_id}/ci-policy-plan-1/plan.json"] = json.dumps(plan, indent=2) + "\n"
        out[f"runs/run-{run_id}/ci-policy-plan-1/run.json"] = json.dumps(run) + "\n"
    return out


def main() -> None:
    shutil.rmtree(HERE / "runs", ignore_errors=True)
    for rel, text in files().items():
        path = HERE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
