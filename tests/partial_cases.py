"""A plan with one invalid test file whose path and message a hostile checkout chose, for
the render tests of partial plans (imported as `partial_cases`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from render_cases import pr_plan, write_repo

from ci_policy.errors import Diagnostic
from ci_policy.model.snapshot import InvalidFile, Validity
from ci_policy.plan.build import Plan

HOSTILE_FILE = "tests/a,b:c%d|`*_\n::error::pwned.py"
HOSTILE_MESSAGE = "bad\r\n::warning::x | <b>"


def partial_plan(tmp_path: Path) -> Plan:
    """The render cases' PR plan, with HOSTILE_FILE invalid (one CP227 diagnostic, stage gpu)."""
    plan = pr_plan(write_repo(tmp_path / "repo"), "run-ci-megatron")
    bad = InvalidFile(HOSTILE_FILE, (Diagnostic(HOSTILE_MESSAGE, path=HOSTILE_FILE, line=3, col=7, code="CP227",
                                                hint="fix it"),), ("gpu",))
    return replace(plan, snapshot=replace(plan.snapshot, validity=Validity((), (bad,), ())))
