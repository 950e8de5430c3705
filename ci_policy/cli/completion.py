"""`ci-policy completion`: a shell completion script for bash, zsh or fish, made from the parser.

- In: SHELL (`bash`, `zsh` or `fish`), `--prog NAME` (the command the script completes, default
  `ci-policy`); `--repo` is accepted, as by every subcommand, and unused.
- Out: the script on stdout, made by `shtab` from the parser `--help` prints: every subcommand,
  each subcommand's options, the choices of an option that has some, and file or directory
  names for an option that takes one (`FILE`, `DIR`, `PATH`). A subcommand whose extra is not
  installed completes by its name alone (its module, which imports the extra, is not imported).
- No use case (`ci_policy.app`): nothing of a checkout, a configuration or the world is read;
  the script is the command line's own parser rendered for a shell. `shtab` is imported by this
  module, which only `ci-policy completion` imports.
- Refused: a shell other than those three (argparse's choices, exit 2).
"""

from __future__ import annotations

import argparse
import sys

import shtab

from ci_policy.cli.extras import missing_command_extra
from ci_policy.cli.main import COMMAND_EXTRAS, build_parser, examples, summary
from ci_policy.cli.options import add_repo

NAME = "completion"
SHELLS = ("bash", "zsh", "fish")
# The metavars of options that name a file or a directory: completed with file names.
FILE_METAVARS = frozenset({"FILE", "OUT", "PATH", "R", "F", "FILE|DIR"})
DIR_METAVARS = frozenset({"DIR"})


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME, help=summary(NAME),
        description="Print a completion script for SHELL: subcommands, their options and the choices of "
                    "options. Load it in the running shell, or install it where the shell reads completions.",
        epilog=examples(
            ("bash: load it now, or install it in ~/.local/share/bash-completion/completions/ci-policy",
             "ci-policy completion bash"),
            ("zsh: save it as _ci-policy in a directory of $fpath",
             "ci-policy completion zsh"),
            ("fish: save it as ~/.config/fish/completions/ci-policy.fish",
             "ci-policy completion fish")))
    p.add_argument("shell", metavar="SHELL", choices=SHELLS, help="the shell: " + ", ".join(SHELLS))
    p.add_argument("--prog", default="ci-policy", metavar="NAME",
                   help="the command name the script completes (default: ci-policy), for ci-policy "
                        "installed under another name")
    add_repo(p, help="accepted as by every subcommand; completion reads no checkout")
    return p


def run(args: argparse.Namespace) -> int:
    bare = frozenset(name for name, extra in COMMAND_EXTRAS.items() if missing_command_extra(extra) is not None)
    parser = build_parser(bare=bare)
    parser.prog = args.prog
    for action in _actions(parser):
        if action.option_strings and action.metavar in FILE_METAVARS:
            action.complete = shtab.FILE  # type: ignore[attr-defined]
        elif action.option_strings and action.metavar in DIR_METAVARS:
            action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]
    sys.stdout.write(shtab.complete(parser, shell=args.shell))
    return 0


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The actions of `parser` and of every subcommand's parser."""
    found = list(parser._actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found.extend(_actions(child))
    return found
