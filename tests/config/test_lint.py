"""`lint:` (`ci_policy.config.lint`): per-path ignores of lint diagnostics."""

from __future__ import annotations

import pytest
from config_cases import VALID, coded, coded_err

from ci_policy.config.lint import LINT_TABLE, IgnoreRule, LintConfig, code_of
from ci_policy.config.top import parse_config


def test_no_lint_section_ignores_nothing():
    assert LINT_TABLE.default("ignore") == ()
    assert parse_config(VALID).lint == LintConfig(ignore=(), line=None)


def test_ignore_rules_take_codes_and_names():
    text = VALID + ("lint:\n"
                    "  ignore:\n"
                    "    - {paths: ['tests/ci/test/**'], codes: [CP201, marker-not-called]}\n")
    assert parse_config(text).lint == LintConfig(
        ignore=(IgnoreRule(paths=("tests/ci/test/**",), codes=("CP201", "CP202"), line=8),), line=7)


def test_code_of():
    assert [code_of(v) for v in ("CP201", "marker-not-module-level", "CP999", "nope")] == [
        "CP201", "CP201", None, None]


@pytest.mark.parametrize("section, needle, message, code", [
    ("lint: {ignore: [{paths: [a], codes: [CP299]}]}\n", "CP299",
     "lint.ignore[0].codes[0]: 'CP299' is not a diagnostic code or name of ci-policy lint "
     "(e.g. CP201 or marker-not-module-level)", "CP105"),
    ("lint: {ignore: [{paths: [a], codes: [config-unknown-key]}]}\n", "config-unknown-key",
     "lint.ignore[0].codes[0]: 'config-unknown-key' is a configuration diagnostic; fix the configuration "
     "instead of ignoring it", "CP105"),
    ("lint: {ignore: [{paths: ['['], codes: [CP201]}]}\n", "'['",
     "lint.ignore[0].paths[0]: invalid glob '[': unclosed '['", "CP105"),
    ("lint: {ignore: [{codes: [CP201]}]}\n", "{codes",
     "lint.ignore[0].paths: required key is missing", "CP103"),
    ("lint: {ignore: [{paths: [a], codes: []}]}\n", "[]}",
     "lint.ignore[0].codes: must not be empty", "CP105"),
    ("lint: {ignores: []}\n", "ignores",
     "lint.ignores: unknown key; did you mean 'ignore'?", "CP102"),
])
def test_invalid_lint_section(section, needle, message, code):
    text = VALID + section
    hint = "allowed keys here: ignore, workflows" if code == "CP102" else None
    assert coded(text) == [coded_err(text, needle, message, code, hint)]
