"""A snapshot: the validated view of one checkout that every command reads.

- In: the checkout root (explicit) and an optional config path.
- Out: a frozen `Snapshot` holding the `Config`, the `LabelRegistry`, the discovered
  test files, their registrations and gate declarations, and every error found as a
  coded `Diagnostic`. `load_snapshot` raises `InputErrors` only when the configuration
  or the labels file is unusable (nothing else can be checked without them); file-level
  problems are collected in `Snapshot.errors` so `lint` can report all of them at once.
- `Snapshot.usable()` is what `registry`, `plan`, `list` and `run` read: `classify` sorts
  the errors into fatal ones (configuration, label registry, discovery outside a test
  file, estimates file: raised as `InputErrors`, since the whole plan could be wrong) and
  invalid test files (any error located in a discovered test file, or a missing required
  gate: the file's registrations and gates are dropped, its diagnostics kept with it).
  `require_valid()` (strict) still refuses any error at all.
- Reads only through `ci_policy.read.checkout`; never imports or executes checkout code.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from ci_policy.config import Config, load_config
from ci_policy.config.lint import IgnoreRule
from ci_policy.errors import Diagnostic, InputError, InputErrors
from ci_policy.gates.declarations import GateDeclaration, gates_of
from ci_policy.gates.requirements import violations
from ci_policy.model import estimates as estimates_mod
from ci_policy.model.discovery import discover
from ci_policy.model.registry import Registration, registrations_of
from ci_policy.model.suppress import Suppression, apply, inline_suppressions
from ci_policy.read.checkout import check_no_symlinks, read_text
from ci_policy.read.labels import LabelRegistry, load_labels
from ci_policy.read.markers import MarkerCall, scan

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


@dataclass(frozen=True)
class InvalidFile:
    """A test file the plan cannot schedule, with every error that says why."""

    file: str
    diagnostics: tuple[Diagnostic, ...]
    suites: tuple[str, ...] = ()  # the stages of the registrations that could be read


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
        """
        if self.validity is not None:
            return self
        validity = classify(self)
        if validity.fatal:
            raise InputErrors(validity.fatal)
        bad = {f.file for f in validity.invalid}
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
        return tuple(r for r in self.registrations if r.file == file)


def load_snapshot(repo: Path, config_path: str | Path | None = None) -> Snapshot:
    repo = Path(repo)
    if not repo.is_dir():
        raise InputError(f"repository {repo} is not a directory", path=str(repo),
                         code="CP403", hint="pass --repo with the checkout's root directory")
    config = _collect(load_config, repo, config_path)
    labels, labels_missing = _collect(optional_labels, repo, config)

    files, errors = discover(repo, config)
    errors.extend(_config_label_errors(config, labels))
    registrations: list[Registration] = []
    gates: list[GateDeclaration] = []
    marker_calls: list[tuple[str, MarkerCall]] = []  # read only to say why a missing labels file is needed
    inline: list[Suppression] = []
    for file in files:
        try:
            text = read_text(repo, file, what="test file")
        except InputError as exc:
            errors.append(exc.diagnostic)
            continue
        result = scan(text, file, frozenset(config.markers.names))
        found, bad = inline_suppressions(text, file)
        inline.extend(found)
        errors.extend(bad)
        if labels_missing:
            marker_calls.extend((file, mc) for mc in result.calls if mc.marker in config.markers.names)
        regs = registrations_of(result, config, labels)
        gates.extend(gates_of(result))
        registrations.extend(regs)
        # A file whose marker calls are of an undeclared dialect already has CP207 for each.
        if not regs and not result.errors and not result.undeclared:
            result.errors.append(Diagnostic(
                f"{file} matches the discovery pattern {_matched_pattern(config, file)!r} but has no "
                "registration and is not under an implicit root, so no stage would run it",
                path=file, line=1, col=1, code="CP231",
                hint=f"add {'/'.join(config.markers.names)}(...) at module level, "
                     "or add an implicit root for its directory in the configuration"))
        errors.extend(result.errors)
    errors.extend(_gate_errors(config, gates))
    if labels_missing:
        errors.extend(_missing_labels_errors(config, marker_calls))
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


def classify(snapshot: Snapshot) -> Validity:
    """Sort the snapshot's errors (and unsuppressed missing required gates) by what they spoil.

    - An error located in a discovered test file, or about a symlinked test file discovery
      refused to read (CP401), makes that file invalid.
    - Every other error is fatal: the configuration, the label registry (and the
      configuration's labels, CP310/CP311), a discovery root or a directory that cannot
      be walked (tests beneath it are unknown), a test file name with control characters
      (CP407), the estimates file (every est_time and shard could change).
    - A file whose only errors are suppressed is valid; if a suppressed error left part of
      it unread, it is listed in `not_fully_read`.
    """
    files = set(snapshot.files)
    discovery = snapshot.config.discovery
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
    suites: dict[str, set[str]] = {}
    for reg in snapshot.registrations:
        suites.setdefault(reg.file, set()).add(reg.suite)
    invalid = tuple(InvalidFile(file, tuple(found), tuple(sorted(suites.get(file, ()))))
                    for file, found in sorted(by_file.items()))
    partly = sorted({d.path for d in snapshot.suppressed
                     if d.path in files and d.path not in by_file and d.code not in _READ_IN_FULL})
    return Validity(tuple(fatal), invalid, tuple(p for p in partly if p is not None))


def _matched_pattern(config: Config, file: str) -> str:
    """The pattern of `file`'s root its name matches (the first, when a list holds several)."""
    pattern = config.discovery.pattern_for(file)
    if isinstance(pattern, str):
        return pattern
    name = file.rsplit("/", 1)[-1]
    return next((p for p in pattern if fnmatch.fnmatchcase(name, p)), pattern[0])


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


def _missing_labels_errors(config: Config, calls: list[tuple[str, MarkerCall]]) -> list[Diagnostic]:
    """What needs the labels file that does not exist: labels used, or required of GPU tests."""
    users = [(file, mc) for file, mc in calls if any(kw.arg == "labels" for kw in mc.call.keywords)]
    referenced = config.label_references()
    gpu = [mc for _file, mc in calls if config.is_accelerator(config.markers.names[mc.marker])]
    if users:
        file, first = users[0]
        why = f"{len(users)} registration(s) use labels (first: {file}:{first.line})"
    elif referenced:
        why = f"the configuration names labels ({referenced[0][1]})"
    elif config.gpu_requires_labels and gpu:
        why = f"gpu_requires_labels is true and {len(gpu)} GPU registration(s) need a label"
    else:
        return []
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
