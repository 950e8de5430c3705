"""The store package (`adapters/store/__init__.py`): `open_store` and how the backends are laid out.

Which URLs `open_store` refuses, that PostgreSQL support (psycopg) is loaded only for a
PostgreSQL URL, and that base, sqlite and postgres import without a cycle. The contract
every backend keeps is in `test_base.py`; each backend's own forms and faults are in
`test_sqlite.py` and `test_postgres.py`.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ci_policy.adapters.store import open_store
from ci_policy.errors import UsageError

ROOT = Path(__file__).resolve().parents[3]


# -- open_store -----------------------------------------------------------------------------------

NOT_SHOWN = "(the value is not shown: it may hold a password)"
SQLITE_HINT = "write sqlite:///absolute/path.sqlite or sqlite:relative/path.sqlite"


@pytest.mark.parametrize("url, message, hint", [
    ("mysql://ci:hunter2@db.example/metrics", "unsupported metric history URL scheme 'mysql'", None),
    ("file:///var/lib/history.db", "unsupported metric history URL scheme 'file'", None),
    ("sqlite://dbhost/history.db",
     f"is a sqlite URL with a host or user; a sqlite URL names a local file only {NOT_SHOWN}", SQLITE_HINT),
    ("sqlite:", f"is a sqlite URL that names no file {NOT_SHOWN}", SQLITE_HINT),
])
def test_open_store_refuses_other_urls(url, message, hint, tmp_path):
    with pytest.raises(UsageError) as err:
        open_store(url, default_path=tmp_path / "unused.db")
    assert (err.value.source, err.value.message) == ("--store", message)
    if hint is not None:
        assert err.value.hint == hint
    assert "hunter2" not in str(err.value) + str(err.value.hint)
    assert not (tmp_path / "unused.db").exists()


def test_store_module_never_imports_psycopg(tmp_path):
    code = textwrap.dedent("""
        import sys
        from pathlib import Path
        from ci_policy.adapters.store import open_store
        open_store(sys.argv[1], default_path=Path(sys.argv[1])).close()
        print(sorted(name for name in sys.modules if name.split(".")[0] == "psycopg"))
    """)
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "h.db")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[]\n"


def test_without_psycopg_a_postgres_url_says_what_to_install(tmp_path):
    code = textwrap.dedent("""
        import sys
        sys.modules["psycopg"] = None  # as if psycopg were not installed
        from pathlib import Path
        from ci_policy.errors import InputError, UsageError
        from ci_policy.adapters.store import open_store
        store = open_store(sys.argv[1], default_path=Path(sys.argv[1]))
        print(type(store).__name__, store.schema_versions())
        store.close()
        try:
            open_store("postgresql://ci:hunter2@127.0.0.1:9/metrics", default_path=Path(sys.argv[1]))
        except InputError as exc:
            print(exc.message.split(" (")[0])
            print(exc.hint)
            print("hunter2" in str(exc))
    """)
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "h.db")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "SQLiteStore [1, 2, 3]",
        "a postgresql:// metric history needs psycopg 3, which is not importable",
        "install `ci-policy[postgres]`",
        "False",
    ]


# -- module structure -----------------------------------------------------------------------------

def test_the_store_modules_import_without_a_cycle():
    """base (contract and schema) <- sqlite, postgres <- the package (open_store)."""
    import ast

    store_dir = ROOT / "ci_policy" / "adapters" / "store"
    imported = {}
    for name in ("base", "sqlite", "postgres", "__init__"):
        tree = ast.parse((store_dir / f"{name}.py").read_text(encoding="utf-8"))
        imported[name] = sorted({node.module.rsplit(".", 1)[-1] for node in ast.walk(tree)
                                 if isinstance(node, ast.ImportFrom) and node.module
                                 and node.module.startswith("ci_policy.adapters.store")})
    assert imported == {"base": [], "sqlite": ["base"], "postgres": ["base"],
                        "__init__": ["base", "postgres", "sqlite"]}
