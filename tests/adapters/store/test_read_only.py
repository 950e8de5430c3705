"""Reading a metric history never creates one (`open_store(..., read_only=True)`).

A missing SQLite file, or a PostgreSQL database without the metric history schema, is
`StoreUnavailable` naming the store (password redacted) and is left exactly as it was; a
store with a history opens read-only without migrating, also through a role that may only
read (the credentials a PR job holds).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

import psycopg
import pytest
from store_cases import GRAD, PASSWORD, PASSWORD_IN_URL, key, write

from ci_policy.adapters.store import DATABASE_URL_ENV, Sample, open_store, redact_url, store_kind
from ci_policy.errors import InputError, StoreUnavailable, UsageError

MISSING = "does not exist (a read never creates one; point --store or $CI_POLICY_DATABASE_URL at the shared store)"
NO_HISTORY = "holds no metric history (no baseline was ever written to it; a read never creates one)"


@pytest.fixture(autouse=True)
def _no_database_url(monkeypatch):
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)


def test_a_missing_sqlite_file_is_unavailable_and_not_created(tmp_path):
    path = tmp_path / "history.sqlite"
    for url in (str(path), f"sqlite://{path}"):
        with pytest.raises(StoreUnavailable) as caught:
            open_store(url, default_path=tmp_path / "unused.sqlite", read_only=True)
        assert str(caught.value) == f"SQLite metric history {path}: {MISSING}"
    default = tmp_path / "repo" / ".ci-policy" / "metrics.sqlite"
    with pytest.raises(StoreUnavailable) as caught:
        open_store(None, default_path=default, read_only=True)
    assert str(caught.value) == f"SQLite metric history {default}: {MISSING}"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_empty_sqlite_file_holds_no_history_and_stays_empty(tmp_path):
    path = tmp_path / "history.sqlite"
    path.write_bytes(b"")
    with pytest.raises(StoreUnavailable) as caught:
        open_store(str(path), default_path=tmp_path / "unused.sqlite", read_only=True)
    assert str(caught.value) == f"SQLite metric history {path}: {NO_HISTORY}"
    assert path.read_bytes() == b""


def test_a_sqlite_history_opens_read_only_without_migrating(tmp_path):
    path = str(tmp_path / "history.sqlite")
    with open_store(path, default_path=tmp_path / "unused.sqlite") as store:
        assert write(store, key("1"), [Sample(GRAD, -1, 2.5)]) == "written"
    with open_store(path, default_path=tmp_path / "unused.sqlite", read_only=True) as store:
        assert store.baseline(GRAD, -1, 3) == [2.5]


def test_a_schema_newer_than_this_code_is_refused_on_read(tmp_path):
    path = str(tmp_path / "history.sqlite")
    open_store(path, default_path=tmp_path / "unused.sqlite").close()
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("INSERT INTO schema_migrations (version) VALUES (9)")
    with pytest.raises(InputError) as caught:
        open_store(path, default_path=tmp_path / "unused.sqlite", read_only=True)
    assert caught.value.message == ("the metric history store has schema version 9, newer than the 3 this "
                                    "ci_policy knows")


def test_sqlite_url_errors_never_show_a_password(tmp_path):
    with pytest.raises(UsageError) as caught:
        open_store(f"sqlite://ci:{PASSWORD_IN_URL}@db/h.sqlite", default_path=tmp_path / "unused.sqlite")
    assert caught.value.message == ("is a sqlite URL with a host or user; a sqlite URL names a local file only "
                                    "(the value is not shown: it may hold a password)")


def test_store_kind_and_redact_url():
    assert [store_kind(u) for u in ("h.sqlite", "/abs/h.sqlite", "sqlite:rel.db", "sqlite:///abs.db",
                                    "postgresql://db/m", "POSTGRES://db/m")] == [
        "sqlite", "sqlite", "sqlite", "sqlite", "postgresql", "postgresql"]
    with pytest.raises(UsageError) as caught:
        store_kind("mysql://db/m")
    assert caught.value.message == "unsupported metric history URL scheme 'mysql'"
    assert redact_url(f"postgresql://ci:{PASSWORD_IN_URL}@db/m?password=x&sslmode=require") == (
        "postgresql://ci:***@db/m?password=***&sslmode=require")


def test_a_postgres_database_without_the_schema_is_unavailable_and_left_empty(postgres_database, tmp_path):
    url = postgres_database.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD_IN_URL}@", 1)
    with pytest.raises(StoreUnavailable) as caught:
        open_store(url, default_path=tmp_path / "unused.sqlite", read_only=True)
    assert str(caught.value) == f"PostgreSQL metric history {redact_url(url)}: {NO_HISTORY}"
    assert PASSWORD not in str(caught.value) and PASSWORD_IN_URL not in str(caught.value)
    with psycopg.connect(postgres_database) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)
    assert not (tmp_path / "unused.sqlite").exists()


def test_a_postgres_history_reads_through_a_role_that_may_only_read(postgres_database, tmp_path):
    with open_store(postgres_database, default_path=tmp_path / "unused.sqlite") as store:
        assert write(store, key("1"), [Sample(GRAD, -1, 2.5)]) == "written"
    name = postgres_database.rsplit("/", 1)[1]
    reader = f"reader_{name}"
    with psycopg.connect(postgres_database, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {reader} LOGIN")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}")
    try:
        read_url = postgres_database.replace("postgresql://postgres@", f"postgresql://{reader}@", 1)
        with open_store(read_url, default_path=tmp_path / "unused.sqlite", read_only=True) as store:
            assert store.baseline(GRAD, -1, 3) == [2.5]
            with pytest.raises(StoreUnavailable) as caught:
                write(store, key("2"), [Sample(GRAD, -1, 3.0)])
            assert str(caught.value).startswith(f"PostgreSQL metric history {read_url}: permission denied")
    finally:
        with psycopg.connect(postgres_database, autocommit=True) as conn:
            conn.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {reader}")
            conn.execute(f"DROP ROLE {reader}")
