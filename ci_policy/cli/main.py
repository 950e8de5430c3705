"""The `ci-policy` command line: the parser, and the one place errors become exit codes.

- In: argv; `entry()` is the program (console script, `python -m ci_policy`), `main(argv)` the
  same called in-process (never re-executed: see `run`).
- Out: the subcommand's output and exit code. Errors, each printed once, here:
  - `UsageError` (the command line or the environment it reads is wrong): exit 2, as
    `ci-policy COMMAND: error: SOURCE: MESSAGE` on stderr, the hint on its own line; in
    github format also an `::error::` annotation on stdout. argparse's own errors exit 2.
  - `InputError`/`InputErrors` (bad input): exit 1, every diagnostic located, with its
    hint: text on stderr, or `::error` annotations in github format.
  - an unreadable checkout (OSError and kin) is an input error too; a closed pipe exits 1.
- Refused: a command line argparse cannot parse (exit 2, its usage line); every other refusal
  is a subcommand's, printed here as above.
- Output: stdout and stderr pass `render.console.guarded` for the whole command, in every
  format, with or without GitHub Actions (`--version`'s one fixed line aside); workflow
  commands are written only with `render.console.write_commands`, and only in github format.
- A subcommand whose adapters need an extra that is not installed (`extras.missing_extra`)
  prints one line naming it (`ci-policy tune: error: this command needs the 'tune' extra:
  pip install 'ci-policy[tune]'`) and exits 2, before any other output: a command's own
  extra is checked before its module (whose use case imports the adapter) is imported.
- Each subcommand lives in its own module with `add_parser(subparsers)` and
  `run(args) -> int`, which parses its arguments into a request, calls its use case
  (`ci_policy.app`) and renders the result; adapters (PyGithub, libcst, database drivers)
  are imported only by the use cases that need them. Every help page, the top one too, ends
  with two or three examples (`examples`), which the test suite runs as shown.
- Imported only when used: a command line naming a subcommand imports that subcommand's
  module alone; one naming none (`--help`, an unknown name) none, its parser holding the
  names and summaries of `SUBCOMMANDS` only; `--version` first builds no parser and imports
  no console guard.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import sys
from collections.abc import Iterator, Sequence

from ci_policy import __version__

TYPE_CHECKING = False  # typing's, without importing typing: `--version` imports nothing it does not use
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from ci_policy.errors import Diagnostic, UsageError

# Each subcommand's name, module (in `ci_policy.cli`) and the summary `ci-policy --help` lists it
# with, in the order it lists them. The module's parser takes its summary from here (`summary`),
# so that `--help` prints the list without importing a module.
SUBCOMMANDS = (
    ("init", "init", "write a starter configuration from the checkout's markers"),
    ("lint", "lint", "check configuration, labels, registrations and gate declarations"),
    ("registry", "registry", "list every test registration"),
    ("plan", "plan", "decide which stages run for a trigger, labels and diff, and their shards"),
    ("list", "list", "print the files of one stage shard, as the plan splits them"),
    ("run", "run", "run the files of one stage shard on this runner"),
    ("result", "result", "decide the pipeline's result from the plan and its jobs' results"),
    ("gate", "gate", "evaluate a test file's metric gates against the metric history"),
    ("tune", "tune", "propose est_time values from the timings of past runs"),
    ("history", "history", "load timing records into the store's test history"),
    ("report", "report", "report CI health from the test history: hours, drift, flaky tests"),
    ("file-run", "file_run", "resolve where /rerun-test runs one test file of a checkout"),
    ("comment", "comment", "handle a PR comment command (issue_comment event)"),
    ("pull-request", "pull_request", "read the pull request of a pipeline run: head, labels, trust, diff"),
    ("report-status", "report_status", "create one commit status (a result reported on a PR's head)"),
    ("schema", "schema", "print the JSON Schema of the configuration or of a JSON output"),
    ("completion", "completion", "print a shell completion script for bash, zsh or fish"),
)

# What `ci-policy --help` ends with; each subcommand's help ends with its own (`examples`). Every
# example runs in the test suite, from the repository root, against the bundled example checkout.
EXAMPLES = (
    ("check the example checkout: configuration, labels, registrations, gates",
     "ci-policy lint --repo examples/gpu-repo"),
    ("which stages a pull request labelled run-ci-megatron runs, and their shards",
     "ci-policy plan --repo examples/gpu-repo --event pull_request --label run-ci-megatron"),
    ("completion for bash (zsh and fish alike): see ci-policy completion --help",
     "ci-policy completion bash"),
)

# The extra each subcommand needs whatever its arguments (`cli.extras`): checked before its
# module is imported, so the check is asked of no other command.
COMMAND_EXTRAS = {
    "tune": "tune",
    "comment": "github",
    "pull-request": "github",
    "report-status": "github",
}


def summary(name: str) -> str:
    return next(text for command, _module, text in SUBCOMMANDS if command == name)


def examples(*shown: tuple[str, str]) -> str:
    """The epilog of a help page: `examples:`, then each (what it shows, the command line), the
    command under its comment, printed as written (`parser_class`); a newline in a command
    continues it on the next line (` \\`). An example that exits other than 0 says so in its
    comment: `(exits 1)`."""
    lines = ["examples:"]
    for what, command in shown:
        lines += [f"  # {what}", "  " + " \\\n      ".join(command.split("\n"))]
    return "\n".join(lines)


def terminal_columns() -> int:
    """The width `shutil.get_terminal_size` gives argparse's help (`$COLUMNS`, else the terminal
    of stdout, else 80), without importing shutil and the compression modules it imports."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def parser_class() -> type[argparse.ArgumentParser]:
    """argparse's parser without abbreviated options: a renamed flag (`--event` -> `--event-path`)
    must fail, not match a prefix; its help as wide as argparse makes it (`terminal_columns`).
    Made when a parser is built (`--version` imports no argparse)."""
    import argparse  # tests/cli/test_startup.py::test_help_and_version_import_neither_typing_nor_dataclasses

    class Formatter(argparse.HelpFormatter):
        def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                     width: int | None = None, **more: Any) -> None:  # more: a later argparse's (`color`)
            super().__init__(prog, indent_increment, max_help_position,
                             terminal_columns() - 2 if width is None else width, **more)

        def _fill_text(self, text: str, width: int, indent: str) -> str:
            # The examples keep their lines (a command line wrapped could not be pasted); every
            # other text is filled to the width, as argparse fills it.
            if text.startswith("examples:\n"):
                return "".join(indent + line for line in text.splitlines(keepends=True))
            return super()._fill_text(text, width, indent)

    class Parser(argparse.ArgumentParser):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("allow_abbrev", False)
            kwargs.setdefault("formatter_class", Formatter)
            super().__init__(*args, **kwargs)

    return Parser


def _wanted(argv: Sequence[str] | None) -> tuple[tuple[str, str, str], ...]:
    """The subcommands the parser needs for `argv`: the one it names first, else all of them
    (`--help`, an unknown name)."""
    words = sys.argv[1:] if argv is None else list(argv)
    if words:
        named = [entry for entry in SUBCOMMANDS if entry[0] == words[0]]
        if named:
            return tuple(named)
    return SUBCOMMANDS


def _names_no_subcommand(argv: Sequence[str] | None) -> bool:
    """No word of `argv` is a subcommand's name: argparse then never hands a word to a
    subcommand's parser (it prints the help, the version or an error first), so the list
    of names and summaries is all of them it needs."""
    words = sys.argv[1:] if argv is None else list(argv)
    names = {name for name, _module, _summary in SUBCOMMANDS}
    return not any(word in names for word in words)


def build_parser(argv: Sequence[str] | None = None, *, every: bool = True,
                 bare: frozenset[str] = frozenset()) -> argparse.ArgumentParser:
    """The parser; without `every`, holding only the subcommands `argv` needs (`_wanted`), and
    only their names and summaries when `argv` names none (`--help`: no subcommand module is
    imported). The subcommands named in `bare` have their name and summary only, their module
    not imported (`completion`: one whose extra is not installed)."""
    parser_type = parser_class()
    parser = parser_type(
        prog="ci-policy",
        description="CI policy engine for repositories whose tests run on scarce accelerators.",
        epilog=examples(*EXAMPLES))
    parser.add_argument("--version", action="version", version=f"ci-policy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=parser_type)
    sub.required = True
    if not every and _names_no_subcommand(argv):
        for name, _module, text in SUBCOMMANDS:
            sub.add_parser(name, help=text)
        return parser
    for name, module_name, text in (SUBCOMMANDS if every else _wanted(argv)):
        if name in bare:
            sub.add_parser(name, help=text)
            continue
        module = importlib.import_module(f"ci_policy.cli.{module_name}")
        module.add_parser(sub).set_defaults(func=module.run)
    return parser


@contextlib.contextmanager
def guarded(actions: bool) -> Iterator[None]:
    """`render.console.guarded`, imported when the command starts (`--version` does without)."""
    # Imported here: tests/cli/test_startup.py::test_version_imports_no_subcommand.
    from ci_policy.render.console import guarded as console_guarded

    with console_guarded(actions):
        yield


def write_commands(text: str) -> None:
    # Imported here, as in `guarded` (tests/cli/test_startup.py::test_version_imports_no_subcommand).
    from ci_policy.render.console import write_commands as console_write_commands

    console_write_commands(text)


def report_errors(errors: Sequence[Diagnostic], args: argparse.Namespace) -> None:
    """Input errors: annotations in github format, text otherwise; then how many."""
    from pathlib import Path  # tests/cli/test_startup.py::test_help_and_version_import_no_pathlib

    # Imported here: tests/cli/test_startup.py::test_help_imports_no_subcommand_module.
    from ci_policy.cli.paths import workspace_paths
    from ci_policy.render.report import diagnostics

    if args.format == "github":
        repo = getattr(args, "repo", None) or getattr(args, "trusted_repo", None)
        path_of = workspace_paths(Path(repo), args.config) if repo else (lambda p: p)
        write_commands(diagnostics(errors, "github", path_of))
    else:
        print(diagnostics(errors, "text"), file=sys.stderr)
    n = len(errors)
    print(f"ci-policy: {n} error{'s' if n != 1 else ''}", file=sys.stderr)


def report_usage(err: UsageError, args: argparse.Namespace) -> None:
    # Imported here: tests/cli/test_startup.py::test_help_imports_no_subcommand_module.
    from ci_policy.render.github import usage_error_github
    from ci_policy.render.text import usage_error_text

    if args.format == "github":
        write_commands(usage_error_github(args.command, err))
    print(usage_error_text(args.command, err), file=sys.stderr)


def entry() -> int:
    """The `ci-policy` program (console script, `python -m ci_policy`): `main` owning its process,
    which `run` may re-execute (`app.run.leave_secrets_behind`); `main` called in-process never is."""
    return main(own_process=True)


def main(argv: Sequence[str] | None = None, *, own_process: bool = False) -> int:
    # A lone surrogate (from a JSON escape in an input, say) is shown as \udxxx rather than
    # raising UnicodeEncodeError halfway through a report; stderr already does so.
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
    words = sys.argv[1:] if argv is None else argv
    if words and words[0] == "--version":
        # What argparse prints on meeting `--version` first, and its exit, without a parser
        # (nor a guard: the line is ci-policy's own).
        sys.stdout.write(f"ci-policy {__version__}\n")
        sys.exit(0)
    # Every line of both streams may be parsed for workflow commands (GitHub Actions, a
    # self-hosted runner without GITHUB_ACTIONS, a log piped into a job), argparse's own
    # errors (which quote the arguments) included: one guard for all of it, always.
    with guarded(os.environ.get("GITHUB_ACTIONS") == "true"):
        named = _wanted(argv)
        if len(named) == 1 and named[0][0] in COMMAND_EXTRAS:
            # Before the subcommand's module is imported: it imports the extra's modules. Imported
            # here: tests/cli/test_startup.py::test_help_imports_no_subcommand_module.
            from ci_policy.cli.extras import missing_command_extra

            missing = missing_command_extra(COMMAND_EXTRAS[named[0][0]])
            if missing is not None:
                print(f"ci-policy {named[0][0]}: error: {missing}", file=sys.stderr)
                return 2
        args = build_parser(argv, every=False).parse_args(argv)
        args.own_process = own_process
        with guarded(getattr(args, "format", None) == "github"):
            return _dispatch(args)


# Errors of writing to a stream (standard output), as opposed to reading the checkout.
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})


def _dispatch(args: argparse.Namespace) -> int:
    # Imported here: tests/cli/test_startup.py::test_help_imports_no_subcommand_module (nor typing,
    # which `errors` imports: test_help_and_version_import_neither_typing_nor_dataclasses).
    from ci_policy.cli.collector import paused
    from ci_policy.cli.extras import missing_extra
    from ci_policy.errors import CiPolicyError, InputError, InputErrors, UsageError, read_failure

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
        if isinstance(exc, OSError) and exc.filename is None and exc.errno in WRITE_ERRNOS:
            # Standard output could not take the result (a full disk, `> /dev/full`): no path of
            # the checkout is at fault.
            print(f"ci-policy {args.command}: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
            return 1
        # A checkout the core could not read (see errors.read_failure): an input error, not a crash.
        report_errors([read_failure(exc)], args)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(entry())
