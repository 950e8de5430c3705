"""End-to-end behaviour of `ci-policy plan` and `ci-policy list` on the bundled example.

Whole outputs (the Quickstart plan as text, JSON and Markdown, a docs-only PR, a nightly
schedule) are golden files under tests/data/golden/cli/plan/.

Most tests call `ci_policy.cli.main([...])` in-process with capsys; the README's
Quickstart command also runs through the installed console script in a subprocess.
`--format github` output is parsed back the way the Actions runner parses
`$GITHUB_OUTPUT` (`name=value` lines and `name<<DELIMITER` blocks).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from cli.partial import (
    BAD,
    BAD_DIAGNOSTIC,
    BAD_HINT,
    BAD_MESSAGE,
    IMPORT,
    TWO,
    TWO_DIAGNOSTIC,
    TWO_INCOMPLETE,
    TWO_SECTION,
    partial_repo,
    two_repo,
)
from cli.partial import FILES as PARTIAL_FILES
from helpers import MAIN_BLOCK, assert_golden, assert_run_golden, clean_env, console_script, read_golden
from helpers import run_cli as run

from ci_policy.cli import main
from ci_policy.plan.planfile import inputs_dict

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gpu-repo"

QUICKSTART_ARGV = ["plan", "--repo", "examples/gpu-repo", "--event", "pull_request",
                   "--labels-json", '["run-ci-sglang", "documentation"]', "--diff", "examples/pr-42.diff"]

STAGES = ["stage-a-cpu", "stage-b-1-gpu-h200", "stage-c-4-gpu-h200", "stage-c-4-gpu-mi350"]
FAST = ["tests/fast/test_advantages.py", "tests/fast/test_kl.py", "tests/fast/test_rollout.py",
        "tests/fast/test_session_protocol.py"]

SFT_WARNING = ("stage-b-1-gpu-h200: tests/e2e/test_megatron_sft.py alone (est 300s) exceeds the stage's "
               "mean shard time (240s); the stage cannot finish sooner than this file")
LONG_WARNING = ("stage-c-4-gpu-h200: tests/e2e/test_megatron_long_context.py alone (est 2400s) exceeds the "
                "stage's mean shard time (1260s); the stage cannot finish sooner than this file")
GRPO_WARNING = ("tests/e2e/test_fsdp_grpo.py changed but is not selected (needs one of: fsdp), "
                "so it does not run")


def shard(index: int, est: float, *files: str) -> dict:
    return {"index": index, "est_seconds": est, "files": list(files)}


def entries(*pairs) -> list[dict]:
    # In the example, tests/fast/ files get the implicit registration; the rest are literals.
    # Only implicit ones are asserted with entries(): no line, no marker.
    return [{"file": f, "est_time": t, "est_source": "implicit" if f.startswith("tests/fast/") else "literal",
             "line": None, "marker": None} for f, t in pairs]


GPUS = "--gpus all"
ROCM_DEVICES = "--device /dev/kfd --device /dev/dri --group-add video --group-add render"
CUDA_LATEST, ROCM_LATEST = "ghcr.io/minirl/ci-cuda:latest", "ghcr.io/minirl/ci-rocm:latest"
H200_1, H200_4, MI350_4 = ["h200", "1gpu"], ["h200", "4gpu"], ["mi350", "4gpu"]


def job(stage: str, lane: int, shards: str, backend: str, runs_on: list[str], image: str, options: str,
        minutes: int) -> dict:
    return {"stage": stage, "lane": lane, "shards": shards, "backend": backend, "runs_on": runs_on, "image": image,
            "container_options": options, "timeout_minutes": minutes}


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"))


# The cpu stage sets no timeout_per_file: its job gets GitHub's default 360 minutes.
CPU_JOB = job("stage-a-cpu", 0, "0", "cpu", ["ubuntu-latest"], "", "", 360)
QUICKSTART_JOBS = [
    CPU_JOB,
    *(job("stage-b-1-gpu-h200", i, str(i), "cuda", H200_1, CUDA_LATEST, GPUS, 40) for i in range(2)),
    *(job("stage-c-4-gpu-h200", i, str(i), "cuda", H200_4, CUDA_LATEST, GPUS, 70) for i in range(3)),
    job("stage-c-4-gpu-mi350", 0, "0", "rocm", MI350_4, ROCM_LATEST, ROCM_DEVICES, 70),
]

def one_wave(jobs: list[dict]) -> dict[str, str]:
    """The stage job outputs of a configuration that orders no stage: every lane in wave 0, none merged."""
    return {"stage_matrix_0": compact({"include": jobs}),
            **{f"stage_matrix_{wave}": compact({"include": []}) for wave in (1, 2, 3)},
            "wave_jobs": compact([len(jobs), 0, 0, 0]), "merged_lanes": "[]"}


QUICKSTART_OUTPUTS = {
    "cadence": "regular",
    "trust": "trusted",
    "raw_labels": "run-ci-sglang",
    "bypass_fastfail": "false",
    "write_baseline": "false",
    "skipped_stages": "[]",
    "matrix": '{"stage-a-cpu":[0],"stage-b-1-gpu-h200":[0,1],"stage-c-4-gpu-h200":[0,1,2],'
              '"stage-c-4-gpu-mi350":[0]}',
    # No stage sets max_parallel: each stage's limit is its shard count (at least 1).
    "max_parallel": '{"stage-a-cpu":1,"stage-b-1-gpu-h200":2,"stage-c-4-gpu-h200":3,"stage-c-4-gpu-mi350":1}',
    "cuda_image": "build",
    "rocm_image": "build",
    # Without --head-sha nothing is built: the stage jobs run in the images' default tag.
    **one_wave(QUICKSTART_JOBS),
    "has_stage_jobs": "true",
    "images_to_build": "[]",
    # The default image builder of the configuration the plan read.
    "image_runs_on": '["self-hosted","image-builder"]', "image_registry": "ghcr.io",
    "invalid_files": "[]",
    "plan_complete": "true",
}

NEEDS_B = "skip: no selected tests (its tests need one of: fsdp, megatron, session, sglang)"
NEEDS_C = "skip: no selected tests (its tests need one of: fsdp, long, megatron, session, sglang)"
NEEDS_MI350 = "skip: no selected tests (its tests need one of: fsdp, megatron, rocm)"




@pytest.fixture
def at_root(monkeypatch):
    """Run from the repository root (the README's commands use paths relative to it)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture
def docs_diff(tmp_path) -> str:
    path = tmp_path / "docs.diff"
    path.write_bytes(b"M\0docs/guide.md\0M\0README.md\0")
    return str(path)


def parse_github_output(text: str) -> dict[str, str]:
    """Parse a $GITHUB_OUTPUT file as the Actions runner does.

    Each non-empty line is `name=value` (when `=` comes before any `<<`), or opens a
    `name<<DELIMITER` block whose value is every following line up to a line that is
    exactly DELIMITER, joined with newlines. A later name overrides an earlier one.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    values: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line == "":
            continue
        eq, heredoc = line.find("="), line.find("<<")
        if eq >= 0 and (heredoc < 0 or eq < heredoc):
            name, value = line[:eq], line[eq + 1:]
        elif heredoc >= 0:
            name, delimiter = line[:heredoc], line[heredoc + 2:]
            assert delimiter, f"empty delimiter in {line!r}"
            body = []
            while True:
                assert i < len(lines), f"matching delimiter {delimiter!r} not found"
                if lines[i] == delimiter:
                    i += 1
                    break
                body.append(lines[i])
                i += 1
            value = "\n".join(body)
        else:
            raise AssertionError(f"invalid $GITHUB_OUTPUT line {line!r}")
        assert name, f"empty output name in {line!r}"
        values[name] = value
    return values


def test_github_output_parser_handles_both_syntaxes():
    text = "a=1\nb<<EOF\nx=y\n\nz<<w\nEOF\nc=d<<e\nf<<G=H\n1\nG=H\n"
    assert parse_github_output(text) == {"a": "1", "b": "x=y\n\nz<<w", "c": "d<<e", "f": "1"}
    with pytest.raises(AssertionError):
        parse_github_output("a<<EOF\nnever closed\n")
    with pytest.raises(AssertionError):
        parse_github_output("no separator\n")


# -- the README's Quickstart ---------------------------------------------------------------

def test_the_readme_quickstart_plan_command_is_the_one_tested():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", readme, re.S).group(1)
    command = next(part for part in block.split("&&") if "ci-policy plan" in part)
    argv = shlex.split(command)
    assert argv[0].endswith("ci-policy")
    assert argv[1:] == QUICKSTART_ARGV


def test_quickstart_console_script():
    proc = subprocess.run([console_script(), *QUICKSTART_ARGV], cwd=ROOT, env=clean_env(),
                          capture_output=True, text=True, timeout=120, check=False)
    assert_run_golden((proc.returncode, proc.stdout, proc.stderr), 0, "cli/plan/quickstart.txt")


def test_quickstart_text(at_root, capsys):
    assert_run_golden(run(QUICKSTART_ARGV, capsys), 0, "cli/plan/quickstart.txt")
    assert_run_golden(run(QUICKSTART_ARGV + ["--format", "text"], capsys), 0, "cli/plan/quickstart.txt")


def test_quickstart_json(at_root, capsys):
    assert_run_golden(run(QUICKSTART_ARGV + ["--format", "json"], capsys), 0, "cli/plan/quickstart.json")


def test_quickstart_markdown(at_root, capsys):
    assert_run_golden(run(QUICKSTART_ARGV + ["--format", "markdown"], capsys), 0, "cli/plan/quickstart.md")


def without_warnings(text: str) -> str:
    """The text plan as github format prints it: each warning is an annotation instead."""
    lines = text.split("\n")
    assert any(line.startswith("warning: ") for line in lines)
    return "\n".join(line for line in lines if not line.startswith("warning: "))


def test_quickstart_github(at_root, tmp_path, monkeypatch, capsys):
    outputs, summary = tmp_path / "output", tmp_path / "summary.md"
    outputs.write_text("previous=kept\n")
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    rc, out, err = run(QUICKSTART_ARGV + ["--format", "github"], capsys)
    assert (rc, err) == (0, "")
    # Each warning once: an annotation, not also the text's `warning:` line.
    assert out == without_warnings(read_golden("cli/plan/quickstart.txt")) + (
        f"::warning::{SFT_WARNING}\n::warning::{LONG_WARNING}\n::warning::{GRPO_WARNING}\n")
    text = outputs.read_text()
    assert text.startswith("previous=kept\n")
    assert parse_github_output(text) == {"previous": "kept", **QUICKSTART_OUTPUTS}
    # Every value is written in the multi-line-safe `name<<DELIMITER` syntax.
    blocks = re.findall(r"^([a-z0-9_]+)<<(ghadelimiter_[0-9a-f-]{36})\n", text, re.M)
    assert [name for name, _ in blocks] == list(QUICKSTART_OUTPUTS)
    assert summary.read_text() == "# earlier step\n" + read_golden("cli/plan/quickstart.md")
    # A second run appends again; the runner's parse still sees one value per name.
    assert main(QUICKSTART_ARGV + ["--format", "github"]) == 0
    capsys.readouterr()
    assert parse_github_output(outputs.read_text()) == {"previous": "kept", **QUICKSTART_OUTPUTS}
    assert summary.read_text() == "# earlier step\n" + read_golden("cli/plan/quickstart.md") * 2


# -- other plans on the example ------------------------------------------------------------

def test_docs_only_pr_text_markdown_and_github(at_root, docs_diff, tmp_path, monkeypatch, capsys):
    argv = ["plan", "--repo", "examples/gpu-repo", "--event", "pull_request", "--labels-json", "[]",
            "--diff", docs_diff]
    assert_run_golden(run(argv, capsys), 0, "cli/plan/docs-only.txt")
    assert_run_golden(run(argv + ["--format", "markdown"], capsys), 0, "cli/plan/docs-only.md")
    outputs, summary = tmp_path / "output", tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert_run_golden(run(argv + ["--format", "github"], capsys), 0, "cli/plan/docs-only.txt")
    assert parse_github_output(outputs.read_text()) == {
        "cadence": "regular",
        "trust": "trusted",
        "raw_labels": "",
        "bypass_fastfail": "false",
        "write_baseline": "false",
        "skipped_stages": '["stage-b-1-gpu-h200","stage-c-4-gpu-h200","stage-c-4-gpu-mi350"]',
        "matrix": '{"stage-a-cpu":[0],"stage-b-1-gpu-h200":[],"stage-c-4-gpu-h200":[],"stage-c-4-gpu-mi350":[]}',
        "max_parallel": '{"stage-a-cpu":1,"stage-b-1-gpu-h200":1,"stage-c-4-gpu-h200":1,"stage-c-4-gpu-mi350":1}',
        "cuda_image": "skip",
        "rocm_image": "skip",
        **one_wave([CPU_JOB]),
        "has_stage_jobs": "true",
        "images_to_build": "[]",
        "image_runs_on": '["self-hosted","image-builder"]', "image_registry": "ghcr.io",
        "invalid_files": "[]",
        "plan_complete": "true",
    }
    assert_golden("cli/plan/docs-only.md", summary.read_text())


# A skipped stage's split: no shards.
NO_SPLIT = {"makespan": 0, "lower_bound": 0, "optimal": True}


def test_docs_only_pr_json(at_root, docs_diff, capsys):
    rc, out, err = run(["plan", "--repo", "examples/gpu-repo", "--event", "pull_request", "--diff", docs_diff,
                        "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    doc = json.loads(out)
    inputs = doc.pop("inputs")
    assert sorted(inputs) == ["config", "digest", "files", "labels", "tree"]
    assert set(FAST) < set(inputs["files"])
    assert inputs == inputs_dict(inputs["config"], inputs["labels"], inputs["files"], inputs["tree"])
    assert {g["file"] for g in doc.pop("gates")} == {f"tests/e2e/session_server/test_session_{name}.py"
                                                    for name in ("multiturn", "tool_calls")}
    assert doc == {
        "schema": 1, "event": "pull_request", "cadence": "regular", "trust": "trusted", "raw_labels": [],
        "pr_labels": [], "include_labels": [],
        "bypass_fastfail": False, "write_baseline": False,
        "diff": {"available": True, "files": ["README.md", "docs/guide.md"]},
        "stages": [
            {"name": "stage-a-cpu", "backend": "cpu", "decision": "run",
             "reasons": ["run: stage is not diff-pruned (4 selected)"], "runs_on": [],
             "tests": entries(*((f, 5) for f in FAST)), "shards": [shard(0, 20, *FAST)],
             "makespan": 20, "lower_bound": 20, "optimal": True, "invalid": []},
            {"name": "stage-b-1-gpu-h200", "backend": "cuda", "decision": "skip", "reasons": [NEEDS_B],
             "runs_on": ["h200", "1gpu"], "tests": [], "shards": [], **NO_SPLIT, "invalid": []},
            {"name": "stage-c-4-gpu-h200", "backend": "cuda", "decision": "skip", "reasons": [NEEDS_C],
             "runs_on": ["h200", "4gpu"], "tests": [], "shards": [], **NO_SPLIT, "invalid": []},
            {"name": "stage-c-4-gpu-mi350", "backend": "rocm", "decision": "skip", "reasons": [NEEDS_MI350],
             "runs_on": ["mi350", "4gpu"], "tests": [], "shards": [], **NO_SPLIT, "invalid": []},
        ],
        "skipped_stages": ["stage-b-1-gpu-h200", "stage-c-4-gpu-h200", "stage-c-4-gpu-mi350"],
        "images": {"cuda": "skip", "rocm": "skip"},
        "jobs": [CPU_JOB],
        "images_to_build": [],
        "warnings": [],
        "plan_complete": True,
        "invalid": [],
        "not_fully_read": [],
        # No accelerator stage runs: its tests need labels the PR lacks (6.7 h) or are nightly-only
        # (the long-context test, 1.67 h); the example's `accelerators` give stage-b's runner 1
        # accelerator and the 4gpu runners 4.
        "accelerator_hours": {
            "scheduled_hours": 0.0, "skipped_hours": {"labels": 6.7, "cadence": 1.666667},
            "scheduled_cost": None, "skipped_cost": None,
            "stages": [
                {"stage": "stage-b-1-gpu-h200", "gpus": 1, "entry": 0, "cost_per_hour": None,
                 "scheduled_hours": 0.0, "skipped_hours": {"labels": 0.3}},
                {"stage": "stage-c-4-gpu-h200", "gpus": 4, "entry": 1, "cost_per_hour": None,
                 "scheduled_hours": 0.0, "skipped_hours": {"labels": 5.266667, "cadence": 1.666667}},
                {"stage": "stage-c-4-gpu-mi350", "gpus": 4, "entry": 1, "cost_per_hour": None,
                 "scheduled_hours": 0.0, "skipped_hours": {"labels": 1.133333}}]},
    }


def test_nightly_schedule_text_and_outputs(at_root, tmp_path, monkeypatch, capsys):
    argv = ["plan", "--repo", "examples/gpu-repo", "--event", "schedule", "--schedule", "0 15 * * 0-5",
            "--labels-json", "null", "--cadence", "", "--base", ""]
    assert_run_golden(run(argv, capsys), 0, "cli/plan/nightly.txt")
    outputs, summary = tmp_path / "output", tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    rc, out, err = run(argv + ["--format", "github"], capsys)
    assert (rc, err) == (0, "")
    nightly = without_warnings(read_golden("cli/plan/nightly.txt"))
    assert out.startswith(nightly)
    assert out[len(nightly):].count("::warning::") == 2
    assert parse_github_output(outputs.read_text()) == {
        "cadence": "nightly", "trust": "trusted", "raw_labels": "", "bypass_fastfail": "true", "write_baseline": "true",
        "skipped_stages": "[]",
        "matrix": '{"stage-a-cpu":[0],"stage-b-1-gpu-h200":[0,1],"stage-c-4-gpu-h200":[0,1,2],'
                  '"stage-c-4-gpu-mi350":[0,1]}',
        "max_parallel": '{"stage-a-cpu":1,"stage-b-1-gpu-h200":2,"stage-c-4-gpu-h200":3,"stage-c-4-gpu-mi350":2}',
        "cuda_image": "build", "rocm_image": "build",
        # Two files of 1800s (stage-b) or 3600s (stage-c, mi350) at most per shard.
        **one_wave([
            CPU_JOB,
            *(job("stage-b-1-gpu-h200", i, str(i), "cuda", H200_1, CUDA_LATEST, GPUS, 70) for i in range(2)),
            job("stage-c-4-gpu-h200", 0, "0", "cuda", H200_4, CUDA_LATEST, GPUS, 70),
            *(job("stage-c-4-gpu-h200", i, str(i), "cuda", H200_4, CUDA_LATEST, GPUS, 130) for i in (1, 2)),
            *(job("stage-c-4-gpu-mi350", i, str(i), "rocm", MI350_4, ROCM_LATEST, ROCM_DEVICES, 70)
              for i in range(2))]),
        "has_stage_jobs": "true", "images_to_build": "[]",
        "image_runs_on": '["self-hosted","image-builder"]', "image_registry": "ghcr.io",
        "invalid_files": "[]", "plan_complete": "true",
    }


def test_pr_labels_are_canonicalised_and_space_joined(at_root, docs_diff, tmp_path, monkeypatch, capsys):
    outputs, summary = tmp_path / "output", tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    rc, _, err = run(["plan", "--repo", "examples/gpu-repo", "--event", "pull_request", "--format", "github",
                      "--labels-json", '["wip", "run-ci-rocm", "bypass-fastfail", "nightly", "run-ci-rocm"]',
                      "--diff", docs_diff], capsys)
    assert (rc, err) == (0, "")
    got = parse_github_output(outputs.read_text())
    assert {k: got[k] for k in ("cadence", "raw_labels", "bypass_fastfail", "write_baseline")} == {
        "cadence": "nightly", "raw_labels": "bypass-fastfail nightly run-ci-rocm",
        "bypass_fastfail": "true", "write_baseline": "false"}


def test_pr_labels_are_shown_as_given_and_matched_in_canonical_form(at_root, docs_diff, capsys):
    argv = ["plan", "--repo", "examples/gpu-repo", "--event", "pull_request", "--diff", docs_diff,
            "--labels-json", '["Run-CI-SGLang ", "run-ci", "run-ci-rocm", "run-ci-rocm"]']
    rc, out, err = run(argv, capsys)
    assert (rc, err) == (0, "")
    assert out.splitlines()[1:3] == ['PR labels: "Run-CI-SGLang " run-ci run-ci-rocm', "included labels: rocm"]
    plan = plan_json(argv, capsys)
    assert (plan["pr_labels"], plan["raw_labels"], plan["include_labels"]) == (
        ["Run-CI-SGLang ", "run-ci", "run-ci-rocm"], ["run-ci-rocm"], ["rocm"])


def test_a_label_without_its_prefix_warns_with_a_did_you_mean(at_root, docs_diff, capsys):
    rc, out, err = run(["plan", "--repo", "examples/gpu-repo", "--event", "pull_request", "--diff", docs_diff,
                        "--label", "sglang", "--label", "bug"], capsys)
    assert (rc, err) == (0, "")
    assert [line for line in out.splitlines() if line.startswith("warning: PR label")] == [
        "warning: PR label 'sglang' is not one ci-policy reads; it selects nothing; did you mean 'run-ci-sglang'?"]
    assert "included labels: (none)" in out.splitlines()


# -- --format github without the Actions environment ---------------------------------------

def test_github_format_outside_actions_is_a_clear_error(at_root, tmp_path, monkeypatch, capsys):
    other = tmp_path / "other"
    other.write_text("untouched\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(other))
    rc, out, err = run(QUICKSTART_ARGV + ["--format", "github"], capsys)
    message = "$GITHUB_OUTPUT: is not set; --format github runs inside a GitHub Actions step"
    hint = "use --format text or json outside GitHub Actions"
    assert (rc, err) == (2, f"ci-policy plan: error: {message}\n    hint: {hint}\n")
    assert out == f"::error::ci-policy plan: {message} (hint: {hint})\n"
    assert other.read_text() == "untouched\n"  # nothing half-written


def test_github_format_without_a_step_summary_writes_the_outputs_and_says_so_once(at_root, tmp_path, monkeypatch,
                                                                                  capsys):
    outputs = tmp_path / "output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    rc, out, err = run(QUICKSTART_ARGV + ["--format", "github"], capsys)
    assert (rc, err) == (0, "ci-policy plan: notice: $GITHUB_STEP_SUMMARY is not set; the job summary is not written\n")
    assert parse_github_output(outputs.read_text()) == QUICKSTART_OUTPUTS
    assert out.startswith(without_warnings(read_golden("cli/plan/quickstart.txt")))


def test_github_format_outside_actions_console_script(tmp_path):
    proc = subprocess.run([console_script(), *QUICKSTART_ARGV, "--format", "github"], cwd=ROOT,
                          env=clean_env(), capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr == ("ci-policy plan: error: $GITHUB_OUTPUT: is not set; --format github runs inside a "
                           "GitHub Actions step\n    hint: use --format text or json outside GitHub Actions\n")
    assert proc.stdout == ("::error::ci-policy plan: $GITHUB_OUTPUT: is not set; --format github runs inside a "
                           "GitHub Actions step (hint: use --format text or json outside GitHub Actions)\n")


# -- plan inputs ---------------------------------------------------------------------------

def test_empty_string_inputs_mean_not_given(at_root, capsys):
    base = ["plan", "--repo", "examples/gpu-repo", "--event", "pull_request", "--label", "run-ci-fsdp",
            "--format", "json"]
    rc, expected, err = run(base, capsys)
    assert (rc, err) == (0, "")
    assert json.loads(expected)["diff"] == {"available": False, "files": [],
                                            "reason": "no --diff or --base was given"}
    empties = ["--schedule", "", "--cadence", "", "--base", "", "--head", ""]
    assert run(base + empties, capsys) == (0, expected, "")
    # The same on the quickstart's diff: empty schedule and cadence change nothing.
    assert_run_golden(run(QUICKSTART_ARGV + ["--schedule", "", "--cadence", ""], capsys), 0, "cli/plan/quickstart.txt")


def test_empty_schedule_on_a_schedule_event_is_an_error(at_root, capsys):
    rc, out, err = run(["plan", "--repo", "examples/gpu-repo", "--event", "schedule", "--schedule", ""], capsys)
    assert (rc, out) == (2, "")
    assert err == ("ci-policy plan: error: --schedule: a schedule event needs its cron string\n"
                   '    hint: pass --schedule "$SCHEDULE", with SCHEDULE set from github.event.schedule '
                   "in the step's env:\n")


def test_unknown_cron_is_an_error(at_root, capsys):
    rc, out, err = run(["plan", "--repo", "examples/gpu-repo", "--event", "schedule", "--schedule", "0 15 * * 1"],
                       capsys)
    assert (rc, out) == (1, "")
    assert err == (".github/ci-policy.yml:44: --schedule: cron '0 15 * * 1' is not listed in cadences.schedules "
                   "(listed: '0 15 * * 0-5', '0 15 * * 6')\n"
                   "    hint: add it to cadences.schedules in the configuration with its cadence\n"
                   "ci-policy: 1 error\n")


@pytest.mark.parametrize("value, message", [
    ("[1", "--labels-json: not valid JSON: Expecting ',' delimiter: line 1 column 3 (char 2)"),
    ("", "--labels-json: not valid JSON: Expecting value: line 1 column 1 (char 0)"),
    ('{"a": 1}', "--labels-json: expected a JSON array of label names (strings), got '{\"a\": 1}'"),
    ('["run-ci-all", 3]', "--labels-json: expected a JSON array of label names (strings), "
                          "got '[\"run-ci-all\", 3]'"),
    ("NaN", "--labels-json: not valid JSON: NaN is not allowed"),
])
def test_invalid_labels_json(at_root, capsys, value, message):
    rc, out, err = run(["plan", "--repo", "examples/gpu-repo", "--event", "pull_request",
                        "--labels-json", value], capsys)
    assert (rc, out) == (2, "")
    assert err == (f"ci-policy plan: error: {message}\n"
                   "    hint: pass toJSON(github.event.pull_request.labels.*.name)\n")


# -- --base/--head against a real git repository -------------------------------------------

GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.invalid",
           "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.invalid"}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=60,
                   env={**os.environ, **GIT_ENV})


@pytest.fixture
def git_repo(example_repo, monkeypatch) -> Path:
    """The example under git, with `explicit: prune`: commit 1 everything, commit 2 a docs-only change."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    config = example_repo / ".github" / "ci-policy.yml"
    text = config.read_text()
    assert "  explicit: run\n" in text
    config.write_text(text.replace("  explicit: run\n", "  explicit: prune\n"))
    git(example_repo, "init", "-q", "-b", "main")
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-q", "-m", "base")
    with (example_repo / "docs" / "guide.md").open("a") as fh:
        fh.write("\nOne more paragraph.\n")
    git(example_repo, "commit", "-q", "-am", "docs only")
    return example_repo


def plan_json(argv: list[str], capsys) -> dict:
    rc, out, err = run(argv + ["--format", "json"], capsys)
    assert (rc, err) == (0, ""), err
    return json.loads(out)


def decisions(plan: dict) -> dict:
    return {s["name"]: (s["decision"], s["reasons"]) for s in plan["stages"]}


def test_base_head_docs_only_commit_skips_gpu_stages(git_repo, capsys):
    argv = ["plan", "--repo", str(git_repo), "--event", "pull_request", "--label", "run-ci-all", "--base", "HEAD~1"]
    plan = plan_json(argv, capsys)
    assert plan["diff"] == {"available": True, "files": ["docs/guide.md"]}
    assert decisions(plan) == {
        "stage-a-cpu": ("run", ["run: stage is not diff-pruned (4 selected)"]),
        "stage-b-1-gpu-h200": ("skip", ["skip: the diff touches only docs/guide.md"]),
        "stage-c-4-gpu-h200": ("skip", ["skip: the diff touches only docs/guide.md"]),
        "stage-c-4-gpu-mi350": ("skip", ["skip: the diff touches only docs/guide.md"]),
    }
    assert plan["images"] == {"cuda": "skip", "rocm": "skip"}
    assert plan["skipped_stages"] == STAGES[1:]
    # --head defaults to HEAD, and an empty --head means not given.
    assert plan_json(argv + ["--head", "HEAD"], capsys) == plan
    assert plan_json(argv + ["--head", ""], capsys) == plan
    # Identical revisions of the repository: a diff known to be empty, no file changed.
    first = plan_json(["plan", "--repo", str(git_repo), "--event", "pull_request", "--label", "run-ci-all",
                       "--base", "HEAD~1", "--head", "HEAD~1"], capsys)
    assert first["diff"] == {"available": True, "files": []}
    assert decisions(first) == {
        "stage-a-cpu": ("run", ["run: stage is not diff-pruned (4 selected)"]),
        "stage-b-1-gpu-h200": ("skip", ["skip: no file changed (the diff is empty)"]),
        "stage-c-4-gpu-h200": ("skip", ["skip: no file changed (the diff is empty)"]),
        "stage-c-4-gpu-mi350": ("skip", ["skip: no file changed (the diff is empty)"]),
    }


def test_base_head_rule_change_auto_selects(git_repo, capsys):
    with (git_repo / "minirl" / "backends" / "fsdp.py").open("a") as fh:
        fh.write("\n# tuned\n")
    git(git_repo, "commit", "-q", "-am", "fsdp change")
    plan = plan_json(["plan", "--repo", str(git_repo), "--event", "pull_request", "--base", "HEAD~1"], capsys)
    assert plan["diff"] == {"available": True, "files": ["minirl/backends/fsdp.py"]}
    assert plan["include_labels"] == ["fsdp"]
    reason = ["run: minirl/backends/fsdp.py selects fsdp"]
    assert decisions(plan) == {
        "stage-a-cpu": ("run", ["run: stage is not diff-pruned (4 selected)"]),
        "stage-b-1-gpu-h200": ("run", reason),
        "stage-c-4-gpu-h200": ("run", reason),
        "stage-c-4-gpu-mi350": ("run", reason),
    }
    assert {s["name"]: [t["file"] for t in s["tests"]] for s in plan["stages"]} == {
        "stage-a-cpu": FAST,
        "stage-b-1-gpu-h200": ["tests/e2e/test_fsdp_grpo.py"],
        "stage-c-4-gpu-h200": ["tests/e2e/test_fsdp_dpo_4gpu.py", "tests/e2e/test_rocm_fsdp_grpo.py"],
        "stage-c-4-gpu-mi350": ["tests/e2e/test_rocm_fsdp_grpo.py"],
    }
    # Between the first two commits only the docs changed: nothing is auto-selected.
    older = plan_json(["plan", "--repo", str(git_repo), "--event", "pull_request",
                       "--base", "HEAD~2", "--head", "HEAD~1"], capsys)
    assert older["diff"] == {"available": True, "files": ["docs/guide.md"]}
    assert older["include_labels"] == [] and older["images"] == {"cuda": "skip", "rocm": "skip"}


@pytest.mark.parametrize("base, reason", [
    ("HEAD;touch x", "revision 'HEAD;touch x' is not a plain git revision"),
    ("--output=x", "revision '--output=x' is not a plain git revision"),
])
def test_unsafe_revision_makes_the_diff_unavailable(git_repo, capsys, base, reason):
    plan = plan_json(["plan", "--repo", str(git_repo), "--event", "pull_request", "--label", "run-ci-rocm",
                      f"--base={base}"], capsys)
    assert plan["diff"] == {"available": False, "files": [], "reason": reason}
    assert plan["warnings"] == [
        f"diff unavailable: {reason}",
        "stage-c-4-gpu-mi350: tests/e2e/test_rocm_megatron_sft.py alone (est 540s) exceeds the stage's mean "
        "shard time (510s); the stage cannot finish sooner than this file"]
    assert decisions(plan)["stage-c-4-gpu-mi350"] == (
        "run", [f"run: the diff is unavailable ({reason}), so every runnable stage runs"])
    assert not (git_repo / "x").exists()


def test_a_unified_diff_file_is_named_with_the_command_that_gives_the_list(git_repo, tmp_path, capsys):
    with (git_repo / "minirl" / "backends" / "fsdp.py").open("a") as fh:
        fh.write("\n# tuned\n")
    git(git_repo, "commit", "-q", "-am", "fsdp change")
    unified = tmp_path / "pr.diff"
    unified.write_bytes(subprocess.run(["git", "-C", str(git_repo), "diff", "HEAD~1", "HEAD"],
                                       check=True, capture_output=True).stdout)
    assert unified.read_bytes().startswith(b"diff --git a/minirl/backends/fsdp.py b/minirl/backends/fsdp.py\n")
    plan = plan_json(["plan", "--repo", str(git_repo), "--event", "pull_request", "--label", "run-ci-rocm",
                      "--diff", str(unified)], capsys)
    reason = (f"{unified}: this is a unified diff (what `git diff` or GitHub's .diff gives), not the "
              "name-status list ci-policy reads; produce it with: git diff --name-status -z -M BASE HEAD")
    assert plan["diff"] == {"available": False, "files": [], "reason": reason}
    assert plan["warnings"][0] == f"diff unavailable: {reason}"
    assert decisions(plan)["stage-c-4-gpu-mi350"] == (
        "run", [f"run: the diff is unavailable ({reason}), so every runnable stage runs"])


def test_unknown_revision_makes_the_diff_unavailable(git_repo, capsys):
    plan = plan_json(["plan", "--repo", str(git_repo), "--event", "pull_request", "--label", "run-ci-rocm",
                      "--base", "no-such-branch"], capsys)
    assert plan["diff"]["available"] is False
    assert plan["diff"]["reason"].startswith("git diff no-such-branch HEAD failed (exit 128): ")
    assert decisions(plan)["stage-c-4-gpu-mi350"][0] == "run"
    assert [s["decision"] for s in plan["stages"]] == ["run", "skip", "skip", "run"]


# -- usage errors: exit 2, the option named, nothing on stdout -------------------------------

EVENTS = "pull_request, schedule, workflow_dispatch, workflow_call, push, merge_group"
CADENCES = "regular, nightly, weekly, release"


@pytest.mark.parametrize("extra, stderr", [
    (["--event", "bogus"], f"--event: unknown event 'bogus'; expected one of {EVENTS}\n"),
    (["--event", ""], f"--event: unknown event ''; expected one of {EVENTS}\n"),
    (["--event", "pull_request", "--head", "abc"],
     "--head: needs --base\n    hint: pass --base REV, or --diff FILE without --head\n"),
    (["--event", "pull_request", "--diff", "examples/pr-42.diff", "--base", "HEAD~1"],
     "--diff: pass either --diff or --base, not both\n"),
    (["--event", "pull_request", "--labels-json", "[]", "--label", "run-ci-all"],
     "--labels-json: pass either --labels-json or --label, not both\n"),
    # finding 10: a --diff naming no file is the caller's mistake, not an unavailable diff
    (["--event", "pull_request", "--diff", "examples/no-such.diff"],
     "--diff: examples/no-such.diff does not exist\n"
     "    hint: pass the file `git diff --name-status -z -M BASE HEAD` wrote, or omit --diff\n"),
    (["--event", "workflow_call", "--cadence", "hourly"],
     f"--cadence: unknown cadence 'hourly'; expected one of {CADENCES}\n"),
    (["--event", "schedule", "--schedule", "0 15 * * 6", "--cadence", "Nightly"],
     f"--cadence: unknown cadence 'Nightly'; expected one of {CADENCES}\n"),
])
def test_usage_errors_exit_2_naming_the_option(at_root, capsys, extra, stderr):
    argv = ["plan", "--repo", "examples/gpu-repo", *extra]
    assert run(argv, capsys) == (2, "", "ci-policy plan: error: " + stderr)
    for command in (["list", "--stage", "stage-a-cpu"], ["run", "--stage", "stage-a-cpu"]):
        assert run([*command, *argv[1:]], capsys) == (2, "", f"ci-policy {command[0]}: error: " + stderr)


def test_usage_error_in_github_format_is_also_an_annotation(at_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "out"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary"))
    rc, out, err = run(["plan", "--repo", "examples/gpu-repo", "--event", "release", "--format", "github"], capsys)
    assert (rc, err) == (2, f"ci-policy plan: error: --event: unknown event 'release'; expected one of {EVENTS}\n")
    assert out == f"::error::ci-policy plan: --event: unknown event 'release'; expected one of {EVENTS}\n"
    assert not (tmp_path / "out").exists() and not (tmp_path / "summary").exists()


def test_usage_error_from_the_console_script_has_no_traceback():
    proc = subprocess.run([console_script(), "plan", "--repo", "examples/gpu-repo", "--event", "bogus"], cwd=ROOT,
                          env=clean_env(), capture_output=True, text=True, timeout=120, check=False)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"ci-policy plan: error: --event: unknown event 'bogus'; expected one of {EVENTS}\n"


# -- a partial plan: one invalid test file ------------------------------------------------------------

@pytest.fixture
def partial(make_repo, monkeypatch):
    repo, inputs = partial_repo(make_repo)
    monkeypatch.chdir(repo)
    return ["plan", "--repo", ".", *inputs]


def test_a_partial_plan_in_github_format_writes_every_output_and_exits_0(partial, tmp_path, monkeypatch, capsys):
    outputs, summary = tmp_path / "output", tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    rc, out, err = run([*partial, "--format", "github"], capsys)
    assert (rc, err) == (0, "")
    assert parse_github_output(outputs.read_text()) == {
        "cadence": "regular", "trust": "trusted", "raw_labels": "run-ci-megatron",
        "bypass_fastfail": "false", "write_baseline": "false",
        "skipped_stages": '["gpu-b","amd"]', "matrix": '{"cpu":[0],"gpu-a":[0,1],"gpu-b":[],"amd":[]}',
        "max_parallel": '{"cpu":1,"gpu-a":2,"gpu-b":1,"amd":1}',
        "cuda_image": "build", "rocm_image": "skip",
        # No image is configured and no stage sets a time limit: no container, GitHub's default timeout.
        **one_wave([
            job("cpu", 0, "0", "cpu", ["ubuntu-latest"], "", "", 360),
            *(job("gpu-a", i, str(i), "cuda", ["h200"], "", GPUS, 360) for i in range(2))]),
        "has_stage_jobs": "true", "images_to_build": "[]",
        "image_runs_on": '["self-hosted","image-builder"]', "image_registry": "ghcr.io",
        "invalid_files": f'["{BAD}"]', "plan_complete": "false",
    }
    annotations = [line for line in out.splitlines() if line.startswith("::error")]
    assert annotations == [
        f"::error file={BAD},line=3,col=39,title=CP227 label-unknown::{BAD_MESSAGE} (hint: {BAD_HINT})"]
    assert out.startswith(without_warnings(read_golden("cli/plan/partial.txt")))
    assert_golden("cli/plan/partial-github.txt", out)
    assert_golden("cli/plan/partial.md", summary.read_text())


def test_a_partial_plan_in_json_has_invalid_and_exits_1(partial, capsys):
    rc, out, err = run([*partial, "--format", "json"], capsys)
    assert (rc, err) == (1, f"ci-policy plan: incomplete: 1 invalid test file(s) left out: {BAD}\n")
    doc = json.loads(out)
    assert (doc["plan_complete"], doc["invalid"], doc["not_fully_read"]) == (
        False, [{"file": BAD, "diagnostics": [BAD_DIAGNOSTIC]}], [])
    stages = {s["name"]: s for s in doc["stages"]}
    fail_safe = f"run: {BAD} changed and is an invalid test file, so every stage runs (fail safe)"
    # The stage of the invalid file is unknown (its only registration could not be read).
    assert (stages["gpu-a"]["decision"], stages["gpu-a"]["reasons"], stages["gpu-a"]["invalid"]) == (
        "run", [fail_safe, "run: requested by run-ci-megatron"], [])
    assert [t["file"] for t in stages["gpu-a"]["tests"]] == ["tests/e2e/test_ok.py", "tests/e2e/test_ok2.py"]
    assert_golden("cli/plan/partial.json", out)


def test_a_partial_plan_in_text_and_markdown_lists_the_file_and_exits_1(partial, capsys):
    err = f"ci-policy plan: incomplete: 1 invalid test file(s) left out: {BAD}\n"
    assert_run_golden(run(partial, capsys), 1, "cli/plan/partial.txt", err=err)
    assert_run_golden(run([*partial, "--format", "markdown"], capsys), 1, "cli/plan/partial.md", err=err)


def test_a_configuration_error_still_stops_the_plan(partial, capsys):
    config = Path(".github/ci-policy.yml")
    config.write_text(config.read_text() + "cadences:\n  nightly_exclude: [gone]\n")
    for fmt in ("text", "json", "markdown"):
        rc, out, err = run([*partial, "--format", fmt], capsys)
        assert (rc, out) == (1, "")
        assert err == (".github/ci-policy.yml:12: CP310 config-label-unknown: cadences.nightly_exclude: unknown "
                       "label 'gone'; valid labels: megatron, fsdp, long\n"
                       "    hint: use a label defined in KNOWN_LABELS of labels.py\nci-policy: 1 error\n")
        assert BAD not in err


def test_a_file_a_suppressed_error_left_partly_unread_is_named(make_repo, capsys):
    inside = (IMPORT + 'register_cuda_ci(60, "gpu-a", labels=["megatron"])\n\ndef test_runtime():\n'
              '    register_cuda_ci(1, "gpu-b")  # ci-policy: ignore[CP201]\n' + MAIN_BLOCK)
    repo = make_repo({**{k: v for k, v in PARTIAL_FILES.items() if k != BAD}, "tests/e2e/test_inside.py": inside})
    warning = ("tests/e2e/test_inside.py was not fully read: a suppressed error dropped part of it "
               "(`ci-policy lint --format json` lists the suppressed diagnostics)")
    rc, out, err = run(["plan", "--repo", str(repo), "--event", "schedule", "--cadence", "nightly",
                        "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    doc = json.loads(out)
    assert (doc["plan_complete"], doc["invalid"], doc["not_fully_read"]) == (True, [], ["tests/e2e/test_inside.py"])
    assert doc["warnings"] == [warning]
    rc, out, err = run(["plan", "--repo", str(repo), "--event", "schedule", "--cadence", "nightly"], capsys)
    assert (rc, err) == (0, "")
    assert out.endswith(f"\nwarning: {warning}\n")


# -- push and merge_group: pruned by their diff, which a new branch or a force push makes unavailable --

NEW_BRANCH = "the push created the branch (its before commit is the zero SHA), so there is no base to diff against"
FORCED = "a force push: the before commit need not be an ancestor of the pushed one"


@pytest.mark.parametrize("event", ["push", "merge_group"])
def test_push_and_merge_group_are_pruned_by_their_diff(git_repo, capsys, event):
    plan = plan_json(["plan", "--repo", str(git_repo), "--event", event, "--cadence", "nightly",
                      "--base", "HEAD~1", "--head", "HEAD", "--forced", ""], capsys)
    assert (plan["event"], plan["cadence"], plan["raw_labels"]) == (event, "nightly", [])
    assert plan["diff"] == {"available": True, "files": ["docs/guide.md"]}
    assert decisions(plan) == {
        "stage-a-cpu": ("run", ["run: stage is not diff-pruned (4 selected)"]),
        "stage-b-1-gpu-h200": ("skip", ["skip: the diff touches only docs/guide.md"]),
        "stage-c-4-gpu-h200": ("skip", ["skip: the diff touches only docs/guide.md"]),
        "stage-c-4-gpu-mi350": ("skip", ["skip: the diff touches only docs/guide.md"]),
    }
    # A merge queue entry is not merged yet: it never writes baselines; a push to a branch may.
    assert plan["write_baseline"] is (event == "push")


@pytest.mark.parametrize("extra, reason", [
    (["--base", "0" * 40, "--head", "HEAD"], NEW_BRANCH),
    (["--base", "HEAD~1", "--head", "HEAD", "--forced", "true"], FORCED),
    (["--forced", "true"], FORCED),
])
def test_a_new_branch_or_a_force_push_has_no_diff_and_every_runnable_stage_runs(git_repo, capsys, extra, reason):
    argv = ["plan", "--repo", str(git_repo), "--event", "push", "--cadence", "nightly", *extra]
    plan = plan_json(argv, capsys)
    assert plan["diff"] == {"available": False, "files": [], "reason": reason}
    assert plan["warnings"][0] == f"diff unavailable: {reason}"
    run_reason = f"run: the diff is unavailable ({reason}), so every runnable stage runs"
    assert decisions(plan) == {
        "stage-a-cpu": ("run", ["run: stage is not diff-pruned (4 selected)"]),
        "stage-b-1-gpu-h200": ("run", [run_reason]),
        "stage-c-4-gpu-h200": ("run", [run_reason]),
        "stage-c-4-gpu-mi350": ("run", [run_reason]),
    }
    rc, out, err = run(argv, capsys)
    assert (rc, err) == (0, "")
    assert f"diff: unavailable ({reason})\n" in out and f"warning: diff unavailable: {reason}\n" in out


@pytest.mark.parametrize("extra, stderr", [
    (["--event", "pull_request", "--forced", "true"],
     "--forced: only a push is forced, not a pull_request event\n    hint: pass --forced only with --event push\n"),
    (["--event", "push", "--forced", "yes"],
     "--forced: expected true or false, got 'yes'\n    hint: pass ${{ github.event.forced }}\n"),
    (["--event", "push", "--label", "run-ci-all"],
     "--labels-json/--label: a push event carries no PR labels, got run-ci-all\n"
     "    hint: pass PR labels only for pull_request events (an empty array or null is fine)\n"),
    (["--event", "merge_group", "--labels-json", '["run-ci"]'],
     "--labels-json/--label: a merge_group event carries no PR labels, got run-ci\n"
     "    hint: pass PR labels only for pull_request events (an empty array or null is fine)\n"),
])
def test_push_input_usage_errors(at_root, capsys, extra, stderr):
    assert run(["plan", "--repo", "examples/gpu-repo", *extra], capsys) == (2, "", "ci-policy plan: error: " + stderr)


def test_empty_labels_are_fine_on_a_push(at_root, capsys):
    rc, out, _ = run(["plan", "--repo", "examples/gpu-repo", "--event", "push", "--labels-json", "null",
                      "--forced", "false", "--format", "json"], capsys)
    assert rc == 0 and json.loads(out)["diff"] == {"available": False, "files": [],
                                                   "reason": "no --diff or --base was given"}


# -- label gates, in every output format --------------------------------------------------------------

GATED_EXAMPLE = """\
pull_request:
  require_labels: [run-ci]
"""
REQUIRE = "skip: the PR lacks the label run-ci, which accelerator stages need (pull_request.require_labels)"
EXTRA = "skip: the PR lacks the label run-ci-extra, which the stage requires (requires_labels)"


@pytest.fixture
def gated_repo(example_repo, monkeypatch) -> Path:
    config = example_repo / ".github" / "ci-policy.yml"
    text = config.read_text()
    old = "    partitions: 2\n    timeout_per_file: 3600\n"
    assert text.count(old) == 1  # the mi350 stage
    config.write_text(text.replace(old, old + "    requires_labels: [run-ci-extra]\n") + GATED_EXAMPLE)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return example_repo


@pytest.mark.parametrize("labels, expected", [
    ([], {"stage-a-cpu": "run", "stage-b-1-gpu-h200": REQUIRE, "stage-c-4-gpu-h200": REQUIRE,
          "stage-c-4-gpu-mi350": f"{REQUIRE}; {EXTRA}"}),
    (["run-ci"], {"stage-a-cpu": "run", "stage-b-1-gpu-h200": "run", "stage-c-4-gpu-h200": "run",
                  "stage-c-4-gpu-mi350": EXTRA}),
    (["run-ci", "run-ci-extra"], {"stage-a-cpu": "run", "stage-b-1-gpu-h200": "run", "stage-c-4-gpu-h200": "run",
                                  "stage-c-4-gpu-mi350": "run"}),
])
def test_gate_reasons_in_every_format(gated_repo, tmp_path, monkeypatch, capsys, labels, expected):
    argv = ["plan", "--repo", str(gated_repo), "--event", "pull_request", "--labels-json",
            json.dumps(["run-ci-all", *labels])]
    plan = plan_json(argv, capsys)
    got = {name: "run" if decision == "run" else "; ".join(reasons)
           for name, (decision, reasons) in decisions(plan).items()}
    assert got == expected
    # The canonical labels are unchanged; gate labels are not reported as selecting nothing.
    assert plan["raw_labels"] == ["run-ci-all", *(["run-ci-extra"] if "run-ci-extra" in labels else [])]
    assert not any("names no known label" in w for w in plan["warnings"])
    skipped = [reason for reason in expected.values() if reason != "run"]
    rc, text, _ = run(argv, capsys)
    assert rc == 0 and all("\n  " + reason.replace("; ", "\n  ") + "\n" in text for reason in skipped)
    rc, markdown, _ = run([*argv, "--format", "markdown"], capsys)
    assert rc == 0 and all(reason.replace("; ", "<br>").replace("_", "\\_") in markdown for reason in skipped)
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "out"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary"))
    rc, _, _ = run([*argv, "--format", "github"], capsys)
    assert rc == 0 and (tmp_path / "summary").read_text() == markdown
    outputs = parse_github_output((tmp_path / "out").read_text())
    assert json.loads(outputs["skipped_stages"]) == [name for name, r in expected.items() if r != "run"]


# -- plan --explain FILE ------------------------------------------------------------------------

@pytest.mark.parametrize("file, golden", [
    ("tests/e2e/test_megatron_sft.py", "explain-selected"),
    ("tests/e2e/test_fsdp_grpo.py", "explain-not-selected"),
    ("./docs/guide.md", "explain-not-a-test-file"),
])
def test_explain_text_and_json(at_root, capsys, file, golden):
    argv = [*QUICKSTART_ARGV, "--explain", file]
    assert_run_golden(run(argv, capsys), 0, f"cli/plan/{golden}.txt")
    rc, out, err = run([*argv, "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert_golden(f"cli/plan/{golden}.json", out)
    doc = json.loads(out)
    assert (doc["schema"], doc["file"], doc["event"], doc["cadence"]) == (1, file.removeprefix("./"),
                                                                           "pull_request", "regular")


def test_explain_an_invalid_file_lists_its_diagnostics_and_exits_0(make_repo, capsys):
    repo, inputs = partial_repo(make_repo)
    rc, out, err = run(["plan", "--repo", str(repo), *inputs, "--explain", BAD], capsys)
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    assert lines[1] == f"{BAD} is an invalid test file: never scheduled until its error is fixed"
    assert BAD_MESSAGE in out and f"hint: {BAD_HINT}" in out
    rc, out, err = run(["plan", "--repo", str(repo), *inputs, "--explain", BAD, "--format", "json"], capsys)
    doc = json.loads(out)
    assert (rc, doc["status"], doc["changed"], doc["stages"], doc["diagnostics"]) == (
        0, "invalid", True, [], [BAD_DIAGNOSTIC])


@pytest.mark.parametrize("extra, stderr", [
    (["--explain", "/etc/passwd"], "--explain: path: '/etc/passwd' is absolute; paths are relative to the "
                                   "repository root\n    hint: drop the leading '/'\n"),
    (["--explain", "../x.py"], "--explain: path: '../x.py' leaves the repository ('..' is not allowed)\n"
                               "    hint: name a path inside the repository\n"),
    (["--explain", "tests/e2e/test_megatron_sft.py", "--format", "markdown"],
     "--explain: explains in text or json, not markdown\n    hint: pass --format text or --format json\n"),
])
def test_explain_usage_errors(at_root, capsys, extra, stderr):
    assert run([*QUICKSTART_ARGV, *extra], capsys) == (2, "", "ci-policy plan: error: " + stderr)


@pytest.mark.parametrize("cache", [["--no-cache"], ["--cache", "CACHE"]], ids=["uncached", "cached"])
def test_plan_lists_the_git_index_once_for_the_scan_and_its_inputs(cache, tmp_path: Path, monkeypatch, capsys):
    from ci_policy.adapters import git as git_module

    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=ci", "-c", "user.email=ci@example.invalid",
                                                 "-c", "commit.gpgsign=false", "commit", "-q", "-m", "base"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)
    runs: list[list[str]] = []

    class Counting(git_module._Git):
        def __init__(self, root: Path, args: list[str], **kwargs) -> None:
            runs.append(args)
            super().__init__(root, args, **kwargs)

    monkeypatch.setattr(git_module, "_Git", Counting)
    argv = ["plan", "--repo", str(repo), "--event", "pull_request", "--diff", "", "--format", "json",
            *[str(tmp_path / a) if a == "CACHE" else a for a in cache]]
    code, out, _err = run(argv, capsys)
    assert code == 0
    # One listing (its two runs side by side, so in either order); then the clean tree the
    # plan records (`rev-parse`, `status` and the tags of what git compares, side by side too).
    assert len(runs) == 5
    assert sorted(runs[:2]) == [["ls-files", "-m", "-o", "--exclude-standard", "-z"], ["ls-files", "-s", "-v", "-z"]]
    assert sorted(runs[2:]) == [["ls-files", "-v", "-z", "--", "."],
                                ["rev-parse", "--verify", "--quiet", "HEAD:./"],
                                ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=none",
                                 "--", "."]]
    assert json.loads(out)["inputs"]["files"]["tests/e2e/test_fsdp_grpo.py"].startswith("git:")


def test_a_plan_schedules_the_good_registration_of_a_partly_read_file_and_lists_it(make_repo, capsys):
    repo = two_repo(make_repo)
    diff = repo.parent / "pr.diff"
    diff.write_bytes(f"M\0{TWO}\0".encode())
    argv = ["plan", "--repo", str(repo), "--event", "pull_request", "--label", "run-ci-megatron", "--diff", str(diff)]
    incomplete = f"ci-policy plan: {TWO_INCOMPLETE}\n"
    rc, out, err = run(argv, capsys)
    assert (rc, err) == (1, incomplete)
    # The changed file is still invalid: the fail safe runs every diff-pruned stage, as before.
    assert out == (
        "ci-policy plan: pull_request, cadence regular, trust trusted\n"
        "PR labels: run-ci-megatron\n"
        "included labels: megatron\n"
        "diff: 1 changed file(s)\n"
        "\n"
        "STAGE  BACKEND  DECISION  TESTS  SHARDS  EST WALL\n"
        "cpu    cpu      RUN           1       1        1s\n"
        "  run: stage is not diff-pruned (1 selected)\n"
        "gpu-a  cuda     RUN           3       2     1m30s\n"
        f"  run: {TWO} changed and is an invalid test file, so every stage runs (fail safe)\n"
        "  run: requested by run-ci-megatron\n"
        "gpu-b  cuda     SKIP          0       0         -\n"
        "  skip: no registered tests\n"
        "amd    rocm     SKIP          0       0         -\n"
        "  skip: no registered tests\n"
        "\n"
        "shards:\n"
        "  cpu: makespan 1s / lower bound 1s (optimal)\n"
        "  cpu[0] est 1s, 1 file:\n"
        "    tests/unit/test_u.py\n"
        "  gpu-a: makespan 1m30s / lower bound 1m15s (optimal)\n"
        "  gpu-a[0] est 1m30s, 2 files:\n"
        "    tests/e2e/test_ok.py\n"
        "    tests/e2e/test_ok2.py\n"
        "  gpu-a[1] est 1m0s, 1 file:\n"
        f"    {TWO}\n"
        "\n"
        + TWO_SECTION + "\n"
        "\n"
        "images: cuda=build, rocm=skip\n"
        "\n"
        "accelerator hours (est_time x accelerators per runner): 0.04 scheduled, 0.00 skipped\n"
        "  gpu-a: 0.04 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)\n"
        "  gpu-b: 0.00 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)\n"
        "  amd: 0.00 scheduled, 0.00 skipped; 1 accelerator per runner (no accelerators entry matches)\n")
    rc, out, err = run([*argv, "--format", "json"], capsys)
    assert (rc, err) == (1, incomplete)
    doc = json.loads(out)
    assert [(s["name"], s["decision"], sorted((t["file"], t["line"]) for t in s["tests"]), s["invalid"])
            for s in doc["stages"]] == [
        ("cpu", "run", [("tests/unit/test_u.py", None)], []),
        ("gpu-a", "run", [("tests/e2e/test_ok.py", 3), ("tests/e2e/test_ok2.py", 3), (TWO, 3)], []),
        ("gpu-b", "skip", [], []), ("amd", "skip", [], [])]
    assert (doc["plan_complete"], doc["invalid"], doc["not_fully_read"]) == (
        False, [{"file": TWO, "diagnostics": [TWO_DIAGNOSTIC], "kept_stages": ["gpu-a"]}], [])
    rc, out, err = run([*argv, "--explain", TWO], capsys)
    assert (rc, err) == (0, "")
    assert out.splitlines()[1] == (f"{TWO} is registered to 1 stage (gpu-a); it runs in gpu-a; 1 invalid "
                                   "registration of it never scheduled until fixed")
    assert f"  {TWO}:4:22: CP225 suite-unknown: " in out
