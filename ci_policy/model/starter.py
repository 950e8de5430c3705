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
- Layout: reading the marker calls is `model.starter_calls`; what the file layout and the
  workflows say (discovery, runners, cadences, gates), `model.starter_ci`; this module writes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from ci_policy.config.backends import BUILTIN_BACKENDS as BUILTIN_BACKEND_MAP
from ci_policy.errors import Diagnostic, InputError
from ci_policy.model.lint import PLACEHOLDER_RUNNER
from ci_policy.model.starter_calls import (
    BUILTIN_MARKERS,
    MARKER_IN_TEXT,
    SUITE_TEMPLATE,
    TEMPLATE_ARGUMENTS,
    Call,
    calls_of,
    extra_arguments,
    holds,
    note,
    walk,
)
from ci_policy.model.starter_ci import (
    DiscoveryRoot,
    StagePlan,
    collected_excludes,
    collector_roots,
    cron_cadence,
    discovery_of,
    stage_facts,
    variant_names,
)
from ci_policy.read.checkout import read_text
from ci_policy.read.markers import parse_source, scan
from ci_policy.read.suite_jobs import read_suite_jobs

BUILTIN_BACKENDS = tuple(BUILTIN_BACKEND_MAP)
# Accelerators whose marker names sglang-family repositories use; any other word is declared
# an accelerator too, with a comment naming the marker it came from.
KNOWN_ACCELERATORS = ("npu", "xpu")
LABELS_FILE = "labels.py"
# The first line of the written configuration: editors read the schema from it.
SCHEMA_LINE = ("# yaml-language-server: $schema=https://raw.githubusercontent.com/ci-policy/ci-policy/main/"
               "ci_policy/schemas/config.schema.json")
TODO_DESCRIPTION = "TODO: describe"


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


def _seconds(value: float) -> str:
    return f"{int(value)}s" if float(value).is_integer() else f"{value:g}s"


def _backend_order(backend: str) -> tuple[int, str]:
    return (BUILTIN_BACKENDS.index(backend) if backend in BUILTIN_BACKENDS else len(BUILTIN_BACKENDS), backend)


def starter(repo: Path) -> Starter:
    """Read the checkout at `repo` and infer its starter configuration."""
    repo = Path(repo)
    if not repo.is_dir():
        raise InputError(f"repository {repo} is not a directory", path=str(repo), code="CP403",
                         hint="pass --repo with the checkout's root directory")
    walked = walk(repo)
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
        if not MARKER_IN_TEXT.search(text):
            excludable.add(rel)
            continue
        tree = parse_source(text, rel)
        if isinstance(tree, Diagnostic):
            notes.append(replace(tree, severity="warning", code=None, message=f"skipped: {tree.message}"))
            continue
        file_notes: list[Diagnostic] = []
        found, marked = calls_of(rel, tree, text, file_notes)
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
    collected = collector_roots(repo, facts, registered, notes)
    not_discovered: list[str] = []
    if collected is not None:
        not_discovered = sorted(registered - collected.discovered)
        for f in not_discovered:
            notes.append(note(f"{f} registers tests but is not under the directories the workflows' collector "
                               f"reads ({', '.join(r.path for r in collected.roots)}); it is not discovered",
                               path=f, hint="add its directory to discovery.roots if CI should run it"))
        registered = collected.discovered
        calls = [c for c in calls if c.file in registered]
        exclude = collected_excludes(collected, excludable, walked.skipped_dirs, lambda d, g: holds(repo, d, g))
        patterns = {r.pattern for r in collected.roots}
        pattern = min(patterns, key=lambda p: (-sum(1 for r in collected.roots if r.pattern == p), p))
        roots = collected.roots
        root_lines = [(r.path, None if r.pattern == pattern else r.pattern) for r in roots]
    else:
        others = [f for f in walked.python_files if f not in registered]
        inferred = discovery_of(registered, others, excludable, walked.skipped_dirs, lambda d, g: holds(repo, d, g))
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
    plans: list[StagePlan] = []
    for suite, group in by_suite.items():
        # A stage is its (backend, suite): a suite several backends use is a stage per backend.
        counts = Counter(c.backend for c in group)
        for backend in sorted(counts, key=lambda b: (-counts[b], _backend_order(b))):
            plans.append(stage_facts(suite, backend, [c for c in group if c.backend == backend], facts, crons_of,
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
                schedules.append((cron, cron_cadence(cron), workflow))
    nightly_selects = "nightly_only" if any(c.nightly for c in calls) else None

    # Each call's backend came from its marker's name, so a marker has one backend.
    names = {c.marker: c.backend for c in sorted(calls, key=lambda c: c.marker) if c.marker not in BUILTIN_MARKERS}
    backends_declared = sorted({b for b in names.values() if b not in BUILTIN_BACKENDS})
    markers_of = {b: sorted(m for m, mb in names.items() if mb == b) for b in backends_declared}
    extra_names = {n for c in calls for n in c.extra_names}
    template = any(n in extra_names for n in TEMPLATE_ARGUMENTS)
    extra = extra_arguments(calls, extra_names, notes)
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
                    variants = tuple(zip(variant_names(plan.pools), plan.pools, strict=True))
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
