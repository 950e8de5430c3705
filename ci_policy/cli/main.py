"""The `ci-policy` command line: the parser, and the one place errors become exit codes.

- In: argv.
- Out: the subcommand's output and exit code. Errors, each printed once, here:
  - `UsageError` (the command line or the environment it reads is wrong): exit 2, as
    `ci-policy COMMAND: error: SOURCE: MESSAGE` on stderr, the hint on its own line; in
    github format also an `::error::` annotation on stdout. argparse's own errors exit 2.
  - `InputError`/`InputErrors` (bad input): exit 1, every diagnostic located, with its
    hint: text on stderr, or `::error` annotations in github format.
  - an unreadable checkout (OSError and kin) is an input error too; a closed pipe exits 1.
- Output: under GitHub Actions (`GITHUB_ACTIONS=true`) or in github format, stdout and
  stderr pass `adapters.console.guarded` for the whole command; workflow commands are
  written only with `adapters.console.write_commands`.
- A subcommand whose adapters need an extra that is not installed (`extras.missing_extra`)
  prints one line naming it (`ci-policy tune: error: this command needs the 'tune' extra:
  pip install 'ci-policy[tune]'`) and exits 2, before any other output.
- Each subcommand lives in its own module with `add_parser(subparsers)` and
  `run(args) -> int`; adapters (PyGithub, libcst, database drivers) are imported only
  inside the subcommands that need them.
- Imported only when used: a command line naming a subcommand imports that subcommand's
  module alone (`--help` imports them all, to list them; `--version` none), and the
  console guard only when a stream is guarded.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ci_policy import __version__

if TYPE_CHECKING:
    from ci_policy.errors import Diagnostic, UsageError

# Each subcommand's name and module (in `ci_policy.cli`), in the order `ci-policy --help` lists them.
SUBCOMMANDS = (("init", "init"), ("lint", "lint"), ("registry", "registry"), ("plan", "plan"), ("list", "list"),
               ("run", "run"), ("result", "result"), ("gate", "gate"), ("tune", "tune"), ("file-run", "file_run"),
               ("comment", "comment"), ("pull-request", "pull_request"), ("report-status", "report_status"),
               ("schema", "schema"))


class Parser(argparse.ArgumentParser):
    """No abbreviated options: a renamed flag (`--event` -> `--event-path`) must fail, not match a prefix."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def _wanted(argv: Sequence[str] | None) -> tuple[tuple[str, str], ...]:
    """The subcommands the parser needs for `argv`: the one it names, none for `--version`
    first (argparse prints it on meeting it), else all of them (`--help`, an unknown name)."""
    words = sys.argv[1:] if argv is None else list(argv)
    if words and words[0] == "--version":
        return ()
    if words:
        named = [entry for entry in SUBCOMMANDS if entry[0] == words[0]]
        if named:
            return tuple(named)
    return SUBCOMMANDS


def build_parser(argv: Sequence[str] | None = None, *, every: bool = True) -> argparse.ArgumentParser:
    """The parser; without `every`, holding only the subcommands `argv` needs (`_wanted`)."""
    parser = Parser(
        prog="ci-policy",
        description="CI policy engine for repositories whose tests run on scarce accelerators.")
    parser.add_argument("--version", action="version", version=f"ci-policy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for _name, module_name in (SUBCOMMANDS if every else _wanted(argv)):
        module = importlib.import_module(f"ci_policy.cli.{module_name}")
        module.add_parser(sub).set_defaults(func=module.run)
    return parser


@contextlib.contextmanager
def guarded(on: bool) -> Iterator[None]:
    """`adapters.console.guarded`, imported only when a stream is to be guarded."""
    if not on:
        yield
        return
    from ci_policy.adapters.console import guarded as console_guarded

    with console_guarded(True):
        yield


def write_commands(text: str) -> None:
    from ci_policy.adapters.console import write_commands as console_write_commands

    console_write_commands(text)


def report_errors(errors: Sequence[Diagnostic], args: argparse.Namespace) -> None:
    """Input errors: annotations in github format, text otherwise; then how many."""
    from pathlib import Path

    from ci_policy.cli.paths import workspace_paths
    from ci_policy.render import diagnostics

    if args.format == "github":
        repo = getattr(args, "repo", None) or getattr(args, "trusted_repo", None)
        path_of = workspace_paths(Path(repo), args.config) if repo else (lambda p: p)
        write_commands(diagnostics(errors, "github", path_of))
    else:
        print(diagnostics(errors, "text"), file=sys.stderr)
    n = len(errors)
    print(f"ci-policy: {n} error{'s' if n != 1 else ''}", file=sys.stderr)


def report_usage(err: UsageError, args: argparse.Namespace) -> None:
    from ci_policy.render import usage_error_github, usage_error_text

    if args.format == "github":
        write_commands(usage_error_github(args.command, err))
    print(usage_error_text(args.command, err), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    # Under GitHub Actions every line of both streams is parsed for workflow commands,
    # argparse's own errors (which quote the arguments) included: one guard for all of it.
    with guarded(os.environ.get("GITHUB_ACTIONS") == "true"):
        args = build_parser(argv, every=False).parse_args(argv)
        with guarded(getattr(args, "format", None) == "github"):
            return _dispatch(args)


def _dispatch(args: argparse.Namespace) -> int:
    from ci_policy.cli.collector import paused
    from ci_policy.cli.extras import missing_extra
    from ci_policy.errors import CiPolicyError, InputError, InputErrors, UsageError

    missing = missing_extra(args)
    if missing is not None:
        print(f"ci-policy {args.command}: error: {missing}", file=sys.stderr)
        return UsageError.exit_code
    try:
        with paused():
            return int(args.func(args))
    except UsageError as exc:
        report_usage(exc, args)
        return UsageError.exit_code
    except InputErrors as exc:
        report_errors(exc.errors, args)
        return exc.exit_code
    except InputError as exc:
        report_errors([exc.diagnostic], args)
        return exc.exit_code
    except CiPolicyError as exc:
        print(f"ci-policy {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 1
    except (OSError, RecursionError, MemoryError) as exc:
        # A checkout the core could not read (see lint.read_failure): an input error, not a crash.
        from ci_policy.model.lint import read_failure

        report_errors([read_failure(exc)], args)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
