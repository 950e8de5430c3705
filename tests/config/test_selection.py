"""`selection:` (`ci_policy.config.selection`): how the diff of a pull request selects and prunes stages."""

from __future__ import annotations

import pytest
from config_cases import VALID, coded, coded_err

from ci_policy.config import EXPLICIT_MODES, Rule, Selection, parse_config
from ci_policy.config.selection import SELECTION_TABLE


def test_no_selection_section_means_the_defaults():
    assert [SELECTION_TABLE.default(k) for k in ("no_gpu_paths", "rules", "explicit")] == [(), (), "run"]
    assert parse_config(VALID).selection == Selection(no_gpu_paths=(), rules=(), explicit="run", line=None)
    assert EXPLICIT_MODES == ("run", "prune")


def test_every_selection_key_set():
    text = VALID + ("selection:\n"
                    "  no_gpu_paths: ['docs/**', '*.md']\n"
                    "  rules:\n"
                    "    - {paths: ['ci_policy/**'], labels: [core]}\n"
                    "    - paths: [kernels/**, csrc/**]\n"
                    "      labels: [kernels, core]\n"
                    "  explicit: prune\n")
    config = parse_config(text)
    assert config.selection == Selection(
        no_gpu_paths=("docs/**", "*.md"),
        rules=(Rule(paths=("ci_policy/**",), labels=("core",), line=9),
               Rule(paths=("kernels/**", "csrc/**"), labels=("kernels", "core"), line=10)),
        explicit="prune",
        line=7,
    )
    assert config.label_references() == (
        ("core", "selection.rules[0].labels", 9),
        ("kernels", "selection.rules[1].labels", 10),
        ("core", "selection.rules[1].labels", 10),
    )


@pytest.mark.parametrize("section, needle, message, code, hint", [
    ("selection: {explicit: skip}\n", "skip",
     "selection.explicit: expected one of run, prune, got 'skip'", "CP105", None),
    ("selection: {no_gpu_paths: ['[']}\n", "'['",
     "selection.no_gpu_paths[0]: invalid glob '[': unclosed '['", "CP105", None),
    ("selection:\n  rules:\n    - {paths: [], labels: [a]}\n", "[],",
     "selection.rules[0].paths: must not be empty", "CP105", None),
    ("selection:\n  rules:\n    - {paths: [a]}\n", "{paths",
     "selection.rules[0].labels: required key is missing", "CP103", None),
    ("selection: {rules: {paths: [a]}}\n", "{paths",
     "selection.rules: expected a list, got a mapping", "CP104", None),
])
def test_invalid_selection(section, needle, message, code, hint):
    text = VALID + section
    assert coded(text) == [coded_err(text, needle, message, code, hint)]
