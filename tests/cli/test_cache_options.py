"""`--cache DIR` and `--no-cache` (lint, registry, plan, list, run, gate)."""

from __future__ import annotations

import ast
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import EXAMPLE_REPO, pack_entries, run_cli

from ci_policy.model.workflow_cache import workflow_context

PLAN = ["plan", "--event", "pull_request", "--diff", "", "--format", "json"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    dest = tmp_path / "repo"
    shutil.copytree(EXAMPLE_REPO, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_a_cache_inside_the_checkout_is_a_usage_error(repo: Path, capsys) -> None:
    rc, out, err = run_cli(["registry", "--repo", str(repo), "--cache", str(repo / "c")], capsys)
    assert (rc, out) == (2, "")
    assert err == (f"ci-policy registry: error: --cache: {repo / 'c'} is inside the checkout {repo}\n"
                   "    hint: name a directory outside the checkout, or pass --no-cache\n")
    assert not (repo / "c").exists()


def test_a_symlinked_cache_is_a_warning_and_the_command_runs_uncached(repo: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    expected = run_cli([*PLAN, "--repo", str(repo), "--no-cache"], capsys)
    rc, out, err = run_cli([*PLAN, "--repo", str(repo), "--cache", str(tmp_path / "link")], capsys)
    assert (rc, out) == expected[:2]
    assert err == (f"ci-policy plan: warning: --cache: {tmp_path / 'link'} is a symlink; "
                   "reading every test file without the scan cache\n")
    assert list((tmp_path / "real").iterdir()) == []


def test_in_github_format_the_cache_warning_is_only_an_annotation(repo: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    rc, out, err = run_cli(["lint", "--repo", str(repo), "--cache", str(tmp_path / "link"), "--format", "github"],
                           capsys)
    assert (rc, err) == (0, "")
    assert out.splitlines()[0] == (f"::warning::ci-policy lint: --cache: {tmp_path / 'link'} is a symlink; "
                                   "reading every test file without the scan cache")
    assert "warning: --cache" not in out.replace("::warning::ci-policy lint: --cache", "")


def test_the_default_cache_is_under_xdg_cache_home(repo: Path, capsys) -> None:
    rc, _out, err = run_cli(["lint", "--repo", str(repo), "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    scan = Path(os.environ["XDG_CACHE_HOME"]) / "ci-policy" / "scan"
    # The test files' scans, and lint's workflows in a pack of their own.
    workflows = f"{workflow_context()}.pack.json"
    packs = sorted(scan.rglob("*.json"), key=lambda p: p.name == workflows)
    assert [(p.name.endswith(".pack.json"), p.name == workflows) for p in packs] == [(True, False), (True, True)]
    # One scan per test file (and an identity record per file read settled, as timing has it).
    assert len([k for k in pack_entries(packs[0].read_bytes().partition(b"\n")[2]) if not k.endswith("\0stat")]) == 17


def test_no_cache_writes_nothing(repo: Path, capsys) -> None:
    run_cli(["lint", "--repo", str(repo), "--no-cache"], capsys)
    assert not (Path(os.environ["XDG_CACHE_HOME"]) / "ci-policy").exists()


def test_cache_and_no_cache_exclude_each_other(repo: Path, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        run_cli(["lint", "--repo", str(repo), "--no-cache", "--cache", str(tmp_path / "c")], capsys)
    assert exc.value.code == 2
    assert "argument --cache: not allowed with argument --no-cache" in capsys.readouterr().err


def test_a_copy_of_the_configuration_elsewhere_is_a_warm_run_whose_hints_name_the_copy(
        repo: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    (repo / "tests/e2e/test_zz_bad.py").write_text(
        'from ci_policy import register_cuda_ci\n\nregister_cuda_ci(60, "nosuch", labels=["fsdp"])\n')
    copy = tmp_path / "elsewhere" / "copied.yml"
    copy.parent.mkdir()
    shutil.copyfile(repo / ".github/ci-policy.yml", copy)
    cache = ["--cache", str(tmp_path / "cache")]
    hint = ("configured cuda stages: stage-b-1-gpu-h200, stage-c-4-gpu-h200, stage-d-8-gpu-gb200 "
            "(stages are listed in {})")

    def cp225(out: str) -> list[tuple[str, str]]:
        return [(d["path"], d["hint"]) for d in json.loads(out)["errors"] if d["code"] == "CP225"]

    rc, out, _err = run_cli(["lint", "--repo", str(repo), *cache, "--format", "json"], capsys)
    assert (rc, cp225(out)) == (1, [("tests/e2e/test_zz_bad.py", hint.format(".github/ci-policy.yml"))])
    # The scans' pack, and lint's workflows in one of their own.
    def scan_packs() -> list[Path]:
        return sorted(p for p in (tmp_path / "cache").rglob("*.pack.json")
                      if p.name != f"{workflow_context()}.pack.json")

    packs = scan_packs()
    every_pack = sorted((tmp_path / "cache").rglob("*.pack.json"))
    assert len(packs) == 1

    def scans(pack: Path) -> list[str]:
        return sorted(k for k in pack_entries(pack.read_bytes().partition(b"\n")[2]) if not k.endswith("\0stat"))

    stored = scans(packs[0])
    parsed: list[str] = []
    real = ast.parse

    def counting(source: Any, filename: str = "<unknown>", *args: Any, **kwargs: Any) -> ast.AST:
        parsed.append(filename)
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    rc, out, _err = run_cli(["lint", "--repo", str(repo), *cache, "--config", str(copy), "--format", "json"],
                            capsys)
    assert (rc, cp225(out)) == (1, [("tests/e2e/test_zz_bad.py", hint.format(copy))])
    rc, out, _err = run_cli(["lint", "--repo", str(repo), *cache, "--config", str(copy)], capsys)
    assert rc == 1
    assert ("tests/e2e/test_zz_bad.py:3:22: CP225 suite-unknown: register_cuda_ci: suite 'nosuch' is not a "
            f"configured cuda stage\n    hint: {hint.format(copy)}\n") in out
    # Warm: the first run's pack was read, no test file parsed, and no other pack written.
    assert [f for f in parsed if f.startswith("tests/")] == []
    assert scan_packs() == packs and sorted((tmp_path / "cache").rglob("*.pack.json")) == every_pack
    assert scans(packs[0]) == stored
