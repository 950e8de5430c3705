"""`scopes:` (`ci_policy.config.scopes`): broad-scope PR labels, every known label minus `exclude`."""

from __future__ import annotations

import pytest
from config_cases import VALID, coded, coded_err

from ci_policy.config.scopes import SCOPE, Scope
from ci_policy.config.top import parse_config


def test_no_scopes_section_means_no_scopes():
    assert SCOPE.default("exclude") == ()
    config = parse_config(VALID)
    assert config.scopes == ()
    assert config.scope("run-ci-all") is None


def test_scopes_in_file_order_with_their_exclusions():
    text = VALID + "scopes:\n  run-ci-all:\n  run-ci-most: {exclude: [slow, big]}\n  run-ci-none: {}\n"
    config = parse_config(text)
    assert config.scopes == (
        Scope(name="run-ci-all", exclude=(), line=7),
        Scope(name="run-ci-most", exclude=("slow", "big"), line=8),
        Scope(name="run-ci-none", exclude=(), line=9),
    )
    assert config.scope("run-ci-most") == Scope(name="run-ci-most", exclude=("slow", "big"), line=8)
    assert config.scope("run-ci-other") is None


@pytest.mark.parametrize("section, needle, message, code, hint", [
    ("scopes:\n  all:\n", "all",
     "scopes.all: a scope must be a PR label run-ci-<name>, got 'all'", "CP105", "write e.g. run-ci-all"),
    ("scopes:\n  run-ci-:\n", "run-ci-",
     "scopes.run-ci-: a scope must be a PR label run-ci-<name>, got 'run-ci-'", "CP105",
     "write e.g. run-ci-all"),
    ("scopes: [run-ci-all]\n", "[run-ci-all]", "scopes: expected a mapping, got a list", "CP104", None),
    ("scopes:\n  run-ci-all: {exclude: slow}\n", "slow",
     "scopes.run-ci-all.exclude: expected a list, got a string ('slow')", "CP104", None),
    ("scopes:\n  run-ci-all: {exlude: [a]}\n", "exlude",
     "scopes.run-ci-all.exlude: unknown key; did you mean 'exclude'?", "CP102", "allowed keys here: exclude"),
])
def test_invalid_scopes(section, needle, message, code, hint):
    text = VALID + section
    assert coded(text) == [coded_err(text, needle, message, code, hint)]
