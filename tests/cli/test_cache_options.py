"""`--cache DIR` and `--no-cache` (lint, registry, plan, list, run, gate)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from helpers import EXAMPLE_REPO, run_cli

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
    packs = list(scan.rglob("*.json"))
    assert [p.name.endswith(".pack.json") for p in packs] == [True]
    # One scan per test file (and an identity record per file read settled, as timing has it).
    assert len([k for k in json.loads(packs[0].read_bytes().partition(b"\n")[2]) if not k.endswith("\0stat")]) == 17


def test_no_cache_writes_nothing(repo: Path, capsys) -> None:
    run_cli(["lint", "--repo", str(repo), "--no-cache"], capsys)
    assert not (Path(os.environ["XDG_CACHE_HOME"]) / "ci-policy").exists()


def test_cache_and_no_cache_exclude_each_other(repo: Path, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        run_cli(["lint", "--repo", str(repo), "--no-cache", "--cache", str(tmp_path / "c")], capsys)
    assert exc.value.code == 2
    assert "argument --cache: not allowed with argument --no-cache" in capsys.readouterr().err
