"""Shared fixtures: the bundled example repository, small generated checkouts, PostgreSQL, Mermaid."""

from __future__ import annotations

import itertools
import os
import shutil
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import helpers
import pytest
from helpers import EXAMPLE_REPO, MINIMAL_CONFIG, MINIMAL_LABELS
from hypothesis import HealthCheck, settings
from mermaid_render import Renderer

# Hypothesis times each example and its input generation; on a busy two-core machine that
# measures the machine, not the code, and the suite makes no timed assertion.
settings.register_profile("ci_policy", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci_policy")

pytest_plugins = ["github_world"]
# tests/data holds fixture repositories (their test files are data the tests read) and goldens.
collect_ignore = ["data"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--regen-goldens", action="store_true", default=False,
                     help="rewrite the golden files under tests/data/golden/ from the current outputs")


def pytest_configure(config: pytest.Config) -> None:
    helpers.REGENERATE = bool(config.getoption("--regen-goldens"))


@pytest.fixture(autouse=True)
def state_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh $XDG_STATE_HOME per test (the default metric store lives there), inherited by
    the CLI subprocesses: no test reads or leaves a store in the user's state directory."""
    path = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(path))
    return path


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ci-policy run` keeps its timing records in the user's cache directory outside Actions:
    each test gets its own (inherited by the subprocesses it starts), never the real one."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture(autouse=True)
def github_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits of the GitHub client's retries, recorded instead of slept: no test waits for a
    backoff, and a retry test asserts exactly how long the client would have waited."""
    from ci_policy.adapters.github import client

    slept: list[float] = []
    monkeypatch.setattr(client, "SLEEP", slept.append)
    monkeypatch.delenv(client.MAX_WAIT_ENV, raising=False)
    return slept


@pytest.fixture
def example_repo(tmp_path: Path) -> Path:
    """A private copy of examples/gpu-repo that a test may modify."""
    dest = tmp_path / "gpu-repo"
    shutil.copytree(EXAMPLE_REPO, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return dest


@pytest.fixture
def pr(tmp_path: Path) -> Path:
    """An (untrusted) PR checkout: a private copy of examples/gpu-repo."""
    dest = tmp_path / "pr"
    shutil.copytree(EXAMPLE_REPO, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return dest


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """Write a checkout from {relative path: text}; defaults give a valid config and labels."""

    def make(files: dict[str, str] | None = None, *, config: str = MINIMAL_CONFIG,
             labels: str | None = MINIMAL_LABELS, name: str = "repo") -> Path:
        repo = tmp_path / name
        repo.mkdir()
        (repo / "tests" / "unit").mkdir(parents=True)
        if config is not None:
            (repo / ".github").mkdir()
            (repo / ".github" / "ci-policy.yml").write_text(config)
        if labels is not None:
            (repo / "labels.py").write_text(labels)
        for rel, text in (files or {}).items():
            path = repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        return repo

    return make


# -- PostgreSQL, for the metric-history store tests (tests/pgserver.py) ----------------------------

_database_numbers = itertools.count(1)


def _start_postgres_or_fail():
    """A started `PostgresServer`; a missing server FAILS the test (it is never skipped)."""
    import pgserver

    problem = None
    try:
        server = pgserver.PostgresServer()
    except pgserver.PostgresBinariesMissing as exc:
        problem = str(exc)
    else:
        try:
            server.start()
        except Exception as exc:
            server.cleanup()
            problem = f"the throwaway PostgreSQL server did not start: {exc}"
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    return server


@pytest.fixture(scope="session")
def postgres_session_server():
    """One throwaway PostgreSQL server for the whole test session."""
    server = _start_postgres_or_fail()
    yield server
    server.cleanup()


@pytest.fixture(scope="session")
def postgres_url(postgres_session_server) -> str:
    """URL of the session server's maintenance database (`postgres`): create databases, do not store."""
    return postgres_session_server.url()


@pytest.fixture
def postgres_database(postgres_session_server) -> str:
    """URL of a fresh, empty database on the session server, dropped after the test."""
    name = f"test_{os.getpid()}_{next(_database_numbers)}"
    url = postgres_session_server.create_database(name)
    yield url
    postgres_session_server.drop_database(name)


@pytest.fixture
def postgres_server():
    """A private, started PostgreSQL server that the test may stop, kill or restart."""
    server = _start_postgres_or_fail()
    yield server
    server.cleanup()


# -- Mermaid in headless Chromium ------------------------------------------------------------------

@pytest.fixture(scope="session")
def mermaid() -> Iterator[Renderer]:
    """Mermaid's own renderer (tests/mermaid_render.py): one browser for the whole session."""
    renderer = Renderer()
    yield renderer
    renderer.close()


# -- the slow marker -------------------------------------------------------------------------------

POSTGRES_FIXTURES = frozenset({"postgres_session_server", "postgres_url", "postgres_database", "postgres_server"})
# Starting the browser takes seconds on a busy machine.
BROWSER_FIXTURES = frozenset({"mermaid"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every property, PostgreSQL and browser test `slow`, where no decorator can be forgotten.

    `scripts/test.sh` runs them all; `-m "not slow"` leaves them out while iterating.
    """
    for item in items:
        function = getattr(item, "obj", None)
        is_property = getattr(function, "is_hypothesis_test", False)
        fixtures = set(getattr(item, "fixturenames", ()))
        uses_postgres = bool(POSTGRES_FIXTURES & fixtures)
        if is_property or uses_postgres or BROWSER_FIXTURES & fixtures or "postgresql" in item.name:
            item.add_marker(pytest.mark.slow)
