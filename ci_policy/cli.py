"""The `ci-policy` command line: argument parsing and output, nothing else.

- In: argv.
- Out: text on stdout/stderr and an exit code: 0 success, 1 a policy/input error
  (every error printed, located, with a hint), 2 a usage error.
- Policy lives in the core modules; adapters (PyGithub, libcst, database drivers)
  are imported only inside the subcommands that need them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

from . import __version__
from .errors import PolicyError, PolicyErrors


def _repo_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", default=".", metavar="DIR",
                   help="root of the checkout to read (default: the current directory)")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="configuration file (default: DIR/.github/ci-policy.yml)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ci-policy",
        description="CI policy engine for repositories whose tests run on scarce accelerators.")
    parser.add_argument("--version", action="version", version=f"ci-policy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("lint", help="check configuration, labels, registrations and gate declarations")
    _repo_arg(p)
    p.add_argument("--format", choices=("text", "json", "github"), default="text")
    p.set_defaults(func=cmd_lint)

    p = sub.add_parser("registry", help="list every test registration")
    _repo_arg(p)
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_registry)
    return parser


def _path_of(repo: Path) -> Callable[[str], str]:
    """Annotation paths relative to the workspace (the current directory) when possible."""
    def convert(path: str) -> str:
        candidate = repo / path
        try:
            return Path(os.path.relpath(candidate, Path.cwd())).as_posix() if not Path(path).is_absolute() \
                and not os.path.relpath(candidate, Path.cwd()).startswith("..") else path
        except ValueError:
            return path
    return convert


def cmd_lint(args: argparse.Namespace) -> int:
    from .lint import lint
    from .render import lint_report

    repo = Path(args.repo)
    report = lint(repo, args.config)
    print(lint_report(report, args.format, _path_of(repo)))
    return 0 if report.ok else 1


def cmd_registry(args: argparse.Namespace) -> int:
    from .render import registry_json, registry_text
    from .snapshot import load_snapshot

    snapshot = load_snapshot(Path(args.repo), args.config).require_valid()
    render = registry_json if args.format == "json" else registry_text
    print(render(snapshot.registrations))
    return 0


def report_errors(errors: Sequence[PolicyError], fmt: str, repo: Optional[Path]) -> None:
    """The one place errors become output: annotations in github format, text otherwise."""
    from .render import diagnostics

    path_of = _path_of(repo) if repo is not None else (lambda p: p)
    if fmt == "github":
        print(diagnostics(errors, "github", path_of))
    else:
        print(diagnostics(errors, "text"), file=sys.stderr)
    n = len(errors)
    print(f"ci-policy: {n} error{'s' if n != 1 else ''}", file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    fmt = getattr(args, "format", "text")
    repo = Path(args.repo) if getattr(args, "repo", None) else None
    try:
        return args.func(args)
    except PolicyErrors as exc:
        report_errors(exc.errors, fmt, repo)
        return 1
    except PolicyError as exc:
        report_errors([exc], fmt, repo)
        return 1
    except BrokenPipeError:
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
