"""git for the plan (an adapter): the PR's changed files, and the content ids of files.

- In: a checkout (a repository directory), revisions and repo-relative paths.
- Out: a `read.diff.Diff`, content ids, a listing or a tree id: never an exception for what
  git does or prints.
- Refused: a revision that is not plain, without running git (an unavailable diff); a
  missing, symlinked or non-regular file gets no content id. Every failure of git (an error,
  a timeout, too much output) is an unavailable diff or no listing, never "no changes".
- `git_diff`: in, a repository directory and two revisions (the head may be omitted: the
  working tree); out, a `read.diff.Diff`, parsed from `git diff --name-status -z -M BASE HEAD`
  (at most `MAX_DIFF_BYTES` of it: more, or a timeout, is an unavailable diff).
  Refused without running git: a revision that is not plain (`REV_RE`: no leading `-`,
  no spaces or shell syntax). Any failure of git is an unavailable diff, never "no changes".
  An empty diff of two revisions is "no changes" (`Diff.no_changes()`) only when both name
  a tree of the repository (`git rev-parse --verify BASE^{tree}`): outside a repository git
  compares two filesystem paths instead and may print nothing. Against the working tree
  (no head) an empty diff stays unavailable: git diff does not list untracked files.
- `content_ids`: in, a checkout and optionally the repo-relative paths wanted; out, each
  existing regular file's content id: `git:<blob id>` for a file git tracks whose
  working-tree copy is unmodified (one `git ls-files -s -v -z` and one
  `git ls-files -m -o --exclude-standard -z`, run side by side), else `sha256:<hex>` of its
  bytes (every file when the checkout is no git work tree or git fails). A file marked
  assume-unchanged or skip-worktree is one git does not compare with its working-tree
  copy, so its blob id is not trusted: it is hashed like a modified file. Refused silently (absent from
  the result): a missing file, a symlink (never followed, nor any symlinked directory on
  the way), anything that is not a regular file, a gitlink.
- `checkout_index`: the same two `git ls-files` runs as the kinds of the paths git lists
  (file, symlink, gitlink) with their blob ids; None outside a git work tree.
  `start_checkout_index` starts them and returns the function that waits for the listing.
- `clean_tree`: the id of the git tree the checkout exactly is (`HEAD:./`, so a checkout
  that is a subdirectory of a work tree has its own), when `git status` finds nothing
  under it: no staged, unstaged or untracked (not ignored) change; None otherwise or
  outside a git work tree. Two checkouts with the same clean tree list the same files with
  the same blob ids, so a stage job can trust the plan's listing without making its own.
  `rev-parse` and `status` run side by side; `start_clean_tree` starts them (`CleanTree`, its
  two git processes, no thread) and returns the function that waits for the answer, so a
  command can go on meanwhile; a stage job starts them before its imports and the plan
  file's reading, and `CleanTree.cancel()` ends them when the answer is not wanted.
- Imports nothing of the core but `read.diff` and `model.discovery`, and those when a
  function needs them, so that a caller can start git before importing the rest.
- git runs with an argument list (no shell), external diff drivers, textconv and
  fsmonitor hooks disabled, stdin closed, a timeout, and a cap on what it may print.
"""

from __future__ import annotations

import hashlib
import os
import re
import selectors
import stat
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ci_policy.read.lazyregex import LazyRegex

if TYPE_CHECKING:
    from ci_policy.model.discovery import IndexEntry, Kind
    from ci_policy.read.diff import Diff

REV_RE = LazyRegex(r"[A-Za-z0-9_][A-Za-z0-9_./@^~{}:-]*")


def git_diff(repo: Path, base: str, head: str | None = None, *, timeout: float = 120) -> Diff:
    """Run git diff (no shell); any failure means the diff is unavailable."""
    # Imported here: a stage job starts git before its other imports
    # (tests/adapters/test_git.py::test_importing_the_module_loads_neither_the_diff_reader_nor_tempfile).
    from ci_policy.read.diff import Diff, read_diff

    for rev in (base, head):
        if rev is not None and not REV_RE.fullmatch(rev):
            return Diff.unavailable(f"revision {rev!r} is not a plain git revision")
    args = ["-c", "diff.external=", "diff", "--no-ext-diff", "--no-textconv", "--name-status", "-z", "-M", base]
    if head is not None:
        args.append(head)
    args.append("--")
    source = f"git diff {base} {head or '(working tree)'}"
    command = _Git(repo, args, timeout=timeout, limit=MAX_DIFF_BYTES, errors=True)
    out = command.output()
    if out is None:
        return Diff.unavailable(f"{source} failed{command.failure}")
    if out == b"" and head is not None:
        trees = [_Git(repo, ["rev-parse", "--verify", "--quiet", f"{rev}^{{tree}}"], timeout=timeout, limit=200)
                 for rev in (base, head)]
        if all(tree.output() for tree in trees):
            return Diff.no_changes()
    return read_diff(out, source)


# What `git diff --name-status` may print: a million changed paths of 60 bytes. More is no
# pull request ci-policy could plan: the diff is unavailable, never read in part.
MAX_DIFF_BYTES = 64 * 1024 * 1024


# A listing of 200,000 paths is a few MiB; a checkout that makes git print more is refused
# (the caller falls back to hashing the files it needs).
MAX_LISTING_BYTES = 256 * 1024 * 1024
LISTING_TIMEOUT = 60.0
_HASH_CHUNK = 1024 * 1024


class _Git:
    """One git command, started at once; `output()` waits for its stdout: None on any failure,
    on its timeout (counted from the start) or for output over `limit` (default
    `MAX_LISTING_BYTES`), and then `failure` says which (with `errors`, the last line git
    wrote to stderr, kept in a temporary file: never a pipe that could fill)."""

    def __init__(self, repo: Path, args: list[str], *, timeout: float = LISTING_TIMEOUT,
                 limit: int | None = None, errors: bool = False) -> None:
        self.limit = MAX_LISTING_BYTES if limit is None else limit
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.failure = ""
        argv = ["git", "-C", str(repo), "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
                "--no-optional-locks", *args]
        self.proc: subprocess.Popen[bytes] | None
        self.stderr: IO[bytes] | None = None
        if errors:
            # Only here: a stage job starts git before its other imports (see git_diff;
            # test_importing_the_module_loads_neither_the_diff_reader_nor_tempfile).
            import tempfile

            self.stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=self.stderr if self.stderr is not None else subprocess.DEVNULL)
        except OSError as exc:
            self.proc = None
            self.failure = f": {exc}"

    def _last_error_line(self) -> str:
        if self.stderr is None:
            return "no output"
        self.stderr.seek(0)
        lines = self.stderr.read(1 << 16).decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else "no output"

    def output(self) -> bytes | None:
        try:
            return self._output()
        finally:
            if self.stderr is not None:
                self.stderr.close()
                self.stderr = None

    def _output(self) -> bytes | None:
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        assert proc.stdout is not None
        chunks: list[bytes] = []
        total = 0
        ok = True
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while True:
                left = self.deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    ok = False
                    break
                chunk = os.read(proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    break
                total += len(chunk)
                if total > self.limit:
                    ok = False
                    break
                chunks.append(chunk)
        if not ok:
            proc.kill()
        proc.stdout.close()
        try:
            code = proc.wait(timeout=max(self.deadline - time.monotonic(), 1.0))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            self.failure = f": timed out after {self.timeout:g} s"
            return None
        if not ok:
            self.failure = (f": it printed more than {self.limit} bytes" if total > self.limit
                            else f": timed out after {self.timeout:g} s")
            return None
        if code != 0:
            self.failure = f" (exit {code}): {self._last_error_line()}"
            return None
        return b"".join(chunks)

    def cancel(self) -> None:
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.kill()
            assert proc.stdout is not None
            proc.stdout.close()
            proc.wait()


def checkout_index(repo: Path) -> dict[str, IndexEntry] | None:
    """Every path git lists under `repo` (tracked, and untracked but not ignored); None if git fails."""
    return start_checkout_index(repo)()


def start_checkout_index(repo: Path) -> Callable[[], dict[str, IndexEntry] | None]:
    """`checkout_index(repo)` started now; call the result (as often as wanted) for the listing."""
    changed = _Git(repo, ["ls-files", "-m", "-o", "--exclude-standard", "-z"])
    # `-v`: a tag before each record, `H` for a file git compares with its working-tree copy.
    staged = _Git(repo, ["ls-files", "-s", "-v", "-z"])
    done: list[dict[str, IndexEntry] | None] = []

    def listing() -> dict[str, IndexEntry] | None:
        if not done:
            done.append(_index_of(staged.output(), changed.output()))
        return done[0]
    return listing


def _index_of(staged: bytes | None, changed: bytes | None) -> dict[str, IndexEntry] | None:
    # model.discovery loads the configuration: test_a_stage_job_given_its_per_stage_plan_parses_no_configuration
    from ci_policy.model.discovery import IndexEntry

    if staged is None or changed is None:
        return None
    out: dict[str, IndexEntry] = {}
    conflicted: set[str] = set()
    # Decoded once (the file system's encoding: a name that is no UTF-8 keeps its bytes as
    # surrogates, as os.fsdecode of each name would); NUL and TAB are single bytes in it.
    for record in os.fsdecode(staged).split("\0"):
        if not record:
            continue
        # `<tag> <mode> <object id> <stage>\t<path>`: the fields at fixed places, the object
        # id 40 hex digits (SHA-1) or 64 (SHA-256, whose files are hashed here instead). A
        # tag other than `H` (assume-unchanged is lower case, skip-worktree `S`) marks a file
        # whose working-tree copy git does not look at: its blob id proves nothing.
        meta, _, path = record.partition("\t")
        if len(meta) not in (51, 75) or meta[1] != " " or meta[8] != " " or meta[-2] != " " or not path:
            return None  # not the format asked for: trust nothing of it
        tag, mode, blob, stage_no = meta[0], meta[2:8], meta[9:-2], meta[-1]
        kind: Kind = "symlink" if mode == "120000" else "gitlink" if mode == "160000" else "file"
        if stage_no != "0":
            conflicted.add(path)
        out[path] = IndexEntry(kind, blob if kind == "file" and tag == "H" and len(blob) == 40 else None)
    for path in conflicted:
        out[path] = IndexEntry(out[path].kind, None)
    for path in os.fsdecode(changed).split("\0"):
        if not path or path.endswith("/"):  # an untracked nested repository is listed as `dir/`
            continue
        previous = out.get(path)
        out[path] = IndexEntry(previous.kind if previous is not None else "file", None)
    return out


_TREE_ID_RE = re.compile(rb"([0-9a-f]{40}|[0-9a-f]{64})\n?")


class CleanTree:
    """`clean_tree(repo)`, its git commands started now and run at once; `result()` waits for them."""

    def __init__(self, repo: Path) -> None:
        self._tree = _Git(repo, ["rev-parse", "--verify", "--quiet", "HEAD:./"], limit=200)
        # Any output at all is a change (limit 0): staged, unstaged, or an untracked file that
        # is not ignored; a modified submodule counts too.
        self._status = _Git(repo, ["status", "--porcelain=v1", "-z", "--untracked-files=all",
                                   "--ignore-submodules=none", "--", "."], limit=0)
        # `git status` does not compare a file marked assume-unchanged or skip-worktree with
        # its working-tree copy: one such file and the tree proves nothing. Every record of
        # `ls-files -v` must carry the `H` tag.
        self._tags = _Git(repo, ["ls-files", "-v", "-z", "--", "."])

        self._answer: list[str | None] = []

    def result(self) -> str | None:
        """The answer (the same on every call); None when `cancel()` came first."""
        if not self._answer:
            tree = self._tree.output()
            found = _TREE_ID_RE.fullmatch(tree) if tree is not None else None
            if found is None:
                self._status.cancel()
            clean = found is not None and self._status.output() == b""
            if not clean:
                self._tags.cancel()
            self._answer.append(found.group(1).decode("ascii") if clean and found is not None
                                and _all_compared(self._tags.output()) else None)
        return self._answer[0]

    def cancel(self) -> None:
        """Ends the commands not waited for yet (nothing once `result()` returned)."""
        self._tree.cancel()
        self._status.cancel()
        self._tags.cancel()

    def __enter__(self) -> CleanTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()


def _all_compared(tags: bytes | None) -> bool:
    """Whether every record of `git ls-files -v -z` is tagged `H` (git compares the file with
    its working-tree copy); False when the listing failed."""
    if tags is None:
        return False
    # NUL ends each record and cannot be in a path, so `\0H ` only starts a record.
    records = tags.count(b"\0")
    return records == tags.count(b"\0H ") + (1 if tags.startswith(b"H ") else 0)


def clean_tree(repo: Path) -> str | None:
    """The tree id of the checkout when it has no change git would report, else None."""
    return CleanTree(repo).result()


def start_clean_tree(repo: Path) -> Callable[[], str | None]:
    """`clean_tree(repo)` started now; call the result for the answer."""
    return CleanTree(repo).result


def sha256_id(repo: Path, rel: str) -> str | None:
    """`sha256:<hex>` of a regular file's bytes; None when it is missing, a symlink (at the
    file or any directory on its way) or not a regular file."""
    return _file_id(repo, rel, blob=False)


def blob_id(repo: Path, rel: str) -> str | None:
    """`git:<hex>`, the id git gives a regular file's bytes as a blob (SHA-1), read as `sha256_id` reads."""
    return _file_id(repo, rel, blob=True)


def _file_id(repo: Path, rel: str, *, blob: bool) -> str | None:
    parts = rel.split("/")
    if rel.startswith("/") or any(part in ("", ".", "..") for part in parts):
        return None  # only plain repo-relative paths name a file of the checkout
    current = repo
    for part in parts[:-1]:
        current = current / part
        try:
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return None
        except OSError:
            return None
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(repo / rel, flags)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # before a file object is made: a directory cannot be one
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as fh:
        # A blob's id covers a header of its size (as the file is now, read whole below).
        digest = hashlib.sha1(b"blob %d\0" % st.st_size, usedforsecurity=False) if blob else hashlib.sha256()
        size = 0
        while chunk := fh.read(_HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    if blob and size != st.st_size:
        return None  # the file changed while it was read
    return f"{'git' if blob else 'sha256'}:{digest.hexdigest()}"


def _walk_files(repo: Path) -> list[str]:
    """Every regular file below `repo` outside `.git`, never entering a symlinked directory."""
    found: list[str] = []
    for top, dirs, files in os.walk(repo, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != ".git" and not os.path.islink(os.path.join(top, d)))
        rel_top = os.path.relpath(top, repo)
        for name in files:
            found.append(name if rel_top == "." else f"{Path(rel_top).as_posix()}/{name}")
    return sorted(found)


def content_ids(repo: Path, paths: Iterable[str] | None = None) -> dict[str, str]:
    """Content ids of the regular files of a checkout (see the module doc)."""
    repo = Path(repo)
    index = checkout_index(repo)
    return ids_from_index(repo, index, paths)


def ids_from_index(repo: Path, index: Mapping[str, IndexEntry] | None,
                   paths: Iterable[str] | None = None) -> dict[str, str]:
    """`content_ids` with the listing already made (`checkout_index`; None: not a git work tree)."""
    if paths is None:
        wanted = sorted(p for p, e in index.items() if e.kind == "file") if index is not None else _walk_files(repo)
    else:
        wanted = list(dict.fromkeys(paths))
    out: dict[str, str] = {}
    none: dict[str, IndexEntry] = {}
    entry_of = (index if index is not None else none).get  # once, not a test per path (thousands)
    for path in wanted:
        entry = entry_of(path)
        if entry is not None:
            if entry.kind != "file":
                continue  # a symlink or a gitlink has no content of its own here
            if entry.blob is not None:
                # Unmodified per git; a symlink put where a tracked file was is listed by `-m`.
                out[path] = "git:" + entry.blob
                continue
        found = sha256_id(repo, path)
        if found is not None:
            out[path] = found
    return out
