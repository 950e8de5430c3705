"""`lint:` which diagnostics a repository accepts where, like a linter's per-file ignores.

- In: the `lint` mapping: `ignore`, a list of `{paths: [globs], codes: [CP201 | marker-not-module-level]}`;
  `workflows`, the repo-relative directory of the GitHub Actions workflows lint reads
  (default `.github/workflows`), or `false` to read none.
- Out: a frozen `LintConfig` whose rules name codes (a short name is resolved to its code)
  and whose `workflows` is a normalised path or None.
- Refused: a rule without paths or codes, an invalid glob, a code or name that is not a
  diagnostic of `ci-policy lint` (see `ci_policy.errors.CODES`), a configuration code
  (CP1xx: the configuration itself cannot be ignored by the configuration).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ci_policy.config import fields
from ci_policy.config.fields import REQUIRED, Key, Table, Values
from ci_policy.errors import CODES
from ci_policy.read.yamlnodes import INVALID, Schema

DEFAULT_WORKFLOWS = ".github/workflows"


def _workflows(s: Schema, node: Any, where: str) -> Any:
    """`false` (read no workflows) or a repo-relative directory."""
    if getattr(node, "tag", None) == "tag:yaml.org,2002:bool":
        value = s.scalar(node, where, bool)
        if value is False:
            return None
        s.error(node, where, "expected a repo-relative directory or false, got true",
                "omit the key to read .github/workflows, or write false to read no workflows")
        return INVALID
    return fields.relative(s, node, where)

_BY_NAME = {name: code for code, (name, _example) in CODES.items()}


def code_of(value: str) -> str | None:
    """The code a suppression names (`CP201` or `marker-not-module-level`), or None for neither."""
    if value in CODES:
        return value
    return _BY_NAME.get(value)


def _check_code(value: str) -> str | None:
    code = code_of(value)
    if code is None:
        return f"{value!r} is not a diagnostic code or name of ci-policy lint (e.g. CP201 or marker-not-module-level)"
    if code.startswith("CP1"):
        return f"{value!r} is a configuration diagnostic; fix the configuration instead of ignoring it"
    if code.startswith("CP7"):
        return f"{value!r} is an error of `history` or `report`, which lint never reports"
    return None


# What `_check_code` accepts: every code but the configuration's (CP1xx) and the test history's
# (CP7xx, never a lint diagnostic), and its name.
IGNORABLE = [value for code, (name, _example) in CODES.items() if not code.startswith(("CP1", "CP7"))
             for value in (code, name)]

IGNORE_RULE = Table("lint.ignore[]", "Diagnostics accepted under some paths.", (
    Key("paths", fields.strings("non-empty list of globs", non_empty=True, check=fields.check_glob), REQUIRED,
        "Globs of the files the rule covers (gitignore-style)."),
    Key("codes", fields.strings("non-empty list of codes or names", non_empty=True, check=_check_code,
                                item={"enum": IGNORABLE}), REQUIRED,
        "Diagnostic codes (`CP201`) or names (`marker-not-module-level`) accepted there."),
))


@dataclass(frozen=True)
class IgnoreRule:
    """Diagnostics with one of `codes` in a file matching one of `paths` are suppressed."""

    paths: tuple[str, ...]
    codes: tuple[str, ...]  # always codes, names resolved
    line: int | None = None


def _ignore_rule(v: Values) -> IgnoreRule:
    return IgnoreRule(paths=v.get("paths"), codes=tuple(code_of(c) or c for c in v.get("codes")), line=v.line)


LINT_TABLE = Table("lint", "Which diagnostics the repository accepts where.", (
    Key("ignore", fields.list_of(IGNORE_RULE, _ignore_rule, "list of ignore rules"), (),
        "Per-path ignores: diagnostics accepted in files matching the rule's paths.", shown_default="none"),
    Key("workflows", fields.Parser("repo-relative directory or false", lambda s, n, w, c: _workflows(s, n, w),
                                   schema={"anyOf": [fields.RELATIVE_PATH, {"const": False}]}),
        DEFAULT_WORKFLOWS, "The GitHub Actions workflows lint checks against the stages (CP6xx); false "
        "reads none."),
))


@dataclass(frozen=True)
class LintConfig:
    ignore: tuple[IgnoreRule, ...] = LINT_TABLE.default("ignore")
    workflows: str | None = LINT_TABLE.default("workflows")
    line: int | None = None


def _build(s: Schema, v: Values) -> Any:
    ignore, workflows = v.get("ignore"), v.get("workflows")
    if INVALID in (ignore, workflows):
        return INVALID
    return LintConfig(ignore=ignore, workflows=workflows, line=v.line)


LINT = fields.mapping_of(LINT_TABLE, _build)
