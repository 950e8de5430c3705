"""The `ci-policy` command line: argument parsing and output, nothing else.

- In: argv. Out: text, JSON or GitHub workflow commands, and an exit code: 0 success,
  1 a policy or input error (every error printed, located, with a hint), 2 a usage error.
- `main.py` assembles the parser and maps errors to exit codes; `options.py` holds the
  options several subcommands share; each subcommand is one module (`lint`, `registry`,
  `plan`, `list`, `run`, `gate`, `tune`, `file_run`, `comment`).
- Policy lives in the core and the adapters, never here.
"""

from ci_policy.cli.main import main

__all__ = ["main"]
