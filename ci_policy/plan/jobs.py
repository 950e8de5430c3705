"""The stage jobs of a plan: one matrix over (stage, lane) and the images to build first.

- In: a `Plan` and the head commit's SHA (`None`: no image is tagged or built).
- Out: frozen `StageJobs`: `entries` (one `MatrixEntry` per lane of each running stage,
  in plan order), `images_to_build` (one `ImageBuild` per backend the plan builds and
  `images.<backend>` describes), and `has_stage_jobs`.
- Lanes: a stage with N shards and `max_parallel` P < N gets P lanes, shard i in lane
  i mod P, each lane running its shards one after another; otherwise one lane per shard.
  So one matrix for every stage keeps each stage's own parallelism.
- An entry's `image`: `repository:<head sha>` when its backend's image is built in this
  run, `repository:<file_run.default_tag>` when `images.<backend>` exists but nothing is
  built, "" (no container) otherwise. `container_options`: the backend's
  (`Backends.container_options_for`).
- `timeout_minutes`: `ceil(sum of the lane's file limits / 60) + 10`, each file's limit
  from `plan.timeouts.timeout_for` (the limit `ci-policy run` enforces, one attempt per
  file); `DEFAULT_TIMEOUT_MINUTES` (GitHub's own default) when a file of the lane has no
  limit. The 10 minutes are for the job's checkout, setup and container start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ci_policy.plan.build import Plan, StagePlan
from ci_policy.plan.partition import Shard
from ci_policy.plan.timeouts import timeout_for

# A cpu stage without runs_on: GitHub's hosted Linux runner (its stage jobs, and `/rerun-test`).
DEFAULT_CPU_RUNNER = "ubuntu-latest"

# Minutes a job may take beyond its files' limits: checkout, setup, container start.
SETUP_MINUTES = 10
# GitHub's default `timeout-minutes`, for a lane with a file that has no time limit.
DEFAULT_TIMEOUT_MINUTES = 360


@dataclass(frozen=True)
class MatrixEntry:
    """One stage job: a lane of a running stage and how its runner is set up."""

    stage: str
    lane: int
    shards: tuple[int, ...]
    backend: str
    runs_on: tuple[str, ...]
    image: str
    container_options: str
    timeout_minutes: int

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "lane": self.lane, "shards": " ".join(str(i) for i in self.shards),
                "backend": self.backend, "runs_on": list(self.runs_on), "image": self.image,
                "container_options": self.container_options, "timeout_minutes": self.timeout_minutes}


@dataclass(frozen=True)
class ImageBuild:
    """An image the stage jobs of this run need built and pushed first."""

    backend: str
    image: str  # repository:head-sha
    dockerfile: str
    context: str

    def as_dict(self) -> dict[str, str]:
        return {"backend": self.backend, "image": self.image, "dockerfile": self.dockerfile, "context": self.context}


@dataclass(frozen=True)
class StageJobs:
    entries: tuple[MatrixEntry, ...]
    images_to_build: tuple[ImageBuild, ...]

    @property
    def has_stage_jobs(self) -> bool:
        return bool(self.entries)

    def matrix(self) -> dict[str, list[dict[str, Any]]]:
        """`strategy.matrix` of the stage jobs: `{"include": [entry, ...]}`."""
        return {"include": [e.as_dict() for e in self.entries]}


def lanes(shards: int, max_parallel: int | None) -> tuple[tuple[int, ...], ...]:
    """The shard indices of each lane: P lanes when `max_parallel` P < `shards`, else one per shard."""
    count = max_parallel if max_parallel is not None and max_parallel < shards else shards
    return tuple(tuple(range(lane, shards, count)) for lane in range(count))


def lane_timeout_minutes(plan: Plan, stage: StagePlan, shards: tuple[Shard, ...]) -> int:
    regs = {r.file: r for r in stage.tests}
    limits = [timeout_for(regs[f], stage.stage.timeout_per_file, plan.config.runner.timeout_from_est_time)
              for shard in shards for f in shard.files]
    if any(limit is None for limit in limits):
        return DEFAULT_TIMEOUT_MINUTES
    return math.ceil(sum(limit for limit in limits if limit is not None) / 60) + SETUP_MINUTES


def stage_jobs(plan: Plan, head_sha: str | None) -> StageJobs:
    config = plan.config
    built = {backend for backend, action in plan.images if action == "build"} if head_sha else set()
    images_to_build = tuple(
        ImageBuild(backend, f"{image.repository}:{head_sha}", image.dockerfile, image.context)
        for backend, _action in plan.images if backend in built and (image := config.images.get(backend)) is not None)
    building = {b.backend for b in images_to_build}

    def image_of(backend: str) -> str:
        image = config.images.get(backend)
        if image is None:
            return ""
        return f"{image.repository}:{head_sha if backend in building else config.file_run.default_tag}"

    entries = []
    for stage in plan.stages:
        if stage.decision != "run":
            continue
        backend = stage.stage.backend
        for lane, indices in enumerate(lanes(len(stage.shards), stage.max_parallel)):
            shards = tuple(stage.shard(i) for i in indices)
            entries.append(MatrixEntry(
                stage=stage.name, lane=lane, shards=indices, backend=backend,
                # A cpu stage may leave runs_on out: GitHub's hosted Linux runner, as `/rerun-test` uses.
                runs_on=stage.stage.runs_on or (DEFAULT_CPU_RUNNER,), image=image_of(backend),
                container_options=config.backends.container_options_for(backend),
                timeout_minutes=lane_timeout_minutes(plan, stage, shards)))
    return StageJobs(tuple(entries), images_to_build)

