"""A checkout with one invalid test file, for the partial-plan tests of `plan`, `list`,
`registry` and `run` (imported as `cli.partial`).

- Valid: a CPU unit test (implicit), two gpu-a files. Invalid: `tests/e2e/test_bad.py`,
  whose gpu-a registration names an unknown label (CP227, line 3, col 39).
- The PR diff changes the invalid file, so every diff-pruned stage runs (fail safe).
"""

from __future__ import annotations

from pathlib import Path

from helpers import MAIN_BLOCK

BAD = "tests/e2e/test_bad.py"
IMPORT = "from ci_policy import register_cuda_ci\n\n"
FILES = {
    "tests/unit/test_u.py": "def test_u():\n    pass\n",
    "tests/e2e/test_ok.py": IMPORT + 'register_cuda_ci(60, "gpu-a", labels=["megatron"])\n' + MAIN_BLOCK,
    "tests/e2e/test_ok2.py": IMPORT + 'register_cuda_ci(30, "gpu-a", labels=["megatron"])\n' + MAIN_BLOCK,
    BAD: IMPORT + 'register_cuda_ci(60, "gpu-a", labels=["megatrn"])\n' + MAIN_BLOCK,
}
BAD_MESSAGE = "register_cuda_ci: unknown label 'megatrn' (did you mean 'megatron'?); valid labels: megatron, fsdp, long"
BAD_HINT = "use a valid label, or add 'megatrn' with a description to KNOWN_LABELS in labels.py"
BAD_DIAGNOSTIC = {"code": "CP227", "name": "label-unknown", "path": BAD, "line": 3, "col": 39,
                  "message": BAD_MESSAGE, "hint": BAD_HINT}


def partial_repo(make_repo) -> tuple[Path, list[str]]:
    """The checkout, and the plan inputs of a PR labelled run-ci-megatron that changes BAD."""
    repo = make_repo(FILES)
    diff = repo.parent / "pr.diff"
    diff.write_bytes(f"M\0{BAD}\0".encode())
    return repo, ["--event", "pull_request", "--label", "run-ci-megatron", "--diff", str(diff)]


# A file with two registrations: a good cuda one (line 3) and a rocm one naming a suite no rocm
# stage has (line 4, CP225). Only the bad one is dropped: the file is partly read.
TWO = "tests/e2e/test_two.py"
TWO_TEXT = ("from ci_policy import register_cuda_ci, register_rocm_ci\n\n"
            'register_cuda_ci(60, "gpu-a", labels=["megatron"])\n'
            'register_rocm_ci(60, "nosuch", labels=["megatron"])\n' + MAIN_BLOCK)
TWO_MESSAGE = "register_rocm_ci: suite 'nosuch' is not a configured rocm stage"
TWO_HINT = "configured rocm stages: amd (stages are listed in .github/ci-policy.yml)"
TWO_DIAGNOSTIC = {"code": "CP225", "name": "suite-unknown", "path": TWO, "line": 4, "col": 22,
                  "message": TWO_MESSAGE, "hint": TWO_HINT}
TWO_SECTION = (f"partly read (invalid registrations not scheduled): 1 test file\n"
               f"  {TWO} (still scheduled in: gpu-a)\n"
               f"    {TWO}:4:22: CP225 suite-unknown: {TWO_MESSAGE}\n"
               f"        hint: {TWO_HINT}")
TWO_INCOMPLETE = "incomplete: 1 test file(s) partly read (their invalid registrations left out): " + TWO


def two_repo(make_repo) -> Path:
    """The checkout of `partial_repo` without its invalid file, plus TWO."""
    return make_repo({**{k: v for k, v in FILES.items() if k != BAD}, TWO: TWO_TEXT})
