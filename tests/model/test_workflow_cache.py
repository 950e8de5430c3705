"""Workflows through the scan cache (`model.workflow_cache`): the same `Workflow`s and problems as
`read_workflows`, cold and warm; each stored `Workflow` read back equal; a file that is not YAML
never stored. Tampered entries: tests/hostile/test_workflow_cache.py."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import EXAMPLE_REPO, ROOT

from ci_policy.adapters.scan_cache import DirScanCache
from ci_policy.model.workflow_cache import cached_workflows, decode_workflow, encode_checked, workflow_context
from ci_policy.read.workflows import read_workflows


def _checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    flows = repo / ".github" / "workflows"
    flows.mkdir(parents=True)
    for source in [*(ROOT / ".github" / "workflows").glob("*.yml"),
                   *(EXAMPLE_REPO / ".github" / "workflows").glob("*.yml")]:
        shutil.copy(source, flows / f"{source.parent.parent.parent.name}-{source.name}")
    (flows / "broken.yml").write_text("jobs: [\n")
    (flows / "empty.yaml").write_text("")
    return repo


def test_cached_workflows_are_read_workflows_cold_and_warm(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    truth = read_workflows(repo, ".github/workflows")
    assert [p.code for p in truth[1]] == ["CP601"] and len(truth[0]) == 8
    cache = DirScanCache(tmp_path / "cache")
    assert cached_workflows(repo, ".github/workflows", cache) == truth
    stored = DirScanCache(tmp_path / "cache").load(workflow_context())
    # Every workflow but the one that is not YAML.
    assert sorted(key.partition("\0")[0] for key in stored) == sorted(w.path for w in truth[0])
    warm = DirScanCache(tmp_path / "cache")
    assert cached_workflows(repo, ".github/workflows", warm) == truth
    assert not warm._rejected


def test_every_workflow_reads_back_equal(tmp_path: Path) -> None:
    workflows, _ = read_workflows(_checkout(tmp_path), ".github/workflows")
    assert any(job.stage_runs for w in workflows for job in w.jobs)
    assert any(job.uses and job.with_ and job.secrets for w in workflows for job in w.jobs)
    for workflow in workflows:
        data = encode_checked(workflow)
        assert data is not None
        assert decode_workflow(data, workflow.path) == workflow
