"""The `ci-policy` command line: each subcommand parses argv into a request, calls one use case
(`ci_policy.app`), renders its result and exits 0, 1 (a policy or input error) or 2 (a usage error)."""

from ci_policy.cli.main import main

__all__ = ["main"]
