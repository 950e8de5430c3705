"""Shared test helpers: paths, minimal checkouts' texts, the console script, a clean environment.

Imported by test modules as `helpers` (`tests/` is on pytest's `pythonpath`); fixtures live in
`conftest.py`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from ci_policy import __version__
from ci_policy.config.runrules import DEFAULT_ALLOW, DEFAULT_INFRA, DEFAULT_NEVER, DEFAULT_RETRIABLE, SECRET_NAMES
from ci_policy.read.globs import any_name_match

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_REPO = ROOT / "examples" / "gpu-repo"

MINIMAL_CONFIG = """\
version: 1
discovery:
  roots: [tests]
  implicit:
    - {root: tests/unit, backend: cpu, suite: cpu, est_time: 1, cpu_only: true}
stages:
  - {name: cpu, backend: cpu}
  - {name: gpu-a, backend: cuda, runs_on: [h200], partitions: 2}
  - {name: gpu-b, backend: cuda, runs_on: [h200, 4gpu]}
  - {name: amd, backend: rocm, runs_on: [mi350]}
"""

MINIMAL_LABELS = 'KNOWN_LABELS = {"megatron": "Megatron tests", "fsdp": "FSDP tests", "long": "slow"}\n'

MAIN_BLOCK = '\nif __name__ == "__main__":\n    main()\n'


def console_script() -> str:
    """The installed `ci-policy` entry point (subprocess tests run it as users do)."""
    script = Path(sys.executable).parent / "ci-policy"
    found = str(script) if script.exists() else shutil.which("ci-policy")
    assert found, "the ci-policy console script is not installed next to the test interpreter"
    return found


_is_secret = any_name_match(SECRET_NAMES)


def root_warning(*holding: str, store_file: str | None = None) -> str:
    """What `ci-policy run` says once when it runs as root holding secrets (variable names, a
    `--store-file`) without `runner.user`; "" when this machine runs the tests as another user."""
    if os.geteuid() != 0:
        return ""
    held = [f"${name}" for name in holding] + ([f"the store URL of --store-file {store_file}"] if store_file else [])
    return ("ci-policy run: warning: the tests run as root, so they can read this runner's memory, which holds "
            f"{', '.join(held)}: set runner.user to an unprivileged user (the checkout must be readable by it)\n")


def clean_env(**extra: str) -> dict:
    """The environment without what could steer ci-policy or Python from outside the test, nor any
    secret of the machine running the tests (a test's `ci-policy run` would hold it)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "PYTEST_", "CI_POLICY_")) and not _is_secret(k)
           and k not in ("RUNNER_TEMP", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONSAFEPATH",
                         "PYTHONNOUSERSITE")}
    env.update(extra)
    return env


# -- golden files ----------------------------------------------------------------------------------

GOLDEN_DIR = ROOT / "tests" / "data" / "golden"
REGENERATE = False  # set by `pytest --regen-goldens` (conftest.py)


def assert_golden(name: str, actual: str) -> None:
    """`actual` equals the golden file tests/data/golden/NAME, byte for byte.

    After a deliberate change of an output, rewrite the goldens with
    `.venv/bin/python -m pytest --regen-goldens` and review the diff of tests/data/golden/.
    """
    path = GOLDEN_DIR / name
    if REGENERATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8", newline="")
        return
    assert path.is_file(), f"no golden file {path.relative_to(ROOT)}: run pytest --regen-goldens and review it"
    expected = _read(path)
    assert actual == expected, f"output differs from {path.relative_to(ROOT)} (pytest --regen-goldens rewrites it)"


def read_golden(name: str) -> str:
    """The golden file tests/data/golden/NAME, for an expected value built from it (e.g. with `.replace`)."""
    return _read(GOLDEN_DIR / name)


def _read(path: Path) -> str:
    # newline="" keeps "\r\n" as written: a golden file is compared byte for byte
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


def assert_run_golden(result: tuple[int, str, str], code: int, name: str, err: str = "") -> None:
    """A `(exit code, stdout, stderr)` result: the code and stderr are exact, stdout equals the golden file NAME."""
    assert (result[0], result[2]) == (code, err)
    assert_golden(name, result[1])


def run_cli(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    """`ci-policy ARGV` in process: (exit code, stdout, stderr) as pytest's capsys caught them."""
    from ci_policy.cli import main

    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def in_process(cwd: Path, argv: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    """`ci-policy ARGV` as the console script would run it from `cwd` with the environment `env`
    (default `clean_env()`), but in this process: `main(argv)` with os.environ replaced and the
    working directory changed for the call, stdout and stderr captured; the exit code is main's
    return or a SystemExit's. For tests whose subject is not the process itself."""
    from ci_policy.cli import main

    out, err, before = io.StringIO(), io.StringIO(), os.getcwd()
    with mock.patch.dict(os.environ, clean_env() if env is None else env, clear=True), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        os.chdir(cwd)
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            os.chdir(before)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def caught(fn: Any, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
    """(path, line, col, message, hint) of every error `fn` raises; fails if it raises none."""
    from ci_policy.errors import InputError, InputErrors

    try:
        fn(*args, **kwargs)
    except InputErrors as exc:
        return [(e.path, e.line, e.col, e.message, e.hint) for e in exc.errors]
    except InputError as exc:
        return [(exc.path, exc.line, exc.col, exc.message, exc.hint)]
    pytest.fail("no InputError raised")


# -- the example's run settings -------------------------------------------------------------------

# The example's stages: how each runs a file and its timeout_per_file, and what every stage shares
# (the example configures no `runner:` section: its defaults, and the default captured metrics).
EXAMPLE_RUNNERS = {"stage-a-cpu": ("pytest", None), "stage-b-1-gpu-h200": ("python", 1800),
                   "stage-c-4-gpu-h200": ("python", 3600), "stage-c-4-gpu-mi350": ("python", 3600)}
EXAMPLE_RUN_SETTINGS = {
    "ci_policy": __version__, "timeout_from_est_time": None, "kill_grace": 10.0,
    "retry": {"infra": list(DEFAULT_INFRA), "never": list(DEFAULT_NEVER), "retriable": list(DEFAULT_RETRIABLE)},
    "env": {"allow": list(DEFAULT_ALLOW), "drop": []},
    "capture": ["train/grad_norm", "train/ppo_kl", "train/train_rollout_logprob_abs_diff", "train/train_rollout_kl",
                "rollout/raw_reward", "rollout/tito_session_mismatch_rate/v1/assistant_text",
                "rollout/tito_session_mismatch_rate/v2/assistant_text"],
    "user": None,
}


def pack_body(entries: Mapping[str, Any]) -> bytes:
    """A scan-cache pack's body (`adapters.scan_cache`), written out here rather than by the
    cache: the keys as one JSON array on a line, then each value as JSON on a line of its own."""
    return pack_text({key: json.dumps(value, separators=(",", ":")) for key, value in entries.items()})


def pack_text(values: Mapping[str, str]) -> bytes:
    """`pack_body` of values given as their text (a tampered value, say), each written as it is."""
    return "\n".join([json.dumps(list(values), separators=(",", ":")), *values.values()]).encode(
        "utf-8", "surrogatepass")


def pack_entries(body: bytes) -> dict[str, Any]:
    """The entries of a pack's body as `pack_body` writes them, each value decoded."""
    keys, *values = body.split(b"\n")
    return dict(zip(json.loads(keys), map(json.loads, values), strict=True))
