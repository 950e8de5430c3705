"""`stages:` (`ci_policy.config.stages`): each stage's keys, defaults and errors."""

from __future__ import annotations

import textwrap

import pytest
from config_cases import HEAD, STAGE_KEYS_HINT, P, coded, coded_err, cpu_stage, err, errors, stages

from ci_policy.config.pull_request import PullRequest
from ci_policy.config.stages import MaxParallel, Stage
from ci_policy.config.top import parse_config

# -- accepted forms -------------------------------------------------------------------------


@pytest.mark.parametrize("backend, runner, diff_pruned", [
    ("cpu", "pytest", False),
    ("cuda", "python", True),
    ("rocm", "python", True),
])
def test_runner_and_diff_pruned_defaults_depend_on_backend(backend, runner, diff_pruned):
    config = parse_config(stages(f"{{name: s, backend: {backend}, runs_on: [r1]}}"))
    assert config.stages == (Stage(name="s", backend=backend, runs_on=("r1",), partitions=1, runner=runner,
                                   timeout_per_file=None, diff_pruned=diff_pruned, external=False,
                                   line=5),)


@pytest.mark.parametrize("backend", ["cuda", "rocm"])
def test_external_gpu_stage_needs_no_runs_on(backend):
    config = parse_config(stages(f"{{name: ext, backend: {backend}, external: true}}"))
    assert config.stages == (Stage(name="ext", backend=backend, runs_on=(), runner="python",
                                   diff_pruned=True, external=True, line=5),)


def test_cpu_stage_may_name_runners():
    config = parse_config(stages("{name: cpu, backend: cpu, runs_on: [ubuntu-latest]}"))
    assert config.stages == (cpu_stage(5, runs_on=("ubuntu-latest",)),)


def test_block_and_flow_styles_are_equivalent():
    flow = parse_config(stages("{name: g, backend: cuda, runs_on: [a, b], partitions: 2}"))
    block = parse_config(HEAD + textwrap.dedent("""\
        stages:
          - name: g
            backend: cuda
            runs_on:
              - a
              - b
            partitions: 2
        """))
    assert flow == block


# -- refused ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value, message", [
    ("[]", "stages: must not be empty"),
    ("{}", "stages: expected a list, got a mapping"),
    ("cpu", "stages: expected a list, got a string ('cpu')"),
])
def test_stages_must_be_a_non_empty_list(value, message):
    text = HEAD + f"stages: {value}\n"
    assert errors(text) == [(P, 4, 9, message, None)]


def test_stages_null():
    text = HEAD + "stages:\n"
    assert errors(text) == [(P, 4, 8, "stages: expected a list, got null", None)]


def test_stage_must_be_a_mapping():
    text = stages("cpu", "[cpu]")
    assert errors(text) == [
        (P, 5, 5, "stages[0]: expected a mapping, got a string ('cpu')", None),
        (P, 6, 5, "stages[1]: expected a mapping, got a list", None),
    ]


def test_stage_requires_name_and_backend():
    text = stages("{runs_on: [x]}")
    assert errors(text) == [
        (P, 5, 5, "stages[0].backend: required key is missing", None),
        (P, 5, 5, "stages[0].name: required key is missing", None),
    ]


def test_unknown_stage_key_suggests_the_closest():
    text = stages("{name: cpu, backend: cpu, partiton: 2}")
    assert errors(text) == [err(text, "partiton", "stages[0].partiton: unknown key; did you mean "
                                "'partitions'?", STAGE_KEYS_HINT)]


@pytest.mark.parametrize("name", ["-cpu", "_cpu", ".cpu", "a b", "cpu!", "ümlaut", "''"])
def test_stage_name_must_match_the_pattern(name):
    text = stages(f"{{name: {name}, backend: cpu}}")
    shown = repr(name.strip("'"))
    assert errors(text) == [(P, 5, 12, f"stages[0].name: {shown} is not a valid name "
                             "(expected [A-Za-z0-9][A-Za-z0-9_.-]*)", None)]


def test_stage_name_must_be_a_string():
    text = stages("{name: 1, backend: cpu}")
    assert errors(text) == [(P, 5, 12, "stages[0].name: expected a string, got an integer ('1')", None)]


def test_stage_names_are_unique():
    text = stages("{name: a, backend: cpu}", "{name: b, backend: cpu}", "{name: a, backend: cpu}",
                  "{name: a, backend: cpu}")
    assert errors(text) == [
        (P, 7, 12, "stages[2].name: duplicate stage name 'a' (also stages[0])", None),
        (P, 8, 12, "stages[3].name: duplicate stage name 'a' (also stages[0])", None),
    ]


def test_a_name_several_backends_configure_is_one_stage_per_backend_keyed_name_at_backend():
    config = parse_config(stages("{name: a, backend: cpu}", "{name: big, backend: cuda, runs_on: [h200]}",
                                 "{name: big, backend: rocm, runs_on: [mi325], after: [big@cuda]}",
                                 "{name: c, backend: rocm, runs_on: [mi325], after: [big@rocm, a]}"))
    assert [(s.name, s.backend, s.key, s.shared, s.runs_on, s.wave) for s in config.stages] == [
        ("a", "cpu", "a", False, (), 0),
        ("big", "cuda", "big@cuda", True, ("h200",), 0),
        ("big", "rocm", "big@rocm", True, ("mi325",), 1),
        ("c", "rocm", "c", False, ("mi325",), 2),
    ]
    assert config.stage("big") is None
    assert config.stage("big@rocm") == config.stage_of("rocm", "big") == config.stages[2]
    assert (config.key_of("cuda", "big"), config.key_of("cpu", "big"), config.key_of("cpu", "a")) == (
        "big@cuda", "big", "a")
    # A stage-name glob names the stages of every backend by name, or one of them by key.
    assert [s.key for s in config.stages if s.matches("big")] == ["big@cuda", "big@rocm"]
    assert [s.key for s in config.stages if s.matches("*@rocm")] == ["big@rocm"]


def test_after_is_a_name_or_a_name_at_backend():
    text = stages("{name: a, backend: cpu}", "{name: b, backend: cpu, after: ['a@@cpu', a@CPU]}")
    assert errors(text) == [
        (P, 6, 37, "stages[1].after[0]: 'a@@cpu' is not a stage name (expected NAME or NAME@BACKEND, NAME matching "
                   "[A-Za-z0-9][A-Za-z0-9_.-]*)", None),
        (P, 6, 47, "stages[1].after[1]: 'a@CPU' is not a stage name (expected NAME or NAME@BACKEND, NAME matching "
                   "[A-Za-z0-9][A-Za-z0-9_.-]*)", None),
    ]


DECLARE = "declare it in the configuration: backends: {{{}: {{accelerator: true}}}}"


@pytest.mark.parametrize("value, shown, hint", [
    ("tpu", "'tpu'", "did you mean 'cpu'? Otherwise, " + DECLARE.format("tpu")),
    ("gaudi", "'gaudi'", DECLARE.format("gaudi")),
    ("CUDA", "'CUDA'", "use one of cpu, cuda, rocm (a declared backend is named [a-z][a-z0-9_]*)"),
    ("1", "an integer ('1')", None),
    ("[cpu]", "a list", None),
    ("~", "null", None),
    ("2020-13-45", "an invalid timestamp ('2020-13-45')", None),
])
def test_stage_backend_must_be_known(value, shown, hint):
    text = stages(f"{{name: s, backend: {value}}}")
    assert errors(text) == [(P, 5, 24, f"stages[0].backend: expected one of cpu, cuda, rocm, got {shown}", hint)]


def test_the_error_names_the_stage_index():
    text = stages("{name: a, backend: cpu}", "{name: b, backend: cpu}", "{name: c, backend: cpu}",
                  "{name: d, backend: gpu}")
    assert errors(text) == [err(text, "gpu", "stages[3].backend: expected one of cpu, cuda, rocm, got 'gpu'",
                                "did you mean 'cpu'? Otherwise, " + DECLARE.format("gpu"))]


@pytest.mark.parametrize("backend", ["cuda", "rocm"])
@pytest.mark.parametrize("external", ["", ", external: false"])
def test_runs_on_is_required_for_non_external_gpu_stages(backend, external):
    text = stages(f"{{name: g, backend: {backend}{external}}}")
    assert errors(text) == [(P, 5, 5, f"stages[0].runs_on: required for {backend} stages that are not external",
                             "list the runner labels, e.g. runs_on: [h200, 4gpu]")]


@pytest.mark.parametrize("value, needle, message", [
    ("[]", "[]", "stages[0].runs_on: must not be empty"),
    ("h200", "h200", "stages[0].runs_on: expected a list, got a string ('h200')"),
    ("[h200, 1]", "1]", "stages[0].runs_on[1]: expected a string, got an integer ('1')"),
    ("[h200, h200]", "h200]", "stages[0].runs_on[1]: duplicate entry 'h200'"),
])
def test_invalid_runs_on(value, needle, message):
    text = stages(f"{{name: g, backend: cuda, runs_on: {value}}}")
    assert errors(text) == [err(text, needle, message)]


@pytest.mark.parametrize("value, message", [
    ("0", "stages[0].partitions: must be at least 1, got 0"),
    ("-2", "stages[0].partitions: must be at least 1, got -2"),
    ("true", "stages[0].partitions: expected an integer, got a boolean ('true')"),
    ("1.5", "stages[0].partitions: expected an integer, got a number ('1.5')"),
    ("2.0", "stages[0].partitions: expected an integer, got a number ('2.0')"),
    ("'2'", "stages[0].partitions: expected an integer, got a string ('2')"),
])
def test_invalid_partitions(value, message):
    text = stages(f"{{name: s, backend: cpu, partitions: {value}}}")
    assert errors(text) == [(P, 5, 41, message, None)]


@pytest.mark.parametrize("value, message", [
    ("bash", "stages[0].runner: expected one of python, pytest, got 'bash'"),
    ("Pytest", "stages[0].runner: expected one of python, pytest, got 'Pytest'"),
    ("true", "stages[0].runner: expected one of python, pytest, got a boolean ('true')"),
])
def test_invalid_runner(value, message):
    text = stages(f"{{name: s, backend: cpu, runner: {value}}}")
    assert errors(text) == [(P, 5, 37, message, None)]


@pytest.mark.parametrize("value, message", [
    ("0", "stages[0].timeout_per_file: must be greater than 0, got 0"),
    ("0.0", "stages[0].timeout_per_file: must be greater than 0, got 0.0"),
    ("-5", "stages[0].timeout_per_file: must be greater than 0, got -5"),
    ("true", "stages[0].timeout_per_file: expected a number, got a boolean ('true')"),
    ("'60'", "stages[0].timeout_per_file: expected a number, got a string ('60')"),
    (".inf", "stages[0].timeout_per_file: expected a finite number, got '.inf'"),
    (".nan", "stages[0].timeout_per_file: expected a finite number, got '.nan'"),
])
def test_invalid_timeout_per_file(value, message):
    text = stages(f"{{name: s, backend: cpu, timeout_per_file: {value}}}")
    assert errors(text) == [(P, 5, 47, message, None)]


@pytest.mark.parametrize("key", ["diff_pruned", "external"])
@pytest.mark.parametrize("value, described", [("1", "an integer ('1')"), ("'true'", "a string ('true')")])
def test_boolean_stage_keys(key, value, described):
    text = stages(f"{{name: s, backend: cpu, {key}: {value}}}")
    assert errors(text) == [err(text, f"{value}}}", f"stages[0].{key}: expected a boolean, got {described}")]


def test_every_problem_of_one_stage_is_reported():
    text = stages("{name: -x, backend: cuda, partitions: 0, runner: sh, timeout_per_file: 0, diff_pruned: 2}")
    assert errors(text) == [
        (P, 5, 5, "stages[0].runs_on: required for cuda stages that are not external",
         "list the runner labels, e.g. runs_on: [h200, 4gpu]"),
        err(text, "-x", "stages[0].name: '-x' is not a valid name (expected [A-Za-z0-9][A-Za-z0-9_.-]*)"),
        err(text, "0,", "stages[0].partitions: must be at least 1, got 0"),
        err(text, "sh", "stages[0].runner: expected one of python, pytest, got 'sh'"),
        err(text, "0, diff", "stages[0].timeout_per_file: must be greater than 0, got 0"),
        err(text, "2}", "stages[0].diff_pruned: expected a boolean, got an integer ('2')"),
    ]


# -- paths: the globs a stage owns ----------------------------------------------------------


def test_a_stage_may_own_paths():
    config = parse_config(stages("{name: k, backend: cuda, runs_on: [r], paths: ['pkg/jit_kernel/**', '!**/*.md']}",
                                 "{name: cpu, backend: cpu, diff_pruned: true, paths: [src/]}",
                                 "{name: g, backend: cuda, runs_on: [r]}"))
    assert [(s.name, s.paths) for s in config.stages] == [
        ("k", ("pkg/jit_kernel/**", "!**/*.md")), ("cpu", ("src/",)), ("g", ())]


@pytest.mark.parametrize("item, needle, message, hint", [
    ("{name: cpu, backend: cpu, paths: [src/]}", "[src/]",
     "stages[0].paths: has no effect: the stage is not diff-pruned, so it runs whenever it has selected tests",
     "set diff_pruned: true, or remove paths"),
    ("{name: g, backend: cuda, runs_on: [r], diff_pruned: false, paths: [src/]}", "[src/]",
     "stages[0].paths: has no effect: the stage is not diff-pruned, so it runs whenever it has selected tests",
     "set diff_pruned: true, or remove paths"),
    ("{name: g, backend: cuda, runs_on: [r], paths: []}", "[]", "stages[0].paths: must not be empty", None),
    ("{name: g, backend: cuda, runs_on: [r], paths: ['a**']}", "'a**'",
     "stages[0].paths[0]: invalid glob 'a**': '**' must be a whole path segment", None),
    ("{name: g, backend: cuda, runs_on: [r], paths: ['#x']}", "'#x'",
     "stages[0].paths[0]: invalid glob '#x': a leading '#' makes a comment in gitignore, which matches nothing; "
     "write [#] for the character", None),
])
def test_invalid_stage_paths(item, needle, message, hint):
    text = stages(item)
    assert errors(text) == [err(text, needle, message, hint)]


# -- partitions: auto, shard_seconds, max_partitions, max_parallel ------------------------------


def test_partitions_auto_with_shard_seconds_and_max_partitions():
    config = parse_config(stages("{name: s, backend: cpu, partitions: auto, shard_seconds: 600, max_partitions: 4}",
                                 "{name: t, backend: cpu, partitions: auto, shard_seconds: 0.5}"))
    assert config.stages == (cpu_stage(5, name="s", partitions="auto", shard_seconds=600, max_partitions=4),
                             cpu_stage(6, name="t", partitions="auto", shard_seconds=0.5))


@pytest.mark.parametrize("value, expected", [
    ("3", MaxParallel(default=3)),
    ("{default: 2}", MaxParallel(default=2)),
    ("{default: 2, schedule: 8}", MaxParallel(default=2, schedule=8)),
    ("{default: 2, priority: 2, schedule: 2}", MaxParallel(default=2, priority=2, schedule=2)),
])
def test_max_parallel_as_a_number_or_a_mapping(value, expected):
    text = HEAD + "pull_request: {priority_labels: [high priority, urgent]}\n" + "stages:\n" + \
        f"  - {{name: s, backend: cpu, max_parallel: {value}}}\n"
    config = parse_config(text)
    assert config.stages == (cpu_stage(6, name="s", max_parallel=expected),)
    assert config.pull_request == PullRequest(priority_labels=("high priority", "urgent"), line=4)


def test_pull_request_defaults_to_no_priority_labels():
    assert parse_config(stages("{name: s, backend: cpu}")).pull_request == PullRequest()


SIZING_ERRORS = [
    ("{name: s, backend: cpu, partitions: auto}", "auto}",
     "stages[0].shard_seconds: required with partitions: auto", "CP103",
     "give the selected est_time per shard, e.g. shard_seconds: 1800"),
    ("{name: s, backend: cpu, shard_seconds: 600}", "600}",
     "stages[0].shard_seconds: applies only with partitions: auto (partitions is 1)", "CP108",
     "write partitions: auto to size the shards from est_time, or remove shard_seconds"),
    ("{name: s, backend: cpu, partitions: 2, max_partitions: 4}", "4}",
     "stages[0].max_partitions: applies only with partitions: auto (partitions is 2)", "CP108",
     "write partitions: auto to size the shards from est_time, or remove max_partitions"),
    ("{name: s, backend: cpu, partitions: auto, shard_seconds: 0}", "0}",
     "stages[0].shard_seconds: must be greater than 0, got 0", "CP105", None),
    ("{name: s, backend: cpu, partitions: auto, shard_seconds: 60, max_partitions: 0}", "0}",
     "stages[0].max_partitions: must be at least 1, got 0", "CP105", None),
    ("{name: s, backend: cpu, partitions: Auto}", "Auto}",
     "stages[0].partitions: expected an integer, got a string ('Auto')", "CP104", None),
    ("{name: s, backend: cpu, max_parallel: 0}", "0}", "stages[0].max_parallel: must be at least 1, got 0",
     "CP105", None),
    ("{name: s, backend: cpu, max_parallel: {priority: 3}}", "{priority",
     "stages[0].max_parallel.default: required key is missing", "CP103", None),
    ("{name: s, backend: cpu, max_parallel: {default: 3, schedule: 2}}", "2}",
     "stages[0].max_parallel.schedule: must not be below max_parallel.default (3), got 2: a schedule event "
     "raises the limit, never lowers it", "CP108", "set it to at least 3, or lower default"),
    ("{name: s, backend: cpu, max_parallel: {default: 3, priority: 4}}", "4}",
     "stages[0].max_parallel.priority: no PR label can raise the limit: pull_request.priority_labels is empty",
     "CP108", "list the labels, e.g. pull_request: {priority_labels: [high priority]}"),
]


@pytest.mark.parametrize("item, needle, message, code, hint", SIZING_ERRORS)
def test_invalid_shard_sizing_and_parallelism(item, needle, message, code, hint):
    text = stages(item)
    assert coded(text) == [coded_err(text, needle, message, code, hint)]


def test_a_priority_label_is_checked_like_a_gate_label():
    text = HEAD + "pull_request: {priority_labels: [' ']}\n" + "stages:\n  - {name: s, backend: cpu}\n"
    message = ("pull_request.priority_labels[0]: ' ' has leading or trailing whitespace, which GitHub strips "
               "from a label")
    assert coded(text) == [coded_err(text, "' '", message, "CP105")]


# -- command: a suite without markers -------------------------------------------------------------


def test_a_stage_may_run_a_command_selected_by_its_paths():
    config = parse_config(stages(
        "{name: kernel, backend: cuda, runs_on: [h100], command: [pytest, -q, tests/], "
        "working_directory: sgl-kernel, paths: ['sgl-kernel/**'], est_time: 1800, timeout_per_file: 3600}",
        "{name: unit, backend: cpu, command: [python, -m, pytest, -k, a, -k, b], paths: [src/], est_time: 60}",
        "{name: root, backend: cpu, command: [make, test], working_directory: ./, paths: [src/], est_time: 1}"))
    kernel, unit, root = config.stages
    assert (kernel.command, kernel.working_directory, kernel.paths, kernel.est_time, kernel.diff_pruned,
            kernel.timeout_per_file) == (("pytest", "-q", "tests/"), "sgl-kernel", ("sgl-kernel/**",), 1800, True, 3600)
    # A cpu stage with a command is diff-pruned (its paths select it); an argument may repeat.
    assert (unit.command, unit.working_directory, unit.diff_pruned) == (
        ("python", "-m", "pytest", "-k", "a", "-k", "b"), None, True)
    assert root.working_directory is None  # the repository root


COMMAND_ERRORS = [
    ("{name: k, backend: cpu, command: [pytest, tests/], est_time: 60}", "[pytest",
     "stages[0].paths: required with command: the paths a change must touch to select the command's suite "
     "(no registered test file selects it)", "CP103", "list the globs the suite owns, e.g. paths: [sgl-kernel/**]"),
    ("{name: k, backend: cpu, command: [pytest, tests/], paths: [k/**]}", "[pytest",
     "stages[0].est_time: required with command: the seconds the command is estimated to run (its shard's "
     "est_time)", "CP103", "e.g. est_time: 1800"),
    ("{name: k, backend: cuda, external: true, command: [pytest], paths: [k/**], est_time: 60}", "true",
     "stages[0].external: a stage with a command is run here, by its stage job; an external stage is run by "
     "another system", "CP108", "remove external: true to plan the command here, or remove command to only list "
     "the stage"),
    ("{name: k, backend: cpu, command: [], paths: [k/**], est_time: 60}", "[]",
     "stages[0].command: must not be empty", "CP105", None),
    ("{name: k, backend: cpu, command: 'cd sgl-kernel && pytest tests/', paths: [k/**], est_time: 60}", "'cd",
     "stages[0].command: a command is an argv list, never a shell string: ci-policy runs it without a shell",
     "CP104", "write one item per argument, e.g. command: [cd, sgl-kernel, &&, pytest]"),
    ("{name: k, backend: cpu, command: ['pytest -q', tests/], paths: [k/**], est_time: 60}", "'pytest",
     "stages[0].command[0]: the program 'pytest -q' is empty or holds spaces: each argument is an item of its "
     "own, no shell splits them", "CP105", "write command: [pytest, -q, ...]"),
    ("{name: k, backend: cpu, command: ['', x], paths: [k/**], est_time: 60}", "''",
     "stages[0].command[0]: the program '' is empty or holds spaces: each argument is an item of its own, no "
     "shell splits them", "CP105", "write command: [pytest, ...]"),
    ("{name: k, backend: cpu, command: [pytest, 3], paths: [k/**], est_time: 60}", "3]",
     "stages[0].command[1]: expected a string, got an integer ('3')", "CP104", None),
    ("{name: k, backend: cpu, command: [pytest], working_directory: ../other, paths: [k/**], est_time: 60}",
     "../other", "stages[0].working_directory: '../other' leaves the repository ('..' is not allowed)", "CP105",
     "name a path inside the repository"),
    ("{name: k, backend: cpu, command: [pytest], working_directory: /abs/dir, paths: [k/**], est_time: 60}",
     "/abs", "stages[0].working_directory: '/abs/dir' is absolute; paths are relative to the repository root",
     "CP105", "drop the leading '/'"),
    ("{name: k, backend: cpu, command: [pytest], working_directory: 'a\\b', paths: [k/**], est_time: 60}",
     "'a", "stages[0].working_directory: 'a\\\\b' must use forward slashes and no NUL bytes", "CP105",
     "write a POSIX path such as tests/e2e"),
    ("{name: k, backend: cpu, working_directory: sgl-kernel}", "sgl-kernel",
     "stages[0].working_directory: applies only to a stage with a command", "CP108",
     "add command: [...] (the argv the stage runs), or remove working_directory"),
    ("{name: k, backend: cpu, est_time: 60}", "60",
     "stages[0].est_time: applies only to a stage with a command", "CP108",
     "add command: [...] (the argv the stage runs), or remove est_time"),
    ("{name: k, backend: cpu, command: [pytest], paths: [k/**], est_time: 60, partitions: 2}", "2}",
     "stages[0].partitions: a command runs once, as one shard (partitions is 2)", "CP108",
     "remove partitions, or split the suite into several stages, each with a command of its own"),
    ("{name: k, backend: cpu, command: [pytest], paths: [k/**], est_time: 60, partitions: auto, shard_seconds: 9}",
     "auto", "stages[0].partitions: a command runs once, as one shard (partitions is auto)", "CP108",
     "remove partitions, or split the suite into several stages, each with a command of its own"),
    ("{name: k, backend: cpu, command: [pytest], paths: [k/**], est_time: 60, diff_pruned: false}", "false",
     "stages[0].diff_pruned: a stage with a command is selected by the changes under its paths, so it is "
     "diff-pruned", "CP108", "remove diff_pruned: false"),
    ("{name: k, backend: cpu, command: [pytest], paths: [k/**], est_time: 60, runner: python}", "python}",
     "stages[0].runner: has no effect with command: the stage runs its command, not test files", "CP108",
     "remove runner"),
]


@pytest.mark.parametrize("item, needle, message, code, hint", COMMAND_ERRORS)
def test_invalid_command_stage(item, needle, message, code, hint):
    text = stages(item)
    assert coded(text) == [coded_err(text, needle, message, code, hint)]


def test_an_implicit_root_may_not_name_a_command_stage():
    text = ("version: 1\ndiscovery:\n  roots: [tests]\n  implicit: [{root: tests, backend: cpu, suite: k, "
            "est_time: 5}]\nstages:\n  - {name: k, backend: cpu, command: [pytest], paths: [k/**], est_time: 60}\n")
    assert coded(text) == [coded_err(
        text, "k, est", "discovery.implicit[0].suite: 'k' is a stage with a command, which runs its suite itself; "
        "no test file is registered to it", "CP108",
        "name a cpu stage that runs test files, or remove command from stage 'k'")]
