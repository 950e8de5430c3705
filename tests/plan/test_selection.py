"""Stage selection: which stages run for a trigger, labels and diff, each with its reasons.

Table-driven over one small checkout (`checkout()`): five stages (a CPU stage, two CUDA
stages, a ROCm stage and an external CUDA stage), path rules, no-GPU paths, broad scopes
and cadences. Each row gives the trigger, the `git diff --name-status -z` records (or
None for an unavailable diff) and the exact decision, reasons and selected files of every
planned stage. A property test then compares `decide` with the rules restated directly.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_policy.errors import InputError
from ci_policy.model.snapshot import Snapshot, load_snapshot
from ci_policy.plan.policy import Trigger, resolve
from ci_policy.plan.selection import PathEffect, classify, decide
from ci_policy.read.diff import Diff, read_diff
from ci_policy.read.globs import matches

MAIN = '\nif __name__ == "__main__":\n    main()\n'

CONFIG = """\
version: 1
discovery:
  roots: [tests]
  implicit:
    - {root: tests/unit, backend: cpu, suite: cpu, est_time: 1, cpu_only: true}
stages:
  - {name: cpu, backend: cpu}
  - {name: gpu-a, backend: cuda, runs_on: [h200], partitions: 2}
  - {name: gpu-b, backend: cuda, runs_on: [h200, 4gpu], partitions: 2}
  - {name: amd, backend: rocm, runs_on: [mi350]}
  - {name: ext, backend: cuda, external: true}
cadences:
  schedules: {"0 3 * * *": nightly, "0 4 * * 6": weekly}
  nightly_exclude: [long]
scopes:
  run-ci-all: {exclude: []}
  run-ci-image: {exclude: [long]}
selection:
  explicit: EXPLICIT
  no_gpu_paths: ["docs/**", "**/*.md", "tests/unit/**"]
  rules:
    - {paths: ["src/megatron/**"], labels: [megatron]}
    - {paths: ["src/fsdp.py"], labels: [fsdp]}
    - {paths: ["src/unused/**"], labels: [spare]}
"""

LABELS = ('KNOWN_LABELS = {"megatron": "Megatron", "fsdp": "FSDP", "long": "slow tests", '
          '"amd": "ROCm", "spare": "used by no test"}\n')


def cuda(call: str) -> str:
    return "from ci_policy import register_cuda_ci\n\n" + call + "\n" + MAIN


FILES = {
    "tests/unit/test_cpu.py": "def test_ok():\n    assert True\n",
    "tests/unit/conftest.py": "",
    "tests/gpu/test_mega.py": cuda('register_cuda_ci(est_time=300, suite="gpu-a", labels=["megatron"])'),
    "tests/gpu/test_fsdp.py": cuda('register_cuda_ci(est_time=200, suite="gpu-a", labels=["fsdp"])'),
    "tests/gpu/test_mega_long.py": cuda(
        'register_cuda_ci(est_time=900, suite="gpu-b", labels=["megatron", "long"])'),
    "tests/gpu/test_long_only.py": cuda('register_cuda_ci(est_time=1200, suite="gpu-b", labels=["long"])'),
    "tests/gpu/test_nightly.py": cuda(
        'register_cuda_ci(est_time=100, suite="gpu-b", labels=["fsdp"], nightly=True)'),
    "tests/gpu/test_amd.py": (
        "from ci_policy import register_rocm_ci\n\n"
        'register_rocm_ci(est_time=400, suite="amd", labels=["fsdp", "amd"])\n' + MAIN),
    "tests/gpu/test_ext.py": cuda('register_cuda_ci(est_time=50, suite="ext", labels=["megatron"])'),
}


def checkout(make_repo, explicit: str = "run") -> Snapshot:
    repo = make_repo(FILES, config=CONFIG.replace("EXPLICIT", explicit), labels=LABELS)
    snapshot = load_snapshot(repo)
    assert snapshot.errors == ()
    return snapshot


def diff_of(records: list[str] | None) -> Diff:
    """A diff parsed from `git diff --name-status -z` bytes; None means unavailable."""
    if records is None:
        return read_diff(b"", "pr.diff")
    return read_diff(("\0".join(records) + "\0").encode(), "pr.diff")


def outcome(snapshot: Snapshot, trigger: Trigger, diff: Diff):
    policy = resolve(trigger, snapshot.config, snapshot.labels)
    policy, decisions = decide(snapshot, policy, diff)
    table = {d.stage.name: (d.decision, list(d.reasons), sorted(r.file for r in d.selected))
             for d in decisions}
    return policy, table


def pr(*labels: str) -> Trigger:
    return Trigger(event="pull_request", labels=labels)


CPU_RUN = ("run", ["run: stage is not diff-pruned (1 selected)"], ["tests/unit/test_cpu.py"])
MEGA = ["tests/gpu/test_mega.py"]
MEGA_FSDP = ["tests/gpu/test_fsdp.py", "tests/gpu/test_mega.py"]
NEEDS_A = ("skip", ["skip: no selected tests (its tests need one of: fsdp, megatron)"], [])
NEEDS_B = ("skip", ["skip: no selected tests (its tests need one of: long, megatron)"], [])
NEEDS_AMD = ("skip", ["skip: no selected tests (its tests need one of: amd, fsdp)"], [])
DOCS = ["M", "docs/guide.md", "M", "README.md"]
DOCS_ONLY = "skip: the diff touches only README.md, docs/guide.md"

CASES = [
    pytest.param(
        "run", pr("run-ci-megatron"), DOCS,
        {"megatron"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: requested by run-ci-megatron"], MEGA),
         "gpu-b": ("run", ["run: requested by run-ci-megatron"], ["tests/gpu/test_mega_long.py"]),
         "amd": NEEDS_AMD},
        id="explicit-label-forces-its-stages-through-a-docs-only-diff"),
    pytest.param(
        "prune", pr("run-ci-megatron"), DOCS,
        {"megatron"},
        {"cpu": CPU_RUN,
         "gpu-a": ("skip", [DOCS_ONLY], MEGA),
         "gpu-b": ("skip", [DOCS_ONLY], ["tests/gpu/test_mega_long.py"]),
         "amd": NEEDS_AMD},
        id="explicit-prune-lets-the-diff-prune-a-requested-stage"),
    pytest.param(
        "prune", pr("run-ci-all"), DOCS,
        {"amd", "fsdp", "long", "megatron", "spare"},
        {"cpu": CPU_RUN,
         "gpu-a": ("skip", [DOCS_ONLY], MEGA_FSDP),
         "gpu-b": ("skip", [DOCS_ONLY], ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py"]),
         "amd": ("skip", [DOCS_ONLY], ["tests/gpu/test_amd.py"])},
        id="docs-only-pr-skips-every-gpu-stage"),
    pytest.param(
        "run", pr("run-ci-image"), DOCS,
        {"amd", "fsdp", "megatron", "spare"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: included by run-ci-image"], MEGA_FSDP),
         # Exclusion means exclusion: [megatron, long] is not taken in for its megatron.
         "gpu-b": ("skip", ["skip: no selected tests (its tests need one of: long, or: carries long, which "
                            "run-ci-image excludes)"], []),
         "amd": ("run", ["run: included by run-ci-image"], ["tests/gpu/test_amd.py"])},
        id="broad-scope-excludes-long-and-forces-its-stages"),
    pytest.param(
        "run", pr("run-ci-image", "run-ci-long"), DOCS,
        {"amd", "fsdp", "long", "megatron", "spare"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: included by run-ci-image"], MEGA_FSDP),
         # run-ci-image excludes long: it includes neither test of gpu-b, run-ci-long selects both.
         "gpu-b": ("run", ["run: requested by run-ci-long"],
                   ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py"]),
         "amd": ("run", ["run: included by run-ci-image"], ["tests/gpu/test_amd.py"])},
        id="explicit-label-beats-scope-exclusion"),
    pytest.param(
        "run", pr(), DOCS,
        set(),
        {"cpu": CPU_RUN, "gpu-a": NEEDS_A, "gpu-b": NEEDS_B, "amd": NEEDS_AMD},
        id="no-labels-docs-only-runs-only-cpu"),
    pytest.param(
        "prune", pr("run-ci-fsdp"), None,
        {"fsdp"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: the diff is unavailable (pr.diff: the diff is empty), so every runnable "
                           "stage runs"], ["tests/gpu/test_fsdp.py"]),
         "gpu-b": NEEDS_B,
         "amd": ("run", ["run: the diff is unavailable (pr.diff: the diff is empty), so every runnable "
                         "stage runs"], ["tests/gpu/test_amd.py"])},
        id="unavailable-diff-skips-only-non-runnable-stages"),
    pytest.param(
        "prune", pr("run-ci-all"), ["R090", "tests/gpu/test_fsdp.py", "docs/fsdp-notes.md"],
        {"amd", "fsdp", "long", "megatron", "spare"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: tests/gpu/test_fsdp.py changed"], MEGA_FSDP),
         "gpu-b": ("skip", ["skip: the diff touches only docs/fsdp-notes.md, tests/gpu/test_fsdp.py"],
                   ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py"]),
         "amd": ("skip", ["skip: the diff touches only docs/fsdp-notes.md, tests/gpu/test_fsdp.py"],
                 ["tests/gpu/test_amd.py"])},
        id="rename-old-path-is-a-registered-test"),
    pytest.param(
        "prune", pr("run-ci-all"), ["R100", "tests/gpu/test_gone.py", "tests/gpu/test_mega.py"],
        {"amd", "fsdp", "long", "megatron", "spare"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: tests/gpu/test_gone.py matches no rule, so every stage runs"], MEGA_FSDP),
         "gpu-b": ("run", ["run: tests/gpu/test_gone.py matches no rule, so every stage runs"],
                   ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py"]),
         "amd": ("run", ["run: tests/gpu/test_gone.py matches no rule, so every stage runs"],
                 ["tests/gpu/test_amd.py"])},
        id="rename-old-path-gone-from-the-checkout-fans-out"),
    pytest.param(
        "prune", pr("run-ci-megatron"), ["M", "src/model.py", "M", "docs/guide.md"],
        {"megatron"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: src/model.py matches no rule, so every stage runs"], MEGA),
         "gpu-b": ("run", ["run: src/model.py matches no rule, so every stage runs"],
                   ["tests/gpu/test_mega_long.py"]),
         "amd": NEEDS_AMD},
        id="unknown-path-fans-out-to-every-runnable-stage"),
    pytest.param(
        "prune", pr("run-ci-megatron"),
        ["M", "src/a.py", "M", "src/b.py", "M", "src/c.py", "D", "src/d.py", "A", "src/e.py", "M", "src/f.py",
         "M", "setup.py"],
        {"megatron"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: setup.py, src/a.py, src/b.py, src/c.py, src/d.py and 2 more match no rule, "
                           "so every stage runs"], MEGA),
         "gpu-b": ("run", ["run: setup.py, src/a.py, src/b.py, src/c.py, src/d.py and 2 more match no rule, "
                           "so every stage runs"], ["tests/gpu/test_mega_long.py"]),
         "amd": NEEDS_AMD},
        id="many-unknown-paths-are-abbreviated"),
    pytest.param(
        "run", pr(), ["M", "src/megatron/core.py", "M", "docs/guide.md"],
        {"megatron"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: src/megatron/core.py selects megatron"], MEGA),
         "gpu-b": ("run", ["run: src/megatron/core.py selects megatron"], ["tests/gpu/test_mega_long.py"]),
         "amd": NEEDS_AMD},
        id="rule-auto-selects-megatron"),
    pytest.param(
        "run", pr(), ["M", "src/megatron/README.md"],
        {"megatron"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: src/megatron/README.md selects megatron"], MEGA),
         "gpu-b": ("run", ["run: src/megatron/README.md selects megatron"], ["tests/gpu/test_mega_long.py"]),
         "amd": NEEDS_AMD},
        id="rule-wins-over-no-gpu-path"),
    pytest.param(
        "run", pr(), ["M", "src/fsdp.py"],
        {"fsdp"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: src/fsdp.py selects fsdp"], ["tests/gpu/test_fsdp.py"]),
         "gpu-b": NEEDS_B,
         "amd": ("run", ["run: src/fsdp.py selects fsdp"], ["tests/gpu/test_amd.py"])},
        id="rule-stage-with-only-nightly-tests-stays-skipped"),
    pytest.param(
        "run", pr("run-ci-long"), ["M", "src/fsdp.py", "M", "src/megatron/a.py", "M", "src/megatron/b.py"],
        {"fsdp", "long", "megatron"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: src/fsdp.py, src/megatron/a.py, src/megatron/b.py selects fsdp, megatron"],
                   MEGA_FSDP),
         # gpu-b holds a (nightly-only) fsdp test, so the fsdp rule affects it too.
         "gpu-b": ("run", ["run: src/fsdp.py, src/megatron/a.py, src/megatron/b.py selects fsdp, megatron",
                           "run: requested by run-ci-long"],
                   ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py"]),
         "amd": ("run", ["run: src/fsdp.py selects fsdp"], ["tests/gpu/test_amd.py"])},
        id="several-rules-and-an-explicit-label"),
    pytest.param(
        "run", pr(), ["M", "src/unused/x.py"],
        {"spare"},
        {"cpu": CPU_RUN, "gpu-a": NEEDS_A, "gpu-b": NEEDS_B, "amd": NEEDS_AMD},
        id="rule-whose-labels-no-test-uses-affects-nothing"),
    pytest.param(
        "prune", pr("run-ci-megatron"), ["M", "tests/gpu/test_mega.py"],
        {"megatron"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: tests/gpu/test_mega.py changed"], MEGA),
         "gpu-b": ("skip", ["skip: the diff touches only tests/gpu/test_mega.py"], ["tests/gpu/test_mega_long.py"]),
         "amd": NEEDS_AMD},
        id="changed-test-affects-only-its-own-stage"),
    pytest.param(
        "prune", pr("run-ci-all"), ["M", "tests/unit/test_cpu.py", "A", "tests/unit/conftest.py"],
        {"amd", "fsdp", "long", "megatron", "spare"},
        {"cpu": CPU_RUN,
         "gpu-a": ("skip", ["skip: the diff touches only tests/unit/conftest.py, tests/unit/test_cpu.py"],
                   MEGA_FSDP),
         "gpu-b": ("skip", ["skip: the diff touches only tests/unit/conftest.py, tests/unit/test_cpu.py"],
                   ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py"]),
         "amd": ("skip", ["skip: the diff touches only tests/unit/conftest.py, tests/unit/test_cpu.py"],
                 ["tests/gpu/test_amd.py"])},
        id="cpu-test-and-no-gpu-path-leave-gpu-stages-pruned"),
    pytest.param(
        "prune", pr("run-ci-all"), ["M", "tests/gpu/test_ext.py"],
        {"amd", "fsdp", "long", "megatron", "spare"},
        {"cpu": CPU_RUN,
         "gpu-a": ("skip", ["skip: the diff touches only tests/gpu/test_ext.py"], MEGA_FSDP),
         "gpu-b": ("skip", ["skip: the diff touches only tests/gpu/test_ext.py"],
                   ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py"]),
         "amd": ("skip", ["skip: the diff touches only tests/gpu/test_ext.py"], ["tests/gpu/test_amd.py"])},
        id="external-stage-test-affects-no-planned-stage"),
    pytest.param(
        "run", pr("nightly"), DOCS,
        {"amd", "fsdp", "megatron", "spare"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: included by the nightly cadence"], MEGA_FSDP),
         "gpu-b": ("run", ["run: included by the nightly cadence"], ["tests/gpu/test_nightly.py"]),
         "amd": ("run", ["run: included by the nightly cadence"], ["tests/gpu/test_amd.py"])},
        id="nightly-pr-label-admits-nightly-tests"),
    pytest.param(
        "run", pr("run-ci-nosuch", "wip", "bypass-fastfail"), DOCS,
        set(),
        {"cpu": CPU_RUN, "gpu-a": NEEDS_A, "gpu-b": NEEDS_B, "amd": NEEDS_AMD},
        id="unknown-and-foreign-labels-select-nothing"),
    # Other events run every stage with selected tests, whatever the diff.
    pytest.param(
        "prune", Trigger(event="schedule", schedule="0 3 * * *"), DOCS,
        {"amd", "fsdp", "megatron", "spare"},
        {"cpu": ("run", ["run: schedule event runs every stage with selected tests (1 selected)"],
                 ["tests/unit/test_cpu.py"]),
         "gpu-a": ("run", ["run: schedule event runs every stage with selected tests (2 selected)"], MEGA_FSDP),
         "gpu-b": ("run", ["run: schedule event runs every stage with selected tests (1 selected)"],
                   ["tests/gpu/test_nightly.py"]),
         "amd": ("run", ["run: schedule event runs every stage with selected tests (1 selected)"],
                 ["tests/gpu/test_amd.py"])},
        id="nightly-schedule"),
    pytest.param(
        "prune", Trigger(event="schedule", schedule="0 4 * * 6"), None,
        {"amd", "fsdp", "long", "megatron", "spare"},
        {"cpu": ("run", ["run: schedule event runs every stage with selected tests (1 selected)"],
                 ["tests/unit/test_cpu.py"]),
         "gpu-a": ("run", ["run: schedule event runs every stage with selected tests (2 selected)"], MEGA_FSDP),
         "gpu-b": ("run", ["run: schedule event runs every stage with selected tests (3 selected)"],
                   ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py", "tests/gpu/test_nightly.py"]),
         "amd": ("run", ["run: schedule event runs every stage with selected tests (1 selected)"],
                 ["tests/gpu/test_amd.py"])},
        id="weekly-schedule-without-a-diff"),
    pytest.param(
        "run", Trigger(event="workflow_dispatch"), DOCS,
        set(),
        {"cpu": ("run", ["run: workflow_dispatch event runs every stage with selected tests (1 selected)"],
                 ["tests/unit/test_cpu.py"]),
         "gpu-a": NEEDS_A, "gpu-b": NEEDS_B, "amd": NEEDS_AMD},
        id="dispatch-regular-selects-only-unlabelled-tests"),
    pytest.param(
        "run", Trigger(event="workflow_call", cadence="release"), ["M", "src/fsdp.py"],
        {"amd", "fsdp", "long", "megatron", "spare"},
        {"cpu": ("run", ["run: workflow_call event runs every stage with selected tests (1 selected)"],
                 ["tests/unit/test_cpu.py"]),
         "gpu-a": ("run", ["run: workflow_call event runs every stage with selected tests (2 selected)"],
                   MEGA_FSDP),
         "gpu-b": ("run", ["run: workflow_call event runs every stage with selected tests (3 selected)"],
                   ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py", "tests/gpu/test_nightly.py"]),
         "amd": ("run", ["run: workflow_call event runs every stage with selected tests (1 selected)"],
                 ["tests/gpu/test_amd.py"])},
        id="call-with-release-cadence-ignores-the-diff"),
]


@pytest.mark.parametrize("explicit, trigger, records, include, expected", CASES)
def test_stage_selection(make_repo, explicit, trigger, records, include, expected):
    snapshot = checkout(make_repo, explicit)
    policy, table = outcome(snapshot, trigger, diff_of(records))
    assert set(policy.include_labels) == include
    assert table == expected


def test_external_stage_is_never_planned(make_repo):
    snapshot = checkout(make_repo)
    for trigger in (pr("run-ci-all"), Trigger(event="schedule", schedule="0 4 * * 6")):
        _, decisions = decide(snapshot, resolve(trigger, snapshot.config, snapshot.labels),
                              diff_of(["M", "tests/gpu/test_ext.py"]))
        assert [d.stage.name for d in decisions] == ["cpu", "gpu-a", "gpu-b", "amd"]


def test_auto_selected_labels_name_the_path_that_selected_them(make_repo):
    snapshot = checkout(make_repo)
    policy = resolve(pr("run-ci-fsdp"), snapshot.config, snapshot.labels)
    after, _ = decide(snapshot, policy, diff_of(["M", "src/megatron/x.py", "M", "src/fsdp.py"]))
    # The explicit request keeps its source; the rule adds megatron with the path that caused it.
    assert after.sources == (("fsdp", "run-ci-fsdp"), ("megatron", "a change to src/megatron/x.py"))
    assert after.include_labels == ("fsdp", "megatron")
    assert after.raw_labels == ("run-ci-fsdp",)


def test_auto_selection_does_not_happen_outside_pull_requests(make_repo):
    snapshot = checkout(make_repo)
    policy = resolve(Trigger(event="workflow_dispatch"), snapshot.config, snapshot.labels)
    after, _ = decide(snapshot, policy, diff_of(["M", "src/megatron/x.py"]))
    assert after.include_labels == ()


@pytest.mark.parametrize("path, effect", [
    ("tests/gpu/test_mega.py", PathEffect("tests/gpu/test_mega.py", "test", stages=("gpu-a",))),
    ("tests/gpu/test_ext.py", PathEffect("tests/gpu/test_ext.py", "test", stages=("ext",))),
    ("tests/unit/test_cpu.py", PathEffect("tests/unit/test_cpu.py", "test", stages=("cpu",))),
    ("tests/unit/conftest.py", PathEffect("tests/unit/conftest.py", "no_gpu")),
    ("src/megatron/core.py", PathEffect("src/megatron/core.py", "rule", stages=("ext", "gpu-a", "gpu-b"),
                                        labels=("megatron",))),
    ("src/megatron/README.md", PathEffect("src/megatron/README.md", "rule", stages=("ext", "gpu-a", "gpu-b"),
                                          labels=("megatron",))),
    ("src/fsdp.py", PathEffect("src/fsdp.py", "rule", stages=("amd", "gpu-a", "gpu-b"), labels=("fsdp",))),
    ("src/fsdp.pyc", PathEffect("src/fsdp.pyc", "other")),
    ("src/unused/deep/x.py", PathEffect("src/unused/deep/x.py", "rule", labels=("spare",))),
    ("README.md", PathEffect("README.md", "no_gpu")),
    ("a/b/NOTES.md", PathEffect("a/b/NOTES.md", "no_gpu")),
    ("docs/img/arch.png", PathEffect("docs/img/arch.png", "no_gpu")),
    ("src/docs/x.py", PathEffect("src/docs/x.py", "other")),
    ("setup.py", PathEffect("setup.py", "other")),
    ("tests/gpu/test_deleted.py", PathEffect("tests/gpu/test_deleted.py", "other")),
], ids=lambda v: v if isinstance(v, str) else "")
def test_classify_first_match_wins(make_repo, path, effect):
    assert classify(path, checkout(make_repo)) == effect


def config_with(tail: str) -> str:
    return CONFIG.replace("EXPLICIT", "run") + tail


@pytest.mark.parametrize("files, trigger, reason", [
    pytest.param({"tests/gpu/test_x.py": cuda(
        'register_cuda_ci(60, "gpu-c", labels=["megatron"], disabled="driver bug, see #7")'),
        "tests/gpu/test_y.py": cuda('register_cuda_ci(60, "gpu-c", labels=["fsdp"], disabled="no H200")')},
        pr("run-ci-all"), "skip: no selected tests (all 2 disabled)", id="all-disabled"),
    pytest.param({"tests/gpu/test_x.py": cuda(
        'register_cuda_ci(60, "gpu-c", labels=["megatron"], nightly=True)')},
        pr("run-ci-all"),
        "skip: no selected tests (its tests are nightly-only; the regular cadence does not admit them)",
        id="nightly-only-on-a-pr"),
    pytest.param({"tests/gpu/test_x.py": cuda(
        'register_cuda_ci(60, "gpu-c", labels=["megatron"], nightly=True)'),
        "tests/gpu/test_y.py": cuda('register_cuda_ci(60, "gpu-c", labels=["fsdp"], disabled="no H200")')},
        Trigger(event="workflow_dispatch"),
        "skip: no selected tests (its tests are nightly-only; the regular cadence does not admit them)",
        id="nightly-only-and-disabled-on-dispatch"),
    pytest.param({}, pr("run-ci-all"), "skip: no registered tests", id="empty-stage"),
])
def test_why_a_stage_has_nothing_to_run(make_repo, files, trigger, reason):
    config = CONFIG.replace("EXPLICIT", "run").replace(
        "  - {name: ext,", "  - {name: gpu-c, backend: cuda, runs_on: [h200]}\n  - {name: ext,")
    repo = make_repo({**FILES, **files}, config=config, labels=LABELS)
    snapshot = load_snapshot(repo).require_valid()
    _, table = outcome(snapshot, trigger, diff_of(["M", "setup.py"]))
    assert table["gpu-c"] == ("skip", [reason], [])


def test_cpu_stage_opted_into_diff_pruning_is_pruned(make_repo):
    config = CONFIG.replace("EXPLICIT", "prune").replace(
        "{name: cpu, backend: cpu}", "{name: cpu, backend: cpu, diff_pruned: true}")
    snapshot = load_snapshot(make_repo(FILES, config=config, labels=LABELS)).require_valid()
    _, table = outcome(snapshot, pr(), diff_of(["M", "docs/guide.md"]))
    assert table["cpu"] == ("skip", ["skip: the diff touches only docs/guide.md"], ["tests/unit/test_cpu.py"])
    _, table = outcome(snapshot, pr(), diff_of(["M", "tests/unit/test_cpu.py"]))
    assert table["cpu"] == ("run", ["run: tests/unit/test_cpu.py changed"], ["tests/unit/test_cpu.py"])


def test_gpu_stage_opted_out_of_diff_pruning_always_runs(make_repo):
    config = CONFIG.replace("EXPLICIT", "prune").replace(
        "{name: amd, backend: rocm, runs_on: [mi350]}",
        "{name: amd, backend: rocm, runs_on: [mi350], diff_pruned: false}")
    snapshot = load_snapshot(make_repo(FILES, config=config, labels=LABELS)).require_valid()
    _, table = outcome(snapshot, pr("run-ci-amd"), diff_of(["M", "docs/guide.md"]))
    assert table["amd"] == ("run", ["run: stage is not diff-pruned (1 selected)"], ["tests/gpu/test_amd.py"])
    assert table["gpu-a"] == NEEDS_A


BROKEN = {
    # A stage is known from the registration that could be read, but the file is invalid as a
    # whole: its gate call cannot be bound (a bad registration alone would drop only itself).
    "tests/gpu/test_broken.py": cuda('register_cuda_ci(est_time=60, suite="gpu-a", labels=["megatron"])\n'
                                     'register_cuda_ci(est_time=60, suite="amd", labels=["megatron"])\n'
                                     'from ci_policy import register_ci_gate\nregister_ci_gate(*x)'),
    # Nothing could be read: its stages are unknown.
    "tests/gpu/test_syntax.py": "def (:\n",
}
# Partly read: its gpu-a registration is scheduled, its registration naming "amd" (not a cuda
# stage) is dropped alone.
PARTLY = {"tests/gpu/test_partly.py": cuda('register_cuda_ci(est_time=60, suite="gpu-a", labels=["megatron"])\n'
                                           'register_cuda_ci(est_time=60, suite="amd", labels=["megatron"])')}
FAIL_SAFE = "run: {} changed and {}, so every stage runs (fail safe)"


@pytest.mark.parametrize("changed, reason", [
    (["tests/gpu/test_syntax.py"], FAIL_SAFE.format("tests/gpu/test_syntax.py", "is an invalid test file")),
    (["tests/gpu/test_broken.py"], FAIL_SAFE.format("tests/gpu/test_broken.py", "is an invalid test file")),
    (["tests/gpu/test_broken.py", "tests/gpu/test_syntax.py", "docs/guide.md"],
     FAIL_SAFE.format("tests/gpu/test_broken.py, tests/gpu/test_syntax.py", "are invalid test files")),
])
def test_a_changed_invalid_test_file_makes_every_diff_pruned_stage_run(make_repo, changed, reason):
    repo = make_repo({**FILES, **BROKEN}, config=CONFIG.replace("EXPLICIT", "prune"), labels=LABELS)
    snapshot = load_snapshot(repo).usable()
    assert [f.file for f in snapshot.invalid_files] == ["tests/gpu/test_broken.py", "tests/gpu/test_syntax.py"]
    assert [classify(p, snapshot).kind for p in changed] == ["invalid"] * len(
        [p for p in changed if p.startswith("tests/")]) + ["no_gpu"] * ("docs/guide.md" in changed)
    records = [x for p in changed for x in ("M", p)]
    _, table = outcome(snapshot, pr("run-ci-all"), diff_of(records))
    assert table == {
        "cpu": CPU_RUN,
        "gpu-a": ("run", [reason], MEGA_FSDP),
        "gpu-b": ("run", [reason], ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py"]),
        "amd": ("run", [reason], ["tests/gpu/test_amd.py"]),
    }
    # Unchanged, the invalid files affect nothing: a docs-only diff still skips every GPU stage.
    _, table = outcome(snapshot, pr("run-ci-all"), diff_of(["M", "docs/guide.md"]))
    assert [table[s][0] for s in ("gpu-a", "gpu-b", "amd")] == ["skip"] * 3


def test_each_stage_lists_the_invalid_files_it_would_have_held(make_repo):
    repo = make_repo({**FILES, **BROKEN}, config=CONFIG.replace("EXPLICIT", "prune"), labels=LABELS)
    snapshot = load_snapshot(repo).usable()
    policy = resolve(pr(), snapshot.config, snapshot.labels)
    _, decisions = decide(snapshot, policy, diff_of(DOCS))
    # Its gpu-a registration could be read; the one naming "amd" (not a cuda stage) could not.
    assert {d.stage.name: d.invalid for d in decisions} == {
        "cpu": (), "gpu-a": ("tests/gpu/test_broken.py",), "gpu-b": (), "amd": ()}


def test_a_partly_read_file_is_held_by_its_stage_and_still_triggers_the_fail_safe_when_changed(make_repo):
    repo = make_repo({**FILES, **PARTLY}, config=CONFIG.replace("EXPLICIT", "prune"), labels=LABELS)
    snapshot = load_snapshot(repo).usable()
    assert [(f.file, f.suites, f.kept, [d.code for d in f.diagnostics]) for f in snapshot.invalid_files] == [
        ("tests/gpu/test_partly.py", (), ("gpu-a",), ["CP225"])]
    policy = resolve(pr(), snapshot.config, snapshot.labels)
    _, decisions = decide(snapshot, policy, diff_of(DOCS))
    assert {d.stage.name: d.invalid for d in decisions} == {"cpu": (), "gpu-a": (), "gpu-b": (), "amd": ()}
    assert classify("tests/gpu/test_partly.py", snapshot).kind == "invalid"
    reason = FAIL_SAFE.format("tests/gpu/test_partly.py", "is an invalid test file")
    _, table = outcome(snapshot, pr("run-ci-all"), diff_of(["M", "tests/gpu/test_partly.py"]))
    assert table == {
        "cpu": CPU_RUN,
        "gpu-a": ("run", [reason], ["tests/gpu/test_fsdp.py", "tests/gpu/test_mega.py", "tests/gpu/test_partly.py"]),
        "gpu-b": ("run", [reason], ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py"]),
        "amd": ("run", [reason], ["tests/gpu/test_amd.py"]),
    }


def test_unknown_cron_is_an_error_never_another_cadence(make_repo):
    snapshot = checkout(make_repo)
    with pytest.raises(InputError) as info:
        resolve(Trigger(event="schedule", schedule="0 5 * * *"), snapshot.config, snapshot.labels)
    err = info.value
    assert err.message == ("--schedule: cron '0 5 * * *' is not listed in cadences.schedules "
                           "(listed: '0 3 * * *', '0 4 * * 6')")
    assert (err.path, err.line) == (".github/ci-policy.yml", 13)
    assert err.hint == "add it to cadences.schedules in the configuration with its cadence"


def test_cadence_override_wins_over_the_cron(make_repo):
    snapshot = checkout(make_repo)
    policy = resolve(Trigger(event="schedule", schedule="0 5 * * *", cadence="regular"),
                     snapshot.config, snapshot.labels)
    assert (policy.cadence, policy.include_labels) == ("regular", ())


# -- the rules, restated independently and compared on random inputs ----------------------

def spec_outcome(snapshot: Snapshot, trigger: Trigger, diff: Diff):
    """The specification, written out directly: which stages run, with which selected files."""
    config = snapshot.config
    mode = config.selection.changed_tests
    policy = resolve(trigger, snapshot.config, snapshot.labels)
    include = set(policy.include_labels)
    pr = trigger.event == "pull_request"
    # Only a trusted head lets a path rule select labels; an untrusted one runs no accelerator stage.
    auto = trigger.trust == "trusted"
    every = {s.name for s in config.stages}
    affected: set[str] = set()
    if pr and not diff.available:
        affected = every
    elif pr:
        for path in diff.files:
            rule_labels = {label for rule in config.selection.rules if any(matches(g, path) for g in rule.paths)
                           for label in rule.labels}
            own = {r.suite for r in snapshot.registrations if r.file == path}
            # own_stages: a test file's own stages, and nothing else; paths: as any other path;
            # both: its own stages, and what a rule gives it.
            if own and mode != "paths":
                affected |= own
            if own and mode == "own_stages":
                continue
            if rule_labels:
                affected |= {r.suite for r in snapshot.registrations if set(r.labels) & rule_labels}
                if auto:
                    include |= rule_labels
            elif any(matches(g, path) for g in config.selection.no_gpu_paths) or (own and mode == "both"):
                pass
            else:
                affected = every | affected
    admit = policy.cadence in ("nightly", "weekly", "release")
    # Asked for by name: an explicit run-ci-<label>, or a label a path rule selected.
    named = {label[len("run-ci-"):] for label in policy.raw_labels} | (include - set(policy.include_labels))
    # The labels each broad inclusion in effect excludes (exclusion means exclusion).
    if "run-ci-all" in policy.raw_labels:
        broad = [set(config.scope("run-ci-all").exclude)]
    elif policy.cadence in ("weekly", "release"):
        broad = [set()]
    elif policy.cadence == "nightly":
        broad = [set(config.cadences.nightly_exclude)]
    else:
        broad = [set(s.exclude) for s in config.scopes if s.name in policy.raw_labels]

    def selected(r) -> bool:
        labels = set(r.labels)
        return (r.disabled is None and (admit or not r.nightly)
                and (not r.labels or bool(labels & include & named)
                     or (bool(labels & include) and any(not labels & excluded for excluded in broad))))

    table = {}
    for stage in config.stages:
        if stage.external:
            continue
        chosen = sorted(r.file for r in snapshot.registrations if r.suite == stage.name and selected(r))
        forced = config.selection.explicit == "run" and any(
            set(r.labels) & set(policy.include_labels)
            for r in snapshot.registrations if r.suite == stage.name and selected(r))
        runs = bool(chosen) and (not pr or not stage.diff_pruned or stage.name in affected or forced)
        if trigger.trust == "untrusted" and stage.backend != "cpu":
            runs = False
        table[stage.name] = ("run" if runs else "skip", chosen)
    return sorted(include), table


PATHS = sorted(FILES) + ["tests/gpu/test_gone.py", "src/megatron/a.py", "src/megatron/README.md",
                         "src/fsdp.py", "src/unused/x.py", "docs/guide.md", "README.md", "notes/x.md",
                         "src/model.py", "setup.py"]
PR_LABELS = ["run-ci-megatron", "run-ci-fsdp", "run-ci-long", "run-ci-amd", "run-ci-spare", "run-ci-all",
             "run-ci-image", "run-ci-nosuch", "nightly", "bypass-fastfail", "wip"]
RECORD = st.one_of(
    st.tuples(st.sampled_from(["M", "A", "D", "T"]), st.sampled_from(PATHS)).map(list),
    st.tuples(st.sampled_from(["R100", "R075", "C090"]), st.sampled_from(PATHS), st.sampled_from(PATHS)).map(list),
)
TRIGGER = st.one_of(
    st.lists(st.sampled_from(PR_LABELS), max_size=4).map(lambda labels: pr(*labels)),
    st.sampled_from([Trigger(event="schedule", schedule="0 3 * * *"), Trigger(event="schedule", schedule="0 4 * * 6"),
                     Trigger(event="workflow_dispatch"), Trigger(event="workflow_call", cadence="nightly")]),
)


# A rule over test files, which only `selection.changed_tests: paths | both` let decide for them:
# test_long_only.py (stage gpu-b) selects amd (stage amd); test_mega.py (gpu-a) selects spare (no
# test has it); test_cpu.py (cpu) selects fsdp (gpu-a, gpu-b, amd).
TEST_RULES = ('    - {paths: ["tests/gpu/test_long_only.py"], labels: [amd]}\n'
              '    - {paths: ["tests/gpu/test_mega.py"], labels: [spare]}\n'
              '    - {paths: ["tests/unit/test_cpu.py"], labels: [fsdp]}\n')


def changed_tests_config(explicit: str, changed_tests: str) -> str:
    config = CONFIG.replace("EXPLICIT", f"{explicit}\n  changed_tests: {changed_tests}")
    assert "  rules:\n" in config
    return config.replace("  rules:\n", "  rules:\n" + TEST_RULES)


@pytest.mark.parametrize("changed_tests, path, effect", [
    ("own_stages", "tests/gpu/test_long_only.py", PathEffect("tests/gpu/test_long_only.py", "test", stages=("gpu-b",))),
    ("paths", "tests/gpu/test_long_only.py", PathEffect("tests/gpu/test_long_only.py", "rule", stages=("amd",),
                                                        labels=("amd",), by_setting="paths")),
    ("both", "tests/gpu/test_long_only.py", PathEffect("tests/gpu/test_long_only.py", "rule", stages=("amd",),
                                                       labels=("amd",), own=("gpu-b",), by_setting="both")),
    ("paths", "tests/gpu/test_mega.py", PathEffect("tests/gpu/test_mega.py", "rule", labels=("spare",),
                                                   by_setting="paths")),
    ("both", "tests/gpu/test_mega.py", PathEffect("tests/gpu/test_mega.py", "rule", labels=("spare",),
                                                  own=("gpu-a",), by_setting="both")),
    # No rule: as any other path (here, every stage), or under `both` its own stages alone.
    ("paths", "tests/gpu/test_amd.py", PathEffect("tests/gpu/test_amd.py", "other", by_setting="paths")),
    ("both", "tests/gpu/test_amd.py", PathEffect("tests/gpu/test_amd.py", "test", stages=("amd",))),
    # A path that is no test file is classified alike in every setting.
    ("both", "src/fsdp.py", PathEffect("src/fsdp.py", "rule", stages=("amd", "gpu-a", "gpu-b"), labels=("fsdp",))),
    ("paths", "setup.py", PathEffect("setup.py", "other")),
], ids=lambda v: v if isinstance(v, str) else "")
def test_classify_under_each_changed_tests_setting(make_repo, changed_tests, path, effect):
    repo = make_repo(FILES, config=changed_tests_config("run", changed_tests), labels=LABELS)
    assert classify(path, load_snapshot(repo).require_valid()) == effect


def test_changed_tests_reasons_name_the_setting(make_repo):
    snapshots = {mode: load_snapshot(make_repo(FILES, config=changed_tests_config("prune", mode), labels=LABELS,
                                               name=mode)).require_valid()
                 for mode in ("own_stages", "paths", "both")}

    def stages(changed_tests: str, records: list[str]) -> dict:
        _policy, table = outcome(snapshots[changed_tests], pr("run-ci-long", "run-ci-megatron"), diff_of(records))
        return {name: (decision, reasons) for name, (decision, reasons, _files) in table.items()}

    cpu = ("run", ["run: stage is not diff-pruned (1 selected)"])
    only = "skip: the diff touches only tests/gpu/test_long_only.py"
    assert stages("own_stages", ["M", "tests/gpu/test_long_only.py"]) == {
        "cpu": cpu, "gpu-a": ("skip", [only]),
        "gpu-b": ("run", ["run: tests/gpu/test_long_only.py changed"]),
        # Not auto-selected: the rule over the test file does not decide for it.
        "amd": ("skip", ["skip: no selected tests (its tests need one of: amd, fsdp)"])}
    selects = "run: tests/gpu/test_long_only.py selects amd (selection.changed_tests: {})"
    assert stages("paths", ["M", "tests/gpu/test_long_only.py"]) == {
        "cpu": cpu, "gpu-a": ("skip", [only]), "gpu-b": ("skip", [only]),
        "amd": ("run", [selects.format("paths")])}
    assert stages("both", ["M", "tests/gpu/test_long_only.py"]) == {
        "cpu": cpu, "gpu-a": ("skip", [only]),
        "gpu-b": ("run", ["run: tests/gpu/test_long_only.py changed"]), "amd": ("run", [selects.format("both")])}
    fans_out = ("run", ["run: tests/gpu/test_amd.py matches no rule, so every stage runs "
                        "(selection.changed_tests: paths)"])
    assert stages("paths", ["M", "tests/gpu/test_amd.py"]) == {
        "cpu": cpu, "gpu-a": fans_out, "gpu-b": fans_out,
        "amd": ("skip", ["skip: no selected tests (its tests need one of: amd, fsdp)"])}


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory) -> dict[tuple[str, str], Snapshot]:
    out = {}
    for explicit in ("run", "prune"):
        for changed_tests in ("own_stages", "paths", "both"):
            repo = tmp_path_factory.mktemp(f"explicit-{explicit}-{changed_tests}")
            files = {**FILES, ".github/ci-policy.yml": changed_tests_config(explicit, changed_tests),
                     "labels.py": LABELS}
            for rel, text in files.items():
                (repo / rel).parent.mkdir(parents=True, exist_ok=True)
                (repo / rel).write_text(text)
            out[explicit, changed_tests] = load_snapshot(repo).require_valid()
    return out


@settings(max_examples=600, deadline=None)
@given(explicit=st.sampled_from(["run", "prune"]), changed_tests=st.sampled_from(["own_stages", "paths", "both"]),
       trigger=TRIGGER, records=st.one_of(st.none(), st.lists(RECORD, min_size=1, max_size=5)),
       trust=st.sampled_from(["trusted", "trusted", "approved", "untrusted"]))
def test_selection_agrees_with_the_rules_restated(snapshots, explicit, changed_tests, trigger, records, trust):
    snapshot = snapshots[explicit, changed_tests]
    trigger = replace(trigger, trust=trust)
    diff = diff_of(None if records is None else [field for record in records for field in record])
    include, expected = spec_outcome(snapshot, trigger, diff)
    policy, table = outcome(snapshot, trigger, diff)
    assert list(policy.include_labels) == include
    assert {name: (decision, files) for name, (decision, _, files) in table.items()} == expected
    for decision, reasons, _ in table.values():
        assert reasons and all(r.startswith(f"{decision}: ") for r in reasons)


# -- stage-level rules: label gates, stage cadences, exclusive nightly, schedules, push and merge queue --

GATED_CONFIG = """\
version: 1
gpu_requires_labels: false
discovery:
  roots: [tests]
  implicit:
    - {root: tests/unit, backend: cpu, suite: cpu, est_time: 1, cpu_only: true}
stages:
  - {name: cpu, backend: cpu}
  - {name: gpu-a, backend: cuda, runs_on: [h200]}
  - {name: extra-a, backend: cuda, runs_on: [h200], requires_labels: [run-ci-extra]}
  - {name: nightly-gpu, backend: cuda, runs_on: [h200], cadences: [nightly, weekly]}
  - {name: amd, backend: rocm, runs_on: [mi350]}
  - {name: nightly-amd, backend: rocm, runs_on: [mi350], cadences: [nightly]}
pull_request:
  require_labels: [run-ci, high priority]
cadences:
  schedules:
    "0 3 * * *": {cadence: nightly, stages: ["nightly-*"]}
    "0 */6 * * *": {cadence: regular, backends: [rocm]}
    "0 4 * * 6": weekly
  nightly_selects: nightly_only
selection:
  no_gpu_paths: ["docs/**"]
"""


def rocm(call: str) -> str:
    return "from ci_policy import register_rocm_ci\n\n" + call + "\n" + MAIN


GATED_FILES = {
    "tests/unit/test_cpu.py": "def test_ok():\n    assert True\n",
    "tests/gpu/test_a.py": cuda('register_cuda_ci(est_time=100, suite="gpu-a")'),
    "tests/gpu/test_a_nightly.py": cuda('register_cuda_ci(est_time=100, suite="gpu-a", nightly=True)'),
    "tests/gpu/test_extra.py": cuda('register_cuda_ci(est_time=100, suite="extra-a")'),
    "tests/gpu/test_nightly_gpu.py": cuda('register_cuda_ci(est_time=100, suite="nightly-gpu", nightly=True)'),
    "tests/gpu/test_amd.py": rocm('register_rocm_ci(est_time=100, suite="amd")'),
    "tests/gpu/test_nightly_amd.py": rocm('register_rocm_ci(est_time=100, suite="nightly-amd", nightly=True)'),
}

GATE = "skip: the PR lacks the labels run-ci, high priority, one of which accelerator stages need " \
       "(pull_request.require_labels)"
EXTRA = "skip: the PR lacks the label run-ci-extra, which the stage requires (requires_labels)"
NOT_REGULAR = "skip: the regular cadence is not one of the stage's cadences (nightly, weekly)"
NOT_REGULAR_AMD = "skip: the regular cadence is not one of the stage's cadences (nightly)"
CPU = ("run", ["run: stage is not diff-pruned (1 selected)"], ["tests/unit/test_cpu.py"])
SRC = ["M", "src/x.py"]
FANS_OUT = "run: src/x.py matches no rule, so every stage runs"
DOC = ["M", "docs/a.md"]
DOC_ONLY = "skip: the diff touches only docs/a.md"
A = ["tests/gpu/test_a.py"]
A_NIGHTLY = ["tests/gpu/test_a_nightly.py"]
EXTRA_FILES = ["tests/gpu/test_extra.py"]
AMD = ["tests/gpu/test_amd.py"]
NIGHTLY_SCHEDULE = "skip: not in this schedule (cadences.schedules['0 3 * * *'] plans only stages matching nightly-*)"
AMD_SCHEDULE = "skip: not in this schedule (cadences.schedules['0 */6 * * *'] plans only rocm stages)"
NOT_NIGHTLY = ("skip: no selected tests (none of its tests is nightly; the weekly cadence selects only nightly "
               "tests: cadences.nightly_selects: nightly_only)")


def in_schedule(cron: str, chosen: str, n: int) -> str:
    return f"run: schedule event runs every stage of cadences.schedules[{cron!r}] ({chosen}) with selected tests " \
           f"({n} selected)"


GATED_CASES = [
    pytest.param(
        pr(), SRC,
        {"cpu": CPU, "gpu-a": ("skip", [GATE], A), "extra-a": ("skip", [GATE, EXTRA], EXTRA_FILES),
         "nightly-gpu": ("skip", [NOT_REGULAR], []), "amd": ("skip", [GATE], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="pr-without-a-gate-label-runs-no-accelerator-stage"),
    pytest.param(
        pr("run-ci"), SRC,
        {"cpu": CPU, "gpu-a": ("run", [FANS_OUT], A), "extra-a": ("skip", [EXTRA], EXTRA_FILES),
         "nightly-gpu": ("skip", [NOT_REGULAR], []), "amd": ("run", [FANS_OUT], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="one-of-the-required-labels-opens-the-gate"),
    pytest.param(
        pr("run-ci-extra", "high priority"), SRC,
        {"cpu": CPU, "gpu-a": ("run", [FANS_OUT], A), "extra-a": ("run", [FANS_OUT], EXTRA_FILES),
         "nightly-gpu": ("skip", [NOT_REGULAR], []), "amd": ("run", [FANS_OUT], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="a-gated-stage-runs-with-all-of-its-labels"),
    pytest.param(
        pr("run-ci-extra"), SRC,
        {"cpu": CPU, "gpu-a": ("skip", [GATE], A), "extra-a": ("skip", [GATE], EXTRA_FILES),
         "nightly-gpu": ("skip", [NOT_REGULAR], []), "amd": ("skip", [GATE], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="the-stage-gate-does-not-open-the-pull-request-gate"),
    pytest.param(
        pr("run-ci", "run-ci-extra"), DOC,
        {"cpu": CPU, "gpu-a": ("skip", [DOC_ONLY], A), "extra-a": ("skip", [DOC_ONLY], EXTRA_FILES),
         "nightly-gpu": ("skip", [NOT_REGULAR], []), "amd": ("skip", [DOC_ONLY], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="an-open-gate-still-lets-the-diff-prune"),
    pytest.param(
        pr("Run-CI", "run-ci "), SRC,
        {"cpu": CPU, "gpu-a": ("skip", [GATE], A), "extra-a": ("skip", [GATE, EXTRA], EXTRA_FILES),
         "nightly-gpu": ("skip", [NOT_REGULAR], []), "amd": ("skip", [GATE], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="gate-labels-compare-exactly"),
    pytest.param(
        pr("run-ci", "nightly"), SRC,
        {"cpu": ("skip", ["skip: no selected tests (none of its tests is nightly; the nightly cadence selects "
                          "only nightly tests: cadences.nightly_selects: nightly_only)"], []),
         "gpu-a": ("run", [FANS_OUT], A_NIGHTLY), "extra-a": ("skip", [EXTRA], []),
         "nightly-gpu": ("run", [FANS_OUT], ["tests/gpu/test_nightly_gpu.py"]),
         "amd": ("skip", ["skip: no selected tests (none of its tests is nightly; the nightly cadence selects "
                          "only nightly tests: cadences.nightly_selects: nightly_only)"], []),
         "nightly-amd": ("run", [FANS_OUT], ["tests/gpu/test_nightly_amd.py"])},
        id="a-nightly-pr-selects-only-nightly-tests"),
    pytest.param(
        Trigger(event="schedule", schedule="0 3 * * *"), None,
        {"cpu": ("skip", [NIGHTLY_SCHEDULE], []), "gpu-a": ("skip", [NIGHTLY_SCHEDULE], A_NIGHTLY),
         "extra-a": ("skip", [NIGHTLY_SCHEDULE], []),
         "nightly-gpu": ("run", [in_schedule("0 3 * * *", "stages matching nightly-*", 1)],
                         ["tests/gpu/test_nightly_gpu.py"]),
         "amd": ("skip", [NIGHTLY_SCHEDULE], []),
         "nightly-amd": ("run", [in_schedule("0 3 * * *", "stages matching nightly-*", 1)],
                         ["tests/gpu/test_nightly_amd.py"])},
        id="the-nightly-cron-plans-only-nightly-suites"),
    pytest.param(
        Trigger(event="schedule", schedule="0 */6 * * *"), None,
        {"cpu": ("skip", [AMD_SCHEDULE], ["tests/unit/test_cpu.py"]), "gpu-a": ("skip", [AMD_SCHEDULE], A),
         "extra-a": ("skip", [AMD_SCHEDULE], EXTRA_FILES), "nightly-gpu": ("skip", [AMD_SCHEDULE], []),
         "amd": ("run", [in_schedule("0 */6 * * *", "rocm stages", 1)], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="the-amd-cron-plans-only-rocm-stages"),
    pytest.param(
        Trigger(event="schedule", schedule="0 4 * * 6"), None,
        {"cpu": ("skip", [NOT_NIGHTLY], []),
         "gpu-a": ("run", ["run: schedule event runs every stage with selected tests (1 selected)"], A_NIGHTLY),
         "extra-a": ("skip", [NOT_NIGHTLY], []),
         "nightly-gpu": ("run", ["run: schedule event runs every stage with selected tests (1 selected)"],
                         ["tests/gpu/test_nightly_gpu.py"]),
         "amd": ("skip", [NOT_NIGHTLY], []),
         "nightly-amd": ("skip", ["skip: the weekly cadence is not one of the stage's cadences (nightly)"],
                         ["tests/gpu/test_nightly_amd.py"])},
        id="a-plain-weekly-cron-plans-every-stage-of-its-cadences"),
    pytest.param(
        Trigger(event="workflow_dispatch"), DOC,
        {"cpu": ("run", ["run: workflow_dispatch event runs every stage with selected tests (1 selected)"],
                 ["tests/unit/test_cpu.py"]),
         "gpu-a": ("run", ["run: workflow_dispatch event runs every stage with selected tests (1 selected)"], A),
         "extra-a": ("run", ["run: workflow_dispatch event runs every stage with selected tests (1 selected)"],
                     EXTRA_FILES),
         "nightly-gpu": ("skip", [NOT_REGULAR], []),
         "amd": ("run", ["run: workflow_dispatch event runs every stage with selected tests (1 selected)"], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="label-gates-apply-to-pull-requests-only"),
    pytest.param(
        Trigger(event="push"), DOC,
        {"cpu": CPU, "gpu-a": ("skip", [DOC_ONLY], A), "extra-a": ("skip", [DOC_ONLY], EXTRA_FILES),
         "nightly-gpu": ("skip", [NOT_REGULAR], []), "amd": ("skip", [DOC_ONLY], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="a-push-is-pruned-by-its-diff"),
    pytest.param(
        Trigger(event="push"), None,
        {"cpu": CPU,
         "gpu-a": ("run", ["run: the diff is unavailable (pr.diff: the diff is empty), so every runnable stage runs"],
                   A),
         "extra-a": ("run", ["run: the diff is unavailable (pr.diff: the diff is empty), so every runnable stage "
                             "runs"], EXTRA_FILES),
         "nightly-gpu": ("skip", [NOT_REGULAR], []),
         "amd": ("run", ["run: the diff is unavailable (pr.diff: the diff is empty), so every runnable stage runs"],
                 AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="a-push-without-a-diff-runs-every-runnable-stage"),
    pytest.param(
        Trigger(event="merge_group"), ["M", "tests/gpu/test_amd.py"],
        {"cpu": CPU, "gpu-a": ("skip", ["skip: the diff touches only tests/gpu/test_amd.py"], A),
         "extra-a": ("skip", ["skip: the diff touches only tests/gpu/test_amd.py"], EXTRA_FILES),
         "nightly-gpu": ("skip", [NOT_REGULAR], []),
         "amd": ("run", ["run: tests/gpu/test_amd.py changed"], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="a-merge-queue-entry-is-pruned-by-its-diff-without-label-gates"),
]


@pytest.mark.parametrize("trigger, records, expected", GATED_CASES)
def test_stage_level_rules(make_repo, trigger, records, expected):
    snapshot = load_snapshot(make_repo(GATED_FILES, config=GATED_CONFIG, labels=None)).require_valid()
    policy, table = outcome(snapshot, trigger, diff_of(records))
    assert table == {name: (decision, reasons, files) for name, (decision, reasons, files) in expected.items()}
    # Gate labels shaped like run-ci-<name> are not reported as labels that select nothing; a label
    # a gate's differs from only in case or spaces opens nothing, and is named with the gate's.
    near_misses = {label: f"PR label {label!r} is not one ci-policy reads; it selects nothing; "
                          "did you mean 'run-ci'?" for label in ("Run-CI", "run-ci ")}
    assert policy.warnings == tuple(near_misses[label] for label in sorted(trigger.labels) if label in near_misses)


def test_why_a_test_is_not_selected_by_the_nightly_split(make_repo):
    snapshot = load_snapshot(make_repo(GATED_FILES, config=GATED_CONFIG, labels=None)).require_valid()
    policy = resolve(Trigger(event="schedule", schedule="0 4 * * 6"), snapshot.config, snapshot.labels)
    _, decisions = decide(snapshot, policy, diff_of(None))
    gpu_a = next(d for d in decisions if d.stage.name == "gpu-a")
    assert [(r.file, why) for r, why in gpu_a.not_selected] == [
        ("tests/gpu/test_a.py", "not nightly; the weekly cadence selects only nightly tests "
                                "(cadences.nightly_selects: nightly_only)")]


def test_a_release_run_is_not_split(make_repo):
    snapshot = load_snapshot(make_repo(GATED_FILES, config=GATED_CONFIG, labels=None)).require_valid()
    _, table = outcome(snapshot, Trigger(event="workflow_call", cadence="release"), diff_of(None))
    assert table["gpu-a"] == ("run", ["run: workflow_call event runs every stage with selected tests (2 selected)"],
                              ["tests/gpu/test_a.py", "tests/gpu/test_a_nightly.py"])
    assert table["nightly-gpu"] == ("skip", ["skip: the release cadence is not one of the stage's cadences "
                                             "(nightly, weekly)"], ["tests/gpu/test_nightly_gpu.py"])


# The new keys written out at their defaults: every plan must be the same as without them.
DEFAULTS_SPELLED_OUT = """\
pull_request: {}
"""


def with_defaults(config: str) -> str:
    """CONFIG with every new key at its default: stage cadences, nightly_selects, merge_group, a mapping schedule."""
    every = "cadences: [regular, nightly, weekly, release]"
    config = config.replace("partitions: 2}", f"partitions: 2, {every}}}")
    config = config.replace("runs_on: [mi350]}", f"runs_on: [mi350], {every}}}")
    config = config.replace("{name: cpu, backend: cpu}", f"{{name: cpu, backend: cpu, {every}}}")
    config = config.replace('"0 3 * * *": nightly', '"0 3 * * *": {cadence: nightly}')
    config = config.replace("  nightly_exclude: [long]\n",
                            "  nightly_exclude: [long]\n  nightly_selects: all\n  merge_group: regular\n")
    assert config.count(every) == 4 and "nightly_selects" in config and "{cadence: nightly}" in config
    return config + DEFAULTS_SPELLED_OUT


@pytest.fixture(scope="module")
def default_snapshots(tmp_path_factory) -> dict[str, Snapshot]:
    out = {}
    for name, config in (("plain", CONFIG), ("spelled", with_defaults(CONFIG))):
        for explicit in ("run", "prune"):
            repo = tmp_path_factory.mktemp(f"{name}-{explicit}")
            files = {**FILES, ".github/ci-policy.yml": config.replace("EXPLICIT", explicit), "labels.py": LABELS}
            for rel, text in files.items():
                (repo / rel).parent.mkdir(parents=True, exist_ok=True)
                (repo / rel).write_text(text)
            out[f"{name}-{explicit}"] = load_snapshot(repo).require_valid()
    return out


@settings(max_examples=200, deadline=None)
@given(explicit=st.sampled_from(["run", "prune"]),
       trigger=st.one_of(TRIGGER, st.sampled_from([Trigger(event="push"), Trigger(event="merge_group")])),
       records=st.one_of(st.none(), st.lists(RECORD, min_size=1, max_size=5)))
def test_the_new_keys_at_their_defaults_change_no_decision(default_snapshots, explicit, trigger, records):
    diff = diff_of(None if records is None else [field for record in records for field in record])
    plain = outcome(default_snapshots[f"plain-{explicit}"], trigger, diff)
    spelled = outcome(default_snapshots[f"spelled-{explicit}"], trigger, diff)
    assert spelled == plain


# -- stages owned by paths, rules that target stages ------------------------------------------

OWNED_CONFIG = CONFIG.replace("EXPLICIT", "prune").replace(
    "version: 1\n", "version: 1\ngpu_requires_labels: false\n").replace(
    "  - {name: ext,",
    "  - {name: kern, backend: cuda, runs_on: [h200], paths: ['src/kernels/**', '!src/kernels/**/*.md']}\n"
    "  - {name: jit-a, backend: cuda, runs_on: [h200]}\n"
    "  - {name: ext,").replace(
    "    - {paths: [\"src/unused/**\"], labels: [spare]}\n",
    "    - {paths: [\"src/unused/**\"], labels: [spare]}\n"
    "    - {paths: [\"csrc/**\"], stages: [\"jit-*\"]}\n"
    "    - {paths: [\"src/shared/**\"], labels: [fsdp], stages: [kern]}\n")
OWNED_FILES = {
    **FILES,
    "tests/gpu/test_kern.py": cuda('register_cuda_ci(est_time=60, suite="kern")'),
    "tests/gpu/test_jit.py": cuda('register_cuda_ci(est_time=60, suite="jit-a")'),
}
KERN = ["tests/gpu/test_kern.py"]
JIT = ["tests/gpu/test_jit.py"]
B_ALL = ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py"]
NOT_KERN = "none of its test files, nothing under its paths"


def skipped(paths: str, files: list[str], owned: bool = False) -> tuple:
    return ("skip", [f"skip: the diff touches only {paths}" + (f": {NOT_KERN}" if owned else "")], files)


@pytest.mark.parametrize("labels, records, expected", [
    pytest.param(("run-ci-all",), ["M", "src/kernels/a.cu"], {
        "gpu-a": skipped("src/kernels/a.cu", MEGA_FSDP), "gpu-b": skipped("src/kernels/a.cu", B_ALL),
        "amd": skipped("src/kernels/a.cu", AMD),
        "kern": ("run", ["run: src/kernels/a.cu changed under its paths (src/kernels/**)"], KERN),
        "jit-a": skipped("src/kernels/a.cu", JIT)},
        id="an-owned-path-affects-its-stage-and-is-not-unknown-to-the-others"),
    pytest.param(("run-ci-all",), ["M", "src/model.py", "M", "setup.py"], {
        **{stage: ("run", ["run: setup.py, src/model.py match no rule and no stage's paths, so every stage "
                           "without paths runs"], files)
           for stage, files in (("gpu-a", MEGA_FSDP), ("gpu-b", B_ALL), ("amd", AMD), ("jit-a", JIT))},
        "kern": skipped("setup.py, src/model.py", KERN, owned=True)},
        id="an-unknown-path-does-not-reach-a-path-owned-stage"),
    pytest.param(("run-ci-all",), ["M", "src/kernels/README.md"], {
        "gpu-a": skipped("src/kernels/README.md", MEGA_FSDP), "gpu-b": skipped("src/kernels/README.md", B_ALL),
        "amd": skipped("src/kernels/README.md", AMD), "kern": skipped("src/kernels/README.md", KERN, owned=True),
        "jit-a": skipped("src/kernels/README.md", JIT)},
        id="a-negated-glob-gives-the-path-back-to-no-gpu-paths"),
    pytest.param((), ["M", "tests/gpu/test_kern.py", "M", "docs/guide.md"], {
        "gpu-a": NEEDS_A, "gpu-b": NEEDS_B, "amd": NEEDS_AMD,
        "kern": ("run", ["run: tests/gpu/test_kern.py changed"], KERN),
        "jit-a": skipped("docs/guide.md, tests/gpu/test_kern.py", JIT)},
        id="its-own-test-file-affects-a-path-owned-stage"),
    pytest.param((), None, {
        "gpu-a": NEEDS_A, "gpu-b": NEEDS_B, "amd": NEEDS_AMD,
        "kern": ("run", ["run: the diff is unavailable (pr.diff: the diff is empty), so every runnable stage "
                         "runs"], KERN),
        "jit-a": ("run", ["run: the diff is unavailable (pr.diff: the diff is empty), so every runnable stage "
                          "runs"], JIT)},
        id="an-unavailable-diff-still-runs-a-path-owned-stage"),
    pytest.param((), ["M", "csrc/x.cu", "A", "csrc/y.cu"], {
        "gpu-a": NEEDS_A, "gpu-b": NEEDS_B, "amd": NEEDS_AMD,
        "kern": skipped("csrc/x.cu, csrc/y.cu", KERN, owned=True),
        "jit-a": ("run", ["run: csrc/x.cu, csrc/y.cu match a selection rule for stages jit-*"], JIT)},
        id="a-rule-targets-stages-by-name-glob"),
    pytest.param((), ["M", "src/shared/util.py"], {
        "gpu-a": ("run", ["run: src/shared/util.py selects fsdp"], ["tests/gpu/test_fsdp.py"]),
        "gpu-b": NEEDS_B,
        "amd": ("run", ["run: src/shared/util.py selects fsdp"], AMD),
        "kern": ("run", ["run: src/shared/util.py matches a selection rule for stages kern"], KERN),
        "jit-a": skipped("src/shared/util.py", JIT)},
        id="a-rule-with-labels-and-stages-does-both"),
])
def test_path_owned_stages_and_stage_rules(make_repo, labels, records, expected):
    snapshot = load_snapshot(make_repo(OWNED_FILES, config=OWNED_CONFIG, labels=LABELS)).require_valid()
    _, table = outcome(snapshot, pr(*labels), diff_of(records))
    assert table == {"cpu": CPU_RUN, **expected}


def test_an_invalid_test_file_still_reaches_a_path_owned_stage(make_repo):
    files = {**OWNED_FILES, "tests/gpu/test_syntax.py": "def (:\n"}
    snapshot = load_snapshot(make_repo(files, config=OWNED_CONFIG, labels=LABELS)).usable()
    _, table = outcome(snapshot, pr(), diff_of(["M", "tests/gpu/test_syntax.py"]))
    assert table["kern"] == ("run", [FAIL_SAFE.format("tests/gpu/test_syntax.py", "is an invalid test file")], KERN)


@pytest.mark.parametrize("path, effect", [
    ("src/kernels/a.cu", PathEffect("src/kernels/a.cu", "owned", owned_by=(("kern", "src/kernels/**"),))),
    ("src/kernels/README.md", PathEffect("src/kernels/README.md", "no_gpu")),
    ("csrc/x.cu", PathEffect("csrc/x.cu", "rule", targeted=(("jit-a", "jit-*"),))),
    ("src/shared/x.py", PathEffect("src/shared/x.py", "rule", stages=("amd", "gpu-a", "gpu-b"), labels=("fsdp",),
                                   targeted=(("kern", "kern"),))),
    ("tests/gpu/test_kern.py", PathEffect("tests/gpu/test_kern.py", "test", stages=("kern",))),
    ("src/model.py", PathEffect("src/model.py", "other")),
], ids=lambda v: v if isinstance(v, str) else "")
def test_classify_owned_and_targeted_paths(make_repo, path, effect):
    snapshot = load_snapshot(make_repo(OWNED_FILES, config=OWNED_CONFIG, labels=LABELS)).require_valid()
    assert classify(path, snapshot) == effect


def test_a_rule_path_under_a_stages_paths_affects_both(make_repo):
    config = OWNED_CONFIG.replace('"src/shared/**"', '"src/kernels/shared/**"')
    snapshot = load_snapshot(make_repo(OWNED_FILES, config=config, labels=LABELS)).require_valid()
    assert classify("src/kernels/shared/x.py", snapshot) == PathEffect(
        "src/kernels/shared/x.py", "rule", stages=("amd", "gpu-a", "gpu-b"), labels=("fsdp",),
        targeted=(("kern", "kern"),), owned_by=(("kern", "src/kernels/**"),))
    _, table = outcome(snapshot, pr(), diff_of(["M", "src/kernels/shared/x.py"]))
    assert table["kern"] == ("run", ["run: src/kernels/shared/x.py matches a selection rule for stages kern",
                                     "run: src/kernels/shared/x.py changed under its paths (src/kernels/**)"], KERN)


def test_an_excluding_scope_is_not_named_as_including_a_test_it_excludes(make_repo):
    snapshot = checkout(make_repo, "run")
    _, table = outcome(snapshot, pr("nightly", "run-ci-megatron"), diff_of(DOCS))
    # test_mega_long.py runs for run-ci-megatron; the nightly cadence takes in only test_nightly.py.
    assert table["gpu-b"] == ("run", ["run: requested by run-ci-megatron", "run: included by the nightly cadence"],
                              ["tests/gpu/test_mega_long.py", "tests/gpu/test_nightly.py"])
    _, table = outcome(snapshot, pr("run-ci-image", "run-ci-long"), diff_of(DOCS))
    assert table["gpu-b"] == ("run", ["run: requested by run-ci-long"],
                              ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py"])


def test_a_long_segment_against_many_star_globs_is_classified_like_a_short_one(make_repo):
    # issue 32, finding 3: pathspec's regexes backtracked exponentially on `*a*a*a*a*b` against
    # a long almost-matching segment (`plan` took 19.7 s on 140 characters; 255 is allowed).
    config = CONFIG.replace("EXPLICIT", "run").replace(
        'no_gpu_paths: ["docs/**"', 'no_gpu_paths: ["**/*a*a*a*a*a*a*a*a*b.txt", "docs/**"').replace(
        '{paths: ["src/fsdp.py"], labels: [fsdp]}', '{paths: ["src/**/*a*a*a*a*b/**", "src/fsdp.py"], labels: [fsdp]}')
    snapshot = load_snapshot(make_repo(FILES, config=config, labels=LABELS)).require_valid()
    long = "a" * 255
    assert classify(f"src/x/{long}/y.py", snapshot) == PathEffect(f"src/x/{long}/y.py", "other")
    assert classify(f"src/x/{long[:-1]}b/y.py", snapshot) == PathEffect(f"src/x/{long[:-1]}b/y.py", "rule",
                                                                       stages=("amd", "gpu-a", "gpu-b"),
                                                                       labels=("fsdp",))
    assert classify(f"notes/{long}.txt", snapshot) == PathEffect(f"notes/{long}.txt", "other")
    assert classify(f"notes/{long[:-1]}b.txt", snapshot) == PathEffect(f"notes/{long[:-1]}b.txt", "no_gpu")
