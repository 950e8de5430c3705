"""Small run results for the renderer tests: a registration, attempts and gate outcomes.

Values carry characters a checkout could put in a name (`|`, `:`, `,`, `%`, a newline) where
the renderer must escape them.
"""

from __future__ import annotations

from pathlib import Path

from ci_policy.gates.evaluate import ERROR, FAIL, PASS, Band, GateResult, GateSpec
from ci_policy.model.registry import Registration
from ci_policy.model.snapshot import load_snapshot
from ci_policy.plan.build import Plan, build_plan
from ci_policy.plan.filerun import FilePlan
from ci_policy.plan.policy import Trigger
from ci_policy.plan.results import Attempt, FileResult, GateOutcome, ShardResult, Verdict
from ci_policy.read.diff import Diff

FILE = "tests/test_a|b.py"
REG = Registration(file=FILE, line=3, backend="cuda", suite="gpu", est_time=60)
SLOW = Registration(file="tests/test_slow.py", line=4, backend="cuda", suite="gpu", est_time=10)
QUICK = Registration(file="tests/test_quick.py", line=6, backend="cuda", suite="gpu", est_time=20)
LEFT = Registration(file="tests/test_left.py", line=5, backend="cuda", suite="gpu", est_time=30)
FILE_PLAN = FilePlan(file="tests/test_a.py", hw="h200", suite="gpu", runs_on=("self-hosted", "h200"),
                     container_image="ghcr.io/x/img:1", timeout_seconds=61, container_options="--gpus all")


def spec(key: str, *, enforce: bool = True, allowlist_reason: str | None = None) -> GateSpec:
    return GateSpec(file=FILE, backend="cuda", suite="gpu", metric_key=key, steps="last",
                    constraint=(("rel_tol", 0.1),), enforce=enforce, allowlist_reason=allowlist_reason,
                    written="{}")


def gate_outcome() -> GateOutcome:
    """A pass, an enforced fail, a report-only fail and an allowlisted error."""
    return GateOutcome(FILE, REG, [
        GateResult(spec("train/loss"), -1, 1.5, PASS, "within band", Band(ref=1.4, lo=1.2, hi=1.6, n=5)),
        GateResult(spec("train/kl"), 2, 0.75, FAIL, "above 0.6", Band(ref=0.5, lo=0.4, hi=0.6, n=3)),
        GateResult(spec("train/grad|norm", enforce=False), -1, 9.0, FAIL, "above 2", None),
        GateResult(spec("train/x", allowlist_reason="known drift"), 0, None, ERROR, "no value", None),
    ], baseline="5 trusted run(s)")


def attempt(n: int, status, elapsed: float, verdict: Verdict | None = None) -> Attempt:
    return Attempt(attempt=n, status=status, elapsed=elapsed, started_at="2026-01-01T00:00:00Z",
                   returncode=0 if status == "pass" else 1, verdict=verdict)


def shard_result() -> ShardResult:
    """A file that passed, one that passed on retry but failed its gate, one that failed, one not run."""
    flaky = Verdict("flaky", True, "NCCL timeout")
    gated = FileResult(REG, 90.0, [attempt(1, "fail", 3.25, flaky), attempt(2, "pass", 61.0)], gate=gate_outcome())
    failed = FileResult(SLOW, 20.0, [attempt(1, "timeout", 20.0, Verdict("timeout", False, "killed at 20s"))])
    passed = FileResult(QUICK, None, [attempt(1, "pass", 12.5)])
    return ShardResult("gpu", 1, [passed, gated, failed], [LEFT])


CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: gpu, backend: cuda, runs_on: [h200], partitions: 2}
  - {name: cpu, backend: cpu, runs_on: [ubuntu-latest]}
"""


def write_repo(root: Path) -> Path:
    """Two CUDA files for the `megatron` label, and no CPU file."""
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "ci-policy.yml").write_text(CONFIG)
    (root / "labels.py").write_text('KNOWN_LABELS = {"megatron": "Megatron tests"}\n')
    (root / "tests").mkdir()
    for name, est in (("test_big_model.py", 300), ("test_small.py", 60)):
        (root / "tests" / name).write_text(
            f'from ci_policy import register_cuda_ci\n\nregister_cuda_ci({est}, "gpu", labels=["megatron"])\n'
            '\nif __name__ == "__main__":\n    main()\n')
    return root


def pr_plan(repo: Path, *labels: str) -> Plan:
    trigger = Trigger(event="pull_request", labels=labels)
    return build_plan(load_snapshot(repo), trigger, Diff.unavailable("no --diff or --base was given"))
