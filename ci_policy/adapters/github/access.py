"""The access policy of comment commands: `.github/ci-commands.json`, validated strictly.

- In: the JSON text, read from the trusted default-branch checkout (never from the PR),
  and the trusted label registry.
- Out: a frozen `AccessPolicy`: groups (repository permissions and user ids), per
  command, the group allowed to use it plus its settings, and the pipeline workflow
  (`"pipeline": {"workflow": "pr-test.yml"}`) whose pull_request runs the commands that
  start a run re-run (or, with no run for the head, dispatch).
  Both workflow files (the pipeline's and `commands.rerun_test.workflow`) are optional:
  `with_workflows(policy, pipeline, rerun_test)` fills in the ones the policy leaves out
  with the gateway's (by default the one caller file `CALLER_WORKFLOW`); the policy's own win.
  The document is declared once, as `PolicyDocument`'s dataclasses through `read.codec`
  (each entry read on its own so that every problem is reported at once);
  `write_access_policy(policy)`: the text that reads back as `policy`.
- `/ok-to-test` is not configured here: it needs write, maintain or admin permission
  (`APPROVERS`), whatever the groups say.
- Refused: duplicate keys, NaN/Infinity, unknown fields, wrong types, a group that does
  not exist, an `allowed_labels` entry that is neither `run-ci-<known label>` nor a
  workflow-only label, a pin pattern that is not a valid regex or is longer than
  `MAX_PIN_PATTERN` characters or repeats more than `MAX_PIN_REPEAT` times (`a{9999999999}`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_type_hints

from ci_policy.errors import InputError, InputErrors
from ci_policy.read import shapes, strictjson
from ci_policy.read.codec import decode_each, encode
from ci_policy.read.declare import DecodeError, KeyFault, document, spec
from ci_policy.read.labels import LabelRegistry
from ci_policy.read.names import CI_LABEL_PREFIX, WORKFLOW_ONLY_LABELS

PERMISSIONS = ("admin", "maintain", "write", "triage", "read")
COMMANDS = ("add_label", "clear_labels", "rerun_failed_ci", "rerun_test")
# Every command kind a gateway job may carry out: the configured ones and /ok-to-test.
KINDS = (*COMMANDS, "ok_to_test")
# Who may approve an outside contributor's head for CI: people who could push it themselves.
APPROVERS = ("admin", "maintain", "write")
WORKFLOW_FILE_RE = re.compile(r"[A-Za-z0-9_.-]+\.ya?ml")
PIN_NAME_RE = re.compile(r"ci-[a-z0-9][a-z0-9-]*")


@dataclass(frozen=True)
class Group:
    name: str
    repository_permissions: tuple[str, ...]
    user_ids: tuple[int, ...]

    def admits(self, permission: str, user_id: int) -> bool:
        return permission in self.repository_permissions or user_id in self.user_ids


@dataclass(frozen=True)
class CommandPolicy:
    group: str
    allowed_labels: tuple[str, ...] = ()
    workflow: str | None = None           # rerun_test: the workflow_dispatch workflow file
    ref: str | None = None                # rerun_test: branch to dispatch on (default branch if None)
    pins: tuple[tuple[str, str], ...] = ()   # rerun_test: PR-body pin name -> full-match regex


@dataclass(frozen=True)
class AccessPolicy:
    groups: tuple[Group, ...]
    commands: tuple[tuple[str, CommandPolicy], ...]
    pipeline_workflow: str | None = None  # the workflow_dispatch file of the PR pipeline's caller

    def command(self, kind: str) -> CommandPolicy | None:
        return dict(self.commands).get(kind)

    def group(self, name: str) -> Group:
        return next(g for g in self.groups if g.name == name)

    def admits_anywhere(self, permission: str, user_id: int) -> bool:
        """May this commenter use some command (so a malformed one deserves a reply)?"""
        return permission in APPROVERS or any(
            self.group(policy.group).admits(permission, user_id) for _kind, policy in self.commands)


# A pin pattern is matched against one line of a PR body: a short value such as a PR
# number or a tag. Bounding it keeps `re` from overflowing (`a{9999999999}`) or compiling
# a huge program from a trusted but mistaken policy.
MAX_PIN_PATTERN = 256
MAX_PIN_REPEAT = 1000
_REPEAT_RE = re.compile(r"\{(\d*)(?:,(\d*))?\}")


def pin_pattern_problem(pattern: str) -> str | None:
    """Why `pattern` is not an acceptable pin regex, or None."""
    if len(pattern) > MAX_PIN_PATTERN:
        return f"the pattern has {len(pattern)} characters, more than {MAX_PIN_PATTERN}"
    for m in _REPEAT_RE.finditer(pattern):
        for count in m.groups():
            # Compared as text first: int() of a long digit string is itself slow.
            if count and (len(count) > len(str(MAX_PIN_REPEAT)) or int(count) > MAX_PIN_REPEAT):
                return f"repetition count {count[:20]} in {m.group(0)[:40]!r} is larger than {MAX_PIN_REPEAT}"
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as exc:
        return f"invalid regex: {exc}"
    return None


Permission = Literal["admin", "maintain", "write", "triage", "read"]
BRANCH_RE = re.compile(r"[A-Za-z0-9_./-]+")
MAX_USER_ID = 2**63 - 1


def _strings_problem(value: Any, *, non_empty: bool = False) -> str | None:
    if not shapes.is_strings(value):
        return f"expected an array of strings, got {shapes.a_json_type(value)}"
    if non_empty and not value:
        return "must not be empty"
    return None if shapes.is_distinct(value) else "lists an entry twice"


def _permissions_problem(value: Any) -> str | None:
    problem = _strings_problem(value)
    unknown = [p for p in value if p not in PERMISSIONS] if problem is None else []
    if unknown:
        return f"unknown permission {unknown[0]!r}; expected some of {', '.join(PERMISSIONS)}"
    return problem


def _user_ids_problem(value: Any) -> str | None:
    if not isinstance(value, list) or not all(shapes.is_integer(i, minimum=1) for i in value):
        return f"expected an array of positive integer user ids, got {shapes.a_json_type(value)}"
    return None if shapes.is_distinct(value) else "lists a user id twice"


def _workflow_problem(like: str) -> Callable[[Any], str | None]:
    def problem(value: Any) -> str | None:
        if isinstance(value, str) and WORKFLOW_FILE_RE.fullmatch(value):
            return None
        return f"{value!r} is not a workflow file name like {like}"
    return problem


def _ref_problem(value: Any) -> str | None:
    if value is None or (isinstance(value, str) and BRANCH_RE.fullmatch(value)):
        return None
    return f"{value!r} is not a branch name"


def _pins_problem(value: Any) -> str | None:
    return None if isinstance(value, dict) else \
        f"expected an object of pin name -> regex, got {shapes.a_json_type(value)}"


def _pin_name_problem(name: str) -> str | None:
    if PIN_NAME_RE.fullmatch(name) and name != "ci-image-tag":
        return None
    return "pin names look like ci-<name> (ci-image-tag is built in)"


# The document as written: each field's own check keeps the wording the policy's authors see.
@document
class GroupEntry:
    repository_permissions: tuple[Permission, ...] = spec(default=(), unique=True, check=_permissions_problem)
    user_ids: tuple[int, ...] = spec(default=(), minimum=1, maximum=MAX_USER_ID, unique=True,
                                     check=_user_ids_problem)


@document
class GroupOnlyEntry:
    group: str


@document
class AddLabelEntry:
    group: str
    allowed_labels: tuple[str, ...] = spec(unique=True, min_items=1,
                                           check=lambda v: _strings_problem(v, non_empty=True))


@document
class RerunTestEntry:
    group: str
    workflow: str | None = spec(default=None, omit_none=True, pattern=WORKFLOW_FILE_RE.pattern,
                                check=_workflow_problem("rerun-test.yml"))
    ref: str | None = spec(default=None, omit_none=True, pattern=BRANCH_RE.pattern, check=_ref_problem)
    # PR-body pin name -> full-match regex, each checked by `pin_pattern_problem` when read
    pins: Mapping[str, str] | None = spec(default=None, omit_none=True, key_check=_pin_name_problem,
                                          check=_pins_problem)


@document
class CommandsEntry:
    add_label: AddLabelEntry | None = spec(default=None, omit_none=True)
    clear_labels: GroupOnlyEntry | None = spec(default=None, omit_none=True)
    rerun_failed_ci: GroupOnlyEntry | None = spec(default=None, omit_none=True)
    rerun_test: RerunTestEntry | None = spec(default=None, omit_none=True)


@document
class PipelineEntry:
    workflow: str = spec(pattern=WORKFLOW_FILE_RE.pattern, check=_workflow_problem("pr-test.yml"))


def _version_problem(value: Any) -> str | None:
    return None if shapes.is_integer(value) and value == 1 else f"unsupported version {value!r}; expected 1"


def _groups_problem(value: Any) -> str | None:
    return None if isinstance(value, dict) and value else "expected a non-empty object of groups"


@document
class PolicyDocument:
    version: Literal[1] = spec(check=_version_problem)
    groups: Mapping[str, GroupEntry] = spec(check=_groups_problem)
    commands: CommandsEntry
    pipeline: PipelineEntry | None = spec(default=None, omit_none=True)


_ENTRIES: dict[str, type] = {f.name: next(a for a in get_args(hint) if a is not type(None))
                             for f in dataclasses.fields(CommandsEntry)
                             for hint in [get_type_hints(CommandsEntry)[f.name]]}
assert tuple(_ENTRIES) == COMMANDS


def policy_document(policy: AccessPolicy) -> PolicyDocument:
    """The document `parse_access_policy` reads back as `policy`."""
    entries: dict[str, Any] = {}
    for kind, command in policy.commands:
        if kind == "add_label":
            entries[kind] = AddLabelEntry(command.group, command.allowed_labels)
        elif kind == "rerun_test":
            entries[kind] = RerunTestEntry(command.group, command.workflow, command.ref,
                                           dict(command.pins) if command.pins else None)
        else:
            entries[kind] = GroupOnlyEntry(command.group)
    return PolicyDocument(
        version=1, groups={g.name: GroupEntry(g.repository_permissions, g.user_ids) for g in policy.groups},  # type: ignore[arg-type]
        commands=CommandsEntry(**entries),
        pipeline=None if policy.pipeline_workflow is None else PipelineEntry(policy.pipeline_workflow))


def write_access_policy(policy: AccessPolicy) -> str:
    """`policy` as the JSON text of `.github/ci-commands.json`."""
    return json.dumps(encode(policy_document(policy)), indent=2) + "\n"


class _Problems:
    def __init__(self, path: str) -> None:
        self.path = path
        self.errors: list[InputError] = []

    def fail(self, where: str, message: str, hint: str | None = None) -> None:
        self.errors.append(InputError(f"{where}: {message}", path=self.path, hint=hint))

    def add(self, prefix: str, errors: list[DecodeError]) -> None:
        for e in errors:
            self.fail(".".join(part for part in (prefix, e.where) if part) or prefix, e.message)


def parse_access_policy(text: str, labels: LabelRegistry, path: str = ".github/ci-commands.json") -> AccessPolicy:
    try:
        raw = strictjson.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path} is not valid strict JSON: {exc}", path=path,
                          hint="fix the JSON; duplicate keys, NaN and Infinity are refused") from None
    c = _Problems(path)
    top, errors = decode_each(PolicyDocument, raw, skip=("groups", "commands", "pipeline"))
    faults = [e for e in errors if isinstance(e, KeyFault) or not e.where]
    if faults:
        c.add("(top level)", faults)
        raise InputErrors(c.errors)
    c.add("", errors)
    groups = []
    for name, entry in top.get("groups", {}).items():
        where = f"groups.{name}"
        fields, errors = decode_each(GroupEntry, entry)
        c.add(where, errors)
        if type(entry) is not dict:
            continue
        perms, ids = fields.get("repository_permissions", ()), fields.get("user_ids", ())
        if not perms and not ids and not errors:
            c.fail(where, "admits nobody: give repository_permissions or user_ids")
        groups.append(Group(name, perms, ids))
    group_names = {g.name for g in groups}
    raw_commands = top.get("commands")
    _, errors = decode_each(CommandsEntry, raw_commands, skip=COMMANDS)
    for e in errors:
        c.fail(f"commands.{e.where}" if e.where else "commands",
               f"unknown command; allowed: {', '.join(COMMANDS)}" if isinstance(e, KeyFault) else e.message)
    commands = []
    for kind, entry in raw_commands.items() if isinstance(raw_commands, dict) else ():
        if kind not in _ENTRIES:
            continue
        where = f"commands.{kind}"
        fields, errors = decode_each(_ENTRIES[kind], entry, skip=("group", "pins"))
        faults = [e for e in errors if isinstance(e, KeyFault) or not e.where]
        c.add(where, faults)
        if type(entry) is not dict or any(isinstance(e, KeyFault) and e.missing for e in faults):
            continue
        group = fields["group"]
        if not isinstance(group, str) or group not in group_names:
            c.fail(f"{where}.group", f"{group!r} is not a defined group ({', '.join(sorted(group_names))})")
            continue
        c.add(where, [e for e in errors if e not in faults])
        policy = CommandPolicy(group=group)
        if kind == "add_label":
            allowed = fields.get("allowed_labels", ())
            for label in allowed:
                name = label[len(CI_LABEL_PREFIX):] if label.startswith(CI_LABEL_PREFIX) else None
                if label not in WORKFLOW_ONLY_LABELS and (name is None or name not in labels):
                    c.fail(f"{where}.allowed_labels", f"{label!r} is neither run-ci-<known label> nor a "
                           f"workflow-only label ({', '.join(WORKFLOW_ONLY_LABELS)})",
                           hint=f"known labels are in {labels.path}")
            policy = CommandPolicy(group=group, allowed_labels=allowed)
        elif kind == "rerun_test":
            policy = CommandPolicy(group=group, workflow=fields.get("workflow"), ref=fields.get("ref"),
                                   pins=_pins(fields.get("pins") or {}, f"{where}.pins", c))
        commands.append((kind, policy))
    pipeline_workflow = None
    if "pipeline" in top:
        fields, errors = decode_each(PipelineEntry, top["pipeline"])
        c.add("pipeline", errors)
        pipeline_workflow = fields.get("workflow")
    if c.errors:
        raise InputErrors(c.errors)
    return AccessPolicy(groups=tuple(groups), commands=tuple(commands), pipeline_workflow=pipeline_workflow)


def with_workflows(policy: AccessPolicy, pipeline: str, rerun_test: str) -> AccessPolicy:
    """`policy` with the gateway's workflow files where it names none; the policy's own stand."""
    commands = tuple((kind, dataclasses.replace(command, workflow=command.workflow or rerun_test)
                      if kind == "rerun_test" else command) for kind, command in policy.commands)
    return dataclasses.replace(policy, commands=commands, pipeline_workflow=policy.pipeline_workflow or pipeline)


def _pins(raw: dict[str, Any], where: str, c: _Problems) -> tuple[tuple[str, str], ...]:
    """Each pin read on its own, so that every faulty one is reported (a pattern's with its bounds)."""
    pins = []
    for name, pattern in raw.items():
        problem = _pin_name_problem(name)
        if problem:
            c.fail(f"{where}.{name}", problem)
            continue
        problem = pin_pattern_problem(pattern) if isinstance(pattern, str) else None
        if problem:
            c.fail(f"{where}.{name}", problem,
                   hint=f"a pin pattern has at most {MAX_PIN_PATTERN} characters and repetition "
                   f"counts of at most {MAX_PIN_REPEAT}, e.g. [0-9]{{1,7}}")
            continue
        if not isinstance(pattern, str):
            c.fail(f"{where}.{name}", f"expected a regex string, got {shapes.a_json_type(pattern)}")
            continue
        pins.append((name, pattern))
    return tuple(pins)
