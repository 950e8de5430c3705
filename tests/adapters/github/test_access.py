"""The access policy of comment commands (ci_policy/adapters/github/access.py), validated strictly."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_policy.adapters.github.access import (
    COMMANDS,
    PERMISSIONS,
    AccessPolicy,
    CommandPolicy,
    Group,
    parse_access_policy,
    with_workflows,
    write_access_policy,
)
from ci_policy.errors import InputError, InputErrors
from ci_policy.read.labels import load_labels

EXAMPLE_REPO = Path(__file__).resolve().parents[3] / "examples" / "gpu-repo"
LABELS = load_labels(EXAMPLE_REPO)
PATH = ".github/ci-commands.json"

VALID = {
    "version": 1,
    "groups": {
        "maintainers": {"repository_permissions": ["admin", "maintain", "write"]},
        "helpers": {"repository_permissions": ["triage"], "user_ids": [40000001, 7]},
    },
    "pipeline": {"workflow": "pr-test.yaml"},
    "commands": {
        "add_label": {"group": "helpers", "allowed_labels": ["run-ci-megatron", "nightly", "bypass-fastfail"]},
        "clear_labels": {"group": "helpers"},
        "rerun_failed_ci": {"group": "maintainers"},
        "rerun_test": {"group": "maintainers", "workflow": "rerun-test.yml", "ref": "release/v1.2",
                       "pins": {"ci-sglang-pr": "[0-9]{1,7}"}},
    },
}


def messages(text: str) -> list[str]:
    with pytest.raises((InputError, InputErrors)) as info:
        parse_access_policy(text, LABELS)
    errors = info.value.errors if isinstance(info.value, InputErrors) else (info.value,)
    assert all(e.path == PATH for e in errors)
    return [e.message for e in errors]


def edited(change) -> str:
    data = copy.deepcopy(VALID)
    change(data)
    return json.dumps(data)


def test_the_example_policy_parses_to_its_groups_and_commands():
    text = (EXAMPLE_REPO / ".github" / "ci-commands.json").read_text()
    assert parse_access_policy(text, LABELS) == AccessPolicy(
        groups=(Group("maintainers", ("admin", "maintain", "write"), ()),
                Group("ci-helpers", ("admin", "maintain", "write", "triage"), (40000001,))),
        commands=(
            ("add_label", CommandPolicy(group="ci-helpers", allowed_labels=(
                "run-ci-megatron", "run-ci-fsdp", "run-ci-sglang", "run-ci-session", "run-ci-rocm",
                "run-ci-long", "nightly", "bypass-fastfail"))),
            ("clear_labels", CommandPolicy(group="ci-helpers")),
            ("rerun_failed_ci", CommandPolicy(group="maintainers")),
            ("rerun_test", CommandPolicy(group="maintainers", workflow="ci-policy.yml", ref=None,
                                         pins=(("ci-sglang-pr", "[0-9]{1,7}"), ("ci-megatron-pr", "[0-9]{1,7}")))),
        ),
        pipeline_workflow="ci-policy.yml")


def test_a_full_policy_keeps_every_setting_and_admits_by_role_or_user_id():
    policy = parse_access_policy(json.dumps(VALID), LABELS)
    assert policy.command("rerun_test") == CommandPolicy(group="maintainers", workflow="rerun-test.yml",
                                                         ref="release/v1.2", pins=(("ci-sglang-pr", "[0-9]{1,7}"),))
    assert policy.command("rerun_failed_ci") == CommandPolicy(group="maintainers")
    assert policy.pipeline_workflow == "pr-test.yaml"
    assert policy.command("bypass_fastfail") is None
    helpers = policy.group("helpers")
    assert helpers.admits("triage", 1) and helpers.admits("read", 40000001) and helpers.admits("none", 7)
    assert not helpers.admits("read", 1) and not helpers.admits("write", 1)
    assert policy.group("maintainers").admits("maintain", 1) and not policy.group("maintainers").admits("triage", 1)


def test_a_policy_need_not_enable_every_command():
    policy = parse_access_policy(edited(lambda d: d.update(commands={"clear_labels": {"group": "helpers"}})),
                                 LABELS)
    assert policy.commands == (("clear_labels", CommandPolicy(group="helpers")),)


def test_the_workflow_files_are_optional_and_the_gateways_fill_in_only_what_the_policy_leaves_out():
    """Without them the gateway dispatches its own (`--pipeline-workflow`, `--rerun-test-workflow`,
    by default the one caller file); rerun_failed_ci needs no pipeline named here any more."""
    data = json.loads(json.dumps(VALID))
    del data["pipeline"], data["commands"]["rerun_test"]["workflow"]
    bare = parse_access_policy(json.dumps(data), LABELS)
    assert (bare.pipeline_workflow, bare.command("rerun_test").workflow) == (None, None)
    assert bare.command("rerun_failed_ci") == CommandPolicy(group="maintainers")
    filled = with_workflows(bare, "ci-policy.yml", "ci-policy.yml")
    assert (filled.pipeline_workflow, filled.command("rerun_test").workflow) == ("ci-policy.yml", "ci-policy.yml")
    assert filled.command("rerun_test") == CommandPolicy(group="maintainers", workflow="ci-policy.yml",
                                                         ref="release/v1.2", pins=(("ci-sglang-pr", "[0-9]{1,7}"),))
    kept = with_workflows(parse_access_policy(json.dumps(VALID), LABELS), "ci-policy.yml", "ci-policy.yml")
    assert (kept.pipeline_workflow, kept.command("rerun_test").workflow) == ("pr-test.yaml", "rerun-test.yml")
    assert write_access_policy(bare) == write_access_policy(parse_access_policy(write_access_policy(bare), LABELS))
    assert "workflow" not in json.loads(write_access_policy(bare))["commands"]["rerun_test"]



@pytest.mark.parametrize("text, message", [
    ("", "is not valid strict JSON: Expecting value: line 1 column 1 (char 0)"),
    ('{"version": 1,}', "is not valid strict JSON: Expecting property name enclosed in double quotes: "
                        "line 1 column 15 (char 14)"),
    ('{"version": 1, "version": 1, "groups": {}, "commands": {}}', "is not valid strict JSON: duplicate key 'version'"),
    ('{"version": 1, "groups": {"g": {"user_ids": [1], "user_ids": [2]}}, "commands": {}}',
     "is not valid strict JSON: duplicate key 'user_ids'"),
    ('{"version": NaN, "groups": {}, "commands": {}}', "is not valid strict JSON: NaN is not allowed"),
    ('{"version": Infinity, "groups": {}, "commands": {}}', "is not valid strict JSON: Infinity is not allowed"),
    ('{"version": -Infinity, "groups": {}, "commands": {}}', "is not valid strict JSON: -Infinity is not allowed"),
    ("[" * 100000 + "]" * 100000, "is not valid strict JSON: maximum recursion depth exceeded while decoding "
                                  "a JSON array from a unicode string"),
])
def test_text_that_is_not_strict_json_is_refused(text, message):
    with pytest.raises(InputError) as info:
        parse_access_policy(text, LABELS)
    assert info.value.message == f"{PATH} {message}"
    assert info.value.hint == "fix the JSON; duplicate keys, NaN and Infinity are refused"


@pytest.mark.parametrize("data, expected", [
    ([], ["(top level): expected an object, got an array"]),
    ("policy", ["(top level): expected an object, got a string"]),
    ({}, ["(top level).commands: required field is missing", "(top level).groups: required field is missing",
          "(top level).version: required field is missing"]),
    ({**VALID, "extra": 1}, ["(top level).extra: unknown field; allowed: version, groups, commands, pipeline"]),
    ({**VALID, "version": 2}, ["version: unsupported version 2; expected 1"]),
    ({**VALID, "version": "1"}, ["version: unsupported version '1'; expected 1"]),
    ({**VALID, "version": True}, ["version: unsupported version True; expected 1"]),
    ({**VALID, "version": 1.0}, ["version: unsupported version 1.0; expected 1"]),
    ({**VALID, "version": None}, ["version: unsupported version None; expected 1"]),
])
def test_the_top_level_is_checked(data, expected):
    assert messages(json.dumps(data)) == expected


@pytest.mark.parametrize("groups, expected", [
    ({}, ["groups: expected a non-empty object of groups"]),
    ([], ["groups: expected a non-empty object of groups"]),
    ({"g": "write"}, ["groups.g: expected an object, got a string"]),
    ({"g": {"repository_permissions": ["write"], "admins": [1]}},
     ["groups.g.admins: unknown field; allowed: repository_permissions, user_ids"]),
    ({"g": {"repository_permissions": "write", "user_ids": [1]}},
     ["groups.g.repository_permissions: expected an array of strings, got a string"]),
    ({"g": {"repository_permissions": ["write", 3]}},
     ["groups.g.repository_permissions: expected an array of strings, got an array"]),
    ({"g": {"repository_permissions": ["owner"]}},
     ["groups.g.repository_permissions: unknown permission 'owner'; expected some of admin, maintain, "
      "write, triage, read"]),
    ({"g": {"repository_permissions": ["Write"]}},
     ["groups.g.repository_permissions: unknown permission 'Write'; expected some of admin, maintain, "
      "write, triage, read"]),
    ({"g": {"repository_permissions": ["write", "write"]}},
     ["groups.g.repository_permissions: lists an entry twice"]),
    ({"g": {"user_ids": [0]}}, ["groups.g.user_ids: expected an array of positive integer user ids, got an array"]),
    ({"g": {"user_ids": [7, 7]}}, ["groups.g.user_ids: lists a user id twice"]),
    ({"g": {"repository_permissions": ["read"], "user_ids": [-5]}},
     ["groups.g.user_ids: expected an array of positive integer user ids, got an array"]),
    ({"g": {"repository_permissions": ["read"], "user_ids": ["40000001"]}},
     ["groups.g.user_ids: expected an array of positive integer user ids, got an array"]),
    ({"g": {"repository_permissions": ["read"], "user_ids": [True]}},
     ["groups.g.user_ids: expected an array of positive integer user ids, got an array"]),
    ({"g": {"repository_permissions": ["read"], "user_ids": [1.5]}},
     ["groups.g.user_ids: expected an array of positive integer user ids, got an array"]),
    ({"g": {"repository_permissions": ["read"], "user_ids": 40000001}},
     ["groups.g.user_ids: expected an array of positive integer user ids, got a number"]),
    ({"g": {}}, ["groups.g: admits nobody: give repository_permissions or user_ids"]),
    ({"g": {"repository_permissions": [], "user_ids": []}},
     ["groups.g: admits nobody: give repository_permissions or user_ids"]),
])
def test_groups_are_checked(groups, expected):
    data = {"version": 1, "groups": groups, "commands": {}}
    assert messages(json.dumps(data)) == sorted(expected)


def _set(path: tuple, value):
    def change(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return change


_DELETE = object()
C = "commands"


@pytest.mark.parametrize("path, value, expected", [
    ((C,), [], ["commands: expected an object, got an array"]),
    ((C, "run_ci"), {"group": "helpers"},
     ["commands.run_ci: unknown command; allowed: add_label, clear_labels, rerun_failed_ci, rerun_test"]),
    ((C, "bypass_fastfail"), {"group": "helpers"},
     ["commands.bypass_fastfail: unknown command; allowed: add_label, clear_labels, rerun_failed_ci, rerun_test"]),
    ((C, "clear_labels"), "helpers", ["commands.clear_labels: expected an object, got a string"]),
    ((C, "clear_labels"), {}, ["commands.clear_labels.group: required field is missing"]),
    ((C, "clear_labels", "workflows"), ["pr-test.yml"],
     ["commands.clear_labels.workflows: unknown field; allowed: group"]),
    ((C, "clear_labels", "group"), "admins",
     ["commands.clear_labels.group: 'admins' is not a defined group (helpers, maintainers)"]),
    ((C, "clear_labels", "group"), ["helpers"],
     ["commands.clear_labels.group: ['helpers'] is not a defined group (helpers, maintainers)"]),
    ((C, "add_label", "allowed_labels"), _DELETE, ["commands.add_label.allowed_labels: required field is missing"]),
    ((C, "add_label", "ref"), "main",
     ["commands.add_label.ref: unknown field; allowed: group, allowed_labels"]),
    ((C, "add_label", "allowed_labels"), [], ["commands.add_label.allowed_labels: must not be empty"]),
    ((C, "add_label", "allowed_labels"), "run-ci-megatron",
     ["commands.add_label.allowed_labels: expected an array of strings, got a string"]),
    ((C, "add_label", "allowed_labels"), ["run-ci-megatron", "run-ci-megatron"],
     ["commands.add_label.allowed_labels: lists an entry twice"]),
    ((C, "add_label", "allowed_labels"), ["run-ci-all"],
     ["commands.add_label.allowed_labels: 'run-ci-all' is neither run-ci-<known label> nor a workflow-only "
      "label (nightly, bypass-fastfail)"]),
    ((C, "add_label", "allowed_labels"), ["megatron", "run-ci-", "run-ci-Megatron", "documentation"],
     [f"commands.add_label.allowed_labels: {label!r} is neither run-ci-<known label> nor a workflow-only "
      "label (nightly, bypass-fastfail)" for label in ("megatron", "run-ci-", "run-ci-Megatron", "documentation")]),
    # The command re-runs the PR pipeline's own run for the head: it takes no workflow of its own.
    ((C, "rerun_failed_ci", "workflows"), ["pr-test.yml"],
     ["commands.rerun_failed_ci.workflows: unknown field; allowed: group"]),
    (("pipeline",), "pr-test.yml", ["pipeline: expected an object, got a string"]),
    (("pipeline", "workflow"), _DELETE, ["pipeline.workflow: required field is missing"]),
    (("pipeline", "ref"), "main", ["pipeline.ref: unknown field; allowed: workflow"]),
    (("pipeline", "workflow"), "../evil.yml", ["pipeline.workflow: '../evil.yml' is not a workflow file name like "
                                               "pr-test.yml"]),
    ((C, "rerun_test", "workflow"), "rerun test.yml",
     ["commands.rerun_test.workflow: 'rerun test.yml' is not a workflow file name like rerun-test.yml"]),
    ((C, "rerun_test", "workflow"), 5, ["commands.rerun_test.workflow: 5 is not a workflow file name like "
                                        "rerun-test.yml"]),
    ((C, "rerun_test", "workflows"), ["rerun-test.yml"],
     ["commands.rerun_test.workflows: unknown field; allowed: group, workflow, ref, pins"]),
    ((C, "rerun_test", "ref"), "main; rm -rf /", ["commands.rerun_test.ref: 'main; rm -rf /' is not a branch name"]),
    ((C, "rerun_test", "ref"), 1, ["commands.rerun_test.ref: 1 is not a branch name"]),
    ((C, "rerun_test", "pins"), ["ci-sglang-pr"],
     ["commands.rerun_test.pins: expected an object of pin name -> regex, got an array"]),
    ((C, "rerun_test", "pins"), {"sglang-pr": "[0-9]+"},
     ["commands.rerun_test.pins.sglang-pr: pin names look like ci-<name> (ci-image-tag is built in)"]),
    ((C, "rerun_test", "pins"), {"ci-image-tag": ".*"},
     ["commands.rerun_test.pins.ci-image-tag: pin names look like ci-<name> (ci-image-tag is built in)"]),
    ((C, "rerun_test", "pins"), {"CI-SGLANG": "[0-9]+"},
     ["commands.rerun_test.pins.CI-SGLANG: pin names look like ci-<name> (ci-image-tag is built in)"]),
    ((C, "rerun_test", "pins"), {"ci-sglang-pr": "[0-9"},
     ["commands.rerun_test.pins.ci-sglang-pr: invalid regex: unterminated character set at position 0"]),
    # finding 10: a repetition count that overflows `re`, and one that is merely huge
    ((C, "rerun_test", "pins"), {"ci-sglang-pr": "a{9999999999}"},
     ["commands.rerun_test.pins.ci-sglang-pr: repetition count 9999999999 in '{9999999999}' is larger than 1000"]),
    ((C, "rerun_test", "pins"), {"ci-sglang-pr": "[0-9]{1,1001}"},
     ["commands.rerun_test.pins.ci-sglang-pr: repetition count 1001 in '{1,1001}' is larger than 1000"]),
    ((C, "rerun_test", "pins"), {"ci-sglang-pr": "x" * 257},
     ["commands.rerun_test.pins.ci-sglang-pr: the pattern has 257 characters, more than 256"]),
    ((C, "rerun_test", "pins"), {"ci-sglang-pr": 7},
     ["commands.rerun_test.pins.ci-sglang-pr: expected a regex string, got a number"]),
])
def test_commands_are_checked(path, value, expected):
    assert messages(edited(_set(path, value))) == sorted(expected)


def test_an_unknown_label_names_the_trusted_label_file_in_its_hint():
    with pytest.raises(InputErrors) as info:
        parse_access_policy(edited(_set((C, "add_label", "allowed_labels"), ["run-ci-gpu"])), LABELS)
    (error,) = info.value.errors
    assert error.hint == "known labels are in labels.py"


def test_a_pin_pattern_error_states_the_bounds_in_its_hint():
    with pytest.raises(InputErrors) as info:
        parse_access_policy(edited(_set((C, "rerun_test", "pins"), {"ci-x": "a{,99999}"})), LABELS)
    (error,) = info.value.errors
    assert (error.message, error.hint) == (
        "commands.rerun_test.pins.ci-x: repetition count 99999 in '{,99999}' is larger than 1000",
        "a pin pattern has at most 256 characters and repetition counts of at most 1000, e.g. [0-9]{1,7}")


def test_every_error_is_reported_at_once():
    def change(data):
        data["groups"]["helpers"]["repository_permissions"] = ["owner"]
        data["commands"]["clear_labels"]["group"] = "nobody"
        data["commands"]["add_label"]["allowed_labels"] = ["run-ci-gpu"]
        data["commands"]["rerun_test"]["pins"] = {"ci-x": "("}
    assert messages(edited(change)) == [
        "commands.add_label.allowed_labels: 'run-ci-gpu' is neither run-ci-<known label> nor a workflow-only "
        "label (nightly, bypass-fastfail)",
        "commands.clear_labels.group: 'nobody' is not a defined group (helpers, maintainers)",
        "commands.rerun_test.pins.ci-x: invalid regex: missing ), unterminated subpattern at position 0",
        "groups.helpers.repository_permissions: unknown permission 'owner'; expected some of admin, maintain, "
        "write, triage, read",
    ]


def test_the_allowed_labels_are_checked_against_the_given_label_registry(tmp_path):
    # A label the trusted labels.py does not know is refused even if it looks like a CI label.
    (tmp_path / "labels.py").write_text('KNOWN_LABELS = {"gpu": "GPU tests"}\n')
    labels = load_labels(tmp_path)
    text = edited(_set((C, "add_label", "allowed_labels"), ["run-ci-gpu", "nightly"]))
    assert parse_access_policy(text, labels).command("add_label").allowed_labels == ("run-ci-gpu", "nightly")
    with pytest.raises(InputErrors) as info:
        parse_access_policy(edited(_set((C, "add_label", "allowed_labels"), ["run-ci-megatron"])), labels)
    assert [e.message for e in info.value.errors] == [
        "commands.add_label.allowed_labels: 'run-ci-megatron' is neither run-ci-<known label> nor a "
        "workflow-only label (nightly, bypass-fastfail)"]


def test_the_path_given_is_the_path_reported():
    with pytest.raises(InputErrors) as info:
        parse_access_policy(json.dumps({**VALID, "version": 3}), LABELS, path="policy/commands.json")
    assert [(e.path, e.message) for e in info.value.errors] == [
        ("policy/commands.json", "version: unsupported version 3; expected 1")]


# -- the document declared once: written, read back, equal ------------------------------------------

NAMES = st.text("abcdefgh-", min_size=1, max_size=6)
GROUPS = st.builds(
    Group, name=NAMES,
    repository_permissions=st.lists(st.sampled_from(PERMISSIONS), unique=True, max_size=3).map(tuple),
    user_ids=st.lists(st.integers(1, 2**40), unique=True, max_size=3).map(tuple),
).filter(lambda g: g.repository_permissions or g.user_ids)
ALLOWED = [f"run-ci-{name}" for name in LABELS.names] + ["nightly", "bypass-fastfail"]


@st.composite
def policies(draw) -> AccessPolicy:
    groups = tuple({g.name: g for g in draw(st.lists(GROUPS, min_size=1, max_size=3))}.values())
    group = st.sampled_from([g.name for g in groups])
    pipeline = draw(st.none() | st.from_regex(r"[a-z-]{1,8}\.ya?ml", fullmatch=True))
    commands = []
    for kind in COMMANDS:
        if (kind == "rerun_failed_ci" and pipeline is None) or not draw(st.booleans()):
            continue
        if kind == "add_label":
            policy = CommandPolicy(draw(group), tuple(draw(st.lists(st.sampled_from(ALLOWED), min_size=1,
                                                                    max_size=3, unique=True))))
        elif kind == "rerun_test":
            pins = draw(st.dictionaries(st.from_regex(r"ci-[a-z0-9][a-z0-9-]{0,6}", fullmatch=True)
                                        .filter(lambda n: n != "ci-image-tag"),
                                        st.sampled_from(["[0-9]{1,7}", "v[0-9.]+", ".*"]), max_size=2))
            policy = CommandPolicy(draw(group), workflow=draw(st.from_regex(r"[a-z_.-]{1,8}\.yml", fullmatch=True)),
                                   ref=draw(st.none() | st.from_regex(r"[a-z0-9_./-]{1,10}", fullmatch=True)),
                                   pins=tuple(pins.items()))
        else:
            policy = CommandPolicy(draw(group))
        commands.append((kind, policy))
    return AccessPolicy(groups=groups, commands=tuple(commands), pipeline_workflow=pipeline)


@settings(max_examples=60, deadline=None)
@given(policies())
def test_a_written_policy_reads_back_equal(policy):
    assert parse_access_policy(write_access_policy(policy), LABELS) == policy


def test_the_written_example_policy_reads_back_equal():
    policy = parse_access_policy((EXAMPLE_REPO / ".github" / "ci-commands.json").read_text(), LABELS)
    assert parse_access_policy(write_access_policy(policy), LABELS) == policy
    assert json.loads(write_access_policy(policy)) == json.loads(
        (EXAMPLE_REPO / ".github" / "ci-commands.json").read_text())
