"""Trust: what an untrusted, approved or trusted head commit may run.

Over the selection tests' checkouts (`test_selection.checkout`, the gated one): each row
gives the trust, the trigger and the diff, and the exact decision, reasons and selected
files of every planned stage. A property then checks, on random labels, events and diffs,
that an untrusted head never runs an accelerator stage nor builds an image.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plan.test_selection import (
    A_NIGHTLY,
    CONFIG,
    CPU,
    CPU_RUN,
    EXTRA,
    EXTRA_FILES,
    FILES,
    GATE,
    GATED_CONFIG,
    GATED_FILES,
    LABELS,
    MEGA,
    NEEDS_A,
    NEEDS_AMD,
    NEEDS_B,
    NIGHTLY_SCHEDULE,
    NOT_REGULAR,
    NOT_REGULAR_AMD,
    PATHS,
    PR_LABELS,
    RECORD,
    A,
    checkout,
    diff_of,
    in_schedule,
    outcome,
    pr,
)

from ci_policy.errors import UsageError
from ci_policy.model.snapshot import Snapshot, load_snapshot
from ci_policy.plan.build import build_plan
from ci_policy.plan.outcome import Job, held_for_trust
from ci_policy.plan.outcome import outcome as decide_outcome
from ci_policy.plan.policy import UNLABELLED_REASON, UNTRUSTED_REASON, Trigger, resolve

UNTRUSTED = f"skip: {UNTRUSTED_REASON}"
UNLABELLED = f"skip: {UNLABELLED_REASON}: 1 test(s) need megatron (/run-ci-megatron)"
MEGA_RULE = ["M", "src/megatron/x.py"]
MEGA_LONG = ["tests/gpu/test_mega_long.py"]
NO_DIFF = "run: the diff is unavailable (pr.diff: the diff is empty), so every runnable stage runs"


def trusting(trigger: Trigger, trust: str) -> Trigger:
    return replace(trigger, trust=trust)


def test_untrusted_reason_is_the_documented_text():
    assert UNTRUSTED == "skip: untrusted head not approved"


SELECTION_CASES = [
    pytest.param(
        "trusted", pr(), MEGA_RULE, {"megatron"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: src/megatron/x.py selects megatron"], MEGA),
         "gpu-b": ("run", ["run: src/megatron/x.py selects megatron"], MEGA_LONG),
         "amd": NEEDS_AMD},
        id="trusted-a-rule-path-selects-its-labels"),
    pytest.param(
        # The diff may not choose what runs on accelerator runners, but what it calls for waits
        # for a maintainer's labels (the required check holds it) instead of passing unrun.
        "approved", pr(), MEGA_RULE, set(),
        {"cpu": CPU_RUN, "gpu-a": ("skip", [UNLABELLED], []), "gpu-b": ("skip", [UNLABELLED], []), "amd": NEEDS_AMD},
        id="approved-a-rule-path-selects-nothing-and-its-stages-wait-for-labels"),
    pytest.param(
        # Unapproved, the stages the diff calls for wait for an approval first.
        "untrusted", pr(), MEGA_RULE, set(),
        {"cpu": CPU_RUN, "gpu-a": ("skip", [UNTRUSTED], []), "gpu-b": ("skip", [UNTRUSTED], []), "amd": NEEDS_AMD},
        id="untrusted-a-rule-path-selects-nothing-and-its-stages-wait-for-an-approval"),
    pytest.param(
        # The maintainer's label selects the fsdp test; the megatron one only the diff calls for:
        # the stage runs without it, and says so in a reason the required check holds.
        "approved", pr("run-ci-fsdp"), MEGA_RULE, {"fsdp"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: src/megatron/x.py selects megatron", "run: requested by run-ci-fsdp",
                           f"run: {UNLABELLED_REASON}: 1 test(s) need megatron (/run-ci-megatron); the stage runs "
                           "without them"], ["tests/gpu/test_fsdp.py"]),
         "gpu-b": ("skip", [UNLABELLED], []),
         "amd": ("run", ["run: requested by run-ci-fsdp"], ["tests/gpu/test_amd.py"])},
        id="approved-a-label-selects-some-tests-and-the-diff-calls-for-others"),
    pytest.param(
        # No label and no path rule calls for a GPU test: approved or not, nothing would run, so
        # no stage waits for an approval (the required check passes on the cpu stage alone).
        "untrusted", pr(), ["M", "docs/x.md"], set(),
        {"cpu": CPU_RUN, "gpu-a": NEEDS_A, "gpu-b": NEEDS_B, "amd": NEEDS_AMD},
        id="untrusted-no-label-and-no-rule-and-no-stage-waits-for-an-approval"),
    pytest.param(
        "approved", pr("run-ci-megatron"), MEGA_RULE, {"megatron"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", ["run: src/megatron/x.py selects megatron", "run: requested by run-ci-megatron"], MEGA),
         "gpu-b": ("run", ["run: src/megatron/x.py selects megatron", "run: requested by run-ci-megatron"],
                   MEGA_LONG),
         "amd": NEEDS_AMD},
        id="approved-the-labels-select-and-the-rule-path-still-affects"),
    pytest.param(
        "untrusted", pr("run-ci-megatron", "run-ci-all"), ["M", "src/model.py"],
        {"amd", "fsdp", "long", "megatron", "spare"},
        {"cpu": CPU_RUN,
         "gpu-a": ("skip", [UNTRUSTED], ["tests/gpu/test_fsdp.py", "tests/gpu/test_mega.py"]),
         "gpu-b": ("skip", [UNTRUSTED], ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py"]),
         "amd": ("skip", [UNTRUSTED], ["tests/gpu/test_amd.py"])},
        id="untrusted-no-label-overrides-the-hold"),
    pytest.param(
        "approved", pr("run-ci-all"), None, {"amd", "fsdp", "long", "megatron", "spare"},
        {"cpu": CPU_RUN,
         "gpu-a": ("run", [NO_DIFF, "run: included by run-ci-all"],
                   ["tests/gpu/test_fsdp.py", "tests/gpu/test_mega.py"]),
         "gpu-b": ("run", [NO_DIFF, "run: included by run-ci-all"],
                   ["tests/gpu/test_long_only.py", "tests/gpu/test_mega_long.py"]),
         "amd": ("run", [NO_DIFF, "run: included by run-ci-all"], ["tests/gpu/test_amd.py"])},
        id="approved-runs-like-trusted-with-labels"),
]


@pytest.mark.parametrize("trust, trigger, records, include, expected", SELECTION_CASES)
def test_trust_and_path_rules(make_repo, trust, trigger, records, include, expected):
    snapshot = checkout(make_repo)
    policy, table = outcome(snapshot, trusting(trigger, trust), diff_of(records))
    assert (policy.trust, set(policy.include_labels)) == (trust, include)
    assert table == expected


SRC = ["M", "src/x.py"]
FANS_OUT = "run: src/x.py matches no rule, so every stage runs"
AMD = ["tests/gpu/test_amd.py"]

GATED_TRUST_CASES = [
    pytest.param(
        "untrusted", pr(), SRC,
        {"cpu": CPU, "gpu-a": ("skip", [UNTRUSTED], A), "extra-a": ("skip", [UNTRUSTED], EXTRA_FILES),
         "nightly-gpu": ("skip", [NOT_REGULAR], []), "amd": ("skip", [UNTRUSTED], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="untrusted-comes-after-the-cadence-and-before-the-label-gates"),
    pytest.param(
        "untrusted", pr("run-ci", "run-ci-extra"), SRC,
        {"cpu": CPU, "gpu-a": ("skip", [UNTRUSTED], A), "extra-a": ("skip", [UNTRUSTED], EXTRA_FILES),
         "nightly-gpu": ("skip", [NOT_REGULAR], []), "amd": ("skip", [UNTRUSTED], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="untrusted-the-gate-labels-do-not-open-anything"),
    pytest.param(
        "approved", pr(), SRC,
        {"cpu": CPU, "gpu-a": ("skip", [GATE], A), "extra-a": ("skip", [GATE, EXTRA], ["tests/gpu/test_extra.py"]),
         "nightly-gpu": ("skip", [NOT_REGULAR], []), "amd": ("skip", [GATE], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="approved-still-needs-the-gate-labels"),
    pytest.param(
        "approved", pr("run-ci"), SRC,
        {"cpu": CPU, "gpu-a": ("run", [FANS_OUT], A), "extra-a": ("skip", [EXTRA], ["tests/gpu/test_extra.py"]),
         "nightly-gpu": ("skip", [NOT_REGULAR], []), "amd": ("run", [FANS_OUT], AMD),
         "nightly-amd": ("skip", [NOT_REGULAR_AMD], [])},
        id="approved-with-the-gate-label-runs"),
    pytest.param(
        "untrusted", Trigger(event="schedule", schedule="0 3 * * *"), None,
        {"cpu": ("skip", [NIGHTLY_SCHEDULE], []), "gpu-a": ("skip", [NIGHTLY_SCHEDULE], A_NIGHTLY),
         "extra-a": ("skip", [NIGHTLY_SCHEDULE], []),
         "nightly-gpu": ("skip", [UNTRUSTED], ["tests/gpu/test_nightly_gpu.py"]),
         "amd": ("skip", [NIGHTLY_SCHEDULE], []),
         "nightly-amd": ("skip", [UNTRUSTED], ["tests/gpu/test_nightly_amd.py"])},
        id="untrusted-the-schedule-reason-comes-first"),
    pytest.param(
        "approved", Trigger(event="schedule", schedule="0 3 * * *"), None,
        {"cpu": ("skip", [NIGHTLY_SCHEDULE], []), "gpu-a": ("skip", [NIGHTLY_SCHEDULE], A_NIGHTLY),
         "extra-a": ("skip", [NIGHTLY_SCHEDULE], []),
         "nightly-gpu": ("run", [in_schedule("0 3 * * *", "stages matching nightly-*", 1)],
                         ["tests/gpu/test_nightly_gpu.py"]),
         "amd": ("skip", [NIGHTLY_SCHEDULE], []),
         "nightly-amd": ("run", [in_schedule("0 3 * * *", "stages matching nightly-*", 1)],
                         ["tests/gpu/test_nightly_amd.py"])},
        id="approved-a-schedule-runs-as-trusted"),
]


@pytest.mark.parametrize("trust, trigger, records, expected", GATED_TRUST_CASES)
def test_trust_and_stage_level_rules(make_repo, trust, trigger, records, expected):
    snapshot = load_snapshot(make_repo(GATED_FILES, config=GATED_CONFIG, labels=None)).require_valid()
    _policy, table = outcome(snapshot, trusting(trigger, trust), diff_of(records))
    assert table == expected


# -- cpu stages on runners that may be self-hosted ----------------------------------------------

RUNNER_CONFIG = CONFIG.replace("EXPLICIT", "run").replace(
    "  - {name: cpu, backend: cpu}\n",
    "  - {name: cpu, backend: cpu}\n"
    "  - {name: cpu-hosted, backend: cpu, runs_on: [ubuntu-24.04]}\n"
    "  - {name: cpu-big, backend: cpu, runs_on: [self-hosted, big-cpu]}\n"
    "  - {name: cpu-custom, backend: cpu, runs_on: [ubuntu-gpu-box]}\n")
RUNNER_FILES = {**FILES, **{f"tests/cpu/test_{name}.py": (
    "from ci_policy import register_cpu_ci\n\n"
    f'register_cpu_ci(est_time=10, suite="cpu-{name}")\n\n'
    'if __name__ == "__main__":\n    print("ok")\n') for name in ("hosted", "big", "custom")}}


def ran(name: str) -> tuple:
    return ("run", ["run: stage is not diff-pruned (1 selected)"], [f"tests/cpu/test_{name}.py"])


def held(name: str, runs_on: str) -> tuple:
    return ("skip", [f"skip: untrusted head not approved (runs_on [{runs_on}] is not a GitHub-hosted runner)"],
            [f"tests/cpu/test_{name}.py"])


@pytest.mark.parametrize("trust, expected", [
    ("untrusted", {"cpu": CPU_RUN, "cpu-hosted": ran("hosted"), "cpu-big": held("big", "self-hosted, big-cpu"),
                   "cpu-custom": held("custom", "ubuntu-gpu-box")}),
    ("approved", {"cpu": CPU_RUN, "cpu-hosted": ran("hosted"), "cpu-big": ran("big"), "cpu-custom": ran("custom")}),
    ("trusted", {"cpu": CPU_RUN, "cpu-hosted": ran("hosted"), "cpu-big": ran("big"), "cpu-custom": ran("custom")}),
])
def test_an_untrusted_head_runs_cpu_stages_only_on_github_hosted_runners(make_repo, trust, expected):
    """A fork PR runs nothing on self-hosted runners without a maintainer's approval, cpu stages included."""
    snapshot = load_snapshot(make_repo(RUNNER_FILES, config=RUNNER_CONFIG, labels=LABELS)).require_valid()
    _policy, table = outcome(snapshot, trusting(pr(), trust), diff_of(SRC))
    assert {name: table[name] for name in expected} == expected


@pytest.mark.parametrize("runs_on, hosted", [
    ((), True),
    (("ubuntu-latest",), True), (("ubuntu-24.04",), True), (("ubuntu-22.04-arm",), True),
    (("windows-2025",), True), (("windows-11-arm",), True), (("macos-15",), True), (("macos-14-xlarge",), True),
    (("self-hosted",), False), (("ubuntu-latest", "gpu"), False), (("ubuntu-latest-16-cores",), False),
    (("ubuntu-gpu-box",), False), (("Ubuntu-latest",), False), (("h200",), False),
])
def test_hosted_runner_labels(runs_on, hosted):
    from ci_policy.config.stages import Stage
    from ci_policy.plan.policy import hosted_runner

    assert hosted_runner(Stage(name="s", backend="cpu", runs_on=runs_on)) is hosted


def test_the_default_trust_is_trusted(make_repo):
    snapshot = checkout(make_repo)
    assert Trigger(event="pull_request").trust == "trusted"
    assert resolve(pr(), snapshot.config, snapshot.labels).trust == "trusted"


def test_an_unknown_trust_is_a_usage_error(make_repo):
    snapshot = checkout(make_repo)
    with pytest.raises(UsageError) as info:
        resolve(Trigger(event="pull_request", trust="maybe"), snapshot.config, snapshot.labels)
    assert (info.value.source, info.value.message, info.value.hint) == (
        "--trust", "unknown trust 'maybe'; expected one of trusted, untrusted, approved",
        "pass the trust output of ci-policy pull-request")


def test_untrusted_images_are_skipped(make_repo):
    snapshot = checkout(make_repo)
    for trust, images in (("trusted", (("cuda", "build"), ("rocm", "build"))),
                          ("untrusted", (("cuda", "skip"), ("rocm", "skip")))):
        plan = build_plan(snapshot, Trigger(event="pull_request", labels=("run-ci-all",), trust=trust),
                          diff_of(["M", "src/model.py"]))
        assert plan.images == images


# -- the property: nothing an untrusted PR carries runs on an accelerator ---------------------

@pytest.fixture(scope="module")
def trust_snapshots(tmp_path_factory) -> dict[str, Snapshot]:
    out = {}
    for name, files in (("selection", {**FILES, ".github/ci-policy.yml": CONFIG.replace("EXPLICIT", "run"),
                                       "labels.py": LABELS}),
                        ("gated", {**GATED_FILES, ".github/ci-policy.yml": GATED_CONFIG})):
        repo = tmp_path_factory.mktemp(name)
        for rel, text in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text)
        out[name] = load_snapshot(repo).require_valid()
    return out


UNTRUSTED_TRIGGER = st.one_of(
    st.lists(st.sampled_from([*PR_LABELS, "run-ci", "high priority", "run-ci-extra"]), max_size=5).map(
        lambda labels: Trigger(event="pull_request", labels=tuple(labels), trust="untrusted")),
    st.sampled_from([Trigger(event="schedule", schedule="0 3 * * *", trust="untrusted"),
                     Trigger(event="workflow_dispatch", trust="untrusted"),
                     Trigger(event="push", trust="untrusted"),
                     Trigger(event="workflow_call", cadence="release", trust="untrusted")]),
)


@settings(max_examples=200, deadline=None)
@given(which=st.sampled_from(["selection", "gated"]), trigger=UNTRUSTED_TRIGGER,
       records=st.one_of(st.none(), st.lists(RECORD, min_size=1, max_size=5)),
       extra=st.lists(st.sampled_from(PATHS), max_size=3))
def test_untrusted_never_runs_an_accelerator_stage_or_builds_an_image(trust_snapshots, which, trigger, records,
                                                                       extra):
    snapshot = trust_snapshots[which]
    if trigger.event == "schedule" and which == "selection":
        trigger = replace(trigger, schedule="0 4 * * 6")
    fields = None if records is None else [f for record in records for f in record] + \
        [f for path in extra for f in ("M", path)]
    plan = build_plan(snapshot, trigger, diff_of(fields))
    assert all(action == "skip" for _backend, action in plan.images)
    for stage in plan.stages:
        if snapshot.config.is_accelerator(stage.stage.backend):
            assert stage.decision == "skip" and stage.shards == ()
            assert len(stage.reasons) == 1
            # Held back for trust, unless nothing would run trusted either (no selected test:
            # that stage waits for no approval), or the schedule or cadence leaves it out.
            assert stage.reasons[0] in (UNTRUSTED, NIGHTLY_SCHEDULE) or "cadence is not one of" in stage.reasons[0] \
                or (stage.tests == () and stage.reasons[0].startswith(("skip: no selected tests",
                                                                       "skip: no schedulable tests",
                                                                       "skip: no registered tests")))
    assert plan.policy.sources == tuple((label, source) for label, source in plan.policy.sources
                                        if not source.startswith("a change to "))


def test_the_result_holds_a_stage_its_diff_calls_for_until_a_maintainer_labels_it():
    """Approved, with a stage run without the tests its diff calls for and one skipped for them:
    never a pass, and the reasons name the labels to add."""
    stages = [("cpu", "run", ("run: stage is not diff-pruned (1 selected)",)),
              ("gpu-a", "run", ("run: requested by run-ci-fsdp",
                                f"run: {UNLABELLED_REASON}: 1 test(s) need megatron (/run-ci-megatron); the stage "
                                "runs without them")),
              ("gpu-b", "skip", (UNLABELLED,))]
    held = held_for_trust(stages)
    assert held == (("gpu-a", f"{UNLABELLED_REASON}: 1 test(s) need megatron (/run-ci-megatron); the stage runs "
                               "without them"),
                    ("gpu-b", f"{UNLABELLED_REASON}: 1 test(s) need megatron (/run-ci-megatron)"))
    decided = decide_outcome(True, (Job("plan", "success"), Job("stages-0", "success")), held=held, head_sha="a" * 40)
    assert (decided.ok, decided.failures) == (False, (
        "awaiting a maintainer's labels: this head is an outside contributor's, and its diff calls for tests that "
        "no maintainer's label selects, so they did not run",
        f"stage gpu-a waits for a maintainer: {UNLABELLED_REASON}: 1 test(s) need megatron (/run-ci-megatron); the "
        "stage runs without them",
        f"stage gpu-b waits for a maintainer: {UNLABELLED_REASON}: 1 test(s) need megatron (/run-ci-megatron)"))
    # Unapproved as well: the approval comes first.
    both = (("gpu-a", UNTRUSTED_REASON), *held)
    assert decide_outcome(True, (), held=both, head_sha="a" * 40).failures[0].startswith(
        f"awaiting `/ok-to-test {'a' * 40}` from a maintainer")
