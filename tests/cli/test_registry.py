"""`ci-policy registry`: exact outputs, and the refusal of a checkout with errors."""

from __future__ import annotations

import json

from cli.expected import EXAMPLE
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


def test_registry_refuses_an_invalid_checkout_and_lists_every_error(broken_repo, capsys):
    for fmt in ("text", "json"):
        rc, out, err = run(["registry", "--repo", str(broken_repo), "--format", fmt], capsys)
        assert (rc, out) == (1, "")
        assert_golden("cli/registry/broken.stderr", err)
