"""`git diff` for the plan (an adapter): the PR's changed files from a repository.

- In: a repository directory and two revisions (the head may be omitted: the working tree).
- Out: a `read.diff.Diff`, parsed from `git diff --name-status -z -M BASE HEAD`.
- git runs with an argument list (no shell), external diff drivers, textconv and
  fsmonitor hooks disabled, stdin closed, and a timeout.
- Refused without running git: a revision that is not plain (`REV_RE`: no leading `-`,
  no spaces or shell syntax). Any failure of git is an unavailable diff, never "no changes".
- `content_ids(repo, paths)`: the content id of each repo-relative file, `sha256:<hex>` of
  its bytes; a missing file or a symlink (never followed) gets none.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
from collections.abc import Iterable
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


def content_ids(repo: Path, paths: Iterable[str] | None = None) -> dict[str, str]:
    """Map repo-relative POSIX paths to `sha256:<hex>` of their bytes.

    A path that is missing, not a regular file, or a symlink (at the file or a directory on
    the way) is absent from the result. `paths=None` names no file here.
    """
    out: dict[str, str] = {}
    for rel in paths or ():
        digest = _sha256(repo, rel)
        if digest is not None:
            out[rel] = digest
    return out


def _sha256(repo: Path, rel: str) -> str | None:
    current = repo
    for part in rel.split("/"):
        current = current / part
        try:
            st = os.lstat(current)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return None
    if not stat.S_ISREG(st.st_mode):
        return None
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(current, flags)
    except OSError:
        return None
    h = hashlib.sha256()
    with os.fdopen(fd, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()
