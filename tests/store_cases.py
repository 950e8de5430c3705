"""Shared by the metric-store tests: a gate identity, run keys, expected run records, raw SQL.

`raw()` reads a store's database directly (SQLite file or PostgreSQL URL), bypassing the
store, to check what the store wrote.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing

from ci_policy.adapters.store import RunKey, SQLiteStore

FILE, BACKEND, SUITE = "tests/e2e/test_fsdp_grpo.py", "cuda", "stage-c-4-gpu-h200"
OTHER_SUITE = "stage-c-8-gpu-h200"
GRAD = (FILE, BACKEND, SUITE, "train/grad_norm", '{"constraint":null,"steps":"last"}')
KL = (FILE, BACKEND, SUITE, "train/ppo_kl", '{"constraint":null,"steps":"all"}')
GRAD_REWRITTEN = (FILE, BACKEND, SUITE, "train/grad_norm", '{"constraint":null,"steps":[3]}')
GRAD_OTHER_SUITE = (FILE, BACKEND, OTHER_SUITE, "train/grad_norm", '{"constraint":null,"steps":"last"}')
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
PASSWORD = "s3cr3t/Pa55@word"
PASSWORD_IN_URL = "s3cr3t%2FPa55%40word"


def key(run_id: str, attempt: int = 1, suite: str = SUITE) -> RunKey:
    return RunKey(run_id, attempt, FILE, BACKEND, suite)


def write(store, run: RunKey, samples, *, trusted: bool = True, write_baseline: bool = True,
          cadence: str = "nightly", commit: str | None = "abc123") -> str:
    return store.write(run, cadence=cadence, commit=commit, trusted=trusted, samples=samples,
                       write_baseline=write_baseline)


def row(run_id: str, attempt: int, outcome: str, samples: int, *, suite: str = SUITE, trusted: bool = True,
        write_baseline: bool = True, cadence: str = "nightly", commit: str | None = "abc123") -> dict:
    return {"run_id": run_id, "run_attempt": attempt, "file": FILE, "backend": BACKEND, "suite": suite,
            "cadence": cadence, "commit": commit, "trusted": trusted, "write_baseline": write_baseline,
            "outcome": outcome, "samples": samples}


def runs(store) -> list[dict]:
    """`store.runs()` with `recorded_at` checked for its format and then dropped."""
    out = store.runs()
    for record in out:
        assert TIMESTAMP.fullmatch(record.pop("recorded_at"))
    return out


def raw(url: str, sql: str, params: tuple = ()) -> list[tuple]:
    """Run one statement on the store's database directly, bypassing the store."""
    if url.startswith("sqlite:"):
        with closing(sqlite3.connect(url[len("sqlite://"):], isolation_level=None)) as conn:
            return conn.execute(sql, params).fetchall()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql.replace("?", "%s"), params or None)
        return cur.fetchall() if cur.description is not None else []


def unmigrated(url: str):
    if url.startswith("sqlite:"):
        return SQLiteStore(url[len("sqlite://"):])
    from ci_policy.adapters.store.postgres import PostgresStore

    return PostgresStore(url)
