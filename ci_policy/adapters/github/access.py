"""The access policy of comment commands: `.github/ci-commands.json`, validated strictly.

- In: the JSON text, read from the trusted default-branch checkout (never from the PR),
  and the trusted label registry.
- Out: a frozen `AccessPolicy`: groups (repository permissions and user ids), per
  command, the group allowed to use it plus its settings, and the pipeline workflow
  (`"pipeline": {"workflow": "pr-test.yml"}`) the commands that start a run dispatch.
- `/ok-to-test` is not configured here: it needs write, maintain or admin permission
  (`APPROVERS`), whatever the groups say.
- Refused: duplicate keys, NaN/Infinity, unknown fields, wrong types, a group that does
  not exist, an `allowed_labels` entry that is neither `run-ci-<known label>` nor a
  workflow-only label, a pin pattern that is not a valid regex or is longer than
  `MAX_PIN_PATTERN` characters or repeats more than `MAX_PIN_REPEAT` times (`a{9999999999}`), `rerun_failed_ci`
  without a pipeline workflow to dispatch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ci_policy.errors import InputError, InputErrors
from ci_policy.read import shapes, strictjson
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


class _Checker:
    def __init__(self, path: str) -> None:
        self.path = path
        self.errors: list[InputError] = []

    def fail(self, where: str, message: str, hint: str | None = None) -> None:
        self.errors.append(InputError(f"{where}: {message}", path=self.path, hint=hint))

    def obj(self, value: Any, where: str, required: tuple = (), optional: tuple = ()) -> dict | None:
        if not isinstance(value, dict):
            self.fail(where, f"expected an object, got {shapes.a_json_type(value)}")
            return None
        problems = shapes.fields(value, required, optional)
        for key in problems.unknown:
            self.fail(f"{where}.{key}", f"unknown field; allowed: {', '.join(required + optional)}")
        for key in problems.missing:
            self.fail(f"{where}.{key}", "required field is missing")
        return value

    def strings(self, value: Any, where: str, *, non_empty: bool = False) -> tuple[str, ...] | None:
        if not shapes.is_strings(value):
            self.fail(where, f"expected an array of strings, got {shapes.a_json_type(value)}")
            return None
        if non_empty and not value:
            self.fail(where, "must not be empty")
            return None
        if not shapes.is_distinct(value):
            self.fail(where, "lists an entry twice")
            return None
        return tuple(value)


def parse_access_policy(text: str, labels: LabelRegistry, path: str = ".github/ci-commands.json") -> AccessPolicy:
    try:
        raw = strictjson.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path} is not valid strict JSON: {exc}", path=path,
                          hint="fix the JSON; duplicate keys, NaN and Infinity are refused") from None
    c = _Checker(path)
    top = c.obj(raw, "(top level)", required=("version", "groups", "commands"), optional=("pipeline",))
    if top is None or c.errors:
        raise InputErrors(c.errors)
    if not shapes.is_integer(top["version"]) or top["version"] != 1:  # not True, not 1.0
        c.fail("version", f"unsupported version {top['version']!r}; expected 1")
    groups = []
    if isinstance(top["groups"], dict) and top["groups"]:
        for name, g in top["groups"].items():
            where = f"groups.{name}"
            fields = c.obj(g, where, optional=("repository_permissions", "user_ids"))
            if fields is None:
                continue
            before = len(c.errors)
            perms = c.strings(fields.get("repository_permissions", []), f"{where}.repository_permissions") or ()
            for p in perms:
                if p not in PERMISSIONS:
                    c.fail(f"{where}.repository_permissions", f"unknown permission {p!r}; "
                           f"expected some of {', '.join(PERMISSIONS)}")
            ids = fields.get("user_ids", [])
            if not isinstance(ids, list) or not all(shapes.is_integer(i, minimum=1) for i in ids):
                c.fail(f"{where}.user_ids",
                       f"expected an array of positive integer user ids, got {shapes.a_json_type(ids)}")
                ids = []
            elif not shapes.is_distinct(ids):
                c.fail(f"{where}.user_ids", "lists a user id twice")
            if not perms and not ids and len(c.errors) == before:
                c.fail(where, "admits nobody: give repository_permissions or user_ids")
            groups.append(Group(name, perms, tuple(ids)))
    else:
        c.fail("groups", "expected a non-empty object of groups")
    group_names = {g.name for g in groups}
    commands = []
    spec = {
        "add_label": (("group", "allowed_labels"), ()),
        "clear_labels": (("group",), ()),
        "rerun_failed_ci": (("group",), ()),
        "rerun_test": (("group", "workflow"), ("ref", "pins")),
    }
    if isinstance(top["commands"], dict):
        for kind, cp in top["commands"].items():
            where = f"commands.{kind}"
            if kind not in spec:
                c.fail(where, f"unknown command; allowed: {', '.join(COMMANDS)}")
                continue
            required, optional = spec[kind]
            fields = c.obj(cp, where, required=required, optional=optional)
            if fields is None or any(k not in fields for k in required):
                continue
            group = fields["group"]
            if not isinstance(group, str) or group not in group_names:
                c.fail(f"{where}.group", f"{group!r} is not a defined group ({', '.join(sorted(group_names))})")
                continue
            policy = CommandPolicy(group=group)
            if kind == "add_label":
                allowed = c.strings(fields["allowed_labels"], f"{where}.allowed_labels", non_empty=True) or ()
                for label in allowed:
                    name = label[len(CI_LABEL_PREFIX):] if label.startswith(CI_LABEL_PREFIX) else None
                    if label not in WORKFLOW_ONLY_LABELS and (name is None or name not in labels):
                        c.fail(f"{where}.allowed_labels", f"{label!r} is neither run-ci-<known label> nor a "
                               f"workflow-only label ({', '.join(WORKFLOW_ONLY_LABELS)})",
                               hint=f"known labels are in {labels.path}")
                policy = CommandPolicy(group=group, allowed_labels=allowed)
            elif kind == "rerun_failed_ci" and "pipeline" not in top:
                c.fail(where, "starts a fresh pipeline run, but no pipeline workflow is configured",
                       hint='add "pipeline": {"workflow": "<the PR pipeline caller, e.g. pr-test.yml>"}')
            elif kind == "rerun_test":
                wf = fields["workflow"]
                if not isinstance(wf, str) or not WORKFLOW_FILE_RE.fullmatch(wf):
                    c.fail(f"{where}.workflow", f"{wf!r} is not a workflow file name like rerun-test.yml")
                ref = fields.get("ref")
                if ref is not None and (not isinstance(ref, str) or not re.fullmatch(r"[A-Za-z0-9_./-]+", ref)):
                    c.fail(f"{where}.ref", f"{ref!r} is not a branch name")
                pins = []
                raw_pins = fields.get("pins", {})
                if not isinstance(raw_pins, dict):
                    c.fail(f"{where}.pins",
                           f"expected an object of pin name -> regex, got {shapes.a_json_type(raw_pins)}")
                    raw_pins = {}
                for name, pattern in raw_pins.items():
                    if not PIN_NAME_RE.fullmatch(name) or name == "ci-image-tag":
                        c.fail(f"{where}.pins.{name}", "pin names look like ci-<name> (ci-image-tag is built in)")
                        continue
                    problem = pin_pattern_problem(pattern) if isinstance(pattern, str) else None
                    if problem:
                        c.fail(f"{where}.pins.{name}", problem,
                               hint=f"a pin pattern has at most {MAX_PIN_PATTERN} characters and repetition "
                               f"counts of at most {MAX_PIN_REPEAT}, e.g. [0-9]{{1,7}}")
                        continue
                    if not isinstance(pattern, str):
                        c.fail(f"{where}.pins.{name}", f"expected a regex string, got {shapes.a_json_type(pattern)}")
                        continue
                    pins.append((name, pattern))
                policy = CommandPolicy(group=group, workflow=wf if isinstance(wf, str) else None,
                                       ref=ref, pins=tuple(pins))
            commands.append((kind, policy))
    else:
        c.fail("commands", f"expected an object, got {shapes.a_json_type(top['commands'])}")
    pipeline_workflow = None
    if "pipeline" in top:
        pipeline = c.obj(top["pipeline"], "pipeline", required=("workflow",))
        wf = pipeline.get("workflow") if pipeline is not None else None
        if pipeline is not None and "workflow" in pipeline:
            if isinstance(wf, str) and WORKFLOW_FILE_RE.fullmatch(wf):
                pipeline_workflow = wf
            else:
                c.fail("pipeline.workflow", f"{wf!r} is not a workflow file name like pr-test.yml")
    if c.errors:
        raise InputErrors(c.errors)
    return AccessPolicy(groups=tuple(groups), commands=tuple(commands), pipeline_workflow=pipeline_workflow)
