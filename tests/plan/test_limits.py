"""GitHub's size limits on what the plan job hands on, for the largest plans the 256 limit allows.

Measured: a real 300-partition plan's outputs stay under the worst case `plan.limits`
computes for its checkout (an upper bound); the worst case of four full waves of 10000-shard
stages, with its exact sizes: the plan job's outputs fit GitHub's 1 MB and a lane's
`--shards` fits Linux's 128 KiB; stages whose lanes carry long runner labels do not fit the
1 MB, which `lint` reports as CP111 at the heaviest stage.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from plan.test_jobs import SHA, reg

from ci_policy.app.lint import lint
from ci_policy.app.plan_documents import github_outputs
from ci_policy.app.requests import CheckoutRequest, ScanRequest
from ci_policy.config.top import parse_config
from ci_policy.model.snapshot import Snapshot, load_snapshot
from ci_policy.plan.build import build_plan
from ci_policy.plan.jobs import stage_jobs
from ci_policy.plan.limits import MAX_ENV_STRING_BYTES, MAX_JOB_OUTPUTS_BYTES, Sizes, size_problems, worst_case
from ci_policy.plan.policy import Trigger
from ci_policy.read.diff import Diff

ONE_STAGE = """\
version: 1
gpu_requires_labels: false
discovery:
  roots: [tests]
images:
  cuda: {repository: ghcr.io/example-org/example-repository-ci-cuda, dockerfile: docker/cuda.Dockerfile}
stages:
  - {name: cpu, backend: cpu}
  - {name: stage-c-test-4-gpu-h200, backend: cuda, runs_on: [linux-h200-gpu-4, self-hosted], partitions: 300}
"""


def outputs_of(text: str) -> dict[str, str]:
    values, lines = {}, iter(text.splitlines())
    for line in lines:
        name, delimiter = line.split("<<")
        values[name] = "\n".join(iter(lambda: next(lines), delimiter))
    return values


def test_a_300_partition_plan_stays_under_its_checkouts_worst_case(make_repo):
    files = {f"tests/test_g{i:03}.py": reg("cuda", "stage-c-test-4-gpu-h200", 10 + i % 7) for i in range(300)}
    files["tests/test_cpu.py"] = reg("cpu", "cpu", 5)
    snapshot = load_snapshot(make_repo(files, config=ONE_STAGE, labels=None))
    plan = build_plan(snapshot, Trigger(event="workflow_dispatch"), Diff.unavailable("none"))
    assert len(stage_jobs(plan, SHA).entries) == 256
    outputs = outputs_of(github_outputs(plan, "EOF", SHA))
    # The plan job's outputs (pr-pipeline.yml) hold the step's, with the PR's own beside them.
    chars = sum(len(v) for v in outputs.values())
    lanes = [e["shards"] for e in json.loads(outputs["stage_matrix_0"])["include"]]
    assert (chars, max(len(s) for s in lanes)) == (72503, 7)
    sizes = worst_case(snapshot)
    assert sizes == Sizes(outputs_bytes=176136, longest_shards=1089, heaviest=snapshot.config.stages[1])
    assert 2 * chars <= sizes.outputs_bytes
    assert size_problems(snapshot) == []


FULL_WAVES = ("version: 1\ndiscovery:\n  roots: [tests]\n"
              "images:\n  cuda: {repository: ghcr.io/example-org/example-repository-ci-cuda,\n"
              "         dockerfile: docker/cuda.Dockerfile}\nstages:\n"
              + "".join(f"  - {{name: stage-{w}-test-4-gpu-h200, backend: cuda, runs_on: [linux-h200-gpu-4], "
                        f"partitions: 10000{f', after: [stage-{w - 1}-test-4-gpu-h200]' if w else ''}}}\n"
                        for w in range(4)))


def test_four_full_waves_fit_githubs_outputs_and_a_lanes_environment():
    config = parse_config(FULL_WAVES)
    # 10000 files registered for each stage: 10000 shards each, 256 jobs in each of the 4 waves.
    registrations = [SimpleNamespace(backend=s.backend, suite=s.name) for s in config.stages for _ in range(10000)]
    snapshot = cast(Snapshot, SimpleNamespace(config=config, registrations=registrations))
    sizes = worst_case(snapshot)
    assert sizes == Sizes(outputs_bytes=958512, longest_shards=48889, heaviest=config.stages[0])
    assert sizes.outputs_bytes <= MAX_JOB_OUTPUTS_BYTES
    assert len("SHARDS=") + sizes.longest_shards + 1 <= MAX_ENV_STRING_BYTES
    assert size_problems(snapshot) == []


def test_lint_reports_a_configuration_whose_outputs_github_would_refuse(make_repo):
    # Ten 40-character runner labels on every lane: each of the 1024 matrix entries carries them.
    labels = ", ".join(f"runner-label-{i:02}-{'x' * 24}" for i in range(10))
    config = FULL_WAVES.replace("10000", "300").replace("runs_on: [linux-h200-gpu-4]", f"runs_on: [{labels}]")
    files = {f"tests/test_{w}_{i:03}.py": reg("cuda", f"stage-{w}-test-4-gpu-h200", 10) for w in range(4)
             for i in range(300)}
    repo = make_repo(files, config=config.replace("discovery:", "gpu_requires_labels: false\ndiscovery:"),
                     labels=None)
    report = lint(CheckoutRequest(repo, None, ScanRequest(Path(repo), no_cache=True)))
    assert [(d.code, d.line, d.message.split(";")[0]) for d in report.errors] == [
        ("CP111", 9, "stages: the plan job's outputs may reach 1417840 bytes (UTF-16) with every stage running")]
    assert report.errors[0].hint == ("lower stage stage-0-test-4-gpu-h200's partitions or max_parallel, or move "
                                     "stages to another wave with after: each wave is one matrix of at most 256 jobs")


def test_each_variant_counts_as_a_stage_of_its_wave_in_the_worst_case():
    plain = parse_config(ONE_STAGE)
    varied = parse_config(ONE_STAGE.replace(
        "partitions: 300}", "partitions: 300, variants: [{name: a}, {name: b, runs_on: [linux-mi355]}]}"))
    registrations = [SimpleNamespace(backend="cuda", suite="stage-c-test-4-gpu-h200") for _ in range(300)]
    one = worst_case(cast(Snapshot, SimpleNamespace(config=plain, registrations=registrations)))
    two = worst_case(cast(Snapshot, SimpleNamespace(config=varied, registrations=registrations)))
    assert (one.longest_shards, two.longest_shards) == (1089, 1089)
    # Variant a keeps the stage's longer runs_on: its matrix entries weigh most.
    assert one.heaviest is not None and two.heaviest is not None
    assert (one.heaviest.key, two.heaviest.key) == ("stage-c-test-4-gpu-h200", "stage-c-test-4-gpu-h200+a")
    assert two.outputs_bytes > one.outputs_bytes
