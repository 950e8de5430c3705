"""`cadences:` (`ci_policy.config.cadences`): which scheduled run is which cadence."""

from __future__ import annotations

import pytest
from config_cases import VALID, coded, coded_err, stages

from ci_policy.config.cadences import CADENCES, CADENCES_TABLE, Cadences, Schedule
from ci_policy.config.fields import FrozenMap
from ci_policy.config.top import parse_config


def test_no_cadences_section_means_no_schedules_and_no_exclusions():
    assert CADENCES_TABLE.default("schedules") == FrozenMap()
    assert CADENCES_TABLE.default("nightly_exclude") == ()
    cadences = parse_config(VALID).cadences
    assert cadences == Cadences(schedules=FrozenMap(), nightly_exclude=(), line=None)
    assert cadences.for_cron("0 4 * * *") is None


def test_schedules_map_cron_expressions_to_cadences():
    text = VALID + ("cadences:\n"
                    "  schedules:\n"
                    "    '0 4 * * *': nightly\n"
                    "    '0 6 * * 0': weekly\n"
                    "  nightly_exclude: [slow, big]\n")
    cadences = parse_config(text).cadences
    # `line` is where the section's mapping starts (its first key), the line errors about it point at.
    assert cadences == Cadences(schedules=FrozenMap({"0 4 * * *": "nightly", "0 6 * * 0": "weekly"}),
                                nightly_exclude=("slow", "big"), line=7)
    assert cadences.for_cron("0 6 * * 0") == "weekly"
    assert cadences.for_cron("0 5 * * *") is None
    assert CADENCES == ("regular", "nightly", "weekly", "release")


@pytest.mark.parametrize("section, needle, message, code, hint", [
    ("cadences: {schedules: {'0 4 * * *': daily}}\n", "daily",
     "cadences.schedules['0 4 * * *']: expected one of regular, nightly, weekly, release, got 'daily'",
     "CP105", None),
    ("cadences: {schedules: {'0 4 * *': nightly}}\n", "'0 4",
     "cadences.schedules['0 4 * *']: expected a cron expression of 5 fields, as in the workflow's "
     "`on.schedule[].cron`", "CP105", None),
    ("cadences: {nightly_exclude: slow}\n", "slow",
     "cadences.nightly_exclude: expected a list, got a string ('slow')", "CP104", None),
    ("cadences: {nightly_exclude: [a, a]}\n", "a]",
     "cadences.nightly_exclude[1]: duplicate entry 'a'", "CP106", None),
    ("cadences: {nightly_exlude: [slow]}\n", "nightly",
     "cadences.nightly_exlude: unknown key; did you mean 'nightly_exclude'?", "CP102",
     "allowed keys here: merge_group, nightly_exclude, nightly_selects, schedules"),
])
def test_invalid_cadences(section, needle, message, code, hint):
    text = VALID + section
    assert coded(text) == [coded_err(text, needle, message, code, hint)]


SCHEDULED = stages("{name: cpu, backend: cpu}", "{name: nightly-gpu, backend: cuda, runs_on: [h200]}",
                   "{name: amd, backend: rocm, runs_on: [mi350]}", "{name: ext-amd, backend: rocm, external: true}")


def test_a_schedule_may_choose_stages_by_backend_and_glob():
    text = SCHEDULED + ("cadences:\n"
                        "  schedules:\n"
                        "    '0 3 * * *': {cadence: nightly, stages: ['nightly-*']}\n"
                        "    '0 */6 * * *': {cadence: regular, backends: [rocm]}\n"
                        "    '0 5 * * *': {cadence: weekly, backends: [cuda, rocm], stages: ['*gpu', amd]}\n"
                        "    '0 6 * * *': {cadence: release}\n"
                        "    '0 4 * * 6': weekly\n"
                        "  nightly_selects: nightly_only\n"
                        "  merge_group: nightly\n")
    cadences = parse_config(text).cadences
    nightly = Schedule(cron="0 3 * * *", cadence="nightly", stages=("nightly-*",), line=11)
    amd = Schedule(cron="0 */6 * * *", cadence="regular", backends=("rocm",), line=12)
    both = Schedule(cron="0 5 * * *", cadence="weekly", backends=("cuda", "rocm"), stages=("*gpu", "amd"), line=13)
    plain = Schedule(cron="0 6 * * *", cadence="release", line=14)
    assert cadences == Cadences(
        schedules=FrozenMap({"0 3 * * *": nightly, "0 */6 * * *": amd, "0 5 * * *": both, "0 6 * * *": plain,
                             "0 4 * * 6": "weekly"}),
        nightly_selects="nightly_only", merge_group="nightly", line=10)
    assert [cadences.for_cron(c) for c in ("0 3 * * *", "0 */6 * * *", "0 6 * * *", "0 4 * * 6", "1 1 * * *")] == [
        "nightly", "regular", "release", "weekly", None]
    # A mapping that chooses nothing plans every stage, as a plain cadence name does.
    assert [cadences.schedule_for(c) for c in ("0 3 * * *", "0 */6 * * *", "0 6 * * *", "0 4 * * 6")] == [
        nightly, amd, None, None]
    assert [s.name for s in parse_config(text).stages if both.plans(s.name, s.backend)] == ["nightly-gpu", "amd"]
    assert (nightly.describe(), amd.describe(), both.describe()) == (
        "stages matching nightly-*", "rocm stages", "cuda, rocm stages matching *gpu, amd")


def test_defaults_of_the_selection_keys():
    assert (CADENCES_TABLE.default("nightly_selects"), CADENCES_TABLE.default("merge_group")) == ("all", "regular")
    assert parse_config(VALID).stages[0].cadences == CADENCES


def test_stage_cadences():
    text = stages("{name: cpu, backend: cpu, cadences: [nightly, weekly]}")
    assert parse_config(text).stages[0].cadences == ("nightly", "weekly")


@pytest.mark.parametrize("section, needle, message, code, hint", [
    ("cadences: {schedules: {'0 3 * * *': {cadence: nightly, stages: ['nightly-*', 'gpu-*']}}}\n", "'gpu-*'",
     "cadences.schedules['0 3 * * *'].stages[1]: 'gpu-*' matches no stage", "CP105",
     "a glob matches whole stage names, e.g. 'nightly-*'"),
    ("cadences: {schedules: {'0 3 * * *': {cadence: nightly, stages: ['nightly']}}}\n", "'nightly'",
     "cadences.schedules['0 3 * * *'].stages[0]: 'nightly' matches no stage", "CP105",
     "a glob matches whole stage names, e.g. 'nightly-*'"),
    ("cadences: {schedules: {'0 3 * * *': {cadence: nightly, backends: [amd]}}}\n", "amd]",
     "cadences.schedules['0 3 * * *'].backends[0]: expected one of cpu, cuda, rocm, got 'amd'", "CP105",
     "declare it in the configuration: backends: {amd: {accelerator: true}}"),
    ("cadences: {schedules: {'0 3 * * *': {cadence: nightly, backends: [rocm, rocm]}}}\n", "rocm]",
     "cadences.schedules['0 3 * * *'].backends[1]: duplicate entry 'rocm'", "CP106", None),
    ("cadences: {schedules: {'0 3 * * *': {cadence: nightly, backends: [cuda], stages: [amd]}}}\n", "{cadence",
     "cadences.schedules['0 3 * * *']: plans no stage: no stage that is not external is one of the cuda stages "
     "matching amd", "CP108", "name backends and stage globs that some stage matches"),
    ("cadences: {schedules: {'0 3 * * *': {cadence: nightly, stages: [ext-*]}}}\n", "{cadence",
     "cadences.schedules['0 3 * * *']: plans no stage: no stage that is not external is one of the stages "
     "matching ext-*", "CP108", "name backends and stage globs that some stage matches"),
    ("cadences: {schedules: {'0 3 * * *': {stages: [amd]}}}\n", "{stages",
     "cadences.schedules['0 3 * * *'].cadence: required key is missing", "CP103", None),
    ("cadences: {schedules: {'0 3 * * *': {cadence: daily}}}\n", "daily",
     "cadences.schedules['0 3 * * *'].cadence: expected one of regular, nightly, weekly, release, got 'daily'",
     "CP105", None),
    ("cadences: {schedules: {'0 3 * * *': {cadence: nightly, stage: [amd]}}}\n", "stage:",
     "cadences.schedules['0 3 * * *'].stage: unknown key; did you mean 'stages'?", "CP102",
     "allowed keys here: backends, cadence, stages"),
    ("cadences: {schedules: {'0 3 * * *': {cadence: nightly, stages: []}}}\n", "[]",
     "cadences.schedules['0 3 * * *'].stages: must not be empty", "CP105", None),
    ("cadences: {nightly_selects: nightly}\n", "nightly}",
     "cadences.nightly_selects: expected one of all, nightly_only, got 'nightly'", "CP105", None),
    ("cadences: {merge_group: hourly}\n", "hourly",
     "cadences.merge_group: expected one of regular, nightly, weekly, release, got 'hourly'", "CP105", None),
])
def test_invalid_schedules_and_selection_keys(section, needle, message, code, hint):
    text = SCHEDULED + section
    assert coded(text) == [coded_err(text, needle, message, code, hint)]


@pytest.mark.parametrize("stage, needle, message, code", [
    ("{name: cpu, backend: cpu, cadences: []}", "[]", "stages[0].cadences: must not be empty", "CP105"),
    ("{name: cpu, backend: cpu, cadences: [daily]}", "daily",
     "stages[0].cadences[0]: expected one of regular, nightly, weekly, release, got 'daily'", "CP105"),
    ("{name: cpu, backend: cpu, cadences: [nightly, nightly]}", "nightly]",
     "stages[0].cadences[1]: duplicate entry 'nightly'", "CP106"),
    ("{name: cpu, backend: cpu, cadences: nightly}", "nightly",
     "stages[0].cadences: expected a list, got a string ('nightly')", "CP104"),
])
def test_invalid_stage_cadences(stage, needle, message, code):
    text = stages(stage)
    assert coded(text) == [coded_err(text, needle, message, code)]


def test_a_schedule_is_not_checked_against_stages_that_are_wrong():
    # The stage's own error is reported; the schedule has nothing to be checked against.
    text = (stages("{name: cpu, backend: gpu}")
            + "cadences: {schedules: {'0 3 * * *': {cadence: nightly, stages: [x]}}}\n")
    assert [e[3] for e in coded(text)] == ["stages[0].backend: expected one of cpu, cuda, rocm, got 'gpu'"]


def test_a_schedule_mapping_with_only_a_cadence_is_the_plain_form_even_when_every_stage_is_external():
    # `cron: weekly` is accepted with only external stages, so `cron: {cadence: weekly}` must be too.
    external = stages("{name: ext-amd, backend: rocm, external: true}")
    plain = parse_config(external + "cadences: {schedules: {'0 3 * * *': weekly}}\n")
    spelled = parse_config(external + "cadences: {schedules: {'0 3 * * *': {cadence: weekly}}}\n")
    assert plain.cadences.schedules["0 3 * * *"] == "weekly"
    assert spelled.cadences.schedules["0 3 * * *"] == Schedule(cron="0 3 * * *", cadence="weekly", line=6)
    narrowed = external + "cadences: {schedules: {'0 3 * * *': {cadence: weekly, backends: [rocm]}}}\n"
    assert [e[3] for e in coded(narrowed)] == [
        "cadences.schedules['0 3 * * *']: plans no stage: no stage that is not external is one of the rocm stages"]
