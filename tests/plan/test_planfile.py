"""The plan-file reader (`ci_policy.plan.planfile`): digest, mismatches, and untrusted input.

Property tests: the path rule agrees with `check_relative`; the digest depends on the
inputs and not on their order; any mutation of a real plan document is read or refused
as a usage error naming `--plan`, never anything else.
"""

from __future__ import annotations

import copy
import json
from pathlib import PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st
from render_cases import pr_plan, write_repo

from ci_policy.app.plan_documents import plan_dict
from ci_policy.errors import InputError, UsageError
from ci_policy.plan.planfile import (
    Inputs,
    check_inputs,
    inputs_dict,
    mismatches,
    read_plan_file,
)
from ci_policy.plan.stagejob import RunSettings, settings_dict
from ci_policy.read.checkout import check_relative, is_plain_relative

A, B = "sha256:" + "a" * 64, "git:" + "b" * 40


@given(st.text(alphabet="ab./\\ \x00\x01\x7f-\x85\u00e9\u2028", max_size=12))
def test_a_plain_path_is_one_check_relative_keeps_as_it_is(text):
    try:
        kept = check_relative(text, field="path") == text
    except InputError:
        kept = False
    control = any(ord(c) < 32 or ord(c) == 127 for c in text)
    assert is_plain_relative(text) == (kept and not control and text != ".")
    if is_plain_relative(text):  # `read.checkout.check_no_symlinks` splits such a path at its slashes
        assert tuple(text.split("/")) == PurePosixPath(text).parts


@given(st.dictionaries(st.sampled_from(["tests/a.py", "tests/b.py", "t/c.py"]), st.sampled_from([A, B])))
def test_the_digest_covers_the_inputs_whatever_their_order(files):
    forward = inputs_dict(A, None, files)
    backward = inputs_dict(A, None, dict(reversed(list(files.items()))))
    assert forward == backward
    assert forward["digest"] != inputs_dict(A, B, files)["digest"]
    assert forward["digest"] != inputs_dict(B, None, files)["digest"]
    assert forward["digest"] != inputs_dict(A, None, {**files, "tests/new.py": A})["digest"]


def test_mismatches_name_configuration_labels_then_files_in_path_order():
    was = Inputs(A, A, (("tests/a.py", A), ("tests/c.py", A), ("tests/d.py", A)))
    now = Inputs(B, None, (("tests/a.py", B), ("tests/b.py", A), ("tests/d.py", A)))
    assert mismatches(was, now, "ci.yml", "labels.py") == [
        "configuration ci.yml changed", "labels.py is missing", "tests/a.py changed",
        "tests/b.py is not in the plan", "tests/c.py is missing"]
    assert mismatches(was, was, "ci.yml", "labels.py") == []


def test_check_inputs_names_five_then_how_many_more(tmp_path):
    plan = read_plan_file(json.dumps(document(tmp_path)), "plan.json")
    files = tuple((f"tests/new_{i}.py", A) for i in range(8))
    current = Inputs(plan.inputs.config, plan.inputs.labels, plan.inputs.files + files)
    try:
        check_inputs(plan, current, "ci.yml", "labels.py")
    except InputError as exc:
        assert (exc.diagnostic.path, exc.diagnostic.message) == (
            "plan.json", "the plan does not match the checkout: " + "; ".join(
                f"tests/new_{i}.py is not in the plan" for i in range(5)) + "; and 3 more")
    else:
        raise AssertionError("not refused")


def document(tmp_path) -> dict:
    plan = pr_plan(write_repo(tmp_path / "repo"), "run-ci-megatron")
    files = {f: A for f in plan.snapshot.files}
    return json.loads(json.dumps(plan_dict(plan, None, inputs_dict(A, B, files))))


SCALARS = st.none() | st.booleans() | st.integers(-2, 10**7) | st.floats(allow_nan=False) | st.text(max_size=8)


@given(st.data())
def test_any_mutation_is_read_or_refused_as_a_usage_error(tmp_path_factory, data):
    doc = document(tmp_path_factory.mktemp("plan"))
    if data.draw(st.booleans()):  # a stage plan: one stage, no test file's content id
        doc = {**doc, "stages": doc["stages"][:1], "inputs": {k: v for k, v in doc["inputs"].items() if k != "files"},
               "run_settings": settings_dict(RunSettings(timeout_from_est_time=(2.0, 60.0)))}
    mutated = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        target, key = _pick(mutated, data)
        if target is None:
            break
        target[key] = data.draw(SCALARS | st.lists(SCALARS, max_size=2) | st.dictionaries(st.text(max_size=4),
                                                                                             SCALARS, max_size=2))
    try:
        read_plan_file(json.dumps(mutated), "plan.json")
    except UsageError as exc:
        assert exc.source == "--plan" and exc.message.startswith("plan.json: ")


def _pick(doc, data):
    """A random (container, key) inside `doc`."""
    target, key = None, None
    node = doc
    for _ in range(data.draw(st.integers(1, 5))):
        keys = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
        if not keys:
            break
        target, key = node, data.draw(st.sampled_from(keys))
        node = node[key]
    return target, key


def test_the_plan_read_back_is_the_plan_that_was_written():
    """Stages, shards, registrations, gate declarations and the policy's switches survive the file."""
    from dataclasses import replace

    from helpers import EXAMPLE_REPO

    from ci_policy.model.snapshot import load_snapshot
    from ci_policy.plan.build import build_plan
    from ci_policy.plan.planfile import plan_of
    from ci_policy.plan.policy import Trigger
    from ci_policy.read.diff import Diff

    snapshot = load_snapshot(EXAMPLE_REPO)
    plan = build_plan(snapshot, Trigger(event="schedule", schedule="0 15 * * 6"), Diff.unavailable("none"))
    doc = plan_dict(plan, None, inputs_dict(A, B, {f: A for f in snapshot.files}))
    bare = replace(snapshot, registrations=(), gates=(), errors=())
    back = plan_of(read_plan_file(json.dumps(doc), "plan.json"), bare)
    def run_view(r):  # what `run` reads of a registration (labels and columns stay in the checkout)
        return (r.file, r.line, r.backend, r.suite, r.est_time, r.est_source, r.marker, r.implicit)

    assert [(s.stage, s.decision, s.reasons, [run_view(r) for r in s.tests], s.shards, s.invalid)
            for s in back.stages] == \
        [(s.stage, s.decision, s.reasons, [run_view(r) for r in s.tests], s.shards, s.invalid) for s in plan.stages]
    assert any(s.shards for s in back.stages)
    assert back.snapshot.gates == plan.snapshot.gates and plan.snapshot.gates
    assert back.invalid == plan.invalid
    p, q = back.policy, plan.policy
    assert (p.event, p.cadence, p.trust, p.raw_labels, p.include_labels, p.bypass_fastfail, p.write_baseline) == \
        (q.event, q.cadence, q.trust, q.raw_labels, q.include_labels, q.bypass_fastfail, q.write_baseline)
    assert back.warnings == plan.warnings and back.config is snapshot.config


def test_a_stage_job_reads_its_own_stage_only(tmp_path):
    doc = document(tmp_path)
    names = [s["name"] for s in doc["stages"]]
    assert len(names) >= 2
    whole = read_plan_file(json.dumps(doc), "plan.json")
    for name in names:
        mine = read_plan_file(json.dumps(doc), "plan.json", name)
        assert mine.stages == tuple(s for s in whole.stages if s.name == name)
        assert (mine.inputs, mine.gates, mine.invalid) == (whole.inputs, whole.gates, whole.invalid)
    # A stage the plan lacks: every stage is read, for the refusal to list them.
    assert read_plan_file(json.dumps(doc), "plan.json", "no-such-stage").stages == whole.stages
    # Another stage's tests are not read, so a fault there does not stop this stage's job...
    doc["stages"][1]["tests"] = "not a list"
    assert read_plan_file(json.dumps(doc), "plan.json", names[0]).stages == whole.stages[:1]
    # ...but every stage's name is, and a stage planned twice is still refused.
    doc["stages"][1] = {**doc["stages"][0]}
    with pytest.raises(UsageError) as refused:
        read_plan_file(json.dumps(doc), "plan.json", names[0])
    assert refused.value.message == "plan.json: stages: a stage is planned twice"
    doc["stages"][1] = {"name": 7}
    with pytest.raises(UsageError) as refused:
        read_plan_file(json.dumps(doc), "plan.json", names[0])
    assert refused.value.message == "plan.json: stages[1].name: expected a string, got a number"


def test_a_stage_plan_is_read_without_its_test_files_content_ids(tmp_path):
    doc = document(tmp_path)
    doc["inputs"] = inputs_dict(A, B, doc["inputs"]["files"], "c" * 40)
    whole = read_plan_file(json.dumps(doc), "plan.json")
    assert not whole.stage_plan and whole.inputs.files
    stage = doc["stages"][0]
    shared = {key: value for key, value in doc["inputs"].items() if key != "files"}
    mine = read_plan_file(json.dumps({**doc, "stages": [stage], "inputs": shared}), "first.json", stage["name"])
    assert mine.stage_plan
    assert (mine.inputs.config, mine.inputs.labels, mine.inputs.files, mine.inputs.tree) == (A, B, (), "c" * 40)
    assert mine.stages == whole.stages[:1] and (mine.gates, mine.invalid) == (whole.gates, whole.invalid)

    def refused(inputs: dict, tests: list | None = None) -> str:
        with pytest.raises(UsageError) as info:
            read_plan_file(json.dumps({**doc, "stages": [{**stage, "tests": stage["tests"] if tests is None
                                                          else tests}], "inputs": inputs}), "first.json")
        return info.value.message

    # Its digest (of the whole plan's inputs) cannot be recomputed: it is checked for form.
    assert refused({**shared, "digest": "sha256:x"}) == (
        'first.json: inputs.digest: expected sha256:<64 hex digits>, got "sha256:x"')
    assert refused({**shared, "tree": "x"}) == (
        'first.json: inputs.tree: expected null or a git tree id (40 or 64 hex digits), got "x"')
    # Its tests are plain repo-relative paths still, though no listing names them.
    assert refused(shared, [{**stage["tests"][0], "file": "../etc/passwd"}]) == (
        'first.json: stages[0].tests[0].file: "../etc/passwd" is not a plain repo-relative path')


SIZED_CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: gpu, backend: cuda, runs_on: [h200], partitions: auto, shard_seconds: 700, max_parallel: 2}
  - {name: cpu, backend: cpu, runs_on: [ubuntu-latest], partitions: 2}
"""


def sized_repo(root):
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "ci-policy.yml").write_text(SIZED_CONFIG)
    (root / "labels.py").write_text('KNOWN_LABELS = {"megatron": "Megatron tests"}\n')
    (root / "tests").mkdir()
    main = '\nif __name__ == "__main__":\n    main()\n'
    for i, est in enumerate((500, 500, 400, 400, 300, 300, 300)):
        (root / "tests" / f"test_g{i}.py").write_text(f'from ci_policy import register_cuda_ci\n\n'
                                                       f'register_cuda_ci({est}, "gpu", labels=["megatron"])\n'
                                                       + main)
    for i, est in enumerate((3.5, 2.25, 1)):
        (root / "tests" / f"test_c{i}.py").write_text(f'from ci_policy import register_cpu_ci\n\n'
                                                       f'register_cpu_ci({est}, "cpu")\n' + main)
    return root


def test_the_stages_read_back_are_the_stages_that_were_planned(tmp_path):
    """plan -> JSON -> plan_of: equal StagePlans (registrations as `run` reads them), with the split's
    lower bound and proof and the sizing notes."""
    from dataclasses import replace

    from ci_policy.model.snapshot import load_snapshot
    from ci_policy.plan.build import build_plan
    from ci_policy.plan.planfile import plan_of
    from ci_policy.plan.policy import Trigger
    from ci_policy.read.diff import Diff

    snapshot = load_snapshot(sized_repo(tmp_path))
    plan = build_plan(snapshot, Trigger(event="pull_request", labels=("run-ci-megatron",)), Diff.unavailable("none"))
    doc = plan_dict(plan, None, inputs_dict(A, None, {f: A for f in snapshot.files}))
    back = plan_of(read_plan_file(json.dumps(doc), "plan.json"), replace(snapshot, registrations=()))

    def run_view(r):  # what `run` reads of a registration (labels and columns stay in the checkout)
        return (r.file, r.line, r.backend, r.suite, r.est_time, r.est_source, r.marker, r.implicit)

    assert [(replace(s, tests=()), [run_view(r) for r in s.tests]) for s in back.stages] == \
        [(replace(s, tests=()), [run_view(r) for r in s.tests]) for s in plan.stages]
    gpu, cpu = plan.stages
    # 2700s on ceil(2700 / 700) = 4 shards: 500+300, 500+300, 400+300, 400: a makespan of 800 over a
    # lower bound of 675, proven optimal (no two of the seven files fit in 675s with a third elsewhere).
    assert (gpu.makespan, gpu.lower_bound, gpu.optimal) == (800, 675, True)
    assert (gpu.shards_reason, gpu.max_parallel, gpu.max_parallel_reason) == (
        "4 shards: 2700s selected / 700s per shard", 2, "max_parallel 2: the stage's limit")
    assert (cpu.makespan, cpu.lower_bound, cpu.optimal, cpu.shards_reason, cpu.max_parallel) == (
        3.5, 3.5, True, None, None)


def test_a_split_not_proven_optimal_is_read_back_as_not_proven(tmp_path):
    from dataclasses import replace

    from ci_policy.model.snapshot import load_snapshot
    from ci_policy.plan.build import build_plan
    from ci_policy.plan.planfile import plan_of
    from ci_policy.plan.policy import Trigger
    from ci_policy.read.diff import Diff

    snapshot = load_snapshot(sized_repo(tmp_path))
    plan = build_plan(snapshot, Trigger(event="pull_request", labels=("run-ci-megatron",)), Diff.unavailable("none"))
    doc = plan_dict(plan, None, inputs_dict(A, None, {f: A for f in snapshot.files}))
    doc["stages"][0].update(lower_bound=612.5, optimal=False)
    back = plan_of(read_plan_file(json.dumps(doc), "plan.json"), replace(snapshot, registrations=()))
    assert (back.stages[0].lower_bound, back.stages[0].optimal) == (612.5, False)


def test_a_stage_without_its_proof_is_refused(tmp_path):
    import pytest

    from ci_policy.model.snapshot import load_snapshot
    from ci_policy.plan.build import build_plan
    from ci_policy.plan.policy import Trigger
    from ci_policy.read.diff import Diff

    snapshot = load_snapshot(sized_repo(tmp_path))
    plan = build_plan(snapshot, Trigger(event="pull_request", labels=("run-ci-megatron",)), Diff.unavailable("none"))
    doc = plan_dict(plan, None, inputs_dict(A, None, {f: A for f in snapshot.files}))
    del doc["stages"][1]["optimal"]
    with pytest.raises(UsageError) as info:
        read_plan_file(json.dumps(doc), "plan.json")
    hint = " (hint: pass the file `ci-policy plan --format json` wrote in this run's plan job)"
    assert str(info.value) == "--plan: plan.json: stages[1]: missing key 'optimal'" + hint
    doc["stages"][1]["optimal"] = "yes"
    with pytest.raises(UsageError) as info:
        read_plan_file(json.dumps(doc), "plan.json")
    assert str(info.value) == '--plan: plan.json: stages[1].optimal: expected true or false, got a string' + hint


def test_a_per_stage_plan_gives_its_stage_job_without_the_configuration():
    """`stage_job`: the stage, its tests and shards, and the settings resolved from the configuration,
    as `StageJob.of` takes them from the plan; None where running the stage needs more."""
    from helpers import EXAMPLE_REPO

    from ci_policy.app.plan_documents import stage_plan_jsons
    from ci_policy.model.snapshot import load_snapshot
    from ci_policy.plan.build import build_plan
    from ci_policy.plan.planfile import stage_job
    from ci_policy.plan.policy import Trigger
    from ci_policy.plan.stagejob import StageJob
    from ci_policy.read.diff import Diff

    snapshot = load_snapshot(EXAMPLE_REPO)
    plan = build_plan(snapshot, Trigger(event="workflow_dispatch", labels=("run-ci-all",)), Diff.unavailable("none"))
    docs = stage_plan_jsons(plan, None, inputs_dict(A, B, {f: A for f in snapshot.files}, "c" * 40))
    gated = {g.file for g in plan.snapshot.gates}
    kinds = set()
    for name, text in docs.items():
        job = stage_job(read_plan_file(text, f"{name}.json", name), name)
        planned = StageJob.of(plan, name)
        if gated & {r.file for r in planned.stage.tests}:  # evaluating a gate reads the configuration
            assert job is None
            kinds.add("gated")
            continue
        assert job is not None
        kinds.add("job")
        assert (job.stage.name, job.stage.decision, job.stage.reasons, job.stage.shards, job.stage.not_selected) == (
            name, planned.stage.decision, planned.stage.reasons, planned.stage.shards, ())
        assert [(r.file, r.line, r.backend, r.suite, r.est_time, r.est_source, r.marker, r.implicit)
                for r in job.stage.tests] == [
            (r.file, r.line, r.backend, r.suite, r.est_time, r.est_source, r.marker, r.implicit)
            for r in planned.stage.tests]
        assert (job.settings, job.bypass_fastfail, job.invalid, job.plan, job.declares_gates) == (
            planned.settings, plan.policy.bypass_fastfail, (), None, True)
    assert kinds == {"gated", "job"}
    name = "stage-a-cpu"
    doc = json.loads(docs[name])
    assert stage_job(read_plan_file(json.dumps(doc), "a.json", name), name) is not None
    refused = [
        ("stage-b-1-gpu-h200", doc),  # another stage than the plan's
        (name, {k: v for k, v in doc.items() if k != "run_settings"}),  # written before run_settings
        # resolved by another version, whose configuration checks (and settings) may differ from these
        (name, {**doc, "run_settings": {"ci_policy": "0.0.0", "runner": "bash"}}),
        (name, {**doc, "invalid": [{"file": "tests/fast/test_bad.py", "diagnostics": []}]}),
        (name, {**doc, "write_baseline": True}),  # a baseline-writing run of a plan that declares gates
    ]
    for stage, body in refused:
        assert stage_job(read_plan_file(json.dumps(body), "a.json", stage), stage) is None, (stage, body.keys())
    # Without any gate declared, a baseline-writing run needs no more than the stage's plan.
    assert stage_job(read_plan_file(json.dumps({**doc, "write_baseline": True, "gates": []}), "a.json", name),
                     name) is not None
    # The whole plan has no run_settings: its stage job is `StageJob.of` the plan rebuilt with the configuration.
    whole = read_plan_file(json.dumps(plan_dict(plan, None, inputs_dict(A, B, {f: A for f in snapshot.files}))),
                           "plan.json", name)
    assert (whole.stage_plan, whole.settings, stage_job(whole, name)) == (False, None, None)


def test_a_partly_read_file_is_read_back_partly_read(make_repo):
    """A file that lost one bad registration keeps its kept stages through the plan file."""
    from dataclasses import replace

    from cli.partial import TWO, two_repo

    from ci_policy.model.snapshot import InvalidFile, load_snapshot
    from ci_policy.plan.build import build_plan
    from ci_policy.plan.planfile import plan_of
    from ci_policy.plan.policy import Trigger
    from ci_policy.read.diff import Diff

    snapshot = load_snapshot(two_repo(make_repo))
    plan = build_plan(snapshot, Trigger(event="pull_request", labels=("run-ci-megatron",)), Diff.unavailable("none"))
    doc = plan_dict(plan, None, inputs_dict(A, B, {f: A for f in snapshot.files}))
    assert [(e["file"], e.get("kept_stages")) for e in doc["invalid"]] == [(TWO, ["gpu-a"])]
    back = plan_of(read_plan_file(json.dumps(doc), "plan.json"), replace(snapshot, registrations=()))
    assert back.invalid == plan.invalid
    assert [(f.file, f.suites, f.kept, [d.code for d in f.diagnostics]) for f in back.invalid] == [
        (TWO, (), ("gpu-a",), ["CP225"])]
    assert isinstance(back.invalid[0], InvalidFile)
    assert [(r.file, r.line) for r in back.stage("gpu-a").tests if r.file == TWO] == [(TWO, 3)]
