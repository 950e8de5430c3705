"""The metric-history store: baselines for gates, behind one contract, on SQLite or PostgreSQL.

- In: a store URL (`sqlite:///abs/path`, `sqlite:rel/path`, a file path,
  `postgresql://...`), else `$CI_POLICY_DATABASE_URL`, else a default SQLite file.
- Out: `open_store(...)`: an open, migrated `MetricHistoryStore` (see `base` for the
  contract: `baseline`, `write`, `runs`); with `read_only=True` nothing is created or
  migrated: a missing SQLite file, or a database without the metric history schema, is
  `StoreUnavailable` naming the store (a read never invents an empty history).
  `store_kind(url)`: "sqlite" or "postgresql", without opening anything.
- Refused: an unknown scheme, a sqlite URL with a host or without a file (`InputError`);
  a PostgreSQL URL without psycopg installed says what to install.
- Every message shows a URL through `redact_url` (its password replaced by ***).
- psycopg is imported only when a PostgreSQL URL is opened.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ci_policy.adapters.store.base import (
    DUPLICATE,
    NOT_ALLOWED,
    NOT_FIRST_ATTEMPT,
    NOT_TRUSTED,
    WRITTEN,
    MetricHistoryStore,
    RunKey,
    Sample,
    one_line,
    redact_url,
)
from ci_policy.adapters.store.sqlite import SQLiteStore
from ci_policy.errors import InputError, StoreUnavailable

__all__ = ["DATABASE_URL_ENV", "DUPLICATE", "NOT_ALLOWED", "NOT_FIRST_ATTEMPT", "NOT_TRUSTED", "WRITTEN",
           "MetricHistoryStore", "RunKey", "SQLiteStore", "Sample", "open_store", "redact_url", "store_kind"]

DATABASE_URL_ENV = "CI_POLICY_DATABASE_URL"

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")


def open_store(url: str | None, *, default_path: Path, read_only: bool = False) -> MetricHistoryStore:
    """Open the store named by `url`, else `$CI_POLICY_DATABASE_URL`, else SQLite at
    `default_path`: migrated (its parent directories created), or with `read_only` checked
    to hold a metric history, nothing created."""
    if isinstance(url, os.PathLike):
        url = os.fspath(url)
    if not url:
        url = os.environ.get(DATABASE_URL_ENV) or None
    store = _store_for(url, Path(default_path), create=not read_only)
    try:
        if read_only:
            store.check_readable()
        else:
            store.migrate()
    except BaseException:
        store.close()
        raise
    return store


def store_kind(url: str) -> str:
    """"sqlite" or "postgresql" for a store URL or path (what `open_store` would open)."""
    match = _SCHEME.match(url)
    if match is None or len(match.group(1)) == 1:
        return "sqlite"
    scheme = match.group(1).lower()
    return "postgresql" if scheme in ("postgresql", "postgres") else scheme


def _store_for(url: str | None, default_path: Path, *, create: bool) -> MetricHistoryStore:
    if url is None:
        if create:
            try:
                default_path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreUnavailable(f"SQLite metric history {default_path}: cannot create directory "
                                       f"{default_path.parent}: {one_line(exc.strerror or str(exc))}") from exc
        return SQLiteStore(default_path, create=create)
    match = _SCHEME.match(url)
    if match is None or len(match.group(1)) == 1:  # no scheme (or a drive letter): a file path
        return SQLiteStore(url, create=create)
    scheme = match.group(1).lower()
    rest = url[match.end():]
    shown = redact_url(url)
    if scheme == "sqlite":
        if rest.startswith("//"):
            rest = rest[2:]
            if not rest.startswith("/"):
                raise InputError(f"a sqlite URL takes no host: {shown!r}",
                                  hint="write sqlite:///absolute/path or sqlite:relative/path")
        if not rest:
            raise InputError(f"the sqlite URL {shown!r} names no file",
                              hint="write sqlite:///absolute/path or sqlite:relative/path")
        return SQLiteStore(rest, create=create)
    if scheme in ("postgresql", "postgres"):
        try:
            from ci_policy.adapters.store.postgres import PostgresStore
        except ImportError as exc:
            raise InputError(f"a {scheme}:// metric history needs psycopg 3, which is not importable "
                              f"({one_line(str(exc))})",
                              hint="install `ci-policy[postgres]`") from exc
        return PostgresStore(url)
    raise InputError(f"unsupported metric history URL scheme {scheme!r}",
                      hint="use sqlite:///absolute/path, sqlite:relative/path, a file path, "
                           "or postgresql://user@host/database")
