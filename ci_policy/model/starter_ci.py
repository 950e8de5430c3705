"""What `ci-policy init` infers from where the registered files are and what the workflows run.

- In: the registered files and the other Python files init read, the directories it skipped, and
  the workflows' facts (`read.suite_jobs.CiFacts`: the collectors they run and their globs, each
  job's suite, runner labels, triggers and label tests, the schedules, runner mapping files).
- Out: the discovery roots, pattern and excludes, from the collector the workflows run
  (`collector_roots`, `collected_excludes`) or else covering exactly the registered files
  (`discovery_of`); per stage (`stage_facts`) its `runs_on` and where it was read, the runner
  pools that become variants (`variant_names`), its cadences (`cron_cadence`) and label gate.
- Refused: nothing raises: a collector glob with patterns in its directories, or a collector
  whose directories hold no registered file, is a note and the roots come from the files.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ci_policy.errors import Diagnostic
from ci_policy.model.starter_calls import WORD_BACKENDS, Call, note
from ci_policy.read.names import NAME_RE
from ci_policy.read.suite_jobs import CHANGE_EVENTS, CiFacts, split_glob

# Discovery itself never enters these, so an exclude for them would say nothing.
_DISCOVERY_SKIPS = frozenset({"__pycache__", ".git", ".hg", ".svn"})


@dataclass(frozen=True)
class DiscoveryRoot:
    path: str
    pattern: tuple[str, ...]
    source: str | None  # `test/run_suite.py's glob 'registered/**/*.py'`; None: inferred from the registered files


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
class InferredDiscovery:
    roots: tuple[tuple[str, tuple[str, ...] | None], ...]  # (path, own patterns or None)
    pattern: tuple[str, ...]
    exclude: tuple[tuple[str, str], ...]  # (glob, why)


def discovery_of(registered: set[str], others: list[str], excludable: set[str], skipped: list[str],
               holds: Callable[[str, tuple[str, ...]], bool]) -> InferredDiscovery:
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
    return InferredDiscovery(roots=tuple((r, None if globs_of_root[r] == pattern else globs_of_root[r]) for r in roots),
                      pattern=pattern, exclude=tuple(exclude))


HW_BACKENDS = {"amd": "rocm", "rocm": "rocm", "cuda": "cuda", "nvidia": "cuda", "cpu": "cpu", "npu": "npu",
               "xpu": "xpu"}


def _hw_backend(hw: str | None) -> str | None:
    """The backend a collector's `--hw` value names (`amd` -> rocm); None when not given."""
    if hw is None:
        return None
    word = hw.lower()
    return HW_BACKENDS.get(word, WORD_BACKENDS.get(word, word))


def cron_cadence(cron: str) -> str:
    """`weekly` for a cron on one day of the week or month, `nightly` otherwise."""
    fields = cron.split()
    if len(fields) == 5 and (fields[2] != "*" or (fields[4] != "*" and not any(c in fields[4] for c in ",-/"))):
        return "weekly"
    return "nightly"


@dataclass(frozen=True)
class Collected:
    roots: tuple[DiscoveryRoot, ...]
    discovered: set[str]


def collector_roots(repo: Path, facts: CiFacts, registered: set[str], notes: list[Diagnostic]) -> Collected | None:
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
            notes.append(note(f"{collector}: the glob {glob!r} has patterns in its directories; init did not "
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
        notes.append(note(f"the collector's directories ({', '.join(sorted(roots))}) hold no file with markers; "
                           "init took the discovery roots from the files instead",
                           hint="check discovery.roots against the directories CI runs"))
        return None
    return Collected(tuple(sorted(roots.values(), key=lambda r: r.path)), discovered)


def collected_excludes(collected: Collected, excludable: set[str], skipped: list[str],
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
class StagePlan:
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


def variant_names(pools: tuple[tuple[str, ...], ...]) -> list[str]:
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


def stage_facts(suite: str, backend: str, calls: list[Call], facts: CiFacts, crons_of: dict[str, tuple[str, ...]],
                 triggers_of: dict[str, tuple[str, ...]], any_schedule: bool,
                 notes: list[Diagnostic]) -> StagePlan:
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
            found_cadences.update(cron_cadence(c) for c in crons)
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
    return StagePlan(suite, backend, calls, runs_on, source, cadences, gate, bool(pr_runs), pools)
