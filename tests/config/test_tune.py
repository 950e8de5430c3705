"""`tune:` (`ci_policy.config.tune`): how recorded timings become est_time proposals."""

from __future__ import annotations

import pytest
from config_cases import VALID, coded, coded_err

from ci_policy.config.top import parse_config
from ci_policy.config.tune import TUNE_TABLE, TuneConfig

KEYS = ("safety", "quantile", "min_samples_for_quantile", "deadband")


def test_no_tune_section_means_the_defaults():
    assert [TUNE_TABLE.default(k) for k in KEYS] == [1.25, 0.9, 5, 0.2]
    assert parse_config(VALID).tune == TuneConfig(safety=1.25, quantile=0.9, min_samples_for_quantile=5,
                                                  deadband=0.2)


@pytest.mark.parametrize("section, expected", [
    ("tune: {safety: 1.5, quantile: 0.5, min_samples_for_quantile: 3, deadband: 0.1}\n",
     TuneConfig(safety=1.5, quantile=0.5, min_samples_for_quantile=3, deadband=0.1)),
    # The bounds themselves are accepted: safety 1, quantile 1, one sample, no deadband.
    ("tune: {safety: 1, quantile: 1, min_samples_for_quantile: 1, deadband: 0}\n",
     TuneConfig(safety=1, quantile=1, min_samples_for_quantile=1, deadband=0)),
    ("tune: {deadband: 0.99}\n", TuneConfig(deadband=0.99)),
])
def test_accepted_tune_values(section, expected):
    assert parse_config(VALID + section).tune == expected


@pytest.mark.parametrize("section, needle, message", [
    ("tune: {safety: 0.9}\n", "0.9", "tune.safety: must be at least 1, got 0.9"),
    ("tune: {quantile: 0}\n", "0}", "tune.quantile: must be greater than 0, got 0"),
    ("tune: {quantile: 1.5}\n", "1.5", "tune.quantile: must be at most 1, got 1.5"),
    ("tune: {deadband: 1}\n", "1}", "tune.deadband: must be below 1 (a fraction), got 1"),
    ("tune: {deadband: -0.1}\n", "-0.1", "tune.deadband: must be at least 0, got -0.1"),
    ("tune: {min_samples_for_quantile: 0}\n", "0}", "tune.min_samples_for_quantile: must be at least 1, got 0"),
])
def test_invalid_tune_value(section, needle, message):
    text = VALID + section
    assert coded(text) == [coded_err(text, needle, message, "CP105")]


def test_both_range_errors_of_tune_are_reported():
    text = VALID + "tune: {quantile: 2, deadband: 1}\n"
    assert coded(text) == [coded_err(text, "2,", "tune.quantile: must be at most 1, got 2", "CP105"),
                           coded_err(text, "1}", "tune.deadband: must be below 1 (a fraction), got 1", "CP105")]
