"""The plan's accelerator hours on the example with `accelerators` configured, and bad entries.

Hand-checked: the code PR runs 480 s on stage-b (accelerators[2], 1 GPU, 4/h): 0.13 h, cost
0.53; 3780 s on stage-c-4-gpu-h200 (accelerators[1] by its 4gpu label, more specific than
backend cuda; 4 GPUs, 20/h): 4.20 h, cost 21.00; 540 s on the mi350 stage (4gpu too): 0.60 h,
cost 3.00; 4.93 h and 24.53 in all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import EXAMPLE_REPO
from helpers import run_cli as run

ROOT = Path(__file__).resolve().parents[2]
ACCELERATORS = """accelerators:
  - {backend: cuda, gpus: 8, cost_per_hour: 32.0}
  - {runs_on: 4gpu, gpus: 4, cost_per_hour: 20.0}
  - {backend: cuda, runs_on: 1gpu, gpus: 1, cost_per_hour: 4.0}
"""


def example_with(tmp_path: Path, extra: str) -> Path:
    """The example with its own `accelerators` section (and the comment above it) replaced by `extra`,
    at the end of the file."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE_REPO, repo)
    config = repo / ".github" / "ci-policy.yml"
    text = config.read_text()
    start = text.index("# The accelerators of each runner")
    end = text.index("\n\n", text.index("accelerators:", start)) + 2
    config.write_text(text[:start] + text[end:] + extra)
    return repo


def hours_lines(out: str) -> list[str]:
    start = out.index("accelerator hours")
    return out[start:].split("\n")[:4]


def test_the_example_as_shipped_states_a_docs_only_and_a_code_prs_hours(tmp_path, capsys):
    """The example's own entries (1gpu, 4gpu). A docs-only PR runs no accelerator stage: every
    hour is skipped for labels (gpu_requires_labels) but the nightly-only tests' 1.67, which
    the cadence skips; the Quickstart's code PR (run-ci-sglang, pr-42.diff) schedules 4.93 of
    the same 8.37 (stage-b 480 s x 1, stage-c-4-gpu-h200 3780 s x 4, the mi350 stage 540 s x 4)."""
    docs = tmp_path / "docs.diff"
    docs.write_bytes(b"M\0docs/guide.md\0")
    rc, out, err = run(["plan", "--repo", str(EXAMPLE_REPO), "--event", "pull_request", "--diff", str(docs)], capsys)
    assert (rc, err) == (0, "")
    assert hours_lines(out) == [
        "accelerator hours (est_time x accelerators per runner): 0.00 scheduled, 8.37 skipped "
        "(labels 6.70, cadence 1.67)",
        "  stage-b-1-gpu-h200: 0.00 scheduled, 0.30 skipped; 1 accelerator per runner (accelerators[0]: runs_on 1gpu)",
        "  stage-c-4-gpu-h200: 0.00 scheduled, 6.93 skipped; 4 accelerators per runner (accelerators[1]: runs_on 4gpu)",
        "  stage-c-4-gpu-mi350: 0.00 scheduled, 1.13 skipped; 4 accelerators per runner "
        "(accelerators[1]: runs_on 4gpu)"]
    rc, out, err = run(["plan", "--repo", str(EXAMPLE_REPO), "--event", "pull_request", "--labels-json",
                        '["run-ci-sglang", "documentation"]', "--diff", str(ROOT / "examples" / "pr-42.diff")], capsys)
    assert (rc, err) == (0, "")
    assert hours_lines(out) == [
        "accelerator hours (est_time x accelerators per runner): 4.93 scheduled, 3.43 skipped "
        "(labels 1.77, cadence 1.67)",
        "  stage-b-1-gpu-h200: 0.13 scheduled, 0.17 skipped; 1 accelerator per runner (accelerators[0]: runs_on 1gpu)",
        "  stage-c-4-gpu-h200: 4.20 scheduled, 2.73 skipped; 4 accelerators per runner (accelerators[1]: runs_on 4gpu)",
        "  stage-c-4-gpu-mi350: 0.60 scheduled, 0.53 skipped; 4 accelerators per runner "
        "(accelerators[1]: runs_on 4gpu)"]


def test_the_code_pr_states_its_accelerator_hours_and_cost(tmp_path, capsys):
    repo = example_with(tmp_path, ACCELERATORS)
    rc, out, err = run(["plan", "--repo", str(repo), "--event", "pull_request", "--labels-json",
                        '["run-ci-sglang", "documentation"]', "--diff", str(ROOT / "examples" / "pr-42.diff")], capsys)
    assert (rc, err) == (0, "")
    assert hours_lines(out) == [
        "accelerator hours (est_time x accelerators per runner): 4.93 scheduled, 3.43 skipped "
        "(labels 1.77, cadence 1.67); cost 24.53 scheduled, 17.00 skipped",
        "  stage-b-1-gpu-h200: 0.13 scheduled, 0.17 skipped; 1 accelerator per runner "
        "(accelerators[2]: backend cuda, runs_on 1gpu, cost 4/h)",
        "  stage-c-4-gpu-h200: 4.20 scheduled, 2.73 skipped; 4 accelerators per runner "
        "(accelerators[1]: runs_on 4gpu, cost 20/h)",
        "  stage-c-4-gpu-mi350: 0.60 scheduled, 0.53 skipped; 4 accelerators per runner "
        "(accelerators[1]: runs_on 4gpu, cost 20/h)"]


def test_bad_accelerator_entries_are_located_errors(tmp_path, capsys):
    repo = example_with(tmp_path, "accelerators:\n  - {backend: cpu, gpus: 1}\n  - {gpus: 0}\n"
                                  "  - {backend: cuda, gpus: 2}\n  - {backend: cuda, gpus: 3}\n"
                                  "  - {runs_on: x, gpus: 1, cost_per_hour: -1}\n  - {gpus: 2}\n")
    rc, out, err = run(["plan", "--repo", str(repo), "--event", "push"], capsys)
    assert (rc, out) == (1, "")
    assert err.splitlines() == [
        ".github/ci-policy.yml:81:15: CP108 config-inconsistent: accelerators[0].backend: cpu is not an "
        "accelerator backend: its stages count no accelerator hours",
        "    hint: name an accelerator backend (cuda, rocm or one declared with accelerator: true)",
        ".github/ci-policy.yml:82:12: CP105 config-invalid-value: accelerators[1].gpus: must be at least 1, got 0",
        ".github/ci-policy.yml:84:5: CP106 config-duplicate: accelerators[3]: the entry matches the same stages "
        "as accelerators[2]",
        "    hint: keep one entry per backend and runner label",
        ".github/ci-policy.yml:85:42: CP105 config-invalid-value: accelerators[4].cost_per_hour: must be at "
        "least 0, got -1",
        ".github/ci-policy.yml:86:5: CP103 config-missing-key: accelerators[5]: an accelerators entry names "
        "neither a backend nor a runs_on label",
        "    hint: add `backend: cuda` (every stage of that backend) or `runs_on: LABEL` (the stages whose "
        "runs_on holds it)",
        "ci-policy: 5 errors"]
