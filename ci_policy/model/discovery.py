"""Discovery: which files under the configured roots are test files.

- In: the checkout root and `Config.discovery` (roots, basename pattern(s), each root's
  own pattern(s), exclude globs).
- Out: sorted, repo-relative POSIX paths, identical across runs and machines. A file
  matches the pattern(s) of the most specific root containing it.
- Excluded paths are skipped before anything else: an excluded file is not a test file
  (nor an unregistered one), an excluded directory is not entered, and an excluded
  symlink is neither followed nor reported. A root that is excluded (itself or a
  directory above it) finds nothing; below a root, a path is matched against the exclude
  globs itself only, since the directories on its way were matched when they were entered.
- Refused: a root that is missing or not a directory; a symlink at a root, at any
  directory between the repository root and a root, at any directory inside a root,
  or at a file matching the pattern. Symlinks are never followed.
- From the git index: given `index` (every path git lists in a git work tree, tracked or
  untracked but not ignored: `adapters.git.checkout_index`), the candidates are the listed
  paths below each root instead of a walk of the tree, and every rule above applies to
  them unchanged: each directory on a candidate's way and the candidate itself are
  lstat-ed (a listed path that is a symlink now, whatever git recorded, is judged as the
  walk judges a symlink; one that no longer exists is skipped), excluded and skipped
  directories are not looked into. A candidate git lists with its blob id is not lstat-ed
  again: git compared it with its lstat and found the regular file it tracks (a symlink,
  directory or nothing in its place is a change git lists, so it has no blob id). On trees
  without ignored files or nested repositories the files and diagnostics equal the walk's.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ci_policy.config.discovery import Discovery
from ci_policy.config.top import Config
from ci_policy.errors import Diagnostic, InputError
from ci_policy.read.checkout import check_no_symlinks

Kind = Literal["file", "symlink", "gitlink"]


# Slots: one a path of the checkout, held to the command's end (peak RSS, issue 33).
@dataclass(frozen=True, slots=True)
class IndexEntry:
    """A path of the checkout as git lists it (`adapters.git.checkout_index`): its kind and,
    for a tracked file whose working-tree copy is unmodified, its blob id (else None)."""

    kind: Kind
    blob: str | None


_SKIP_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn"})


def discover(repo: Path, config: Config, index: Mapping[str, IndexEntry] | None = None
             ) -> tuple[list[str], list[Diagnostic]]:
    """Return (test files, errors); errors do not stop the walk. `index`: see the module doc."""
    listed = sorted(index) if index is not None else None
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
        if root != "." and config.discovery.excluded(root, directory=True):
            continue  # everything below it is excluded
        if listed is None or index is None:
            _walk(repo, root, config.discovery, files, errors)
        else:
            _from_index(repo, root, config.discovery, listed, index, files, errors)
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
        if discovery.excluded_itself(rel, directory=entry.is_symlink() or entry.is_dir(follow_symlinks=False)):
            continue
        if entry.is_symlink():
            _refuse_symlink(repo, rel, discovery, errors)
            continue
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in _SKIP_DIRS:
                _walk(repo, rel, discovery, files, errors)
        elif entry.is_file(follow_symlinks=False) and discovery.name_matches(rel):
            _add_file(rel, files, errors)


def _refuse_symlink(repo: Path, rel: str, discovery: Discovery, errors: list[Diagnostic]) -> None:
    path = repo / rel
    if discovery.name_matches(rel):
        subject = f"test file {rel} is a symlink"
    elif not os.path.exists(path):
        subject = f"{rel} is a dangling symlink"
    elif _is_dir_target(path):
        subject = f"directory {rel} is a symlink"
    else:
        return  # a symlinked non-test file is never read
    errors.append(Diagnostic(
        f"{subject}; ci-policy refuses symlinks in a checkout",
        path=rel, code="CP401", hint="replace the symlink with the real file or directory"))


def _add_file(rel: str, files: set[str], errors: list[Diagnostic]) -> None:
    if not rel.isprintable():
        # A newline in a file name would start a new line (a workflow command) in logs.
        errors.append(Diagnostic(
            f"test file {rel!r} has control characters in its path; ci-policy refuses such names",
            path=repr(rel)[1:-1], code="CP407", hint="rename the file"))
        return
    files.add(rel)


def _is_dir_target(path: Path) -> bool:
    # A symlink is only inspected, never traversed. (Dangling links are reported before
    # this is asked; the fallback keeps an unreadable target from being dropped silently.)
    try:
        return stat.S_ISDIR(os.stat(path).st_mode) or not os.path.exists(path)
    except OSError:
        return True


def _from_index(repo: Path, root: str, discovery: Discovery, listed: list[str], index: Mapping[str, IndexEntry],
                files: set[str], errors: list[Diagnostic]) -> None:
    """The walk's rules applied to the listed paths below `root` (see the module doc)."""
    prefix = "" if root == "." else f"{root}/"
    # A directory below the root: whether candidates beneath it are looked at.
    open_dirs: dict[str, bool] = {}
    # A candidate's directory: whether every directory on its way is looked into.
    dir_ok: dict[str, bool] = {}
    top = os.path.join(os.fspath(repo), "")  # the paths are joined as strings: one lstat each, no Path
    name_matches = discovery.name_matcher()
    # Without exclude globs nothing is excluded: no call per path to say so.
    excluded_itself = discovery.excluded_itself if discovery.exclude else None
    for path in listed:
        if not path.startswith(prefix) or path == prefix:
            continue
        head = path.rpartition("/")[0]
        ok = dir_ok.get(head)
        if ok is None:  # the first candidate in this directory: its way is judged once
            parts = path[len(prefix):].split("/")
            ok = True
            for depth in range(1, len(parts)):
                rel = prefix + "/".join(parts[:depth])
                known = open_dirs.get(rel)
                if known is None:
                    known = open_dirs[rel] = _enter(repo, rel, discovery, errors)
                if not known:
                    ok = False
                    break
            dir_ok[head] = ok
        if not ok:
            continue
        if index[path].blob is not None:  # an unmodified tracked regular file (see the module doc)
            if (excluded_itself is None or not excluded_itself(path)) and name_matches(path):
                if path.isprintable():  # what `_add_file` checks first, without its call
                    files.add(path)
                else:
                    _add_file(path, files, errors)
            continue
        try:
            st = os.lstat(top + path)
        except OSError:
            continue  # listed by git, gone from the working tree
        link = stat.S_ISLNK(st.st_mode)
        if discovery.excluded_itself(path, directory=link or stat.S_ISDIR(st.st_mode)):
            continue
        if link:
            _refuse_symlink(repo, path, discovery, errors)
        elif stat.S_ISREG(st.st_mode) and name_matches(path):
            _add_file(path, files, errors)


def _enter(repo: Path, rel: str, discovery: Discovery, errors: list[Diagnostic]) -> bool:
    """Whether the walk would enter directory `rel` (reporting a symlink there as it would)."""
    try:
        st = os.lstat(repo / rel)
    except OSError:
        return False
    link = stat.S_ISLNK(st.st_mode)
    if discovery.excluded_itself(rel, directory=link or stat.S_ISDIR(st.st_mode)):
        return False
    if link:
        _refuse_symlink(repo, rel, discovery, errors)
        return False
    return stat.S_ISDIR(st.st_mode) and rel.rsplit("/", 1)[-1] not in _SKIP_DIRS
