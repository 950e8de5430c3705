"""The snapshot of a checkout: what it holds for the example repository, `require_valid()`,
estimates applied over the literals, which problems stop `load_snapshot` itself, and
`usable()`: which errors make one test file invalid and which stop everything."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers import EXAMPLE_REPO, MAIN_BLOCK

from ci_policy.errors import Diagnostic, InputError, InputErrors
from ci_policy.gates.declarations import GateDeclaration
from ci_policy.model.snapshot import Snapshot, load_snapshot

H200_1, H200_4, MI350, GB200 = "stage-b-1-gpu-h200", "stage-c-4-gpu-h200", "stage-c-4-gpu-mi350", "stage-d-8-gpu-gb200"
SESSION = "tests/e2e/session_server/"
V1 = "rollout/tito_session_mismatch_rate/v1/assistant_text"
V2 = "rollout/tito_session_mismatch_rate/v2/assistant_text"

# (file, line, col, backend, suite, est_time, labels, nightly, disabled, implicit, est_source)
EXAMPLE_REGISTRATIONS = [
    (SESSION + "test_session_multiturn.py", 11, 1, "cuda", H200_4, 480, ("session", "sglang"), False, None,
     False, "literal"),
    (SESSION + "test_session_tool_calls.py", 10, 1, "cuda", H200_1, 360, ("session",), False, None, False,
     "literal"),
    ("tests/e2e/test_fsdp_checkpoint_resume.py", 10, 1, "cuda", H200_4, 420, ("fsdp",), False,
     "flaky on H200 driver 580, tracked in #1234", False, "literal"),
    ("tests/e2e/test_fsdp_dpo_4gpu.py", 9, 1, "cuda", H200_4, 600, ("fsdp",), False, None, False, "literal"),
    ("tests/e2e/test_fsdp_grpo.py", 9, 1, "cuda", H200_1, 240, ("fsdp",), False, None, False, "literal"),
    ("tests/e2e/test_gb200_scaling.py", 9, 1, "cuda", GB200, 3000, ("megatron",), False, None, False, "literal"),
    ("tests/e2e/test_megatron_long_context.py", 10, 1, "cuda", H200_4, 2400, ("megatron", "long"), False, None,
     False, "literal"),
    ("tests/e2e/test_megatron_nightly_convergence.py", 9, 1, "cuda", H200_4, 1500, ("megatron",), True, None,
     False, "literal"),
    ("tests/e2e/test_megatron_ppo_4gpu.py", 9, 1, "cuda", H200_4, 900, ("megatron",), False, None, False,
     "literal"),
    ("tests/e2e/test_megatron_sft.py", 9, 1, "cuda", H200_1, 300, ("megatron",), False, None, False, "literal"),
    ("tests/e2e/test_rocm_fsdp_grpo.py", 9, 1, "cuda", H200_4, 360, ("fsdp",), False, None, False, "literal"),
    ("tests/e2e/test_rocm_fsdp_grpo.py", 10, 1, "rocm", MI350, 480, ("fsdp", "rocm"), False, None, False,
     "literal"),
    ("tests/e2e/test_rocm_megatron_sft.py", 9, 1, "rocm", MI350, 540, ("megatron", "rocm"), False, None, False,
     "literal"),
    ("tests/e2e/test_sglang_rollout.py", 9, 1, "cuda", H200_1, 180, ("sglang",), False, None, False, "literal"),
] + [(f"tests/fast/{name}", None, None, "cpu", "stage-a-cpu", 5, (), False, None, True, "implicit")
     for name in ("test_advantages.py", "test_kl.py", "test_rollout.py", "test_session_protocol.py")]


def rows(snapshot: Snapshot) -> list[tuple]:
    return [(r.file, r.line, r.col, r.backend, r.suite, r.est_time, r.labels, r.nightly, r.disabled, r.implicit,
             r.est_source) for r in snapshot.registrations]


def test_the_example_repository():
    snapshot = load_snapshot(EXAMPLE_REPO)
    assert snapshot.repo == EXAMPLE_REPO
    assert (snapshot.config.path, snapshot.labels.path) == (".github/ci-policy.yml", "labels.py")
    assert snapshot.labels.names == ("megatron", "fsdp", "sglang", "session", "rocm", "long")
    assert [s.name for s in snapshot.config.stages] == ["stage-a-cpu", H200_1, H200_4, MI350, GB200]
    # Sorted, repo-relative; conftest.py does not match test_*.py.
    assert snapshot.files == tuple(sorted({row[0] for row in EXAMPLE_REGISTRATIONS}))
    assert len(snapshot.files) == 17
    assert rows(snapshot) == EXAMPLE_REGISTRATIONS
    assert snapshot.registrations_for("tests/e2e/test_rocm_fsdp_grpo.py") == snapshot.registrations[10:12]
    assert snapshot.registrations_for("tests/fast/conftest.py") == ()
    assert snapshot.gates == (
        GateDeclaration(SESSION + "test_session_multiturn.py", 12, 1, V1, written=("metric_key",)),
        GateDeclaration(SESSION + "test_session_multiturn.py", 13, 1, V2, written=("metric_key",)),
        GateDeclaration(SESSION + "test_session_tool_calls.py", 11, 1, V1, written=("metric_key",)),
        GateDeclaration(SESSION + "test_session_tool_calls.py", 12, 1, V2, written=("metric_key",)),
        GateDeclaration(SESSION + "test_session_tool_calls.py", 13, 1, "train/grad_norm", steps="all",
                        constraint=(("abs_floor_down", 0.05), ("abs_floor_up", 0.05), ("rel_down", 0.5),
                                    ("rel_up", 0.5)),
                        written=("metric_key", "steps", "constraint")),
    )
    assert (snapshot.errors, snapshot.unused_estimates, snapshot.estimates_missing) == ((), (), False)
    assert snapshot.require_valid() is snapshot


def test_require_valid_raises_with_every_error(example_repo):
    (example_repo / "tests/e2e/test_fsdp_grpo.py").write_text(
        'from ci_policy import register_cuda_ci\n\nregister_cuda_ci(-1, "stage-b-1-gpu-h200", labels=["fsdp"])\n'
        + MAIN_BLOCK)
    (example_repo / "tests/e2e/test_megatron_sft.py").write_text("x = 1\n")
    (example_repo / "tests/e2e/test_sglang_rollout.py").write_bytes(b"\xff\n")
    snapshot = load_snapshot(example_repo)
    expected = (
        Diagnostic("register_cuda_ci: est_time must be a finite non-negative number of seconds, got -1",
                   path="tests/e2e/test_fsdp_grpo.py", line=3, col=18, hint="write e.g. est_time=300",
                   code="CP223"),
        Diagnostic("tests/e2e/test_megatron_sft.py matches the discovery pattern 'test_*.py' but has no "
                   "registration and is not under an implicit root, so no stage would run it",
                   path="tests/e2e/test_megatron_sft.py", line=1, col=1, code="CP231",
                   hint="add register_cpu_ci/register_cuda_ci/register_rocm_ci(...) at module level, or add an "
                        "implicit root for its directory in the configuration"),
        Diagnostic("test file tests/e2e/test_sglang_rollout.py is not valid UTF-8",
                   path="tests/e2e/test_sglang_rollout.py", line=1, col=1, hint="save the file as UTF-8",
                   code="CP406"),
    )
    assert snapshot.errors == expected
    # The valid rest is still there: a caller that can use it (lint, plan) may.
    assert len(snapshot.registrations) == len(EXAMPLE_REGISTRATIONS) - 3
    with pytest.raises(InputErrors) as info:
        snapshot.require_valid()
    assert info.value.errors == expected
    assert str(info.value) == "\n".join(str(d) for d in expected)


ESTIMATES = """\
{"schema": 1, "estimates": [
  {"file": "tests/e2e/test_fsdp_grpo.py", "suite": "stage-b-1-gpu-h200", "est_time": 275.5},
  {"file": "tests/e2e/test_rocm_fsdp_grpo.py", "suite": "stage-c-4-gpu-mi350", "est_time": 512},
  {"file": "tests/fast/test_kl.py", "suite": "stage-a-cpu", "est_time": 2},
  {"file": "tests/e2e/test_gone.py", "suite": "stage-b-1-gpu-h200", "est_time": 10}
]}
"""


def with_estimates(repo: Path, text: str | None) -> Path:
    config = repo / ".github" / "ci-policy.yml"
    config.write_text(config.read_text() + "estimates_file: .github/ci-estimates.json\n")
    if text is not None:
        (repo / ".github" / "ci-estimates.json").write_text(text)
    return repo


def test_estimates_override_the_literals_they_list(example_repo):
    snapshot = load_snapshot(with_estimates(example_repo, ESTIMATES))
    estimated = {("tests/e2e/test_fsdp_grpo.py", H200_1): 275.5, ("tests/e2e/test_rocm_fsdp_grpo.py", MI350): 512,
                 ("tests/fast/test_kl.py", "stage-a-cpu"): 2}
    expected = []
    for row in EXAMPLE_REGISTRATIONS:
        est_time = estimated.get((row[0], row[4]))
        expected.append(row if est_time is None else row[:5] + (est_time,) + row[6:10] + ("estimates",))
    assert rows(snapshot) == expected
    assert [row[5] for row in rows(snapshot) if row[10] == "estimates"] == [275.5, 512, 2]
    # The CUDA registration of the same file keeps its literal: estimates are per (file, suite).
    assert rows(snapshot)[10][5:] == (360, ("fsdp",), False, None, False, "literal")
    assert snapshot.unused_estimates == (("tests/e2e/test_gone.py", "stage-b-1-gpu-h200"),)
    assert (snapshot.errors, snapshot.estimates_missing) == ((), False)


def test_a_missing_estimates_file_keeps_the_literals(example_repo):
    snapshot = load_snapshot(with_estimates(example_repo, None))
    assert rows(snapshot) == EXAMPLE_REGISTRATIONS
    assert (snapshot.errors, snapshot.unused_estimates, snapshot.estimates_missing) == ((), (), True)


def test_a_bad_estimates_file_is_an_error_and_keeps_the_literals(example_repo):
    snapshot = load_snapshot(with_estimates(example_repo, '{"schema": 2, "estimates": []}'))
    assert rows(snapshot) == EXAMPLE_REGISTRATIONS
    assert snapshot.errors == (Diagnostic(
        'estimates file .github/ci-estimates.json must be {"schema": 1, "estimates": [...]}',
        path=".github/ci-estimates.json", hint="regenerate it with ci-policy tune --write-estimates",
        code="CP421"),)


def test_unusable_configuration_or_labels_stop_the_snapshot(example_repo, tmp_path):
    with pytest.raises(InputError) as missing:
        load_snapshot(tmp_path / "nowhere")
    assert missing.value.diagnostic == Diagnostic(
        f"repository {tmp_path / 'nowhere'} is not a directory", path=str(tmp_path / "nowhere"),
        hint="pass --repo with the checkout's root directory", code="CP403")
    (example_repo / "labels.py").write_text("LABELS = {}\n")
    with pytest.raises(InputErrors) as labels:
        load_snapshot(example_repo)
    assert labels.value.errors == (Diagnostic(
        "labels file labels.py does not define KNOWN_LABELS", path="labels.py", line=1, col=1, code="CP302",
        hint='add a module-level dict literal: KNOWN_LABELS = {"name": "description"}'),)


# -- a labels file only when labels are used ----------------------------------------------------

NO_LABELS_CONFIG = """\
version: 1
discovery:
  roots: [tests]
gpu_requires_labels: false
stages:
  - {name: cpu, backend: cpu}
  - {name: gpu, backend: cuda, runs_on: [h200]}
"""


def write_repo(root: Path, files: dict[str, str], config: str = NO_LABELS_CONFIG) -> Path:
    for rel, text in {".github/ci-policy.yml": config, **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_repository_that_uses_no_labels_needs_no_labels_file(tmp_path):
    repo = write_repo(tmp_path, {"tests/test_cpu.py": 'register_cpu_ci(1, "cpu")\n',
                                 "tests/test_gpu.py": 'register_cuda_ci(60, "gpu")\n' + MAIN_BLOCK})
    snapshot = load_snapshot(repo)
    assert snapshot.errors == ()
    assert (snapshot.labels.path, snapshot.labels.labels) == ("labels.py", ())
    assert [(r.file, r.suite) for r in snapshot.registrations] == [("tests/test_cpu.py", "cpu"),
                                                                  ("tests/test_gpu.py", "gpu")]


HINT_LABELS = 'create labels.py with KNOWN_LABELS = {"name": "description"}, or set labels_file in the configuration'


def test_labels_used_without_a_labels_file_say_so(tmp_path):
    repo = write_repo(tmp_path, {"tests/test_gpu.py": 'register_cuda_ci(60, "gpu", labels=["fsdp"])\n' + MAIN_BLOCK})
    missing = [e for e in load_snapshot(repo).errors if e.path == "labels.py"]
    assert missing == [Diagnostic("labels file labels.py does not exist, but 1 registration(s) use labels "
                                  "(first: tests/test_gpu.py:1)", path="labels.py", code="CP402",
                                  hint=HINT_LABELS)]


def test_labels_required_of_gpu_tests_without_a_labels_file_say_so(tmp_path):
    config = NO_LABELS_CONFIG.replace("gpu_requires_labels: false\n", "")
    repo = write_repo(tmp_path, {"tests/test_gpu.py": 'register_cuda_ci(60, "gpu")\n' + MAIN_BLOCK,
                                 "tests/test_gpu2.py": 'register_cuda_ci(60, "gpu")\n' + MAIN_BLOCK,
                                 "tests/test_cpu.py": 'register_cpu_ci(1, "cpu")\n'}, config)
    missing = [e for e in load_snapshot(repo).errors if e.path == "labels.py"]
    assert missing == [Diagnostic("labels file labels.py does not exist, but gpu_requires_labels is true and 2 GPU "
                                  "registration(s) need a label", path="labels.py", code="CP402", hint=HINT_LABELS)]


def test_labels_named_by_the_configuration_without_a_labels_file_say_so(tmp_path):
    config = NO_LABELS_CONFIG + "cadences: {nightly_exclude: [long]}\n"
    repo = write_repo(tmp_path, {"tests/test_cpu.py": 'register_cpu_ci(1, "cpu")\n'}, config)
    missing = [e for e in load_snapshot(repo).errors if e.path == "labels.py"]
    assert missing == [Diagnostic("labels file labels.py does not exist, but the configuration names labels "
                                  "(cadences.nightly_exclude)", path="labels.py", code="CP402", hint=HINT_LABELS)]


def test_a_configured_labels_file_must_exist(tmp_path):
    config = NO_LABELS_CONFIG + "labels_file: ci/labels.py\n"
    repo = write_repo(tmp_path, {"tests/test_cpu.py": 'register_cpu_ci(1, "cpu")\n'}, config)
    with pytest.raises(InputErrors) as info:
        load_snapshot(repo)
    assert info.value.errors == (Diagnostic("labels file ci/labels.py does not exist", path="ci/labels.py",
                                            code="CP402",
                                            hint="create it or point the configuration at the right labels file"),)


def test_a_symlinked_labels_file_is_refused_even_when_no_label_is_used(tmp_path):
    repo = write_repo(tmp_path, {"tests/test_cpu.py": 'register_cpu_ci(1, "cpu")\n'})
    (repo / "labels.py").symlink_to("/etc/passwd")
    with pytest.raises(InputErrors) as info:
        load_snapshot(repo)
    assert [(e.code, e.path) for e in info.value.errors] == [("CP401", "labels.py")]


# -- usable(): which errors make one file invalid, which stop everything ---------------------------------

GPU_A = 'from ci_policy import register_cuda_ci\n\nregister_cuda_ci(60, "gpu-a", labels=["megatron"])\n' + MAIN_BLOCK
UNREGISTERED = ("tests/e2e/test_x.py matches the discovery pattern 'test_*.py' but has no registration and is "
                "not under an implicit root, so no stage would run it")


def invalid(snapshot: Snapshot) -> list[tuple[str, tuple[str, ...], tuple[str, ...],
                                             list[tuple[str | None, int | None]]]]:
    """Each invalid file: its path, the stages dropped with it, the stages it is still scheduled in, its errors."""
    return [(f.file, f.suites, f.kept, [(d.code, d.line) for d in f.diagnostics]) for f in snapshot.invalid_files]


def test_an_error_in_a_test_file_makes_only_that_file_invalid(make_repo):
    repo = make_repo({
        "tests/e2e/test_ok.py": GPU_A,
        # One registration reads, the other does not: the file is partly read, its good one kept.
        "tests/e2e/test_half.py": GPU_A + 'register_cuda_ci(60, "gpu-b", labels=["nosuch"])\n',
        # Its only registration is bad: nothing is left, so the file is dropped whole.
        "tests/e2e/test_none.py": GPU_A.replace('"megatron"', '"nosuch"'),
        # A gate call that cannot be bound is no registration's error: the file is dropped whole.
        "tests/e2e/test_gate.py": GPU_A + 'from ci_policy import register_ci_gate\nregister_ci_gate(*x)\n',
        "tests/e2e/test_syntax.py": "def (:\n",
        "tests/e2e/test_x.py": "x = 1\n",
        "tests/unit/test_u.py": "def test_u():\n    pass\n",
    })
    snapshot = load_snapshot(repo)
    usable = snapshot.usable()
    assert invalid(usable) == [
        ("tests/e2e/test_gate.py", ("gpu-a",), (), [("CP210", 8)]),
        ("tests/e2e/test_half.py", (), ("gpu-a",), [("CP227", 7)]),
        ("tests/e2e/test_none.py", (), (), [("CP227", 3)]),
        ("tests/e2e/test_syntax.py", (), (), [("CP206", 1)]),
        ("tests/e2e/test_x.py", (), (), [("CP231", 1)]),
    ]
    assert usable.invalid_files[4].diagnostics[0].message == UNREGISTERED
    assert [(r.file, r.line, r.suite) for r in usable.registrations] == [
        ("tests/e2e/test_half.py", 3, "gpu-a"), ("tests/e2e/test_ok.py", 3, "gpu-a"),
        ("tests/unit/test_u.py", None, "cpu")]
    assert usable.complete is False and usable.validity is not None
    assert usable.validity.fatal == () and usable.validity.not_fully_read == ()
    # The errors stay whole (lint reads them), and the snapshot it came from is untouched.
    assert usable.errors == snapshot.errors and len(snapshot.registrations) == 4
    assert (snapshot.invalid_files, snapshot.complete) == ((), True)
    assert usable.usable() is usable
    with pytest.raises(InputErrors):
        snapshot.require_valid()


def test_a_valid_checkout_is_usable_and_complete():
    snapshot = load_snapshot(EXAMPLE_REPO).usable()
    assert (snapshot.complete, snapshot.invalid_files, rows(snapshot)) == (True, (), EXAMPLE_REGISTRATIONS)
    assert snapshot.validity is not None and snapshot.validity.not_fully_read == ()


def test_a_symlinked_test_file_is_an_invalid_file(make_repo):
    repo = make_repo({"tests/e2e/test_ok.py": GPU_A, "elsewhere/real.py": GPU_A})
    (repo / "tests/e2e/test_link.py").symlink_to(repo / "elsewhere/real.py")
    assert invalid(load_snapshot(repo).usable()) == [("tests/e2e/test_link.py", (), (), [("CP401", None)])]


@pytest.mark.parametrize("change, codes", [
    # The configuration names a label the registry lacks: every selection could be wrong.
    (lambda repo: (repo / ".github/ci-policy.yml").write_text(
        (repo / ".github/ci-policy.yml").read_text() + "cadences:\n  nightly_exclude: [gone]\n"),
     [("CP310", ".github/ci-policy.yml")]),
    # A discovery root that is missing: its tests are unknown.
    (lambda repo: (repo / ".github/ci-policy.yml").write_text(
        (repo / ".github/ci-policy.yml").read_text().replace("roots: [tests]", "roots: [tests, gone]")),
     [("CP402", ".github/ci-policy.yml")]),
    # A directory symlink inside a root: the tests beneath it are unknown.
    (lambda repo: (repo / "tests/linked").symlink_to(repo / "tests/e2e"), [("CP401", "tests/linked")]),
    # A test file name with control characters: refused, never listed as an invalid file.
    (lambda repo: (repo / "tests/e2e/test_\n::error::x.py").write_text(GPU_A),
     [("CP407", "tests/e2e/test_\\n::error::x.py")]),
    # A broken estimates file: every est_time, so every shard, could change.
    (lambda repo: ((repo / ".github/ci-policy.yml").write_text(
        (repo / ".github/ci-policy.yml").read_text() + "estimates_file: est.json\n"),
        (repo / "est.json").write_text("{")), [("CP420", "est.json")]),
])
def test_errors_outside_test_files_stop_everything(make_repo, change, codes):
    repo = make_repo({"tests/e2e/test_ok.py": GPU_A, "tests/e2e/test_x.py": "x = 1\n"})
    change(repo)
    with pytest.raises(InputErrors) as info:
        load_snapshot(repo).usable()
    # Only the fatal errors: the invalid file is not what stopped the plan.
    assert [(e.code, e.path) for e in info.value.errors] == codes


def test_a_suppressed_error_leaves_the_file_valid_but_not_fully_read(make_repo):
    inside = ('from ci_policy import register_cuda_ci\n\nregister_cuda_ci(60, "gpu-a", labels=["megatron"])\n\n'
              'def test_gate_runtime():\n'
              '    register_cuda_ci(1, "gpu-b", labels=["fsdp"])  # ci-policy: ignore[CP201]\n' + MAIN_BLOCK)
    # A duplicate registration is suppressed but drops nothing: the file is read in full.
    twice = GPU_A + 'register_cuda_ci(60, "gpu-a", labels=["megatron"])  # ci-policy: ignore[CP220]\n'
    snapshot = load_snapshot(make_repo({"tests/e2e/test_inside.py": inside, "tests/e2e/test_twice.py": twice}))
    assert snapshot.errors == ()
    assert [(d.path, d.code) for d in snapshot.suppressed] == [("tests/e2e/test_inside.py", "CP201"),
                                                               ("tests/e2e/test_twice.py", "CP220")]
    usable = snapshot.usable()
    assert (usable.complete, usable.invalid_files) == (True, ())
    assert usable.validity is not None and usable.validity.not_fully_read == ("tests/e2e/test_inside.py",)
    assert [(r.file, r.line) for r in usable.registrations] == [
        ("tests/e2e/test_inside.py", 3), ("tests/e2e/test_twice.py", 3), ("tests/e2e/test_twice.py", 7)]


def test_registrations_for_gives_a_files_registrations_in_order_and_follows_replace(tmp_path):
    repo = write_repo(tmp_path, {"tests/test_a.py": 'register_cuda_ci(60, "gpu")\nregister_cpu_ci(5, "cpu")\n'
                                                    + MAIN_BLOCK,
                                 "tests/test_b.py": 'register_cpu_ci(1, "cpu")\n'})
    snapshot = load_snapshot(repo)
    assert [(r.line, r.suite) for r in snapshot.registrations_for("tests/test_a.py")] == [(1, "gpu"), (2, "cpu")]
    assert [r.suite for r in snapshot.registrations_for("tests/test_b.py")] == ["cpu"]
    assert snapshot.registrations_for("tests/test_c.py") == ()
    assert snapshot.registrations_for("tests/test_a.py") == tuple(
        r for r in snapshot.registrations if r.file == "tests/test_a.py")
    fewer = replace(snapshot, registrations=snapshot.registrations[:1])
    assert [r.suite for r in fewer.registrations_for("tests/test_a.py")] == ["gpu"]
    assert fewer.registrations_for("tests/test_b.py") == ()
    assert fewer == replace(snapshot, registrations=snapshot.registrations[:1])  # the index is no part of its value


def test_suites_labelled_and_invalid_paths_agree_with_a_scan_of_the_snapshot():
    snapshot = load_snapshot(EXAMPLE_REPO).usable()
    labels = sorted({label for r in snapshot.registrations for label in r.labels})
    assert len(labels) >= 2
    for chosen in ([], labels[:1], labels[1:], labels, ["no-such-label"]):
        assert snapshot.suites_labelled(chosen) == {r.suite for r in snapshot.registrations
                                                    if set(r.labels) & set(chosen)}
    assert snapshot.suites_labelled(labels) != set()
    assert snapshot.invalid_paths == frozenset(f.file for f in snapshot.invalid_files)
