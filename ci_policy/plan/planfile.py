"""One plan per CI run: the plan's `inputs`, and a plan file read back for `list` and `run`.

- `inputs_dict(config_id, labels_id, files, tree)`: the plan JSON's `inputs` object, the
  content ids of the configuration, the labels file (None: there is none) and every
  discovered test file, the git tree the checkout exactly was (None: not a git work tree,
  or one with changes, see `adapters.git.clean_tree`), with `digest`, `sha256:` of the
  canonical JSON (sorted keys, no spaces, UTF-8) of the other four.
- `read_plan_file(text, source, stage=None)`: a plan file (the plan job's `plan --format
  json`, untrusted: it crosses jobs as an artifact) parsed with the strict JSON reader into
  a `PlanFile`; every path must be a plain repo-relative path (`read.checkout` rules), every
  number in range (`read.numbers`), every shard's file one of its stage's tests. Given
  `stage` (what a stage job runs) and a plan that has it, the other stages are read for
  their names only and left out of the `PlanFile`: a stage job does not pay for the
  thousands of tests of the others.
- A per-stage plan (`plan --stage-plans`: `inputs` without `files`) is read as a `PlanFile`
  with `stage_plan` set and no file in its inputs: its tests and gates are checked as plain
  paths (no listing names them) and its digest, of the whole plan's inputs, for its form
  only. It holds for the clean tree it recorded and nothing else (`cli.options`). Its
  `run_settings` (`plan.stagejob.settings_dict`) are read when this ci_policy version wrote
  them: every key and no other, each value as the configuration allows it (`settings`).
- `stage_job(plan_file, stage)`: the `StageJob` of a per-stage plan from its settings, with
  no configuration; None where the stage job needs the configuration (gates, invalid files,
  settings of another version).
- `mismatches(recorded, current, ...)`: what differs between the plan's inputs and the
  checkout's, in the words the refusal prints (`tests/a/test_x.py changed`).
- `plan_of(plan_file, snapshot)`: the `Plan` that `list` and `run` read, rebuilt from the
  file (stages, shards, registrations, gate declarations, invalid files, the policy's
  event, cadence, trust, labels, fast-fail and baseline switches) over a snapshot holding
  the configuration, the labels and the discovered files: no test file is parsed. Each
  stage carries the split's `lower_bound` and `optimal` and its sizing notes
  (`shards_reason`, `max_parallel`, `max_parallel_reason`) as the plan job computed them. Its
  registrations carry what `run` reads (file, line, backend, suite, est_time and its
  source, marker), not their labels or columns.
- Refused: a file that is not such a plan, as `UsageError` naming `--plan` and the
  location in the document (`stages[1].shards[0].files[2]`), among them one with a lone
  surrogate escape in any string (no UTF-8 output could carry it); in `plan_of`, a stage the
  configuration does not declare or declares external (`stage_job`, which reads no
  configuration, takes the plan's stage: the per-stage plan holds only with the
  configuration it was planned with).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from ci_policy import __version__
from ci_policy.config.runrules import (
    MAX_KILL_GRACE,
    RUNNERS,
    EnvRules,
    RetryRules,
    check_env_pattern,
    check_regex,
)
from ci_policy.errors import Diagnostic, InputError, UsageError
from ci_policy.model.registration import Registration
from ci_policy.plan.partition import Shard
from ci_policy.plan.stagejob import PlannedStage, RunSettings, StageJob
from ci_policy.plan.trust import TRUST_VALUES
from ci_policy.read.checkout import is_plain_relative
from ci_policy.read.numbers import MAX_EST_TIME, MAX_FACTOR, MAX_SECONDS, is_finite_number
from ci_policy.read.strictjson import loads, lone_surrogate

if TYPE_CHECKING:  # what `plan_of` and the gates make: imported there, not by a stage job reading its plan
    from ci_policy.config.stages import Stage
    from ci_policy.gates.declarations import GateDeclaration
    from ci_policy.model.snapshot import Snapshot
    from ci_policy.plan.build import Plan

SCHEMA = 1
# A content id as `ci_policy.adapters.git.content_ids` writes it.
CONTENT_ID_RE = re.compile(r"git:[0-9a-f]{40}|sha256:[0-9a-f]{64}")
TREE_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")
_HEX = "0123456789abcdef"


def is_content_id(value: Any) -> TypeGuard[str]:
    """`CONTENT_ID_RE.fullmatch(value)`, by slicing and stripping (a plan holds one per test file)."""
    if not isinstance(value, str):
        return False
    if value.startswith("git:"):
        body, size = value[4:], 40
    elif value.startswith("sha256:"):
        body, size = value[7:], 64
    else:
        return False
    return len(body) == size and not body.strip(_HEX)


# Content ids joined by newlines, each followed by one.
_CONTENT_IDS_RE = re.compile(r"(?:(?:git:[0-9a-f]{40}|sha256:[0-9a-f]{64})\n)*")


def all_content_ids(values: list[Any]) -> bool:
    """Whether every value `is_content_id`, matched on their joined text (one regex pass in C)."""
    if not set(map(type, values)) <= {str}:
        return False
    text = "\n".join([*values, ""])
    return text.count("\n") == len(values) and _CONTENT_IDS_RE.fullmatch(text) is not None
# How many differences a refusal names before `and K more`.
NAMED = 5
HINT = ("re-run `ci-policy plan --format json` on this checkout and pass its output, "
        "or leave out --plan to plan here")


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def inputs_dict(config_id: str | None, labels_id: str | None, files: Mapping[str, str],
                tree: str | None = None) -> dict[str, Any]:
    """The plan JSON's `inputs`: the content ids, the checkout's clean tree, and their digest."""
    body: dict[str, Any] = {"config": config_id, "labels": labels_id, "files": dict(sorted(files.items())),
                            "tree": tree}
    return {**body, "digest": "sha256:" + hashlib.sha256(canonical_json(body)).hexdigest()}


@dataclass(frozen=True)
class Inputs:
    config: str | None
    labels: str | None
    files: tuple[tuple[str, str], ...]
    # The git tree the checkout exactly was (`adapters.git.clean_tree`): a stage job whose
    # checkout is that same clean tree has the same files, so it need not list them.
    tree: str | None = None


@dataclass(frozen=True)
class FileStage:
    name: str
    backend: str
    decision: str
    reasons: tuple[str, ...]
    tests: tuple[tuple[str, float, str, int | None, str | None], ...]  # file, est_time, est_source, line, marker
    shards: tuple[Shard, ...]
    invalid: tuple[str, ...]
    # The split's lower bound and proof, and the sizing notes, as the plan job computed them.
    lower_bound: float = 0
    optimal: bool = True
    shards_reason: str | None = None
    max_parallel: int | None = None
    max_parallel_reason: str | None = None


@dataclass(frozen=True)
class PlanFile:
    source: str
    inputs: Inputs
    event: str
    cadence: str
    trust: str
    raw_labels: tuple[str, ...]
    include_labels: tuple[str, ...]
    bypass_fastfail: bool
    write_baseline: bool
    stages: tuple[FileStage, ...]
    gates: tuple[GateDeclaration, ...]
    invalid: tuple[tuple[str, tuple[Diagnostic, ...]], ...]
    warnings: tuple[str, ...]
    not_fully_read: tuple[str, ...]
    # A per-stage plan (`plan --stage-plans`): its inputs list no test file (`inputs.files` absent),
    # so it holds only for the clean tree it recorded (`cli.options.plan_from_file`).
    stage_plan: bool = False
    # A per-stage plan's `run_settings`: how its stage's files run, resolved from the configuration.
    settings: RunSettings | None = None


class _Doc:
    """Typed reads of the untrusted document; every error names the option and the location."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, message: str) -> UsageError:
        at = f" {where}:" if where else ""
        return UsageError(f"{self.source}:{at} {message}", source="--plan",
                          hint="pass the file `ci-policy plan --format json` wrote in this run's plan job")

    def get(self, obj: dict[str, Any], key: str, where: str) -> Any:
        if key not in obj:
            raise self.fail(where, f"missing key {key!r}")
        return obj[key]

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {_kind(value)}")
        return value

    def array(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected an array, got {_kind(value)}")
        return value

    def string(self, value: Any, where: str, *, optional: bool = False) -> Any:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self.fail(where, f"expected a string, got {_kind(value)}")
        return value

    def strings(self, value: Any, where: str) -> tuple[str, ...]:
        if isinstance(value, list) and set(map(type, value)) <= {str}:
            return tuple(value)  # the common case, without a location string per element
        return tuple(self.string(v, f"{where}[{i}]") for i, v in enumerate(self.array(value, where)))

    def boolean(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(where, f"expected true or false, got {_kind(value)}")
        return value

    def number(self, value: Any, where: str, maximum: float) -> float:
        if not is_finite_number(value) or not 0 <= value <= maximum:
            raise self.fail(where, f"expected a number in [0, {maximum}], got {_shown(value)}")
        return value

    def count(self, value: Any, where: str, *, minimum: int = 0, optional: bool = False) -> Any:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= 10**9:
            raise self.fail(where, f"expected a whole number >= {minimum}, got {_shown(value)}")
        return value

    def path(self, value: Any, where: str) -> str:
        text: str = self.string(value, where)
        if not is_plain_relative(text):
            raise self.fail(where, f"{_shown(text)} is not a plain repo-relative path")
        return text

    def content_id(self, value: Any, where: str, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not is_content_id(value):
            raise self.fail(where, f"expected a content id (git:<40 hex> or sha256:<64 hex>), got {_shown(value)}")
        return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
            dict: "an object"}.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    text = json.dumps(value, allow_nan=True) if not isinstance(value, (dict, list)) else _kind(value)
    return text if len(text) <= 80 else text[:77] + "..."


def read_plan_file(text: str, source: str, stage: str | None = None) -> PlanFile:
    """Parse and check a plan file; `UsageError` (naming `--plan`) for anything that is not a plan.

    With `stage`, only that stage is read whole and kept, when the plan has it.
    """
    doc = _Doc(source)
    try:
        raw = loads(text)
        lone = lone_surrogate(text, raw)
    except ValueError as exc:  # JSONDecodeError, a duplicate key, NaN/Infinity
        raise doc.fail("", f"not a JSON plan: {exc}") from None
    except RecursionError:  # in `loads`: not "a file of the checkout"
        raise doc.fail("", "not a JSON plan: nested too deeply") from None
    if lone:
        # `\ud800` alone decodes to a string that no UTF-8 output can carry; the plan writer
        # never writes one (a pair, for a character outside the BMP, decodes to that character).
        raise doc.fail("", "not a JSON plan: a string holds a lone surrogate escape (\\ud800 to \\udfff)")
    top = doc.obj(raw, "")
    if top.get("schema") != SCHEMA:
        raise doc.fail("schema", f"expected schema {SCHEMA}, got {_shown(top.get('schema'))}")
    raw_inputs = doc.obj(doc.get(top, "inputs", ""), "inputs")
    stage_plan = "files" not in raw_inputs
    inputs = _inputs(doc, raw_inputs)
    # A per-stage plan names no test file in its inputs: its tests and gates are checked as paths only.
    known = None if stage_plan else {name for name, _ in inputs.files}
    raw_stages = [doc.obj(s, f"stages[{i}]") for i, s in enumerate(doc.array(doc.get(top, "stages", ""), "stages"))]
    names = [doc.string(doc.get(s, "name", f"stages[{i}]"), f"stages[{i}].name") for i, s in enumerate(raw_stages)]
    # A stage the plan lacks: every stage is read, and the refusal lists them.
    whole = stage is None or stage not in names
    stages = tuple(_stage(doc, s, f"stages[{i}]", known) for i, s in enumerate(raw_stages)
                   if whole or names[i] == stage)
    if len(set(names)) != len(names):
        raise doc.fail("stages", "a stage is planned twice")
    trust = doc.string(doc.get(top, "trust", ""), "trust")
    if trust not in TRUST_VALUES:
        raise doc.fail("trust", f"expected one of {', '.join(TRUST_VALUES)}, got {_shown(trust)}")
    invalid = []
    for i, entry in enumerate(doc.array(doc.get(top, "invalid", ""), "invalid")):
        where = f"invalid[{i}]"
        entry = doc.obj(entry, where)
        file = doc.path(doc.get(entry, "file", where), f"{where}.file")
        diagnostics = tuple(_diagnostic(doc, doc.obj(d, f"{where}.diagnostics[{j}]"), f"{where}.diagnostics[{j}]")
                            for j, d in enumerate(doc.array(doc.get(entry, "diagnostics", where),
                                                            f"{where}.diagnostics")))
        invalid.append((file, diagnostics))
    return PlanFile(
        source=source, inputs=inputs,
        event=doc.string(doc.get(top, "event", ""), "event"),
        cadence=doc.string(doc.get(top, "cadence", ""), "cadence"),
        trust=trust,
        raw_labels=doc.strings(doc.get(top, "raw_labels", ""), "raw_labels"),
        include_labels=doc.strings(doc.get(top, "include_labels", ""), "include_labels"),
        bypass_fastfail=doc.boolean(doc.get(top, "bypass_fastfail", ""), "bypass_fastfail"),
        write_baseline=doc.boolean(doc.get(top, "write_baseline", ""), "write_baseline"),
        stages=stages,
        gates=tuple(_gate(doc, doc.obj(g, f"gates[{i}]"), f"gates[{i}]", known)
                    for i, g in enumerate(doc.array(doc.get(top, "gates", ""), "gates"))),
        invalid=tuple(invalid),
        warnings=doc.strings(doc.get(top, "warnings", ""), "warnings"),
        not_fully_read=tuple(doc.path(p, f"not_fully_read[{i}]")
                             for i, p in enumerate(doc.array(doc.get(top, "not_fully_read", ""), "not_fully_read"))),
        stage_plan=stage_plan,
        settings=(_run_settings(doc, doc.obj(top["run_settings"], "run_settings"))
                  if stage_plan and "run_settings" in top else None),
    )


def _inputs(doc: _Doc, raw: dict[str, Any]) -> Inputs:
    """The plan's inputs; a per-stage plan's (no `files`) with no file, its digest (of the whole
    plan's inputs) checked for form only."""
    config = doc.content_id(doc.get(raw, "config", "inputs"), "inputs.config", optional=True)
    labels = doc.content_id(doc.get(raw, "labels", "inputs"), "inputs.labels", optional=True)
    files: dict[str, str] | None = None
    if "files" in raw:
        files = doc.obj(raw["files"], "inputs.files")
        # Checked in passes over all of them (`map`, one regex over the ids' joined text), not a loop per file.
        if not (all(map(is_plain_relative, files)) and all_content_ids(list(files.values()))):
            for name, cid in files.items():  # the first fault, located
                if not (is_plain_relative(name) and is_content_id(cid)):
                    doc.path(name, "inputs.files")
                    doc.content_id(cid, f"inputs.files[{json.dumps(name)}]")
    tree = doc.get(raw, "tree", "inputs")
    if tree is not None and not (isinstance(tree, str) and TREE_RE.fullmatch(tree)):
        raise doc.fail("inputs.tree", f"expected null or a git tree id (40 or 64 hex digits), got {_shown(tree)}")
    digest = doc.string(doc.get(raw, "digest", "inputs"), "inputs.digest")
    if files is None:  # a per-stage plan
        if not _DIGEST_RE.fullmatch(digest):
            raise doc.fail("inputs.digest", f"expected sha256:<64 hex digits>, got {_shown(digest)}")
        return Inputs(config, labels, (), tree)
    if inputs_dict(config, labels, files, tree)["digest"] != digest:
        raise doc.fail("inputs.digest", "does not match the inputs it covers (the file was edited)")
    return Inputs(config, labels, tuple(sorted(files.items())), tree)


_EST_SOURCES = ("literal", "implicit", "estimates")


def _stage(doc: _Doc, raw: dict[str, Any], where: str, known: set[str] | None) -> FileStage:
    name = doc.string(doc.get(raw, "name", where), f"{where}.name")
    decision = doc.string(doc.get(raw, "decision", where), f"{where}.decision")
    if decision not in ("run", "skip"):
        raise doc.fail(f"{where}.decision", f"expected run or skip, got {_shown(decision)}")
    tests = []
    for i, t in enumerate(doc.array(doc.get(raw, "tests", where), f"{where}.tests")):
        entry = _plain_test(t, known)
        if entry is not None:
            tests.append(entry)
            continue
        at = f"{where}.tests[{i}]"  # something is wrong with it: read it field by field, naming the first fault
        t = doc.obj(t, at)
        file = doc.path(doc.get(t, "file", at), f"{at}.file")
        if known is not None and file not in known:
            raise doc.fail(f"{at}.file", f"{file} is not among inputs.files")
        source = doc.string(doc.get(t, "est_source", at), f"{at}.est_source")
        if source not in _EST_SOURCES:
            raise doc.fail(f"{at}.est_source", f"expected one of {', '.join(_EST_SOURCES)}, got {_shown(source)}")
        tests.append((file, doc.number(doc.get(t, "est_time", at), f"{at}.est_time", MAX_EST_TIME), source,
                      doc.count(doc.get(t, "line", at), f"{at}.line", minimum=1, optional=True),
                      doc.string(doc.get(t, "marker", at), f"{at}.marker", optional=True)))
    test_files = {t[0] for t in tests}  # a set: a stage may hold thousands of files
    if len(test_files) != len(tests):
        raise doc.fail(f"{where}.tests", "a test file is listed twice")
    shards = []
    placed: set[str] = set()
    for i, s in enumerate(doc.array(doc.get(raw, "shards", where), f"{where}.shards")):
        at = f"{where}.shards[{i}]"
        s = doc.obj(s, at)
        if doc.count(doc.get(s, "index", at), f"{at}.index") != i:
            raise doc.fail(f"{at}.index", f"expected {i}: shards are numbered from 0 in order")
        files = doc.strings(doc.get(s, "files", at), f"{at}.files")
        distinct = set(files)
        if len(distinct) == len(files) and distinct <= test_files and distinct.isdisjoint(placed):
            placed |= distinct
        else:
            for j, f in enumerate(files):
                if f not in test_files or f in placed:
                    raise doc.fail(f"{at}.files[{j}]",
                                   f"{_shown(f)} is not a test of the stage, or is in two shards")
                placed.add(f)
        shards.append(Shard(index=i, est_seconds=doc.number(doc.get(s, "est_seconds", at), f"{at}.est_seconds",
                                                            MAX_EST_TIME * 10**6), files=files))
    max_parallel = doc.count(raw.get("max_parallel"), f"{where}.max_parallel", minimum=1, optional=True)
    return FileStage(name=name, backend=doc.string(doc.get(raw, "backend", where), f"{where}.backend"),
                     decision=decision,
                     reasons=doc.strings(doc.get(raw, "reasons", where), f"{where}.reasons"),
                     tests=tuple(tests), shards=tuple(shards),
                     invalid=tuple(doc.path(p, f"{where}.invalid[{i}]") for i, p in
                                   enumerate(doc.array(doc.get(raw, "invalid", where), f"{where}.invalid"))),
                     lower_bound=doc.number(doc.get(raw, "lower_bound", where), f"{where}.lower_bound",
                                            MAX_EST_TIME * 10**6),
                     optimal=doc.boolean(doc.get(raw, "optimal", where), f"{where}.optimal"),
                     shards_reason=doc.string(raw.get("shards_reason"), f"{where}.shards_reason", optional=True),
                     max_parallel=max_parallel,
                     max_parallel_reason=None if max_parallel is None else
                     doc.string(doc.get(raw, "max_parallel_reason", where), f"{where}.max_parallel_reason"))


def _plain_test(t: Any, known: set[str] | None) -> tuple[str, float, str, int | None, str | None] | None:
    """A `tests[]` entry that passes every check `_stage` makes, read without naming locations;
    None when any check fails (`_stage` then reads it field by field to name the fault)."""
    if not isinstance(t, dict):
        return None
    try:
        file, est, source, line, marker = t["file"], t["est_time"], t["est_source"], t["line"], t["marker"]
    except KeyError:
        return None
    # Every name in `known` passed `is_plain_relative` already.
    if not (isinstance(file, str) and (file in known if known is not None else is_plain_relative(file))
            and isinstance(source, str) and source in _EST_SOURCES
            and is_finite_number(est) and 0 <= est <= MAX_EST_TIME
            and (line is None or (type(line) is int and 1 <= line <= 10**9))
            and (marker is None or isinstance(marker, str))):
        return None
    return file, est, source, line, marker


def _gate(doc: _Doc, raw: dict[str, Any], where: str, known: set[str] | None) -> GateDeclaration:
    from ci_policy.config.gates import constraint_problems, steps_problems
    from ci_policy.gates.declarations import KEYWORDS, GateDeclaration

    file = doc.path(doc.get(raw, "file", where), f"{where}.file")
    if known is not None and file not in known:
        raise doc.fail(f"{where}.file", f"{file} is not among inputs.files")
    key = doc.string(doc.get(raw, "metric_key", where), f"{where}.metric_key")
    steps = doc.get(raw, "steps", where)
    if steps is not None and steps_problems(steps):
        raise doc.fail(f"{where}.steps", steps_problems(steps)[0])
    constraint = doc.get(raw, "constraint", where)
    if constraint is not None and constraint_problems(constraint):
        raise doc.fail(f"{where}.constraint", constraint_problems(constraint)[0])
    written = doc.strings(doc.get(raw, "written", where), f"{where}.written")
    if any(w not in KEYWORDS for w in written):
        raise doc.fail(f"{where}.written", f"expected names among {', '.join(KEYWORDS)}")
    return GateDeclaration(
        file=file, line=doc.count(doc.get(raw, "line", where), f"{where}.line", minimum=1),
        col=doc.count(doc.get(raw, "col", where), f"{where}.col", minimum=1),
        metric_key=key, steps=steps,
        constraint=None if constraint is None else tuple(sorted(constraint.items())),
        enforce=doc.boolean(doc.get(raw, "enforce", where), f"{where}.enforce"),
        allowlist_reason=doc.string(doc.get(raw, "allowlist_reason", where), f"{where}.allowlist_reason",
                                    optional=True),
        written=written)


def gate_dict(g: GateDeclaration) -> dict[str, Any]:
    """A gate declaration in the plan JSON (`gates`), as `_gate` reads it back."""
    return {"file": g.file, "line": g.line, "col": g.col, "metric_key": g.metric_key, "steps": g.steps,
            "constraint": None if g.constraint is None else dict(g.constraint), "enforce": g.enforce,
            "allowlist_reason": g.allowlist_reason, "written": list(g.written)}


def _diagnostic(doc: _Doc, raw: dict[str, Any], where: str) -> Diagnostic:
    code = doc.string(raw.get("code"), f"{where}.code", optional=True)
    return Diagnostic(message=doc.string(doc.get(raw, "message", where), f"{where}.message"),
                      path=doc.string(doc.get(raw, "path", where), f"{where}.path", optional=True),
                      line=doc.count(doc.get(raw, "line", where), f"{where}.line", optional=True),
                      col=doc.count(doc.get(raw, "col", where), f"{where}.col", optional=True),
                      hint=doc.string(doc.get(raw, "hint", where), f"{where}.hint", optional=True),
                      code=code)


def mismatches(recorded: Inputs, current: Inputs, config_name: str, labels_name: str) -> list[str]:
    """What differs, configuration and labels first, then the test files in path order."""
    if recorded == current:
        return []  # the common case, compared without a dict of either
    out = []
    if recorded.config != current.config:
        out.append(f"configuration {config_name} changed")
    if recorded.labels != current.labels:
        if current.labels is None:
            out.append(f"{labels_name} is missing")
        elif recorded.labels is None:
            out.append(f"{labels_name} is not in the plan")
        else:
            out.append(f"{labels_name} changed")
    was, now = dict(recorded.files), dict(current.files)
    for file in sorted(was.keys() | now.keys()):
        if file not in now:
            out.append(f"{file} is missing")
        elif file not in was:
            out.append(f"{file} is not in the plan")
        elif was[file] != now[file]:
            out.append(f"{file} changed")
    return out


def check_inputs(plan_file: PlanFile, current: Inputs, config_name: str, labels_name: str) -> None:
    """`InputError` (located at the plan file) naming at most `NAMED` differences, then how many more."""
    found = mismatches(plan_file.inputs, current, config_name, labels_name)
    if not found:
        return
    named = "; ".join(found[:NAMED]) + (f"; and {len(found) - NAMED} more" if len(found) > NAMED else "")
    raise InputError(f"the plan does not match the checkout: {named}", path=plan_file.source, hint=HINT)


def _stage_config(snapshot: Snapshot, name: str, source: str) -> Stage:
    stage = snapshot.config.stage(name)
    if stage is None or stage.external:
        raise UsageError(f"{source}: stage {name!r} is not a stage ci-policy plans in the configuration",
                         source="--plan", hint=HINT)
    return stage


def _registrations(fs: FileStage, backend: str) -> tuple[Registration, ...]:
    """A stage's tests as the registrations `run` reads (file, line, backend, suite, est_time and
    its source, marker), not their labels or columns."""
    return tuple(Registration(file=file, line=line, backend=backend, suite=fs.name, est_time=est,
                              implicit=marker is None, est_source=source, marker=marker)  # type: ignore[arg-type]
                 for file, est, source, line, marker in fs.tests)


def plan_of(plan_file: PlanFile, snapshot: Snapshot) -> Plan:
    """The `Plan` of the file over `snapshot` (configuration, labels, discovered files, no registration)."""
    from ci_policy.model.snapshot import InvalidFile, Snapshot, Validity
    from ci_policy.plan.build import Plan, StagePlan
    from ci_policy.plan.policy import Policy
    from ci_policy.read.diff import Diff

    stages = []
    registrations: list[Registration] = []
    suites: dict[str, set[str]] = {}
    for fs in plan_file.stages:
        stage = _stage_config(snapshot, fs.name, plan_file.source)
        tests = _registrations(fs, stage.backend)
        registrations.extend(tests)
        for file in fs.invalid:
            suites.setdefault(file, set()).add(fs.name)
        stages.append(StagePlan(stage=stage, decision=fs.decision, reasons=fs.reasons,  # type: ignore[arg-type]
                                tests=tests, shards=fs.shards, invalid=fs.invalid, shards_reason=fs.shards_reason,
                                max_parallel=fs.max_parallel, max_parallel_reason=fs.max_parallel_reason,
                                lower_bound=fs.lower_bound, optimal=fs.optimal))
    invalid = tuple(InvalidFile(file, diagnostics, tuple(sorted(suites.get(file, ()))))
                    for file, diagnostics in plan_file.invalid)
    snap = Snapshot(repo=snapshot.repo, config=snapshot.config, labels=snapshot.labels, files=snapshot.files,
                    registrations=tuple(sorted(registrations, key=Registration.sort_key)),
                    gates=plan_file.gates, errors=(),
                    validity=Validity(fatal=(), invalid=invalid, not_fully_read=plan_file.not_fully_read))
    policy = Policy(event=plan_file.event, cadence=plan_file.cadence, raw_labels=plan_file.raw_labels,
                    include_labels=plan_file.include_labels, sources=(), admit_nightly=False,
                    bypass_fastfail=plan_file.bypass_fastfail, write_baseline=plan_file.write_baseline,
                    trust=plan_file.trust)
    return Plan(snapshot=snap, policy=policy, diff=Diff.unavailable(f"planned in {plan_file.source}"),
                stages=tuple(stages), images=(), warnings=plan_file.warnings)


_SETTINGS = ("ci_policy", "runner", "timeout_per_file", "timeout_from_est_time", "kill_grace", "retry", "env",
             "capture")


def _run_settings(doc: _Doc, raw: dict[str, Any]) -> RunSettings | None:
    """A per-stage plan's `run_settings` (`plan.stagejob.settings_dict`): every key, no other, each
    value as the configuration allows it (no value it refuses reaches a test's run). None when
    another ci_policy version wrote them: its configuration's checks (`requires` among them) are
    not this version's, so the stage job reads the configuration itself."""
    if doc.string(doc.get(raw, "ci_policy", "run_settings"), "run_settings.ci_policy") != __version__:
        return None

    def keys(obj: dict[str, Any], names: tuple[str, ...], where: str) -> dict[str, Any]:
        for name in names:
            doc.get(obj, name, where)
        unknown = [key for key in obj if key not in names]
        if unknown:
            raise doc.fail(where, f"unknown key {_shown(unknown[0])}")
        return obj

    def positive(value: Any, where: str, maximum: float) -> Any:
        if value is None:
            return None
        if not is_finite_number(value) or not 0 < value <= maximum:
            raise doc.fail(where, f"expected null or a number in (0, {maximum}], got {_shown(value)}")
        return value

    def strings(value: Any, where: str, check: Callable[[str], str | None] | None = None, *,
                non_empty: bool = False) -> tuple[str, ...]:
        items = doc.strings(value, where)
        if non_empty and not items:
            raise doc.fail(where, "must not be empty")
        seen: set[str] = set()
        for i, item in enumerate(items):
            problem = check(item) if check is not None else None
            if problem is None and item in seen:
                problem = f"duplicate entry {item!r}"
            if problem is not None:
                raise doc.fail(f"{where}[{i}]", problem)
            seen.add(item)
        return items

    keys(raw, _SETTINGS, "run_settings")
    runner = raw["runner"]
    if runner not in RUNNERS:
        raise doc.fail("run_settings.runner", f"expected one of {', '.join(RUNNERS)}, got {_shown(runner)}")
    from_est = raw["timeout_from_est_time"]
    if from_est is not None:
        where = "run_settings.timeout_from_est_time"
        from_est = keys(doc.obj(from_est, where), ("factor", "floor"), where)
        from_est = (positive(from_est["factor"], f"{where}.factor", MAX_FACTOR),
                    positive(from_est["floor"], f"{where}.floor", MAX_SECONDS))
        if None in from_est:
            raise doc.fail(where, "expected a factor and a floor")
    retry = keys(doc.obj(raw["retry"], "run_settings.retry"), ("infra", "never", "retriable"), "run_settings.retry")
    env = keys(doc.obj(raw["env"], "run_settings.env"), ("allow", "drop"), "run_settings.env")
    return RunSettings(
        runner=runner,
        timeout_per_file=positive(raw["timeout_per_file"], "run_settings.timeout_per_file", MAX_SECONDS),
        timeout_from_est_time=from_est,
        kill_grace=doc.number(raw["kill_grace"], "run_settings.kill_grace", MAX_KILL_GRACE),
        retry=RetryRules(**{key: strings(value, f"run_settings.retry.{key}", check_regex)
                            for key, value in retry.items()}),
        env=EnvRules(**{key: strings(value, f"run_settings.env.{key}", check_env_pattern)
                        for key, value in env.items()}),
        capture=strings(raw["capture"], "run_settings.capture", non_empty=True),
    )


def stage_job(plan_file: PlanFile, stage: str) -> StageJob | None:
    """The job of a per-stage plan's stage `stage`, from its `run_settings`: no configuration read.

    None when running the stage needs more than that: another stage, no `run_settings`
    (written by an earlier version), invalid test files (their diagnostics are printed), a
    file of the stage that declares gates (evaluating them reads the configuration), or a
    baseline-writing run of a plan that declares gates (refused without a shared store
    before any test runs, `cli.run`). The caller also needs that no gate store is named.
    """
    gated = {g.file for g in plan_file.gates}
    if (plan_file.settings is None or plan_file.invalid or [s.name for s in plan_file.stages] != [stage]
            or (gated and plan_file.write_baseline) or any(t[0] in gated for t in plan_file.stages[0].tests)):
        return None
    (fs,) = plan_file.stages
    return StageJob(stage=PlannedStage(name=fs.name, decision=fs.decision, reasons=fs.reasons,
                                       tests=_registrations(fs, fs.backend), shards=fs.shards),
                    settings=plan_file.settings, bypass_fastfail=plan_file.bypass_fastfail,
                    declares_gates=bool(gated))
