"""The optional extras a subcommand needs, checked before it prints anything.

- In: a command's own extra (`cli.main.COMMAND_EXTRAS`), asked before its module is imported;
  for `run`, `gate`, `history` and `report`, the parsed arguments naming the store they would open (`--store`,
  `--store-file`, else `$CI_POLICY_DATABASE_URL`).
- Out: None when every module the subcommand's adapters import is importable, else the one
  line to print (`this command needs the 'tune' extra: pip install 'ci-policy[tune]'`); the
  caller prints it as `ci-policy COMMAND: error: ...` and exits 2.
- Refused: nothing raised: a missing extra is the line it returns; a store location that is not
  valid is left to the subcommand, as below.
- Needs: `tune` the `tune` extra (libcst, PyGithub); `comment`, `pull-request` and
  `report-status` the `github` extra (PyGithub), and so does `report --publish-issue`; `run`,
  `gate`, `history` and `report` with a `postgresql://` store the `postgres` extra (psycopg).
  A store location that is not valid is left to the subcommand, which reports it as it always
  does.
- A module counts as missing when importing it raises ImportError, whatever the reason (not
  installed, or installed without a dependency of its own).
"""

from __future__ import annotations

import argparse
import importlib

from ci_policy.app.stores import store_kind

# extra -> the top-level modules it provides, in the order they are tried.
EXTRA_MODULES = {
    "tune": ("libcst", "github"),
    "github": ("github",),
    "postgres": ("psycopg",),
}
STORE_COMMANDS = ("run", "gate", "history", "report")


def missing_command_extra(extra: str | None) -> str | None:
    """The message naming `extra`, the one a command needs whatever its arguments
    (`cli.main.COMMAND_EXTRAS`), when it is not installed; None when it is, or for no extra.

    Asked before the subcommand's module is imported: its use case imports the adapter,
    and so the extra's modules, at module level."""
    if extra is not None and not _importable(extra):
        return f"this command needs the '{extra}' extra: pip install 'ci-policy[{extra}]'"
    return None


def missing_extra(args: argparse.Namespace) -> str | None:
    """The message naming the store's extra when the store `run` or `gate` would open needs one
    that is not installed, else None (a command's own extra is asked before its module is
    imported: `missing_command_extra`)."""
    if args.command in STORE_COMMANDS and store_kind(args.store, args.store_file) == "postgresql" \
            and not _importable("postgres"):
        return "a postgresql:// metric store needs the 'postgres' extra: pip install 'ci-policy[postgres]'"
    if args.command == "report" and args.publish_issue and not _importable("github"):
        return "report --publish-issue needs the 'github' extra: pip install 'ci-policy[github]'"
    return None


def _importable(extra: str) -> bool:
    for module in EXTRA_MODULES[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            return False
    return True
