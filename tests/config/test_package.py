"""`ci_policy.config` imports a section on first use: each name it exports resolves to its
section's object, and a name, in a fresh interpreter, loads its section and no other (nor PyYAML)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

from helpers import clean_env

import ci_policy.config as config


def test_every_exported_name_resolves_to_its_sections_object() -> None:
    assert set(config.__all__) == set(config._HOME) | {"DEFAULT_CONFIG"}
    for name, module in config._HOME.items():
        assert getattr(config, name) is getattr(importlib.import_module(f"ci_policy.config.{module}"), name), name
    assert config.DEFAULT_CONFIG == ".github/ci-policy.yml"


PROBE = """
import json, sys
from ci_policy.config import RetryRules
sys.stdout.write(json.dumps(sorted(m for m in sys.modules if m.startswith("ci_policy.config") or m == "yaml")))
"""


def test_a_name_loads_its_section_alone(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(), check=True)
    assert json.loads(proc.stdout) == ["ci_policy.config", "ci_policy.config.runrules"]
