"""A subcommand whose adapter needs an extra that is not installed: one line, exit 2, nothing else.

Each case runs the installed console script in a subprocess whose imports of the extra's
modules fail: a `sitecustomize` on PYTHONPATH puts a meta-path finder first that raises
ModuleNotFoundError for them, as Python does for a package that is not installed.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
from helpers import clean_env, console_script

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gpu-repo"
TUNE = "ci-policy tune: error: this command needs the 'tune' extra: pip install 'ci-policy[tune]'\n"


def hiding(tmp_path: Path, *modules: str) -> dict:
    """An environment in which importing any of `modules` (and their submodules) fails."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(textwrap.dedent(f"""\
        import sys

        class HideModules:
            hidden = {sorted(modules)!r}

            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in self.hidden:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None

        sys.meta_path.insert(0, HideModules())
        """), encoding="utf-8")
    return clean_env(PYTHONPATH=str(site), GITHUB_TOKEN="t0ken")


def ci_policy(tmp_path: Path, env: dict, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([console_script(), *argv], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_finder_hides_exactly_the_modules_named(tmp_path):
    env = hiding(tmp_path, "libcst")
    probe = ("import importlib\nfor m in ('libcst', 'github', 'yaml'):\n    try:\n        importlib.import_module(m)\n"
             "        print(m, 'ok')\n    except ImportError as e:\n        print(m, type(e).__name__, e)\n")
    proc = subprocess.run([str(Path(console_script()).parent / "python"), "-c", probe], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert (proc.stdout, proc.stderr, proc.returncode) == (
        "libcst ModuleNotFoundError No module named 'libcst'\ngithub ok\nyaml ok\n", "", 0)


@pytest.mark.parametrize("hidden", ["libcst", "github"])
def test_tune_without_its_extra_names_it_before_any_output(tmp_path, hidden):
    records = tmp_path / "timings.jsonl"
    records.write_text("", encoding="utf-8")
    proc = ci_policy(tmp_path, hiding(tmp_path, hidden), "tune", "--repo", str(EXAMPLE), "--from", str(records))
    assert (proc.stdout, proc.stderr, proc.returncode) == ("", TUNE, 2)


def test_tune_json_without_its_extra_prints_no_json(tmp_path):
    proc = ci_policy(tmp_path, hiding(tmp_path, "libcst"), "tune", "--repo", str(EXAMPLE), "--from", "x.jsonl",
                     "--format", "json")
    assert (proc.stdout, proc.stderr, proc.returncode) == ("", TUNE, 2)


@pytest.mark.parametrize("argv", [
    ["comment", "--trusted-repo", str(EXAMPLE), "--event-path", "event.json"],
    ["pull-request", "--repo", str(EXAMPLE), "--number", "7", "--repository", "acme/minirl"],
    ["report-status", "--sha", "a" * 40, "--context", "ci-policy/result", "--state", "success",
     "--description", "ok", "--repository", "acme/minirl"],
], ids=["comment", "pull-request", "report-status"])
def test_the_github_commands_without_pygithub_name_the_github_extra(tmp_path, argv):
    proc = ci_policy(tmp_path, hiding(tmp_path, "github"), *argv)
    assert (proc.stdout, proc.stderr, proc.returncode) == (
        "", f"ci-policy {argv[0]}: error: this command needs the 'github' extra: pip install 'ci-policy[github]'\n",
        2)


POSTGRES = ("error: a postgresql:// metric store needs the 'postgres' extra: "
            "pip install 'ci-policy[postgres]'\n")


def test_gate_with_a_postgresql_store_without_psycopg_names_the_postgres_extra(tmp_path):
    proc = ci_policy(tmp_path, hiding(tmp_path, "psycopg"), "gate", "--repo", str(EXAMPLE), "--file",
                     "tests/e2e/test_fsdp_grpo.py", "--record", "record.jsonl", "--store",
                     "postgresql://ci@127.0.0.1:9/metrics")
    assert (proc.stdout, proc.stderr, proc.returncode) == ("", "ci-policy gate: " + POSTGRES, 2)


def test_run_with_a_postgresql_store_from_the_environment_without_psycopg_names_the_postgres_extra(tmp_path):
    env = hiding(tmp_path, "psycopg")
    env["CI_POLICY_DATABASE_URL"] = "postgresql://ci:secret@127.0.0.1:9/metrics"
    proc = ci_policy(tmp_path, env, "run", "--repo", str(EXAMPLE), "--stage", "stage-a-cpu", "--event", "push")
    assert (proc.stdout, proc.stderr, proc.returncode) == ("", "ci-policy run: " + POSTGRES, 2)


def test_a_sqlite_store_needs_no_psycopg_and_lint_needs_no_extra(tmp_path):
    env = hiding(tmp_path, "psycopg", "github", "libcst")
    lint = ci_policy(tmp_path, env, "lint", "--repo", str(EXAMPLE))
    assert (lint.stderr, lint.returncode) == ("", 0)
    gate = ci_policy(tmp_path, env, "gate", "--repo", str(EXAMPLE), "--file", "tests/e2e/test_fsdp_grpo.py",
                     "--record", "record.jsonl", "--store", str(tmp_path / "metrics.sqlite"))
    # Past the extras check: the gate itself reports the missing record.
    assert (gate.stdout, gate.stderr, gate.returncode) == (
        "", "record.jsonl: --record: record.jsonl is not a readable metric record: [Errno 2] No such file or "
            "directory: 'record.jsonl'\n    hint: pass the record ci-policy run merged for this file\n"
            "ci-policy: 1 error\n", 1)


def test_the_store_variable_is_the_stores_own() -> None:
    from ci_policy.adapters import store
    from ci_policy.app import stores as extras

    assert extras.DATABASE_URL_ENV == store.DATABASE_URL_ENV


def test_report_publishing_its_issue_without_pygithub_names_the_github_extra(tmp_path):
    env = hiding(tmp_path, "github")
    published = ci_policy(tmp_path, env, "report", "--store", str(tmp_path / "h.sqlite"), "--publish-issue")
    assert (published.stdout, published.stderr, published.returncode) == (
        "", "ci-policy report: error: report --publish-issue needs the 'github' extra: pip install "
            "'ci-policy[github]'\n", 2)
    history = ci_policy(tmp_path, env, "history", "import", "--store", str(tmp_path / "h.sqlite"))
    assert (history.stderr, history.returncode) == ("", 0)
    plain = ci_policy(tmp_path, env, "report", "--store", str(tmp_path / "h.sqlite"), "--today", "2026-11-29")
    assert (plain.stderr, plain.returncode) == ("", 0)
    assert plain.stdout.startswith("CI health 2026-10-31 to 2026-11-29: 0 run(s), 0 attempt(s)\n")
