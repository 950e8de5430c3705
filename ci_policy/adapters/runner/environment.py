"""What a test can learn of the runner that starts it (an adapter: Linux process flags and users).

- In: the runner's own process and environment (the secrets it holds) and `runner.user`.
- Out: the runner hidden from its tests, its secrets out of its environment block, and who
  the tests run as (`RunAs`), as below.
- `hide_from_tests()`: marks the runner non-dumpable (`PR_SET_DUMPABLE` 0), so a process of
  the same user that is not privileged (a test, or anything it starts) can no longer read
  the runner's `/proc/<pid>/environ` or memory. Returns whether the flag was set; False off
  Linux or where `prctl` is unavailable.
- `leave_secrets_behind(argv)`: a process's environment block (`/proc/<pid>/environ`) is
  fixed when it starts, and a process that holds `CAP_SYS_PTRACE` (root, outside a
  container's default capabilities) reads it even when the runner is not dumpable. So
  `ci-policy run`, holding variables named by `config.runrules.SECRET_NAMES` (the store URL,
  tokens), writes them to an anonymous file (`memfd_create`), and re-executes itself with an
  environment without them and the file's descriptor in `CI_POLICY_SECRETS_FD`; the new
  program reads them back into `os.environ` (which changes the C library's environment, not
  the block `/proc` shows), closes the descriptor and unsets the variable before any test
  starts. Tests never see them (`child_env`) nor inherit the descriptor (it is closed first,
  and `Popen` closes the others). Nothing happens off Linux, or when nothing secret is held.
- Refused: as a `UsageError` naming the variable: a `CI_POLICY_SECRETS_FD` that is not an open
  descriptor holding a JSON object of secret names to strings.
- `run_as(name, holding)`: who the tests run as. When the runner runs as root and
  `runner.user` names a user, that user (its ids, its home), so `/proc` and ptrace of the
  runner are closed to the tests and a `--store-file` readable only by root stays so.
  Warnings (returned, printed once by the caller): `runner.user` named but the runner is not
  root and is someone else (it cannot switch); the runner is root, holds a secret and no
  `runner.user` is set (the tests can read it). Refused as a `UsageError` naming
  `runner.user`: a user that does not exist, or that is root.
- What stays open: a test that is root itself (a container that runs its tests as root with
  no `runner.user`, or `--privileged`) can read the runner's memory; the docs say so.
"""

from __future__ import annotations

import ctypes
import json
import os
import pwd
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from ci_policy.config.runrules import SECRET_NAMES
from ci_policy.errors import UsageError
from ci_policy.read.globs import any_name_match

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3
SECRETS_FD_ENV = "CI_POLICY_SECRETS_FD"
MAX_SECRETS_BYTES = 1024 * 1024

_is_secret = any_name_match(SECRET_NAMES)


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


def held_secrets(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables of `environ` that hold secrets (a name of `SECRET_NAMES`, a non-empty value)."""
    return {name: value for name, value in environ.items() if value and _is_secret(name)}


def leave_secrets_behind(argv: list[str]) -> None:
    """Read the secrets a re-execution handed over; else, holding any, re-execute without them.

    `argv`: the process's own command line as the interpreter got it (`sys.orig_argv`)."""
    handed = os.environ.pop(SECRETS_FD_ENV, None)  # unset: no child sees it
    if handed is not None:
        os.environ.update(_read_handed(handed))
        return
    held = held_secrets()
    if not held or not sys.platform.startswith("linux") or not hasattr(os, "memfd_create"):
        return
    fd = os.memfd_create("ci-policy-secrets", 0)
    data = json.dumps(held).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    env = {name: value for name, value in os.environ.items() if name not in held}
    env[SECRETS_FD_ENV] = str(fd)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)


def _read_handed(text: str) -> dict[str, str]:
    def refuse(why: str) -> UsageError:
        return UsageError(f"{why}; it is set only by ci-policy run itself", source=f"${SECRETS_FD_ENV}",
                          hint=f"unset {SECRETS_FD_ENV}")

    if not (text.isascii() and text.isdigit() and len(text) <= 9):
        raise refuse(f"{text!r} is not a file descriptor")
    fd = int(text)
    try:
        data = os.read(fd, MAX_SECRETS_BYTES + 1)
        os.close(fd)
    except OSError as exc:
        raise refuse(f"descriptor {fd} cannot be read ({exc.strerror})") from None
    try:
        secrets = json.loads(data) if len(data) <= MAX_SECRETS_BYTES else None
    except ValueError:
        secrets = None
    if not (isinstance(secrets, dict)
            and all(isinstance(k, str) and isinstance(v, str) and _is_secret(k) for k, v in secrets.items())):
        raise refuse(f"descriptor {fd} does not hold the secrets ci-policy run hands over")
    return secrets


@dataclass(frozen=True)
class RunAs:
    """The user the tests run as: `runner.user`, resolved on this machine."""

    name: str
    uid: int
    gid: int
    home: str


def run_as(name: str | None, holding: tuple[str, ...]) -> tuple[RunAs | None, tuple[str, ...]]:
    """(who the tests run as, None for the runner's own user; the warnings to print once).

    `holding`: what secret this runner holds (variable names, `--store-file`), for the warning."""
    euid = os.geteuid()
    if name is None:
        if euid == 0 and holding:
            return None, (f"the tests run as root, so they can read this runner's memory, which holds "
                          f"{', '.join(holding)}: set runner.user to an unprivileged user (the checkout must be "
                          "readable by it)",)
        return None, ()
    try:
        entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
    except (KeyError, OverflowError):
        raise UsageError(f"no user {name!r} on this machine", source="runner.user",
                         hint="create it (e.g. useradd --no-create-home ci-tests), or name another user") from None
    if entry.pw_uid == 0:
        raise UsageError(f"{name!r} is root: the tests must run as an unprivileged user", source="runner.user")
    if euid != 0:
        if entry.pw_uid == euid:
            return None, ()
        return None, (f"runner.user is {name!r}, but ci-policy runs as user id {euid}, not root, so it cannot "
                      f"switch: the tests run as user id {euid}",)
    return RunAs(name=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid, home=entry.pw_dir), ()


def become(user: RunAs) -> None:
    """In the forked child, before it runs the test: drop every group and become `user`."""
    os.setgroups([])
    os.setgid(user.gid)
    os.setuid(user.uid)
