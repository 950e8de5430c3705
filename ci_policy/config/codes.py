"""Diagnostic codes of the configuration loader: CP100-CP199, one per kind of problem.

- Every `InputError` that `load_config` / `parse_config` raise carries one of these codes.
- `CONFIG_CODES`: code -> (short name, one-line example message), for the global registry.
- A code names a kind of problem, never one message: new checks reuse the code of their kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ci_policy.read.yamlnodes import ProblemKind

UNREADABLE: Final = "CP100"
INVALID_YAML: Final = "CP101"
UNKNOWN_KEY: Final = "CP102"
MISSING_KEY: Final = "CP103"
WRONG_TYPE: Final = "CP104"
INVALID_VALUE: Final = "CP105"
DUPLICATE: Final = "CP106"
UNSUPPORTED: Final = "CP107"
INCONSISTENT: Final = "CP108"

CONFIG_CODES: dict[str, tuple[str, str]] = {
    UNREADABLE: ("config-unreadable",
                 "configuration file .github/ci-policy.yml is a symlink; ci-policy refuses symlinks in a checkout"),
    INVALID_YAML: ("config-invalid-yaml", "invalid YAML: anchors are not allowed in ci-policy configuration"),
    UNKNOWN_KEY: ("config-unknown-key", "stages[0].partiton: unknown key; did you mean 'partitions'?"),
    MISSING_KEY: ("config-missing-key", "stages[0].runs_on: required for cuda stages that are not external"),
    WRONG_TYPE: ("config-wrong-type", "stages[0].partitions: expected an integer, got a string ('2')"),
    INVALID_VALUE: ("config-invalid-value", "stages[0].backend: expected one of cpu, cuda, rocm, got 'gpu'"),
    DUPLICATE: ("config-duplicate", "stages[2].name: duplicate stage name 'a' (also stages[0])"),
    UNSUPPORTED: ("config-unsupported", "version: unsupported version 2; this ci_policy reads version 1"),
    INCONSISTENT: ("config-inconsistent", "gates.min_samples: must not exceed gates.window (5), got 7"),
}

# The codes of the problems the YAML `Schema` finds by itself.
SCHEMA_CODES: Mapping[ProblemKind, str] = {
    "wrong-type": WRONG_TYPE,
    "unknown-key": UNKNOWN_KEY,
    "missing-key": MISSING_KEY,
    "duplicate": DUPLICATE,
    "invalid-value": INVALID_VALUE,
}
