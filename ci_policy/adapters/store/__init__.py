"""The metric-history store: baselines for gates, behind one contract, on SQLite or PostgreSQL.

- In: a store location, else `$CI_POLICY_DATABASE_URL`, else the default SQLite file
  (`default_store_path`). `parse_location` accepts exactly: a `postgresql://` or
  `postgres://` URL that parses as a URL (libpq's URI syntax); `sqlite:///abs/path` or
  `sqlite:rel/path` (no host, no user, no `@`, `?` or `=`); a file path without a scheme
  that ends in `.sqlite`, `.sqlite3` or `.db` and holds no `=`, `@` or whitespace.
- Refused (`UsageError`, exit 2) and never echoed, since it may hold a password:
  anything else, e.g. a libpq keyword string (`host=... password=...`), a malformed URL
  (`postgresql://ci:pw@[::1/db`), a sqlite URL with a host or user
  (`sqlite://user:pw@host/x.db`); an unknown scheme is named, nothing else of the value.
- The default store lives outside any checkout: `$XDG_STATE_HOME/ci-policy/<repo>-<hash>/
  metrics.sqlite` (else `~/.local/state/...`), keyed by the checkout's real path; a
  symbolic link on its path below the state directory (`ci-policy/`, the key directory,
  the file) makes it `StoreUnavailable`. A `.ci-policy/metrics.sqlite` in a checkout (a
  pull request can add one) is never read.
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

import hashlib
import os
import re
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

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
from ci_policy.errors import InputError, StoreUnavailable, UsageError

__all__ = ["DATABASE_URL_ENV", "DUPLICATE", "NOT_ALLOWED", "NOT_FIRST_ATTEMPT", "NOT_TRUSTED", "WRITTEN",
           "MetricHistoryStore", "RunKey", "SQLiteStore", "Sample", "StoreLocation", "default_store_path",
           "open_store", "parse_location", "redact_url", "store_kind"]

DATABASE_URL_ENV = "CI_POLICY_DATABASE_URL"

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")


_NOT_SHOWN = "(the value is not shown: it may hold a password)"
_FORMS = ("postgresql://USER@HOST[:PORT]/DATABASE, sqlite:///absolute/path.sqlite, sqlite:relative/path.sqlite, "
          "or a file path ending in .sqlite, .sqlite3 or .db")
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")


class StoreLocation(NamedTuple):
    kind: str  # "sqlite" or "postgresql"
    target: str  # the SQLite file path, or the PostgreSQL URL


def parse_location(text: str, source: str = "--store") -> StoreLocation:
    """The store `text` names, by the forms of the module docstring; else a `UsageError` for
    `source` (the option or variable it came from) that never repeats `text`."""
    def refuse(why: str, hint: str = f"write {_FORMS}") -> UsageError:
        return UsageError(f"{why} {_NOT_SHOWN}", source=source, hint=hint)

    if not isinstance(text, str) or not text:
        raise refuse("is empty")
    odd = any(ch.isspace() or not ch.isprintable() for ch in text)
    match = _SCHEME.match(text)
    if match is None or len(match.group(1)) == 1:  # no scheme (or a drive letter): a file path
        if odd or "=" in text or "@" in text or not text.lower().endswith(SQLITE_SUFFIXES):
            raise refuse("is neither a store URL nor a SQLite file path (a path ends in .sqlite, .sqlite3 or .db "
                         "and holds no '=', '@', whitespace or control characters; a libpq keyword string "
                         "is not accepted)")
        return StoreLocation("sqlite", text)
    if odd:
        raise refuse("is not a valid URL: it holds whitespace or control characters")
    scheme = match.group(1).lower()
    rest = text[match.end():]
    if scheme == "sqlite":
        if rest.startswith("//"):
            rest = rest[2:]
            if not rest.startswith("/"):
                raise refuse("is a sqlite URL with a host or user; a sqlite URL names a local file only",
                             hint="write sqlite:///absolute/path.sqlite or sqlite:relative/path.sqlite")
        if not rest:
            raise refuse("is a sqlite URL that names no file",
                         hint="write sqlite:///absolute/path.sqlite or sqlite:relative/path.sqlite")
        if any(ch in rest for ch in "@?="):
            raise refuse("is a sqlite URL with '@', '?' or '='; a sqlite URL names a local file only",
                         hint="write sqlite:///absolute/path.sqlite or sqlite:relative/path.sqlite")
        return StoreLocation("sqlite", rest)
    if scheme in ("postgresql", "postgres"):
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
            parts.hostname  # noqa: B018
        except ValueError:
            raise refuse(f"is not a valid {scheme}:// URL",
                         hint="write postgresql://USER@HOST[:PORT]/DATABASE, with reserved characters of "
                              "the password percent-encoded (or the password in $PGPASSWORD or ~/.pgpass)") from None
        if not rest.startswith("//"):
            raise refuse(f"is not a valid {scheme}:// URL (no // after the scheme)",
                         hint="write postgresql://USER@HOST[:PORT]/DATABASE")
        return StoreLocation("postgresql", text)
    if not rest.startswith("//") or len(scheme) > 20:  # `user:password@host`: the "scheme" may be a user name
        raise refuse("is neither a store URL nor a SQLite file path")
    raise UsageError(f"unsupported metric history URL scheme {scheme!r}", source=source, hint=f"write {_FORMS}")


def default_store_path(repo: Path) -> Path:
    """The default SQLite store of the checkout `repo`: outside it, in the user's state directory."""
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    real = os.path.realpath(repo)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(real))[:40] or "repo"
    key = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return base / "ci-policy" / f"{name}-{key}" / "metrics.sqlite"


def _refuse_symlinks(path: Path) -> None:
    """No symbolic link from the state directory's `ci-policy/` down to the file."""
    for part in (path.parent.parent, path.parent, path):
        if os.path.islink(part):
            raise StoreUnavailable(f"SQLite metric history {path}: {part} is a symbolic link; the default "
                                   "metric store refuses symbolic links on its path")


def open_store(url: str | None, *, default_path: Path, read_only: bool = False,
               source: str = "--store") -> MetricHistoryStore:
    """Open the store named by `url`, else `$CI_POLICY_DATABASE_URL`, else SQLite at
    `default_path` (symlinks on its path refused): migrated (its parent directories created),
    or with `read_only` checked to hold a metric history, nothing created."""
    if isinstance(url, os.PathLike):
        url = os.fspath(url)
    if not url:
        url = os.environ.get(DATABASE_URL_ENV) or None
        source = f"${DATABASE_URL_ENV}"
    store = _store_for(url, Path(default_path), create=not read_only, source=source)
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
    """"sqlite" or "postgresql" for a store URL or path (what `open_store` would open);
    raises `UsageError` as `parse_location` does."""
    return parse_location(url).kind


def _store_for(url: str | None, default_path: Path, *, create: bool, source: str) -> MetricHistoryStore:
    if url is None:
        _refuse_symlinks(default_path)
        if create:
            try:
                default_path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreUnavailable(f"SQLite metric history {default_path}: cannot create directory "
                                       f"{default_path.parent}: {one_line(exc.strerror or str(exc))}") from exc
            _refuse_symlinks(default_path)
        return SQLiteStore(default_path, create=create)
    location = parse_location(url, source)
    if location.kind == "sqlite":
        return SQLiteStore(location.target, create=create)
    try:
        # psycopg is optional: test_without_psycopg_a_postgres_url_says_what_to_install
        from ci_policy.adapters.store.postgres import PostgresStore
    except ImportError as exc:
        scheme = url.split(":", 1)[0].lower()
        raise InputError(f"a {scheme}:// metric history needs psycopg 3, which is not importable "
                          f"({one_line(str(exc))})",
                          hint="install `ci-policy[postgres]`") from exc
    return PostgresStore(location.target)
