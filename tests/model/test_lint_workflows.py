"""`ci-policy lint` reads the checkout's GitHub Actions workflows as data (CP6xx).

Each test lays fixture workflows of tests/data/workflows into a generated checkout and
asserts the exact diagnostics: file, line, column, code and message. The workflows are
only parsed (nothing is executed); a symlink is refused like any checkout read; the
`lint.workflows` key points elsewhere or turns the reading off.
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

import pytest
import yaml
from helpers import EXAMPLE_REPO, ROOT
from model.test_diagnostics import SMALL_CONFIG

from ci_policy.config.load import load_config
from ci_policy.config.top import parse_config
from ci_policy.errors import InputErrors
from ci_policy.model.lint import lint
from ci_policy.model.workflows import GRANTS, INHERITING, INPUTS, REQUIRED_INPUTS, needed_grants
from ci_policy.read.workflows import read_workflows

FIXTURES = ROOT / "tests" / "data" / "workflows"
# The diagnostics tests' two-stage configuration: a CPU stage and two CUDA stages on [h200].
CONFIG = SMALL_CONFIG
MAIN = '\nif __name__ == "__main__":\n    main()\n'
FILES = {
    "tests/unit/test_ok.py": "def test_ok():\n    pass\n",
    "tests/e2e/test_a.py": 'from ci_policy import register_ci_gate, register_cuda_ci\n\n'
                           'register_cuda_ci(60, "gpu-a", labels=["fsdp"])\n'
                           'register_ci_gate(metric_key="train/grad_norm")\n' + MAIN,
    "tests/e2e/test_b.py": 'from ci_policy import register_cuda_ci\n\nregister_cuda_ci(60, "gpu-b", labels=["fsdp"])\n'
                           + MAIN,
}
LABELS = 'KNOWN_LABELS = {"fsdp": "FSDP backend"}\n'
WF = ".github/workflows"


_names = itertools.count()


def checkout(make_repo, *workflows: str, config: str = CONFIG, directory: str = WF) -> Path:
    repo = make_repo(FILES, config=config, name=f"repo{next(_names)}")
    (repo / "labels.py").write_text(LABELS)
    (repo / directory).mkdir(parents=True, exist_ok=True)
    for name in workflows:
        shutil.copy(FIXTURES / name, repo / directory / name)
    return repo


def found(repo: Path) -> list[tuple]:
    report = lint(repo)
    return [(d.path, d.line, d.col, d.code, d.message) for d in report.errors + report.warnings]


def test_a_pinned_caller_is_clean(make_repo):
    assert found(checkout(make_repo, "caller-pinned.yml")) == []


REFUSED = ("GitHub refuses to start the run (a called workflow's jobs can only reduce the caller job's "
           "permissions, never elevate them)")


def test_a_drifted_caller(make_repo):
    path = f"{WF}/caller-drift.yml"
    grant = "but the job sets none and the workflow's (line 8) grant"
    assert found(checkout(make_repo, "caller-drift.yml")) == [
        (path, 10, 3, "CP605", "jobs.ci.secrets.metrics-store-read-url: missing; the checkout declares metric gates "
                               "and gates read their baselines from it"),
        (path, 10, 3, "CP605", "jobs.ci.secrets.metrics-store-url: missing; the checkout declares metric gates and "
                               "its schedule runs write the baselines"),
        (path, 11, 11, "CP602", "jobs.ci.uses: pr-pipeline.yml is called at 'main', not a full commit SHA"),
        (path, 14, 22, "CP603", "jobs.ci.with.ci-policy-ref: '2222222222222222222222222222222222222222' differs "
                                "from the ref pr-pipeline.yml is called at ('main')"),
        (path, 15, 16, "CP604", "jobs.ci.with.cadance: pr-pipeline.yml has no input 'cadance' (inputs: "
                                "ci-policy-ref, ci-policy-repository, pull-request, cadence, python, "
                                "concurrency-group)"),
        (path, 16, 3, "CP610", f"jobs.fork-ci.permissions: pr-pipeline.yml's job plan requests contents: read, "
                               f"{grant} contents: none; {REFUSED}"),
        (path, 16, 3, "CP610", f"jobs.fork-ci.permissions: pr-pipeline.yml's job plan requests pull-requests: read, "
                               f"{grant} pull-requests: none; {REFUSED}"),
        (path, 16, 3, "CP610", f"jobs.fork-ci.permissions: pr-pipeline.yml's job plan requests statuses: read, "
                               f"{grant} statuses: none; {REFUSED}"),
        (path, 16, 3, "CP610", f"jobs.fork-ci.permissions: pr-pipeline.yml's job stages-0 requests packages: read, "
                               f"{grant} packages: none; {REFUSED}"),
        (path, 17, 11, "CP603", "jobs.fork-ci.with.ci-policy-ref: missing; pr-pipeline.yml needs the commit it was "
                                "called at"),
        (path, 20, 11, "CP603", "jobs.tune.with.ci-policy-ref: missing; tune.yml needs the commit it was called at"),
    ]


REUSABLE = sorted(p for p in (ROOT / ".github" / "workflows").glob("*.yml") if p.stem in INPUTS)


@pytest.mark.parametrize("path", REUSABLE, ids=[p.name for p in REUSABLE])
def test_the_input_tables_are_the_reusable_workflows_inputs(path):
    doc = yaml.safe_load(path.read_text())
    inputs = doc[True]["workflow_call"]["inputs"]
    assert INPUTS[path.stem] == tuple(inputs)
    assert REQUIRED_INPUTS[path.stem] == tuple(k for k, v in inputs.items() if v.get("required"))


def test_the_tables_cover_the_same_workflows():
    assert sorted(INPUTS) == sorted(REQUIRED_INPUTS)
    assert {"pr-pipeline", "tune"} <= {p.stem for p in REUSABLE}


def test_store_secrets_are_needed_only_when_gates_are_declared(make_repo):
    repo = checkout(make_repo, "caller-drift.yml")
    (repo / "tests/e2e/test_a.py").write_text(FILES["tests/e2e/test_a.py"].replace(
        'register_ci_gate(metric_key="train/grad_norm")\n', "").replace("register_ci_gate, ", ""))
    assert [code for _p, _l, _c, code, _m in found(repo)] == ["CP602", "CP603", "CP604", *["CP610"] * 4, "CP603",
                                                               "CP603"]


def test_hand_written_stage_jobs(make_repo):
    path = f"{WF}/hand-written.yml"
    assert found(checkout(make_repo, "hand-written.yml")) == [
        (".github/ci-policy.yml", 9, None, "CP606",
         f"stage gpu-b has no job running `ci-policy run --stage gpu-b` in {path}"),
        (path, 11, 14, "CP608", "jobs.gpu-a.runs-on: [self-hosted, h100] does not match stage gpu-a's runs_on "
                                "[h200]"),
        (path, 27, 14, "CP607", "jobs.gpu-c: `ci-policy run --stage gpu-c` names no configured stage (configured: "
                                "cpu, gpu-a, gpu-b)"),
    ]
    report = lint(checkout(make_repo, "hand-written.yml"))
    [missing] = [d for d in report.errors if d.code == "CP606"]
    assert missing.hint == ("add a job for it (runs-on: [self-hosted, h200]), call the reusable pr-pipeline.yml, "
                            "or mark the stage external")


def test_stage_runs_are_found_in_every_script_form(make_repo):
    repo = checkout(make_repo, "hand-written.yml")
    workflows, problems = read_workflows(repo, WF)
    assert problems == []
    [workflow] = workflows
    assert workflow.triggers == ("pull_request",)
    assert [(j.id, j.runs_on, [(r.stage, r.line, r.col) for r in j.stage_runs]) for j in workflow.jobs] == [
        ("cpu", ("ubuntu-latest",), [("cpu", 9, 14)]),
        ("gpu-a", ("self-hosted", "h100"), [("gpu-a", 15, None)]),
        ("gpu-a-again", ("h200", "self-hosted"), [("gpu-a", 23, None)]),
        ("gpu-c", ("self-hosted", "h200"), [("gpu-c", 27, 14)]),
    ]


def test_a_dynamic_stage_or_runs_on_is_not_compared(make_repo):
    repo = checkout(make_repo)
    (repo / WF / "matrix.yml").write_text(
        "on: pull_request\njobs:\n  stage:\n    runs-on: ${{ matrix.runs_on }}\n    steps:\n"
        '      - run: ci-policy run --stage "${{ matrix.stage }}"\n'
        "  gpu-a:\n    runs-on: ${{ fromJSON(inputs.runs_on) }}\n    steps:\n"
        "      - run: ci-policy run --stage gpu-a\n")
    assert found(repo) == []


def test_an_external_stage_needs_no_job(make_repo):
    config = CONFIG.replace("{name: gpu-b, backend: cuda, runs_on: [h200]}",
                            "{name: gpu-b, backend: cuda, external: true}")
    repo = checkout(make_repo, "hand-written.yml", config=config)
    assert [code for _p, _l, _c, code, _m in found(repo)] == ["CP608", "CP607"]


def test_invalid_yaml_and_symlinks_are_refused(make_repo, tmp_path):
    repo = checkout(make_repo, "broken.yml")
    outside = tmp_path / "outside.yml"
    outside.write_text("on: push\n")
    os.symlink(outside, repo / WF / "linked.yml")
    assert found(repo) == [
        (f"{WF}/broken.yml", 2, 5, "CP601", f"workflow {WF}/broken.yml is not valid YAML: expected ',' or ']', "
                                            "but got ':'"),
        (f"{WF}/linked.yml", None, None, "CP401", f"workflow {WF}/linked.yml is a symlink; ci-policy refuses "
                                                  "symlinks in a checkout"),
    ]
    repo = checkout(make_repo)
    shutil.rmtree(repo / WF)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(FIXTURES / "hand-written.yml", elsewhere / "hand-written.yml")
    os.symlink(elsewhere, repo / WF)
    assert found(repo) == [(WF, None, None, "CP401", f"workflows directory {WF} is a symlink; ci-policy refuses "
                                                     "symlinks in a checkout")]


def test_lint_workflows_points_elsewhere_or_turns_the_check_off(make_repo):
    repo = checkout(make_repo, "hand-written.yml", config=CONFIG + "lint: {workflows: ci/workflows}\n",
                    directory="ci/workflows")
    assert [(p, code) for p, _l, _c, code, _m in found(repo)] == [
        (".github/ci-policy.yml", "CP606"), ("ci/workflows/hand-written.yml", "CP608"),
        ("ci/workflows/hand-written.yml", "CP607")]
    repo = checkout(make_repo, "hand-written.yml", "broken.yml", config=CONFIG + "lint:\n  workflows: false\n")
    assert found(repo) == []
    # A missing directory holds no workflow.
    repo = checkout(make_repo, config=CONFIG + "lint: {workflows: nowhere}\n")
    assert found(repo) == []


def test_lint_workflows_accepts_a_directory_or_false(make_repo):
    repo = checkout(make_repo, config=CONFIG + "lint: {workflows: true}\n")
    with pytest.raises(InputErrors) as caught:
        load_config(repo)
    assert [(d.line, d.code, d.message) for d in caught.value.errors] == [
        (10, "CP105", "lint.workflows: expected a repo-relative directory or false, got true")]
    repo = checkout(make_repo, config=CONFIG + "lint: {workflows: ../outside}\n")
    with pytest.raises(InputErrors) as caught:
        load_config(repo)
    assert [(d.line, d.message) for d in caught.value.errors] == [
        (10, "lint.workflows: '../outside' leaves the repository ('..' is not allowed)")]


def test_lint_ignore_accepts_workflow_codes(make_repo):
    repo = checkout(make_repo, "hand-written.yml",
                    config=CONFIG + "lint:\n  ignore:\n    - {paths: ['.github/workflows/**'], codes: [CP607, "
                                    "stage-runs-on-mismatch]}\n")
    report = lint(repo)
    assert [d.code for d in report.errors] == ["CP606"]
    assert [d.code for d in report.suppressed] == ["CP608", "CP607"]



# -- the caller's grants (CP610) ---------------------------------------------------------------------

def permissions_of(path: Path) -> dict[str, dict | None]:
    """job id -> its `permissions:` (None when it declares none), in file order."""
    return {job_id: job.get("permissions") for job_id, job in load_workflow(path)["jobs"].items()}


def load_workflow(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", REUSABLE, ids=lambda p: p.name)
def test_the_grant_table_is_the_reusable_workflows_job_permissions(path):
    declared = permissions_of(path)
    assert GRANTS[path.stem] == tuple((job_id, tuple(grants.items())) for job_id, grants in declared.items()
                                      if grants is not None)
    # A job without its own grants runs with the caller's, which a top-level `permissions:` would replace.
    inheriting = tuple(job_id for job_id, grants in declared.items() if grants is None)
    assert tuple(INHERITING.get(path.stem, {})) == inheriting
    assert ("permissions" in load_workflow(path)) == (path.stem not in INHERITING)


def test_the_grant_table_covers_every_reusable_workflow():
    assert sorted(GRANTS) == sorted(INPUTS)


def diagnostics(repo: Path) -> list[tuple]:
    report = lint(repo)
    return [(d.path, d.line, d.code, d.message, d.hint) for d in report.errors + report.warnings if d.code == "CP610"]


def test_one_caller_file_with_a_job_per_reusable_workflow(make_repo):
    path = f"{WF}/caller-grants.yml"
    workflow = "but the job sets none and the workflow's (line 11) grant"
    pipeline = ("give jobs.pipeline the permissions: {contents: read, packages: read, pull-requests: read, "
                "statuses: write}")
    gateway = ("give jobs.gateway the permissions: {actions: write, contents: read, issues: write, "
               "pull-requests: write, statuses: write}")
    rerun = ("give jobs.rerun the permissions: {actions: read, attestations: read, checks: read, contents: read, "
             "deployments: read, discussions: read, issues: read, models: read, packages: read, "
             "pages: read, pull-requests: read, repository-projects: read, security-events: read, statuses: write}")
    assert diagnostics(checkout(make_repo, "caller-grants.yml")) == [
        (path, 14, "CP610", "jobs.pipeline.permissions: pr-pipeline.yml's job report runs with the caller job's "
                            "grants and needs statuses: write to report ci-policy/result on the PR head of a run the "
                            "comment gateway dispatched, but the job grants statuses: none; that report would fail",
         pipeline),
        (path, 14, "CP610", f"jobs.pipeline.permissions: pr-pipeline.yml's job stages-0 requests packages: read, "
                            f"but the job grants packages: none; {REFUSED}", pipeline),
        (path, 21, "CP610", f"jobs.gateway.permissions: comment-gateway.yml's job approve requests statuses: write, "
                            f"{workflow} statuses: none; {REFUSED}", gateway),
        (path, 21, "CP610", f"jobs.gateway.permissions: comment-gateway.yml's job labels requests actions: write, "
                            f"{workflow} actions: none; {REFUSED}", gateway),
        (path, 21, "CP610", f"jobs.gateway.permissions: comment-gateway.yml's job labels requests "
                            f"pull-requests: write, {workflow} pull-requests: none; {REFUSED}", gateway),
        # tune's write-all grants everything; read-all misses the rerun's status writes.
        (path, 31, "CP610", f"jobs.rerun.permissions: rerun-test.yml's job resolve requests statuses: write, but the "
                            f"job grants statuses: read; {REFUSED}", rerun),
    ]


def test_without_permissions_anywhere_the_restricted_default_is_assumed(make_repo):
    path = f"{WF}/caller-default.yml"
    default = ("but the job and the workflow set none, and the repository's default (taken as GitHub's restricted "
               "one: contents and packages read) grants")
    hint = ("give jobs.tune the permissions: {actions: read, contents: write, issues: write, packages: read, "
            "pull-requests: write}")
    assert diagnostics(checkout(make_repo, "caller-default.yml")) == [
        (path, 7, "CP610", f"jobs.tune.permissions: tune.yml's job report requests issues: write, {default} issues: "
                           f"none; {REFUSED}", hint),
        (path, 7, "CP610", f"jobs.tune.permissions: tune.yml's job tune requests actions: read, {default} actions: "
                           f"none; {REFUSED}", hint),
        (path, 7, "CP610", f"jobs.tune.permissions: tune.yml's job tune requests contents: write, {default} contents: "
                           f"read; {REFUSED}", hint),
        (path, 7, "CP610", f"jobs.tune.permissions: tune.yml's job tune requests pull-requests: write, {default} "
                           f"pull-requests: none; {REFUSED}", hint),
    ]


IMAGES = "images:\n  cuda: {{repository: {repository}, dockerfile: docker/Dockerfile}}\n"


def test_packages_write_is_needed_only_for_images_pushed_to_ghcr(make_repo):
    path = f"{WF}/caller-pinned.yml"
    assert diagnostics(checkout(make_repo, "caller-pinned.yml")) == []
    ghcr = CONFIG + IMAGES.format(repository="ghcr.io/org/ci-cuda")
    assert diagnostics(checkout(make_repo, "caller-pinned.yml", config=ghcr)) == [
        (path, 9, "CP610", "jobs.ci.permissions: pr-pipeline.yml's job images runs with the caller job's grants and "
                           "needs packages: write for the images it pushes to ghcr.io (image_build.registry), but the "
                           "job grants packages: read; the image push would fail",
         "give jobs.ci the permissions: {contents: read, packages: write, pull-requests: read, statuses: write}"),
    ]


def test_another_registry_needs_no_packages_grant_but_the_registry_secrets(make_repo):
    path = f"{WF}/caller-pinned.yml"
    quay = CONFIG + "image_build: {registry: quay.io}\n" + IMAGES.format(repository="quay.io/org/ci-cuda")
    repo = checkout(make_repo, "caller-pinned.yml", config=quay)
    report = lint(repo)
    assert [(d.path, d.line, d.col, d.code, d.message, d.hint) for d in report.errors] == [
        (path, 9, 3, "CP605", f"jobs.ci.secrets.{secret}: missing; the images are pushed to and pulled from quay.io "
                              "(image_build.registry), which the pipeline logs in to with it",
         f"pass secrets: {{{secret}: ${{{{ secrets.YOUR_SECRET }}}}}} (see docs/adopting/pr-pipeline.md)")
        for secret in ("registry-password", "registry-username")]
    text = (repo / path).read_text()
    (repo / path).write_text(text + "      registry-username: ${{ secrets.QUAY_USER }}\n"
                                    "      registry-password: ${{ secrets.QUAY_TOKEN }}\n")
    assert found(repo) == []


@pytest.mark.parametrize("images, packages", [
    ("", ("read", "stages-0")),  # no image: the image job never runs, nothing of it is asked
    ("image_build: {registry: quay.io}\n" + IMAGES.format(repository="quay.io/org/ci-cuda"), ("read", "stages-0")),
    (IMAGES.format(repository="ghcr.io/org/ci-cuda"), ("write", "images")),
])
def test_the_pipeline_needs_packages_write_only_to_push_to_ghcr(images, packages):
    config = parse_config(CONFIG + images)
    assert needed_grants(config, "pr-pipeline") == {
        "contents": ("read", "plan"), "pull-requests": ("read", "plan"), "statuses": ("read", "plan"),
        "packages": packages}
    # With the comment gateway, which may dispatch the pipeline: its report job writes a status.
    assert needed_grants(config, "pr-pipeline", gateway=True) == {
        "contents": ("read", "plan"), "pull-requests": ("read", "plan"), "statuses": ("write", "report"),
        "packages": packages}
    assert needed_grants(config, "tune") == {"actions": ("read", "tune"), "contents": ("write", "tune"),
                                             "pull-requests": ("write", "tune"), "issues": ("write", "report")}


def test_without_the_comment_gateway_the_pipeline_asks_no_statuses_write(make_repo):
    """Only the gateway dispatches the pipeline, the one run whose report job writes a status."""
    assert diagnostics(checkout(make_repo, "caller-no-gateway.yml")) == []
    # The same caller beside a gateway's: the dispatched runs' report needs statuses: write.
    repo = checkout(make_repo, "caller-no-gateway.yml", "caller-grants.yml")
    assert [(d[0], d[3].split(",")[0]) for d in diagnostics(repo) if d[0].endswith("caller-no-gateway.yml")] == [
        (f"{WF}/caller-no-gateway.yml", "jobs.pipeline.permissions: pr-pipeline.yml's job report runs with the "
                                        "caller job's grants and needs statuses: write to report ci-policy/result "
                                        "on the PR head of a run the comment gateway dispatched")]


EXAMPLE_CALLERS = sorted((EXAMPLE_REPO / WF).glob("*.yml"))


def reusable_calls(path: Path) -> list[tuple[str, str, dict]]:
    """(job id, reusable workflow name, granted permissions) of each job calling one of ours."""
    calls = []
    for job_id, job in load_workflow(path)["jobs"].items():
        name = job.get("uses", "").partition("@")[0].rpartition("/")[2].removesuffix(".yml")
        if name in GRANTS:
            calls.append((job_id, name, job["permissions"]))
    return calls


def test_the_example_callers_grant_exactly_what_lint_asks():
    config = load_config(EXAMPLE_REPO)
    calls = [(path.name, *call) for path in EXAMPLE_CALLERS for call in reusable_calls(path)]
    assert sorted(name for _f, _j, name, _g in calls) == sorted(GRANTS)
    for _file, _job, name, granted in calls:  # the example calls the comment gateway
        assert granted == {scope: level for scope, (level, _callee) in needed_grants(config, name, True).items()}


def test_an_example_caller_missing_a_grant_is_located_with_the_block_to_write(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE_REPO, repo)
    caller = repo / WF / "ci-policy.yml"
    text = caller.read_text(encoding="utf-8")
    line = next(line for line in text.splitlines(keepends=True) if line.strip().startswith("packages: write"))
    caller.write_text(text.replace(line, ""), encoding="utf-8")
    job_line = text.splitlines().index("  pipeline:") + 1
    assert diagnostics(repo) == [
        (f"{WF}/ci-policy.yml", job_line, "CP610", "jobs.pipeline.permissions: pr-pipeline.yml's job images runs with "
         "the caller job's grants and needs packages: write for the images it pushes to ghcr.io "
         "(image_build.registry), but the job grants packages: none; the image push would fail",
         "give jobs.pipeline the permissions: {contents: read, packages: write, pull-requests: read, statuses: write}"),
    ]


KEYED_CONFIG = SMALL_CONFIG.replace("  - {name: gpu-b, backend: cuda, runs_on: [h200]}\n", (
    "  - {name: gpu-a, backend: rocm, runs_on: [mi325]}\n"
    "  - {name: gpu-b, backend: cuda, runs_on: [h200], variants: [{name: v1}, {name: v2, runs_on: [b200]}]}\n"))
KEYED_JOBS = """\
name: keyed
on: [pull_request]
permissions: {}
jobs:
  cpu:
    runs-on: ubuntu-latest
    steps:
      - run: ci-policy run --stage cpu
  cuda:
    runs-on: [self-hosted, h200]
    steps:
      - run: ci-policy run --stage gpu-a@cuda
  rocm:
    runs-on: [self-hosted, mi300]
    steps:
      - run: ci-policy run --stage gpu-a@rocm
  bare:
    runs-on: [self-hosted, h200]
    steps:
      - run: ci-policy run --stage gpu-a
  v1:
    runs-on: [self-hosted, h200]
    steps:
      - run: ci-policy run --stage gpu-b+v1
"""


def test_hand_written_jobs_name_a_shared_name_s_stages_and_variants_by_their_keys(make_repo):
    repo = checkout(make_repo, config=KEYED_CONFIG)
    (repo / WF / "keyed.yml").write_text(KEYED_JOBS)
    path = f"{WF}/keyed.yml"
    assert [f for f in found(repo) if f[3].startswith("CP6")] == [
        (".github/ci-policy.yml", 10, None, "CP606",
         f"stage gpu-b+v2 has no job running `ci-policy run --stage gpu-b+v2` in {path}"),
        (path, 14, 14, "CP608", "jobs.rocm.runs-on: [self-hosted, mi300] does not match stage gpu-a@rocm's runs_on "
                                "[mi325]"),
        (path, 20, 14, "CP607", "jobs.bare: `ci-policy run --stage gpu-a` names no configured stage (configured: "
                                "cpu, gpu-a@cuda, gpu-a@rocm, gpu-b+v1, gpu-b+v2)"),
    ]
