"""Required gates: session e2e tests must declare a gate for every session-server version.

- In: a `Snapshot` (its config's `gates.require` rules, files and gate declarations).
- Out: one `Diagnostic` (CP520) per (test file, missing required key), naming the file,
  the missing key and the version it stands for.
- `lint` reports these as errors; `plan` refuses to schedule such a file (its stage
  lists it as invalid with the same reason) instead of failing the whole plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ci_policy.config import Config
from ci_policy.errors import Diagnostic
from ci_policy.gates.declarations import GateDeclaration
from ci_policy.read.globs import matches


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


def violations(snapshot: Snapshot) -> list[Diagnostic]:
    config = snapshot.config
    declared: dict[str, set[str]] = {}
    for gate in snapshot.gates:
        declared.setdefault(gate.file, set()).add(gate.metric_key)
    out: list[Diagnostic] = []
    for i, rule in enumerate(config.gates.require):
        for file in snapshot.files:
            if not any(matches(glob, file) for glob in rule.files):
                continue
            regs = snapshot.registrations_for(file)
            line = min((r.line for r in regs if r.line is not None), default=1)
            for key, version in rule.required_keys():
                if key in declared.get(file, ()):
                    continue
                what = f" for session server {version}" if version else ""
                out.append(Diagnostic(
                    f"{file} lacks the gate required{what} by gates.require[{i}]: "
                    f"register_ci_gate(metric_key={key!r})",
                    path=file, line=line, col=1, code="CP520",
                    hint=f"add `register_ci_gate(metric_key={key!r})` at module level"))
    return out


def invalid_files(snapshot: Snapshot) -> dict[str, str]:
    """file -> reason, for the plan."""
    reasons: dict[str, list[str]] = {}
    for err in violations(snapshot):
        file = err.path or ""
        reasons.setdefault(file, []).append(err.message[len(f"{file} lacks "):])
    return {file: "lacks " + "; ".join(parts) for file, parts in reasons.items()}
