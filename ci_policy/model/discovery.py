"""Discovery: which files under the configured roots are test files.

- In: the checkout root and `Config.discovery` (roots, basename pattern(s), each root's
  own pattern(s), exclude globs).
- Out: sorted, repo-relative POSIX paths, identical across runs and machines. A file
  matches the pattern(s) of the most specific root containing it.
- Excluded paths are skipped before anything else: an excluded file is not a test file
  (nor an unregistered one), an excluded directory is not entered, and an excluded
  symlink is neither followed nor reported.
- Refused: a root that is missing or not a directory; a symlink at a root, at any
  directory between the repository root and a root, at any directory inside a root,
  or at a file matching the pattern. Symlinks are never followed.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ci_policy.config import Config, Discovery
from ci_policy.errors import Diagnostic, InputError
from ci_policy.read.checkout import check_no_symlinks

Kind = Literal["file", "symlink", "gitlink"]


@dataclass(frozen=True)
class IndexEntry:
    """A path of the checkout as git lists it (`adapters.git.checkout_index`): its kind and,
    for a tracked file whose working-tree copy is unmodified, its blob id (else None)."""

    kind: Kind
    blob: str | None


_SKIP_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn"})


def discover(repo: Path, config: Config) -> tuple[list[str], list[Diagnostic]]:
    """Return (test files, errors); errors do not stop the walk."""
    files: set[str] = set()
    errors: list[Diagnostic] = []
    for root in config.discovery.roots:
        where: dict[str, Any] = dict(path=config.path, line=config.line_of("discovery"))
        try:
            st = check_no_symlinks(repo, root, what="discovery root")
        except InputError as exc:
            errors.append(exc.diagnostic)
            continue
        if st is None:
            errors.append(Diagnostic(f"discovery root {root} does not exist", **where, code="CP402",
                                      hint="create the directory or remove it from discovery.roots"))
            continue
        if not stat.S_ISDIR(st.st_mode):
            errors.append(Diagnostic(f"discovery root {root} is not a directory", **where, code="CP403"))
            continue
        _walk(repo, root, config.discovery, files, errors)
    # Overlapping roots walk the same directories twice: report each problem once.
    return sorted(files), list(dict.fromkeys(errors))


def _walk(repo: Path, rel_dir: str, discovery: Discovery, files: set[str], errors: list[Diagnostic]) -> None:
    try:
        entries = sorted(os.scandir(repo / rel_dir), key=lambda e: e.name)
    except OSError as exc:
        errors.append(Diagnostic(f"directory {rel_dir} cannot be read: {exc.strerror}", path=rel_dir,
                                 code="CP404"))
        return
    for entry in entries:
        rel = entry.name if rel_dir == "." else f"{rel_dir}/{entry.name}"
        # A symlink is judged as the directory it may stand for: an excluded one is skipped
        # unread, so there is nothing to refuse.
        if discovery.excluded(rel, directory=entry.is_symlink() or entry.is_dir(follow_symlinks=False)):
            continue
        if entry.is_symlink():
            if discovery.name_matches(rel):
                subject = f"test file {rel} is a symlink"
            elif not os.path.exists(entry.path):
                subject = f"{rel} is a dangling symlink"
            elif _is_dir_target(entry):
                subject = f"directory {rel} is a symlink"
            else:
                continue  # a symlinked non-test file is never read
            errors.append(Diagnostic(
                f"{subject}; ci-policy refuses symlinks in a checkout",
                path=rel, code="CP401", hint="replace the symlink with the real file or directory"))
            continue
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in _SKIP_DIRS:
                _walk(repo, rel, discovery, files, errors)
        elif entry.is_file(follow_symlinks=False) and discovery.name_matches(rel):
            if not rel.isprintable():
                # A newline in a file name would start a new line (a workflow command) in logs.
                errors.append(Diagnostic(
                    f"test file {rel!r} has control characters in its path; ci-policy refuses such names",
                    path=repr(rel)[1:-1], code="CP407", hint="rename the file"))
                continue
            files.add(rel)


def _is_dir_target(entry: os.DirEntry[str]) -> bool:
    # A symlink is only inspected, never traversed. (Dangling links are reported before
    # this is asked; the fallback keeps an unreadable target from being dropped silently.)
    try:
        return entry.is_dir(follow_symlinks=True) or not os.path.exists(entry.path)
    except OSError:
        return True
