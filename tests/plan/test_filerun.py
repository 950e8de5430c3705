"""The file-run resolver (ci_policy/plan/filerun.py); `ci-policy file-run` is tested in tests/cli."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from filerun_cases import BAD_TAG, gpu_test, write

from ci_policy.errors import InputError, InputErrors, UsageError
from ci_policy.plan.filerun import FilePlan, check_test_path, resolve_file

EXAMPLE_REPO = Path(__file__).resolve().parents[2] / "examples" / "gpu-repo"
SYMLINK = "is a symlink; ci-policy refuses symlinks in a checkout"
BAD_PATH = ("is not a repo-relative test file path DIR/.../NAME.py (segments of letters, digits, '_', '.', '-', "
            "each starting with a letter, digit or '_'; at most 255 characters)")


def errors_of(file: str, root: Path, **kwargs) -> list[str]:
    with pytest.raises((InputError, InputErrors)) as info:
        resolve_file(file, root, **kwargs)
    errors = info.value.errors if isinstance(info.value, InputErrors) else (info.value,)
    return [e.message for e in errors]


# -- what a file resolves to -------------------------------------------------------------------------

def test_a_cuda_file_resolves_to_its_stage_runners_image_and_timeout(pr):
    assert resolve_file("tests/e2e/test_megatron_sft.py", pr).as_dict() == {
        "file": "tests/e2e/test_megatron_sft.py", "hw": "cuda", "suite": "stage-b-1-gpu-h200",
        "runs_on": ["h200", "1gpu"], "container_image": "ghcr.io/minirl/ci-cuda:latest",
        "container_options": "--gpus all", "timeout_seconds": 900}


def test_a_rocm_file_runs_on_the_rocm_stage_runners(pr):
    assert resolve_file("tests/e2e/test_rocm_megatron_sft.py", pr, image_tag="rocm6.4") == FilePlan(
        file="tests/e2e/test_rocm_megatron_sft.py", hw="rocm", suite="stage-c-4-gpu-mi350",
        runs_on=("mi350", "4gpu"), container_image="ghcr.io/minirl/ci-rocm:rocm6.4", timeout_seconds=1620,
        container_options="--device /dev/kfd --device /dev/dri --group-add video --group-add render")


def test_a_cpu_file_without_runner_labels_runs_on_ubuntu_latest_without_an_image(pr):
    # tests/fast files are implicitly registered for stage-a-cpu (est_time 5), which names no runners.
    assert resolve_file("tests/fast/test_kl.py", pr) == FilePlan(
        file="tests/fast/test_kl.py", hw="cpu", suite="stage-a-cpu", runs_on=("ubuntu-latest",),
        container_image=None, timeout_seconds=900)


def test_an_explicit_request_ignores_cadence_and_labels(pr):
    # nightly=True: never planned on a regular PR, but an explicit file request runs it.
    plan = resolve_file("tests/e2e/test_megatron_nightly_convergence.py", pr)
    # 3 * 1500 s, capped by the stage's own timeout_per_file (finding 5).
    assert (plan.suite, plan.timeout_seconds) == ("stage-c-4-gpu-h200", 3600)
    # labels=["megatron", "long"]: long is excluded from nightly; irrelevant here.
    plan = resolve_file("tests/e2e/test_megatron_long_context.py", pr)
    assert (plan.suite, plan.runs_on, plan.timeout_seconds) == ("stage-c-4-gpu-h200", ("h200", "4gpu"), 3600)


TIMING_CONFIG = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: cpu, backend: cpu, runs_on: [self-hosted, cpu-large]}
  - {name: gpu, backend: cuda, runs_on: [h200]}
file_run:
  image: {cuda: registry.example.com:5000/team/ci-cuda}
  default_tag: nightly-2026.01
  timeout_factor: 1.5
  min_timeout: 60
"""


@pytest.mark.parametrize("est_time, timeout", [
    ("0", 60),
    ("30", 60),      # 45 -> the minimum
    ("40", 60),      # exactly the minimum
    ("41", 62),      # 61.5 rounds up
    ("1_000", 1500),
    ("100.2", 151),  # 150.3 rounds up
    ("1.8e3", 2700),
])
def test_the_timeout_is_the_factor_times_est_time_rounded_up_and_at_least_the_minimum(tmp_path, est_time, timeout):
    write(tmp_path, ".github/ci-policy.yml", TIMING_CONFIG)
    write(tmp_path, "labels.py", 'KNOWN_LABELS = {"gpu": "GPU tests"}\n')
    write(tmp_path, "tests/test_gpu.py", gpu_test(f'register_cuda_ci({est_time}, "gpu", labels=["gpu"])'))
    plan = resolve_file("tests/test_gpu.py", tmp_path)
    assert plan.timeout_seconds == timeout and isinstance(plan.timeout_seconds, int)
    assert plan.container_image == "registry.example.com:5000/team/ci-cuda:nightly-2026.01"


def test_a_cpu_stage_with_runner_labels_keeps_them_and_has_no_image_when_none_is_configured(tmp_path):
    write(tmp_path, ".github/ci-policy.yml", TIMING_CONFIG)
    write(tmp_path, "labels.py", 'KNOWN_LABELS = {"gpu": "GPU tests"}\n')
    write(tmp_path, "tests/test_cpu.py", 'from ci_policy import register_cpu_ci\n\nregister_cpu_ci(20, "cpu")\n')
    assert resolve_file("tests/test_cpu.py", tmp_path, image_tag="v2") == FilePlan(
        file="tests/test_cpu.py", hw="cpu", suite="cpu", runs_on=("self-hosted", "cpu-large"),
        container_image=None, timeout_seconds=60)


def test_without_a_file_run_section_the_defaults_apply(make_repo):
    repo = make_repo({"tests/gpu/test_a.py": gpu_test('register_cuda_ci(400, "gpu-b", labels=["fsdp"])')})
    assert resolve_file("tests/gpu/test_a.py", repo) == FilePlan(
        file="tests/gpu/test_a.py", hw="cuda", suite="gpu-b", runs_on=("h200", "4gpu"), container_image=None,
        timeout_seconds=1200, container_options="--gpus all")  # factor 3, minimum 900


# -- the image tag -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("tag", ["v1", "_x", "2026.01.05", "sha-0123abc", "A_b.c-d", "a" * 128])
def test_a_valid_tag_is_used(pr, tag):
    plan = resolve_file("tests/e2e/test_megatron_sft.py", pr, image_tag=tag)
    assert plan.container_image == f"ghcr.io/minirl/ci-cuda:{tag}"


@pytest.mark.parametrize("tag", ["-x", ".x", "a b", "a:b", "a/b", "a@sha256", "$(id)", "x;id", "t\n", "é",
                                 "a" * 129])
def test_an_invalid_tag_is_refused(pr, tag):
    assert errors_of("tests/e2e/test_megatron_sft.py", pr, image_tag=tag) == [f"{tag!r} {BAD_TAG}"]


def test_an_empty_tag_means_the_configured_default(pr):
    assert resolve_file("tests/e2e/test_megatron_sft.py", pr, image_tag="").container_image == \
        "ghcr.io/minirl/ci-cuda:latest"


# -- refusals ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", [
    "tests/../labels.py", "tests/e2e/../../x/test_a.py", "tests/./e2e/test_a.py", "/etc/test_passwd.py",
    "/tests/e2e/test_a.py", "tests/e2e/test_a.sh", "../test_a.py", ".github/test_a.py", "tests/e2e/test a.py",
    "tests/e2e/$(id)/test_a.py", "tests/e2e/test_a.py;id", "tests\\e2e\\test_a.py", "tests//test_a.py", "",
    "tests/e2e/test_a.py\n", "tests/.git/test_a.py", "tests/" + "a" * 242 + "/test_a.py",
])
def test_a_path_that_is_not_a_safe_test_path_is_refused_before_anything_is_read(tmp_path, path):
    # tmp_path has no configuration: the path is checked first.
    assert errors_of(path, tmp_path / "missing") == [f"{path!r} {BAD_PATH}"]
    with pytest.raises(InputError) as info:
        check_test_path(path)
    assert info.value.path is None  # the option is named by the command line, not as a file


def test_a_missing_checkout_is_refused(tmp_path):
    with pytest.raises(UsageError) as info:
        resolve_file("tests/e2e/test_a.py", tmp_path / "missing")
    assert (info.value.source, info.value.message) == ("--repo", f"checkout {tmp_path / 'missing'} is not a directory")


def test_a_symlinked_test_file_is_refused(pr, tmp_path):
    target = write(tmp_path, "outside/secret.py",
                   gpu_test('register_cuda_ci(1, "stage-b-1-gpu-h200", labels=["fsdp"])'))
    (pr / "tests/e2e/test_link.py").symlink_to(target)
    assert errors_of("tests/e2e/test_link.py", pr) == [f"test file tests/e2e/test_link.py {SYMLINK}"]


def test_a_test_file_symlinked_to_a_registered_file_of_the_checkout_is_refused(pr):
    (pr / "tests/e2e/test_alias.py").symlink_to("test_megatron_sft.py")
    assert errors_of("tests/e2e/test_alias.py", pr) == [f"test file tests/e2e/test_alias.py {SYMLINK}"]


@pytest.mark.parametrize("link, file", [
    ("tests/e2e/linked", "tests/e2e/linked/test_megatron_sft.py"),
    ("tests/e2e/session_server", "tests/e2e/session_server/test_session_multiturn.py"),
])
def test_a_symlinked_directory_on_the_path_is_refused(pr, tmp_path, link, file):
    real = tmp_path / "elsewhere"
    shutil.copytree(pr / "tests/e2e", real)
    if (pr / link).exists():
        shutil.rmtree(pr / link)
        real = real / "session_server"
    (pr / link).symlink_to(real, target_is_directory=True)
    assert errors_of(file, pr) == [f"test file {file}: directory {link} {SYMLINK}"]


def test_a_symlinked_tests_root_is_refused(pr, tmp_path):
    shutil.move(str(pr / "tests"), str(tmp_path / "real-tests"))
    (pr / "tests").symlink_to(tmp_path / "real-tests", target_is_directory=True)
    assert errors_of("tests/e2e/test_megatron_sft.py", pr) == [
        f"test file tests/e2e/test_megatron_sft.py: directory tests {SYMLINK}"]


def test_a_symlinked_labels_file_is_refused(pr, tmp_path):
    shutil.move(str(pr / "labels.py"), str(tmp_path / "labels.py"))
    (pr / "labels.py").symlink_to(tmp_path / "labels.py")
    assert errors_of("tests/e2e/test_megatron_sft.py", pr) == [f"labels file labels.py {SYMLINK}"]


def test_a_labels_file_in_a_symlinked_directory_is_refused(pr, tmp_path):
    config = (pr / ".github/ci-policy.yml").read_text().replace("labels_file: labels.py", "labels_file: ci/labels.py")
    (pr / ".github/ci-policy.yml").write_text(config)
    write(tmp_path, "real-ci/labels.py", (pr / "labels.py").read_text())
    (pr / "ci").symlink_to(tmp_path / "real-ci", target_is_directory=True)
    assert errors_of("tests/e2e/test_megatron_sft.py", pr) == [f"labels file ci/labels.py: directory ci {SYMLINK}"]


def test_the_checkouts_own_configuration_is_not_read_through_a_symlink(pr):
    (pr / ".github/real.yml").write_text((pr / ".github/ci-policy.yml").read_text())
    (pr / ".github/ci-policy.yml").unlink()
    (pr / ".github/ci-policy.yml").symlink_to("real.yml")
    assert errors_of("tests/e2e/test_megatron_sft.py", pr) == [
        f"configuration file .github/ci-policy.yml {SYMLINK}"]


def test_duplicate_known_labels_definitions_are_refused(pr):
    text = (pr / "labels.py").read_text() + '\nKNOWN_LABELS = {"megatron": "again"}\n'
    (pr / "labels.py").write_text(text)
    assert errors_of("tests/e2e/test_megatron_sft.py", pr) == [
        "KNOWN_LABELS is assigned 2 times (lines 7, 16); it must be assigned exactly once"]


def test_a_second_binding_of_known_labels_in_a_block_is_refused(pr):
    text = (pr / "labels.py").read_text() + '\nif True:\n    KNOWN_LABELS = {"x": "y"}\n'
    (pr / "labels.py").write_text(text)
    assert errors_of("tests/e2e/test_megatron_sft.py", pr) == [
        "KNOWN_LABELS is assigned 2 times (lines 7, 17); it must be assigned exactly once"]


@pytest.mark.parametrize("labels, message", [
    ('KNOWN_LABELS = dict(megatron="Megatron")\n',
     "KNOWN_LABELS must be a dict literal of label name -> description string"),
    ('OTHER = {"megatron": "x"}\nKNOWN_LABELS = {**OTHER}\n', "KNOWN_LABELS must not use ** unpacking"),
    ('DESC = "x"\nKNOWN_LABELS = {"megatron": DESC}\n',
     "KNOWN_LABELS['megatron']: description is not a string literal"),
    ('NAME = "megatron"\nKNOWN_LABELS = {NAME: "x"}\n', "KNOWN_LABELS key is not a string literal"),
    ('KNOWN_LABELS = {"megatron": "a", "megatron": "b"}\n',
     "KNOWN_LABELS: duplicate label 'megatron' (first on line 1)"),
])
def test_a_label_registry_that_is_not_one_literal_dict_is_refused_with_its_own_error(pr, labels, message):
    (pr / "labels.py").write_text(labels)
    assert errors_of("tests/e2e/test_megatron_sft.py", pr) == [message]


def test_an_unregistered_file_is_refused(pr):
    write(pr, "tests/e2e/test_plain.py", "def test_nothing():\n    pass\n")
    assert errors_of("tests/e2e/test_plain.py", pr) == ["tests/e2e/test_plain.py is not registered for any stage"]


def test_a_missing_file_is_refused(pr):
    assert errors_of("tests/e2e/test_missing.py", pr) == ["test file tests/e2e/test_missing.py does not exist"]


REST = "Paths are relative to the checkout's root (--repo DIR)."


@pytest.mark.parametrize("file, hint", [
    # Never "create it": a rerun runs what the checkout has; the hint says what is there instead.
    ("tests/e2e/test_megatron_sf.py", f"did you mean tests/e2e/test_megatron_sft.py? {REST}"),
    ("tests/e2e/test_missing.py", f"tests/e2e has no file test_missing.py. {REST}"),
    ("tests/e2f/test_megatron_sft.py", f"tests has no directory e2f; did you mean tests/e2e/...? {REST}"),
    ("e2e/test_megatron_sft.py", f"the checkout root has no directory e2e. {REST}"),
    ("tests/e2e/test_megatron_sft.py/test_a.py", f"tests/e2e/test_megatron_sft.py is a file, not a directory. {REST}"),
])
def test_a_missing_file_is_refused_with_what_the_checkout_has_instead(pr, file, hint):
    with pytest.raises(InputError) as info:
        resolve_file(file, pr)
    assert (info.value.code, info.value.path, info.value.message, info.value.hint) == (
        "CP402", file, f"test file {file} does not exist", hint)


def test_a_file_outside_the_discovery_roots_is_refused(pr):
    write(pr, "tests/other/test_a.py", gpu_test('register_cuda_ci(1, "stage-b-1-gpu-h200", labels=["fsdp"])'))
    assert errors_of("tests/other/test_a.py", pr) == [
        "tests/other/test_a.py is not a discovered test file (roots: tests/fast, tests/e2e; pattern 'test_*.py')"]


@pytest.mark.parametrize("path", ["src/test_a.py", "tests/e2e/a_test.py"])
def test_a_safe_path_outside_discovery_is_refused_by_the_checkouts_configuration(pr, path):
    write(pr, path, gpu_test('register_cuda_ci(1, "stage-b-1-gpu-h200", labels=["fsdp"])'))
    assert errors_of(path, pr) == [
        f"{path} is not a discovered test file (roots: tests/fast, tests/e2e; pattern 'test_*.py')"]


ROCM_FSDP = "tests/e2e/test_rocm_fsdp_grpo.py"


def test_a_file_with_several_runnable_registrations_is_refused_listing_the_choices(pr):
    with pytest.raises(InputError) as info:
        resolve_file(ROCM_FSDP, pr)
    assert (info.value.line, info.value.message, info.value.hint) == (
        10, f"{ROCM_FSDP} has 2 registrations that can run (cuda stage-c-4-gpu-h200 (line 9), "
        "rocm stage-c-4-gpu-mi350 (line 10)); name the backend or stage to rerun",
        f"/rerun-test {ROCM_FSDP} STAGE, with STAGE one of: stage-c-4-gpu-h200, stage-c-4-gpu-mi350 "
        "(or the backend: cuda, rocm); or choose by backend for every file: file_run.prefer: [cuda, rocm]")


@pytest.mark.parametrize("choice, suite", [
    ({"backend": "rocm"}, "stage-c-4-gpu-mi350"),
    ({"backend": "cuda"}, "stage-c-4-gpu-h200"),
    ({"stage": "stage-c-4-gpu-mi350"}, "stage-c-4-gpu-mi350"),
    ({"backend": "cuda", "stage": "stage-c-4-gpu-h200"}, "stage-c-4-gpu-h200"),
])
def test_a_backend_or_stage_picks_one_registration(pr, choice, suite):
    # finding 10: /rerun-test <file> [backend|stage]
    assert resolve_file(ROCM_FSDP, pr, **choice).suite == suite


def prefer(root: Path, backends: str) -> None:
    """Set `file_run.prefer` in the checkout's configuration (its last section is `file_run`)."""
    config = root / ".github" / "ci-policy.yml"
    config.write_text(config.read_text() + f"  prefer: {backends}\n")


# -- file_run.prefer: upstream's /rerun-test of a file registered for CUDA and ROCm takes the CUDA one ---------

def test_prefer_picks_the_first_listed_backend_the_file_has_and_says_so(pr):
    prefer(pr, "[cuda, rocm]")
    assert resolve_file(ROCM_FSDP, pr).as_dict() == {
        "file": ROCM_FSDP, "hw": "cuda", "suite": "stage-c-4-gpu-h200", "runs_on": ["h200", "4gpu"],
        "container_image": "ghcr.io/minirl/ci-cuda:latest", "container_options": "--gpus all",
        "timeout_seconds": 1080,
        "choice": {"by": "file_run.prefer", "prefer": ["cuda", "rocm"],
                   "among": ["cuda stage-c-4-gpu-h200 (line 9)", "rocm stage-c-4-gpu-mi350 (line 10)"]}}


def test_prefer_skips_a_backend_the_file_lacks(pr):
    prefer(pr, "[cpu, rocm, cuda]")
    plan = resolve_file(ROCM_FSDP, pr)
    assert (plan.hw, plan.suite, plan.choice and plan.choice.prefer) == (
        "rocm", "stage-c-4-gpu-mi350", ("cpu", "rocm", "cuda"))


@pytest.mark.parametrize("choice, suite", [
    ({"backend": "rocm"}, "stage-c-4-gpu-mi350"),
    ({"stage": "stage-c-4-gpu-mi350"}, "stage-c-4-gpu-mi350"),
])
def test_a_named_backend_or_stage_wins_over_prefer(pr, choice, suite):
    prefer(pr, "[cuda, rocm]")
    plan = resolve_file(ROCM_FSDP, pr, **choice)
    assert (plan.suite, plan.choice) == (suite, None)


def test_a_single_registration_has_no_choice_to_report(pr):
    prefer(pr, "[cuda, rocm]")
    assert resolve_file("tests/e2e/test_megatron_sft.py", pr).choice is None


def test_prefer_without_a_backend_of_the_file_keeps_the_refusal(pr):
    prefer(pr, "[cpu]")
    with pytest.raises(InputError) as info:
        resolve_file(ROCM_FSDP, pr)
    assert (info.value.message, info.value.hint) == (
        f"{ROCM_FSDP} has 2 registrations that can run (cuda stage-c-4-gpu-h200 (line 9), "
        "rocm stage-c-4-gpu-mi350 (line 10)); name the backend or stage to rerun",
        f"/rerun-test {ROCM_FSDP} STAGE, with STAGE one of: stage-c-4-gpu-h200, stage-c-4-gpu-mi350 "
        "(or the backend: cuda, rocm); or add one of cuda, rocm to file_run.prefer")


TWO_CUDA = "tests/e2e/test_two_cuda.py"


def two_cuda(root: Path) -> None:
    write(root, TWO_CUDA, gpu_test('register_cuda_ci(60, "stage-b-1-gpu-h200", labels=["fsdp"])\n'
                                   'register_cuda_ci(60, "stage-c-4-gpu-h200", labels=["fsdp"])'))


def test_two_registrations_of_one_backend_are_told_apart_by_stage_alone(pr):
    # Finding: "(or the backend: npu, npu)", and the backend named failed the same way.
    two_cuda(pr)
    with pytest.raises(InputError) as info:
        resolve_file(TWO_CUDA, pr)
    assert (info.value.line, info.value.message, info.value.hint) == (
        4, f"{TWO_CUDA} has 2 registrations that can run (cuda stage-b-1-gpu-h200 (line 3), "
        "cuda stage-c-4-gpu-h200 (line 4)); name the backend or stage to rerun",
        f"/rerun-test {TWO_CUDA} STAGE, with STAGE one of: stage-b-1-gpu-h200, stage-c-4-gpu-h200")
    with pytest.raises(InputError) as info:
        resolve_file(TWO_CUDA, pr, backend="cuda")
    assert (info.value.message, info.value.hint) == (
        f"{TWO_CUDA} has 2 registrations that can run (cuda stage-b-1-gpu-h200 (line 3), "
        "cuda stage-c-4-gpu-h200 (line 4)); name the stage to rerun",
        f"/rerun-test {TWO_CUDA} STAGE, with STAGE one of: stage-b-1-gpu-h200, stage-c-4-gpu-h200")
    assert resolve_file(TWO_CUDA, pr, backend="cuda", stage="stage-c-4-gpu-h200").suite == "stage-c-4-gpu-h200"


def test_prefer_does_not_choose_between_two_stages_of_its_backend(pr):
    two_cuda(pr)
    prefer(pr, "[cuda]")
    assert errors_of(TWO_CUDA, pr) == [
        f"{TWO_CUDA} has 2 registrations that can run (cuda stage-b-1-gpu-h200 (line 3), "
        "cuda stage-c-4-gpu-h200 (line 4)); name the backend or stage to rerun"]


def test_a_backend_or_stage_without_a_registration_is_refused_listing_them(pr):
    assert errors_of(ROCM_FSDP, pr, backend="cpu") == [
        f"{ROCM_FSDP} has no enabled registration for backend cpu; its registrations: cuda stage-c-4-gpu-h200 "
        "(line 9), rocm stage-c-4-gpu-mi350 (line 10)"]
    assert errors_of(ROCM_FSDP, pr, backend="rocm", stage="stage-c-4-gpu-h200") == [
        f"{ROCM_FSDP} has no enabled registration for backend rocm stage stage-c-4-gpu-h200; its registrations: "
        "cuda stage-c-4-gpu-h200 (line 9), rocm stage-c-4-gpu-mi350 (line 10)"]


def test_the_one_registration_beside_an_external_one_is_picked(pr):
    path = pr / "tests/e2e/test_megatron_sft.py"
    text = path.read_text()
    line = next(x for x in text.splitlines() if x.startswith("register_cuda_ci("))
    path.write_text(text.replace(line, line + '\nregister_cuda_ci(est_time=60, suite="stage-d-8-gpu-gb200", '
                                 'labels=["megatron"])', 1))
    assert resolve_file("tests/e2e/test_megatron_sft.py", pr).suite == "stage-b-1-gpu-h200"
    assert errors_of("tests/e2e/test_megatron_sft.py", pr, stage="stage-d-8-gpu-gb200") == [
        "tests/e2e/test_megatron_sft.py is registered to stage-d-8-gpu-gb200, an external stage that ci-policy "
        "does not run"]


def test_one_enabled_registration_beside_a_disabled_one_is_the_one_that_runs(pr):
    path = pr / "tests/e2e/test_rocm_fsdp_grpo.py"
    path.write_text(path.read_text().replace('labels=["fsdp"])', 'labels=["fsdp"], disabled="no H200 today")', 1))
    plan = resolve_file("tests/e2e/test_rocm_fsdp_grpo.py", pr)
    assert (plan.hw, plan.suite, plan.runs_on) == ("rocm", "stage-c-4-gpu-mi350", ("mi350", "4gpu"))


def test_a_disabled_file_is_refused(pr):
    assert errors_of("tests/e2e/test_fsdp_checkpoint_resume.py", pr) == [
        "tests/e2e/test_fsdp_checkpoint_resume.py is disabled: flaky on H200 driver 580, tracked in #1234"]


def test_a_file_of_an_external_stage_is_refused(pr):
    assert errors_of("tests/e2e/test_gb200_scaling.py", pr) == [
        "tests/e2e/test_gb200_scaling.py is registered to stage-d-8-gpu-gb200, an external stage that ci-policy "
        "does not run"]


def test_an_invalid_registration_is_refused_with_the_marker_error(pr):
    write(pr, "tests/e2e/test_bad.py", gpu_test('register_cuda_ci(est_time=60 * 5, suite="stage-b-1-gpu-h200", '
                                                'labels=["fsdp"])'))
    (message,) = errors_of("tests/e2e/test_bad.py", pr)
    assert message.startswith("register_cuda_ci: est_time")


MULTITURN = "tests/e2e/session_server/test_session_multiturn.py"
V2_GATE = 'register_ci_gate(metric_key="rollout/tito_session_mismatch_rate/v2/assistant_text")\n'


def test_a_session_file_without_a_required_gate_is_refused_as_the_plan_refuses_it(pr):
    # finding 10: file-run (so /rerun-test) planned a file the plan leaves out.
    path = pr / MULTITURN
    path.write_text(path.read_text().replace(V2_GATE, "", 1))
    with pytest.raises(InputErrors) as info:
        resolve_file(MULTITURN, pr)
    assert [(e.code, e.path, e.line, e.message, e.hint) for e in info.value.errors] == [
        ("CP520", MULTITURN, 11, f"{MULTITURN} lacks the gate required for session server v2 by gates.require[0]: "
         "register_ci_gate(metric_key='rollout/tito_session_mismatch_rate/v2/assistant_text')",
         "add `register_ci_gate(metric_key='rollout/tito_session_mismatch_rate/v2/assistant_text')` at module level")]
    from ci_policy.model.snapshot import classify, load_snapshot
    (invalid,) = classify(load_snapshot(pr)).invalid
    assert (invalid.file, invalid.diagnostics) == (MULTITURN, info.value.errors)


def test_a_suppressed_missing_gate_is_not_refused(pr):
    path = pr / MULTITURN
    path.write_text(path.read_text().replace(
        V2_GATE, "", 1).replace('labels=["session", "sglang"])', 'labels=["session", "sglang"])  '
                                '# ci-policy: ignore[CP520] v2 lands next week', 1))
    assert resolve_file(MULTITURN, pr).suite == "stage-c-4-gpu-h200"


# -- labels come from the checkout's own labels.py ----------------------------------------------------------

def test_a_pr_that_adds_a_label_and_a_test_using_it_can_be_rerun(pr, tmp_path):
    trusted_config = tmp_path / "trusted.yml"
    shutil.copy(pr / ".github/ci-policy.yml", trusted_config)
    test = gpu_test('register_cuda_ci(est_time=500, suite="stage-b-1-gpu-h200", labels=["vllm"])')
    write(pr, "tests/e2e/test_vllm_rollout.py", test)
    # Against the labels the base branch knows, the label does not exist ...
    (message,) = errors_of("tests/e2e/test_vllm_rollout.py", pr, config_path=trusted_config)
    assert message == ("register_cuda_ci: unknown label 'vllm'; valid labels: megatron, fsdp, sglang, session, "
                       "rocm, long")
    # ... and the PR's own labels.py adds it.
    labels = (pr / "labels.py").read_text().replace('"long":', '"vllm": "vLLM rollout engine",\n    "long":')
    (pr / "labels.py").write_text(labels)
    assert resolve_file("tests/e2e/test_vllm_rollout.py", pr, config_path=trusted_config) == FilePlan(
        file="tests/e2e/test_vllm_rollout.py", hw="cuda", suite="stage-b-1-gpu-h200", runs_on=("h200", "1gpu"),
        container_image="ghcr.io/minirl/ci-cuda:latest", timeout_seconds=1500, container_options="--gpus all")


def test_the_trusted_configuration_decides_the_runners_not_the_checkouts(pr, tmp_path):
    trusted = tmp_path / "trusted.yml"
    shutil.copy(pr / ".github/ci-policy.yml", trusted)
    own = (pr / ".github/ci-policy.yml").read_text()
    (pr / ".github/ci-policy.yml").write_text(own.replace("runs_on: [h200, 1gpu]", "runs_on: [attacker-runner]")
                                              .replace("ghcr.io/minirl/ci-cuda", "ghcr.io/attacker/image"))
    assert resolve_file("tests/e2e/test_megatron_sft.py", pr).runs_on == ("attacker-runner",)
    plan = resolve_file("tests/e2e/test_megatron_sft.py", pr, config_path=trusted)
    assert (plan.runs_on, plan.container_image) == (("h200", "1gpu"), "ghcr.io/minirl/ci-cuda:latest")


def test_the_checkout_is_read_as_data_and_never_executed(pr, tmp_path):
    marker = tmp_path / "executed"
    payload = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('pwned')\nraise SystemExit(3)\n"
    (pr / "labels.py").write_text(payload + (pr / "labels.py").read_text())
    write(pr, "tests/e2e/test_payload.py",
          gpu_test('register_cuda_ci(est_time=10, suite="stage-b-1-gpu-h200", labels=["sglang"])') + payload)
    assert resolve_file("tests/e2e/test_payload.py", pr).suite == "stage-b-1-gpu-h200"
    assert not marker.exists()


# -- a repository in its own marker dialect ----------------------------------------------------------

SGLANG = Path(__file__).resolve().parents[1] / "data" / "sglang-repo"


def test_a_file_of_a_declared_accelerator_backend_resolves_to_its_stage(tmp_path):
    assert resolve_file("test/registered/npu/test_npu_attention.py", SGLANG).as_dict() == {
        "file": "test/registered/npu/test_npu_attention.py", "hw": "npu", "suite": "nightly-1-npu-a3",
        "runs_on": ["linux-aarch64-a3-2"], "container_image": "docker.io/lmsysorg/sglang-npu:latest",
        "container_options": "", "timeout_seconds": 1200}  # a declared backend's devices are its own to give


def test_the_refusals_name_the_dialects_markers_and_every_pattern(tmp_path):
    repo = tmp_path / "sglang"
    shutil.copytree(SGLANG, repo)
    write(repo, "test/registered/core/test_plain.py", "def test_nothing():\n    pass\n")
    with pytest.raises(InputError) as info:
        resolve_file("test/registered/core/test_plain.py", repo)
    assert (info.value.message, info.value.hint) == (
        "test/registered/core/test_plain.py is not registered for any stage",
        "add register_amd_ci/register_cpu_ci/register_cuda_ci/register_npu_ci/register_rocm_ci/register_xpu_ci(...) "
        "at module level")
    write(repo, "test/other/test_a.py", "def test_nothing():\n    pass\n")
    assert errors_of("test/other/test_a.py", repo) == [
        "test/other/test_a.py is not a discovered test file (roots: test/registered, "
        "python/pkg/jit_kernel/benchmark; pattern 'test_*.py')"]
