"""Evidence files and directories -> `FileEvidence` rows (`records.py`, `logs.py`).

- In: paths given to `ci-policy tune`: files, or directories walked in sorted order
  without following symbolic links.
- `*.jsonl` are timing records; `*.txt` and `*.log` are job logs. A GitHub log archive
  names a job's log `<N>_<job name>.txt`: the job name is the file name without the
  numeric prefix (job_id ""). The archive also holds a directory `<job name>/` with the
  same job's log cut into steps; it is not read when `<N>_<job name>.txt` is there (the
  same lines would count twice).
- run_id: from the nearest enclosing directory named `run-<id>`, if any (a record's own
  run_id wins).
- Out: all rows, in walk order; warnings (a torn last line of a timing-records file, see
  `records.py`) into the `warnings` list given. `walk(directory, errors)`: the walk itself
  (sorted at each level, symbolic links refused, never followed), which `history import` shares.
- Refused: every problem (a missing path, an unknown file type, a symbolic link met while
  walking, an unreadable file, malformed records), as an `InputError` naming the path; all
  of them are raised together as `InputErrors`, never skipped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import Union

from ci_policy.adapters.tuning.evidence import FileEvidence
from ci_policy.adapters.tuning.logs import read_log
from ci_policy.adapters.tuning.records import read_records
from ci_policy.errors import Diagnostic, InputError, InputErrors

RECORD_SUFFIXES = (".jsonl",)
LOG_SUFFIXES = (".txt", ".log")
ARCHIVE_LOG_RE = re.compile(r"^\d+_(?P<job>.+)\.txt$")
RUN_DIR_RE = re.compile(r"^run-(?P<id>\d+)$")
KINDS = "*.jsonl timing records, or *.txt/*.log job logs"

PathLike = Union[str, "os.PathLike[str]"]


def run_id_of(path: str) -> str | None:
    """The id of the nearest enclosing `run-<id>` directory."""
    for parent in Path(path).absolute().parents:
        m = RUN_DIR_RE.match(parent.name)
        if m:
            return m.group("id")
    return None


def job_name_of(path: str) -> str:
    """`3_stage-c-4-gpu-h200 (1).txt` -> `stage-c-4-gpu-h200 (1)`; other names give ""."""
    m = ARCHIVE_LOG_RE.match(os.path.basename(path))
    return m.group("job") if m else ""


def read_file(path: str, warnings: list[Diagnostic] | None = None) -> list[FileEvidence]:
    """The rows of one evidence file; raises InputErrors."""
    lower = path.lower()
    if lower.endswith(RECORD_SUFFIXES):
        return read_records(path, run_id=run_id_of(path), warnings=warnings)
    if lower.endswith(LOG_SUFFIXES):
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise InputErrors([InputError(f"cannot read job log: {exc.strerror or exc}", path=path)]) from None
        return read_log(data.decode("utf-8", "replace"), source=path, run_id=run_id_of(path) or "",
                        job_name=job_name_of(path))
    raise InputErrors([InputError(f"unknown evidence file type (expected {KINDS})", path=path,
                                    hint="extract archives first; remove other files or name the evidence "
                                         "files to read")])


def _read_into(path: str, rows: list, errors: list, warnings: list | None) -> None:
    try:
        rows += read_file(path, warnings)
    except InputErrors as exc:
        errors += exc.errors


def walk(directory: str, errors: list[InputError], *, what: str = "directory",
         prune: Callable[[list[os.DirEntry[str]]], Collection[str]] = lambda _entries: ()) -> Iterator[str]:
    """Every entry under `directory` that is not a directory, in sorted order at each level,
    never following a symbolic link: a link met, and a directory that cannot be listed, is an
    error in `errors` (`what` names the directories walked); the subdirectories `prune` names
    (given the entries of their parent) are not entered. `tune` and `history import` walk so."""
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        errors.append(InputError(f"cannot list {what}: {exc.strerror or exc}", path=directory))
        return
    pruned = prune(entries)
    for entry in entries:
        path = os.path.join(directory, entry.name)
        try:
            if entry.is_symlink():
                errors.append(InputError(f"a symbolic link; {what.replace('directory', 'directories')} are walked "
                                         "without following links", path=path,
                                         hint="give the link's target as a path of its own"))
            elif entry.is_dir(follow_symlinks=False):
                if entry.name not in pruned:
                    yield from walk(path, errors, what=what, prune=prune)
            else:
                yield path
        except OSError as exc:
            errors.append(InputError(f"cannot read: {exc.strerror or exc}", path=path))


def _job_log_steps(entries: list[os.DirEntry[str]]) -> set[str]:
    """The directories `<job name>/` of a log archive that also holds `<N>_<job name>.txt`."""
    return {m.group("job") for e in entries if (m := ARCHIVE_LOG_RE.match(e.name))}


def _walk(directory: str, rows: list, errors: list, warnings: list | None) -> None:
    for path in walk(directory, errors, what="evidence directory", prune=_job_log_steps):
        try:
            if os.path.isfile(path) and not os.path.islink(path):
                _read_into(path, rows, errors, warnings)
            else:
                errors.append(InputError("not a regular file or directory", path=path))
        except OSError as exc:
            errors.append(InputError(f"cannot read: {exc.strerror or exc}", path=path))


def collect(paths: Iterable[PathLike], warnings: list[Diagnostic] | None = None) -> list[FileEvidence]:
    """The rows of every evidence file under `paths`; raises InputErrors listing every problem."""
    rows: list[FileEvidence] = []
    errors: list[InputError] = []
    for given in paths:
        path = os.fspath(given)
        if not os.path.lexists(path):
            errors.append(InputError("no such evidence file or directory", path=path))
        elif os.path.isdir(path):
            _walk(path, rows, errors, warnings)
        elif os.path.isfile(path):
            _read_into(path, rows, errors, warnings)
        else:
            errors.append(InputError("not a regular file or directory", path=path))
    if errors:
        raise InputErrors(errors)
    return rows
