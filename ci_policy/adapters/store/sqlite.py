"""The metric-history store in one SQLite file, for a single runner or a shared disk.

- In: a file path (its directory must exist); `create=False` refuses a missing file
  instead of creating an empty one (reads never create a store).
- Out: a `MetricHistoryStore` (the contract's logic lives in `base._SQLStore`; this module
  supplies the dialect and the transactions).
- Transactions: WAL mode, a busy timeout (default 30 s), `BEGIN IMMEDIATE` for writes and
  migrations so parallel writers serialise instead of failing half-way.
- Refused: as `StoreUnavailable` naming the file: a missing file with `create=False`, a missing
  directory, a directory in the file's place, a locked or corrupt file. Standard library only.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ci_policy.adapters.store.base import Dialect, _SQLStore, _Tx, migrations, one_line, schema_migrations_ddl
from ci_policy.errors import StoreUnavailable

_FLOAT_MAX = "1.7976931348623157e308"
SQLITE = Dialect(
    identity="INTEGER PRIMARY KEY AUTOINCREMENT",
    reference="INTEGER",
    flag="INTEGER NOT NULL CHECK ({name} IN (0, 1))",
    timestamp="TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
    # SQLite stores NaN as NULL and has no infinity literal: a range check refuses both.
    finite_real=f"REAL NOT NULL CHECK ({{name}} BETWEEN -{_FLOAT_MAX} AND {_FLOAT_MAX})",
)


class _SQLiteTx(_Tx):
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.conn.execute(sql, tuple(params)).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.conn.execute(sql, tuple(params))

    def run_many(self, sql: str, params: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, params)

    def insert_id(self, sql: str, params: Sequence[Any]) -> int | None:
        cur = self.conn.execute(sql, tuple(params))
        return cur.lastrowid if cur.rowcount == 1 else None


class SQLiteStore(_SQLStore):
    """A metric history in one SQLite file: WAL mode, a busy timeout, `BEGIN IMMEDIATE` writes."""

    MIGRATIONS = migrations(SQLITE)
    SCHEMA_MIGRATIONS_DDL = schema_migrations_ddl(SQLITE)

    def __init__(self, path: os.PathLike | str, *, busy_timeout: float = 30.0, create: bool = True) -> None:
        self.path = Path(os.path.abspath(os.fspath(path)))
        self.busy_timeout = float(busy_timeout)
        self._conn: sqlite3.Connection | None = None
        if not create and not self.path.exists():
            # sqlite3.connect would create an empty file: a read must not invent a history.
            raise StoreUnavailable(f"SQLite metric history {self.path}: does not exist (a read never creates "
                                   "one; point --store or $CI_POLICY_DATABASE_URL at the shared store)")
        parent = self.path.parent
        if not parent.is_dir():
            existing = next(p for p in (parent, *parent.parents) if p.exists())
            why = (f"{existing} is not a directory" if not existing.is_dir()
                   else f"directory {parent} does not exist")
            raise StoreUnavailable(f"SQLite metric history {self.path}: {why}")
        if self.path.is_dir():
            raise StoreUnavailable(f"SQLite metric history {self.path}: it is a directory")
        try:
            conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreUnavailable(self._message(exc)) from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            if create:  # switching to WAL writes the file: a read leaves it as it is
                self._enable_wal(conn)
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            conn.close()
            raise StoreUnavailable(self._message(exc)) from exc
        self._conn = conn

    TABLE_EXISTS_SQL = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    def _name(self) -> str:
        return f"SQLite metric history {self.path}"

    def _enable_wal(self, conn: sqlite3.Connection) -> None:
        """Switch to WAL; the switch reports "locked" at once, without the busy handler, while
        another process opens the new file, so it is retried until the busy timeout."""
        deadline = time.monotonic() + self.busy_timeout
        pause = 0.005
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL").fetchone()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def _message(self, exc: BaseException) -> str:
        reason = one_line(str(exc))
        if "locked" in reason or "busy" in reason:
            reason += f" (still locked after {self.busy_timeout:g} s)"
        return f"SQLite metric history {self.path}: {reason}"

    @contextmanager
    def _transaction(self, kind: str, lock: tuple[str, ...] | None = None) -> Iterator[_Tx]:
        conn = self._conn
        if conn is None:
            raise StoreUnavailable(f"SQLite metric history {self.path}: the store is closed")
        try:
            # IMMEDIATE takes the write lock up front (waiting up to the busy timeout), so a
            # writer never fails half-way on a lock upgrade and parallel writers serialise.
            conn.execute("BEGIN" if kind == "read" else "BEGIN IMMEDIATE")
            try:
                yield _SQLiteTx(conn)
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            try:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise StoreUnavailable(self._message(exc)) from exc

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()
