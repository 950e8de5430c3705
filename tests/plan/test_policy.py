"""Trigger policy (`ci_policy.plan.policy`): cadence, label canonicalisation, inclusion, selection."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_policy.config.top import parse_config
from ci_policy.errors import InputError, UsageError
from ci_policy.model.registry import Registration
from ci_policy.plan.policy import (
    EVENTS,
    Policy,
    Trigger,
    canonical_labels,
    held_back,
    is_selected,
    nightly_split,
    parse_labels_json,
    push_diff_unavailable,
    resolve,
    selects,
    why_not,
    why_not_selected,
)
from ci_policy.read.labels import parse_labels

STAGES = """\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: cpu, backend: cpu}
  - {name: gpu, backend: cuda, runs_on: [h200]}
"""

# The configuration of the specification.
SPEC = parse_config(STAGES + """\
cadences:
  schedules: {"0 15 * * 0-5": nightly, "0 15 * * 6": weekly}
  nightly_exclude: [long]
scopes:
  run-ci-all: {exclude: []}
  run-ci-image: {exclude: [long]}
""")

# Scopes whose exclusions differ from nightly's, to tell precedence apart from coincidence.
ALT = parse_config(STAGES + """\
cadences:
  schedules: {"0 15 * * 0-5": nightly}
  nightly_exclude: [long, fsdp]
scopes:
  run-ci-image: {exclude: [long]}
  run-ci-gpu: {exclude: [sglang]}
""")

BARE = parse_config(STAGES)

LABELS = parse_labels(
    'KNOWN_LABELS = {"megatron": "Megatron", "fsdp": "FSDP", "long": "slow", "sglang": "SGLang"}\n')
ALL = ("fsdp", "long", "megatron", "sglang")
NO_LONG = ("fsdp", "megatron", "sglang")

NIGHTLY_CRON = "0 15 * * 0-5"
WEEKLY_CRON = "0 15 * * 6"


def policy(event: str, labels=(), schedule=None, cadence=None, config=SPEC) -> Policy:
    return resolve(Trigger(event=event, labels=tuple(labels), schedule=schedule, cadence=cadence),
                   config, LABELS)


# -- cadence and included labels ----------------------------------------------------------

# (event, labels, schedule, cadence override, config) -> (cadence, include_labels)
RULES = [
    # regular PRs: explicit labels and broad scopes
    pytest.param("pull_request", [], None, None, SPEC, "regular", (), id="pr-no-labels"),
    pytest.param("pull_request", ["run-ci-megatron"], None, None, SPEC, "regular", ("megatron",),
                 id="pr-explicit"),
    pytest.param("pull_request", ["run-ci-megatron", "run-ci-fsdp"], None, None, SPEC, "regular",
                 ("fsdp", "megatron"), id="pr-two-explicit"),
    pytest.param("pull_request", ["run-ci-image"], None, None, SPEC, "regular", NO_LONG,
                 id="pr-scope-minus-its-exclusion"),
    pytest.param("pull_request", ["run-ci-image", "run-ci-long"], None, None, SPEC, "regular", ALL,
                 id="explicit-label-beats-scope-exclusion"),
    pytest.param("pull_request", ["run-ci-all"], None, None, SPEC, "regular", ALL, id="pr-run-ci-all"),
    pytest.param("pull_request", ["run-ci-all", "run-ci-image"], None, None, SPEC, "regular", ALL,
                 id="run-ci-all-beats-other-scope"),
    pytest.param("pull_request", ["run-ci-nosuch"], None, None, SPEC, "regular", (),
                 id="unknown-run-ci-label-selects-nothing"),
    pytest.param("pull_request", ["documentation", "run-ci-$(id)"], None, None, SPEC, "regular", (),
                 id="non-ci-labels-ignored"),
    # nightly by PR label
    pytest.param("pull_request", ["nightly"], None, None, SPEC, "nightly", NO_LONG,
                 id="nightly-label-excludes-nightly-exclude"),
    pytest.param("pull_request", ["nightly", "run-ci-long"], None, None, SPEC, "nightly", ALL,
                 id="explicit-label-beats-nightly-exclude"),
    pytest.param("pull_request", ["nightly", "run-ci-all"], None, None, SPEC, "nightly", ALL,
                 id="run-ci-all-beats-nightly"),
    pytest.param("pull_request", ["nightly", "run-ci-image"], None, None, SPEC, "nightly", NO_LONG,
                 id="nightly-with-scope"),
    pytest.param("workflow_dispatch", ["nightly"], None, None, SPEC, "regular", (),
                 id="nightly-label-only-on-a-pr"),
    # schedules
    pytest.param("schedule", [], NIGHTLY_CRON, None, SPEC, "nightly", NO_LONG, id="nightly-cron"),
    pytest.param("schedule", [], WEEKLY_CRON, None, SPEC, "weekly", ALL, id="weekly-cron-includes-all"),
    pytest.param("schedule", ["run-ci-image"], WEEKLY_CRON, None, SPEC, "weekly", ALL,
                 id="weekly-beats-other-scope"),
    # dispatch and call
    pytest.param("workflow_dispatch", [], None, None, SPEC, "regular", (), id="dispatch-regular"),
    pytest.param("workflow_call", [], None, None, SPEC, "regular", (), id="call-regular"),
    pytest.param("workflow_dispatch", [], None, "weekly", SPEC, "weekly", ALL, id="dispatch-weekly"),
    pytest.param("workflow_call", [], None, "release", SPEC, "release", ALL, id="call-release-includes-all"),
    pytest.param("workflow_call", [], None, "nightly", SPEC, "nightly", NO_LONG, id="call-nightly"),
    pytest.param("workflow_call", ["run-ci-megatron"], None, "regular", SPEC, "regular", ("megatron",),
                 id="call-regular-with-labels"),
    # the override wins over the trigger
    pytest.param("schedule", [], NIGHTLY_CRON, "regular", SPEC, "regular", (), id="override-beats-cron"),
    pytest.param("schedule", [], WEEKLY_CRON, "nightly", SPEC, "nightly", NO_LONG,
                 id="override-nightly-beats-weekly-cron"),
    pytest.param("schedule", [], "5 4 * * *", "release", SPEC, "release", ALL,
                 id="override-beats-unknown-cron"),
    pytest.param("pull_request", ["nightly"], None, "regular", SPEC, "regular", (),
                 id="override-beats-nightly-label"),
    pytest.param("pull_request", ["run-ci-image"], None, "weekly", SPEC, "weekly", ALL,
                 id="override-weekly-beats-scope"),
    pytest.param("pull_request", [], None, "release", SPEC, "release", ALL, id="override-release-on-pr"),
    # other broad scopes apply only below every higher-precedence scope or cadence
    pytest.param("pull_request", ["run-ci-gpu"], None, None, ALT, "regular", ("fsdp", "long", "megatron"),
                 id="alt-scope"),
    pytest.param("pull_request", ["run-ci-gpu", "run-ci-image"], None, None, ALT, "regular", ALL,
                 id="alt-two-scopes-union"),
    pytest.param("pull_request", ["nightly", "run-ci-gpu"], None, None, ALT, "nightly", ("megatron", "sglang"),
                 id="alt-nightly-beats-other-scope"),
    pytest.param("schedule", ["run-ci-gpu"], NIGHTLY_CRON, None, ALT, "nightly", ("megatron", "sglang"),
                 id="alt-nightly-cron-beats-other-scope"),
    pytest.param("pull_request", ["nightly", "run-ci-gpu", "run-ci-fsdp"], None, None, ALT, "nightly",
                 ("fsdp", "megatron", "sglang"), id="alt-explicit-beats-nightly-exclude"),
    pytest.param("pull_request", ["run-ci-all"], None, None, ALT, "regular", (),
                 id="run-ci-all-unconfigured-is-no-scope"),
    pytest.param("pull_request", ["run-ci-image"], None, None, BARE, "regular", (),
                 id="no-scopes-configured"),
]


@pytest.mark.parametrize("event, labels, schedule, cadence, config, want_cadence, want_include", RULES)
def test_trigger_rules(event, labels, schedule, cadence, config, want_cadence, want_include):
    p = policy(event, labels, schedule, cadence, config)
    assert p.event == event
    assert p.cadence == want_cadence
    assert p.include_labels == want_include


# (event, labels, cadence override, label) -> the source that included it
SOURCES = [
    ("pull_request", ["run-ci-image", "run-ci-long"], None, {
        "fsdp": "run-ci-image", "long": "run-ci-long", "megatron": "run-ci-image", "sglang": "run-ci-image"}),
    ("pull_request", ["nightly", "run-ci-all"], None, {label: "run-ci-all" for label in ALL}),
    ("pull_request", ["nightly", "run-ci-long"], None, {
        "fsdp": "the nightly cadence", "long": "run-ci-long", "megatron": "the nightly cadence",
        "sglang": "the nightly cadence"}),
    ("workflow_call", [], "release", {label: "the release cadence" for label in ALL}),
    ("workflow_call", ["run-ci-megatron"], "weekly", {
        "fsdp": "the weekly cadence", "long": "the weekly cadence", "megatron": "run-ci-megatron",
        "sglang": "the weekly cadence"}),
]


@pytest.mark.parametrize("event, labels, cadence, sources", SOURCES)
def test_sources_name_what_included_each_label(event, labels, cadence, sources):
    p = policy(event, labels, cadence=cadence)
    assert dict(p.sources) == sources
    for label, source in sources.items():
        assert p.source_of(label) == source
    assert p.source_of("nosuch") is None


def test_unknown_run_ci_label_warns():
    p = policy("pull_request", ["run-ci-nosuch", "run-ci-image", "run-ci-megatron"])
    assert p.warnings == ("PR label run-ci-nosuch names no known label or scope; it selects nothing",)
    assert policy("pull_request", ["run-ci-all", "nightly", "bypass-fastfail"]).warnings == ()


@pytest.mark.parametrize("label, warning", [
    ("sglang", "PR label 'sglang' is not one ci-policy reads; it selects nothing; did you mean 'run-ci-sglang'?"),
    ("Run-CI-SGLang ", "PR label 'Run-CI-SGLang ' is not one ci-policy reads; it selects nothing; "
                       "did you mean 'run-ci-sglang'?"),
    ("Nightly", "PR label 'Nightly' is not one ci-policy reads; it selects nothing; did you mean 'nightly'?"),
    ("run-ci", "PR label 'run-ci' is not one ci-policy reads; it selects nothing; did you mean 'run-ci-all'?"),
    ("run-ci-megatorn", "PR label run-ci-megatorn names no known label or scope; it selects nothing; "
                        "did you mean 'run-ci-megatron'?"),
    ("run-ci-Megatron", "PR label run-ci-Megatron names no known label or scope; it selects nothing; "
                        "did you mean 'run-ci-megatron'?"),
])
def test_a_label_meant_for_a_known_one_warns_with_a_did_you_mean(label, warning):
    p = policy("pull_request", [label, "bug", "documentation"])
    assert p.warnings == (warning,)
    assert p.include_labels == ()  # never matched for it: the canonical form is exact


def test_ordinary_and_gate_labels_do_not_warn():
    assert policy("pull_request", ["bug", "documentation", "good first issue", "megatron-lm"]).warnings == ()
    gated = resolve(Trigger(event="pull_request", labels=("Run-CI", "extra two", "run-ci")), GATED, LABELS)
    assert gated.warnings == ("PR label 'Run-CI' is not one ci-policy reads; it selects nothing; "
                              "did you mean 'run-ci'?",)


def test_with_labels_adds_labels_without_replacing_sources():
    p = policy("pull_request", ["run-ci-megatron"])
    q = p.with_labels([("fsdp", "path rule"), ("megatron", "path rule")])
    assert q.include_labels == ("fsdp", "megatron")
    assert dict(q.sources) == {"fsdp": "path rule", "megatron": "run-ci-megatron"}
    assert (q.cadence, q.raw_labels, q.admit_nightly, q.write_baseline) == (
        p.cadence, p.raw_labels, p.admit_nightly, p.write_baseline)
    assert p.include_labels == ("megatron",)


def test_the_spec_yaml_is_loaded_as_written():
    assert tuple(SPEC.cadences.schedules.items()) == ((NIGHTLY_CRON, "nightly"), (WEEKLY_CRON, "weekly"))
    assert SPEC.cadences.nightly_exclude == ("long",)
    assert [(s.name, s.exclude) for s in SPEC.scopes] == [("run-ci-all", ()), ("run-ci-image", ("long",))]


# -- errors ---------------------------------------------------------------------------------

EVENT_LIST = "pull_request, schedule, workflow_dispatch, workflow_call, push, merge_group"
CADENCE_LIST = "regular, nightly, weekly, release"

ERRORS = [
    pytest.param("release", None, None, SPEC, f"unknown event 'release'; expected one of {EVENT_LIST}",
                 "--event", id="unknown-event"),
    pytest.param("", None, None, SPEC, f"unknown event ''; expected one of {EVENT_LIST}",
                 "--event", id="empty-event"),
    pytest.param("Pull_Request", None, "weekly", SPEC,
                 f"unknown event 'Pull_Request'; expected one of {EVENT_LIST}",
                 "--event", id="unknown-event-even-with-override"),
    pytest.param("workflow_call", None, "hourly", SPEC,
                 f"unknown cadence 'hourly'; expected one of {CADENCE_LIST}",
                 "--cadence", id="unknown-cadence"),
    pytest.param("workflow_call", None, "Nightly", SPEC,
                 f"unknown cadence 'Nightly'; expected one of {CADENCE_LIST}",
                 "--cadence", id="cadence-is-case-sensitive"),
    pytest.param("schedule", NIGHTLY_CRON, "", SPEC,
                 f"unknown cadence ''; expected one of {CADENCE_LIST}",
                 "--cadence", id="empty-cadence"),
    pytest.param("schedule", "5 4 * * *", None, SPEC,
                 "--schedule: cron '5 4 * * *' is not listed in cadences.schedules "
                 "(listed: '0 15 * * 0-5', '0 15 * * 6')",
                 ".github/ci-policy.yml", id="unknown-cron"),
    pytest.param("schedule", NIGHTLY_CRON + " ", None, SPEC,
                 "--schedule: cron '0 15 * * 0-5 ' is not listed in cadences.schedules "
                 "(listed: '0 15 * * 0-5', '0 15 * * 6')",
                 ".github/ci-policy.yml", id="cron-never-inherits-a-near-match"),
    pytest.param("schedule", WEEKLY_CRON, None, ALT,
                 "--schedule: cron '0 15 * * 6' is not listed in cadences.schedules (listed: '0 15 * * 0-5')",
                 ".github/ci-policy.yml", id="cron-of-another-config"),
    pytest.param("schedule", NIGHTLY_CRON, None, BARE,
                 "--schedule: cron '0 15 * * 0-5' is not listed in cadences.schedules (listed: none)",
                 ".github/ci-policy.yml", id="no-schedules-configured"),
    pytest.param("schedule", None, None, SPEC, "a schedule event needs its cron string",
                 "--schedule", id="schedule-without-cron"),
    pytest.param("schedule", "", None, SPEC, "a schedule event needs its cron string",
                 "--schedule", id="schedule-with-empty-cron"),
]


@pytest.mark.parametrize("event, schedule, cadence, config, message, path", ERRORS)
def test_trigger_errors(event, schedule, cadence, config, message, path):
    with pytest.raises((InputError, UsageError)) as info:
        policy(event, ["run-ci-megatron"], schedule, cadence, config)
    assert info.value.message == message
    # A bad trigger is the command line's fault (exit 2); an unlisted cron, the configuration's.
    if path.startswith("--"):
        assert type(info.value) is UsageError and info.value.source == path
    else:
        assert type(info.value) is InputError and info.value.path == path


def test_unknown_cron_points_at_the_cadences_section():
    with pytest.raises(InputError) as info:
        policy("schedule", schedule="5 4 * * *")
    assert info.value.line == 8  # the first line of the `cadences:` mapping in SPEC
    assert info.value.hint == "add it to cadences.schedules in the configuration with its cadence"


# -- labels JSON and canonicalisation ------------------------------------------------------

JSON_HINT = "pass toJSON(github.event.pull_request.labels.*.name)"
ARRAY = "expected a JSON array of label names (strings), got "

LABELS_JSON_ERRORS = [
    pytest.param("nope", "not valid JSON: Expecting value: line 1 column 1 (char 0)",
                 id="not-json"),
    pytest.param("", "not valid JSON: Expecting value: line 1 column 1 (char 0)", id="empty"),
    pytest.param('["run-ci-a",', "not valid JSON: Expecting value: line 1 column 13 (char 12)",
                 id="truncated"),
    pytest.param('["a"] x', "not valid JSON: Extra data: line 1 column 7 (char 6)",
                 id="trailing-data"),
    pytest.param("NaN", "not valid JSON: NaN is not allowed", id="NaN"),
    pytest.param('["run-ci-a", NaN]', "not valid JSON: NaN is not allowed", id="NaN-in-array"),
    pytest.param("[Infinity]", "not valid JSON: Infinity is not allowed", id="Infinity"),
    pytest.param("[-Infinity]", "not valid JSON: -Infinity is not allowed", id="-Infinity"),
    pytest.param('{"run-ci-a": "x"}', ARRAY + "'{\"run-ci-a\": \"x\"}'", id="object"),
    pytest.param('"run-ci-a"', ARRAY + "'\"run-ci-a\"'", id="string"),
    pytest.param("1", ARRAY + "'1'", id="number"),
    pytest.param('["run-ci-a", 1]', ARRAY + "'[\"run-ci-a\", 1]'", id="array-with-number"),
    pytest.param("[1e999]", ARRAY + "'[1e999]'", id="array-with-huge-number"),
    pytest.param("[null]", ARRAY + "'[null]'", id="array-with-null"),
    pytest.param("[true]", ARRAY + "'[true]'", id="array-with-bool"),
    pytest.param('[["run-ci-a"]]', ARRAY + "'[[\"run-ci-a\"]]'", id="nested-array"),
    pytest.param("[" * 100_000,
                 "not valid JSON: maximum recursion depth exceeded while decoding "
                 "a JSON array from a unicode string", id="deeply-nested"),
    pytest.param("[" + "1," * 100 + "1]", ARRAY + repr(("[" + "1," * 100 + "1]")[:80]), id="long-text-cut"),
]


@pytest.mark.parametrize("text, message", LABELS_JSON_ERRORS)
def test_labels_json_errors(text, message):
    with pytest.raises(UsageError) as info:
        parse_labels_json(text)
    assert info.value.message == message
    assert info.value.source == "--labels-json"
    assert info.value.hint == JSON_HINT


@pytest.mark.parametrize("text, labels", [
    ('["run-ci-megatron", "documentation"]', ("run-ci-megatron", "documentation")),
    (' [ "nightly" ] ', ("nightly",)),
    ("[]", ()),
    ("null", ()),  # what toJSON(github.event.pull_request.labels.*.name) gives outside a PR
    ('["\\u00fc"]', ("ü",)),
])
def test_labels_json_accepted(text, labels):
    assert parse_labels_json(text) == labels


CANONICAL = [
    pytest.param(["documentation"], (), id="documentation-dropped"),
    pytest.param(["run-ci-$(id)"], (), id="shell-injection-dropped"),
    pytest.param(["run-ci-x;rm -rf /", "run-ci-a b", "run-ci-x\n", "run-ci-`id`"], (), id="unsafe-names"),
    pytest.param(["nightly", "bypass-fastfail"], ("bypass-fastfail", "nightly"), id="workflow-only-kept"),
    pytest.param(["Nightly", " nightly", "bypass_fastfail", "BYPASS-FASTFAIL"], (), id="workflow-only-exact"),
    pytest.param(["run-ci-megatron", "documentation", "run-ci-megatron", "run-ci-fsdp", "nightly", "nightly"],
                 ("nightly", "run-ci-fsdp", "run-ci-megatron"), id="sorted-deduped"),
    pytest.param(["run-ci-", "run-ci--x", "run-ci-.x", "run-ci-_x", "RUN-CI-X", "run-ci-ü", "xrun-ci-a"], (),
                 id="bad-names"),
    pytest.param(["run-ci-a_b.c-d", "run-ci-9", "run-ci-Z"], ("run-ci-9", "run-ci-Z", "run-ci-a_b.c-d"),
                 id="good-names"),
    pytest.param([], (), id="none"),
]


@pytest.mark.parametrize("labels, expected", CANONICAL)
def test_canonical_labels(labels, expected):
    assert canonical_labels(labels) == expected
    assert policy("pull_request", labels).raw_labels == expected


NAME = re.compile(r"run-ci-[A-Za-z0-9][A-Za-z0-9_.-]*")


@given(st.lists(st.one_of(st.text(max_size=12), st.text(max_size=8).map("run-ci-".__add__),
                          st.sampled_from(["nightly", "bypass-fastfail", "run-ci-all"]))))
def test_canonical_labels_property(labels):
    out = canonical_labels(labels)
    assert list(out) == sorted(set(out))
    assert set(out) == {label for label in labels
                        if NAME.fullmatch(label) or label in ("nightly", "bypass-fastfail")}


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=40), st.lists(st.text(max_size=5)).map(lambda v: str(v).replace("'", '"'))))
def test_labels_json_raises_only_a_usage_error(text):
    try:
        labels = parse_labels_json(text)
    except UsageError as exc:
        assert exc.source == "--labels-json"
    else:
        assert all(isinstance(label, str) for label in labels)


# -- flags: admit_nightly, bypass_fastfail, write_baseline ------------------------------------

# (event, cadence override) -> (admit_nightly, bypass_fastfail, write_baseline)
FLAGS = [
    ("pull_request", "regular", False, False, False),
    ("pull_request", "nightly", True, True, False),
    ("pull_request", "weekly", True, True, False),
    ("pull_request", "release", True, True, False),
    ("schedule", "regular", False, False, False),
    ("schedule", "nightly", True, True, True),
    ("schedule", "weekly", True, True, True),
    ("schedule", "release", True, True, False),
    ("workflow_dispatch", "regular", False, False, False),
    ("workflow_dispatch", "nightly", True, True, True),
    ("workflow_dispatch", "weekly", True, True, True),
    ("workflow_dispatch", "release", True, True, False),
    ("workflow_call", "regular", False, False, False),
    ("workflow_call", "nightly", True, True, True),
    ("workflow_call", "weekly", True, True, True),
    ("workflow_call", "release", True, True, False),
    ("push", "regular", False, False, False),
    ("push", "nightly", True, True, True),
    ("push", "weekly", True, True, True),
    ("push", "release", True, True, False),
    # A merge queue entry is not merged yet: it never writes baselines.
    ("merge_group", "regular", False, False, False),
    ("merge_group", "nightly", True, True, False),
    ("merge_group", "weekly", True, True, False),
    ("merge_group", "release", True, True, False),
]


@pytest.mark.parametrize("event, cadence, admit, bypass, baseline", FLAGS)
def test_flags_truth_table(event, cadence, admit, bypass, baseline):
    p = policy(event, cadence=cadence, schedule=NIGHTLY_CRON if event == "schedule" else None)
    assert p.cadence == cadence
    assert (p.admit_nightly, p.bypass_fastfail, p.write_baseline) == (admit, bypass, baseline)


def test_flags_table_covers_every_event_and_cadence():
    assert {(e, c) for e, c, *_ in FLAGS} == {(e, c) for e in EVENTS for c in
                                              ("regular", "nightly", "weekly", "release")}


# Cadences reached without an override.
@pytest.mark.parametrize("event, labels, schedule, admit, bypass, baseline", [
    ("schedule", [], NIGHTLY_CRON, True, True, True),
    ("schedule", [], WEEKLY_CRON, True, True, True),
    ("pull_request", ["nightly"], None, True, True, False),
    ("pull_request", ["bypass-fastfail"], None, False, True, False),
    ("pull_request", ["run-ci-all"], None, False, False, False),
    ("pull_request", [], None, False, False, False),
    ("workflow_dispatch", [], None, False, False, False),
    ("workflow_dispatch", ["bypass-fastfail"], None, False, True, False),
    ("workflow_call", [], None, False, False, False),
])
def test_flags_from_the_trigger(event, labels, schedule, admit, bypass, baseline):
    p = policy(event, labels, schedule)
    assert (p.admit_nightly, p.bypass_fastfail, p.write_baseline) == (admit, bypass, baseline)


# -- is_selected ------------------------------------------------------------------------------


def reg(labels=(), nightly=False, disabled=None) -> Registration:
    return Registration(file="tests/e2e/test_x.py", line=3, backend="cuda", suite="gpu", est_time=60,
                        labels=tuple(labels), nightly=nightly, disabled=disabled)


def fixed_policy(admit: bool, cadence: str) -> Policy:
    return Policy(event="workflow_dispatch", cadence=cadence, raw_labels=(), include_labels=("megatron",),
                  sources=(("megatron", "run-ci-megatron"),), admit_nightly=admit, bypass_fastfail=admit,
                  write_baseline=False)


NIGHTLY_ONLY = "nightly-only; the regular cadence does not admit nightly tests"
DISABLED = "disabled: flaky on driver 580"

# (disabled, nightly, labels, admit_nightly) -> selected, or the reason it is not
SELECTION = [
    # enabled, not nightly-only
    (None, False, (), False, None),
    (None, False, (), True, None),
    (None, False, ("megatron",), False, None),
    (None, False, ("megatron",), True, None),
    (None, False, ("fsdp",), False, "needs one of: fsdp"),
    (None, False, ("fsdp",), True, "needs one of: fsdp"),
    (None, False, ("fsdp", "megatron"), False, None),
    (None, False, ("fsdp", "long"), True, "needs one of: fsdp, long"),
    # enabled, nightly-only
    (None, True, (), False, NIGHTLY_ONLY),
    (None, True, (), True, None),
    (None, True, ("megatron",), False, NIGHTLY_ONLY),
    (None, True, ("megatron",), True, None),
    (None, True, ("fsdp",), False, NIGHTLY_ONLY),
    (None, True, ("fsdp",), True, "needs one of: fsdp"),
    # disabled: never selected
    ("flaky on driver 580", False, (), False, DISABLED),
    ("flaky on driver 580", False, (), True, DISABLED),
    ("flaky on driver 580", False, ("megatron",), False, DISABLED),
    ("flaky on driver 580", False, ("megatron",), True, DISABLED),
    ("flaky on driver 580", False, ("fsdp",), False, DISABLED),
    ("flaky on driver 580", False, ("fsdp",), True, DISABLED),
    ("flaky on driver 580", True, (), False, DISABLED),
    ("flaky on driver 580", True, (), True, DISABLED),
    ("flaky on driver 580", True, ("megatron",), False, DISABLED),
    ("flaky on driver 580", True, ("megatron",), True, DISABLED),
    ("flaky on driver 580", True, ("fsdp",), False, DISABLED),
    ("flaky on driver 580", True, ("fsdp",), True, DISABLED),
]


@pytest.mark.parametrize("disabled, nightly, labels, admit, why_not", SELECTION)
def test_is_selected_truth_table(disabled, nightly, labels, admit, why_not):
    r = reg(labels, nightly, disabled)
    p = fixed_policy(admit, "nightly" if admit else "regular")
    assert is_selected(r, p) is (why_not is None)
    if why_not is not None:
        assert why_not_selected(r, p) == why_not


@pytest.mark.parametrize("trigger, selected_files", [
    (dict(event="pull_request"), ["cpu", "gpu-unlabelled"]),
    (dict(event="pull_request", labels=["run-ci-long"]), ["cpu", "gpu-unlabelled", "gpu-long"]),
    (dict(event="pull_request", labels=["nightly"]),
     ["cpu", "cpu-nightly", "gpu-unlabelled", "gpu-megatron", "gpu-megatron-nightly"]),
    (dict(event="schedule", schedule=WEEKLY_CRON),
     ["cpu", "cpu-nightly", "gpu-unlabelled", "gpu-long", "gpu-megatron", "gpu-megatron-nightly"]),
    (dict(event="pull_request", labels=["run-ci-megatron"]), ["cpu", "gpu-unlabelled", "gpu-megatron"]),
])
def test_selection_through_resolve(trigger, selected_files):
    regs = [
        Registration("cpu", 1, "cpu", "cpu", 1),
        Registration("cpu-nightly", 1, "cpu", "cpu", 1, nightly=True),
        Registration("gpu-unlabelled", 1, "cuda", "gpu", 1),
        Registration("gpu-long", 1, "cuda", "gpu", 1, labels=("long",)),
        Registration("gpu-megatron", 1, "cuda", "gpu", 1, labels=("megatron",)),
        Registration("gpu-megatron-nightly", 1, "cuda", "gpu", 1, labels=("megatron",), nightly=True),
        Registration("gpu-disabled", 1, "cuda", "gpu", 1, labels=("megatron",), disabled="broken"),
    ]
    p = resolve(Trigger(**{**trigger, "labels": tuple(trigger.get("labels", ()))}), SPEC, LABELS)
    assert [r.file for r in regs if is_selected(r, p)] == selected_files


# -- push and merge_group -----------------------------------------------------------------------

MERGE_NIGHTLY = parse_config(STAGES + "cadences: {merge_group: nightly, nightly_exclude: [long]}\n")


@pytest.mark.parametrize("event, config, cadence, include", [
    ("push", SPEC, "regular", ()),
    ("merge_group", SPEC, "regular", ()),
    ("merge_group", MERGE_NIGHTLY, "nightly", NO_LONG),
    ("push", MERGE_NIGHTLY, "regular", ()),
])
def test_push_and_merge_group_cadences(event, config, cadence, include):
    p = policy(event, config=config)
    assert (p.event, p.cadence, p.include_labels, p.raw_labels, p.pr_labels) == (event, cadence, include, (), ())
    # A merge queue entry is not merged yet: it never writes baselines, whatever its cadence.
    assert p.write_baseline is False


def test_the_cadence_override_wins_for_a_merge_queue_entry():
    assert policy("merge_group", cadence="weekly", config=MERGE_NIGHTLY).cadence == "weekly"


@pytest.mark.parametrize("event", ["push", "merge_group"])
def test_push_and_merge_group_carry_no_labels(event):
    with pytest.raises(UsageError) as info:
        policy(event, ["run-ci-megatron", "run-ci"])
    assert (info.value.source, info.value.message, info.value.hint) == (
        "--labels-json/--label", f"a {event} event carries no PR labels, got run-ci-megatron, run-ci",
        "pass PR labels only for pull_request events (an empty array or null is fine)")


ZERO = "0" * 40


@pytest.mark.parametrize("before, after, forced, why", [
    ("a" * 40, "b" * 40, False, None),
    (None, None, False, None),
    (ZERO, "b" * 40, False,
     "the push created the branch (its before commit is the zero SHA), so there is no base to diff against"),
    ("0" * 64, "b" * 64, False,
     "the push created the branch (its before commit is the zero SHA), so there is no base to diff against"),
    ("a" * 40, ZERO, False, "the push deleted the branch (its after commit is the zero SHA)"),
    ("a" * 40, "b" * 40, True, "a force push: the before commit need not be an ancestor of the pushed one"),
    ("0" * 39, "b" * 40, False, None),
])
def test_push_diff_unavailable(before, after, forced, why):
    assert push_diff_unavailable(before, after, forced) == why


# -- stage-level rules: held_back and the nightly split ------------------------------------------

GATED = parse_config("""\
version: 1
discovery:
  roots: [tests]
stages:
  - {name: cpu, backend: cpu}
  - {name: cpu-extra, backend: cpu, requires_labels: [run-ci-extra, extra two]}
  - {name: gpu, backend: cuda, runs_on: [h200]}
  - {name: gpu-extra, backend: cuda, runs_on: [h200], requires_labels: [run-ci-extra]}
  - {name: gpu-nightly, backend: cuda, runs_on: [h200], cadences: [nightly]}
pull_request: {require_labels: [run-ci]}
cadences:
  schedules: {"0 1 * * *": {cadence: nightly, backends: [cuda], stages: ["*-nightly", "gpu"]}}
  nightly_selects: nightly_only
""")
NO_GATE = "the PR lacks the label run-ci, which accelerator stages need (pull_request.require_labels)"


def gated(event: str, labels=(), schedule=None, cadence=None) -> dict[str, tuple[str, ...]]:
    p = resolve(Trigger(event=event, labels=tuple(labels), schedule=schedule, cadence=cadence), GATED, LABELS)
    return {stage.name: held_back(stage, p, GATED) for stage in GATED.stages}


@pytest.mark.parametrize("event, labels, schedule, expected", [
    ("pull_request", [], None, {
        "cpu": (), "cpu-extra": ("the PR lacks the labels run-ci-extra, extra two, which the stage requires "
                                 "(requires_labels)",),
        "gpu": (NO_GATE,),
        "gpu-extra": (NO_GATE, "the PR lacks the label run-ci-extra, which the stage requires (requires_labels)"),
        "gpu-nightly": ("the regular cadence is not one of the stage's cadences (nightly)",)}),
    ("pull_request", ["run-ci", "extra two"], None, {
        "cpu": (), "cpu-extra": ("the PR lacks the label run-ci-extra, which the stage requires (requires_labels)",),
        "gpu": (), "gpu-extra": ("the PR lacks the label run-ci-extra, which the stage requires (requires_labels)",),
        "gpu-nightly": ("the regular cadence is not one of the stage's cadences (nightly)",)}),
    ("pull_request", ["run-ci", "run-ci-extra", "extra two", "nightly"], None, {
        "cpu": (), "cpu-extra": (), "gpu": (), "gpu-extra": (), "gpu-nightly": ()}),
    ("workflow_dispatch", [], None, {
        "cpu": (), "cpu-extra": (), "gpu": (), "gpu-extra": (),
        "gpu-nightly": ("the regular cadence is not one of the stage's cadences (nightly)",)}),
    ("schedule", [], "0 1 * * *", {
        "cpu": ("not in this schedule (cadences.schedules['0 1 * * *'] plans only cuda stages matching "
                "*-nightly, gpu)",),
        "cpu-extra": ("not in this schedule (cadences.schedules['0 1 * * *'] plans only cuda stages matching "
                      "*-nightly, gpu)",),
        "gpu": (),
        "gpu-extra": ("not in this schedule (cadences.schedules['0 1 * * *'] plans only cuda stages matching "
                      "*-nightly, gpu)",),
        "gpu-nightly": ()}),
])
def test_held_back(event, labels, schedule, expected):
    assert gated(event, labels, schedule) == expected


def test_gate_labels_are_kept_raw_and_do_not_warn():
    p = resolve(Trigger(event="pull_request", labels=("run-ci", "run-ci-extra", "run-ci-nosuch", "run-ci")),
                GATED, LABELS)
    assert p.pr_labels == ("run-ci", "run-ci-extra", "run-ci-nosuch")
    assert p.raw_labels == ("run-ci-extra", "run-ci-nosuch")  # canonical, as before
    assert p.warnings == ("PR label run-ci-nosuch names no known label or scope; it selects nothing",)


@pytest.mark.parametrize("cadence, nightly_only", [
    ("regular", False), ("nightly", True), ("weekly", True), ("release", False)])
def test_nightly_only_splits_nightly_and_weekly_runs(cadence, nightly_only):
    p = resolve(Trigger(event="workflow_call", cadence=cadence), GATED, LABELS)
    assert p.nightly_only is nightly_only
    assert resolve(Trigger(event="workflow_call", cadence=cadence), SPEC, LABELS).nightly_only is False
    per_commit, nightly, disabled = reg(), reg(nightly=True), reg(disabled="broken")
    split = f"not nightly; the {cadence} cadence selects only nightly tests (cadences.nightly_selects: nightly_only)"
    assert nightly_split(per_commit, p) == (split if nightly_only else None)
    assert (selects(per_commit, p), why_not(per_commit, p) if nightly_only else None) == (
        (False, split) if nightly_only else (True, None))
    assert nightly_split(nightly, p) is None and selects(nightly, p) is (cadence != "regular")
    assert nightly_split(disabled, p) is None and why_not(disabled, p) == "disabled: broken"


# -- exclusion means exclusion ----------------------------------------------------------------

MEGA_LONG = Registration("gpu-megatron-long", 1, "cuda", "gpu", 1, labels=("megatron", "long"))


@pytest.mark.parametrize("config, trigger, selected, why_not", [
    # The nightly cadence includes megatron but excludes long: [megatron, long] is not its to run.
    (SPEC, Trigger("schedule", schedule=NIGHTLY_CRON), False, "carries long, which the nightly cadence excludes"),
    (SPEC, Trigger("pull_request", labels=("nightly",)), False, "carries long, which the nightly cadence excludes"),
    (SPEC, Trigger("pull_request", labels=("run-ci-image",)), False, "carries long, which run-ci-image excludes"),
    # An explicit request for one of its labels still selects it, whichever label it names.
    (SPEC, Trigger("pull_request", labels=("nightly", "run-ci-long")), True, None),
    (SPEC, Trigger("pull_request", labels=("nightly", "run-ci-megatron")), True, None),
    (SPEC, Trigger("pull_request", labels=("run-ci-image", "run-ci-megatron")), True, None),
    # Broad inclusions that exclude nothing of it still take it in.
    (SPEC, Trigger("schedule", schedule=WEEKLY_CRON), True, None),
    (SPEC, Trigger("pull_request", labels=("run-ci-all",)), True, None),
    (SPEC, Trigger("pull_request", labels=("run-ci-all", "run-ci-image")), True, None),  # run-ci-all wins
    # Of two requested scopes, one that excludes none of its labels selects it.
    (ALT, Trigger("pull_request", labels=("run-ci-image", "run-ci-gpu")), True, None),
    (ALT, Trigger("pull_request", labels=("run-ci-image",)), False, "carries long, which run-ci-image excludes"),
    (ALT, Trigger("pull_request", labels=("nightly",)), False, "carries long, which the nightly cadence excludes"),
    # Nothing includes it at all: the old reason.
    (SPEC, Trigger("pull_request"), False, "needs one of: megatron, long"),
])
def test_a_broad_inclusion_never_selects_a_test_carrying_a_label_it_excludes(config, trigger, selected, why_not):
    p = resolve(trigger, config, LABELS)
    assert is_selected(MEGA_LONG, p) is selected
    if why_not is not None:
        assert why_not_selected(MEGA_LONG, p) == why_not


def test_each_broad_inclusion_in_effect_keeps_what_it_excludes():
    assert resolve(Trigger("pull_request", labels=("nightly",)), SPEC, LABELS).broad == (
        ("the nightly cadence", ("long",)),)
    assert resolve(Trigger("pull_request", labels=("run-ci-image", "run-ci-gpu")), ALT, LABELS).broad == (
        ("run-ci-image", ("long",)), ("run-ci-gpu", ("sglang",)))
    assert resolve(Trigger("schedule", schedule=WEEKLY_CRON), SPEC, LABELS).broad == (("the weekly cadence", ()),)
    assert resolve(Trigger("pull_request", labels=("run-ci-megatron",)), SPEC, LABELS).broad == ()


def test_a_path_rule_label_selects_like_an_explicit_request():
    p = resolve(Trigger("pull_request", labels=("run-ci-image",)), SPEC, LABELS)
    assert not is_selected(MEGA_LONG, p)
    # long is excluded by the scope; a rule's auto-selection of long names it, as run-ci-long would.
    assert is_selected(MEGA_LONG, p.with_labels([("long", "a change to src/long.py")]))
    # megatron is already the scope's: auto-selecting it again adds nothing.
    assert not is_selected(MEGA_LONG, p.with_labels([("megatron", "a change to src/megatron.py")]))


def test_both_exclusions_are_named_when_two_sources_exclude():
    two = Registration("x", 1, "cuda", "gpu", 1, labels=("megatron", "long", "sglang"))
    p = resolve(Trigger("pull_request", labels=("run-ci-image", "run-ci-gpu")), ALT, LABELS)
    assert not is_selected(two, p)
    assert why_not_selected(two, p) == ("carries long, which run-ci-image excludes; "
                                        "carries sglang, which run-ci-gpu excludes")
