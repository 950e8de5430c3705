"""ci_policy.model.discovery: which files under the configured roots are test files."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from helpers import EXAMPLE_REPO
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ci_policy.config.load import load_config
from ci_policy.config.top import Config, parse_config
from ci_policy.errors import Diagnostic
from ci_policy.model.discovery import discover

SYMLINK_HINT = "replace the symlink with the real file or directory"
REFUSES = "ci-policy refuses symlinks in a checkout"
CONFIG = ".github/ci-policy.yml"


def config(*roots: str, pattern: str | None = None) -> Config:
    text = "version: 1\n"
    text += "# the discovery section starts on line 3\n"
    text += "discovery:\n  roots: [" + ", ".join(f"'{r}'" for r in roots) + "]\n"
    if pattern is not None:
        text += f"  pattern: '{pattern}'\n"
    text += "stages:\n  - {name: cpu, backend: cpu}\n"
    return parse_config(text, CONFIG)


def located(errors: list[Diagnostic]) -> list[tuple]:
    return [(e.path, e.line, e.col, e.message, e.hint) for e in errors]


def touch(repo: Path, *rels: str) -> None:
    for rel in rels:
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    touch(root,
          "tests/test_top.py",
          "tests/unit/test_b.py",
          "tests/unit/test_a.py",
          "tests/unit/helper.py",
          "tests/unit/conftest.py",
          "tests/unit/deep/deeper/test_deep.py",
          "tests/unit/test_data.json",
          "tests/unit/test_a.pyc",
          "tests/e2e/test_e2e.py",
          "tests/__pycache__/test_cached.py",
          "tests/unit/__pycache__/test_cached.py",
          "tests/.git/test_git.py",
          "tests/test_helpers/helper.py",
          "tests/test_pkg.py/test_inner.py",
          "src/test_not_under_a_root.py",
          "test_at_repo_root.py")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "test_foreign.py").write_text("x = 1\n")
    return d


ALL_UNDER_TESTS = [
    "tests/e2e/test_e2e.py",
    "tests/test_pkg.py/test_inner.py",
    "tests/test_top.py",
    "tests/unit/deep/deeper/test_deep.py",
    "tests/unit/test_a.py",
    "tests/unit/test_b.py",
]


# -- what is found --------------------------------------------------------------------------


def test_sorted_repo_relative_posix_paths(repo):
    files, errors = discover(repo, config("tests"))
    assert files == ALL_UNDER_TESTS
    assert errors == []
    assert all("\\" not in f and not Path(f).is_absolute() for f in files)


def test_pattern_matches_basenames_only(repo):
    # A directory matching the pattern is walked, not listed; helpers inside test_helpers/ do not match.
    files, _ = discover(repo, config("tests"))
    assert "tests/test_pkg.py" not in files
    assert "tests/test_helpers/helper.py" not in files


@pytest.mark.parametrize("pattern, expected", [
    ("*.py", ["tests/e2e/test_e2e.py", "tests/test_helpers/helper.py", "tests/test_pkg.py/test_inner.py",
              "tests/test_top.py", "tests/unit/conftest.py", "tests/unit/deep/deeper/test_deep.py",
              "tests/unit/helper.py", "tests/unit/test_a.py", "tests/unit/test_b.py"]),
    ("test_?.py", ["tests/unit/test_a.py", "tests/unit/test_b.py"]),
    ("test_[ab].py", ["tests/unit/test_a.py", "tests/unit/test_b.py"]),
    ("*_e2e.py", ["tests/e2e/test_e2e.py"]),
    ("test_*", ["tests/e2e/test_e2e.py", "tests/test_pkg.py/test_inner.py", "tests/test_top.py",
                "tests/unit/deep/deeper/test_deep.py", "tests/unit/test_a.py", "tests/unit/test_a.pyc",
                "tests/unit/test_b.py", "tests/unit/test_data.json"]),
    ("TEST_*.py", []),
])
def test_custom_pattern(repo, pattern, expected):
    assert discover(repo, config("tests", pattern=pattern)) == (expected, [])


def test_nested_root(repo):
    assert discover(repo, config("tests/unit/deep")) == (["tests/unit/deep/deeper/test_deep.py"], [])


def test_several_roots(repo):
    files, errors = discover(repo, config("tests/e2e", "src"))
    assert files == ["src/test_not_under_a_root.py", "tests/e2e/test_e2e.py"]
    assert errors == []


@pytest.mark.parametrize("roots", [("tests", "tests/unit"), ("tests/unit", "tests"), ("tests/", "./tests/e2e")])
def test_overlapping_roots_are_deduplicated(repo, roots):
    assert discover(repo, config(*roots)) == (ALL_UNDER_TESTS, [])


def test_overlapping_roots_report_each_problem_once(repo):
    os.symlink("/etc/passwd", repo / "tests" / "unit" / "test_passwd.py")
    files, errors = discover(repo, config("tests", "tests/unit"))
    assert files == ALL_UNDER_TESTS
    assert located(errors) == [("tests/unit/test_passwd.py", None, None,
                                f"test file tests/unit/test_passwd.py is a symlink; {REFUSES}", SYMLINK_HINT)]


def test_repo_root_as_discovery_root(repo):
    files, errors = discover(repo, config("."))
    assert files == ["src/test_not_under_a_root.py", "test_at_repo_root.py", *ALL_UNDER_TESTS]
    assert errors == []


def test_pycache_and_vcs_directories_are_skipped(repo):
    files, _ = discover(repo, config("tests"))
    assert not [f for f in files if "__pycache__" in f or ".git" in f]


def test_empty_root(repo):
    (repo / "empty").mkdir()
    assert discover(repo, config("empty")) == ([], [])


def test_same_result_twice_and_independent_of_creation_order(tmp_path):
    names = ["tests/b/test_2.py", "tests/a/test_1.py", "tests/test_z.py", "tests/test_a.py", "tests/a/b/test_0.py"]
    first, second = tmp_path / "first", tmp_path / "second"
    touch(first, *names)
    touch(second, *reversed(names))
    cfg = config("tests")
    result = discover(first, cfg)
    assert result == (sorted(names), [])
    assert discover(first, cfg) == result
    assert discover(second, cfg) == result


# -- roots that cannot be walked -------------------------------------------------------------


def test_missing_root(repo):
    assert discover(repo, config("nope", "tests/e2e")) == (["tests/e2e/test_e2e.py"], [
        Diagnostic("discovery root nope does not exist", path=CONFIG, line=3, code="CP402",
                   hint="create the directory or remove it from discovery.roots")])


def test_root_that_is_a_file(repo):
    files, errors = discover(repo, config("tests/test_top.py"))
    assert files == []
    assert located(errors) == [(CONFIG, 3, None, "discovery root tests/test_top.py is not a directory", None)]


def test_root_below_a_file(repo):
    files, errors = discover(repo, config("tests/test_top.py/sub"))
    assert files == []
    assert located(errors) == [(CONFIG, 3, None, "discovery root tests/test_top.py/sub does not exist",
                                "create the directory or remove it from discovery.roots")]


def test_root_that_is_a_symlink(repo, outside):
    os.symlink(outside, repo / "linked")
    files, errors = discover(repo, config("linked", "tests/e2e"))
    assert files == ["tests/e2e/test_e2e.py"]
    assert located(errors) == [("linked", None, None, f"discovery root linked is a symlink; {REFUSES}",
                                SYMLINK_HINT)]


def test_root_that_is_a_symlink_to_a_directory_inside_the_repo(repo):
    os.symlink("tests", repo / "alias")
    assert located(discover(repo, config("alias"))[1]) == [
        ("alias", None, None, f"discovery root alias is a symlink; {REFUSES}", SYMLINK_HINT)]


def test_symlinked_directory_between_repo_root_and_a_root(repo, outside):
    (outside / "unit").mkdir()
    (outside / "unit" / "test_x.py").write_text("x = 1\n")
    (repo / "pkg").mkdir()
    os.symlink(outside, repo / "pkg" / "vendored")
    files, errors = discover(repo, config("pkg/vendored/unit"))
    assert files == []
    assert located(errors) == [("pkg/vendored/unit", None, None, "discovery root pkg/vendored/unit: directory "
                                f"pkg/vendored is a symlink; {REFUSES}", SYMLINK_HINT)]


# -- symlinks inside a root ------------------------------------------------------------------


def test_symlinked_directory_inside_a_root(repo, outside):
    os.symlink(outside, repo / "tests" / "unit" / "vendored")
    os.symlink("/etc", repo / "tests" / "etc")
    files, errors = discover(repo, config("tests"))
    assert files == ALL_UNDER_TESTS  # the walk goes on; nothing behind the links is listed
    assert located(errors) == [
        ("tests/etc", None, None, f"directory tests/etc is a symlink; {REFUSES}", SYMLINK_HINT),
        ("tests/unit/vendored", None, None, f"directory tests/unit/vendored is a symlink; {REFUSES}",
         SYMLINK_HINT),
    ]


def test_symlinked_test_file_pointing_at_etc_passwd(repo):
    os.symlink("/etc/passwd", repo / "tests" / "unit" / "test_passwd.py")
    files, errors = discover(repo, config("tests"))
    assert files == ALL_UNDER_TESTS
    assert located(errors) == [("tests/unit/test_passwd.py", None, None,
                                f"test file tests/unit/test_passwd.py is a symlink; {REFUSES}", SYMLINK_HINT)]


def test_symlinked_test_file_pointing_inside_the_repo(repo):
    os.symlink("test_a.py", repo / "tests" / "unit" / "test_copy.py")
    assert located(discover(repo, config("tests"))[1]) == [
        ("tests/unit/test_copy.py", None, None, f"test file tests/unit/test_copy.py is a symlink; {REFUSES}",
         SYMLINK_HINT)]


def test_dangling_symlinks(repo):
    os.symlink("nowhere", repo / "tests" / "unit" / "data")
    os.symlink("nowhere.py", repo / "tests" / "unit" / "test_gone.py")
    files, errors = discover(repo, config("tests"))
    assert files == ALL_UNDER_TESTS
    assert located(errors) == [
        ("tests/unit/data", None, None, f"tests/unit/data is a dangling symlink; {REFUSES}", SYMLINK_HINT),
        ("tests/unit/test_gone.py", None, None, f"test file tests/unit/test_gone.py is a symlink; {REFUSES}",
         SYMLINK_HINT),
    ]


def test_symlinked_non_matching_file_is_ignored(repo):
    os.symlink("/etc/passwd", repo / "tests" / "unit" / "passwd")
    os.symlink("helper.py", repo / "tests" / "unit" / "helper_alias.py")
    assert discover(repo, config("tests")) == (ALL_UNDER_TESTS, [])


def test_every_problem_is_reported_in_one_pass(repo, outside):
    os.symlink(outside, repo / "ext")
    os.symlink("/etc/passwd", repo / "tests" / "test_passwd.py")
    os.symlink(outside, repo / "tests" / "e2e" / "more")
    files, errors = discover(repo, config("missing", "ext", "tests"))
    assert files == ALL_UNDER_TESTS
    assert located(errors) == [
        (CONFIG, 3, None, "discovery root missing does not exist",
         "create the directory or remove it from discovery.roots"),
        ("ext", None, None, f"discovery root ext is a symlink; {REFUSES}", SYMLINK_HINT),
        ("tests/e2e/more", None, None, f"directory tests/e2e/more is a symlink; {REFUSES}", SYMLINK_HINT),
        ("tests/test_passwd.py", None, None, f"test file tests/test_passwd.py is a symlink; {REFUSES}",
         SYMLINK_HINT),
    ]


# -- layouts: per-root patterns, pattern lists, exclude ---------------------------------------


def layout(body: str) -> Config:
    return parse_config("version: 1\n# the discovery section starts on line 3\ndiscovery:\n" + body
                        + "stages:\n  - {name: cpu, backend: cpu}\n", CONFIG)


@pytest.fixture
def monorepo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    touch(root,
          "test/registered/__init__.py",
          "test/registered/conftest.py",
          "test/registered/test_a.py",
          "test/registered/models/testing_b.py",
          "test/registered/models/__init__.py",
          "test/registered/models/bench_c.py",
          "test/registered/ascend/test_npu.py",
          "test/registered/ascend/deep/test_npu2.py",
          "python/pkg/jit_kernel/benchmark/bench_mm.py",
          "python/pkg/jit_kernel/benchmark/test_mm.py",
          "python/pkg/jit_kernel/benchmark/conftest.py",
          "python/pkg/jit_kernel/test_kernel.py")
    return root


ISSUE_LAYOUT = """\
  roots: [test/registered, {path: python/pkg/jit_kernel/benchmark, pattern: ["bench_*.py"]}]
  pattern: ["test_*.py", "testing_*.py"]
  exclude: ["**/conftest.py", "**/__init__.py", "test/registered/ascend/**"]
"""


def test_the_layout_of_the_issue(monorepo):
    assert discover(monorepo, layout(ISSUE_LAYOUT)) == ([
        "python/pkg/jit_kernel/benchmark/bench_mm.py",
        "test/registered/models/testing_b.py",
        "test/registered/test_a.py",
    ], [])


def test_a_root_pattern_overrides_the_top_level_one_below_it(monorepo):
    cfg = layout("  roots: [test, {path: test/registered/models, pattern: bench_*.py}]\n")
    assert discover(monorepo, cfg) == ([
        "test/registered/ascend/deep/test_npu2.py",
        "test/registered/ascend/test_npu.py",
        "test/registered/models/bench_c.py",
        "test/registered/test_a.py",
    ], [])


def test_a_list_of_patterns(monorepo):
    cfg = layout("  roots: [test/registered/models, python]\n  pattern: [testing_*.py, bench_*.py]\n")
    assert discover(monorepo, cfg) == ([
        "python/pkg/jit_kernel/benchmark/bench_mm.py",
        "test/registered/models/bench_c.py",
        "test/registered/models/testing_b.py",
    ], [])


@pytest.mark.parametrize("exclude, expected", [
    ([], ["test/registered/ascend/deep/test_npu2.py", "test/registered/ascend/test_npu.py",
          "test/registered/test_a.py"]),
    (["ascend"], ["test/registered/test_a.py"]),
    (["ascend/"], ["test/registered/test_a.py"]),
    (["/test/registered/ascend/deep/"], ["test/registered/ascend/test_npu.py", "test/registered/test_a.py"]),
    (["**/test_npu*.py"], ["test/registered/test_a.py"]),
    (["test_a.py", "**/deep/**"], ["test/registered/ascend/test_npu.py"]),
])
def test_exclude_drops_files_and_directories(monorepo, exclude, expected):
    shown = ", ".join(f"'{g}'" for g in exclude)
    assert discover(monorepo, layout(f"  roots: [test]\n  exclude: [{shown}]\n")) == (expected, [])


def test_excluded_conftest_and_init_files_are_not_test_files(monorepo):
    # With `pattern: '*.py'` conftest.py and __init__.py would be test files (and unregistered).
    cfg = layout("  roots: [test/registered/models]\n  pattern: '*.py'\n"
                 "  exclude: ['**/conftest.py', '**/__init__.py']\n")
    assert discover(monorepo, cfg) == (["test/registered/models/bench_c.py",
                                        "test/registered/models/testing_b.py"], [])


def test_an_excluded_root_finds_nothing(monorepo):
    cfg = layout("  roots: [test/registered/ascend, python]\n  exclude: [test/registered/ascend/]\n")
    assert discover(monorepo, cfg) == (["python/pkg/jit_kernel/benchmark/test_mm.py",
                                        "python/pkg/jit_kernel/test_kernel.py"], [])


def test_symlinks_below_an_excluded_directory_are_never_reached(monorepo, outside):
    os.symlink(outside, monorepo / "test" / "registered" / "ascend" / "vendored")
    os.symlink("/etc/passwd", monorepo / "test" / "registered" / "ascend" / "test_passwd.py")
    cfg = layout("  roots: [test]\n  exclude: [test/registered/ascend/**]\n")
    assert discover(monorepo, cfg) == (["test/registered/test_a.py"], [])


def test_an_excluded_symlinked_directory_is_skipped_unfollowed_and_unreported(monorepo, outside):
    # The vendored directory is a symlink out of the checkout: excluded, it is not read at all,
    # so neither test_foreign.py behind it nor a refusal appears.
    os.symlink(outside, monorepo / "test" / "vendor")
    for glob in ("vendor", "vendor/", "test/vendor/**"):
        cfg = layout(f"  roots: [test]\n  exclude: ['{glob}', '**/ascend/**']\n")
        assert discover(monorepo, cfg) == (["test/registered/test_a.py"], [])


def test_a_symlink_is_still_refused_where_no_exclude_glob_covers_it(monorepo, outside):
    os.symlink(outside, monorepo / "test" / "vendor")
    cfg = layout("  roots: [test/registered]\n  exclude: ['**/ascend/**', 'test/vendor/**']\n")
    assert discover(monorepo, cfg) == (["test/registered/test_a.py"], [])
    # `test/vendor/*.py` matches files below test/vendor, not the directory itself: it is walked.
    cfg = layout("  roots: [test]\n  exclude: ['**/ascend/**', 'test/vendor/*.py']\n")
    files, errors = discover(monorepo, cfg)
    assert files == ["test/registered/test_a.py"]
    assert located(errors) == [("test/vendor", None, None, f"directory test/vendor is a symlink; {REFUSES}",
                                SYMLINK_HINT)]


def test_a_symlinked_test_file_matching_a_root_pattern_is_refused(monorepo):
    os.symlink("/etc/passwd", monorepo / "python" / "pkg" / "jit_kernel" / "benchmark" / "bench_passwd.py")
    files, errors = discover(monorepo, layout(ISSUE_LAYOUT))
    assert files == ["python/pkg/jit_kernel/benchmark/bench_mm.py", "test/registered/models/testing_b.py",
                     "test/registered/test_a.py"]
    assert located(errors) == [("python/pkg/jit_kernel/benchmark/bench_passwd.py", None, None,
                                "test file python/pkg/jit_kernel/benchmark/bench_passwd.py is a symlink; "
                                f"{REFUSES}", SYMLINK_HINT)]


EXAMPLE_TESTS = [
    "tests/e2e/session_server/test_session_multiturn.py",
    "tests/e2e/session_server/test_session_tool_calls.py",
    "tests/e2e/test_fsdp_checkpoint_resume.py",
    "tests/e2e/test_fsdp_dpo_4gpu.py",
    "tests/e2e/test_fsdp_grpo.py",
    "tests/e2e/test_gb200_scaling.py",
    "tests/e2e/test_megatron_long_context.py",
    "tests/e2e/test_megatron_nightly_convergence.py",
    "tests/e2e/test_megatron_ppo_4gpu.py",
    "tests/e2e/test_megatron_sft.py",
    "tests/e2e/test_rocm_fsdp_grpo.py",
    "tests/e2e/test_rocm_megatron_sft.py",
    "tests/e2e/test_sglang_rollout.py",
    "tests/fast/test_advantages.py",
    "tests/fast/test_kl.py",
    "tests/fast/test_rollout.py",
    "tests/fast/test_session_protocol.py",
]


def test_the_example_repository_is_discovered_as_before():
    assert discover(EXAMPLE_REPO, load_config(EXAMPLE_REPO)) == (EXAMPLE_TESTS, [])


@pytest.mark.parametrize("body", [
    "  roots: [tests/fast, {path: tests/e2e, pattern: [test_*.py]}]\n",
    "  roots: [tests]\n  pattern: [test_*.py, conftest.py]\n  exclude: ['**/conftest.py']\n",
])
def test_the_example_repository_in_the_new_forms(body):
    assert discover(EXAMPLE_REPO, layout(body)) == (EXAMPLE_TESTS, [])


# -- exclude globs: a path is matched itself, its directories when they were entered ----------

EXCLUDE_POOL = ["a/", "a/b/", "**/c/", "b", "**/test_2*.py", "a/**", "!a/b/test_1.py", "!a/", "/x/a/",
                "x/**/b/", "**/deep/**", "test_3.py", "!**/test_3.py", "c/test_*.py"]
TREE_POOL = [f"{d}/test_{i}.py" for d in ("x", "x/a", "x/a/b", "x/b", "x/c", "x/a/c/deep", "x/b/deep", "y/a")
             for i in range(4)]


@settings(max_examples=150, deadline=None)
@given(files=st.lists(st.sampled_from(TREE_POOL), min_size=1, max_size=12, unique=True),
       exclude=st.lists(st.sampled_from(EXCLUDE_POOL), max_size=4, unique=True),
       roots=st.sampled_from([["x"], ["x/a"], ["x", "x/a/c"], ["."], ["y", "x/b"]]))
@example(files=["x/a/test_0.py"], exclude=["a/"], roots=["x/a"])  # the root itself is excluded
@example(files=["x/a/c/deep/test_1.py"], exclude=["**/c/"], roots=["x", "x/a/c"])  # a directory above a root
@example(files=["x/a/b/test_1.py", "x/a/test_1.py"], exclude=["a/", "!a/b/test_1.py"], roots=["x"])
def test_discovery_drops_exactly_what_the_exclude_globs_drop(files, exclude, roots):
    # The reference: a file is found when it is under a root, matches the pattern and
    # neither it nor any directory above it is excluded (`Discovery.excluded`, every level).
    shown = ", ".join(f"'{g}'" for g in exclude)
    cfg = layout(f"  roots: [{', '.join(roots)}]\n  exclude: [{shown}]\n")
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        touch(repo, *files, *(f"{r}/.keep" for r in roots if r != "."))
        expected = sorted(f for f in files if cfg.discovery.is_test_file(f))
        assert discover(repo, cfg) == (expected, [])
