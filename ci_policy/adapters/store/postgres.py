"""The metric-history store on PostgreSQL (psycopg 3), for history shared by many runners.

- In: a `postgresql://` or `postgres://` URL (libpq's URI syntax, options in the query).
- Out: a `MetricHistoryStore` with the same behaviour as `SQLiteStore` (the contract's logic
  lives in `base._SQLStore`; this module supplies the dialect and the transactions).
- Transactions: one per call, on an autocommit connection; writes of the same
  (run_id, file, backend, suite) are serialised with `pg_advisory_xact_lock`, migrations with
  a store-wide advisory lock; inserts use `ON CONFLICT DO NOTHING`.
- Refused: a URL psycopg cannot parse, as an `InputError` naming it with its password redacted.
- Failures: `connect_timeout` (default 10 s) and TCP keepalives unless the URL sets them, a
  `lock_timeout`; every psycopg error becomes `StoreUnavailable` naming the URL with its
  password replaced by *** (wherever it stands in the URL). A broken connection is replaced on the next call.
- Adapter: imported only by `open_store` (the package's `__init__`) when a PostgreSQL URL
  is opened.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ci_policy.adapters.store.base import (
    Dialect,
    _SQLStore,
    _Tx,
    lock_key,
    migrations,
    one_line,
    redact_url,
    schema_migrations_ddl,
    url_secrets,
)
from ci_policy.errors import InputError, StoreUnavailable

MIGRATION_LOCK = 0x63695F706F6C6963  # "ci_polic": one bigint key for the whole store
WRITE_LOCK_NAMESPACE = 0x63695F77  # "ci_w": (namespace, key) pairs for run groups

POSTGRES = Dialect(
    identity="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    reference="BIGINT",
    flag="BOOLEAN NOT NULL",
    timestamp="TIMESTAMPTZ NOT NULL DEFAULT now()",
    finite_real="DOUBLE PRECISION NOT NULL CHECK ({name} NOT IN ('NaN', 'Infinity', '-Infinity'))",
)


def _scrub(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:  # longest first (`url_secrets`)
        text = text.replace(secret, "***")
    return text


class _PostgresTx(_Tx):
    def __init__(self, cur: psycopg.Cursor) -> None:
        self.cur = cur

    @staticmethod
    def _sql(sql: str) -> str:
        return sql.replace("?", "%s")

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        self.cur.execute(self._sql(sql), tuple(params) or None)
        return self.cur.fetchall() if self.cur.description is not None else []

    def run(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.cur.execute(self._sql(sql), tuple(params) or None)

    def run_many(self, sql: str, params: Sequence[Sequence[Any]]) -> None:
        self.cur.executemany(self._sql(sql), [tuple(p) for p in params])

    def insert_id(self, sql: str, params: Sequence[Any]) -> int | None:
        self.cur.execute(self._sql(sql) + " RETURNING id", tuple(params))
        row = self.cur.fetchone()
        return None if row is None else int(row[0])


class PostgresStore(_SQLStore):
    """A metric history in a PostgreSQL database shared by every runner."""

    MIGRATIONS = migrations(POSTGRES)
    SCHEMA_MIGRATIONS_DDL = schema_migrations_ddl(POSTGRES)

    def __init__(self, url: str, *, connect_timeout: int = 10, lock_timeout: float = 30.0) -> None:
        self._secrets = url_secrets(url)
        # The password may also stand elsewhere in the URL (another option's value): scrubbed too.
        self.safe_url = _scrub(redact_url(url), self._secrets)
        try:
            params = conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise InputError(f"invalid PostgreSQL URL {self.safe_url}: {one_line(str(exc), self._secrets)}") from exc
        self._secrets = url_secrets(url, params)
        self.safe_url = _scrub(self.safe_url, self._secrets)
        self._url = url
        self._kwargs: dict[str, Any] = {}
        defaults = {"connect_timeout": int(connect_timeout), "keepalives": 1, "keepalives_idle": 30,
                    "keepalives_interval": 10, "keepalives_count": 3}
        for name, value in defaults.items():
            if name not in params:
                self._kwargs[name] = value
        self.lock_timeout = float(lock_timeout)
        self._conn: psycopg.Connection | None = None
        self._closed = False

    TABLE_EXISTS_SQL = "SELECT 1 WHERE to_regclass(?::text) IS NOT NULL"

    def __repr__(self) -> str:
        return f"PostgresStore({self.safe_url!r})"

    def _name(self) -> str:
        return f"PostgreSQL metric history {self.safe_url}"

    def _message(self, exc: BaseException) -> str:
        diag = getattr(exc, "diag", None)
        primary = getattr(diag, "message_primary", None) if diag is not None else None
        sqlstate = getattr(diag, "sqlstate", None) if diag is not None else None
        # A server-side error: its primary message (the rest repeats the SQL); else libpq's text.
        reason = f"{primary} (SQLSTATE {sqlstate})" if primary and sqlstate else str(exc)
        return f"PostgreSQL metric history {self.safe_url}: {one_line(reason, self._secrets)}"

    def _connection(self) -> psycopg.Connection:
        if self._closed:
            raise StoreUnavailable(f"PostgreSQL metric history {self.safe_url}: the store is closed")
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        self._conn = None
        if conn is not None:
            try:
                conn.close()
            except psycopg.Error:
                pass
        # No server-side prepared statements: they break behind a transaction-pooling PgBouncer.
        conn = psycopg.connect(self._url, autocommit=True, prepare_threshold=None, **self._kwargs)
        try:
            conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(self.lock_timeout * 1000)}ms",))
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    @contextmanager
    def _transaction(self, kind: str, lock: tuple[str, ...] | None = None) -> Iterator[_Tx]:
        try:
            conn = self._connection()
            with conn.transaction():
                cur = conn.cursor()
                if kind == "migrate":
                    cur.execute("SELECT pg_advisory_xact_lock(%s::bigint)", (MIGRATION_LOCK,))
                elif lock is not None:
                    cur.execute("SELECT pg_advisory_xact_lock(%s::integer, %s::integer)",
                                (WRITE_LOCK_NAMESPACE, lock_key(lock)))
                yield _PostgresTx(cur)
        except psycopg.Error as exc:
            raise StoreUnavailable(self._message(exc)) from exc

    @staticmethod
    def _timestamp(value: object) -> str:
        if isinstance(value, datetime):
            value = value.astimezone(timezone.utc)
            return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
        return str(value)

    def close(self) -> None:
        self._closed = True
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                conn.close()
            except psycopg.Error:
                pass
