"""GitHub's size limits on what the plan job hands the other jobs, checked for a checkout's worst case.

- In: a `Snapshot` (the configuration and every registration).
- Out: `worst_case(snapshot)`: the largest stage job outputs any plan of this checkout can
  write (`Sizes`: the plan job's outputs in bytes as GitHub counts them, the longest
  `--shards` of a lane); and
  `size_problems(snapshot)`: one CP111 error per limit the worst case exceeds, located at
  the stage that weighs most, naming the rule.
- Refused: nothing raised: a limit exceeded is a CP111 diagnostic, which `lint` reports (`app.lint`).
- The worst case: every stage that is not external runs with every file registered for
  it (a stage with a `command`, with its one command), in as many shards as it may have
  (`partitions`; with `auto`, `max_partitions` or one per file) and as many lanes as its
  largest `max_parallel` allows, each wave's lanes capped at GitHub's 256 jobs per matrix;
  every image built (a 40-hex tag); every time limit of four digits. An upper bound: a real
  plan's outputs are never larger (tests/plan/test_limits.py holds the planner to it).
- The rules (cited where they decide): job outputs "can be a maximum of 1 MB per job [...]
  Size is approximated based on UTF-16 encoding" (GitHub, "Passing information between
  jobs"); one environment string (`NAME=value`) or argument at most `MAX_ARG_STRLEN`, 32
  pages (131072 bytes), on Linux (execve(2)): a lane's `SHARDS` is the one plan value that
  reaches a shell, and stays far below it; the result job takes each needed job's result by
  name, not `toJSON(needs)` with the plan job's outputs, so the outputs meet only the 1 MB.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ci_policy.config import codes
from ci_policy.config.stages import MAX_MATRIX_JOBS, MAX_WAVES, Stage
from ci_policy.errors import Diagnostic
from ci_policy.model.snapshot import Snapshot
from ci_policy.plan.jobs import DEFAULT_CPU_RUNNER, MatrixEntry

MAX_JOB_OUTPUTS_BYTES = 1_000_000
MAX_ENV_STRING_BYTES = 131_072
# What the plan job's other outputs (PR, SHAs, labels, files lists) add around the stage
# matrices: generous, so that the bound stays one.
OTHER_OUTPUTS = 16_384


@dataclass(frozen=True)
class Sizes:
    outputs_bytes: int  # the plan job's outputs, UTF-16 (2 bytes a character: names are ASCII)
    longest_shards: int  # a lane's `--shards` (and `SHARDS=`), in characters
    heaviest: Stage | None  # the stage whose lanes weigh most in the outputs


def _max_shards(stage: Stage, files: int) -> int:
    if isinstance(stage.partitions, int):
        return min(files, stage.partitions)
    return min(files, stage.max_partitions) if stage.max_partitions is not None else files


def _max_lanes(stage: Stage, shards: int) -> int:
    limit = stage.max_parallel
    if limit is None:
        return shards
    return min(shards, max(n for n in (limit.default, limit.priority, limit.schedule) if n is not None))


def _indices(count: int) -> int:
    """Characters of `"0 1 ... count-1"`: every shard index of a stage, once, across its lanes."""
    return len(" ".join(str(i) for i in range(count)))


def worst_case(snapshot: Snapshot) -> Sizes:
    config = snapshot.config
    by_stage: dict[tuple[str, str], int] = {}
    for r in snapshot.registrations:
        by_stage[r.backend, r.suite] = by_stage.get((r.backend, r.suite), 0) + 1
    planned = config.planned_stages  # each variant is a stage of its own, with jobs of its own
    # A stage with a command has no registration: its command is its one file.
    files = {s.key: 1 if s.command else by_stage.get((s.backend, s.name), 0) for s in planned}
    matrices = 0
    longest = 0
    weights: dict[str, int] = {}
    for wave in range(MAX_WAVES):
        stages = [s for s in planned if s.wave == wave and not s.external and files.get(s.key)]
        lanes = {s.key: _max_lanes(s, _max_shards(s, files[s.key])) for s in stages}
        jobs = min(MAX_MATRIX_JOBS, sum(lanes.values()))
        size = len('{"include":[]}') + max(0, jobs - 1)  # the commas between entries
        for s in stages:
            entry = MatrixEntry(stage=s.key, lane=MAX_MATRIX_JOBS - 1, shards=(), backend=s.backend,
                                runs_on=s.runs_on or (DEFAULT_CPU_RUNNER,),
                                image=_image(snapshot, s), container_options=config.backends.container_options_for(
                                    s.backend), timeout_minutes=9999, wave=wave)
            text = json.dumps(entry.as_dict(), separators=(",", ":"))
            shards = _indices(_max_shards(s, files[s.key]))
            # Each of the stage's jobs (at most the wave's) carries the entry; its shards once in all.
            weight = min(lanes[s.key], jobs) * len(text) + shards
            weights[s.key] = weight
            size += weight
            longest = max(longest, shards)
        matrices += size
    chars = matrices + OTHER_OUTPUTS
    heaviest = max(planned, key=lambda s: weights.get(s.key, -1)) if weights else None
    return Sizes(outputs_bytes=2 * chars, longest_shards=longest, heaviest=heaviest)


def _image(snapshot: Snapshot, stage: Stage) -> str:
    image = snapshot.config.images.get(stage.backend)
    if stage.image is not None:
        return stage.image
    return "" if image is None else f"{image.repository}:{'0' * 40}"


def size_problems(snapshot: Snapshot) -> list[Diagnostic]:
    """A CP111 error per GitHub limit the worst case of this checkout's stage jobs exceeds."""
    sizes = worst_case(snapshot)
    stage = sizes.heaviest
    if stage is None:
        return []
    hint = (f"lower stage {stage.key}'s partitions or max_parallel, or move stages to another wave with after: "
            "each wave is one matrix of at most 256 jobs")
    problems = []

    def located(message: str) -> Diagnostic:
        return Diagnostic(message, path=snapshot.config.path, line=stage.line, hint=hint, code=codes.GITHUB_LIMIT)

    if sizes.outputs_bytes > MAX_JOB_OUTPUTS_BYTES:
        problems.append(located(
            f"stages: the plan job's outputs may reach {sizes.outputs_bytes} bytes (UTF-16) with every stage "
            f"running; GitHub keeps at most 1 MB of outputs per job (\"Passing information between jobs\")"))
    if sizes.longest_shards + len("SHARDS=") + 1 > MAX_ENV_STRING_BYTES:
        problems.append(located(
            f"stages: a lane's SHARDS may reach {sizes.longest_shards} characters; Linux passes at most "
            "131072 bytes in one environment variable (MAX_ARG_STRLEN)"))
    return problems
