"""`cadences:` (`ci_policy.config.cadences`): which scheduled run is which cadence."""

from __future__ import annotations

import pytest
from config_cases import VALID, coded, coded_err

from ci_policy.config import CADENCES, Cadences, FrozenMap, parse_config
from ci_policy.config.cadences import CADENCES_TABLE


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
