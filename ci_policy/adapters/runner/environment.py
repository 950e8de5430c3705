"""What a test can learn of the runner that starts it (an adapter: Linux process flags).

- `hide_from_tests()`: marks the runner non-dumpable (`PR_SET_DUMPABLE` 0), so a process of
  the same user that is not privileged (a test, or anything it starts) can no longer read
  the runner's `/proc/<pid>/environ` or memory, where `$GITHUB_TOKEN` and
  `$CI_POLICY_DATABASE_URL` still are even though the tests' own environment is built
  without them (`ci_policy.config.runner.child_env`). A test run as root reads them
  anyway: run tests as an unprivileged user.
- Returns whether the flag was set; False off Linux or where `prctl` is unavailable.
- The runner's command line stays readable by every process (`/proc/<pid>/cmdline`):
  `run` and `gate` refuse a store URL holding a password there (`ci_policy.cli.options`).
"""

from __future__ import annotations

import ctypes
import sys

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


def _prctl(option: int, value: int = 0) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(option, value, 0, 0, 0))


def hide_from_tests() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return _prctl(PR_SET_DUMPABLE, 0) == 0
    except (OSError, AttributeError):
        return False


def dumpable() -> bool | None:
    """The flag `hide_from_tests` clears; None where it cannot be read."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return _prctl(PR_GET_DUMPABLE) == 1
    except (OSError, AttributeError):
        return None
