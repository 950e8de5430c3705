"""`ci-policy registry`: exact outputs, and the refusal of a checkout with errors."""

from __future__ import annotations

import json

from cli.expected import EXAMPLE
from cli.partial import (
    BAD,
    BAD_DIAGNOSTIC,
    BAD_HINT,
    BAD_MESSAGE,
    TWO,
    TWO_DIAGNOSTIC,
    TWO_INCOMPLETE,
    TWO_SECTION,
    partial_repo,
    two_repo,
)
from helpers import assert_golden, assert_run_golden
from helpers import run_cli as run

FIELDS = ["file", "line", "backend", "suite", "est_time", "labels", "nightly", "disabled", "implicit", "marker"]


def test_registry_json_on_the_example(capsys):
    rc, out, err = run(["registry", "--repo", str(EXAMPLE), "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert_golden("cli/registry/example.json", out)
    rows = json.loads(out)["registrations"]
    assert [list(r) for r in rows] == [FIELDS] * len(rows)
    assert [(r["file"], r["line"] or 0) for r in rows] == sorted((r["file"], r["line"] or 0) for r in rows)


def test_registry_text_is_the_default_format(example_repo, monkeypatch, capsys):
    monkeypatch.chdir(example_repo)
    assert_run_golden(run(["registry"], capsys), 0, "cli/registry/example.txt")
    assert_run_golden(run(["registry", "--repo", ".", "--format", "text"], capsys), 0, "cli/registry/example.txt")


def test_registry_lists_every_valid_registration_and_each_invalid_file_then_exits_1(broken_repo, capsys):
    rc, out, err = run(["registry", "--repo", str(broken_repo)], capsys)
    assert rc == 1
    assert_golden("cli/registry/broken.txt", out)
    assert_golden("cli/registry/broken.stderr", err)
    rc, out, err = run(["registry", "--repo", str(broken_repo), "--format", "json"], capsys)
    assert rc == 1
    assert_golden("cli/registry/broken.json", out)
    assert err == ("ci-policy registry: incomplete: 4 invalid test file(s) left out: tests/e2e/test_bad_label.py, "
                   "tests/e2e/test_bad_suite.py, tests/e2e/test_no_main.py, tests/e2e/test_unregistered.py\n")
    doc = json.loads(out)
    assert [r["file"] for r in doc["registrations"]] == ["tests/unit/test_ok.py"]
    assert doc["plan_complete"] is False
    assert [(f["file"], [d["code"] for d in f["diagnostics"]]) for f in doc["invalid"]] == [
        ("tests/e2e/test_bad_label.py", ["CP227"]), ("tests/e2e/test_bad_suite.py", ["CP225"]),
        ("tests/e2e/test_no_main.py", ["CP222"]), ("tests/e2e/test_unregistered.py", ["CP231"])]


def test_registry_still_refuses_a_configuration_error(broken_repo, capsys):
    config = broken_repo / ".github" / "ci-policy.yml"
    config.write_text(config.read_text().replace("stages:", "stagez:", 1))
    for fmt in ("text", "json"):
        rc, out, err = run(["registry", "--repo", str(broken_repo), "--format", fmt], capsys)
        assert (rc, out) == (1, "")
        assert err.startswith(".github/ci-policy.yml:")
        assert err.endswith("ci-policy: 2 errors\n")


def test_registry_of_a_checkout_with_one_invalid_file(make_repo, capsys):
    repo, _ = partial_repo(make_repo)
    incomplete = f"ci-policy registry: incomplete: 1 invalid test file(s) left out: {BAD}\n"
    assert run(["registry", "--repo", str(repo)], capsys) == (1, (
        "FILE                     BACKEND  SUITE  EST   LABELS    NOTES\n"
        "tests/e2e/test_ok.py:3   cuda     gpu-a  1m0s  megatron\n"
        "tests/e2e/test_ok2.py:3  cuda     gpu-a  30s   megatron\n"
        "tests/unit/test_u.py     cpu      cpu    1s    -         implicit\n"),
        f"invalid (not scheduled): 1 test file\n  {BAD}\n    {BAD}:3:39: CP227 label-unknown: {BAD_MESSAGE}\n"
        f"        hint: {BAD_HINT}\n" + incomplete)
    rc, out, err = run(["registry", "--repo", str(repo), "--format", "json"], capsys)
    assert (rc, err) == (1, incomplete)
    doc = json.loads(out)
    assert [r["file"] for r in doc["registrations"]] == ["tests/e2e/test_ok.py", "tests/e2e/test_ok2.py",
                                                         "tests/unit/test_u.py"]
    assert (doc["plan_complete"], doc["invalid"]) == (False, [{"file": BAD, "diagnostics": [BAD_DIAGNOSTIC]}])


def test_registry_keeps_the_good_registration_of_a_file_and_drops_only_its_bad_one(make_repo, capsys):
    repo = two_repo(make_repo)
    incomplete = f"ci-policy registry: {TWO_INCOMPLETE}\n"
    assert run(["registry", "--repo", str(repo)], capsys) == (1, (
        "FILE                     BACKEND  SUITE  EST   LABELS    NOTES\n"
        "tests/e2e/test_ok.py:3   cuda     gpu-a  1m0s  megatron\n"
        "tests/e2e/test_ok2.py:3  cuda     gpu-a  30s   megatron\n"
        "tests/e2e/test_two.py:3  cuda     gpu-a  1m0s  megatron\n"
        "tests/unit/test_u.py     cpu      cpu    1s    -         implicit\n"),
        TWO_SECTION + "\n" + incomplete)
    rc, out, err = run(["registry", "--repo", str(repo), "--format", "json"], capsys)
    assert (rc, err) == (1, incomplete)
    doc = json.loads(out)
    assert [(r["file"], r["line"], r["backend"], r["suite"]) for r in doc["registrations"]] == [
        ("tests/e2e/test_ok.py", 3, "cuda", "gpu-a"), ("tests/e2e/test_ok2.py", 3, "cuda", "gpu-a"),
        (TWO, 3, "cuda", "gpu-a"), ("tests/unit/test_u.py", None, "cpu", "cpu")]
    assert (doc["plan_complete"], doc["invalid"]) == (
        False, [{"file": TWO, "diagnostics": [TWO_DIAGNOSTIC], "kept_stages": ["gpu-a"]}])


COMMAND_CONFIG = """\
version: 1
gpu_requires_labels: false
discovery: {roots: [test]}
stages:
  - {name: unit, backend: cpu}
  - name: sgl-kernel
    backend: cuda
    runs_on: [h100]
    command: [pytest, -q, "-k", "not slow", tests/]
    working_directory: sgl-kernel
    paths: ["sgl-kernel/**", "!sgl-kernel/**/*.md"]
    est_time: 1800
"""


def test_registry_and_list_show_a_stage_with_a_command(make_repo, capsys):
    repo = make_repo({"test/test_unit.py": "from ci_policy import register_cpu_ci\nregister_cpu_ci(1, 'unit')\n"},
                     config=COMMAND_CONFIG, labels=None)
    assert run(["registry", "--repo", str(repo)], capsys) == (0, (
        "FILE                 BACKEND  SUITE  EST  LABELS  NOTES\n"
        "test/test_unit.py:2  cpu      unit   1s   -\n"
        "\n"
        "stages with a command (no marker registers to them):\n"
        "  sgl-kernel (cuda): pytest -q -k 'not slow' tests/ (in sgl-kernel); est 30m0s; selected by changes to "
        "sgl-kernel/**, !sgl-kernel/**/*.md\n"), "")
    rc, out, err = run(["registry", "--repo", str(repo), "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert json.loads(out)["commands"] == [{
        "stage": "sgl-kernel", "backend": "cuda", "command": ["pytest", "-q", "-k", "not slow", "tests/"],
        "working_directory": "sgl-kernel", "paths": ["sgl-kernel/**", "!sgl-kernel/**/*.md"], "est_time": 1800}]
    listed = ["list", "--repo", str(repo), "--stage", "sgl-kernel", "--event", "workflow_dispatch"]
    assert run(listed, capsys) == (0, "# command: pytest -q -k 'not slow' tests/ (in sgl-kernel)\n", "")
    rc, out, err = run([*listed, "--format", "json"], capsys)
    assert (rc, err) == (0, "")
    assert json.loads(out) == {
        "schema": 1, "stage": "sgl-kernel", "decision": "run",
        "reasons": ["run: workflow_dispatch event runs every stage with selected tests (its command)"], "shard": 0,
        "files": ["sgl-kernel"], "command": ["pytest", "-q", "-k", "not slow", "tests/"],
        "working_directory": "sgl-kernel", "plan_complete": True, "invalid": []}
