"""The stage jobs of a plan: one matrix over (stage, lane) per wave and the images to build first.

- In: a `Plan` and the head commit's SHA (`None`: no image is tagged or built).
- Out: frozen `StageJobs`: `entries` (one `MatrixEntry` per lane of each running stage,
  in plan order, each with its stage's wave), `waves` (the entries of each wave, always
  `MAX_WAVES` of them, empty where no stage of the wave runs), `merges` (one `LaneMerge`
  per stage whose lanes were merged to fit a matrix), `images_to_build` (one `ImageBuild`
  per backend the plan builds and `images.<backend>` describes), and `has_stage_jobs`.
- Refused: nothing from a configuration the loader accepted: `fit_lanes` raises `ValueError`
  for more running stages in one wave than `MAX_MATRIX_JOBS`, which `config.stages` refuses first.
- Lanes: a stage with N shards and `max_parallel` P < N gets P lanes, shard i in lane
  i mod P, each lane running its shards one after another; otherwise one lane per shard.
  So one matrix per wave keeps each stage's own parallelism.
- GitHub's limit (`config.stages.MAX_MATRIX_JOBS`, 256 jobs per matrix): when the lanes of
  a wave's running stages exceed it, lanes are merged (`fit_lanes`): every stage keeps at
  least one lane, and the lanes go one at a time to the stage whose longest lane is
  longest (est seconds, then shards in it; ties to the earlier stage), each stage's
  shards dealt to its lanes longest first, each to the least-loaded lane (LPT). As a
  stage's longest lane never grows with more lanes (a stage keeps its split with fewer
  lanes when that is shorter), this leaves the wave's longest lane as short as any
  allotment of the 256 jobs to these splits can. Deterministic: plan order, shard indices
  and est_time decide every tie.
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

import heapq
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ci_policy.config.stages import GITHUB_MATRIX_RULE, MAX_MATRIX_JOBS, MAX_WAVES
from ci_policy.plan.timeouts import timeout_for

if TYPE_CHECKING:  # a built plan: its makers import them; `lint` (`plan.limits`) builds no plan
    # (tests/cli/test_startup.py::test_lint_and_registry_import_no_planner)
    from ci_policy.plan.build import Plan, StagePlan
    from ci_policy.plan.partition import Shard

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
    wave: int = 0

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
class LaneMerge:
    """A stage whose lanes were merged so that its wave's matrix fits GitHub's limit."""

    stage: str
    wave: int
    lanes_from: int
    lanes_to: int
    wave_lanes: int  # the wave's lanes before merging
    longest_seconds: float  # the stage's longest lane after merging (est)

    @property
    def reason(self) -> str:
        return (f"{self.lanes_from} lanes merged into {self.lanes_to}: wave {self.wave} needs {self.wave_lanes} "
                f"jobs and {GITHUB_MATRIX_RULE}; each lane runs its shards one after another "
                f"(longest lane {self.longest_seconds:g}s est)")

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "wave": self.wave, "lanes_from": self.lanes_from, "lanes_to": self.lanes_to,
                "reason": self.reason}


@dataclass(frozen=True)
class StageJobs:
    entries: tuple[MatrixEntry, ...]
    images_to_build: tuple[ImageBuild, ...]
    merges: tuple[LaneMerge, ...] = ()

    @property
    def has_stage_jobs(self) -> bool:
        return bool(self.entries)

    @property
    def waves(self) -> tuple[tuple[MatrixEntry, ...], ...]:
        """The entries of each wave, `MAX_WAVES` of them (the pipeline's wave jobs), in plan order."""
        return tuple(tuple(e for e in self.entries if e.wave == w) for w in range(MAX_WAVES))

    def matrix(self, wave: int | None = None) -> dict[str, list[dict[str, Any]]]:
        """`strategy.matrix` of the stage jobs (of one wave): `{"include": [entry, ...]}`."""
        return {"include": [e.as_dict() for e in self.entries if wave is None or e.wave == wave]}


def lanes(shards: int, max_parallel: int | None) -> tuple[tuple[int, ...], ...]:
    """The shard indices of each lane: P lanes when `max_parallel` P < `shards`, else one per shard."""
    count = max_parallel if max_parallel is not None and max_parallel < shards else shards
    return tuple(tuple(range(lane, shards, count)) for lane in range(count))


Lanes = tuple[tuple[int, ...], ...]


def _lpt(shards: tuple[Shard, ...], count: int) -> Lanes:
    """The shards dealt to `count` lanes, longest first (ties by index), each to the lane with the
    least est, then the fewest shards, then the lowest number; each lane's shards in index order,
    lanes in order of their first shard."""
    loads = [(0.0, 0, lane) for lane in range(count)]
    dealt: list[list[int]] = [[] for _ in range(count)]
    for shard in sorted(shards, key=lambda sh: (-sh.est_seconds, sh.index)):
        load, n, lane = heapq.heappop(loads)
        dealt[lane].append(shard.index)
        heapq.heappush(loads, (load + shard.est_seconds, n + 1, lane))
    return tuple(sorted(tuple(sorted(d)) for d in dealt if d))


def _longest(shards: tuple[Shard, ...], lanes_of: Lanes) -> tuple[float, int]:
    """The longest lane: (est seconds, shards), the order `fit_lanes` compares stages by."""
    est = {sh.index: sh.est_seconds for sh in shards}
    return max(((sum(est[i] for i in lane), len(lane)) for lane in lanes_of), default=(0.0, 0))


def fit_lanes(stages: list[tuple[tuple[Shard, ...], Lanes]], limit: int = MAX_MATRIX_JOBS) -> list[Lanes]:
    """Each stage's lanes (given: its shards and natural lanes), merged so that they total at most
    `limit`; unchanged when they fit. Refused (ValueError): more stages than `limit`."""
    if sum(len(natural) for _, natural in stages) <= limit:
        return [natural for _, natural in stages]
    if len(stages) > limit:
        raise ValueError(f"{len(stages)} stages cannot share {limit} jobs")
    # best[i]: stage i's shortest lanes found with at most its current count.
    best: list[Lanes] = [_lpt(shards, 1) for shards, _ in stages]
    count = [1] * len(stages)
    heap = [(_neg(_longest(shards, best[i])), i) for i, (shards, natural) in enumerate(stages) if len(natural) > 1]
    heapq.heapify(heap)
    total = len(stages)
    while heap and total < limit:
        _, i = heapq.heappop(heap)
        shards, natural = stages[i]
        count[i] += 1
        total += 1
        candidate = natural if count[i] == len(natural) else _lpt(shards, count[i])
        if _longest(shards, candidate) <= _longest(shards, best[i]):
            best[i] = candidate
        if count[i] < len(natural):
            heapq.heappush(heap, (_neg(_longest(shards, best[i])), i))
    return best


def _neg(key: tuple[float, int]) -> tuple[float, int]:
    return -key[0], -key[1]


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

    running = [stage for stage in plan.stages if stage.decision == "run"]
    natural = [lanes(len(stage.shards), stage.max_parallel) for stage in running]
    fitted: list[Lanes] = list(natural)
    merges = []
    for wave in range(MAX_WAVES):
        members = [i for i, stage in enumerate(running) if stage.stage.wave == wave]
        shards_of = [tuple(running[i].shards) for i in members]
        # lanes() numbers shards 0..N-1; a stage's shards carry those indices (`plan.partition`).
        merged = fit_lanes([(shards_of[k], natural[i]) for k, i in enumerate(members)])
        wave_lanes = sum(len(natural[i]) for i in members)
        for k, i in enumerate(members):
            fitted[i] = merged[k]
            if merged[k] != natural[i]:
                merges.append(LaneMerge(running[i].name, wave, len(natural[i]), len(merged[k]), wave_lanes,
                                        _longest(shards_of[k], merged[k])[0]))
    entries = []
    for stage, stage_lanes in zip(running, fitted, strict=True):
        backend = stage.stage.backend
        for lane, indices in enumerate(stage_lanes):
            shards = tuple(stage.shard(i) for i in indices)
            entries.append(MatrixEntry(
                stage=stage.name, lane=lane, shards=indices, backend=backend,
                # A cpu stage may leave runs_on out: GitHub's hosted Linux runner, as `/rerun-test` uses.
                runs_on=stage.stage.runs_on or (DEFAULT_CPU_RUNNER,), image=stage.stage.image or image_of(backend),
                container_options=config.backends.container_options_for(backend),
                timeout_minutes=lane_timeout_minutes(plan, stage, shards), wave=stage.stage.wave))
    return StageJobs(tuple(entries), images_to_build, tuple(merges))
