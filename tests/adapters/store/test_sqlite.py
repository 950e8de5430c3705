"""The SQLite store (`adapters/store/sqlite.py`): the URL forms it opens, and its real faults.

Faults are real: a missing directory, a regular file in the way, a path no file can be
created at, a file that is not a database, a lock held past the busy timeout.
"""

from __future__ import annotations

import sqlite3
import time

import pytest
from store_cases import GRAD, key, raw, write

from ci_policy.adapters.store import DATABASE_URL_ENV, Sample, SQLiteStore, open_store
from ci_policy.errors import StoreUnavailable

# -- open_store -----------------------------------------------------------------------------------

def test_open_store_sqlite_forms(tmp_path, monkeypatch):
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rel").mkdir()
    default = tmp_path / "default" / "history.db"
    cases = [(f"sqlite://{tmp_path}/abs.db", tmp_path / "abs.db"),
             ("sqlite:rel/relative.db", tmp_path / "rel" / "relative.db"),
             (str(tmp_path / "plain.db"), tmp_path / "plain.db"),
             ("rel/plain.db", tmp_path / "rel" / "plain.db")]
    for url, path in cases:
        with open_store(url, default_path=default) as opened:
            assert type(opened) is SQLiteStore
            assert opened.path == path
            assert opened.schema_versions() == [1, 2, 3]
        assert raw(f"sqlite://{path}", "PRAGMA journal_mode") == [("wal",)]
    assert not default.parent.exists()


def test_open_store_falls_back_to_the_environment_then_the_default_path(tmp_path, monkeypatch):
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    default = tmp_path / "a" / "b" / "history.db"
    with open_store(None, default_path=default) as opened:
        assert opened.path == default
    assert default.is_file()
    monkeypatch.setenv(DATABASE_URL_ENV, f"sqlite://{tmp_path}/from-env.db")
    with open_store(None, default_path=default) as opened:
        assert opened.path == tmp_path / "from-env.db"
    with open_store(str(tmp_path / "explicit.db"), default_path=default) as opened:
        assert opened.path == tmp_path / "explicit.db"
    monkeypatch.setenv(DATABASE_URL_ENV, "")
    with open_store(None, default_path=default) as opened:
        assert opened.path == default


# -- faults: SQLite -------------------------------------------------------------------------------

def test_sqlite_in_a_missing_directory_is_unavailable(tmp_path):
    path = tmp_path / "missing" / "history.db"
    with pytest.raises(StoreUnavailable) as err:
        open_store(f"sqlite://{path}", default_path=tmp_path / "unused.db")
    assert str(err.value) == f"SQLite metric history {path}: directory {path.parent} does not exist"
    assert not path.parent.exists()


def test_sqlite_below_a_regular_file_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory\n")
    path = blocker / "deeper" / "history.db"
    with pytest.raises(StoreUnavailable) as err:
        open_store(str(path), default_path=tmp_path / "unused.db")
    assert str(err.value) == f"SQLite metric history {path}: {blocker} is not a directory"
    with pytest.raises(StoreUnavailable) as err:
        open_store(None, default_path=path)
    assert str(err.value) == (f"SQLite metric history {path}: cannot create directory {path.parent}: "
                              "Not a directory")


def test_sqlite_where_no_file_can_be_created_is_unavailable(tmp_path):
    # procfs refuses new files even to root, so this holds for every user.
    with pytest.raises(StoreUnavailable) as err:
        open_store("sqlite:///proc/ci-policy-history.db", default_path=tmp_path / "unused.db")
    assert str(err.value) == "SQLite metric history /proc/ci-policy-history.db: unable to open database file"


def test_a_file_that_is_not_a_database_is_unavailable(tmp_path):
    path = tmp_path / "history.db"
    path.write_bytes(b"this is not a database\n" * 200)
    with pytest.raises(StoreUnavailable) as err:
        open_store(str(path), default_path=tmp_path / "unused.db")
    assert str(err.value) == f"SQLite metric history {path}: file is not a database"


def test_sqlite_locked_past_the_busy_timeout_is_unavailable(tmp_path):
    path = tmp_path / "history.db"
    open_store(str(path), default_path=tmp_path / "unused.db").close()
    store = SQLiteStore(path, busy_timeout=0.3)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as err:
        write(store, key("1"), [Sample(GRAD, -1, 1.0)])
    assert 0.25 <= time.monotonic() - started < 10
    assert str(err.value) == f"SQLite metric history {path}: database is locked (still locked after 0.3 s)"
    assert store.baseline(GRAD, -1, 5) == []  # WAL: readers are not blocked by a writer
    holder.execute("ROLLBACK")
    holder.close()
    assert write(store, key("1"), [Sample(GRAD, -1, 1.0)]) == "written"
    assert store.baseline(GRAD, -1, 5) == [1.0]
    store.close()
