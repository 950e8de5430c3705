"""A snapshot: the validated view of one checkout that every command reads.

- In: the checkout root (explicit) and an optional config path.
- Out: a frozen `Snapshot` holding the `Config`, the `LabelRegistry`, the discovered
  test files, their registrations and gate declarations, and every error found as a
  coded `Diagnostic`. `load_snapshot` raises `InputErrors` only when the configuration
  or the labels file is unusable (nothing else can be checked without them); file-level
  problems are collected in `Snapshot.errors` so `lint` can report all of them at once.
- Refused: a repository that is not a directory (CP403, an `InputError`), and an unusable
  configuration or labels file (`InputErrors`, each located); every other problem is a
  `Diagnostic` in `Snapshot.errors`, raised only as `usable()` and `require_valid()` say below.
- `Snapshot.usable()` is what `registry`, `plan`, `list` and `run` read: `classify` sorts
  the errors into fatal ones (configuration, label registry, discovery outside a test
  file, estimates file: raised as `InputErrors`, since the whole plan could be wrong) and
  invalid test files (any error located in a discovered test file, or a missing required
  gate: the file's registrations and gates are dropped, its diagnostics kept with it),
  except that a file whose only errors each drop one registration (a bad argument of
  one marker call) and that kept a registration is partly read: only the bad
  registrations are gone (`InvalidFile.kept`).
  `require_valid()` (strict) still refuses any error at all.
- Each test file is read once and parsed once (`model.scan.scan_file`: markers, registrations,
  gates, suppressions from one `ast.parse`). With a `cache` (a `ScanCache`, which an
  adapter implements), a file's `FileScan` is stored under `scan_key(path, content id)` in the
  pack of `scan_context(config, labels)` (the configuration's content, not its path: hints
  that name it are stored with `CONFIG_PATH` and `placed`) and read back instead of parsing
  the file again: the
  content id is the SHA-256 of the bytes this process read from the file, never an id the
  checkout's metadata claims (a `.git/index` may name the blob id of other bytes); a file
  found with the identity (`lstat`) recorded when it was last read settled is not read again
  (`_STAT`). The stored
  scans of the context are loaded once per snapshot (`ScanCache.load`) and the new ones
  stored once at its end (`ScanCache.store`; nothing when every file was a hit). A hit
  gives exactly what `scan_file` would (its label calls, which only a missing labels file
  makes the snapshot read, are left unmade when the labels file is there); a read error is
  never stored. A stored scan is its items' field values in rows, read back by
  `model.scan_codec.StrictDecoder`: any value of the wrong type or range, any item that `scan_file` could not
  have made for this path under this configuration, and any text that could pass for a
  workflow command (`_UNSAFE_TEXT`) makes the entry a miss, which the cache is told of
  (`ScanCache.reject`: one warning per command); the file is then read and parsed. A scan
  the decoder would not read back equal is not stored (`StrictDecoder.encode_checked`).
- `listing` is a function that returns git's listing of the checkout (or None): one started
  before the snapshot, which git makes in its own processes, is called once the stored scans,
  the configuration and the labels file are read, so that they are read meanwhile.
- The files to scan (all of them without a cache, the misses with one, in batches of a few
  thousand: their texts are held until scanned) go to a `Scanner` together: `scan_files`
  in this process by default, or an adapter's that spreads them over processes
  (`adapters.parallel`); the result is the same, in the same order.
- Reads only through `ci_policy.read.checkout`; never imports or executes checkout code.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ci_policy.config.lint import IgnoreRule
from ci_policy.config.load import load_config
from ci_policy.config.top import Config
from ci_policy.errors import Diagnostic, InputError, InputErrors
from ci_policy.gates.declarations import GateDeclaration
from ci_policy.model.discovery import discover
from ci_policy.model.quarantine import registry_errors
from ci_policy.model.registry import Registration
from ci_policy.model.scan import (
    FileScan,
    LabelCall,
    ScanCache,
    Scanner,
    placed,
    scan_context,
    scan_file,
    scan_files,
    scan_key,
    scanned_config,
)
from ci_policy.model.scan_codec import StrictDecoder
from ci_policy.model.suppress import Suppression, apply
from ci_policy.read.checkout import FileReader, check_no_symlinks, read_text
from ci_policy.read.labels import LabelRegistry, load_labels

if TYPE_CHECKING:
    from ci_policy.model.discovery import IndexEntry

    Index = Mapping[str, IndexEntry]

T = TypeVar("T")

# Suppressed errors that drop nothing: the registration stays (a duplicate, a GPU file in a
# cpu_only root, a missing `__main__` block), nothing was there to read (an unregistered
# file, a suppression comment), or a gate stays declared. Every other suppressed error
# left something of its file unread (a marker call, a registration, a gate, the file).
_READ_IN_FULL = frozenset({"CP220", "CP221", "CP222", "CP231", "CP250", "CP251", "CP510", "CP511", "CP520"})

# A discovery error about one test file refused before it was read (a symlink matching the
# pattern) makes that file invalid, not the whole plan. A name with control characters
# (CP407) stays fatal: it cannot be named faithfully in `invalid_files`, and only a
# hostile checkout has one.
_REFUSED_TEST_FILE = frozenset({"CP401"})

# Errors about one argument of one registration call, found after the call was bound: each
# drops that registration alone (`registry._registration` returns None), never the rest of
# its file. A file whose every error is one of these and that kept a registration is partly
# read: its other registrations are scheduled, and it stays listed (the plan is incomplete).
# A call that cannot be bound (CP210-CP215, CP219: the same codes as a gate call's) still
# invalidates its file.
_ONE_REGISTRATION = frozenset({"CP216", "CP217", "CP218", "CP223", "CP224", "CP225", "CP226", "CP227",
                               "CP228", "CP229", "CP230"})


@dataclass(frozen=True)
class InvalidFile:
    """A test file the plan cannot schedule, with every error that says why."""

    file: str
    diagnostics: tuple[Diagnostic, ...]
    suites: tuple[str, ...] = ()  # the stages (keys) of the registrations that could be read (dropped with it)
    # A partly read file: the stages of its registrations still scheduled (only bad
    # registrations were dropped, see `_ONE_REGISTRATION`); empty when the file is dropped whole.
    kept: tuple[str, ...] = ()


@dataclass(frozen=True)
class Validity:
    """The errors of a snapshot, sorted: what stops everything, and what one file spoils."""

    fatal: tuple[Diagnostic, ...]
    invalid: tuple[InvalidFile, ...]
    # Valid files a suppressed error left partly unread (a registration or gate dropped).
    not_fully_read: tuple[str, ...]


@dataclass(frozen=True)
class Snapshot:
    repo: Path
    config: Config
    labels: LabelRegistry
    files: tuple[str, ...]
    registrations: tuple[Registration, ...]
    gates: tuple[GateDeclaration, ...]
    errors: tuple[Diagnostic, ...]
    # (file, suite) entries of the estimates file that match no registration (stale).
    unused_estimates: tuple[tuple[str, str], ...] = ()
    estimates_missing: bool = False
    # Errors an inline suppression or a `lint.ignore` rule accepts, the inline suppressions
    # found, and which suppressions were used (lint warns about the rest).
    suppressed: tuple[Diagnostic, ...] = ()
    suppressions: tuple[Suppression, ...] = ()
    used_suppressions: frozenset[Suppression | IgnoreRule] = frozenset()
    # Set by `usable()`: the classification, once the invalid files' registrations are dropped.
    validity: Validity | None = None

    def require_valid(self) -> Snapshot:
        """This snapshot when it has no error at all; otherwise `InputErrors` with every one."""
        if self.errors:
            raise InputErrors(self.errors)
        return self

    def usable(self) -> Snapshot:
        """The snapshot without its invalid files' registrations and gates; `InputErrors` if fatal.

        The result's `validity` lists the invalid files; `invalid_files` and `complete` read it.
        A partly read file (`InvalidFile.kept`) keeps its readable registrations and gates.
        """
        if self.validity is not None:
            return self
        validity = classify(self)
        if validity.fatal:
            raise InputErrors(validity.fatal)
        bad = {f.file for f in validity.invalid if not f.kept}
        if not bad:
            return replace(self, validity=validity)
        return replace(self, validity=validity,
                       registrations=tuple(r for r in self.registrations if r.file not in bad),
                       gates=tuple(g for g in self.gates if g.file not in bad))

    @property
    def invalid_files(self) -> tuple[InvalidFile, ...]:
        return self.validity.invalid if self.validity is not None else ()

    @property
    def complete(self) -> bool:
        """Whether every discovered test file could be scheduled (see `usable()`)."""
        return not self.invalid_files

    def registrations_for(self, file: str) -> tuple[Registration, ...]:
        """`file`'s registrations, in their order in `registrations`."""
        return self._by_file.get(file, ())

    def suites_labelled(self, labels: Collection[str]) -> set[str]:
        """The stages (`Stage.key`) of the registrations that carry any of `labels`."""
        by_label = self._suites_by_label
        return {suite for label in labels for suite in by_label.get(label, ())}

    @cached_property
    def _suites_by_label(self) -> dict[str, set[str]]:
        grouped: dict[str, set[str]] = {}
        for reg in self.registrations:
            for label in reg.labels:
                grouped.setdefault(label, set()).add(self.config.key_of(reg.backend, reg.suite))
        return grouped

    @cached_property
    def invalid_paths(self) -> frozenset[str]:
        """The paths of `invalid_files`."""
        return frozenset(f.file for f in self.invalid_files)

    @cached_property
    def _by_file(self) -> dict[str, tuple[Registration, ...]]:
        # Built once per snapshot (not a field: no part of its value): asked once per
        # changed path and per file a required-gate rule covers, a scan each would be quadratic.
        grouped: dict[str, list[Registration]] = {}
        for reg in self.registrations:
            grouped.setdefault(reg.file, []).append(reg)
        return {file: tuple(regs) for file, regs in grouped.items()}


def load_snapshot(repo: Path, config_path: str | Path | None = None, *, cache: ScanCache | None = None,
                  listing: Callable[[], Index | None] | None = None,
                  scanner: Scanner | None = None) -> Snapshot:
    """The snapshot of `repo`; `cache`, `listing` and `scanner` (see the module doc) never change the result."""
    repo = Path(repo)
    if not repo.is_dir():
        raise InputError(f"repository {repo} is not a directory", path=str(repo),
                         code="CP403", hint="pass --repo with the checkout's root directory")
    config = _collect(load_config, repo, config_path)
    labels, labels_missing = _collect(optional_labels, repo, config)
    context = scan_context(config, labels)
    stored: Mapping[str, Any] | None = cache.load(context) if cache is not None else None
    index = listing() if listing is not None else None

    # No estimates for a stage job: test_a_stage_job_given_its_plan_imports_no_glob_gate_or_other_command_module
    from ci_policy.model import estimates as estimates_mod

    files, errors = discover(repo, config, index)
    errors.extend(_config_label_errors(config, labels))
    registrations: list[Registration] = []
    gates: list[GateDeclaration] = []
    label_calls: list[tuple[str, LabelCall]] = []  # read only to say why a missing labels file is needed
    inline: list[Suppression] = []
    scans = _scan_all(repo, files, config, labels, context, cache, stored, scanner, label_calls=labels_missing)
    for file, scanned in zip(files, scans, strict=True):
        if isinstance(scanned, Diagnostic):
            errors.append(scanned)
            continue
        registrations.extend(scanned.registrations)
        # Most files have nothing else: no generator or call made for an empty part.
        if scanned.suppressions:
            inline.extend(scanned.suppressions)
        if scanned.label_calls:
            label_calls.extend((file, call) for call in scanned.label_calls)
        if scanned.gates:
            gates.extend(scanned.gates)
        if scanned.errors:
            errors.extend(placed(scanned, config.path).errors)
    errors.extend(_gate_errors(config, gates))
    errors.extend(registry_errors(config, registrations, files, errors))
    if labels_missing:
        errors.extend(_missing_labels_errors(config, label_calls))
    unused_estimates: list[tuple[str, str]] = []
    estimates_missing = False
    if config.estimates_file is not None:
        try:
            # Configured before `tune --write-estimates` first wrote it: literals apply (lint warns).
            estimates_missing = check_no_symlinks(repo, config.estimates_file, what="estimates file") is None
        except InputError as exc:
            errors.append(exc.diagnostic)
            estimates_missing = True
    if config.estimates_file is not None and not estimates_missing:
        try:
            table = estimates_mod.parse_estimates(
                read_text(repo, config.estimates_file, what="estimates file"), config.estimates_file)
        except InputErrors as exc:
            errors.extend(exc.errors)
        except InputError as exc:
            errors.append(exc.diagnostic)
        else:
            registrations, unused_estimates = estimates_mod.apply(registrations, table)
    applied = apply(sorted(set(errors), key=Diagnostic.sort_key), inline, config.lint.ignore)
    return Snapshot(
        repo=repo,
        config=config,
        labels=labels,
        files=tuple(files),
        registrations=tuple(sorted(registrations, key=Registration.sort_key)),
        gates=tuple(gates),
        unused_estimates=tuple(unused_estimates),
        estimates_missing=estimates_missing,
        errors=applied.kept,
        suppressed=applied.suppressed,
        suppressions=tuple(inline),
        used_suppressions=applied.used,
    )


def scan_text(text: str, file: str, config: Config, labels: LabelRegistry, cache: ScanCache | None) -> FileScan:
    """`scan_file` of one file's text, through `cache` when given: looked up by the SHA-256
    of the text, and stored on a miss (a command that reads a single test file). Its hints
    name `config.path`, as `load_snapshot`'s do (`placed`)."""
    if cache is None:
        return scan_file(text, file, config, labels)
    context = scan_context(config, labels)
    key = scan_key(file, f"sha256:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}")
    decoder = StrictDecoder(config, labels)
    stored = cache.load(context)  # held until `store`, which merges the new scan with it
    found = stored.get(key)
    if found is not None:
        hit = decoder.decode(found, file)
        if hit is not None:
            return placed(hit, config.path)
        cache.reject(context, [key])
    result = scan_file(text, file, scanned_config(config), labels)
    encoded = decoder.encode_checked(result, file)
    if encoded is not None:
        cache.store(context, {key: encoded})
    return placed(result, config.path)


def _scan_all(repo: Path, files: Sequence[str], config: Config, labels: LabelRegistry, context: str,
              cache: ScanCache | None, stored: Mapping[str, Any] | None, scanner: Scanner | None, *,
              label_calls: bool = True) -> list[FileScan | Diagnostic]:
    """The scan of each discovered file, in order: through the stored scans (`stored`, what
    `cache.load(context)` gave) when `cache` is given.

    Without `label_calls` (the labels file is there: nothing reads them), a stored scan's
    label calls are not made back into items: its `label_calls` is empty.

    With a cache, a file is read as bytes (`read.checkout.FileReader`) and looked up by the
    SHA-256 of those bytes: never by an id the checkout's own metadata states (a `.git/index`
    can name any blob id for any bytes, and a cache shared by checkouts would then hand one
    checkout's scan to another). The misses go to `scanner` (default `scan_files`) together,
    their texts when already read, in batches of at most `_SCAN_BATCH` files (the texts read
    are not all held at once); a miss's scan is stored under its key (as the scanner
    encoded it, when it did), a read error never.

    Why identity records too: the blob id let a warm run read no file. Hashing bytes read for
    parsing costs next to nothing, but a warm run that read nothing now reads every file:
    measured with `bench/scan_bench.py` on 5,000 files, a warm run of a fresh clone takes
    about 20 µs of CPU a file more than it did (the read and the hash; a tenth of a parse),
    which no design avoids while the bytes are what names the scan. A checkout kept between
    runs (a developer's; a self-hosted runner's workspace, which `actions/checkout` updates
    in place) is found by its files' identity records instead: one `lstat` a file, about
    7 µs a file more than the blob id (the identity and the strict decoding), and no read.
    A record is this user's own observation of bytes it read (a checkout cannot forge a
    ctime), so it names the bytes as surely as the hash did when it was made.
    """
    if stored is None:
        stored = {}
    decoder = StrictDecoder(config, labels)
    scanning = scanned_config(config)
    results: list[FileScan | Diagnostic | None] = [None] * len(files)
    # (position, file, text when read, key when caching) of each file to scan
    misses: list[tuple[int, str, str | None, str | None]] = []
    # Held as the cache holds them (JSON bytes), not as lists: 25 MiB at 20,000 files (peak RSS, issue 33).
    new: MutableMapping[str, list[Any]] = cache.new_entries() if cache is not None else {}
    # The texts read are scanned a batch at a time, not all after the last is read: at 20,000
    # files they were 34 MiB at once (peak RSS, issue 33). Batches of equal size, each large
    # enough for the scanner's processes to pay off (`adapters.parallel.PARALLEL_MIN_FILES`).
    batch = math.ceil(len(files) / max(1, math.ceil(len(files) / _SCAN_BATCH)))
    used: list[str] = []
    refused: list[str] = []
    reader = FileReader(repo) if cache is not None else None
    # Identity records (`_STAT`) made for files read now, and the number of files found by one.
    # Those made once a scan was new or a file found by its record are kept whatever follows,
    # as the cache holds them (`kept`: at 20,000 files 6 MiB as lists, peak RSS, issue 33);
    # those made before are decided on at the end.
    identities: dict[str, list[Any]] = {}
    kept: MutableMapping[str, list[Any]] = cache.new_entries() if cache is not None else {}
    known = 0
    # Bound once: the loop below runs once a test file, and a warm run does little else.
    stored_get = stored.get
    decode = decoder.decode
    content_id_ok = _CONTENT_ID_RE.fullmatch
    stat_suffix = f"\0{_STAT}"
    for i, file in enumerate(files):
        if reader is None:
            misses.append((i, file, None, None))
            continue
        stat_key = file + stat_suffix
        record = stored_get(stat_key)
        matched = False
        if record is not None:
            if not (type(record) is list and len(record) == 2 and type(record[0]) is str
                    and type(record[1]) is str):
                refused.append(stat_key)
            # Equal to the identity made here, the record's is well formed; its content id is checked.
            elif reader.identity(file) == record[0]:
                matched = content_id_ok(record[1]) is not None
                if not matched:
                    refused.append(stat_key)
        tried: str | None = None  # a stored scan refused already
        if matched and record is not None:
            key = scan_key(file, record[1])
            found = stored_get(key)
            if found is not None:
                hit = decode(found, file, label_calls)
                if hit is not None:
                    used.extend((stat_key, key))
                    results[i] = hit
                    known += 1
                    continue
                refused.append(tried := key)
        text: str | None = None
        settled: str | None = None
        read = reader.read(file)
        if read is not None:
            data, settled = read
        else:  # refused or odd: read_text says why, or reads it
            try:
                text = read_text(repo, file, what="test file")
            except InputError as exc:
                results[i] = exc.diagnostic
                continue
            data = text.encode("utf-8", "surrogatepass")
        content_id = f"sha256:{hashlib.sha256(data).hexdigest()}"
        if settled is not None:
            (kept if new or known else identities)[stat_key] = [settled, content_id]
        key = scan_key(file, content_id)
        found = stored.get(key) if key != tried else None
        if found is not None:
            hit = decoder.decode(found, file, label_calls)
            if hit is not None:
                used.append(key)
                results[i] = hit
                continue
            refused.append(key)
        if text is None:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None  # read_text reports it, where it is
        misses.append((i, file, text, key))
        if len(misses) >= batch:
            _scan_misses(misses, repo, scanner, scanning, labels, decoder, results, new, label_calls)
    if misses:
        _scan_misses(misses, repo, scanner, scanning, labels, decoder, results, new, label_calls)
    if cache is not None:
        if refused:
            cache.reject(context, refused)
        # A command that writes the pack anyway, or that found files by their records (a checkout
        # kept between runs), keeps every new record; otherwise only those of paths that had
        # none, so a warm run of a fresh clone (new inodes, every record another's) writes nothing.
        for stat_key, identity in identities.items():
            if new or known or stored.get(stat_key) is None:
                new[stat_key] = identity
        new.update(kept)  # made after those: the records stay in the files' order
        if new:
            cache.store(context, new, used)
    done = [r for r in results if r is not None]
    assert len(done) == len(files)
    return done


def _scan_misses(misses: list[tuple[int, str, str | None, str | None]], repo: Path, scanner: Scanner | None,
                 scanning: Config, labels: LabelRegistry, decoder: StrictDecoder,
                 results: list[FileScan | Diagnostic | None], new: MutableMapping[str, list[Any]],
                 label_calls: bool = True) -> None:
    """Scan the misses (position, file, text when read, key when caching) into `results`, the
    encoded scan of each with a key into `new`; `misses` is left empty. `label_calls`: as
    `_scan_all`'s, for a scan another process encoded."""
    scanned: list[FileScan | Diagnostic | list[Any] | None] = list(
        (scanner or scan_files)(repo, [(m[1], m[2]) for m in misses], scanning, labels))
    if len(scanned) != len(misses):
        raise ValueError(f"the scanner gave {len(scanned)} scans for {len(misses)} files")
    for j, (i, file, text, miss_key) in enumerate(misses):
        # The scanner's copy of each scan let go once its file is done, not when the last one is.
        result, scanned[j] = scanned[j], None
        encoded: list[Any] | None = None
        if isinstance(result, list):  # encoded by the scanner (another process)
            decoded = decoder.decode(result, file, label_calls)
            if decoded is None:  # text `encode_checked` keeps out of the cache: scanned here again
                result = scan_files(repo, [(file, text)], scanning, labels)[0]
            else:
                # Stored as it came: it decodes to the scan used, which is all `encode_checked`
                # would check, without encoding and decoding it once more in this process.
                encoded, result = result, decoded
        results[i] = result
        if miss_key is not None and isinstance(result, FileScan):
            if encoded is None:
                encoded = decoder.encode_checked(result, file)
            if encoded is not None:
                new[miss_key] = encoded
    misses.clear()


# The key suffix of a file's identity record, `[identity, content id]`: the file as `lstat` found
# it when this user's ci-policy last read it settled (`read.checkout.FileReader`), and the
# SHA-256 of the bytes read then. A file whose identity is the record's is looked up by that
# content id without being read: a warm run on a checkout kept between runs reads no file.
_STAT = "stat"
# Files read before their texts are scanned (`_scan_all`).
_SCAN_BATCH = 4096
_CONTENT_ID_RE = re.compile(r"sha256:[0-9a-f]{64}")


def classify(snapshot: Snapshot) -> Validity:
    """Sort the snapshot's errors (and unsuppressed missing required gates) by what they spoil.

    - An error located in a discovered test file, or about a symlinked test file discovery
      refused to read (CP401), makes that file invalid.
    - Every other error is fatal: the configuration, the label registry (and the
      configuration's labels, CP310/CP311), a discovery root or a directory that cannot
      be walked (tests beneath it are unknown), a test file name with control characters
      (CP407), the estimates file (every est_time and shard could change).
    - A file whose every error drops one registration alone (`_ONE_REGISTRATION`) and that
      has a registration left is invalid but partly read: `kept` names the stages of the
      registrations it keeps. With no registration left it is dropped whole.
    - A file whose only errors are suppressed is valid; if a suppressed error left part of
      it unread, it is listed in `not_fully_read`.
    """
    files = set(snapshot.files)
    discovery = snapshot.config.discovery
    # Not for a stage job: test_a_stage_job_given_its_plan_imports_no_glob_gate_or_other_command_module
    from ci_policy.gates.requirements import violations

    required = apply(violations(snapshot), snapshot.suppressions, snapshot.config.lint.ignore).kept
    fatal: list[Diagnostic] = []
    by_file: dict[str, list[Diagnostic]] = {}
    for diagnostic in sorted(set(snapshot.errors) | set(required), key=Diagnostic.sort_key):
        path = diagnostic.path
        if path is not None and (path in files or (diagnostic.code in _REFUSED_TEST_FILE
                                                   and discovery.name_matches(path))):
            by_file.setdefault(path, []).append(diagnostic)
        else:
            fatal.append(diagnostic)
    invalid = tuple(_invalid_file(snapshot, file, tuple(found)) for file, found in sorted(by_file.items()))
    partly = sorted({d.path for d in snapshot.suppressed
                     if d.path in files and d.path not in by_file and d.code not in _READ_IN_FULL})
    return Validity(tuple(fatal), invalid, tuple(p for p in partly if p is not None))


def _invalid_file(snapshot: Snapshot, file: str, found: tuple[Diagnostic, ...]) -> InvalidFile:
    suites = tuple(sorted({snapshot.config.key_of(r.backend, r.suite) for r in snapshot.registrations_for(file)}))
    if suites and all(d.code in _ONE_REGISTRATION for d in found):
        return InvalidFile(file, found, kept=suites)
    return InvalidFile(file, found, suites)


def optional_labels(repo: Path, config: Config) -> tuple[LabelRegistry, bool]:
    """The label registry, and whether its file is missing while the configuration does not name it.

    A repository that uses no labels needs no labels file: without `labels_file` in the
    configuration a missing `labels.py` is an empty registry (what uses labels then fails
    in `_missing_labels_errors`). A configured `labels_file` must exist; a symlink or an
    unreadable file is refused either way.
    """
    if config.line_of("labels_file") is None and check_no_symlinks(repo, config.labels_file,
                                                                   what="labels file") is None:
        return LabelRegistry(path=config.labels_file, labels=()), True
    return load_labels(repo, config.labels_file), False


def _missing_labels_errors(config: Config, calls: list[tuple[str, LabelCall]]) -> list[Diagnostic]:
    """What needs the labels file that does not exist: labels used, or required of GPU tests."""
    users = [(file, mc) for file, mc in calls if mc.uses_labels]
    referenced = config.label_references()
    if users:
        file, first = users[0]
        why = f"{len(users)} registration(s) use labels (first: {file}:{first.line})"
    elif referenced:
        why = f"the configuration names labels ({referenced[0][1]})"
    else:
        # Counted only when it is the reason, and judged once per marker, not once per call.
        accelerator = {marker: config.is_accelerator(backend) for marker, backend in config.markers.names.items()}
        gpu = sum(1 for _file, mc in calls if accelerator[mc.marker]) if config.gpu_requires_labels else 0
        if not gpu:
            return []
        why = f"gpu_requires_labels is true and {gpu} GPU registration(s) need a label"
    return [Diagnostic(f"labels file {config.labels_file} does not exist, but {why}",
                       path=config.labels_file, code="CP402",
                       hint=f"create {config.labels_file} with KNOWN_LABELS = {{\"name\": \"description\"}}, "
                            "or set labels_file in the configuration")]


def _config_label_errors(config: Config, labels: LabelRegistry) -> list[Diagnostic]:
    """Labels named in the configuration must exist in the label registry."""
    errors = []
    for label, where, line in config.label_references():
        if label not in labels:
            errors.append(Diagnostic(
                f"{where}: unknown label {label!r}; valid labels: {', '.join(labels.names) or 'none'}",
                path=config.path, line=line, code="CP310",
                hint=f"use a label defined in KNOWN_LABELS of {labels.path}"))
    for scope in config.scopes:
        name = scope.name[len("run-ci-"):]
        if name in labels:
            errors.append(Diagnostic(
                f"scopes.{scope.name}: {scope.name} is both a broad scope and the PR label of "
                f"the known label {name!r}", path=config.path, line=scope.line, code="CP311",
                hint="rename the scope or the label"))
    return errors


def _gate_errors(config: Config, gates: list[GateDeclaration]) -> list[Diagnostic]:
    """A declared gate must be on a captured key and complete once defaults are filled in."""
    errors = []
    defaults = config.gates.defaults
    for gate in gates:
        where: dict[str, Any] = dict(path=gate.file, line=gate.line, col=gate.col)
        if gate.metric_key not in config.gates.capture:
            errors.append(Diagnostic(
                f"register_ci_gate: metric_key {gate.metric_key!r} is not captured, so it can never be "
                "evaluated", **where, code="CP510", hint=f"add it to gates.capture in {config.path}"))
        # A literal None counts as not written: the default fills it.
        missing = [name for name in ("steps", "constraint")
                   if getattr(gate, name) is None and name not in defaults.get(gate.metric_key, {})]
        if missing:
            errors.append(Diagnostic(
                f"register_ci_gate: {' and '.join(missing)} not given and gates.defaults has none for "
                f"{gate.metric_key!r}", **where, code="CP511",
                hint=f"write {missing[0]}=... in the call or add a default in {config.path}"))
    return errors


def _collect(loader: Callable[..., T], *args: Any) -> T:
    try:
        return loader(*args)
    except InputError as exc:
        raise InputErrors([exc]) from None
