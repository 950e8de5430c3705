"""`ci-policy schema NAME`: prints exactly the schema file the package ships, or its outline."""

from __future__ import annotations

import json

import pytest
from helpers import run_cli

from ci_policy.render.schemas import NAMES, SCHEMA_DIR, file_name

HINT = ("    hint: the schemas: config, plan, registry, lint, timings, explain, list, init, result, file-run, tune, "
        "estimates, comment, pull-request, report-status, history, report\n")


@pytest.mark.parametrize("name", NAMES)
def test_each_schema_is_printed_as_the_package_ships_it(name, capsys):
    shipped = (SCHEMA_DIR / file_name(name)).read_text(encoding="utf-8")
    assert run_cli(["schema", name], capsys) == (0, shipped, "")
    assert run_cli(["schema", name, "--format", "json", "--repo", "does-not-exist"], capsys) == (0, shipped, "")
    assert json.loads(shipped)["$id"].endswith(f"/ci_policy/schemas/{name}.schema.json")


def test_text_is_an_outline_of_the_fields(capsys):
    assert run_cli(["schema", "report-status", "--format", "text"], capsys) == (0, (
        "ci-policy report-status (https://raw.githubusercontent.com/ci-policy/ci-policy/main/ci_policy/schemas/"
        "report-status.schema.json)\n"
        "`ci-policy report-status --format json`.\n"
        "\n"
        "schema: 1 (required): The version of this document's format.\n"
        "sha: string (required)\n"
        "context: string (required)\n"
        "state: pending | success | failure | error (required)\n"
        "description: string (required)\n"
        "target_url: string or null (required)\n"), "")


def test_the_configuration_outline_names_every_key_with_its_description(capsys):
    rc, out, err = run_cli(["schema", "config", "--format", "text"], capsys)
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == ("ci-policy configuration (.github/ci-policy.yml) (https://raw.githubusercontent.com/ci-policy/"
                        "ci-policy/main/ci_policy/schemas/config.schema.json)")
    assert "version: 1 (required): The format version of this file." in lines
    assert "stages[].max_parallel.default: integer (required): The limit when nothing raises it." in lines
    assert ("backends.<name>.accelerator: boolean: Tests of this backend need an accelerator runner "
            "(image, `runs_on`, diff pruning, labels).") in lines
    assert "gates.window: integer: Number of recent baselines a value is compared with." in lines


@pytest.mark.parametrize("argv, stderr", [
    (["schema", "nope"], "ci-policy schema: error: NAME: no schema named 'nope'\n" + HINT),
    (["schema", "Config"], "ci-policy schema: error: NAME: no schema named 'Config'\n" + HINT),
])
def test_an_unknown_name_is_a_usage_error_listing_the_names(argv, stderr, capsys):
    assert run_cli(argv, capsys) == (2, "", stderr)


def test_a_missing_name_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        run_cli(["schema"], capsys)
    assert info.value.code == 2
    assert "ci-policy schema: error: the following arguments are required: NAME" in capsys.readouterr().err
