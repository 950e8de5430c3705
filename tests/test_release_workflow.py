"""The release workflow (.github/workflows/release.yml) run by the workflow simulator, attempt by
attempt, against a model of a run's artifacts as upload-artifact/download-artifact v4 see them:
artifacts belong to the run (every attempt sees them), a second upload of one name in a run is
refused (409 Conflict) unless `overwrite` is true, and a download of a name the run does not
hold fails."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from workflow_eval import Event, Simulation, simulate

RELEASE = Path(__file__).resolve().parents[1] / ".github" / "workflows" / "release.yml"
TAG = {"ref": "refs/tags/v0.2.0", "ref_name": "v0.2.0"}


class RunArtifacts:
    """The artifacts of one workflow run, shared by its attempts."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}  # name -> the attempt that uploaded it
        self.log: list[tuple[str, str, str]] = []  # (attempt, action, name)

    def hooks(self, attempt: str, *, publish_fails: bool = False) -> dict:
        def upload(step: dict) -> tuple[str, dict]:
            name = step["with"]["name"]
            if name in self.names and step["with"].get("overwrite") != "true":
                self.log.append((attempt, "upload refused (409 Conflict)", name))
                return "failure", {}
            self.names[name] = int(attempt)
            self.log.append((attempt, "upload", name))
            return "success", {}

        def download(step: dict) -> tuple[str, dict]:
            name = step["with"]["name"]
            if name not in self.names:
                self.log.append((attempt, "download: no such artifact", name))
                return "failure", {}
            self.log.append((attempt, "download", name))
            return "success", {}

        def publish(_step: dict) -> tuple[str, dict]:
            self.log.append((attempt, "publish failed" if publish_fails else "publish", "dist"))
            return ("failure" if publish_fails else "success"), {}

        return {("build", "upload"): upload, ("publish", "download"): download, ("publish", "publish"): publish}


def release(artifacts: RunArtifacts, attempt: str, *, publish_fails: bool = False,
            kept: Simulation | None = None) -> Simulation:
    event = Event("push", {"ref": TAG["ref"]}, github={**TAG, "run_attempt": attempt})
    return simulate(yaml.safe_load(RELEASE.read_text(encoding="utf-8")), event,
                    hooks=artifacts.hooks(attempt, publish_fails=publish_fails),
                    kept={"build": kept.jobs["build"]} if kept is not None else None)


def test_a_failed_publish_re_run_alone_finds_the_first_attempts_distributions():
    """"Re-run failed jobs": the build job of attempt 1 stands; the publish job of attempt 2
    downloads what it uploaded."""
    artifacts = RunArtifacts()
    first = release(artifacts, "1", publish_fails=True)
    assert (first.jobs["build"].result, first.jobs["publish"].result) == ("success", "failure")
    second = release(artifacts, "2", kept=first)
    assert (second.jobs["build"].result, second.jobs["publish"].result) == ("success", "success")
    assert artifacts.log == [("1", "upload", "dist"), ("1", "download", "dist"), ("1", "publish failed", "dist"),
                             ("2", "download", "dist"), ("2", "publish", "dist")]


def test_re_running_every_job_builds_again_over_the_same_name():
    artifacts = RunArtifacts()
    release(artifacts, "1", publish_fails=True)
    second = release(artifacts, "2")
    assert (second.jobs["build"].result, second.jobs["publish"].result) == ("success", "success")
    assert artifacts.log[3:] == [("2", "upload", "dist"), ("2", "download", "dist"), ("2", "publish", "dist")]
    assert artifacts.names == {"dist": 2}


def test_a_publish_that_failed_halfway_skips_the_files_pypi_already_has():
    [publish] = [s for s in yaml.safe_load(RELEASE.read_text(encoding="utf-8"))["jobs"]["publish"]["steps"]
                 if s.get("id") == "publish"]
    assert publish["uses"].startswith("pypa/gh-action-pypi-publish@")
    assert publish["with"] == {"skip-existing": True}


@pytest.mark.parametrize("name, overwrite", [("dist-${{ github.run_attempt }}", None), ("dist", None)])
def test_the_model_fails_the_re_run_of_the_old_names(name, overwrite):
    """The artifact model is not lenient: the name per attempt (the re-run's download looks for
    `dist-2`) and a fixed name without overwrite (the second build's upload) both fail."""
    workflow = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    for job, step_id in (("build", "upload"), ("publish", "download")):
        [step] = [s for s in workflow["jobs"][job]["steps"] if s.get("id") == step_id]
        step["with"]["name"] = name
        step["with"].pop("overwrite", None)
    artifacts = RunArtifacts()
    event = Event("push", {"ref": TAG["ref"]}, github={**TAG, "run_attempt": "1"})
    first = simulate(workflow, event, hooks=artifacts.hooks("1", publish_fails=True))
    rerun_failed = simulate(workflow, Event("push", {"ref": TAG["ref"]}, github={**TAG, "run_attempt": "2"}),
                            hooks=artifacts.hooks("2"), kept={"build": first.jobs["build"]})
    rerun_all = simulate(workflow, Event("push", {"ref": TAG["ref"]}, github={**TAG, "run_attempt": "3"}),
                         hooks=artifacts.hooks("3"))
    if name == "dist":
        assert (rerun_failed.jobs["publish"].result, rerun_all.jobs["build"].result) == ("success", "failure")
        assert ("3", "upload refused (409 Conflict)", "dist") in artifacts.log
    else:
        assert rerun_failed.jobs["publish"].result == "failure"
        assert ("2", "download: no such artifact", "dist-2") in artifacts.log
