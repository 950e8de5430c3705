"""`python -m ci_policy`: the same as the `ci-policy` command.

- In: the command line, as `ci-policy` takes it.
- Out: the exit status of `cli.main.entry`.
- Refused: nothing here: `cli.main` refuses a bad command line (exit 2).

`python -m` puts the current directory first on `sys.path`. ci-policy typically runs with
the current directory at the root of an untrusted checkout (a fork PR), so a `yaml.py` or
a `packaging/` there would be imported, and executed, in place of the real dependency the
moment a subcommand imports it. The entry is therefore removed before anything else of
ci_policy is imported.

What this cannot fix: by the time this file runs, `runpy` has already found and imported
the `ci_policy` package itself through that `sys.path`, together with the standard-library
modules `ci_policy/__init__.py` imports. A checkout that contains its own `ci_policy/` or
shadows one of those modules (e.g. a `typing.py`) still wins, so this is not acceptable for
untrusted checkouts: in CI, run the `ci-policy` console script (its `sys.path[0]` is the
script's directory) or `python -P -m ci_policy` (Python 3.11+), or run from a directory
outside the checkout and pass `--repo`.
"""

import os
import sys


def _drop_cwd_entry() -> None:
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return  # -P / PYTHONSAFEPATH: nothing was prepended
    first = sys.path[0]
    try:
        is_cwd = first == "" or os.path.samefile(first, os.getcwd())
    except OSError:
        is_cwd = False
    if is_cwd:
        del sys.path[0]


_drop_cwd_entry()

from ci_policy.cli.main import entry  # noqa: E402  (after the sys.path fix on purpose)

sys.exit(entry())
