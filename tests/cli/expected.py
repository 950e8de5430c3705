"""Expected outputs on the bundled example and a broken checkout, shared by the tests of
`lint`, `registry` and `main` (imported as `cli.expected`)."""

from __future__ import annotations

from pathlib import Path

from helpers import MINIMAL_CONFIG, MINIMAL_LABELS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpu-repo"

DISABLED_WARNING = ("register_cuda_ci for suite stage-c-4-gpu-h200 is disabled: "
                    "flaky on H200 driver 580, tracked in #1234")
SUMMARY = "ci-policy lint: OK: 0 errors, 1 warning (17 test files, 18 registrations, 5 gates)"

LINT_TEXT = (
    f"tests/e2e/test_fsdp_checkpoint_resume.py:10:1: warning: {DISABLED_WARNING}\n"
    f"{SUMMARY}\n"
)


def lint_github(prefix: str = "") -> str:
    return (
        f"::warning file={prefix}tests/e2e/test_fsdp_checkpoint_resume.py,line=10,col=1::{DISABLED_WARNING}\n"
        f"{SUMMARY}\n"
    )


LINT_JSON = {
    "schema": 1,
    "ok": True,
    "errors": [],
    "warnings": [
        {
            "path": "tests/e2e/test_fsdp_checkpoint_resume.py",
            "line": 10,
            "col": 1,
            "message": DISABLED_WARNING,
            "hint": None,
        }
    ],
    "files": 17,
    "registrations": 18,
}

FIELDS = ("file", "line", "backend", "suite", "est_time", "labels", "nightly", "disabled", "implicit")
_ROWS = [
    ("tests/e2e/session_server/test_session_multiturn.py", 11, "cuda", "stage-c-4-gpu-h200", 480,
     ["session", "sglang"], False, None, False),
    ("tests/e2e/session_server/test_session_tool_calls.py", 10, "cuda", "stage-b-1-gpu-h200", 360,
     ["session"], False, None, False),
    ("tests/e2e/test_fsdp_checkpoint_resume.py", 10, "cuda", "stage-c-4-gpu-h200", 420, ["fsdp"], False,
     "flaky on H200 driver 580, tracked in #1234", False),
    ("tests/e2e/test_fsdp_dpo_4gpu.py", 9, "cuda", "stage-c-4-gpu-h200", 600, ["fsdp"], False, None, False),
    ("tests/e2e/test_fsdp_grpo.py", 9, "cuda", "stage-b-1-gpu-h200", 240, ["fsdp"], False, None, False),
    ("tests/e2e/test_gb200_scaling.py", 9, "cuda", "stage-d-8-gpu-gb200", 3000, ["megatron"], False, None,
     False),
    ("tests/e2e/test_megatron_long_context.py", 10, "cuda", "stage-c-4-gpu-h200", 2400,
     ["megatron", "long"], False, None, False),
    ("tests/e2e/test_megatron_nightly_convergence.py", 9, "cuda", "stage-c-4-gpu-h200", 1500,
     ["megatron"], True, None, False),
    ("tests/e2e/test_megatron_ppo_4gpu.py", 9, "cuda", "stage-c-4-gpu-h200", 900, ["megatron"], False, None,
     False),
    ("tests/e2e/test_megatron_sft.py", 9, "cuda", "stage-b-1-gpu-h200", 300, ["megatron"], False, None, False),
    ("tests/e2e/test_rocm_fsdp_grpo.py", 9, "cuda", "stage-c-4-gpu-h200", 360, ["fsdp"], False, None, False),
    ("tests/e2e/test_rocm_fsdp_grpo.py", 10, "rocm", "stage-c-4-gpu-mi350", 480, ["fsdp", "rocm"], False,
     None, False),
    ("tests/e2e/test_rocm_megatron_sft.py", 9, "rocm", "stage-c-4-gpu-mi350", 540, ["megatron", "rocm"],
     False, None, False),
    ("tests/e2e/test_sglang_rollout.py", 9, "cuda", "stage-b-1-gpu-h200", 180, ["sglang"], False, None, False),
    ("tests/fast/test_advantages.py", None, "cpu", "stage-a-cpu", 5, [], False, None, True),
    ("tests/fast/test_kl.py", None, "cpu", "stage-a-cpu", 5, [], False, None, True),
    ("tests/fast/test_rollout.py", None, "cpu", "stage-a-cpu", 5, [], False, None, True),
    ("tests/fast/test_session_protocol.py", None, "cpu", "stage-a-cpu", 5, [], False, None, True),
]
REGISTRY_JSON = {"schema": 1, "registrations": [dict(zip(FIELDS, row)) for row in _ROWS]}

REGISTRY_TEXT = """\
FILE                                                    BACKEND  SUITE                EST    LABELS          NOTES
tests/e2e/session_server/test_session_multiturn.py:11   cuda     stage-c-4-gpu-h200   480s   session,sglang
tests/e2e/session_server/test_session_tool_calls.py:10  cuda     stage-b-1-gpu-h200   360s   session
tests/e2e/test_fsdp_checkpoint_resume.py:10             cuda     stage-c-4-gpu-h200   420s   fsdp            disabled: flaky on H200 driver 580, tracked in #1234
tests/e2e/test_fsdp_dpo_4gpu.py:9                       cuda     stage-c-4-gpu-h200   600s   fsdp
tests/e2e/test_fsdp_grpo.py:9                           cuda     stage-b-1-gpu-h200   240s   fsdp
tests/e2e/test_gb200_scaling.py:9                       cuda     stage-d-8-gpu-gb200  3000s  megatron
tests/e2e/test_megatron_long_context.py:10              cuda     stage-c-4-gpu-h200   2400s  megatron,long
tests/e2e/test_megatron_nightly_convergence.py:9        cuda     stage-c-4-gpu-h200   1500s  megatron        nightly
tests/e2e/test_megatron_ppo_4gpu.py:9                   cuda     stage-c-4-gpu-h200   900s   megatron
tests/e2e/test_megatron_sft.py:9                        cuda     stage-b-1-gpu-h200   300s   megatron
tests/e2e/test_rocm_fsdp_grpo.py:9                      cuda     stage-c-4-gpu-h200   360s   fsdp
tests/e2e/test_rocm_fsdp_grpo.py:10                     rocm     stage-c-4-gpu-mi350  480s   fsdp,rocm
tests/e2e/test_rocm_megatron_sft.py:9                   rocm     stage-c-4-gpu-mi350  540s   megatron,rocm
tests/e2e/test_sglang_rollout.py:9                      cuda     stage-b-1-gpu-h200   180s   sglang
tests/fast/test_advantages.py                           cpu      stage-a-cpu          5s     -               implicit
tests/fast/test_kl.py                                   cpu      stage-a-cpu          5s     -               implicit
tests/fast/test_rollout.py                              cpu      stage-a-cpu          5s     -               implicit
tests/fast/test_session_protocol.py                     cpu      stage-a-cpu          5s     -               implicit
"""


# -- a checkout with errors ---------------------------------------------------------------

CONFIG = MINIMAL_CONFIG
LABELS = MINIMAL_LABELS
MAIN = '\nif __name__ == "__main__":\n    main()\n'
IMPORT = "from ci_policy import register_cuda_ci\n\n"


def write_repo(root: Path, files: dict[str, str], config: str = CONFIG, labels: str = LABELS) -> Path:
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "ci-policy.yml").write_text(config)
    (root / "labels.py").write_text(labels)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


BROKEN_ERRORS = """\
tests/e2e/test_bad_label.py:3:54: register_cuda_ci: unknown label 'megatrn' (did you mean 'megatron'?); valid labels: megatron, fsdp, long
    hint: use a valid label, or add 'megatrn' with a description to KNOWN_LABELS in labels.py
tests/e2e/test_bad_suite.py:3:22: register_cuda_ci: suite 'gpu-x' is not a configured cuda stage; did you mean 'gpu-b'?
    hint: configured cuda stages: gpu-a, gpu-b (stages are listed in .github/ci-policy.yml)
tests/e2e/test_no_main.py:3:1: stage gpu-b runs tests/e2e/test_no_main.py as `python FILE`, but the file has no `if __name__ == "__main__":` block that calls something, so it would exit 0 without running a test
    hint: add `if __name__ == "__main__": unittest.main()` (or pytest.main([__file__]))
tests/e2e/test_unregistered.py:1:1: tests/e2e/test_unregistered.py matches the discovery pattern 'test_*.py' but has no registration and is not under an implicit root, so no stage would run it
    hint: add register_cpu_ci/register_cuda_ci/register_rocm_ci(...) at module level, or add an implicit root for its directory in the configuration
"""
BROKEN_WARNINGS = """\
.github/ci-policy.yml:8: warning: stage gpu-a has no registered test files
    hint: register tests with suite='gpu-a' or remove the stage
.github/ci-policy.yml:10: warning: stage amd has no registered test files
    hint: register tests with suite='amd' or remove the stage
labels.py:1: warning: label 'fsdp' is not used by any test
    hint: run-ci-fsdp selects nothing; use it in a registration or remove it
labels.py:1: warning: label 'megatron' is not used by any test
    hint: run-ci-megatron selects nothing; use it in a registration or remove it
"""
