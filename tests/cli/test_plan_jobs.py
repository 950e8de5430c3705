"""`ci-policy plan --head-sha`: the stage jobs and the images to build, in json and github formats."""

from __future__ import annotations

import json
import shutil

import pytest
from cli.test_plan import QUICKSTART_ARGV, QUICKSTART_JOBS, ROOT, parse_github_output
from helpers import run_cli as run

SHA = "89abcdef0123456789abcdef0123456789abcdef"
BUILT = {"ghcr.io/minirl/ci-cuda:latest": f"ghcr.io/minirl/ci-cuda:{SHA}",
         "ghcr.io/minirl/ci-rocm:latest": f"ghcr.io/minirl/ci-rocm:{SHA}", "": ""}
JOBS = [{**j, "image": BUILT[j["image"]]} for j in QUICKSTART_JOBS]
IMAGES = [{"backend": "cuda", "image": f"ghcr.io/minirl/ci-cuda:{SHA}", "dockerfile": "docker/cuda.Dockerfile",
           "context": "."},
          {"backend": "rocm", "image": f"ghcr.io/minirl/ci-rocm:{SHA}", "dockerfile": "docker/rocm.Dockerfile",
           "context": "."}]


@pytest.fixture
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def test_head_sha_tags_the_built_images_in_json(at_root, capsys):
    rc, out, err = run([*QUICKSTART_ARGV, "--head-sha", SHA, "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    doc = json.loads(out)
    assert (doc["jobs"], doc["images_to_build"]) == (JOBS, IMAGES)


def test_head_sha_tags_the_built_images_in_github_outputs(at_root, tmp_path, monkeypatch, capsys):
    outputs = tmp_path / "output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    rc, _out, err = run([*QUICKSTART_ARGV, "--head-sha", SHA, "--format", "github"], capsys)
    assert (rc, err) == (0, "")
    values = parse_github_output(outputs.read_text())
    assert json.loads(values["stage_matrix_0"]) == {"include": JOBS}
    assert [json.loads(values[f"stage_matrix_{wave}"]) for wave in (1, 2, 3)] == [{"include": []}] * 3
    assert json.loads(values["images_to_build"]) == IMAGES
    assert values["has_stage_jobs"] == "true"


def test_an_untrusted_head_builds_nothing_whatever_its_sha(at_root, capsys):
    rc, out, err = run([*QUICKSTART_ARGV, "--head-sha", SHA, "--trust", "untrusted", "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    doc = json.loads(out)
    assert ([j["stage"] for j in doc["jobs"]], doc["images_to_build"]) == (["stage-a-cpu"], [])


def test_an_empty_head_sha_means_none(at_root, capsys):
    rc, out, err = run([*QUICKSTART_ARGV, "--head-sha", "", "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert (json.loads(out)["jobs"], json.loads(out)["images_to_build"]) == (QUICKSTART_JOBS, [])


@pytest.mark.parametrize("value", ["abc", SHA.upper(), SHA + "0", "main", SHA[:-1] + "g"])
def test_a_malformed_head_sha_is_a_usage_error(at_root, capsys, value):
    assert run([*QUICKSTART_ARGV, "--head-sha", value], capsys) == (
        2, "", f"ci-policy plan: error: --head-sha: expected a full commit SHA (40 lower-case hex digits), "
               f"got {value!r}\n    hint: pass the pull request's head SHA, or nothing\n")


def test_the_image_builder_and_registry_of_the_configuration_are_outputs(tmp_path, monkeypatch, capsys):
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "gpu-repo", repo)
    config = repo / ".github" / "ci-policy.yml"
    config.write_text(config.read_text().replace("ghcr.io/minirl/", "registry.example.com:5000/minirl/")
                      + "image_build: {runs_on: [self-hosted, docker-builder],"
                        " registry: 'registry.example.com:5000'}\n")
    outputs = tmp_path / "output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    argv = [*QUICKSTART_ARGV, "--head-sha", SHA, "--format", "github"]
    argv[argv.index("examples/gpu-repo")] = str(repo)
    argv[argv.index("examples/pr-42.diff")] = str(ROOT / "examples" / "pr-42.diff")
    rc, _out, err = run(argv, capsys)
    assert (rc, err) == (0, "")
    values = parse_github_output(outputs.read_text())
    assert (values["image_runs_on"], values["image_registry"]) == ('["self-hosted","docker-builder"]',
                                                                   "registry.example.com:5000")
    assert [b["image"] for b in json.loads(values["images_to_build"])] == [
        f"registry.example.com:5000/minirl/ci-cuda:{SHA}", f"registry.example.com:5000/minirl/ci-rocm:{SHA}"]
