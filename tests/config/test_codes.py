"""Diagnostic codes of the configuration loader: one per kind of problem, CP100-CP199."""

from __future__ import annotations

import os
import re

import pytest
from helpers import MINIMAL_CONFIG

from ci_policy import __version__
from ci_policy.config.codes import CONFIG_CODES, SCHEMA_CODES
from ci_policy.config.load import load_config
from ci_policy.config.top import parse_config
from ci_policy.errors import InputError, InputErrors

P = ".github/ci-policy.yml"
VALID = "version: 1\ndiscovery:\n  roots: [tests]\nstages:\n  - {name: cpu, backend: cpu}\n"


def coded(text: str) -> list[tuple[str, str | None]]:
    """(message, code) of every error `parse_config` raises for `text`."""
    try:
        parse_config(text, P)
    except InputErrors as exc:
        return [(e.message, e.code) for e in exc.errors]
    except InputError as exc:
        return [(exc.message, exc.code)]
    pytest.fail("no error raised")


ORDERED = "version: 1\ndiscovery:\n  roots: [tests]\nstages:\n" + "".join(
    f"  - {{{{name: {n}, backend: cpu{{{n}}}}}}}\n" for n in "abc")


def test_the_code_table():
    assert list(CONFIG_CODES) == sorted(CONFIG_CODES)
    names = [name for name, _example in CONFIG_CODES.values()]
    assert len(set(names)) == len(names)
    for code, (name, example) in CONFIG_CODES.items():
        assert re.fullmatch(r"CP1\d\d", code)
        assert re.fullmatch(r"config-[a-z]+(-[a-z]+)*", name)
        assert example and "\n" not in example
    assert set(SCHEMA_CODES.values()) <= set(CONFIG_CODES)


@pytest.mark.parametrize("text, expected", [
    # CP101: not YAML the loader accepts.
    ("version: [1\n", [("invalid YAML: expected ',' or ']', but got '<stream end>'", "CP101")]),
    (VALID.replace("[tests]", "&r [tests]"),
     [("invalid YAML: anchors are not allowed in ci-policy configuration", "CP101")]),
    ("version: " + "[" * 100 + "]" * 100 + "\n",
     [("invalid YAML: nesting deeper than 64 levels is not allowed", "CP101")]),
    # CP102: a key the format does not know.
    ("versoin: 1\n" + VALID, [("versoin: unknown key; did you mean 'version'?", "CP102")]),
    (VALID.replace("backend: cpu}", "backend: cpu, partiton: 2}"),
     [("stages[0].partiton: unknown key; did you mean 'partitions'?", "CP102")]),
    # CP103: a key that must be there.
    ("", [("configuration is empty", "CP103")]),
    ("version: 1\nstages:\n  - {name: cpu, backend: cpu}\n", [("discovery: required key is missing", "CP103")]),
    (VALID.replace("backend: cpu}", "backend: cuda}"),
     [("stages[0].runs_on: required for cuda stages that are not external", "CP103")]),
    # CP104: a value of the wrong type.
    (VALID.replace("version: 1", "version: true"),
     [("version: expected an integer, got a boolean ('true')", "CP104")]),
    (VALID + "scopes: [run-ci-all]\n", [("scopes: expected a mapping, got a list", "CP104")]),
    (VALID + "1: x\n", [("(top level): keys must be strings, got an integer ('1')", "CP104")]),
    (VALID.replace("version: 1", "version: !!int x"),
     [("version: unsupported YAML value: 'x' is not a valid int", "CP104")]),
    # CP105: a value of the right type that is not allowed.
    (VALID.replace("backend: cpu}", "backend: tpu}"),
     [("stages[0].backend: expected one of cpu, cuda, rocm, got 'tpu'", "CP105")]),
    (VALID.replace("backend: cpu}", "backend: cpu, partitions: 0}"),
     [("stages[0].partitions: must be at least 1, got 0", "CP105")]),
    ("labels_file: /etc/labels.py\n" + VALID,
     [("labels_file: '/etc/labels.py' is absolute; paths are relative to the repository root", "CP105")]),
    ("requires: banana\n" + VALID, [("requires: 'banana' is not a valid version specifier", "CP105")]),
    (VALID + "cadences:\n  schedules: {'0 4 * *': nightly}\n",
     [("cadences.schedules['0 4 * *']: expected a cron expression of 5 fields, as in the workflow's "
       "`on.schedule[].cron`", "CP105")]),
    (VALID + "scopes: {all: }\n", [("scopes.all: a scope must be a PR label run-ci-<name>, got 'all'", "CP105")]),
    (VALID + "tune: {quantile: 2}\n", [("tune.quantile: must be at most 1, got 2", "CP105")]),
    (VALID + "runner: {retry: {never: ['(']}}\n",
     [("runner.retry.never[0]: '(' is not a valid regular expression: missing ), unterminated subpattern "
       "at position 0", "CP105")]),
    # CP106: something stated twice.
    (VALID + "version: 1\n", [("version: duplicate key (first defined on line 1)", "CP106")]),
    (VALID + "  - {name: cpu, backend: cpu}\n", [("stages[1].name: duplicate stage name 'cpu' (also stages[0])",
                                                  "CP106")]),
    (VALID.replace("[tests]", "[tests, tests/]"), [("discovery.roots[1]: duplicate root 'tests'", "CP106")]),
    (VALID + "cadences: {nightly_exclude: [a, a]}\n",
     [("cadences.nightly_exclude[1]: duplicate entry 'a'", "CP106")]),
    # CP107: a file this ci_policy does not support.
    (VALID.replace("version: 1", "version: 2"),
     [("version: unsupported version 2; this ci_policy reads version 1", "CP107")]),
    ("requires: '>=99'\n" + VALID,
     [(f"requires: this repository requires ci_policy >=99, but ci_policy {__version__} is installed", "CP107")]),
    # CP108: keys that contradict each other.
    (VALID.replace("[tests]", "[tests]\n  implicit:\n    - {root: other, backend: cpu, suite: cpu, est_time: 1}"),
     [("discovery.implicit[0].root: 'other' is not inside any discovery root", "CP108")]),
    (VALID.replace("[tests]", "[tests]\n  implicit:\n    - {root: tests, backend: cpu, suite: gpu, est_time: 1}"),
     [("discovery.implicit[0].suite: 'gpu' is not a configured cpu stage (configured cpu stages: cpu)",
       "CP108")]),
    (VALID + "gates: {window: 5, min_samples: 7}\n",
     [("gates.min_samples: must not exceed gates.window (5), got 7", "CP108")]),
    (VALID + "gates: {capture: [a], defaults: {b: {steps: all, constraint: {rel_up: 1, rel_down: 1}}}}\n",
     [("gates.defaults['b']: default gate key 'b' is not captured", "CP108")]),
    (VALID + "gates: {require: [{files: x.py, metric_keys: ['a/{version}']}]}\n",
     [("gates.require[0].metric_keys: 'a/{version}' uses {version} but no versions are listed", "CP108")]),
    (ORDERED.format(a="", b=", after: [a]", c=", after: [gpu]"),
     [("stages[2].after[0]: names no stage: 'gpu'", "CP109")]),
    (ORDERED.format(a=", after: [c]", b=", after: [a]", c=", after: [x, b]"),
     [("stages[2].after[0]: names no stage: 'x'", "CP109")]),
    (ORDERED.format(a="", b=", after: [a]", c=", after: [ext]") + "  - {name: ext, backend: cpu, external: true}\n",
     [("stages[2].after[0]: names the external stage 'ext': this pipeline does not run it, so no wave can wait "
       "for it", "CP109")]),
    (ORDERED.format(a="", b="", c="") + "  - {name: ext, backend: cpu, external: true, after: [a]}\n",
     [("stages[3].after: has no effect: an external stage is run by another system, never by this pipeline's "
       "waves", "CP108")]),
    # CP110: stages waiting for each other, reported once, at the first of them in the file.
    (ORDERED.format(a=", after: [c]", b=", after: [a]", c=", after: [b]"),
     [("stages[0].after[0]: the stages wait for each other in a cycle: a -> c -> b -> a", "CP110")]),
    (ORDERED.format(a="", b=", after: [a, b]", c=""),
     [("stages[1].after[1]: the stages wait for each other in a cycle: b -> b", "CP110")]),
    # CP111: what GitHub would refuse: more waves than the pipeline's wave jobs, a wave over 256 jobs.
    (ORDERED.format(a="", b=", after: [a]", c=", after: [b]") + "  - {name: d, backend: cpu, after: [c]}\n"
     "  - {name: e, backend: cpu, after: [d, a]}\n",
     [("stages[4].after: puts stage 'e' in wave 4; the pipeline runs at most 4 waves (waves 0 to 3), one job each, "
       "fixed before the run starts", "CP111")]),
    (ORDERED.format(a="", b="", c=", after: [a]") + "".join(f"  - {{name: s{i}, backend: cpu}}\n" for i in range(255)),
     [("stages: wave 0 holds 257 stages that are not external, each of which needs a job of its own; GitHub runs "
       "at most 256 jobs per matrix (Actions limits, \"Job matrix\"), and a wave is one matrix", "CP111")]),
    # Each variant is a stage of the wave: 2 + 128 * 2 jobs.
    (ORDERED.format(a="", b="", c=", after: [a]") + "".join(
        f"  - {{name: s{i}, backend: cpu, variants: [{{name: a, runs_on: [x]}}, {{name: b, runs_on: [y]}}]}}\n"
        for i in range(128)),
     [("stages: wave 0 holds 258 stages (each variant a stage) that are not external, each of which needs a job of "
       "its own; GitHub runs at most 256 jobs per matrix (Actions limits, \"Job matrix\"), and a wave is one matrix",
       "CP111")]),
])
def test_representative_errors_of_each_kind(text, expected):
    assert coded(text) == expected


def load_codes(repo, config=None) -> list[tuple[str, str | None]]:
    with pytest.raises(InputError) as info:
        load_config(repo, config)
    return [(info.value.message, info.value.code)]


def test_unreadable_files_inside_the_checkout_are_checkout_reads_outside_cp100(tmp_path):
    assert load_codes(tmp_path) == [(f"configuration file {P} does not exist", "CP402")]
    (tmp_path / ".github").mkdir()
    os.symlink("/etc/passwd", tmp_path / P)
    assert load_codes(tmp_path) == [
        (f"configuration file {P} is a symlink; ci-policy refuses symlinks in a checkout", "CP401")]
    repo = tmp_path / "repo"
    repo.mkdir()
    missing = str(tmp_path / "nowhere.yml")
    assert load_codes(repo, missing) == [
        (f"configuration file {missing} cannot be read: No such file or directory", "CP100")]
    bad = tmp_path / "bad.yml"
    bad.write_bytes(b"version: \xff\n")
    assert load_codes(repo, str(bad)) == [(f"configuration file {bad} is not valid UTF-8", "CP100")]


def test_errors_found_in_a_loaded_file_keep_their_codes(tmp_path):
    (tmp_path / ".github").mkdir()
    (tmp_path / P).write_text(MINIMAL_CONFIG.replace("version: 1", "version: 3"))
    with pytest.raises(InputErrors) as info:
        load_config(tmp_path)
    assert [(e.message, e.code) for e in info.value.errors] == [
        ("version: unsupported version 3; this ci_policy reads version 1", "CP107")]
