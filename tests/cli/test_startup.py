"""`ci-policy --help` and `--version` import no layer below the command line beyond what they print
with (checked in `sys.modules` of a fresh interpreter, never by timing)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import clean_env

PROBE = """
import json, sys
from ci_policy.cli.main import main
try:
    main([sys.argv[1]])
except SystemExit:
    pass
sys.stderr.write(json.dumps(sorted(m for m in sys.modules if m.startswith("ci_policy") or m == "yaml")))
"""


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_only_the_command_line(flag: str, tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, flag], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(), check=True)
    loaded = [m for m in json.loads(proc.stderr) if not m.startswith("ci_policy.cli")]
    assert loaded == ["ci_policy", "ci_policy.adapters", "ci_policy.adapters.console", "ci_policy.errors",
                      "ci_policy.read", "ci_policy.read.numbers", "ci_policy.render", "ci_policy.render.escape",
                      "ci_policy.sdk", "ci_policy.sdk.markers"]
