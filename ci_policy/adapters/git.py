"""`git diff` for the plan (an adapter): the PR's changed files from a repository.

- In: a repository directory and two revisions (the head may be omitted: the working tree).
- Out: a `read.diff.Diff`, parsed from `git diff --name-status -z -M BASE HEAD`.
- git runs with an argument list (no shell), external diff drivers, textconv and
  fsmonitor hooks disabled, stdin closed, and a timeout.
- Refused without running git: a revision that is not plain (`REV_RE`: no leading `-`,
  no spaces or shell syntax). Any failure of git is an unavailable diff, never "no changes".
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ci_policy.read.diff import Diff, read_diff

REV_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./@^~{}:-]*")


def git_diff(repo: Path, base: str, head: str | None = None, *, timeout: float = 120) -> Diff:
    """Run git diff (no shell); any failure means the diff is unavailable."""
    for rev in (base, head):
        if rev is not None and not REV_RE.fullmatch(rev):
            return Diff.unavailable(f"revision {rev!r} is not a plain git revision")
    argv = ["git", "-C", str(repo), "-c", "core.fsmonitor=false", "-c", "diff.external=",
            "diff", "--no-ext-diff", "--no-textconv", "--name-status", "-z", "-M", base]
    if head is not None:
        argv.append(head)
    argv.append("--")
    source = f"git diff {base} {head or '(working tree)'}"
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Diff.unavailable(f"{source} failed: {exc}")
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return Diff.unavailable(f"{source} failed (exit {proc.returncode}): {err[-1] if err else 'no output'}")
    return read_diff(proc.stdout, source)
