"""A starter configuration inferred from a checkout's markers: the core of `ci-policy init`.

- In: the checkout root (explicit, never the current directory).
- Out: a frozen `Starter`: the text of `.github/ci-policy.yml` (its schema line first,
  comments saying where each inference came from, every string value double-quoted with
  escapes, so any suite or path round-trips), the text of a labels file when the tests use
  labels, the stages proposed, the discovery roots, schedules and gates, the placeholders
  left to fill in, and notes: what could not be inferred, as uncoded warnings located in
  the checkout (`ci-policy lint` reports the coded errors).
- Read: every `*.py` file below the root through `read.checkout.read_text` (regular,
  symlink-free, size-capped, UTF-8), parsed with `ast` only; nothing is imported or
  executed. Not entered: hidden directories (`.git`, `.venv`), virtualenvs (a
  `pyvenv.cfg`), `node_modules`, `__pycache__`, `site-packages`, `build`, `dist`,
  `*.egg-info`. Symlinks are never followed: a symlinked file or directory is a note.
- Inferred: the markers (any name lint reads as one, `register_<word>_ci`, called as a
  module-level statement; its backend is the word lowercased, `amd` -> rocm; names beyond
  the three built-in ones and backends beyond cpu, cuda and rocm are declared), the
  extra arguments with their types, the suite template
  when `stage=`/`runner_config=` appear, one stage per suite, the labels used; and from
  the workflows (`ci_policy.read.suite_jobs`): the discovery roots and pattern of the
  collector they run (else the roots, patterns and excludes that cover exactly the
  registered files), each accelerator stage's `runs_on` (a job's `runs-on`, else a runner
  mapping file, else `PLACEHOLDER_RUNNER`, which lint reports once), the schedules and
  each stage's cadences, `nightly_selects` from `nightly=True`, and label gates.
- A suite registered for several backends is a stage per backend (a stage is its (backend,
  suite): `config.stages`).
- Not guessed: a marker whose word is no backend name (`register_9x_ci`: a note),
  an argument that is not a literal (the call gives no stage; lint reports it), a runner
  decided at run time (the placeholder).
- A stage the workflows run on several runner pools gets a variant per pool (`variants:`,
  each named after its pool's last label), the first pool its `runs_on`.
- Refused: a checkout with no marker call at all (`InputError`).
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from ci_policy.config.backends import BACKEND_NAME_RE
from ci_policy.config.backends import BUILTIN_BACKENDS as BUILTIN_BACKEND_MAP
from ci_policy.errors import Diagnostic, InputError, warning
from ci_policy.model.lint import PLACEHOLDER_RUNNER
from ci_policy.model.registry import argument_type
from ci_policy.read.checkout import read_text
from ci_policy.read.markers import (
    KEYWORD_ONLY,
    MARKER_NAME_RE,
    POSITIONAL,
    REGISTRATION_MARKERS,
    NotLiteral,
    bind_nodes,
    literal,
    module_level_calls,
    parse_source,
    scan,
)
from ci_policy.read.names import NAME_RE
from ci_policy.read.numbers import is_finite_number
from ci_policy.read.suite_jobs import CHANGE_EVENTS, CiFacts, read_suite_jobs, split_glob

# Any name lint would read as a marker (`MARKER_NAME_RE`), so init finds whatever lint would flag.
_MARKER_IN_TEXT = re.compile(r"\bregister_[A-Za-z0-9_]+_ci\b")
# The marker words whose backend is not the word itself.
WORD_BACKENDS = {"amd": "rocm"}
BUILTIN_MARKERS = REGISTRATION_MARKERS
BUILTIN_BACKENDS = tuple(BUILTIN_BACKEND_MAP)
# Accelerators whose marker names sglang-family repositories use; any other word is declared
# an accelerator too, with a comment naming the marker it came from.
KNOWN_ACCELERATORS = ("npu", "xpu")
TEMPLATE_ARGUMENTS = ("stage", "runner_config")
SUITE_TEMPLATE = "{stage}-test-{runner_config}"
LABELS_FILE = "labels.py"
# The first line of the written configuration: editors read the schema from it.
SCHEMA_LINE = ("# yaml-language-server: $schema=https://raw.githubusercontent.com/ci-policy/ci-policy/main/"
               "ci_policy/schemas/config.schema.json")
TODO_DESCRIPTION = "TODO: describe"

_SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages", "build", "dist", "venv"})
# Discovery itself never enters these, so an exclude for them would say nothing.
_DISCOVERY_SKIPS = frozenset({"__pycache__", ".git", ".hg", ".svn"})


@dataclass(frozen=True)
class Call:
    """One module-level marker call, as far as its literal arguments tell."""

    file: str
    line: int
    marker: str
    backend: str
    suite: str | None
    est_time: float | None
    labels: tuple[str, ...]
    disabled: bool
    extra: tuple[tuple[str, Any], ...]  # (name, literal value) of each extra argument with a literal value
    extra_names: tuple[str, ...] = ()  # every extra argument given, literal or not
    nightly: bool = False  # nightly=True written as such


@dataclass(frozen=True)
class StarterStage:
    name: str
    backend: str
    files: int
    est_time: float
    runner: str
    runner_reason: str
    placeholder_line: int | None  # the line of an accelerator stage's placeholder runs_on
    runs_on: tuple[str, ...] = ()
    runs_on_from: str | None = None  # where the runner labels were read; None: not read (a placeholder or cpu)
    cadences: tuple[str, ...] = ()  # empty: every cadence
    requires_labels: tuple[str, ...] = ()
    variants: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (name, runs_on) of each runner pool


@dataclass(frozen=True)
class Placeholder:
    """A value left to fill in: a line of a written file and what belongs there."""

    path: str | None  # None: the configuration file
    line: int
    what: str
    key: str | None = None  # the configuration key it stands for (`stages[1].runs_on`), as lint names it


@dataclass(frozen=True)
class DiscoveryRoot:
    path: str
    pattern: tuple[str, ...]
    source: str | None  # `test/run_suite.py's glob 'registered/**/*.py'`; None: inferred from the registered files


@dataclass(frozen=True)
class Starter:
    config_text: str
    labels_text: str | None
    stages: tuple[StarterStage, ...]
    placeholders: tuple[Placeholder, ...]
    notes: tuple[Diagnostic, ...]
    files: int
    registrations: int
    labels: tuple[str, ...]
    roots: tuple[DiscoveryRoot, ...] = ()
    schedules: tuple[tuple[str, str, str], ...] = ()  # (cron, cadence, workflow)
    nightly_selects: str | None = None
    require_labels: tuple[str, ...] = ()  # pull_request.require_labels
    not_discovered: tuple[str, ...] = ()  # files with markers that the repository's collector does not read


def quote(value: str) -> str:
    """A YAML double-quoted scalar that reads back as `value`: printable ASCII as is, the rest escaped."""
    out = ['"']
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def comment_text(value: str) -> str:
    """`value` for a YAML comment: escaped as `quote` escapes it, so no newline can end the comment."""
    return quote(value)[1:-1]


def backend_of(marker: str) -> str | None:
    """The backend a marker name implies (`register_amd_ci` -> rocm), or None when its word is no backend name."""
    if marker in BUILTIN_MARKERS:
        return BUILTIN_MARKERS[marker]
    word = marker[len("register_"):-len("_ci")].lower()
    backend = WORD_BACKENDS.get(word, word)
    return backend if BACKEND_NAME_RE.fullmatch(backend) else None


def _note(message: str, path: str | None = None, line: int | None = None, col: int | None = None,
          hint: str | None = None) -> Diagnostic:
    return warning(message, path=path, line=line, col=col, hint=hint)


# -- reading the checkout --------------------------------------------------------------------------

@dataclass
class _Read:
    python_files: list[str]
    skipped_dirs: list[str]
    notes: list[Diagnostic]


def _walk(repo: Path) -> _Read:
    found = _Read([], [], [])

    def visit(rel_dir: str) -> None:
        try:
            entries = sorted(os.scandir(repo / rel_dir if rel_dir != "." else repo), key=lambda e: e.name)
        except OSError as exc:
            found.notes.append(_note(f"directory {rel_dir} cannot be read: {exc.strerror}; init did not look inside",
                                     path=rel_dir))
            return
        for entry in entries:
            rel = entry.name if rel_dir == "." else f"{rel_dir}/{entry.name}"
            if not rel.isprintable():
                found.notes.append(_note(f"skipped {rel!r}: control characters in its path",
                                         path=repr(rel)[1:-1], hint="rename it"))
                continue
            if entry.is_symlink():
                # Only what init would have read is worth a note: a Python file or a directory.
                if entry.name.endswith(".py") or (not entry.name.startswith(".") and entry.is_dir()):
                    found.notes.append(_note(f"skipped {rel}: a symlink; ci-policy refuses symlinks in a checkout",
                                             path=rel, hint="replace the symlink with the real file or directory"))
                continue
            if entry.is_dir(follow_symlinks=False):
                if (entry.name.startswith(".") or entry.name in _SKIP_DIRS or entry.name.endswith(".egg-info")
                        or os.path.lexists(os.path.join(entry.path, "pyvenv.cfg"))):
                    found.skipped_dirs.append(rel)
                else:
                    visit(rel)
            elif entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
                found.python_files.append(rel)

    visit(".")
    return found


def _holds(repo: Path, rel_dir: str, globs: tuple[str, ...]) -> bool:
    """Whether a directory init did not read has a file named like a test file (names only, no symlinks)."""
    for _dir, _subdirs, files in os.walk(repo / rel_dir, followlinks=False):
        if any(fnmatch.fnmatchcase(f, g) for f in files for g in globs):
            return True
    return False


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return None
    try:
        return literal(node)
    except NotLiteral:
        return NotLiteral


def _calls_of(rel: str, tree: ast.Module, text: str, notes: list[Diagnostic]) -> tuple[list[Call], bool]:
    """The readable marker calls of a file, and whether it has any marker call at all."""
    names = frozenset(n for n in _MARKER_IN_TEXT.findall(text) if MARKER_NAME_RE.fullmatch(n))
    out: list[Call] = []
    found = module_level_calls(tree, names)
    for mc in found:
        where: dict[str, Any] = dict(path=rel, line=mc.line, col=mc.col)
        backend = backend_of(mc.marker)
        if backend is None:
            notes.append(_note(f"{mc.marker}(...): no backend name can be read from the marker's name; "
                               "the call gives no stage", **where,
                               hint=f"declare a backend and map it in markers.names: {{{mc.marker}: BACKEND}}"))
            continue
        extra_names = tuple(k.arg for k in mc.call.keywords
                            if k.arg is not None and k.arg not in POSITIONAL + KEYWORD_ONLY)
        binding = bind_nodes(mc.call, mc.marker, POSITIONAL, KEYWORD_ONLY + extra_names)
        if binding.problems:
            notes.append(_note(f"{mc.marker}(...) cannot be read: {binding.problems[0][2]}; "
                               "the call gives no stage", **where))
            continue
        nodes = binding.nodes
        values = {name: _literal(node) for name, node in nodes.items()}
        for name in sorted(n for n, v in values.items() if v is NotLiteral):
            names_suite = name == "suite" or (name in TEMPLATE_ARGUMENTS and "suite" not in values)
            notes.append(_note(f"{mc.marker}(...): {name} is not a literal"
                               + ("; the call gives no stage" if names_suite else ""),
                               **where, hint=f"write the value of {name} itself"))
        suite = _suite_of(mc.marker, values, notes, where)
        est = values.get("est_time")
        labels = values.get("labels")
        disabled = values.get("disabled")
        nightly = values.get("nightly")
        out.append(Call(
            file=rel, line=mc.line, marker=mc.marker, backend=backend, suite=suite,
            est_time=est if is_finite_number(est) and est >= 0 else None,
            labels=tuple(x for x in labels if isinstance(x, str)) if isinstance(labels, list) else (),
            disabled=isinstance(disabled, str) and bool(disabled.strip()),
            extra=tuple((n, values[n]) for n in extra_names if values[n] is not NotLiteral),
            extra_names=extra_names, nightly=nightly is True))
    return out, bool(found)


def _suite_of(marker: str, values: dict[str, Any], notes: list[Diagnostic], where: dict[str, Any]) -> str | None:
    suite = values.get("suite")
    parts = [values.get(a) for a in TEMPLATE_ARGUMENTS]
    built = (SUITE_TEMPLATE.format(stage=parts[0], runner_config=parts[1])
             if all(isinstance(p, str) for p in parts) else None)
    if suite is NotLiteral:
        return None  # noted by the caller
    if "suite" in values:
        if not isinstance(suite, str):
            notes.append(_note(f"{marker}(...): suite must be a string, got {suite!r}; the call gives no stage",
                               **where))
            return None
        if built is not None and built != suite:
            notes.append(_note(f"{marker}(...): suite {suite!r} differs from {SUITE_TEMPLATE!r} = {built!r}; "
                               "the suite is used", **where, hint="give either suite or stage and runner_config"))
        return suite
    if any(p is NotLiteral for p in parts):
        return None  # noted by the caller
    if built is None:
        given = [a for a in TEMPLATE_ARGUMENTS if a in values]
        missing = "; ".join(f"{a} is not a string" for a in given if not isinstance(values[a], str))
        notes.append(_note(f"{marker}(...) has no suite" + (
            f", and {' and '.join(TEMPLATE_ARGUMENTS)} do not build one ({missing or 'both are needed'})"
            if given else ""
        ) + "; the call gives no stage", **where, hint='add suite="..."'))
        return None
    return built


# -- inference ------------------------------------------------------------------------------------

def _glob_of(name: str) -> str:
    """The basename glob a registered file stands for: `test_*.py`, `bench_*.py`, `*_test.py`, or itself."""
    stem = name[:-3]
    if stem.endswith("_test") and len(stem) > 5:
        return "*_test.py"
    prefix = stem.split("_", 1)[0]
    if prefix and "_" in stem:
        return f"{_escape_glob(prefix)}_*.py"
    return _escape_glob(name)


def _escape_glob(text: str) -> str:
    # `[x]` is a one-character class in both fnmatch and the gitignore-style globs.
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _leading_literal(glob: str) -> str:
    # A leading '!' negates and a leading '#' comments in gitignore-style globs: escape a name's own.
    return "\\" + glob if glob[:1] in ("!", "#") else glob


def _parent(path: str) -> str:
    return str(PurePosixPath(path).parent) if "/" in path else "."


def _ancestors(path: str) -> list[str]:
    """The directories containing `path`, innermost first, without `.`."""
    out = []
    d = _parent(path)
    while d != ".":
        out.append(d)
        d = _parent(d)
    return out


def _under(path: str, root: str) -> bool:
    return root == "." or path.startswith(root + "/")


def _common_dir(dirs: list[str]) -> str:
    if "." in dirs:
        return "."
    common = os.path.commonpath(dirs)
    return common or "."


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class _Discovery:
    roots: tuple[tuple[str, tuple[str, ...] | None], ...]  # (path, own patterns or None)
    pattern: tuple[str, ...]
    exclude: tuple[tuple[str, str], ...]  # (glob, why)


def _discovery(registered: set[str], others: list[str], excludable: set[str], skipped: list[str],
               holds: Callable[[str, tuple[str, ...]], bool]) -> _Discovery:
    """Roots, patterns and excludes; `holds(dir, globs)`: a skipped directory has a file discovery would match."""
    globs_under: dict[str, set[str]] = defaultdict(set)
    for f in registered:
        for d in _ancestors(f):
            globs_under[d].add(_glob_of(_basename(f)))
    others_under: dict[str, list[str]] = defaultdict(list)
    for f in others:
        for d in _ancestors(f):
            if d in globs_under:
                others_under[d].append(f)

    counted: dict[str, int] = {}

    def unregistered_in(d: str) -> int:
        if d not in counted:
            globs = globs_under[d]
            counted[d] = sum(1 for f in others_under[d] if any(fnmatch.fnmatchcase(_basename(f), g) for g in globs))
        return counted[d]

    # A root climbs from a registered file's directory as long as the wider directory adds no
    # unregistered file its patterns would match: the fewest roots that need no more excludes.
    chosen: set[str] = set()
    for f in registered:
        cur = _parent(f)
        while cur != "." and _parent(cur) != "." and unregistered_in(_parent(cur)) == unregistered_in(cur):
            cur = _parent(cur)
        chosen.add(cur)
    # Then down again to the deepest directory holding the same registered files: climbing
    # merges sibling directories, it never needs to widen a lone one.
    roots = sorted({_common_dir([_parent(f) for f in registered if _under(f, r)])
                    for r in chosen if not any(o != r and _under(r, o) for o in chosen)})
    globs_of_root = {r: tuple(sorted({_glob_of(_basename(f)) for f in registered if _under(f, r)})) for r in roots}
    weight = Counter(globs_of_root.values())
    files_of: Counter[tuple[str, ...]] = Counter()
    for r, g in globs_of_root.items():
        files_of[g] += sum(1 for f in registered if _under(f, r))
    pattern = min(weight, key=lambda g: (-weight[g], -files_of[g], g))

    exclude: list[tuple[str, str]] = []
    for d in skipped:
        root = next((r for r in roots if _under(d, r)), None)
        if _basename(d) not in _DISCOVERY_SKIPS and root is not None and holds(d, globs_of_root[root]):
            exclude.append((_leading_literal(f"{_escape_glob(d)}/"), "not read by init (hidden, a virtualenv, build or "
                                                    "dependency directory)"))
    unregistered = [f for f in others if f in excludable
                    and any(_under(f, r) and any(fnmatch.fnmatchcase(_basename(f), g) for g in globs_of_root[r])
                            for r in roots)]
    registered_names = {_basename(f) for f in registered}
    repeated = {n for n, k in Counter(_basename(f) for f in unregistered).items()
                if k > 1 and n not in registered_names}
    why = "no registration, so no stage would run it"
    for name in sorted(repeated):
        exclude.append((f"**/{_escape_glob(name)}", why))
    for f in sorted(unregistered):
        if _basename(f) not in repeated:
            exclude.append((_leading_literal(_escape_glob(f)) if "/" in f else f"/{_escape_glob(f)}", why))
    return _Discovery(roots=tuple((r, None if globs_of_root[r] == pattern else globs_of_root[r]) for r in roots),
                      pattern=pattern, exclude=tuple(exclude))


def _extra_arguments(calls: list[Call], names: set[str], notes: list[Diagnostic]) -> dict[str, str]:
    types: dict[str, Counter[str]] = {n: Counter() for n in names}
    for call in calls:
        for name, value in call.extra:
            kind = argument_type(value)
            if kind is not None:
                types[name][kind] += 1
            elif value is not None:
                notes.append(_note(f"{call.marker}(...): {name}={value!r} has no declarable type "
                                   "(string, integer, number, boolean, strings)", path=call.file, line=call.line))
    out: dict[str, str] = {}
    for name in sorted(names):
        kinds = types[name]
        if set(kinds) == {"integer", "number"}:
            out[name] = "number"
            continue
        if len(kinds) > 1:
            notes.append(_note(f"extra argument {name} has values of several types ("
                               + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items())) + "); declared as the "
                               "most common one", hint=f"check markers.extra_arguments.{name}"))
        if not kinds:
            notes.append(_note(f"extra argument {name} has no literal value to take its type from; declared as "
                               "string", hint=f"check markers.extra_arguments.{name}"))
        out[name] = min(kinds, key=lambda k: (-kinds[k], k)) if kinds else "string"
    return out


def _seconds(value: float) -> str:
    return f"{int(value)}s" if float(value).is_integer() else f"{value:g}s"


def _backend_order(backend: str) -> tuple[int, str]:
    return (BUILTIN_BACKENDS.index(backend) if backend in BUILTIN_BACKENDS else len(BUILTIN_BACKENDS), backend)


# -- the starter ----------------------------------------------------------------------------------

HW_BACKENDS = {"amd": "rocm", "rocm": "rocm", "cuda": "cuda", "nvidia": "cuda", "cpu": "cpu", "npu": "npu",
               "xpu": "xpu"}


def _hw_backend(hw: str | None) -> str | None:
    """The backend a collector's `--hw` value names (`amd` -> rocm); None when not given."""
    if hw is None:
        return None
    word = hw.lower()
    return HW_BACKENDS.get(word, WORD_BACKENDS.get(word, word))


def _cron_cadence(cron: str) -> str:
    """`weekly` for a cron on one day of the week or month, `nightly` otherwise."""
    fields = cron.split()
    if len(fields) == 5 and (fields[2] != "*" or (fields[4] != "*" and not any(c in fields[4] for c in ",-/"))):
        return "weekly"
    return "nightly"


@dataclass(frozen=True)
class _Collected:
    roots: tuple[DiscoveryRoot, ...]
    discovered: set[str]


def _collector_roots(repo: Path, facts: CiFacts, registered: set[str], notes: list[Diagnostic]) -> _Collected | None:
    """The discovery roots the repository's own collector reads, from the globs of its source and the
    directory the workflows run it in; None when no workflow runs a collector whose globs init can read."""
    workdirs: dict[str, list[str]] = defaultdict(list)
    for run in facts.runs:
        if run.collector is not None:
            where = run.workdir if run.workdir is not None else _parent(run.collector)
            if where not in workdirs[run.collector]:
                workdirs[run.collector].append(where)
    roots: dict[str, DiscoveryRoot] = {}
    for collector, glob in facts.globs:
        split = split_glob(glob)
        if split is None:
            notes.append(_note(f"{collector}: the glob {glob!r} has patterns in its directories; init did not "
                               "read a discovery root from it", path=collector))
            continue
        sub, pattern = split
        for workdir in workdirs[collector]:
            root = os.path.normpath(f"{workdir}/{sub}").replace(os.sep, "/")
            if root.startswith("..") or not (repo / root).is_dir():
                continue
            known = roots.get(root)
            patterns = (known.pattern if known else ()) + ((pattern,) if not known or pattern not in known.pattern
                                                           else ())
            roots[root] = DiscoveryRoot(root, patterns, f"{collector}'s glob {glob!r}" if not known else known.source)
    if not roots:
        return None
    discovered = {f for f in registered
                  if any(_under(f, r.path) and any(fnmatch.fnmatchcase(_basename(f), p) for p in r.pattern)
                         for r in roots.values())}
    if not discovered:
        notes.append(_note(f"the collector's directories ({', '.join(sorted(roots))}) hold no file with markers; "
                           "init took the discovery roots from the files instead",
                           hint="check discovery.roots against the directories CI runs"))
        return None
    return _Collected(tuple(sorted(roots.values(), key=lambda r: r.path)), discovered)


def _collected_excludes(collected: _Collected, excludable: set[str], skipped: list[str],
                        holds: Callable[[str, tuple[str, ...]], bool]) -> tuple[tuple[str, str], ...]:
    """The files under the collector's roots that it would take but that register nothing."""
    out: list[tuple[str, str]] = []
    for d in skipped:
        root = next((r for r in collected.roots if _under(d, r.path)), None)
        if _basename(d) not in _DISCOVERY_SKIPS and root is not None and holds(d, root.pattern):
            out.append((_leading_literal(f"{_escape_glob(d)}/"), "not read by init (hidden, a virtualenv, build or "
                                                                 "dependency directory)"))
    for f in sorted(excludable):
        if any(_under(f, r.path) and any(fnmatch.fnmatchcase(_basename(f), p) for p in r.pattern)
               for r in collected.roots):
            out.append((_leading_literal(_escape_glob(f)), "no registration, so no stage would run it"))
    return tuple(out)


@dataclass(frozen=True)
class _StagePlan:
    suite: str
    backend: str
    calls: list[Call]
    runs_on: tuple[str, ...]
    runs_on_from: str | None
    cadences: tuple[str, ...]
    gate: tuple[str, ...]
    on_pull_requests: bool  # some workflow job runs the suite for a pull request
    # The runner pools the workflows run the suite on, when several: a variant each.
    pools: tuple[tuple[str, ...], ...] = ()


def _variant_names(pools: tuple[tuple[str, ...], ...]) -> list[str]:
    """A variant name for each runner pool: its last label that is a name, made unique."""
    names: list[str] = []
    for i, pool in enumerate(pools):
        label = next((x for x in reversed(pool) if NAME_RE.fullmatch(x)), None)
        name = label or re.sub(r"[^A-Za-z0-9_.-]", "-", pool[-1]).strip("-._") or f"pool{i + 1}"
        if not NAME_RE.fullmatch(name):
            name = f"pool{i + 1}"
        while name in names:
            name = f"{name}-{i + 1}"
        names.append(name)
    return names


def _stage_facts(suite: str, backend: str, calls: list[Call], facts: CiFacts, crons_of: dict[str, tuple[str, ...]],
                 triggers_of: dict[str, tuple[str, ...]], any_schedule: bool,
                 notes: list[Diagnostic]) -> _StagePlan:
    runs = [r for r in facts.runs if r.suite == suite and (r.hw is None or _hw_backend(r.hw) == backend)]
    runs_on: tuple[str, ...] = ()
    source = None
    pools: tuple[tuple[str, ...], ...] = ()
    static = list(dict.fromkeys(r.runs_on for r in runs if r.runs_on is not None))
    if backend != "cpu":
        if static:
            runs_on = static[0]
            first = next(r for r in runs if r.runs_on == runs_on)
            source = f"{first.workflow} job {first.job}"
            if len(static) > 1:
                pools = tuple(static)
        else:
            read_by = {r.workflow for r in runs}
            for mapping in sorted(facts.maps, key=lambda m: (m.workflow not in read_by, m.path)):
                found = dict(mapping.runners).get(suite)
                if found is not None:
                    runs_on, source = found, f"{mapping.path} (read by {mapping.workflow})"
                    break
    cadences: tuple[str, ...] = ()
    if any_schedule and runs:
        found_cadences: set[str] = set()
        for run in runs:
            crons = crons_of.get(run.workflow, ())
            found_cadences.update(_cron_cadence(c) for c in crons)
            if not crons or any(t in CHANGE_EVENTS and t != "workflow_dispatch" for t in triggers_of[run.workflow]):
                found_cadences.add("regular")
        cadences = tuple(c for c in ("regular", "nightly", "weekly", "release") if c in found_cadences)
    pr_runs = [r for r in runs if any(t in ("pull_request", "pull_request_target")
                                      for t in triggers_of.get(r.workflow, ()))]
    gate: tuple[str, ...] = ()
    if pr_runs:
        common = set(pr_runs[0].labels)
        for run in pr_runs[1:]:
            common &= set(run.labels)
        gate = tuple(sorted(common))
    return _StagePlan(suite, backend, calls, runs_on, source, cadences, gate, bool(pr_runs), pools)


def starter(repo: Path) -> Starter:
    """Read the checkout at `repo` and infer its starter configuration."""
    repo = Path(repo)
    if not repo.is_dir():
        raise InputError(f"repository {repo} is not a directory", path=str(repo), code="CP403",
                         hint="pass --repo with the checkout's root directory")
    walked = _walk(repo)
    notes = list(walked.notes)
    calls: list[Call] = []
    main_block: dict[str, bool] = {}
    registered: set[str] = set()
    excludable: set[str] = set()
    for rel in walked.python_files:
        try:
            text = read_text(repo, rel, what="file")
        except InputError as exc:
            notes.append(replace(exc.diagnostic, severity="warning", code=None,
                                 message=f"skipped: {exc.diagnostic.message}"))
            continue
        if not _MARKER_IN_TEXT.search(text):
            excludable.add(rel)
            continue
        tree = parse_source(text, rel)
        if isinstance(tree, Diagnostic):
            notes.append(replace(tree, severity="warning", code=None, message=f"skipped: {tree.message}"))
            continue
        file_notes: list[Diagnostic] = []
        found, marked = _calls_of(rel, tree, text, file_notes)
        if marked:
            # Covered by discovery even when no stage came of it: lint then reports why.
            registered.add(rel)
            calls.extend(found)
            notes.extend(file_notes)
            main_block[rel] = scan(text, rel).has_main_block
        else:
            excludable.add(rel)
    if not registered:
        raise InputError(f"no test registrations in {repo}: no Python file calls a register_<word>_ci(...) "
                         "marker as a module-level statement", path=str(repo),
                         hint="register a test first, e.g. register_cpu_ci(est_time=60, suite=\"unit\"), "
                              "as docs/manual/markers.md describes")
    facts = read_suite_jobs(repo)
    notes.extend(facts.notes)
    collected = _collector_roots(repo, facts, registered, notes)
    not_discovered: list[str] = []
    if collected is not None:
        not_discovered = sorted(registered - collected.discovered)
        for f in not_discovered:
            notes.append(_note(f"{f} registers tests but is not under the directories the workflows' collector "
                               f"reads ({', '.join(r.path for r in collected.roots)}); it is not discovered",
                               path=f, hint="add its directory to discovery.roots if CI should run it"))
        registered = collected.discovered
        calls = [c for c in calls if c.file in registered]
        exclude = _collected_excludes(collected, excludable, walked.skipped_dirs, lambda d, g: _holds(repo, d, g))
        patterns = {r.pattern for r in collected.roots}
        pattern = min(patterns, key=lambda p: (-sum(1 for r in collected.roots if r.pattern == p), p))
        roots = collected.roots
        root_lines = [(r.path, None if r.pattern == pattern else r.pattern) for r in roots]
    else:
        others = [f for f in walked.python_files if f not in registered]
        inferred = _discovery(registered, others, excludable, walked.skipped_dirs, lambda d, g: _holds(repo, d, g))
        pattern, exclude = inferred.pattern, inferred.exclude
        roots = tuple(DiscoveryRoot(r, own or inferred.pattern, None) for r, own in inferred.roots)
        root_lines = list(inferred.roots)

    by_suite: dict[str, list[Call]] = defaultdict(list)
    for call in calls:
        if call.suite is not None:
            by_suite[call.suite].append(call)
    crons_of = {w.path: w.crons for w in facts.workflows}
    triggers_of = {w.path: w.triggers for w in facts.workflows}
    suite_workflows = {r.workflow for r in facts.runs}
    any_schedule = any(crons_of[w] for w in suite_workflows)
    plans: list[_StagePlan] = []
    for suite, group in by_suite.items():
        # A stage is its (backend, suite): a suite several backends use is a stage per backend.
        counts = Counter(c.backend for c in group)
        for backend in sorted(counts, key=lambda b: (-counts[b], _backend_order(b))):
            plans.append(_stage_facts(suite, backend, [c for c in group if c.backend == backend], facts, crons_of,
                                      triggers_of, any_schedule, notes))
    plans.sort(key=lambda p: (_backend_order(p.backend), p.suite))

    # One gate shared by every accelerator stage a pull request runs is the PR-wide gate.
    accelerator_gates = {p.gate for p in plans if p.backend != "cpu" and p.on_pull_requests}
    require_labels: tuple[str, ...] = ()
    if len(accelerator_gates) == 1 and next(iter(accelerator_gates)):
        require_labels = next(iter(accelerator_gates))
    schedules: list[tuple[str, str, str]] = []
    for workflow in sorted(suite_workflows):
        for cron in crons_of[workflow]:
            if cron not in {c for c, _k, _w in schedules}:
                schedules.append((cron, _cron_cadence(cron), workflow))
    nightly_selects = "nightly_only" if any(c.nightly for c in calls) else None

    # Each call's backend came from its marker's name, so a marker has one backend.
    names = {c.marker: c.backend for c in sorted(calls, key=lambda c: c.marker) if c.marker not in BUILTIN_MARKERS}
    backends_declared = sorted({b for b in names.values() if b not in BUILTIN_BACKENDS})
    markers_of = {b: sorted(m for m, mb in names.items() if mb == b) for b in backends_declared}
    extra_names = {n for c in calls for n in c.extra_names}
    template = any(n in extra_names for n in TEMPLATE_ARGUMENTS)
    extra = _extra_arguments(calls, extra_names, notes)
    labels = sorted({label for c in calls for label in c.labels})
    unlabelled_gpu = any(c.backend != "cpu" and not c.labels for c in calls)

    lines: list[str] = [
        SCHEMA_LINE,
        "# ci-policy configuration: a starter written by `ci-policy init` from the markers and workflows of this "
        "checkout.",
        "# Check every line marked TODO, then run `ci-policy lint`.",
        "version: 1",
    ]
    if labels:
        lines.append(f"labels_file: {quote(LABELS_FILE)}")
    if unlabelled_gpu:
        lines.append("gpu_requires_labels: false  # some accelerator registrations name no label")
    if backends_declared:
        lines.append("backends:")
        lines.extend(f"  {quote(b)}: {{accelerator: true}}"
                     + ("" if b in KNOWN_ACCELERATORS else
                        f"  # from the marker name{'s' if len(markers_of[b]) > 1 else ''} {', '.join(markers_of[b])}")
                     for b in backends_declared)
    if names or extra or template:
        lines.append("markers:")
        if names:
            lines.append("  names:")
            lines.extend(f"    {quote(m)}: {quote(b)}" for m, b in sorted(names.items()))
        if extra:
            lines.append("  extra_arguments:")
            lines.extend(f"    {quote(n)}: {quote(t)}" for n, t in sorted(extra.items()))
        if template:
            lines.append(f"  suite: {quote(SUITE_TEMPLATE)}  # the suite of a call without suite=")
    lines.append("discovery:")
    lines.append("  roots:")
    for (root, own), found_root in zip(root_lines, roots, strict=True):
        comment = f"  # from {comment_text(found_root.source)}" if found_root.source else ""
        lines.append((f"    - {quote(root)}" if own is None else
                      f"    - {{path: {quote(root)}, pattern: [{', '.join(quote(p) for p in own)}]}}") + comment)
    lines.append(f"  pattern: {_one_or_list(pattern)}")
    if exclude:
        lines.append("  exclude:")
        lines.extend(f"    - {quote(g)}  # {why}" for g, why in exclude)
    if require_labels:
        lines.append("pull_request:")
        lines.append(f"  require_labels: [{', '.join(quote(x) for x in require_labels)}]  # every accelerator job "
                     "of the workflows tests for it")
    if schedules:
        lines.append("cadences:")
        lines.append("  schedules:")
        lines.extend(f"    {quote(cron)}: {cadence}  # {comment_text(workflow)}"
                     for cron, cadence, workflow in schedules)
        if nightly_selects:
            lines.append(f"  nightly_selects: {nightly_selects}  # nightly=True registrations run only in "
                         "scheduled runs")
    elif nightly_selects:
        lines.append("cadences:")
        lines.append(f"  nightly_selects: {nightly_selects}  # nightly=True registrations run only in scheduled runs")
    lines.append("stages:")
    built: list[StarterStage] = []
    placeholders: list[Placeholder] = []
    for index, plan in enumerate(plans):
        suite, backend, group = plan.suite, plan.backend, plan.calls
        files = sorted({c.file for c in group})
        est = sum(c.est_time for c in group if c.est_time is not None)
        enabled = sorted({c.file for c in group if not c.disabled})
        without = [f for f in enabled if not main_block[f]]
        runner = "pytest" if without else "python"
        reason = (f"{len(without)} of {len(enabled)} enabled file{'s' if len(enabled) != 1 else ''} "
                  f"{'lacks' if len(without) == 1 else 'lack'} an `if __name__ == \"__main__\":` block, "
                  "so `python FILE` would run no test there" if without else
                  "every enabled file has an `if __name__ == \"__main__\":` block" if enabled else
                  "no enabled file")
        lines.append(f"  - name: {quote(suite)}  # {len(files)} file{'s' if len(files) != 1 else ''}, "
                     f"est_time total {_seconds(est)}")
        lines.append(f"    backend: {quote(backend)}")
        lines.append(f"    runner: {quote(runner)}  # {reason}")
        line = None
        runs_on: tuple[str, ...] = ()
        variants: tuple[tuple[str, tuple[str, ...]], ...] = ()
        if backend != "cpu":
            if plan.runs_on:
                runs_on = plan.runs_on
                lines.append(f"    runs_on: [{', '.join(quote(x) for x in runs_on)}]  "
                             f"# from {comment_text(plan.runs_on_from or '')}")
                if plan.pools:
                    variants = tuple(zip(_variant_names(plan.pools), plan.pools, strict=True))
                    lines.append("    variants:  # the workflows run it on each of these runner pools")
                    for name, pool in variants:
                        lines.append(f"      - {{name: {quote(name)}, runs_on: [{', '.join(quote(x) for x in pool)}]}}")
            else:
                lines.append(f"    runs_on: [{quote(PLACEHOLDER_RUNNER)}]  # TODO: the runner labels of this "
                             "stage's jobs; no workflow names them")
                line = len(lines)
                key = f"stages[{index}].runs_on"
                placeholders.append(Placeholder(path=None, line=line, key=key,
                                                what=f"{key}: the runner labels of stage {suite} ({backend})"))
        if plan.cadences:
            lines.append(f"    cadences: [{', '.join(plan.cadences)}]  # the workflows that run it")
        if plan.gate and not require_labels:
            lines.append(f"    requires_labels: [{', '.join(quote(x) for x in plan.gate)}]  # its jobs test for "
                         f"{'it' if len(plan.gate) == 1 else 'them'}")
        built.append(StarterStage(suite, backend, len(files), est, runner, reason, line, runs_on,
                                  plan.runs_on_from if runs_on else None, plan.cadences,
                                  () if require_labels else plan.gate, variants))
    if not plans:
        lines.append("  []  # TODO: no suite could be read; see the notes of ci-policy init")
    config_text = "\n".join(lines) + "\n"

    labels_text = None
    if labels:
        label_lines = [
            "# The label registry of ci-policy (written by `ci-policy init`): one entry per label the tests use.",
            "# A PR labelled run-ci-<name> asks for the tests carrying <name>.",
            "KNOWN_LABELS = {",
        ]
        for label in labels:
            label_lines.append(f"    {label!r}: {TODO_DESCRIPTION!r},")
            placeholders.append(Placeholder(path=LABELS_FILE, line=len(label_lines),
                                            what=f"the description of label {label}"))
        label_lines.append("}")
        labels_text = "\n".join(label_lines) + "\n"

    return Starter(config_text=config_text, labels_text=labels_text, stages=tuple(built),
                   placeholders=tuple(placeholders), notes=tuple(sorted(set(notes), key=Diagnostic.sort_key)),
                   files=len(registered), registrations=len(calls), labels=tuple(labels), roots=roots,
                   schedules=tuple(schedules), nightly_selects=nightly_selects, require_labels=require_labels,
                   not_discovered=tuple(not_discovered))


def _one_or_list(values: tuple[str, ...]) -> str:
    return quote(values[0]) if len(values) == 1 else f"[{', '.join(quote(v) for v in values)}]"
