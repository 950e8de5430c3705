"""Every diagnostic code `ci-policy lint` can emit, each triggered by a tiny checkout.

- The corpus below has one case per code of CP2xx-CP9xx (`CODES`): the files of a
  checkout that trigger it, and the exact diagnostics of that code `lint` reports
  (severity, path, line, col, message). A code no case triggers fails the test.
- The README's "Diagnostics" table and `CODES` list the same codes, names and examples.
- Codes are well-formed and stable in shape: `CPnnn` in the documented ranges, one
  name per code, warnings only in CP9xx.
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import MAIN_BLOCK, MINIMAL_LABELS, ROOT

from ci_policy.errors import CODES
from ci_policy.model.lint import lint

A = "tests/e2e/test_a.py"
CUDA = "from ci_policy import register_cuda_ci\n\n"
GATE = "from ci_policy import register_ci_gate\n\n"
CONFIG_PATH = ".github/ci-policy.yml"
# Two stages, both used by `OK`; so no CP901 warning unless a case wants one.
SMALL_CONFIG = """\
version: 1
discovery:
  roots: [tests]
  implicit:
    - {root: tests/unit, backend: cpu, suite: cpu, est_time: 1, cpu_only: true}
stages:
  - {name: cpu, backend: cpu}
  - {name: gpu-a, backend: cuda, runs_on: [h200]}
  - {name: gpu-b, backend: cuda, runs_on: [h200]}
"""
OK = {"tests/unit/test_ok.py": "def test_ok():\n    pass\n",
      "tests/e2e/test_ok.py": CUDA + 'register_cuda_ci(60, "gpu-a", labels=["megatron", "fsdp", "long"])\n'
      + MAIN_BLOCK,
      "tests/e2e/test_ok_b.py": CUDA + 'register_cuda_ci(60, "gpu-b", labels=["fsdp"])\n' + MAIN_BLOCK}


@dataclass
class Case:
    code: str
    files: dict[str, str | bytes]
    expected: list[tuple[str | None, int | None, int | None, str]]
    config: str = SMALL_CONFIG
    labels: str = MINIMAL_LABELS
    # Changes a checkout cannot express as file texts (symlinks, odd names); gets the root.
    setup: Callable[[Path], None] | None = None
    # Expected values that depend on where the checkout lives.
    expected_at: Callable[[Path], list[tuple[str | None, int | None, int | None, str]]] | None = None
    # The day lint judges quarantines on (None: today in UTC).
    today: datetime.date | None = None


# One quarantine entry after SMALL_CONFIG: the entry on line 11, its `until` on line 12.
QUARANTINE = """\
quarantine:
  - {{file: {file}, reason: flaky NCCL init, owner: "@alice",
     until: {until}}}
"""
WORKFLOW = ".github/workflows/ci.yml"
SHA1 = "1111111111111111111111111111111111111111"


def caller(ref: str, pinned: str) -> str:
    """A workflow calling the reusable pipeline at `ref` with `ci-policy-ref: pinned`."""
    return ("on: pull_request\njobs:\n  ci:\n"
            f"    uses: ci-policy/ci-policy/.github/workflows/pr-pipeline.yml@{ref}\n"
            f'    with:\n      ci-policy-ref: "{pinned}"\n')


def stage_jobs(*jobs: tuple[str, str]) -> str:
    """A hand-written workflow: one job per (stage, runs-on), each running its stage."""
    return "on: pull_request\njobs:\n" + "".join(
        f"  {stage}:\n    runs-on: {runs_on}\n    steps:\n      - run: ci-policy run --stage {stage}\n"
        for stage, runs_on in jobs)


def cuda(call: str, main: bool = True) -> str:
    return CUDA + call + "\n" + (MAIN_BLOCK if main else "")


def gate(call: str) -> str:
    return GATE + call + "\n"


def config_with(extra: str) -> str:
    return SMALL_CONFIG + extra


def symlink(target: str, link: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        (root / link).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / link)
    return make


DIALECT_CONFIG = SMALL_CONFIG + """\
markers:
  extra_arguments: {stage: string, runner_config: string}
  suite: "{stage}-{runner_config}"
"""
ESTIMATES = ".github/ci-estimates.json"
WITH_ESTIMATES = SMALL_CONFIG + f"estimates_file: {ESTIMATES}\n"
NESTED = "x = " + "-" * 100_000 + "1\n"


def long_labels_path(root: Path) -> list[tuple[str | None, int | None, int | None, str]]:
    # lstat stops at the first component the system refuses, and names it.
    return [(None, None, None, f"cannot read {root / ('a' * 300)}: File name too long")]


CASES = [
    # -- CP2xx markers and registrations ---------------------------------------------------------
    Case("CP201", {A: CUDA + 'def f():\n    register_cuda_ci(60, "gpu-a", labels=["fsdp"])\n'},
         [(A, 4, 5, "register_cuda_ci(...) here is not a registration: markers are read only as module-level "
                    "expression statements (not inside a function, class, `if`, `with`, or an assignment)")]),
    Case("CP202", {A: CUDA + "x = register_cuda_ci\n"},
         [(A, 3, 5, "register_cuda_ci is referenced without being called as a module-level statement, "
                    "so ci-policy cannot read it")]),
    Case("CP203", {A: "import ci\n\nci.register_cuda_ci(60, 'gpu-a', labels=['fsdp'])\n"},
         [(A, 3, 1, "ci.register_cuda_ci is not a registration: ci-policy reads only calls to the bare name "
                    "register_cuda_ci")]),
    Case("CP204", {A: "from ci_policy import register_cuda_ci as reg\n"},
         [(A, 1, 1, "register_cuda_ci is imported as 'reg'; ci-policy reads only calls to the bare name "
                    "register_cuda_ci")]),
    Case("CP205", {A: "from ci_policy import register_cuda_ci\n"},
         [(A, 1, 1, "register_cuda_ci is imported but this file has no module-level register_cuda_ci(...) "
                    "statement, so ci-policy reads no registration from it")]),
    Case("CP206", {A: "def f(:\n"}, [(A, 1, 7, f"{A} is not valid Python: invalid syntax")]),
    Case("CP207", {A: "from sglang.test.ci.ci_register import register_amd_ci\n\n"
                      'register_amd_ci(est_time=600, suite="gpu-a")\n'},
         [(A, 3, 1, "register_amd_ci(...) looks like a registration marker but the configuration does not declare "
                    "it (configured: register_cpu_ci, register_cuda_ci, register_rocm_ci), so ci-policy reads no "
                    "registration from it")]),
    Case("CP210", {A: cuda("register_cuda_ci(*args)")},
         [(A, 3, 18, "register_cuda_ci: *args is not allowed; write every argument literally")]),
    Case("CP211", {A: cuda('register_cuda_ci(60, "gpu-a", ["fsdp"])')},
         [(A, 3, 31, "register_cuda_ci takes at most 2 positional arguments (est_time, suite), got 3")]),
    Case("CP212", {A: cuda('register_cuda_ci(60, "gpu-a", label=["fsdp"])')},
         [(A, 3, 31, "register_cuda_ci: unknown argument 'label'; did you mean 'labels'?")]),
    Case("CP213", {A: cuda('register_cuda_ci(60, "gpu-a", suite="gpu-a", labels=["fsdp"])')},
         [(A, 3, 31, "register_cuda_ci: argument 'suite' is given twice (positionally and by keyword)")]),
    Case("CP214", {A: cuda('register_cuda_ci(60, labels=["fsdp"])')},
         [(A, 3, 1, "register_cuda_ci: missing required argument 'suite'")]),
    Case("CP215", {A: cuda('register_cuda_ci(60 * 30, "gpu-a", labels=["fsdp"])')},
         [(A, 3, 18, "register_cuda_ci: est_time must be a literal, not `60 * 30` (ci-policy reads it from "
                     "source without running the file)")]),
    Case("CP219", {A: cuda('register_cuda_ci(60, "gpu-a", labels=["fsdp"], disabled="flaky \\ud800")')},
         [(A, 3, 57, "register_cuda_ci: disabled holds a lone surrogate escape (\\ud800 to \\udfff), which no "
                     "output can carry")]),
    Case("CP216", {A: cuda('register_cuda_ci(60, stage="gpu", runner_config=1, labels=["fsdp"])')},
         [(A, 3, 49, "register_cuda_ci: runner_config must be a string, got 1")], config=DIALECT_CONFIG),
    Case("CP217", {A: cuda('register_cuda_ci(60, stage="gpu", labels=["fsdp"])')},
         [(A, 3, 1, "register_cuda_ci: no suite, and the suite template '{stage}-{runner_config}' also needs "
                    "runner_config")], config=DIALECT_CONFIG),
    Case("CP218", {A: cuda('register_cuda_ci(60, "gpu-b", stage="gpu", runner_config="a", labels=["fsdp"])')},
         [(A, 3, 22, "register_cuda_ci: suite 'gpu-b' differs from 'gpu-a', the suite the template "
                     "'{stage}-{runner_config}' builds from stage and runner_config")], config=DIALECT_CONFIG),
    Case("CP220", {A: cuda('register_cuda_ci(60, "gpu-a", labels=["fsdp"])\n'
                           'register_cuda_ci(30, "gpu-a", labels=["fsdp"])')},
         [(A, 4, 1, f"register_cuda_ci: {A} is registered twice for suite 'gpu-a' (lines 3 and 4), "
                    "so it would run twice")]),
    Case("CP221", {"tests/unit/test_a.py": cuda('register_cuda_ci(60, "gpu-a", labels=["fsdp"])')},
         [("tests/unit/test_a.py", 3, 1, "register_cuda_ci: tests/unit/test_a.py is under tests/unit, "
                                         "a cpu_only implicit root; cuda tests cannot live there")]),
    Case("CP222", {A: cuda('register_cuda_ci(60, "gpu-a", labels=["fsdp"])', main=False)},
         [(A, 3, 1, f"stage gpu-a runs {A} as `python FILE`, but the file has no "
                    '`if __name__ == "__main__":` block that calls something, so it would exit 0 without '
                    "running a test")]),
    Case("CP223", {A: cuda('register_cuda_ci(-1, "gpu-a", labels=["fsdp"])')},
         [(A, 3, 18, "register_cuda_ci: est_time must be a finite non-negative number of seconds, got -1")]),
    Case("CP224", {A: cuda('register_cuda_ci(60, 3, labels=["fsdp"])')},
         [(A, 3, 22, "register_cuda_ci: suite must be a string, got 3")]),
    Case("CP225", {A: cuda('register_cuda_ci(60, "gpu-c", labels=["fsdp"])')},
         [(A, 3, 22, "register_cuda_ci: suite 'gpu-c' is not a configured cuda stage; did you mean 'gpu-b'?")]),
    Case("CP226", {A: cuda('register_cuda_ci(60, "gpu-a", labels="fsdp")')},
         [(A, 3, 38, "register_cuda_ci: labels must be a list of string literals or None, got 'fsdp'")]),
    Case("CP227", {A: cuda('register_cuda_ci(60, "gpu-a", labels=["megatrn"])')},
         [(A, 3, 39, "register_cuda_ci: unknown label 'megatrn' (did you mean 'megatron'?); "
                     "valid labels: megatron, fsdp, long")]),
    Case("CP228", {A: cuda('register_cuda_ci(60, "gpu-a")')},
         [(A, 3, 1, "register_cuda_ci: a cuda registration needs at least one label (gpu_requires_labels is "
                    "true), so that a PR can select it")]),
    Case("CP229", {A: cuda('register_cuda_ci(60, "gpu-a", labels=["fsdp"], nightly="yes")')},
         [(A, 3, 56, "register_cuda_ci: nightly must be True or False, got 'yes'")]),
    Case("CP230", {A: cuda('register_cuda_ci(60, "gpu-a", labels=["fsdp"], disabled="")')},
         [(A, 3, 57, "register_cuda_ci: disabled must give a reason, got ''")]),
    Case("CP231", {A: "x = 1\n"},
         [(A, 1, 1, f"{A} matches the discovery pattern 'test_*.py' but has no registration and is not under "
                    "an implicit root, so no stage would run it")]),
    Case("CP232", {}, [(CONFIG_PATH, 11, None, "quarantine[0].file: tests/e2e/test_gone.py is not a registered "
                                               "test file; did you mean 'tests/e2e/test_ok.py'?"),
                       (CONFIG_PATH, 13, None, "quarantine[1].file: tests/e2e/test_ok.py does not run in stage gpu-b "
                                               "(its stages: gpu-a)")],
         config=SMALL_CONFIG + QUARANTINE.format(file="tests/e2e/test_gone.py", until="2026-01-15")
         + "  - {file: tests/e2e/test_ok.py, stage: gpu-b, reason: r, owner: '@bob',\n     until: 2026-01-15}\n",
         today=datetime.date(2026, 1, 1)),
    Case("CP233", {}, [(CONFIG_PATH, 12, None, "quarantine[0].until: the quarantine of tests/e2e/test_ok.py has "
                                               "expired: it held until 2026-01-15 (flaky NCCL init; owner @alice), "
                                               "and its failures fail the run again")],
         config=SMALL_CONFIG + QUARANTINE.format(file="tests/e2e/test_ok.py", until="2026-01-15"),
         today=datetime.date(2026, 1, 16)),
    Case("CP250", {A: cuda('register_cuda_ci(60, "gpu-a", labels=["fsdp"])  # ci-policy: ignore')},
         [(A, 3, 49, "a bare `# ci-policy: ignore` would hide every diagnostic of the line; name what it accepts")]),
    Case("CP251", {A: cuda('register_cuda_ci(60, "gpu-a", labels=["fsdp"])  # ci-policy: ignore[CP299, nope]')},
         [(A, 3, 49, "`# ci-policy: ignore[...]` names 'CP299', 'nope', not a diagnostic code or name of "
                     "ci-policy lint")]),
    # -- CP3xx the label registry ----------------------------------------------------------------
    Case("CP301", {}, [("labels.py", 1, 16, "labels file labels.py is not valid Python: '{' was never closed")],
         labels="KNOWN_LABELS = {\n"),
    Case("CP302", {}, [("labels.py", 1, 1, "labels file labels.py does not define KNOWN_LABELS")],
         labels="LABELS = {}\n"),
    Case("CP303", {}, [("labels.py", 2, 1, "KNOWN_LABELS is assigned 2 times (lines 1, 2); "
                                           "it must be assigned exactly once")],
         labels='KNOWN_LABELS = {"fsdp": "x"}\nKNOWN_LABELS = {}\n'),
    Case("CP304", {}, [("labels.py", 2, 5, "KNOWN_LABELS must be a plain module-level assignment "
                                           "`KNOWN_LABELS = {...}`")],
         labels='if True:\n    KNOWN_LABELS = {"fsdp": "x"}\n'),
    Case("CP305", {}, [("labels.py", 1, 16, "KNOWN_LABELS must be a dict literal of label name -> "
                                            "description string")],
         labels='KNOWN_LABELS = dict(fsdp="x")\n'),
    Case("CP306", {}, [("labels.py", 1, 25, "KNOWN_LABELS['fsdp']: description is not a string literal")],
         labels='KNOWN_LABELS = {"fsdp": 1}\n'),
    Case("CP307", {}, [("labels.py", 1, 30, "KNOWN_LABELS: duplicate label 'fsdp' (first on line 1)")],
         labels='KNOWN_LABELS = {"fsdp": "x", "fsdp": "y"}\n'),
    Case("CP308", {}, [("labels.py", 1, 17, "KNOWN_LABELS: 'a b' is not a valid label name "
                                            "(expected [A-Za-z0-9][A-Za-z0-9_.-]*)")],
         labels='KNOWN_LABELS = {"a b": "x"}\n'),
    Case("CP310", {}, [(CONFIG_PATH, 11, None, "cadences.nightly_exclude: unknown label 'gone'; "
                                               "valid labels: megatron, fsdp, long")],
         config=SMALL_CONFIG + "cadences:\n  nightly_exclude: [gone]\n"),
    Case("CP311", {}, [(CONFIG_PATH, 11, None, "scopes.run-ci-fsdp: run-ci-fsdp is both a broad scope and the "
                                               "PR label of the known label 'fsdp'")],
         config=SMALL_CONFIG + "scopes:\n  run-ci-fsdp: {exclude: []}\n"),
    # -- CP4xx discovery and checkout reads ------------------------------------------------------
    Case("CP401", {}, [("tests/e2e/test_link.py", None, None, "test file tests/e2e/test_link.py is a symlink; "
                                                              "ci-policy refuses symlinks in a checkout")],
         setup=symlink("test_ok.py", "tests/e2e/test_link.py")),
    Case("CP402", {}, [(CONFIG_PATH, 2, None, "discovery root nope does not exist")],
         config=SMALL_CONFIG.replace("roots: [tests]", "roots: [tests, nope]")),
    Case("CP403", {}, [(CONFIG_PATH, 2, None, "discovery root labels.py is not a directory")],
         config=SMALL_CONFIG.replace("roots: [tests]", "roots: [tests, labels.py]")),
    Case("CP404", {}, [], config=SMALL_CONFIG + "labels_file: " + "a" * 300 + "/labels.py\n",
         expected_at=long_labels_path),
    Case("CP405", {A: "#" * (2 * 1024 * 1024 + 1)},
         [(A, None, None, f"test file {A} is larger than 2097152 bytes")]),
    Case("CP406", {A: b"x = 1\n\xff\n"}, [(A, 2, 1, f"test file {A} is not valid UTF-8")]),
    Case("CP407", {"tests/e2e/test_\x1b.py": "x = 1\n"},
         [("tests/e2e/test_\\x1b.py", None, None,
           "test file 'tests/e2e/test_\\x1b.py' has control characters in its path; ci-policy refuses such names")]),
    Case("CP408", {A: NESTED}, [(A, 1, 1, f"{A} is too deeply nested for the Python parser")]),
    Case("CP420", {ESTIMATES: "{"},
         [(ESTIMATES, None, None, f"estimates file {ESTIMATES} is not valid strict JSON: Expecting property name "
                                  "enclosed in double quotes: line 1 column 2 (char 1)")],
         config=WITH_ESTIMATES),
    Case("CP421", {ESTIMATES: '{"schema": 2, "estimates": []}'},
         [(ESTIMATES, None, None, f'estimates file {ESTIMATES} must be {{"schema": 1, "estimates": [...]}}')],
         config=WITH_ESTIMATES),
    Case("CP422", {ESTIMATES: '{"schema": 1, "estimates": [{"file": "a", "suite": "s"}]}'},
         [(ESTIMATES, None, None, "estimates[0] must have exactly file, suite and est_time")],
         config=WITH_ESTIMATES),
    Case("CP423", {ESTIMATES: '{"schema": 1, "estimates": [{"file": "a", "suite": "s", "est_time": 1}, '
                              '{"file": "a", "suite": "s", "est_time": 2}]}'},
         [(ESTIMATES, None, None, "estimates[1]: a / s is listed twice")],
         config=WITH_ESTIMATES),
    # -- CP5xx gates -----------------------------------------------------------------------------
    Case("CP501", {A: gate('register_ci_gate(metric_key="")')},
         [(A, 3, 29, "register_ci_gate: metric_key must be a non-empty string, got ''")]),
    Case("CP502", {A: gate('register_ci_gate(metric_key="train/grad_norm", steps="some")')},
         [(A, 3, 54, "register_ci_gate: steps must be \"last\", \"all\" or a list of step indices, got 'some'")]),
    Case("CP503", {A: gate('register_ci_gate(metric_key="train/grad_norm", constraint={"rel": 1})')},
         [(A, 3, 59, "register_ci_gate: constraint has unknown key(s) 'rel'; "
                     "accepted: rel_up, abs_floor_up, rel_down, abs_floor_down"),
          (A, 3, 59, "register_ci_gate: constraint needs at least one bound per side "
                     "(rel_up or abs_floor_up, and rel_down or abs_floor_down)")]),
    Case("CP504", {A: gate('register_ci_gate(metric_key="train/grad_norm", enforce=1)')},
         [(A, 3, 56, "register_ci_gate: enforce must be True or False, got 1")]),
    Case("CP505", {A: gate('register_ci_gate(metric_key="train/grad_norm", allowlist_reason=1)')},
         [(A, 3, 65, "register_ci_gate: allowlist_reason must be a string or None, got 1")]),
    Case("CP510", {A: gate('register_ci_gate(metric_key="a/b", steps="last", '
                           'constraint={"rel_up": 1, "rel_down": 1})')},
         [(A, 3, 1, "register_ci_gate: metric_key 'a/b' is not captured, so it can never be evaluated")]),
    Case("CP511", {A: gate('register_ci_gate(metric_key="train/loss")')},
         [(A, 3, 1, "register_ci_gate: steps and constraint not given and gates.defaults has none for "
                    "'train/loss'")],
         config=SMALL_CONFIG + "gates:\n  capture: [train/loss]\n"),
    Case("CP520", {},
         [("tests/e2e/test_ok.py", 3, 1, "tests/e2e/test_ok.py lacks the gate required by gates.require[0]: "
                                         "register_ci_gate(metric_key='train/grad_norm')")],
         config=SMALL_CONFIG + 'gates:\n  require:\n    - {files: "tests/e2e/test_ok.py", '
                               "metric_keys: [train/grad_norm]}\n"),
    # -- CP9xx warnings --------------------------------------------------------------------------
    Case("CP901", {}, [(CONFIG_PATH, 10, None, "stage amd has no registered test files")],
         config=SMALL_CONFIG + "  - {name: amd, backend: rocm, runs_on: [mi350]}\n"),
    Case("CP902", {}, [("labels.py", 1, None, "label 'unused' is not used by any test")],
         labels=MINIMAL_LABELS.replace("}", ', "unused": "x"}')),
    Case("CP903", {}, [(CONFIG_PATH, 10, None, f"estimates file {ESTIMATES} does not exist yet; "
                                               "the est_time literals apply")],
         config=WITH_ESTIMATES),
    Case("CP904", {ESTIMATES: '{"schema": 1, "estimates": '
                              '[{"file": "tests/e2e/test_gone.py", "suite": "gpu-a", "est_time": 1}]}'},
         [(ESTIMATES, None, None, "the estimates file lists tests/e2e/test_gone.py for suite gpu-a, "
                                  "which no registration matches")],
         config=WITH_ESTIMATES),
    Case("CP601", {WORKFLOW: "on: [push\njobs: {}\n"},
         [(WORKFLOW, 2, 5, f"workflow {WORKFLOW} is not valid YAML: expected ',' or ']', but got ':'")]),
    Case("CP602", {WORKFLOW: caller("main", "1111111111111111111111111111111111111111")},
         [(WORKFLOW, 4, 11, "jobs.ci.uses: pr-pipeline.yml is called at 'main', not a full commit SHA")]),
    Case("CP603", {WORKFLOW: caller(SHA1, "2222222222222222222222222222222222222222")},
         [(WORKFLOW, 6, 22, f"jobs.ci.with.ci-policy-ref: '2222222222222222222222222222222222222222' differs from "
                            f"the ref pr-pipeline.yml is called at ('{SHA1}')")]),
    Case("CP604", {WORKFLOW: caller(SHA1, SHA1) + "      cadance: nightly\n"},
         [(WORKFLOW, 7, 16, "jobs.ci.with.cadance: pr-pipeline.yml has no input 'cadance' (inputs: ci-policy-ref, "
                            "ci-policy-repository, pull-request, cadence, python, concurrency-group)")]),
    Case("CP605", {WORKFLOW: caller(SHA1, SHA1), A: GATE + CUDA + 'register_cuda_ci(60, "gpu-a", labels=["fsdp"])\n'
                   'register_ci_gate(metric_key="train/grad_norm")\n' + MAIN_BLOCK},
         [(WORKFLOW, 3, 3, "jobs.ci.secrets.metrics-store-read-url: missing; the checkout declares metric gates and "
                           "gates read their baselines from it")]),
    Case("CP606", {WORKFLOW: stage_jobs(("cpu", "ubuntu-latest"), ("gpu-a", "[self-hosted, h200]"))},
         [(CONFIG_PATH, 9, None, f"stage gpu-b has no job running `ci-policy run --stage gpu-b` in {WORKFLOW}")]),
    Case("CP607", {WORKFLOW: stage_jobs(("cpu", "ubuntu-latest"), ("gpu-a", "[self-hosted, h200]"),
                                        ("gpu-b", "[self-hosted, h200]"), ("gpu-c", "[self-hosted, h200]"))},
         [(WORKFLOW, 18, 14, "jobs.gpu-c: `ci-policy run --stage gpu-c` names no configured stage (configured: cpu, "
                             "gpu-a, gpu-b)")]),
    Case("CP608", {WORKFLOW: stage_jobs(("cpu", "ubuntu-latest"), ("gpu-a", "[self-hosted, h100]"),
                                        ("gpu-b", "[self-hosted, h200]"))},
         [(WORKFLOW, 8, 14, "jobs.gpu-a.runs-on: [self-hosted, h100] does not match stage gpu-a's runs_on [h200]")]),
    Case("CP609", {WORKFLOW: caller(SHA1, SHA1).replace("pr-pipeline.yml", "tune.yml")},
         [(WORKFLOW, 4, 11, "jobs.ci.with.workflow: missing; tune.yml requires it")]),
    Case("CP610", {WORKFLOW: caller(SHA1, SHA1).replace(
        "    with:", "    permissions: {contents: read, packages: read, pull-requests: read}\n    with:")},
         [(WORKFLOW, 3, 3, "jobs.ci.permissions: pr-pipeline.yml's job plan requests statuses: read, but the job "
                           "grants statuses: none; GitHub refuses to start the run (a called workflow's jobs can only "
                           "reduce the caller job's permissions, never elevate them)")]),
    Case("CP906", {A: cuda('register_cuda_ci(60, "gpu-a", labels=["fsdp"])  # ci-policy: ignore[CP201]')},
         [(A, 3, 49, "`# ci-policy: ignore[CP201]` suppresses nothing here")]),
    Case("CP905", {A: cuda('register_cuda_ci(60, "gpu-a", labels=["fsdp"], disabled="flaky on driver 580")')},
         [(A, 3, 1, "register_cuda_ci for suite gpu-a is disabled: flaky on driver 580")]),
    Case("CP907", {}, [(CONFIG_PATH, 10, None, "pull_request.require_labels: gate label 'run-ci-fsdq' is one edit "
                                               "from 'run-ci-fsdp'")],
         config=SMALL_CONFIG + "pull_request: {require_labels: [run-ci-fsdq]}\n"),
    Case("CP908", {}, [(CONFIG_PATH, 8, None, "runs_on of 2 stages is still the placeholder 'TODO-runner': gpu-a, "
                                              "gpu-b")],
         config=SMALL_CONFIG.replace("runs_on: [h200]", "runs_on: [TODO-runner]")),
    Case("CP909", {}, [(CONFIG_PATH, 12, None, "quarantine[0].until: the quarantine of tests/e2e/test_ok.py ends on "
                                               "2026-01-15, in 7 day(s) (within 7)")],
         config=SMALL_CONFIG + QUARANTINE.format(file="tests/e2e/test_ok.py", until="2026-01-15"),
         today=datetime.date(2026, 1, 8)),
]
CASES_BY_CODE = {case.code: case for case in CASES}


def own_codes() -> list[str]:
    return sorted(code for code in CODES if not code.startswith("CP1"))


def lint_codes() -> list[str]:
    """The codes `lint` emits: all but the test history's (CP7xx), which `report` raises
    (`test_the_history_codes_are_the_reports`)."""
    return [code for code in own_codes() if not code.startswith("CP7")]


def checkout(root: Path, case: Case) -> Path:
    (root / ".github").mkdir(parents=True)
    (root / "tests" / "unit").mkdir(parents=True)
    (root / ".github" / "ci-policy.yml").write_text(case.config)
    (root / "labels.py").write_text(case.labels)
    for rel, text in {**OK, **case.files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
    if case.setup is not None:
        case.setup(root)
    return root


def test_the_baseline_checkout_is_clean(tmp_path):
    report = lint(checkout(tmp_path / "repo", Case("", {}, [])))
    assert (report.errors, report.warnings) == ((), ())


def test_the_history_codes_are_the_reports():
    """CP701 and CP702 are raised by `report`, never by lint; tests/cli/test_report.py triggers each
    (test_a_store_from_before_the_test_history_is_cp701, test_a_bad_since_is_cp702) exactly."""
    assert [code for code in own_codes() if code.startswith("CP7")] == ["CP701", "CP702"]


def test_every_code_has_a_case():
    assert sorted(CASES_BY_CODE) == lint_codes()
    assert len(CASES_BY_CODE) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.code for case in CASES])
def test_each_code_is_emitted_exactly_as_documented(tmp_path, case):
    root = checkout(tmp_path / "repo", case)
    report = lint(root, today=case.today)
    expected = case.expected_at(root) if case.expected_at is not None else case.expected
    severity = "warning" if case.code.startswith("CP9") else "error"
    found = [d for d in report.errors + report.warnings if d.code == case.code]
    assert [(d.path, d.line, d.col, d.message) for d in found] == expected
    assert {d.severity for d in found} == {severity}
    assert all(d.name == CODES[case.code][0] for d in found)


# -- the registry itself ---------------------------------------------------------------------------

RANGES = {"CP2": "markers and registrations", "CP3": "the label registry",
          "CP4": "discovery and checkout reads", "CP5": "gates", "CP6": "workflows", "CP7": "the test history",
          "CP9": "warnings"}


def test_codes_are_well_formed_and_names_unique():
    for code, (name, example) in CODES.items():
        assert re.fullmatch(r"CP[1-79]\d\d", code), code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name), name
        assert example and "\n" not in example
    names = [name for name, _ in CODES.values()]
    assert len(names) == len(set(names))
    assert {code[:3] for code in own_codes()} == set(RANGES)


# -- the documentation lists every code -------------------------------------------------------------

INDEX_ROW = re.compile(r"^\| \[(CP\d{3})\]\((CP\d{3})\.md\) \| `([a-z0-9-]+)` \| (.*) \|$")


def documented_codes() -> dict[str, tuple[str, str]]:
    """Rows of every `| code | name | example message |` table of the diagnostics index
    (docs/reference/diagnostics/index.md), each linking to the code's own page."""
    rows: dict[str, tuple[str, str]] = {}
    for line in (ROOT / "docs" / "reference" / "diagnostics" / "index.md").read_text().splitlines():
        match = INDEX_ROW.match(line)
        if match:
            code, page, name, example = match.groups()
            assert page == code, f"{code} links to {page}.md"
            assert code not in rows, f"{code} is listed twice in the diagnostics index"
            rows[code] = (name, example.replace("\\|", "|"))
    return rows


def test_the_docs_list_every_code_with_its_name_and_example():
    import ci_policy.config  # noqa: F401  (configuration codes, once they exist, are included on import)

    assert documented_codes() == {code: (name, example) for code, (name, example) in CODES.items()}
