"""The bundled example repository (examples/gpu-repo) is a faithful, working fixture.

It lints clean with exactly one warning (its disabled test); it exercises several CUDA
stages and a ROCm stage, a disabled and a nightly registration, and gate declarations;
and every GPU end-to-end file really passes when run the way its stage runs it,
`python FILE` from the repository root (the GPU work is simulated).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from ci_policy.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gpu-repo"
E2E_FILES = sorted(p.relative_to(EXAMPLE).as_posix() for p in (EXAMPLE / "tests" / "e2e").rglob("test_*.py"))
SESSION_GATES = ("rollout/tito_session_mismatch_rate/v1/assistant_text",
                 "rollout/tito_session_mismatch_rate/v2/assistant_text")


def run_env() -> dict:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    return env


def cli_json(capsys, *argv: str) -> tuple[int, dict]:
    rc = main([*argv, "--repo", str(EXAMPLE), "--format", "json"])
    return rc, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def config() -> dict:
    return yaml.safe_load((EXAMPLE / ".github" / "ci-policy.yml").read_text())


@pytest.fixture
def registrations(capsys) -> list[dict]:
    rc, data = cli_json(capsys, "registry")
    assert rc == 0
    return data["registrations"]


def test_lint_passes_with_exactly_the_expected_warnings(capsys):
    rc, data = cli_json(capsys, "lint")
    assert rc == 0
    assert (data["ok"], data["errors"]) == (True, [])
    assert data["warnings"] == [{
        "code": "CP905", "name": "registration-disabled", "path": "tests/e2e/test_fsdp_checkpoint_resume.py",
        "line": 10, "col": 1,
        "message": "register_cuda_ci for suite stage-c-4-gpu-h200 is disabled: "
                   "flaky on H200 driver 580, tracked in #1234",
        "hint": None,
    }]


def test_several_cuda_stages_and_a_rocm_stage_have_registrations(config, registrations):
    backend_of = {stage["name"]: stage["backend"] for stage in config["stages"]}
    active = Counter(r["suite"] for r in registrations if r["disabled"] is None and not r["nightly"])
    cuda = sorted(s for s in active if backend_of[s] == "cuda")
    rocm = sorted(s for s in active if backend_of[s] == "rocm")
    assert len(cuda) >= 2, cuda
    assert len(rocm) >= 1, rocm
    # Every registration names a configured stage of its own backend.
    assert all(backend_of[r["suite"]] == r["backend"] for r in registrations)


def test_a_disabled_and_a_nightly_registration(registrations):
    disabled = [r for r in registrations if r["disabled"] is not None]
    nightly = [r for r in registrations if r["nightly"]]
    assert [r["file"] for r in disabled] == ["tests/e2e/test_fsdp_checkpoint_resume.py"]
    assert disabled[0]["disabled"].strip()
    assert [r["file"] for r in nightly] == ["tests/e2e/test_megatron_nightly_convergence.py"]


def test_every_e2e_file_is_registered_for_a_gpu_stage(registrations):
    registered = {r["file"] for r in registrations if r["backend"] in ("cuda", "rocm")}
    assert set(E2E_FILES) == registered
    assert len(E2E_FILES) >= 10


def gate_keys(path: Path) -> list[str]:
    """metric_key of every module-level register_ci_gate(...) statement, read with ast."""
    keys = []
    for stmt in ast.parse(path.read_text()).body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "register_ci_gate":
            keys += [kw.value.value for kw in call.keywords if kw.arg == "metric_key"]
    return keys


def test_every_session_server_test_declares_both_mismatch_gates(capsys):
    files = sorted((EXAMPLE / "tests" / "e2e" / "session_server").glob("test_*.py"))
    assert len(files) >= 2
    for path in files:
        keys = gate_keys(path)
        for key in SESSION_GATES:
            assert keys.count(key) == 1, f"{path.name} does not declare the gate {key} exactly once"
    # ci-policy reads the same gates (5 = 2 + 3 declarations).
    assert main(["lint", "--repo", str(EXAMPLE)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("(17 test files, 18 registrations, 5 gates)")


@pytest.mark.parametrize("rel", E2E_FILES)
def test_e2e_file_passes_as_python_file(rel):
    proc = subprocess.run([sys.executable, rel], cwd=EXAMPLE, capture_output=True, text=True, env=run_env(),
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # unittest's report: at least one test ran and all passed.
    last = proc.stderr.strip().splitlines()
    assert last[-1] == "OK", proc.stderr
    ran = [line for line in last if line.startswith("Ran ")]
    assert ran and not ran[0].startswith("Ran 0 "), proc.stderr


def test_e2e_file_that_fails_is_reported_as_failing(tmp_path):
    """The runner check above can fail: a broken copy of an e2e file exits non-zero."""
    source = (EXAMPLE / "tests" / "e2e" / "test_megatron_sft.py").read_text()
    broken = source.replace("self.assertLess(nll(w, data), start)", "self.assertGreater(nll(w, data), start)")
    assert broken != source
    copy = tmp_path / "tests" / "e2e" / "test_megatron_sft.py"
    copy.parent.mkdir(parents=True)
    copy.write_text(broken)
    (tmp_path / "minirl").symlink_to(EXAMPLE / "minirl")
    proc = subprocess.run([sys.executable, "tests/e2e/test_megatron_sft.py"], cwd=tmp_path, capture_output=True,
                          text=True, env=run_env(), timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == "FAILED (failures=1)"


def test_fast_tests_pass_under_pytest():
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/fast"],
                          cwd=EXAMPLE, capture_output=True, text=True, env=run_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " passed" in proc.stdout.strip().splitlines()[-1]
