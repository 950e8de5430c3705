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
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE_REPO, repo)
    config = repo / ".github" / "ci-policy.yml"
    config.write_text(config.read_text() + extra)
    return repo


def test_the_code_pr_states_its_accelerator_hours_and_cost(tmp_path, capsys):
    repo = example_with(tmp_path, ACCELERATORS)
    rc, out, err = run(["plan", "--repo", str(repo), "--event", "pull_request", "--labels-json",
                        '["run-ci-sglang", "documentation"]', "--diff", str(ROOT / "examples" / "pr-42.diff")], capsys)
    assert (rc, err) == (0, "")
    start = out.index("accelerator hours")
    assert out[start:].split("\n")[:4] == [
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
