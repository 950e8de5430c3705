"""The PostgreSQL store (`adapters/store/postgres.py`), on a real throwaway server.

The URL forms it opens (TCP, the short scheme, the Unix socket), passwords redacted from
every message and repr, and real faults: a killed server, a server that is not there.
"""

from __future__ import annotations

import time

import pytest
from store_cases import GRAD, PASSWORD, PASSWORD_IN_URL, key, row, runs, write

from ci_policy.adapters.store import DATABASE_URL_ENV, Sample, open_store
from ci_policy.adapters.store.postgres import redact_url, url_secrets
from ci_policy.errors import StoreUnavailable

# -- open_store -----------------------------------------------------------------------------------

def test_open_store_postgres_forms(postgres_database, tmp_path, monkeypatch):
    from ci_policy.adapters.store.postgres import PostgresStore

    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    assert postgres_database.startswith("postgresql://")
    short = "postgres://" + postgres_database[len("postgresql://"):]
    for url in (postgres_database, short):
        with open_store(url, default_path=tmp_path / "unused.db") as opened:
            assert type(opened) is PostgresStore
            assert opened.schema_versions() == [1, 2, 3]
    monkeypatch.setenv(DATABASE_URL_ENV, short)
    with open_store(None, default_path=tmp_path / "unused.db") as opened:
        assert type(opened) is PostgresStore
        assert write(opened, key("1"), [Sample(GRAD, -1, 2.5)]) == "written"
    with open_store(postgres_database, default_path=tmp_path / "unused.db") as opened:
        assert opened.baseline(GRAD, -1, 3) == [2.5]
    assert not (tmp_path / "unused.db").exists()


def test_open_store_through_the_unix_socket(postgres_session_server, postgres_database, tmp_path):
    name = postgres_database.rsplit("/", 1)[1]
    with open_store(postgres_session_server.socket_url(name), default_path=tmp_path / "unused.db") as opened:
        assert write(opened, key("1"), [Sample(GRAD, -1, 0.75)]) == "written"
    with open_store(postgres_database, default_path=tmp_path / "unused.db") as opened:
        assert opened.baseline(GRAD, -1, 3) == [0.75]


# -- faults: PostgreSQL ---------------------------------------------------------------------------

def _listening(port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("form", ["userinfo", "query"])
def test_a_killed_postgres_server_makes_the_store_unavailable_without_the_password(form, postgres_server,
                                                                                  tmp_path):
    postgres_server.create_database("history")
    port = postgres_server.port
    if form == "userinfo":
        url = postgres_server.url("history", password=PASSWORD_IN_URL)
        shown = f"postgresql://postgres:***@127.0.0.1:{port}/history"
    else:
        url = f"postgresql://postgres@127.0.0.1:{port}/history?password={PASSWORD_IN_URL}&application_name=ci"
        shown = f"postgresql://postgres@127.0.0.1:{port}/history?password=***&application_name=ci"
    prefix = f"PostgreSQL metric history {shown}: "
    store = open_store(url, default_path=tmp_path / "unused.db")
    assert PASSWORD not in repr(store) and PASSWORD_IN_URL not in repr(store)
    assert write(store, key("1"), [Sample(GRAD, -1, 1.0)]) == "written"

    postgres_server.kill()
    messages = []
    for name, call in (("baseline", lambda: store.baseline(GRAD, -1, 5)),
                       ("write", lambda: write(store, key("2"), [Sample(GRAD, -1, 2.0)])),
                       ("runs", store.runs)):
        try:
            call()
        except StoreUnavailable as exc:
            messages.append(str(exc))
            continue
        # A backend still running after kill() would answer (see test_kill_takes_the_backends_too).
        pytest.fail(f"{name} did not raise after the kill: server running {postgres_server.running}, "
                    f"something listening on port {port}: {_listening(port)}")
    with pytest.raises(StoreUnavailable) as err:
        open_store(url, default_path=tmp_path / "unused.db")
    messages.append(str(err.value))
    for message in messages:
        assert message.startswith(prefix) and len(message) > len(prefix) + 10
        assert "\n" not in message and PASSWORD not in message and PASSWORD_IN_URL not in message
    for message in messages[1:]:  # the broken connection is replaced, and the new one is refused
        assert "Connection refused" in message

    # Nothing of the failed write was stored, and the same store object works again once the
    # server is back.
    postgres_server.start()
    assert runs(store) == [row("1", 1, "written", 1)]
    assert write(store, key("2"), [Sample(GRAD, -1, 2.0)]) == "written"
    assert store.baseline(GRAD, -1, 5) == [1.0, 2.0]
    store.close()
    assert not (tmp_path / "unused.db").exists()


def test_kill_takes_the_backends_too(postgres_server):
    """Backends lead process groups of their own: the postmaster's group alone is not the
    server. A backend that cannot notice the postmaster's death (stopped here; on a busy machine,
    not yet scheduled) would still answer a query sent just after the kill."""
    import os
    import signal

    import psycopg

    conn = psycopg.connect(postgres_server.url(), autocommit=True, connect_timeout=10)
    backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    assert os.getpgid(backend) == backend != postgres_server.pid
    os.kill(backend, signal.SIGSTOP)
    postgres_server.kill()
    try:
        state = open(f"/proc/{backend}/stat").read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z")
    with pytest.raises(psycopg.OperationalError):
        conn.execute("SELECT 1")
    conn.close()


def test_an_unreachable_postgres_server_is_unavailable_at_once(tmp_path):
    import pgserver

    port = pgserver.free_port()
    url = f"postgresql://ci:{PASSWORD_IN_URL}@127.0.0.1:{port}/metrics"
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as err:
        open_store(url, default_path=tmp_path / "unused.db")
    assert time.monotonic() - started < 10
    message = str(err.value)
    assert message.startswith(f"PostgreSQL metric history postgresql://ci:***@127.0.0.1:{port}/metrics: "
                              "connection failed: ")
    assert "Connection refused" in message and "\n" not in message
    assert PASSWORD not in message and PASSWORD_IN_URL not in message


# -- redaction ------------------------------------------------------------------------------------

@pytest.mark.parametrize("url, shown", [
    (f"postgresql://ci:{PASSWORD_IN_URL}@db:5432/metrics", "postgresql://ci:***@db:5432/metrics"),
    ("postgresql://ci@db/metrics?password=p%40ss&sslmode=require",
     "postgresql://ci@db/metrics?password=***&sslmode=require"),
    ("postgresql://u:p@h/m?PASSWORD=x", "postgresql://u:***@h/m?PASSWORD=***"),
    ("postgresql://ci@db/metrics", "postgresql://ci@db/metrics"),
    ("postgresql://db/metrics", "postgresql://db/metrics"),
    # Not even a URL: only its scheme is shown.
    ("postgresql://[::1/metrics", "postgresql://***"),
])
def test_redact_url(url, shown):
    assert redact_url(url) == shown


def test_url_secrets_lists_every_spelling_longest_first():
    assert url_secrets(f"postgresql://ci:{PASSWORD_IN_URL}@db/m") == (PASSWORD_IN_URL, PASSWORD)
    assert url_secrets("postgresql://ci@db/m?password=p%40ss&sslmode=require") == ("p%40ss", "p@ss")
    # Secrets of one length come in no set order.
    assert sorted(url_secrets("postgresql://u:p@h/m?PASSWORD=x")) == ["p", "x"]
    assert url_secrets("postgresql://db/m") == ()
    assert url_secrets("postgresql://[::1/m") == ()
    assert url_secrets("postgresql://db/m", {"password": "from-params"}) == ("from-params",)
