"""JSON renderers: the public documents of `registry` and `plan` (`"schema": 1`).

- In: registrations; a plan's `plan.document.PlanDocument` and its per-stage documents, as
  `plan.written` builds them (its stage jobs, each stage's split and sizing notes, the gates,
  the inputs, a per-stage plan's `run_settings`: computed there, written here; the use case
  that writes a plan, `app.plan_documents`, hands them over).
- Out: JSON text (two-space indented) or the dict it is made of; field order is stable (a
  plan's is its document's field order, `read.codec.encode`).
- `registry`, `plan` and `list` documents carry `invalid` (each invalid test file with its
  diagnostics, in the shape `lint --format json` uses) and `plan_complete`.
- Refused: `NaN` and `Infinity` (`ValueError` from `dumps`): JSON has neither. Never met in
  practice: every number read has a range (`ci_policy.read.numbers`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any

from ci_policy.errors import CiPolicyError, Diagnostic

if TYPE_CHECKING:  # the types of what is rendered; the modules that make them import them
    from ci_policy.config.stages import Stage
    from ci_policy.model.lint import LintReport
    from ci_policy.model.registry import Registration
    from ci_policy.model.snapshot import InvalidFile
    from ci_policy.plan.build import Plan, StagePlan
    from ci_policy.plan.document import PlanDocument, TestRow
    from ci_policy.plan.explain import Explanation
    from ci_policy.plan.filerun import FilePlan
    from ci_policy.plan.outcome import Outcome
    from ci_policy.plan.partition import Shard

JSON_SCHEMA_VERSION = 1


def dumps(value: Any, **options: Any) -> str:
    """`json.dumps` that refuses NaN and Infinity: JSON has neither, so a value out of its
    range stops here (ValueError) rather than printing a document no parser accepts.

    With `indent=2` alone, the text is built here with the C string encoder (`json.dumps`
    with an indent runs its pure-Python encoder, several times slower on a large registry
    or plan): the same text exactly, and `json.dumps` itself for anything but plain dicts
    with string keys, lists, tuples, strings, ints, finite floats, booleans and None.
    """
    if options == {"indent": 2}:
        try:
            return _indented(value, "\n")
        except (_Unusual, RecursionError):
            pass
    return json.dumps(value, allow_nan=False, **options)


class _Unusual(CiPolicyError):
    """A value `_indented` leaves to `json.dumps` (caught where raised; never reaches a caller)."""


_encode_str = json.encoder.encode_basestring_ascii  # what json.dumps uses (ensure_ascii)
_INFINITY = float("inf")


def _indented(value: Any, newline: str) -> str:
    """`json.dumps(value, indent=2, allow_nan=False)`, `newline` being the current line start."""
    kind = type(value)
    if kind is str:
        return _encode_str(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        if value != value or value in (_INFINITY, -_INFINITY):
            raise _Unusual
        return float.__repr__(value)
    if kind is dict:
        if not value:
            return "{}"
        inner = newline + "  "
        items = []
        for key, item in value.items():
            if type(key) is not str:
                raise _Unusual
            # A text value (the inputs' content id of every test file) without a call of its own.
            items.append(f"{_encode_str(key)}: {_encode_str(item) if type(item) is str else _indented(item, inner)}")
        return "{" + inner + ("," + inner).join(items) + newline + "}"
    if kind is list or kind is tuple:
        if not value:
            return "[]"
        inner = newline + "  "
        if type(value[0]) is str:
            # A list of paths (the plan's inputs name every test file) without a call per item:
            # the encoder refuses anything but a str (a str's subclass it writes as `json.dumps`
            # does, which a call per item would have fallen back to).
            try:
                return "[" + inner + ("," + inner).join(map(_encode_str, value)) + newline + "]"
            except TypeError:
                pass
        return "[" + inner + ("," + inner).join([_indented(item, inner) for item in value]) + newline + "]"
    if kind is _TestRows:
        return value.text(newline)
    raise _Unusual


def _number_text(value: object) -> str | None:
    """An int or finite float as `json.dumps` writes it; None for anything else."""
    if type(value) is int:
        return int.__repr__(value)
    if type(value) is float and value == value and value not in (_INFINITY, -_INFINITY):
        return float.__repr__(value)
    return None


@functools.cache
def _test_keys() -> tuple[str, ...]:
    """A row's keys in `TestRow`'s field order, as the codec writes them."""
    # Imported here, as in `document_jsons` (tests/cli/test_startup.py::test_lint_and_registry_import_no_planner).
    from ci_policy.plan.document import TestRow

    return tuple(f.name for f in fields(TestRow))


class _TestRows:
    """A stage's `tests` in the plan document, written by `document_jsons` with one template per
    row (a plan of 50,000 tests spent a quarter of its time on their dicts): the same text
    as the list of dicts the codec writes, or `_Unusual` for a value of another type."""

    def __init__(self, tests: Sequence[TestRow | Registration]) -> None:
        self.tests = tests

    def text(self, newline: str) -> str:
        if not self.tests:
            return "[]"
        inner = newline + "  "
        template = "{" + ",".join(f'{inner}  "{key}": %s' for key in _test_keys()) + inner + "}"
        rows: list[str] = []
        for r in self.tests:
            shown_est, line, marker = _number_text(r.est_time), r.line, r.marker
            if shown_est is None:
                raise _Unusual
            if not (type(r.file) is str and type(r.est_source) is str and (line is None or type(line) is int)
                    and (marker is None or type(marker) is str)):
                raise _Unusual
            rows.append(template % (_encode_str(r.file), shown_est, _encode_str(r.est_source),
                                    "null" if line is None else int.__repr__(line),
                                    "null" if marker is None else _encode_str(marker)))
        return "[" + inner + ("," + inner).join(rows) + newline + "]"


def invalid_json(invalid: Iterable[InvalidFile]) -> list[dict[str, Any]]:
    """`[{"file", "diagnostics": [...]}]`, each diagnostic as `lint --format json` writes it, and
    `"kept_stages"` for a partly read file (its other registrations are scheduled)."""
    return [{"file": f.file, "diagnostics": [d.as_dict() for d in f.diagnostics],
             **({"kept_stages": list(f.kept)} if f.kept else {})} for f in invalid]


def registry_json(registrations: Iterable[Registration], invalid: Iterable[InvalidFile] = (),
                  commands: Iterable[Stage] = ()) -> str:
    """`commands`: the stages with a command, listed under `commands` (the key is absent without any)."""
    invalid = list(invalid)
    listed_commands = [{"stage": s.name, "backend": s.backend, "command": list(s.command),
                        "working_directory": s.working_directory, "paths": list(s.paths), "est_time": s.est_time}
                       for s in commands]
    rows = [_registration_text(r) for r in registrations]
    if any(row is None for row in rows):  # a value of an unusual type: the general encoder
        return dumps({"schema": JSON_SCHEMA_VERSION,
                      "registrations": [r.as_dict() for r in registrations],
                      **({"commands": listed_commands} if listed_commands else {}),
                      "plan_complete": not invalid, "invalid": invalid_json(invalid)}, indent=2)
    shown_invalid = dumps(invalid_json(invalid), indent=2).replace("\n", "\n  ")
    shown_commands = ("" if not listed_commands else
                      ',\n  "commands": ' + dumps(listed_commands, indent=2).replace("\n", "\n  "))
    # One join of the rows and what is between them: the document is made once, not again
    # by each `+` after it (a registry of 20,000 files is 6 MiB of text; three copies of it
    # beside its rows were the command's peak RSS, issue 33).
    pieces: list[str] = ['{\n  "schema": ' + str(JSON_SCHEMA_VERSION) + ',\n  "registrations": ']
    if rows:
        pieces.append("[")
        for row in rows:
            pieces += ("\n    ", row, ",")  # type: ignore[arg-type]
        pieces[-1] = "\n  ]"
    else:
        pieces.append("[]")
    pieces += (shown_commands, ',\n  "plan_complete": ' + ("false" if invalid else "true") + ',\n  "invalid": ',
               shown_invalid, "\n}")
    return "".join(pieces)


# A registration's object in the registry's list: its keys two levels in.
_REGISTRATION = "{" + ",".join(f'\n      "{key}": %s' for key in (
    "file", "line", "backend", "suite", "est_time", "labels", "nightly", "disabled", "implicit", "marker")) + "\n    }"


def _registration_text(r: Registration) -> str | None:
    """`Registration.as_dict()` as `dumps(..., indent=2)` writes it inside the registry's list
    (written out here: a registry holds thousands), or None for a value of another type."""
    labels = r.labels
    if labels and not all(type(label) is str for label in labels):
        return None
    shown_labels = "[]" if not labels else (
        "[\n        " + ",\n        ".join(map(_encode_str, labels)) + "\n      ]")
    shown_est = _number_text(r.est_time)
    if shown_est is None:
        return None
    line, disabled, marker = r.line, r.disabled, r.marker
    if not (type(r.file) is str and type(r.backend) is str and type(r.suite) is str
            and (line is None or type(line) is int) and type(r.nightly) is bool and type(r.implicit) is bool
            and (disabled is None or type(disabled) is str) and (marker is None or type(marker) is str)):
        return None
    return _REGISTRATION % (_encode_str(r.file), "null" if line is None else int.__repr__(line),
                            _encode_str(r.backend), _encode_str(r.suite), shown_est, shown_labels,
                            "true" if r.nightly else "false", "null" if disabled is None else _encode_str(disabled),
                            "true" if r.implicit else "false", "null" if marker is None else _encode_str(marker))


_Replace = Mapping[tuple[type, str], Callable[[Any], Any]]


def _given_inputs(inputs: Mapping[str, Any] | None, *, whole: bool) -> dict[tuple[type, str], Callable[[Any], Any]]:
    """The caller's `inputs` mapping written as given (a per-stage plan's without `files`), not as read back."""
    if inputs is None:
        return {}
    # Imported here, as in `document_jsons` (tests/cli/test_startup.py::test_lint_and_registry_import_no_planner).
    from ci_policy.plan.document import PlanDocument

    given = dict(inputs) if whole else {key: value for key, value in inputs.items() if key != "files"}
    return {(PlanDocument, "inputs"): lambda _value: given}


def document_dict(doc: PlanDocument, inputs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The plan document as JSON data; `inputs`: the mapping its inputs were made from, written as given."""
    # Imported here, as in `document_jsons` (tests/cli/test_startup.py::test_lint_and_registry_import_no_planner).
    from ci_policy.read.codec import encode

    data: dict[str, Any] = encode(doc, _given_inputs(inputs, whole=True))
    return data


def document_jsons(doc: PlanDocument, stage_docs: Mapping[str, PlanDocument], *, whole: bool = True,
                   inputs: Mapping[str, Any] | None = None) -> tuple[str, dict[str, str]]:
    """The text of the plan document (with `whole`, else "") and of each per-stage plan, by name;
    `inputs`: the mapping the documents' inputs were made from, written as given."""
    # Imported here: of the commands writing JSON only a plan writes a plan document, and the
    # others (`lint`, `registry`, `list`, ...) create none of its classes
    # (tests/cli/test_startup.py::test_lint_and_registry_import_no_planner).
    from ci_policy.plan.document import StageDoc
    from ci_policy.read.codec import encode

    def texts(write: Callable[[Any], str], rows: _Replace) -> tuple[str, dict[str, str]]:
        return (write(encode(doc, {**rows, **_given_inputs(inputs, whole=True)})) if whole else "",
                {name: write(encode(stage_doc, {**rows, **_given_inputs(inputs, whole=False)}))
                 for name, stage_doc in stage_docs.items()})

    try:
        return texts(lambda value: _indented(value, "\n"), {(StageDoc, "tests"): _TestRows})
    except (_Unusual, RecursionError):
        return texts(lambda value: dumps(value, indent=2), {})


def explain_json(explanation: Explanation, plan: Plan) -> str:
    """`plan --explain FILE --format json`: the file's status and each of its stages."""
    e = explanation
    return dumps({
        "schema": JSON_SCHEMA_VERSION,
        "file": e.file,
        "event": plan.policy.event,
        "cadence": plan.policy.cadence,
        "trust": plan.policy.trust,
        "status": e.status,
        "summary": e.summary,
        "changed": e.changed,
        "stages": [{"stage": s.stage, "backend": s.backend, "line": s.line, "decision": s.decision,
                    "reasons": list(s.reasons), "selected": s.selected, "why": s.why, "est_time": s.est_time,
                    "est_source": s.est_source, "shard": s.shard, "shards": s.shards} for s in e.stages],
        "invalid_stages": list(e.invalid_stages),
        "diagnostics": [d.as_dict() for d in e.diagnostics],
    }, indent=2)


def shard_files_json(stage_plan: StagePlan, shard: Shard | None, invalid: Sequence[InvalidFile] = ()) -> str:
    """`ci-policy list --format json`: one stage shard's files (none when the stage is skipped), and
    the plan's invalid files."""
    return dumps({"schema": JSON_SCHEMA_VERSION, "stage": stage_plan.name, "decision": stage_plan.decision,
                       "reasons": list(stage_plan.reasons), "shard": None if shard is None else shard.index,
                       "files": [] if shard is None else list(shard.files),
                       **({"command": list(stage_plan.stage.command),
                           "working_directory": stage_plan.stage.working_directory}
                          if stage_plan.stage.command else {}),
                       "plan_complete": not invalid, "invalid": invalid_json(invalid)}, indent=2)


def file_run_json(plan: FilePlan) -> str:
    return dumps(plan.as_dict(), indent=2)


def tune_json(proposals: Iterable[Any], balances: Iterable[Any], **done: Any) -> str:
    """`ci-policy tune --format json`: the proposals, each stage's balance, and what was written."""

    def proposal(p: Any) -> dict[str, Any]:
        out = asdict(p)
        out["samples"] = list(p.samples)
        return out
    return dumps({"schema": JSON_SCHEMA_VERSION, "proposals": [proposal(p) for p in proposals],
                       "balance": [asdict(b) for b in balances], **done}, indent=2)


def comment_json(status: str, message: str, exit_code: int, requests: Iterable[Any] | None = None) -> str:
    """`ci-policy comment --format json`: the result; in a dry run, the requests not sent."""
    out: dict[str, Any] = {"schema": JSON_SCHEMA_VERSION, "status": status, "message": message,
                           "exit_code": exit_code}
    if requests is not None:
        out["requests"] = list(requests)
    return dumps(out, indent=2)


def diagnostics_json(errors: Iterable[Diagnostic]) -> str:
    """An error's document: `{"schema", "errors": [...], "warnings": [...]}`."""
    errors = list(errors)
    return dumps({"schema": JSON_SCHEMA_VERSION,
                       "errors": [e.as_dict() for e in errors if e.severity == "error"],
                       "warnings": [e.as_dict() for e in errors if e.severity == "warning"]}, indent=2)


def lint_json(report: LintReport) -> str:
    """`ci-policy lint --format json`: ok, every error and warning, and what was read."""
    snap = report.snapshot
    return dumps({
        "schema": JSON_SCHEMA_VERSION,
        "ok": report.ok,
        "errors": [e.as_dict() for e in report.errors],
        "warnings": [w.as_dict() for w in report.warnings],
        "suppressed": [d.as_dict() for d in report.suppressed],
        "files": len(snap.files) if snap else None,
        "registrations": len(snap.registrations) if snap else None,
    }, indent=2)


def outcome_json(outcome: Outcome, plan_complete: bool | None) -> str:
    """`ci-policy result --format json`: `{"schema", "ok", "plan_complete", "jobs", "failures", "summary",
    "awaiting_approval", "held_for_trust"}`."""
    return dumps({"schema": JSON_SCHEMA_VERSION, "ok": outcome.ok, "plan_complete": plan_complete,
                       "jobs": {job.name: job.result for job in outcome.jobs},
                       "failures": list(outcome.failures), "summary": outcome.summary,
                       "awaiting_approval": outcome.awaiting_approval,
                       "held_for_trust": dict(outcome.held_for_trust)}, indent=2)
