"""Diagnostic codes of the configuration loader: CP100-CP199, one per kind of problem.

- In: nothing; the loader's sections import the codes they report.
- Out: one constant per kind of problem, and `CONFIG_CODES`.
- Refused: nothing: a table of constants, checked against `ci_policy.errors.CODES` by its tests.
- Every `InputError` that `load_config` / `parse_config` raise carries one of these codes.
- `CONFIG_CODES`: code -> (short name, one-line example message), the configuration's rows of
  `ci_policy.errors.CODES`, where every code is stated once.
- A code names a kind of problem, never one message: new checks reuse the code of their kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ci_policy.errors import CODES
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
AFTER_UNKNOWN: Final = "CP109"
AFTER_CYCLE: Final = "CP110"
GITHUB_LIMIT: Final = "CP111"

# code -> (short name, one-line example): the configuration's rows of the one registry.
CONFIG_CODES: Mapping[str, tuple[str, str]] = {code: entry for code, entry in CODES.items()
                                               if 100 <= int(code[2:]) <= 199}

# The codes of the problems the YAML `Schema` finds by itself.
SCHEMA_CODES: Mapping[ProblemKind, str] = {
    "wrong-type": WRONG_TYPE,
    "unknown-key": UNKNOWN_KEY,
    "missing-key": MISSING_KEY,
    "duplicate": DUPLICATE,
    "invalid-value": INVALID_VALUE,
}
