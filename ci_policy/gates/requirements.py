"""Required gates: session e2e tests must declare a gate for every session-server version.

- In: a `Snapshot` (its config's `gates.require` rules, files and gate declarations).
- Out: one `MissingGate` value per (test file, missing required key): the file, the rule,
  the key and the version it stands for. `violations` turns them into `Diagnostic`s (CP520).
- Refused: nothing raised: a missing gate is a value (and a CP520 diagnostic located at the
  file), never an exception.
- `lint` reports these as errors; the snapshot's classification (`model.snapshot.classify`)
  makes such a file invalid, like any other error located in it, so the plan does not
  schedule it instead of failing as a whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ci_policy.config.top import Config
from ci_policy.errors import Diagnostic
from ci_policy.gates.declarations import GateDeclaration
from ci_policy.read.globs import matches_any


class _Located(Protocol):
    @property
    def line(self) -> int | None: ...


class Snapshot(Protocol):
    """What is read of a `ci_policy.model.snapshot.Snapshot` (model sits above gates)."""

    @property
    def config(self) -> Config: ...
    @property
    def files(self) -> tuple[str, ...]: ...
    @property
    def gates(self) -> tuple[GateDeclaration, ...]: ...
    def registrations_for(self, file: str) -> Sequence[_Located]: ...


@dataclass(frozen=True)
class MissingGate:
    """A test file that lacks a gate a `gates.require` rule asks of it."""

    file: str
    line: int
    rule: int  # index in gates.require
    metric_key: str
    version: str | None  # the session-server version the key stands for, if templated

    @property
    def what(self) -> str:
        """`the gate required [for session server v2] by gates.require[i]: register_ci_gate(...)`."""
        version = f" for session server {self.version}" if self.version else ""
        return (f"the gate required{version} by gates.require[{self.rule}]: "
                f"register_ci_gate(metric_key={self.metric_key!r})")

    def diagnostic(self) -> Diagnostic:
        return Diagnostic(f"{self.file} lacks {self.what}", path=self.file, line=self.line, col=1, code="CP520",
                          hint=f"add `register_ci_gate(metric_key={self.metric_key!r})` at module level")


def missing_gates(snapshot: Snapshot) -> list[MissingGate]:
    """Every (test file, required key) the declarations do not cover, in rule then file order."""
    config = snapshot.config
    declared: dict[str, set[str]] = {}
    for gate in snapshot.gates:
        declared.setdefault(gate.file, set()).add(gate.metric_key)
    out: list[MissingGate] = []
    for i, rule in enumerate(config.gates.require):
        for file in snapshot.files:
            if not matches_any(rule.files, file):
                continue
            regs = snapshot.registrations_for(file)
            line = min((r.line for r in regs if r.line is not None), default=1)
            out += [MissingGate(file, line, i, key, version) for key, version in rule.required_keys()
                    if key not in declared.get(file, ())]
    return out


def violations(snapshot: Snapshot) -> list[Diagnostic]:
    """The lint errors: one CP520 diagnostic per missing gate."""
    return [missing.diagnostic() for missing in missing_gates(snapshot)]

