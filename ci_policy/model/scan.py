"""Scanning one test file: what the snapshot takes from its text, and what a stored scan is found by.

- In: a test file's text and path, the `Config` and the `LabelRegistry` (`scan_file`); or the
  checkout and (file, text) pairs, read when the text is None (`scan_files`, the default `Scanner`).
- Out: a `FileScan` (registrations, gates, diagnostics, suppressions, label calls) from one
  `ast.parse`, a pure function of the text, its path, the configuration and the labels;
  `scan_context` (a digest of all but the text and path) and `scan_key` (the path and a content
  id), under which a scan is stored; `CONFIG_PATH`, the configuration's path as a scan sees it
  (`scanned_config`), and `placed`, which gives it the path of the configuration actually read.
  `ScanCache` and `Scanner` are what an adapter implements (`adapters.scan_cache`, `adapters.parallel`).
- Refused: nothing raises for what a file holds: a syntax error, a bad marker call, a file
  registering nothing are diagnostics in its scan's `errors`; a file that cannot be read is its
  read error's `Diagnostic` in `scan_files`. Reads only through `ci_policy.read.checkout`;
  never imports or executes checkout code.
"""

from __future__ import annotations

import fnmatch
import hashlib
import sys
from collections.abc import Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Protocol

from ci_policy import __version__
from ci_policy.config.top import Config
from ci_policy.errors import Diagnostic, InputError
from ci_policy.gates.declarations import GateDeclaration, gates_of
from ci_policy.model.registry import Registration, registrations_of
from ci_policy.model.suppress import Suppression, inline_suppressions
from ci_policy.read.checkout import Directories, read_text
from ci_policy.read.labels import LabelRegistry
from ci_policy.read.markers import parse_source, scan

# The scan of one test file, stored by content. Bump SCAN_FORMAT whenever `FileScan` or what
# it is computed from changes shape, so older entries are never read as newer ones.
SCAN_FORMAT = 5
# The parser a scan comes from: its grammar changes between Python versions.
PARSER = (sys.implementation.name, *sys.version_info[:2])


# Slots, as `FileScan`'s: one (or more) a test file (peak RSS, issue 33).
@dataclass(frozen=True, slots=True)
class LabelCall:
    """A registration marker call, as `_missing_labels_errors` needs it (the call itself is an AST node)."""

    marker: str
    line: int
    uses_labels: bool


# Slots: one a test file, all of them held until the snapshot is made (peak RSS, issue 33).
@dataclass(frozen=True, slots=True)
class FileScan:
    """Everything the snapshot takes from one test file's text: a pure function of that text,
    its path, the configuration and the label registry (`scan_context`)."""

    registrations: tuple[Registration, ...]
    gates: tuple[GateDeclaration, ...]
    errors: tuple[Diagnostic, ...]
    suppressions: tuple[Suppression, ...]
    label_calls: tuple[LabelCall, ...]


class ScanCache(Protocol):
    """Storage of `FileScan`s by key, grouped by scan context (an adapter implements it; see
    `adapters.scan_cache`).

    `load` returns what was stored for the context (values by key; empty when nothing or
    nothing readable is); it never raises. `store` adds a command's new entries (`used`:
    the keys the command found, which it should keep); it may silently store nothing.
    `reject` names the stored entries `StrictDecoder` refused (damaged or foreign: each
    file was read and scanned instead); the cache says so once, and drops them (`what` they
    are and what was done `then`, in its warning, for entries other than test files' scans;
    `load` takes `then` too, for a pack it ignores whole). `new_entries` is an empty mapping to
    gather a command's new entries in for `store`, which holds them as the cache stores them
    (a pack's entries as JSON bytes: 7 MiB for 20,000 files, 25 as lists).
    """

    def load(self, context: str, then: str | None = None) -> Mapping[str, Any]: ...

    def new_entries(self) -> MutableMapping[str, list[Any]]: ...

    def store(self, context: str, new: Mapping[str, list[Any]], used: Collection[str] = ()) -> None: ...

    def reject(self, context: str, keys: Collection[str], what: str = ..., then: str = ...) -> None: ...


class Scanner(Protocol):
    """Scans test files as `scan_files` does, in order (an adapter may spread them over
    processes): each result a `FileScan`, a read error's `Diagnostic`, or the `encode_scan`
    of the file's scan."""

    def __call__(self, repo: Path, items: Sequence[tuple[str, str | None]], config: Config,
                 labels: LabelRegistry) -> Sequence[FileScan | Diagnostic | list[Any]]: ...


def scan_file(text: str, file: str, config: Config, labels: LabelRegistry) -> FileScan:
    """Read one test file's text: markers, registrations, gates, suppressions; one `ast.parse`."""
    tree = parse_source(text, file)
    result = scan(text, file, frozenset(config.markers.names), tree=tree)
    # Statement spans come from the same tree, except in a file with a byte order mark, which
    # the suppression reader has always read as unparsable (its suppressions cover one line).
    found, bad = inline_suppressions(text, file, tree=tree if not text.startswith("\ufeff") else False)
    label_calls = tuple(LabelCall(mc.marker, mc.line, any(kw.arg == "labels" for kw in mc.call.keywords))
                        for mc in result.calls if mc.marker in config.markers.names)
    regs = registrations_of(result, config, labels)
    file_gates = gates_of(result)
    # A file whose marker calls are of an undeclared dialect already has CP207 for each.
    if not regs and not result.errors and not result.undeclared:
        result.errors.append(Diagnostic(
            f"{file} matches the discovery pattern {_matched_pattern(config, file)!r} but has no "
            "registration and is not under an implicit root, so no stage would run it",
            path=file, line=1, col=1, code="CP231",
            hint=f"add {'/'.join(config.markers.names)}(...) at module level, "
                 "or add an implicit root for its directory in the configuration"))
    return FileScan(tuple(regs), tuple(file_gates), (*bad, *result.errors), tuple(found), label_calls)


# The configuration's path as a scan sees it (`scanned_config`): a stored scan is shared by every
# copy of one configuration's content, wherever it is, so the hints that name the configuration
# (`registry._registration`: "stages are listed in ...") are made with this placeholder, stored
# with it, and given the path of the configuration actually read in one place (`placed`), for a
# fresh scan and a stored one alike. Why this and not the path itself: a path in the context would
# make a copy of the configuration (`--config /tmp/copy.yml`) a cold run; a path left out of the
# context but kept in stored hints would replay another file's name. NUL is what no text of a
# test file can put into a hint: no path holds one, a file holding one does not parse, and text
# from a file reaches a hint only as a `repr` (which escapes it). `StrictDecoder` accepts it only
# in a diagnostic's hint, where it can only ever become the configuration's path.
CONFIG_PATH = "\0configuration\0"


def scanned_config(config: Config) -> Config:
    """`config` as `scan_file` is given it by a snapshot: its path is `CONFIG_PATH`."""
    return config if config.path == CONFIG_PATH else replace(config, path=CONFIG_PATH)


def placed(result: FileScan, path: str) -> FileScan:
    """`result` (a scan of `scanned_config`) with `CONFIG_PATH` in its diagnostics made `path`:
    the text a scan of the configuration read from `path` gives. Messages too, though only hints
    name the configuration today (a message holding it is never stored: `StrictDecoder`)."""
    def named(d: Diagnostic) -> Diagnostic:
        return replace(d, message=d.message.replace(CONFIG_PATH, path),
                       hint=None if d.hint is None else d.hint.replace(CONFIG_PATH, path))

    if not any(CONFIG_PATH in d.message or (d.hint is not None and CONFIG_PATH in d.hint) for d in result.errors):
        return result
    return replace(result, errors=tuple(named(d) for d in result.errors))


def scan_context(config: Config, labels: LabelRegistry) -> str:
    """A digest of everything besides a file's text and path that `scan_file` reads.

    The whole configuration's content but `quarantine` is included (the canonical repr of `scanned_config`:
    stages, backends, markers, discovery's implicit roots and `runner` all reach the scan;
    its path does not, see `CONFIG_PATH`, so a copy of it elsewhere shares its scans) with the
    label registry,
    ci_policy's version, the format of a stored scan and the Python parser's version (a
    file one Python parses may be a syntax error to another): a change of any of them is a
    new context, whose scans are stored apart.
    """
    # Without `quarantine`, which no scan reads: entries come and go weekly, and each would
    # otherwise make every test file of the checkout a miss.
    content = replace(scanned_config(config), quarantine=())
    return hashlib.sha256(repr((__version__, SCAN_FORMAT, PARSER, _canonical(content), _canonical(labels)))
                          .encode("utf-8", "surrogatepass")).hexdigest()


def _canonical(value: Any) -> Any:
    # repr of a frozenset depends on string hashing, which differs between processes.
    if isinstance(value, (frozenset, set)):
        return ("set", sorted((_canonical(v) for v in value), key=repr))
    if isinstance(value, dict):
        return ("dict", sorted(((_canonical(k), _canonical(v)) for k, v in value.items()), key=repr))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_canonical(v) for v in value])
    if hasattr(value, "__dataclass_fields__"):
        return (type(value).__name__, [(f.name, _canonical(getattr(value, f.name))) for f in fields(value)])
    return value


def scan_key(file: str, content_id: str) -> str:
    """The key of a stored scan within its context's pack: it can only name the scan of this
    content at this path. The parts themselves, not a digest of them: nothing is hashed per
    file that git already hashed."""
    # NUL separates them: no path or content id holds one.
    return f"{file}\0{content_id}"


def scan_files(repo: Path, items: Sequence[tuple[str, str | None]], config: Config,
               labels: LabelRegistry) -> list[FileScan | Diagnostic]:
    """`scan_file` of each (file, text) in order, reading the file when its text is None; a
    read error is the file's result. The default `Scanner`: one after another, in this process."""
    out: list[FileScan | Diagnostic] = []
    dirs = Directories(repo)  # the directories on the files' way, each listed once
    for file, text in items:
        if text is None:
            try:
                text = read_text(repo, file, what="test file", dirs=dirs)
            except InputError as exc:
                out.append(exc.diagnostic)
                continue
        out.append(scan_file(text, file, config, labels))
    return out


def _matched_pattern(config: Config, file: str) -> str:
    """The pattern of `file`'s root its name matches (the first, when a list holds several)."""
    pattern = config.discovery.pattern_for(file)
    if isinstance(pattern, str):
        return pattern
    name = file.rsplit("/", 1)[-1]
    return next((p for p in pattern if fnmatch.fnmatchcase(name, p)), pattern[0])
