"""`ci_policy.config` imports nothing itself: in a fresh interpreter, a name imported from its
section loads that section and no other (nor PyYAML)."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import clean_env

PROBE = """
import json, sys
from ci_policy.config.runrules import RetryRules
sys.stdout.write(json.dumps(sorted(m for m in sys.modules if m.startswith("ci_policy.config") or m == "yaml")))
"""


def test_a_name_loads_its_section_alone(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(), check=True)
    assert json.loads(proc.stdout) == ["ci_policy.config", "ci_policy.config.runrules"]


def test_the_default_path_loads_no_section(tmp_path) -> None:
    probe = PROBE.replace("from ci_policy.config.runrules import RetryRules",
                          "from ci_policy.config.path import DEFAULT_CONFIG\n"
                          "assert DEFAULT_CONFIG == '.github/ci-policy.yml'")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(), check=True)
    assert json.loads(proc.stdout) == ["ci_policy.config", "ci_policy.config.path"]
