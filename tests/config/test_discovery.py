"""`discovery:` (`ci_policy.config.discovery`): roots, pattern and implicit roots."""

from __future__ import annotations

import textwrap

import pytest
from config_cases import CPU_STAGE, P, coded, coded_err, discovery, err, errors
from hypothesis import example, given
from hypothesis import strategies as st

from ci_policy.config.discovery import Discovery, ImplicitRoot
from ci_policy.config.top import parse_config

# -- accepted forms -------------------------------------------------------------------------


@pytest.mark.parametrize("written, stored", [
    ("[tests]", ("tests",)),
    ("[tests/]", ("tests",)),
    ("[./tests, e2e]", ("tests", "e2e")),
    ("[.]", (".",)),
    ("[b, a]", ("b", "a")),
])
def test_discovery_roots_are_normalised_and_keep_their_order(written, stored):
    assert parse_config(discovery(f"discovery:\n  roots: {written}\n")).discovery.roots == stored


def test_implicit_defaults_and_most_specific_root():
    text = discovery(textwrap.dedent("""\
        discovery:
          roots: [tests]
          implicit:
            - {root: tests, backend: cpu, suite: cpu, est_time: 0}
            - {root: tests/unit, backend: cpu, suite: cpu, est_time: 1, cpu_only: true}
        """))
    disc = parse_config(text).discovery
    broad = ImplicitRoot(root="tests", backend="cpu", suite="cpu", est_time=0, cpu_only=False, line=5)
    narrow = ImplicitRoot(root="tests/unit", backend="cpu", suite="cpu", est_time=1, cpu_only=True, line=6)
    assert disc.implicit == (broad, narrow)
    assert disc.implicit_for("tests/unit/test_a.py") == narrow
    assert disc.implicit_for("tests/unitx/test_a.py") == broad
    assert disc.implicit_for("tests/test_a.py") == broad
    assert disc.implicit_for("other/test_a.py") is None


LAYOUT = discovery(textwrap.dedent("""\
    discovery:
      roots: [test/registered, {path: python/pkg/jit_kernel/benchmark, pattern: ["bench_*.py"]}]
      pattern: ["test_*.py", "testing_*.py"]
      exclude: ["**/conftest.py", "**/__init__.py", "test/registered/ascend/**"]
    """))


def test_layout_with_per_root_patterns_a_pattern_list_and_excludes():
    assert parse_config(LAYOUT).discovery == Discovery(
        roots=("test/registered", "python/pkg/jit_kernel/benchmark"),
        pattern=("test_*.py", "testing_*.py"),
        root_patterns=(("python/pkg/jit_kernel/benchmark", ("bench_*.py",)),),
        exclude=("**/conftest.py", "**/__init__.py", "test/registered/ascend/**"),
        implicit=())


@pytest.mark.parametrize("file, pattern, is_test", [
    ("test/registered/test_a.py", ("test_*.py", "testing_*.py"), True),
    ("test/registered/sub/testing_b.py", ("test_*.py", "testing_*.py"), True),
    ("test/registered/bench_a.py", ("test_*.py", "testing_*.py"), False),
    # The root's own pattern replaces the top-level one below it.
    ("python/pkg/jit_kernel/benchmark/bench_mm.py", ("bench_*.py",), True),
    ("python/pkg/jit_kernel/benchmark/test_mm.py", ("bench_*.py",), False),
    ("test/registered/conftest.py", ("test_*.py", "testing_*.py"), False),
    ("test/registered/ascend/test_npu.py", ("test_*.py", "testing_*.py"), False),
    ("test/registered/ascendx/test_npu.py", ("test_*.py", "testing_*.py"), True),
    ("python/pkg/test_outside.py", ("test_*.py", "testing_*.py"), False),
])
def test_which_files_the_layout_makes_test_files(file, pattern, is_test):
    disc = parse_config(LAYOUT).discovery
    assert disc.pattern_for(file) == pattern
    assert disc.is_test_file(file) is is_test


def test_the_most_specific_root_gives_the_pattern():
    text = discovery("discovery:\n  roots: [{path: tests, pattern: 'check_*.py'}, {path: tests/bench, pattern: "
                     "'bench_*.py'}, tests/bench/plain]\n")
    disc = parse_config(text).discovery
    assert disc.roots == ("tests", "tests/bench", "tests/bench/plain")
    assert disc.pattern_for("tests/check_a.py") == "check_*.py"
    assert disc.pattern_for("tests/bench/sub/bench_a.py") == "bench_*.py"
    assert disc.pattern_for("tests/bench/plain/test_a.py") == "test_*.py"
    assert [disc.is_test_file(f) for f in ("tests/bench/check_a.py", "tests/bench/bench_a.py")] == [False, True]


@pytest.mark.parametrize("path, directory, dropped", [
    ("vendor", True, True),
    ("vendor", False, False),  # `vendor/` names a directory only, as in gitignore
    ("vendor/test_a.py", False, True),
    ("a/vendor/test_a.py", False, True),  # no '/' but the trailing one: at any depth
    ("tests/__init__.py", False, True),
    ("__init__.py", False, True),
    ("tests/test_init.py", False, False),
])
def test_exclude_globs_are_gitignore_style(path, directory, dropped):
    disc = parse_config(discovery("discovery:\n  roots: [.]\n  exclude: [vendor/, '**/__init__.py']\n")).discovery
    assert disc.excluded(path, directory=directory) is dropped


@pytest.mark.parametrize("path, directory, dropped", [
    ("vendor", True, False),  # `vendor/*` matches what is inside, so the walk enters vendor
    ("vendor/other", True, True),
    ("vendor/other/test_a.py", False, True),
    ("vendor/keep", True, False),  # brought back by the negation
    ("vendor/keep/test_a.py", False, False),
    ("vendor/keep/conftest.py", False, True),  # a later glob drops it again: the last match wins
    ("vendor/test_top.py", False, True),
])
def test_exclude_reads_like_a_gitignore_with_negation(path, directory, dropped):
    disc = parse_config(discovery("discovery:\n  roots: [.]\n  exclude: ['vendor/*', '!vendor/keep/', "
                                  "'**/conftest.py']\n")).discovery
    assert disc.excluded(path, directory=directory) is dropped
    assert disc.is_test_file(path) is (not dropped and not directory and path.rsplit("/", 1)[-1].startswith("test_"))


def test_a_negation_cannot_bring_back_a_file_of_an_excluded_directory():
    # As in git: `vendor/**` drops the directory vendor/keep itself, so nothing below it comes back.
    disc = parse_config(discovery("discovery:\n  roots: [.]\n  exclude: ['vendor/**', '!vendor/keep/**']\n")).discovery
    assert disc.excluded("vendor", directory=True)
    assert disc.excluded("vendor/keep/test_a.py")
    assert not disc.is_test_file("vendor/keep/test_a.py")


# -- refused --------------------------------------------------------------------------------


@pytest.mark.parametrize("body, line, col, message", [
    ("discovery: [tests]\n", 2, 12, "discovery: expected a mapping, got a list"),
    ("discovery:\n", 2, 11, "discovery: expected a mapping, got null"),
    ("discovery: {}\n", 2, 12, "discovery.roots: required key is missing"),
    ("discovery:\n  pattern: '*.py'\n", 3, 3, "discovery.roots: required key is missing"),
    ("discovery:\n  roots: []\n", 3, 10, "discovery.roots: must not be empty"),
    ("discovery:\n  roots: tests\n", 3, 10, "discovery.roots: expected a list, got a string ('tests')"),
    ("discovery:\n  roots: [tests, 1]\n", 3, 18, "discovery.roots[1]: expected a string, got an integer ('1')"),
    ("discovery:\n  roots: [tests, tests/]\n", 3, 18, "discovery.roots[1]: duplicate root 'tests'"),
    ("discovery:\n  roots: [tests]\n  pattern: 'a/test_*.py'\n", 4, 12,
     "discovery.pattern: 'a/test_*.py' must be a basename glob such as 'test_*.py' (no '/')"),
    ("discovery:\n  roots: [tests]\n  pattern: 'a\\test_*.py'\n", 4, 12,
     "discovery.pattern: 'a\\\\test_*.py' must be a basename glob such as 'test_*.py' (no '/')"),
    ("discovery:\n  roots: [tests]\n  pattern: ''\n", 4, 12,
     "discovery.pattern: '' must be a basename glob such as 'test_*.py' (no '/')"),
    ("discovery:\n  roots: [tests]\n  pattern: 1\n", 4, 12,
     "discovery.pattern: expected a string, got an integer ('1')"),
    ("discovery:\n  roots: [tests]\n  implicit: {}\n", 4, 13, "discovery.implicit: expected a list, got a mapping"),
    ("discovery:\n  roots: [tests]\n  implicit: [tests]\n", 4, 14,
     "discovery.implicit[0]: expected a mapping, got a string ('tests')"),
])
def test_invalid_discovery(body, line, col, message):
    assert errors(discovery(body)) == [(P, line, col, message, None)]


@pytest.mark.parametrize("root, message, hint", [
    ("/tests", "discovery.roots[0]: '/tests' is absolute; paths are relative to the repository root",
     "drop the leading '/'"),
    ("../tests", "discovery.roots[0]: '../tests' leaves the repository ('..' is not allowed)",
     "name a path inside the repository"),
    ("tests/../..", "discovery.roots[0]: 'tests/../..' leaves the repository ('..' is not allowed)",
     "name a path inside the repository"),
    ("''", "discovery.roots[0]: expected a repo-relative path, got ''", "write a path such as tests/e2e"),
])
def test_discovery_roots_must_be_repo_relative(root, message, hint):
    assert errors(discovery(f"discovery:\n  roots: [{root}]\n")) == [(P, 3, 11, message, hint)]


@pytest.mark.parametrize("body, needle, message, code", [
    ("  roots: [tests, {path: tests/, pattern: 'a_*.py'}]\n", "tests/", "discovery.roots[1].path: duplicate root "
     "'tests'", "CP106"),
    ("  roots: [{path: tests, pattern: 'a_*.py'}, ./tests]\n", "./tests", "discovery.roots[1]: duplicate root "
     "'tests'", "CP106"),
    ("  roots: [{path: tests}]\n", "{path", "discovery.roots[0].pattern: required key is missing", "CP103"),
    ("  roots: [{path: tests, pattern: 'a/*.py'}]\n", "'a/", "discovery.roots[0].pattern: 'a/*.py' must be a "
     "basename glob such as 'test_*.py' (no '/')", "CP105"),
    ("  roots: [{path: tests, pattern: [a_*.py, 'b/*.py']}]\n", "'b/", "discovery.roots[0].pattern[1]: 'b/*.py' "
     "must be a basename glob such as 'test_*.py' (no '/')", "CP105"),
    ("  roots: [{path: tests, pattern: {a: 1}}]\n", "{a", "discovery.roots[0].pattern: expected a string, got a "
     "mapping", "CP104"),
    ("  roots: [tests]\n  pattern: []\n", "[]", "discovery.pattern: must not be empty", "CP105"),
    ("  roots: [tests]\n  pattern: [test_*.py, 3]\n", "3", "discovery.pattern[1]: expected a string, got an "
     "integer ('3')", "CP104"),
    ("  roots: [tests]\n  pattern: [test_*.py, test_*.py]\n", "test_*.py]", "discovery.pattern[1]: duplicate "
     "entry 'test_*.py'", "CP106"),
    ("  roots: [tests]\n  exclude: ['vendor/**x']\n", "'vendor", "discovery.exclude[0]: invalid glob "
     "'vendor/**x': '**' must be a whole path segment", "CP105"),
    ("  roots: [tests]\n  exclude: [ok/**, '[z-a]']\n", "'[z", "discovery.exclude[1]: invalid glob '[z-a]': "
     "bad character range z-a", "CP105"),
    ("  roots: [tests]\n  exclude: '**/conftest.py'\n", "'**", "discovery.exclude: expected a list, got a "
     "string ('**/conftest.py')", "CP104"),
])
def test_invalid_layout(body, needle, message, code):
    text = discovery("discovery:\n" + body)
    assert coded(text) == [coded_err(text, needle, message, code)]


def test_a_root_mapping_path_is_repo_relative():
    text = discovery("discovery:\n  roots: [{path: /tests, pattern: 'a_*.py'}]\n")
    assert coded(text) == [coded_err(text, "/tests", "discovery.roots[0].path: '/tests' is absolute; paths are "
                                     "relative to the repository root", "CP105", "drop the leading '/'")]


def test_unknown_key_in_a_root_mapping():
    text = discovery("discovery:\n  roots: [{path: tests, patterns: ['a_*.py']}]\n")
    assert coded(text) == [
        coded_err(text, "{path", "discovery.roots[0].pattern: required key is missing", "CP103"),
        coded_err(text, "patterns", "discovery.roots[0].patterns: unknown key; did you mean 'pattern'?", "CP102",
                  "allowed keys here: path, pattern"),
    ]


def test_unknown_discovery_key():
    text = discovery("discovery:\n  roots: [tests]\n  patern: '*.py'\n")
    assert errors(text) == [(P, 4, 3, "discovery.patern: unknown key; did you mean 'pattern'?",
                             "allowed keys here: exclude, implicit, pattern, roots")]


def implicit(*items: str, roots: str = "[tests]", stage_list: str = CPU_STAGE) -> str:
    return ("version: 1\ndiscovery:\n  roots: " + roots + "\n  implicit:\n"
            + "".join(f"    - {item}\n" for item in items) + stage_list)


def test_implicit_requires_its_keys():
    text = implicit("{cpu_only: true}")
    assert errors(text) == [(P, 5, 7, f"discovery.implicit[0].{key}: required key is missing", None)
                            for key in ("backend", "est_time", "root", "suite")]


def test_unknown_implicit_key():
    text = implicit("{root: tests, backend: cpu, suite: cpu, est_time: 1, estimate: 2}")
    assert errors(text) == [err(text, "estimate", "discovery.implicit[0].estimate: unknown key; did you mean "
                                "'est_time'?", "allowed keys here: backend, cpu_only, est_time, root, suite")]


@pytest.mark.parametrize("item, needle, message, hint", [
    ("{root: other, backend: cpu, suite: cpu, est_time: 1}", "other",
     "discovery.implicit[0].root: 'other' is not inside any discovery root",
     "list it (or a parent) under discovery.roots"),
    ("{root: testsuite, backend: cpu, suite: cpu, est_time: 1}", "testsuite",
     "discovery.implicit[0].root: 'testsuite' is not inside any discovery root",
     "list it (or a parent) under discovery.roots"),
    ("{root: /tests, backend: cpu, suite: cpu, est_time: 1}", "/tests",
     "discovery.implicit[0].root: '/tests' is absolute; paths are relative to the repository root",
     "drop the leading '/'"),
    ("{root: tests, backend: tpu, suite: cpu, est_time: 1}", "tpu",
     "discovery.implicit[0].backend: expected one of cpu, cuda, rocm, got 'tpu'",
         "did you mean 'cpu'? Otherwise, declare it in the configuration: backends: {tpu: {accelerator: true}}"),
    ("{root: tests, backend: cpu, suite: nope, est_time: 1}", "nope",
     "discovery.implicit[0].suite: 'nope' is not a configured cpu stage (configured cpu stages: cpu)", None),
    ("{root: tests, backend: cpu, suite: 7, est_time: 1}", "7",
     "discovery.implicit[0].suite: expected a string, got an integer ('7')", None),
    ("{root: tests, backend: cpu, suite: cpu, est_time: -1}", "-1",
     "discovery.implicit[0].est_time: must be at least 0, got -1", None),
    ("{root: tests, backend: cpu, suite: cpu, est_time: true}", "true",
     "discovery.implicit[0].est_time: expected a number, got a boolean ('true')", None),
    ("{root: tests, backend: cpu, suite: cpu, est_time: 1, cpu_only: 1}", "1}",
     "discovery.implicit[0].cpu_only: expected a boolean, got an integer ('1')", None),
])
def test_invalid_implicit_entry(item, needle, message, hint):
    text = implicit(item)
    assert errors(text) == [err(text, needle, message, hint)]


def test_implicit_suite_must_be_a_stage_of_its_backend():
    two = "stages:\n  - {name: cpu, backend: cpu}\n  - {name: g, backend: cuda, runs_on: [x]}\n"
    text = implicit("{root: tests, backend: cuda, suite: cpu, est_time: 1}", stage_list=two)
    assert errors(text) == [err(text, "cpu,", "discovery.implicit[0].suite: 'cpu' is not a configured cuda "
                                "stage (configured cuda stages: g)")]
    text = implicit("{root: tests, backend: rocm, suite: g, est_time: 1}", stage_list=two)
    assert errors(text) == [err(text, "g,", "discovery.implicit[0].suite: 'g' is not a configured rocm "
                                "stage (configured rocm stages: none)")]


def test_cpu_only_implicit_root_must_be_cpu():
    two = "stages:\n  - {name: cpu, backend: cpu}\n  - {name: g, backend: cuda, runs_on: [x]}\n"
    text = implicit("{root: tests, backend: cuda, suite: g, est_time: 1, cpu_only: true}", stage_list=two)
    assert errors(text) == [err(text, "cuda", "discovery.implicit[0].backend: a cpu_only root must have "
                                "backend cpu")]


def test_an_invalid_root_causes_no_error_about_implicit_roots():
    text = implicit("{root: tests, backend: cpu, suite: cpu, est_time: 1}", roots="[/tests]")
    assert errors(text) == [err(text, "/tests", "discovery.roots[0]: '/tests' is absolute; paths are relative "
                                "to the repository root", "drop the leading '/'")]


def test_duplicate_implicit_root():
    text = implicit("{root: tests, backend: cpu, suite: cpu, est_time: 1}",
                    "{root: tests/, backend: cpu, suite: cpu, est_time: 2}")
    assert errors(text) == [(P, 6, 7, "discovery.implicit[1].root: duplicate implicit root 'tests'", None)]


# -- name_matcher: name_matches with the pattern(s) kept per directory --------------------------

_PARTS = st.sampled_from(["tests", "a", "test_x.py", "x_test.py", "b.py", "test_\n.py", "[a].py", "a.PY"])
_GLOBS = st.sampled_from(["*_test.py", "test_*.py", "*.py", "test_?.py", "[ab].py", "[!t]*.py", "[[]a].py"])


@given(roots=st.lists(st.lists(_PARTS, min_size=1, max_size=2).map("/".join), min_size=1, max_size=3, unique=True),
       own=st.lists(st.one_of(_GLOBS, st.lists(_GLOBS, max_size=3).map(tuple)), max_size=3),
       files=st.lists(st.lists(_PARTS, min_size=1, max_size=4).map("/".join), max_size=12))
@example(roots=["tests"], own=[("*_test.py", "test_*.py")], files=["tests/test_x.py", "tests/b.py"])
@example(roots=["tests"], own=[()], files=["tests/test_x.py"])
def test_name_matcher_agrees_with_name_matches(roots, own, files):
    disc = Discovery(roots=tuple(roots), root_patterns=tuple(zip(roots, own, strict=False)))
    matches = disc.name_matcher()
    for file in files + files:  # asked twice: the second answer comes from what it kept
        assert matches(file) == disc.name_matches(file)
