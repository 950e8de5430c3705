"""`selection:` (`ci_policy.config.selection`): how the diff of a pull request selects and prunes stages."""

from __future__ import annotations

import pytest
from config_cases import VALID, coded, coded_err

from ci_policy.config.selection import CHANGED_TESTS, EXPLICIT_MODES, SELECTION_TABLE, Rule, Selection
from ci_policy.config.top import parse_config


def test_no_selection_section_means_the_defaults():
    assert [SELECTION_TABLE.default(k) for k in ("no_gpu_paths", "rules", "explicit", "changed_tests")] == [
        (), (), "run", "own_stages"]
    assert parse_config(VALID).selection == Selection(no_gpu_paths=(), rules=(), explicit="run",
                                                      changed_tests="own_stages", line=None)
    assert EXPLICIT_MODES == ("run", "prune")
    assert CHANGED_TESTS == ("own_stages", "paths", "both")


@pytest.mark.parametrize("changed_tests", ["own_stages", "paths", "both"])
def test_changed_tests_is_read(changed_tests):
    config = parse_config(VALID + f"selection:\n  changed_tests: {changed_tests}\n")
    assert config.selection == Selection(changed_tests=changed_tests, line=7)


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
    ("selection: {changed_tests: all}\n", "all",
     "selection.changed_tests: expected one of own_stages, paths, both, got 'all'", "CP105", None),
    ("selection: {no_gpu_paths: ['[']}\n", "'['",
     "selection.no_gpu_paths[0]: invalid glob '[': unclosed '['", "CP105", None),
    ("selection:\n  rules:\n    - {paths: [], labels: [a]}\n", "[],",
     "selection.rules[0].paths: must not be empty", "CP105", None),
    ("selection:\n  rules:\n    - {paths: [a]}\n", "{paths",
     "selection.rules[0]: a rule needs labels or stages: the paths would affect nothing", "CP103",
     "add labels: [...] (tests to select) or stages: [...] (stages to affect)"),
    ("selection:\n  rules:\n    - {labels: [core]}\n", "{labels",
     "selection.rules[0].paths: required key is missing", "CP103", None),
    ("selection:\n  rules:\n    - {paths: [a], stages: [gpu-*]}\n", "gpu-*",
     "selection.rules[0].stages[0]: 'gpu-*' matches no configured stage", "CP105",
     "name a stage, or a glob such as 'jit-kernel-*' (fnmatch: `*`, `?`, `[...]`)"),
    ("selection:\n  rules:\n    - {paths: [a], stages: []}\n", "[]}",
     "selection.rules[0].stages: must not be empty", "CP105", None),
    ("selection:\n  rules:\n    - {paths: ['!'], stages: [cpu]}\n", "'!'",
     "selection.rules[0].paths[0]: invalid glob '!': matches nothing", "CP105", None),
    ("selection: {rules: {paths: [a]}}\n", "{paths",
     "selection.rules: expected a list, got a mapping", "CP104", None),
])
def test_invalid_selection(section, needle, message, code, hint):
    text = VALID + section
    assert coded(text) == [coded_err(text, needle, message, code, hint)]


def test_a_rule_may_target_stages_with_or_without_labels():
    text = ("version: 1\ndiscovery:\n  roots: [tests]\nstages:\n"
            "  - {name: jit-kernel-a, backend: cuda, runs_on: [r]}\n"
            "  - {name: jit-kernel-b, backend: cuda, runs_on: [r]}\n"
            "  - {name: cpu, backend: cpu}\n"
            "selection:\n"
            "  rules:\n"
            "    - {paths: ['pkg/jit_kernel/**'], stages: ['jit-kernel-*']}\n"
            "    - {paths: ['csrc/**'], labels: [core], stages: [cpu, 'jit-kernel-[ab]']}\n")
    rules = parse_config(text).selection.rules
    assert rules == (Rule(paths=("pkg/jit_kernel/**",), stages=("jit-kernel-*",), line=10),
                     Rule(paths=("csrc/**",), labels=("core",), stages=("cpu", "jit-kernel-[ab]"), line=11))
