"""The JSON Schemas ci-policy ships: generated, unchanged since, and every real output validates.

- The files of `ci_policy/schemas/` are exactly what `ci_policy.render.schemas` generates
  (`python -m ci_policy.render.schemas --update` rewrites them).
- Every golden JSON output under tests/data validates against its schema; so do the outputs of
  each subcommand run here on the example repository and the fixture repositories, and the timing
  records of a real `ci-policy run`. The JSON tests of `tune`, `comment`, `pull-request` and
  `report-status` validate their outputs where they run them (tests/schema_check.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli.partial import partial_repo
from helpers import EXAMPLE_REPO, ROOT, run_cli
from jsonschema import Draft202012Validator
from schema_check import assert_valid, schema_errors

from ci_policy.read.timings import parse_line
from ci_policy.render import schemas
from ci_policy.render.schemas import NAMES, SCHEMA_DIR, document_text, file_name, schema

GOLDEN = ROOT / "tests" / "data" / "golden"
# golden file -> its schema
GOLDENS = {
    "cli/lint/example.json": "lint",
    "cli/plan/explain-not-a-test-file.json": "explain",
    "cli/plan/explain-not-selected.json": "explain",
    "cli/plan/explain-selected.json": "explain",
    "cli/plan/partial.json": "plan",
    "cli/plan/quickstart.json": "plan",
    "cli/registry/broken.json": "registry",
    "cli/registry/example.json": "registry",
    "cli/report/history.json": "report",
    "cli/tune/ci-estimates.json": "estimates",
    "sglang/registry.json": "registry",
}
# Golden JSON files that are no output of today's ci-policy: plans recorded before the stage-policy
# keys (test_compat.py compares their decisions), and a stage matrix (a GitHub step output).
NOT_OUTPUTS = {"plan/compat.json", "plan/jobs-example.json"}


def test_the_shipped_files_are_the_generated_schemas():
    assert sorted(p.name for p in SCHEMA_DIR.iterdir()) == sorted(file_name(name) for name in NAMES)
    for name in NAMES:
        assert (SCHEMA_DIR / file_name(name)).read_text(encoding="utf-8") == document_text(name), (
            f"{file_name(name)} differs from its schema; regenerate with: python -m ci_policy.render.schemas --update")


def test_update_writes_every_file_and_the_plain_command_lists_the_names(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(schemas, "SCHEMA_DIR", tmp_path / "schemas")
    assert schemas.main(["--update"]) == 0
    for name in NAMES:
        assert (tmp_path / "schemas" / file_name(name)).read_bytes() == (SCHEMA_DIR / file_name(name)).read_bytes()
    assert schemas.main([]) == 0
    assert capsys.readouterr().out == "".join(f"{name}\n" for name in NAMES)


def test_the_names_begin_with_the_five_of_the_issue():
    assert NAMES == ("config", "plan", "registry", "lint", "timings", "explain", "list", "init", "result", "file-run",
                     "tune", "estimates", "comment", "pull-request", "report-status", "history",
                     "report")


@pytest.mark.parametrize("name", NAMES)
def test_every_schema_is_a_draft_2020_12_schema_with_its_id(name):
    doc = schema(name)
    Draft202012Validator.check_schema(doc)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert doc["$id"] == f"https://raw.githubusercontent.com/ci-policy/ci-policy/main/ci_policy/schemas/{name}.schema.json"
    assert doc["title"] and doc["description"]
    assert document_text(name).endswith("}\n") and json.loads(document_text(name)) == doc


def test_an_output_with_an_unknown_or_a_missing_field_is_refused():
    doc = json.loads((GOLDEN / "cli/registry/example.json").read_text())
    doc["extra"] = 1
    del doc["registrations"][0]["marker"]
    doc["registrations"][1]["est_time"] = -1
    assert schema_errors("registry", doc) == [
        ("$", "Additional properties are not allowed ('extra' was unexpected)"),
        ("$.registrations[0]", "'marker' is a required property"),
        ("$.registrations[1].est_time", "-1 is less than the minimum of 0"),
    ]


def test_every_golden_json_output_validates():
    found = {p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*.json")}
    assert found == set(GOLDENS) | NOT_OUTPUTS
    for rel, name in GOLDENS.items():
        assert schema_errors(name, (GOLDEN / rel).read_text(encoding="utf-8")) == [], rel


TIMINGS = sorted((ROOT / "tests" / "data").glob("tuning*/**/*.jsonl"))
# Lines of timings_bad.jsonl the reader refuses for what is not JSON: NaN, a key given twice.
NOT_JSON = {("timings_bad.jsonl", 8), ("timings_bad.jsonl", 10)}


@pytest.mark.parametrize("path", TIMINGS, ids=lambda p: p.relative_to(ROOT / "tests" / "data").as_posix())
def test_a_timing_record_validates_exactly_when_tune_reads_it(path):
    accepted = refused = 0
    for lineno, raw in enumerate(path.read_bytes().split(b"\n")[:-1], start=1):
        if not raw.strip() or (path.name, lineno) in NOT_JSON:
            continue
        read = parse_line(raw, lineno, str(path), []) is not None
        try:
            valid = schema_errors("timings", raw.decode("utf-8")) == []
        except ValueError:  # not JSON (or not UTF-8)
            valid = False
        assert valid == read, (path.name, lineno)
        accepted, refused = accepted + read, refused + (not read)
    assert accepted + refused > 0
    if path.name == "timings_bad.jsonl":
        assert (accepted, refused) == (1, 9)


QUICKSTART = ["--event", "pull_request", "--labels-json", '["run-ci-sglang", "documentation"]',
              "--diff", "examples/pr-42.diff"]
SFT = "tests/e2e/test_megatron_sft.py"

# (argv run from the repository root, its exit code, the schema of its output)
EXAMPLE_OUTPUTS = {
    "plan quickstart": (["plan", "--repo", "examples/gpu-repo", *QUICKSTART, "--head-sha", "a" * 40], "plan"),
    "plan weekly": (["plan", "--repo", "examples/gpu-repo", "--event", "schedule", "--schedule", "0 15 * * 6"], "plan"),
    "plan push": (["plan", "--repo", "examples/gpu-repo", "--event", "push"], "plan"),
    "plan untrusted": (["plan", "--repo", "examples/gpu-repo", *QUICKSTART, "--trust", "untrusted"], "plan"),
    "explain": (["plan", "--repo", "examples/gpu-repo", *QUICKSTART, "--explain", SFT], "explain"),
    "registry": (["registry", "--repo", "examples/gpu-repo"], "registry"),
    "lint": (["lint", "--repo", "examples/gpu-repo"], "lint"),
    "list": (["list", "--repo", "examples/gpu-repo", *QUICKSTART, "--stage", "stage-b-1-gpu-h200", "--shard", "0"],
             "list"),
    "list skipped": (["list", "--repo", "examples/gpu-repo", *QUICKSTART, "--stage", "stage-c-4-gpu-mi350"], "list"),
    "file-run": (["file-run", "--repo", "examples/gpu-repo", "--file", SFT], "file-run"),
    "result": (["result", "--plan-complete", "true", "--needs-json",
                json.dumps({"plan": {"result": "success", "outputs": {}}, "stages": {"result": "failure"}})],
               "result"),
    "registry sglang": (["registry", "--repo", "tests/data/sglang-repo"], "registry"),
    "plan sglang": (["plan", "--repo", "tests/data/sglang-repo", "--event", "push"], "plan"),
}


@pytest.mark.parametrize("argv, name", EXAMPLE_OUTPUTS.values(), ids=EXAMPLE_OUTPUTS.keys())
def test_the_outputs_on_the_example_and_fixture_repositories_validate(argv, name, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    rc, out, err = run_cli([*argv, "--format", "json"], capsys)
    assert rc in (0, 1), err
    assert_valid(name, out)


def test_the_plan_file_and_each_stage_plan_validate(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    plan_file = tmp_path / "plan.json"
    rc, _out, err = run_cli(["plan", "--repo", "examples/gpu-repo", *QUICKSTART, "--json-out", str(plan_file),
                             "--stage-plans", str(tmp_path / "stages")], capsys)
    assert (rc, err) == (0, "")
    assert_valid("plan", plan_file.read_text(encoding="utf-8"))
    stage_plans = sorted((tmp_path / "stages").iterdir())
    assert len(stage_plans) == len(json.loads(plan_file.read_text(encoding="utf-8"))["stages"]) > 1
    for stage_plan in stage_plans:
        assert_valid("plan", stage_plan.read_text(encoding="utf-8"))


def test_the_outputs_of_a_partial_checkout_validate(make_repo, capsys):
    repo, inputs = partial_repo(make_repo)
    for argv, name in ((["plan", *inputs], "plan"), (["registry"], "registry"), (["lint"], "lint"),
                       (["list", *inputs, "--stage", "gpu-a", "--shard", "0"], "list")):
        rc, out, err = run_cli([*argv, "--repo", str(repo), "--format", "json"], capsys)
        assert rc == 1, (argv, err)
        assert_valid(name, out)
        if name != "lint":
            assert json.loads(out)["plan_complete"] is False


def test_the_plans_of_the_sglang_ci_repository_validate(tmp_path, capsys):
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "tests" / "data" / "sglang-repo", repo)
    shutil.copytree(ROOT / "tests" / "data" / "sglang-ci-repo", repo, dirs_exist_ok=True)
    for event in (["--event", "push"], ["--event", "schedule", "--schedule", "0 */6 * * *"],
                  ["--event", "pull_request", "--label", "run-ci"]):
        rc, out, err = run_cli(["plan", "--repo", str(repo), *event, "--format", "json"], capsys)
        assert rc == 0, err
        assert_valid("plan", out)


def test_init_validates(tmp_path, capsys):
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE_REPO / "tests", repo / "tests")
    rc, out, err = run_cli(["init", "--repo", str(repo), "--format", "json"], capsys)
    assert rc in (0, 1), err
    assert_valid("init", out)
    assert json.loads(out)["written"]


@pytest.mark.slow
def test_the_timing_records_of_a_run_validate(example_repo, tmp_path, capsys):
    timings = tmp_path / "timings.jsonl"
    rc, _out, err = run_cli(["run", "--repo", str(example_repo), "--stage", "stage-a-cpu", "--shard", "0",
                             "--event", "push", "--no-cache", "--timings-out", str(timings)], capsys)
    assert rc == 0, err
    lines = timings.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    for line in lines:
        assert_valid("timings", line)


def test_the_shipped_config_schema_is_the_one_editors_load_from_the_example():
    first = (EXAMPLE_REPO / ".github" / "ci-policy.yml").read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=../../../ci_policy/schemas/config.schema.json"
    assert (EXAMPLE_REPO / ".github" / Path(first.split("=", 1)[1])).resolve() == SCHEMA_DIR / "config.schema.json"


@pytest.mark.slow
def test_check_jsonschema_accepts_every_shipped_schema_with_ecmascript_patterns():
    """Editors and check-jsonschema read `pattern` as ECMAScript: each one compiles as such (regress)."""
    import subprocess
    import sys

    tool = Path(sys.executable).parent / "check-jsonschema"
    proc = subprocess.run([str(tool), "--check-metaschema", "--regex-variant", "default",
                           *sorted(str(p) for p in SCHEMA_DIR.glob("*.schema.json"))],
                          capture_output=True, text=True, check=False, timeout=120)
    assert (proc.returncode, proc.stdout.strip()) == (0, "ok -- validation done"), proc.stdout + proc.stderr


def test_the_outputs_of_a_checkout_with_a_command_stage_validate(make_repo, tmp_path, capsys):
    config = ("version: 1\ngpu_requires_labels: false\ndiscovery: {roots: [test]}\nstages:\n"
              "  - {name: unit, backend: cpu}\n"
              "  - {name: kernel, backend: cuda, runs_on: [h100], command: [pytest, tests/], working_directory: "
              "sgl-kernel, paths: ['sgl-kernel/**'], est_time: 600}\n")
    repo = make_repo({"test/test_unit.py": "from ci_policy import register_cpu_ci\nregister_cpu_ci(1, 'unit')\n"},
                     config=config, labels=None)
    inputs = ["--event", "workflow_dispatch"]
    for argv, name in ((["plan", *inputs], "plan"), (["registry"], "registry"),
                       (["list", *inputs, "--stage", "kernel"], "list")):
        rc, out, err = run_cli([*argv, "--repo", str(repo), "--format", "json"], capsys)
        assert (rc, err) == (0, ""), argv
        assert_valid(name, out)
        assert "command" in out
    rc, _out, err = run_cli(["plan", "--repo", str(repo), *inputs, "--json-out", str(tmp_path / "plan.json"),
                             "--stage-plans", str(tmp_path / "stages")], capsys)
    assert (rc, err) == (0, "")
    kernel = json.loads((tmp_path / "stages" / "kernel.json").read_text(encoding="utf-8"))
    assert_valid("plan", kernel)
    assert (kernel["run_settings"]["command"], kernel["run_settings"]["working_directory"]) == (
        ["pytest", "tests/"], "sgl-kernel")
