"""What a checkout's own CI says about its suites, read from its workflows as data, for `init`.

- In: the checkout root and the repo-relative workflows directory (`.github/workflows`).
- Out: `read_suite_jobs(...)`: a `CiFacts`: every `SuiteRun` (a job step that names a suite:
  `python3 run_suite.py [--hw amd] --suite X`, or a stage: `ci-policy run --stage X`) with
  the job's `runs-on` (None when decided at run time), the PR labels its `if:` (or a job it
  `needs:`) tests for, the workflow's triggers and schedules; each matrix combination
  that GitHub's rules make statically known is expanded first (`strategy.matrix` lists,
  `include`, `exclude`; `${{ matrix.X }}` substituted in `runs-on` and in the script); the
  collector each run calls (`test/run_suite.py`) and the directory it runs in (`cd DIR`,
  `working-directory:`, a `-w DIR` argument whose trailing part is a directory of the
  checkout); the file globs a collector's source names (`registered/**/*.py`), read as
  text and parsed with `ast`, never executed; the runner mapping files a workflow names (a
  JSON or YAML file of the checkout mapping suite -> runner label(s)); and problems
  reading any of them, as uncoded warnings.
- Refused: a symlinked file or directory (a note, as every read of the checkout); a
  workflow that is not YAML (a note); nothing here imports or executes the checkout's files,
  and YAML is read with the safe loader.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import re
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ci_policy.errors import Diagnostic, InputError, warning
from ci_policy.read.checkout import check_no_symlinks, is_plain_relative, read_text
from ci_policy.read.yamlnodes import compose_any

# Expanding more matrix combinations than this tells init nothing more (GitHub's limit is 256).
MAX_COMBINATIONS = 256
_MATRIX_REF = re.compile(r"\$\{\{\s*matrix\.([A-Za-z0-9_-]+)\s*\}\}")
_LABEL_TEST = re.compile(
    r"(!\s*)?contains\(\s*github\.event\.pull_request\.labels\.\*\.name\s*,\s*'([^']+)'\s*\)")
# Events that run a workflow for a change rather than on a clock.
CHANGE_EVENTS = frozenset({"pull_request", "pull_request_target", "push", "merge_group", "workflow_dispatch"})
_DATA_FILE = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.(?:json|ya?ml))(?![\w.-])")
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class SuiteRun:
    """One job step that runs a suite (or stage), in one matrix combination."""

    workflow: str
    job: str
    line: int                      # the job's line
    suite: str
    hw: str | None                 # `--hw` as written (`amd`), None when not given
    runs_on: tuple[str, ...] | None
    labels: tuple[str, ...]        # PR labels the job (or a job it needs) tests for, positively
    collector: str | None          # the repo-relative collector script, when it is a file of the checkout
    workdir: str | None            # the repo-relative directory the collector runs in


@dataclass(frozen=True)
class RunnerMap:
    """A runner mapping file a workflow reads: suite -> runner labels."""

    path: str
    workflow: str
    runners: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class WorkflowFacts:
    path: str
    triggers: tuple[str, ...]
    crons: tuple[str, ...]


@dataclass(frozen=True)
class CiFacts:
    workflows: tuple[WorkflowFacts, ...]
    runs: tuple[SuiteRun, ...]
    maps: tuple[RunnerMap, ...]
    globs: tuple[tuple[str, str], ...]   # (collector, glob as its source writes it)
    notes: tuple[Diagnostic, ...]


def read_suite_jobs(root: Path, directory: str = ".github/workflows") -> CiFacts:
    notes: list[Diagnostic] = []
    try:
        st = check_no_symlinks(root, directory, what="workflows directory")
    except InputError as exc:
        return CiFacts((), (), (), (), (_note(exc.diagnostic),))
    if st is None or not stat.S_ISDIR(st.st_mode):
        return CiFacts((), (), (), (), ())
    workflows: list[WorkflowFacts] = []
    runs: list[SuiteRun] = []
    maps: list[RunnerMap] = []
    for name in sorted(n for n in os.listdir(root / directory) if n.endswith((".yml", ".yaml"))):
        rel = f"{directory}/{name}"
        try:
            text = read_text(root, rel, what="workflow")
            node = compose_any(text, strict=False)  # parsed once: the values and the jobs' lines
            doc = yaml.constructor.SafeConstructor().construct_document(node) if node is not None else None
        except InputError as exc:
            notes.append(_note(exc.diagnostic))
            continue
        except yaml.YAMLError as exc:
            notes.append(warning(f"workflow {rel} is not valid YAML, so init did not read it: "
                                 f"{getattr(exc, 'problem', None) or exc}", path=rel))
            continue
        if not isinstance(doc, dict):
            continue
        facts = _workflow_facts(rel, doc)
        workflows.append(facts)
        jobs = doc.get("jobs")
        if isinstance(jobs, dict):
            lines = _job_lines(node)
            known: dict[str, frozenset[str]] = {}
            for job_id, job in jobs.items():
                if isinstance(job, dict):
                    runs.extend(_job_runs(root, rel, str(job_id), job, jobs, lines.get(str(job_id), 0), known))
        maps.extend(_runner_maps(root, rel, text, notes))
    collectors = sorted({r.collector for r in runs if r.collector is not None})
    globs = [(c, g) for c in collectors for g in _collector_globs(root, c, notes)]
    return CiFacts(tuple(workflows), tuple(runs), tuple(maps), tuple(globs), tuple(notes))


def _note(d: Diagnostic) -> Diagnostic:
    return warning(f"init did not read it: {d.message}", path=d.path, line=d.line, col=d.col, hint=d.hint)


def _job_lines(node: yaml.Node | None) -> dict[str, int]:
    """The line of each job id (`  name:` below `jobs:`), for messages."""
    out: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "jobs" and isinstance(value, yaml.MappingNode):
                for k, _v in value.value:
                    if isinstance(k, yaml.ScalarNode):
                        out[str(k.value)] = k.start_mark.line + 1
    return out


def _workflow_facts(rel: str, doc: dict[Any, Any]) -> WorkflowFacts:
    # PyYAML reads the key `on` as the boolean True (YAML 1.1).
    on = doc.get("on", doc.get(True))
    crons: list[str] = []
    if isinstance(on, str):
        triggers: tuple[str, ...] = (on,)
    elif isinstance(on, list):
        triggers = tuple(str(t) for t in on)
    elif isinstance(on, dict):
        triggers = tuple(str(t) for t in on)
        schedule = on.get("schedule")
        for entry in schedule if isinstance(schedule, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("cron"), str):
                crons.append(entry["cron"])
    else:
        triggers = ()
    return WorkflowFacts(rel, triggers, tuple(crons))


def _combinations(job: dict[Any, Any]) -> list[dict[str, str]] | None:
    """The job's matrix combinations as GitHub expands them; [{}] without a matrix, None when not static."""
    strategy = job.get("strategy")
    matrix = strategy.get("matrix") if isinstance(strategy, dict) else None
    if matrix is None:
        return [{}]
    if not isinstance(matrix, dict):
        return None  # `matrix: ${{ fromJSON(...) }}`
    axes: list[tuple[str, list[str]]] = []
    for key, values in matrix.items():
        if key in ("include", "exclude"):
            continue
        if not isinstance(values, list) or not all(_scalar(v) for v in values):
            return None
        axes.append((str(key), [_text(v) for v in values]))
    size = 1
    for _key, values in axes:
        size *= len(values)
        if size > MAX_COMBINATIONS:
            return None  # counted before expanding: a hostile matrix cannot make init build it
    combos = [dict(zip([k for k, _ in axes], values, strict=True))
              for values in itertools.product(*(v for _, v in axes))] if axes else []
    excludes = matrix.get("exclude")
    for entry in excludes if isinstance(excludes, list) else []:
        if isinstance(entry, dict):
            combos = [c for c in combos if not all(c.get(str(k)) == _text(v) for k, v in entry.items())]
    includes = matrix.get("include")
    if includes is not None and not isinstance(includes, list):
        return None
    original = {k for k, _ in axes}
    base = len(combos)
    for entry in includes or []:
        if not isinstance(entry, dict) or not all(_scalar(v) for v in entry.values()):
            return None
        extra = {str(k): _text(v) for k, v in entry.items()}
        # GitHub: an include is added to every original combination whose original values it
        # does not overwrite (values added by an earlier include may be); one that fits none,
        # or any include of a matrix without lists, is a combination of its own.
        matched = False
        for combo in combos[:base]:
            if all(combo.get(k) == v for k, v in extra.items() if k in original):
                combo.update(extra)
                matched = True
        if not matched:
            combos.append(dict(extra))
    if len(combos) > MAX_COMBINATIONS:
        return None
    return combos or [{}]


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _substitute(text: str, combo: dict[str, str]) -> str:
    return _MATRIX_REF.sub(lambda m: combo.get(m.group(1), m.group(0)), text)


def _runs_on(value: Any, combo: dict[str, str]) -> tuple[str, ...] | None:
    if isinstance(value, dict):
        value = value.get("labels")
    labels = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if not labels or not all(isinstance(x, str) for x in labels):
        return None
    resolved = tuple(_substitute(x, combo) for x in labels)
    return None if any("${{" in x for x in resolved) else resolved


def _gate_labels(job_id: str, jobs: dict[Any, Any], seen: frozenset[str] = frozenset(),
                 known: dict[str, frozenset[str]] | None = None) -> frozenset[str]:
    """The PR labels a job runs only with: tested positively in its `if:`, or in a job it needs."""
    known = {} if known is None else known
    if job_id in known:
        return known[job_id]  # each job once, however many paths of `needs` lead to it
    job = jobs.get(job_id)
    if not isinstance(job, dict) or job_id in seen:
        return frozenset()
    known[job_id] = labels = frozenset(_own_and_needed(job_id, job, jobs, seen, known))
    return labels


def _own_and_needed(job_id: str, job: dict[Any, Any], jobs: dict[Any, Any], seen: frozenset[str],
                    known: dict[str, frozenset[str]]) -> set[str]:
    condition = job.get("if")
    condition = condition if isinstance(condition, str) else ""
    own = {m.group(2) for m in _LABEL_TEST.finditer(condition) if not m.group(1)}
    if len(own) > 1:
        own = set()  # several labels in one condition may be alternatives; init does not guess
    if "always()" in condition or "cancelled()" in condition or "failure()" in condition:
        return own  # runs even when a job it needs was skipped
    needs = job.get("needs")
    for need in [needs] if isinstance(needs, str) else needs if isinstance(needs, list) else []:
        own |= _gate_labels(str(need), jobs, seen | {job_id}, known)
    return own


def _job_runs(root: Path, workflow: str, job_id: str, job: dict[Any, Any], jobs: dict[Any, Any],
              line: int, known: dict[str, frozenset[str]]) -> list[SuiteRun]:
    combos = _combinations(job)
    steps = job.get("steps")
    if not isinstance(steps, list):
        return []
    labels = tuple(sorted(_gate_labels(job_id, jobs, known=known)))
    defaults = job.get("defaults")
    job_dir = _get_path(defaults, "run", "working-directory")
    out: list[SuiteRun] = []
    parsed: dict[tuple[str, str | None], list[tuple[str, str | None, str | None, str | None]]] = {}
    for combo in combos if combos is not None else [{}]:
        runs_on = _runs_on(job.get("runs-on"), combo) if combos is not None else None
        for step in steps:
            if not isinstance(step, dict) or not isinstance(step.get("run"), str):
                continue
            if "--suite" not in step["run"] and "--stage" not in step["run"]:
                continue  # names no suite: not worth the shell parsing
            step_dir = step.get("working-directory") if isinstance(step.get("working-directory"), str) else job_dir
            script = _substitute(step["run"], combo) if combos is not None else step["run"]
            if (script, step_dir) not in parsed:  # combinations that differ elsewhere share the script
                parsed[script, step_dir] = _commands(root, script, step_dir)
            for suite, hw, collector, workdir in parsed[script, step_dir]:
                out.append(SuiteRun(workflow, job_id, line, suite, hw, runs_on, labels, collector, workdir))
    # One entry per distinct fact: a matrix over partitions repeats the same suite and runner.
    return list(dict.fromkeys(out))


def _get_path(node: Any, *keys: str) -> str | None:
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, str) else None


def _commands(root: Path, script: str, step_dir: str | None) -> list[tuple[str, str | None, str | None, str | None]]:
    """(suite, hw, collector, workdir) of each command of a script that names a suite or a stage."""
    out: list[tuple[str, str | None, str | None, str | None]] = []
    cwd = _checkout_dir(root, step_dir) if step_dir is not None else None
    for raw in script.replace("\\\n", " ").splitlines():
        cwd = _line_commands(root, raw, cwd, out, depth=0)
    return out


_OPERATORS = frozenset({"&&", "||", ";", "|", "&"})


def _words(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: the words as written, quotes dropped
        return [w.strip("\"'") for w in line.split()]


def _line_commands(root: Path, line: str, cwd: str | None,
                   out: list[tuple[str, str | None, str | None, str | None]], depth: int) -> str | None:
    """Read the commands of one shell line into `out`; the directory a `cd` leaves it in."""
    words = _words(line)
    commands: list[list[str]] = [[]]
    for word in words:
        if word in _OPERATORS or set(word) <= set(";&|"):
            commands.append([])
        else:
            commands[-1].append(word)
    for words in commands:
        if not words:
            continue
        if words[0] == "cd" and len(words) > 1:
            cwd = _checkout_dir(root, words[1], cwd)
            continue
        inner = _option(words, "-c")
        if inner is not None and depth < 3 and any(w in ("bash", "sh") or w.endswith(("/bash", "/sh"))
                                                   for w in words):
            _line_commands(root, inner, cwd, out, depth + 1)  # `bash -c "cd test && ..."`
            continue
        suite = _option(words, "--suite")
        stage = _option(words, "--stage") if _is_ci_policy_run(words) else None
        name = suite or stage
        if name is None or "$" in name or "`" in name:
            continue
        workdir = cwd
        given = _option(words, "-w") or _option(words, "--workdir")
        if given is not None:
            workdir = _checkout_dir(root, given, workdir) or workdir
        collector = None
        if suite is not None:
            script_word = next((w for w in words if w.endswith(".py")), None)
            if script_word is not None:
                collector = _checkout_file(root, script_word, workdir)
        out.append((name, _option(words, "--hw"), collector, workdir))
    return cwd


def _is_ci_policy_run(words: list[str]) -> bool:
    return any(a == "ci-policy" and b == "run" for a, b in itertools.pairwise(words))


def _option(words: list[str], name: str) -> str | None:
    for i, word in enumerate(words):
        if word == name and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(name + "="):
            return word[len(name) + 1:]
    return None


def _mode(root: Path, rel: str) -> int:
    """The mode of `rel` with no symlink on its way; 0 when it is missing or is reached through one."""
    try:
        st = check_no_symlinks(root, rel, what="path")
    except InputError:
        return 0
    return st.st_mode if st is not None else 0


def _is_dir(root: Path, rel: str) -> bool:
    return stat.S_ISDIR(_mode(root, rel))


def _is_file(root: Path, rel: str) -> bool:
    return stat.S_ISREG(_mode(root, rel))


def _normal(path: str) -> str | None:
    norm = os.path.normpath(path).replace(os.sep, "/")
    if norm == ".":
        return "."
    return norm if is_plain_relative(norm) else None


def _checkout_dir(root: Path, given: str, cwd: str | None = None) -> str | None:
    """The checkout directory a `cd`/`-w` argument names: relative to the current one, or the
    trailing part of an absolute path (a container's mount of the checkout) that is a directory here."""
    given = given.rstrip("/") or "/"
    if given.startswith("/"):
        parts = [p for p in given.split("/") if p]
        for i in range(len(parts)):
            candidate = "/".join(parts[i:])
            if _normal(candidate) is not None and _is_dir(root, candidate):
                return candidate
        return None
    if "$" in given or given.startswith("~"):
        return None
    joined = _normal(given if cwd in (None, ".") else f"{cwd}/{given}")
    return joined if joined is not None and (joined == "." or _is_dir(root, joined)) else None


def _checkout_file(root: Path, word: str, cwd: str | None) -> str | None:
    if word.startswith("/") or "$" in word:
        return None
    rel = _normal(word if cwd in (None, ".") else f"{cwd}/{word}")
    return rel if rel is not None and _is_file(root, rel) else None


def _collector_globs(root: Path, collector: str, notes: list[Diagnostic]) -> list[str]:
    """The string literals of a collector's source that are file globs (`registered/**/*.py`)."""
    try:
        tree = ast.parse(read_text(root, collector, what="collector"), filename=collector)
    except InputError as exc:
        notes.append(_note(exc.diagnostic))
        return []
    except (SyntaxError, ValueError) as exc:
        notes.append(warning(f"collector {collector} cannot be parsed, so init did not read its globs: {exc}",
                             path=collector))
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value
            if value.endswith(".py") and any(c in value for c in _GLOB_CHARS) and "/" in value \
                    and not value.startswith("/") and value not in found:
                found.append(value)
    return found


def split_glob(glob: str) -> tuple[str, str] | None:
    """A collector glob as a discovery root (relative) and a basename pattern: `registered/**/*.py` ->
    (`registered`, `*.py`); None when its directories are themselves patterns past a `**`."""
    parts = glob.split("/")
    fixed: list[str] = []
    for part in parts[:-1]:
        if any(c in part for c in _GLOB_CHARS):
            if part != "**":
                return None
            break
        fixed.append(part)
    return ("/".join(fixed) or ".", parts[-1])


def _runner_maps(root: Path, workflow: str, text: str, notes: list[Diagnostic]) -> list[RunnerMap]:
    out = []
    for path in sorted(set(_DATA_FILE.findall(text))):
        rel = _normal(path)
        if rel is None or rel.startswith(".github/workflows/"):
            continue
        try:
            st = check_no_symlinks(root, rel, what="runner mapping")
            if st is None or not stat.S_ISREG(st.st_mode):
                continue  # a name in a script that is no file of the checkout
            data_text = read_text(root, rel, what="runner mapping")
            data = json.loads(data_text) if rel.endswith(".json") else yaml.safe_load(data_text)
        except InputError as exc:
            notes.append(_note(exc.diagnostic))
            continue
        except (ValueError, yaml.YAMLError):
            notes.append(warning(f"{rel}, which {workflow} reads, is not valid "
                                 f"{'JSON' if rel.endswith('.json') else 'YAML'}; init read no runner from it",
                                 path=rel))
            continue
        runners = _suite_runners(data)
        if runners:
            out.append(RunnerMap(rel, workflow, tuple(runners)))
    return out


def _suite_runners(data: Any) -> list[tuple[str, tuple[str, ...]]]:
    """suite -> labels of a mapping file: `{suite: label}`, `{suite: [labels]}`, `{suite: {runs-on: ...}}`."""
    if not isinstance(data, dict):
        return []
    out = []
    for key, value in data.items():
        if isinstance(value, dict):
            value = next((value[k] for k in ("runs-on", "runs_on", "runner", "runners") if k in value), None)
        labels = [value] if isinstance(value, str) else value
        if isinstance(key, str) and isinstance(labels, list) and labels \
                and all(isinstance(x, str) and x and "${{" not in x for x in labels):
            out.append((key, tuple(labels)))
    return out

