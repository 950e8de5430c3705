"""Workflows read through the scan cache: each file's `Workflow` stored by the hash of its text.

- In: the checkout, its workflows directory and a `ScanCache` (`cached_workflows`).
- Out: what `read.workflows.read_workflows` returns, equal: the `Workflow`s and the problems
  reading them. A workflow file's `Workflow` is a pure function of its path and text
  (`read.workflows.parse_workflow`), so it is stored under `scan_key(path, "sha256:" + the
  SHA-256 of the text)` in a context of its own (`workflow_context`: ci_policy's version,
  `WORKFLOW_FORMAT`, PyYAML's version; no configuration reaches it, so every configuration
  shares it). Each file is read every time (its text names the entry); only composing
  it is saved, about 1.5 ms of CPU a 12 KB workflow against 0.1 ms to decode its entry.
  A file that is not YAML is never stored (composed again each time).
- Refused: by `decode_workflow` (None, never an exception, whatever the data): a value of the
  wrong shape, type or range (a line or column below 1 or past `MAX_POSITION`, text longer
  than a workflow file may be, a lone surrogate); such an entry is named to the cache
  (`reject`: one warning a command) and the file composed again. By `encode_checked` (None:
  not stored) a `Workflow` that would not read back equal.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

from ci_policy import __version__
from ci_policy.errors import CiPolicyError, Diagnostic
from ci_policy.model.scan import ScanCache, scan_key
from ci_policy.read.checkout import MAX_FILE_BYTES
from ci_policy.read.workflows import Grants, Job, Located, StageRun, Workflow, parse_workflow, workflow_texts

# Bump whenever `Workflow` (or what `parse_workflow` makes of a text) changes shape.
WORKFLOW_FORMAT = 1
MAX_POSITION = 2**31
_REFUSED = "stored workflow(s) are damaged or not of the file they are stored for"
_AGAIN = "the workflows read and composed again (the cache is rewritten as they are)"


def workflow_context() -> str:
    """The pack of stored workflows: what besides a file's path and text makes its `Workflow`."""
    return hashlib.sha256(repr(("workflows", __version__, WORKFLOW_FORMAT, yaml.__version__)).encode()).hexdigest()


def cached_workflows(root: Path, directory: str, cache: ScanCache) -> tuple[list[Workflow], list[Diagnostic]]:
    """`read_workflows(root, directory)`, each file's `Workflow` through `cache` (see the module doc)."""
    context = workflow_context()
    stored = cache.load(context, then=_AGAIN)
    workflows: list[Workflow] = []
    problems: list[Diagnostic] = []
    new: dict[str, list[Any]] = {}
    used: list[str] = []
    refused: list[str] = []
    for item in workflow_texts(root, directory):
        if isinstance(item, Diagnostic):
            problems.append(item)
            continue
        rel, text = item
        key = scan_key(rel, f"sha256:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}")
        found = stored.get(key)
        if found is not None:
            hit = decode_workflow(found, rel)
            if hit is not None:
                used.append(key)
                workflows.append(hit)
                continue
            refused.append(key)
        parsed = parse_workflow(rel, text)
        if isinstance(parsed, Diagnostic):
            problems.append(parsed)
            continue
        workflows.append(parsed)
        encoded = encode_checked(parsed)
        if encoded is not None:
            new[key] = encoded
    if refused:
        cache.reject(context, refused, what=_REFUSED, then=_AGAIN)
    if new:
        cache.store(context, new, used)
    return workflows, problems


def _located(value: Located | None) -> list[Any] | None:
    return None if value is None else [value.value, value.line, value.col]


def _grants(value: Grants | None) -> list[Any] | None:
    if value is None:
        return None
    return [[list(pair) for pair in value.scopes], value.shorthand, value.line, value.col]


def _named(pairs: tuple[tuple[str, Located], ...]) -> list[Any]:
    return [[name, _located(at)] for name, at in pairs]


def encode_workflow(workflow: Workflow) -> list[Any]:
    """A `Workflow` as JSON-ready data, its path left out (the key names it)."""
    jobs = [[job.id, job.line, job.col, None if job.runs_on is None else list(job.runs_on),
             _located(job.runs_on_at), _located(job.uses), _named(job.with_),
             job.secrets if isinstance(job.secrets, str) else _named(job.secrets),
             [[run.stage, run.line, run.col] for run in job.stage_runs], _grants(job.permissions)]
            for job in workflow.jobs]
    return [list(workflow.triggers), jobs, _grants(workflow.permissions)]


def encode_checked(workflow: Workflow) -> list[Any] | None:
    """`encode_workflow(workflow)`, or None when `decode_workflow` would not read it back equal."""
    data = encode_workflow(workflow)
    return data if decode_workflow(data, workflow.path) == workflow else None


class _Damaged(CiPolicyError, ValueError):
    """A stored value that is not what `encode_workflow` writes for a workflow: a miss."""


def _text(value: Any) -> str:
    if type(value) is not str or len(value) > MAX_FILE_BYTES:
        raise _Damaged
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no text read as UTF-8 holds one
        raise _Damaged from None
    return value


def _position(value: Any, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if type(value) is not int or not 1 <= value <= MAX_POSITION:
        raise _Damaged
    return value


def _list(value: Any, length: int | None = None) -> list[Any]:
    if type(value) is not list or (length is not None and len(value) != length):
        raise _Damaged
    return value


def _decode_located(value: Any) -> Located | None:
    if value is None:
        return None
    text, line, col = _list(value, 3)
    return Located(_text(text), _position(line), _position(col))


def _decode_grants(value: Any) -> Grants | None:
    if value is None:
        return None
    scopes, shorthand, line, col = _list(value, 4)
    pairs = tuple((_text(scope), _text(level)) for scope, level in (_list(p, 2) for p in _list(scopes)))
    return Grants(pairs, None if shorthand is None else _text(shorthand), _position(line), _position(col))


def _decode_named(value: Any) -> tuple[tuple[str, Located], ...]:
    out = []
    for pair in _list(value):
        name, at = _list(pair, 2)
        located = _decode_located(at)
        if located is None:
            raise _Damaged
        out.append((_text(name), located))
    return tuple(out)


def _decode_job(value: Any) -> Job:
    job_id, line, col, runs_on, runs_on_at, uses, with_, secrets, runs, permissions = _list(value, 10)
    return Job(id=_text(job_id), line=_position(line), col=_position(col),
               runs_on=None if runs_on is None else tuple(_text(label) for label in _list(runs_on)),
               runs_on_at=_decode_located(runs_on_at), uses=_decode_located(uses), with_=_decode_named(with_),
               secrets="inherit" if secrets == "inherit" else _decode_named(secrets),
               stage_runs=tuple(StageRun(None if stage is None else _text(stage), _position(at),
                                         _position(column, optional=True))
                                for stage, at, column in (_list(run, 3) for run in _list(runs))),
               permissions=_decode_grants(permissions))


def decode_workflow(data: Any, path: str) -> Workflow | None:
    """The `Workflow` of file `path` that `encode_workflow` stored as `data`, or None (see the module doc)."""
    try:
        triggers, jobs, permissions = _list(data, 3)
        return Workflow(path=path, triggers=tuple(_text(t) for t in _list(triggers)),
                        jobs=tuple(_decode_job(job) for job in _list(jobs)), permissions=_decode_grants(permissions))
    except (_Damaged, TypeError, ValueError):  # ValueError: a list of another length unpacked
        return None
