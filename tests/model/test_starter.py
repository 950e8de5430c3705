"""The starter configuration `ci-policy init` writes: exact texts, inferences, and hostile checkouts.

- The built-in dialect and the sglang dialect each give an exact YAML text (and labels file).
- Values are quoted so that any suite or path reads back as itself, through the project's
  own configuration parser.
- Nothing is guessed: a suite with two backends, a non-literal suite, an unreadable file
  are notes; skipped directories and symlinks are never read.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from ci_policy.config.top import parse_config
from ci_policy.errors import Diagnostic, InputError
from ci_policy.model.lint import lint
from ci_policy.model.starter import Placeholder, quote, starter

MAIN = '\nif __name__ == "__main__":\n    unittest.main()\n'

BUILTIN = {
    "tests/e2e/test_fsdp.py": "from ci_policy import register_cuda_ci, register_rocm_ci\n"
                              'register_cuda_ci(est_time=300, suite="stage-b-1-gpu", labels=["fsdp"])\n'
                              'register_rocm_ci(480, "stage-b-1-gpu-amd", labels=["fsdp", "rocm"])\n' + MAIN,
    "tests/e2e/test_megatron.py": "from ci_policy import register_cuda_ci\n"
                                  'register_cuda_ci(est_time=1200.5, suite="stage-b-1-gpu", labels=["megatron"], '
                                  "nightly=True)\n" + MAIN,
    # Disabled: needs no __main__ block, so its stage can still run files as `python FILE`.
    "tests/e2e/test_flaky.py": "from ci_policy import register_cuda_ci\n"
                               'register_cuda_ci(est_time=60, suite="stage-c-4-gpu", labels=["megatron"], '
                               'disabled="flaky")\n',
    "tests/e2e/helpers.py": "def helper():\n    pass\n",
    "tests/e2e/conftest.py": "",
    "tests/unit/test_config.py": "from ci_policy import register_cpu_ci\n"
                                 'register_cpu_ci(est_time=5, suite="unit")\n\ndef test_x():\n    pass\n',
    "tests/unit/test_utils.py": "def test_nothing_registered():\n    pass\n",
    "tests/unit/__init__.py": "",
    "bench/bench_kernels.py": 'from ci_policy import register_cpu_ci\nregister_cpu_ci(est_time=30, suite="unit")\n',
    "bench/bench_helpers.py": "",
    "src/pkg/core.py": "def register_cuda_ci(*args, **kwargs):\n    pass\n",
    # Never read: a virtualenv, dependencies, a hidden directory.
    ".venv/lib/test_vendored.py": 'register_cuda_ci(est_time=1, suite="vendored")\n',
    "node_modules/x/test_js.py": 'register_cuda_ci(est_time=1, suite="vendored")\n',
    "env3/pyvenv.cfg": "home = /usr/bin\n",
    "env3/lib/test_site.py": 'register_cuda_ci(est_time=1, suite="vendored")\n',
    ".github/scripts/test_ci.py": 'register_cuda_ci(est_time=1, suite="vendored")\n',
}

BUILTIN_YAML = """\
# yaml-language-server: $schema=https://raw.githubusercontent.com/ci-policy/ci-policy/main/ci_policy/schemas/\
config.schema.json
# ci-policy configuration: a starter written by `ci-policy init` from the markers and workflows of this checkout.
# Check every line marked TODO, then run `ci-policy lint`.
version: 1
labels_file: "labels.py"
discovery:
  roots:
    - {path: "bench", pattern: ["bench_*.py"]}
    - "tests"
  pattern: "test_*.py"
  exclude:
    - "bench/bench_helpers.py"  # no registration, so no stage would run it
    - "tests/unit/test_utils.py"  # no registration, so no stage would run it
cadences:
  nightly_selects: nightly_only  # nightly=True registrations run only in scheduled runs
stages:
  - name: "unit"  # 2 files, est_time total 35s
    backend: "cpu"
    runner: "pytest"  # 2 of 2 enabled files lack an `if __name__ == "__main__":` block, so `python FILE` would run no test there
  - name: "stage-b-1-gpu"  # 2 files, est_time total 1500.5s
    backend: "cuda"
    runner: "python"  # every enabled file has an `if __name__ == "__main__":` block
    runs_on: ["TODO-runner"]  # TODO: the runner labels of this stage's jobs; no workflow names them
  - name: "stage-c-4-gpu"  # 1 file, est_time total 60s
    backend: "cuda"
    runner: "python"  # no enabled file
    runs_on: ["TODO-runner"]  # TODO: the runner labels of this stage's jobs; no workflow names them
  - name: "stage-b-1-gpu-amd"  # 1 file, est_time total 480s
    backend: "rocm"
    runner: "python"  # every enabled file has an `if __name__ == "__main__":` block
    runs_on: ["TODO-runner"]  # TODO: the runner labels of this stage's jobs; no workflow names them
"""  # noqa: E501

BUILTIN_LABELS = """\
# The label registry of ci-policy (written by `ci-policy init`): one entry per label the tests use.
# A PR labelled run-ci-<name> asks for the tests carrying <name>.
KNOWN_LABELS = {
    'fsdp': 'TODO: describe',
    'megatron': 'TODO: describe',
    'rocm': 'TODO: describe',
}
"""

SGLANG = {
    "test/registered/core/test_two.py": "import unittest\n"
                                        "from sglang.test.ci.ci_register import register_amd_ci, register_cuda_ci\n"
                                        'register_cuda_ci(est_time=120, suite="stage-b-test-1-gpu-large")\n'
                                        'register_amd_ci(est_time=600, suite="stage-b-test-1-gpu-small-amd", '
                                        "nightly=True)\n" + MAIN,
    "test/registered/core/test_three.py": "import unittest\n"
                                          'register_cpu_ci = _load_module("ci_register").register_cpu_ci\n'
                                          'register_cuda_ci(est_time=300, stage="base-b", '
                                          'runner_config="1-gpu-large")\n'
                                          'register_cpu_ci(est_time=30, suite="stage-a-test-cpu")\n'
                                          'register_npu_ci(est_time=400, suite="nightly-1-npu-a3", nightly=True)\n'
                                          + MAIN,
    "test/registered/xpu/test_xpu.py": 'register_xpu_ci(est_time=200, suite="per-commit-xpu")\n',
    "test/registered/core/test_disabled.py": 'register_cuda_ci(est_time=90, suite="stage-b-test-1-gpu-large", '
                                             'disabled="flaky on H100")\n',
    "test/registered/kernels/test_group.py": 'register_cuda_ci(est_time=60, stage="base-b", '
                                             'runner_config="1-gpu-large", in_process_group="kernels")\n' + MAIN,
    "test/registered/tpu/test_tpu.py": 'register_tpu_ci(est_time=45, suite="per-commit-tpu", max_retries=2)\n' + MAIN,
    "python/sglang/test/ci/ci_register.py": "def register_cuda_ci(est_time, suite=None, **kwargs):\n    pass\n",
    "python/sglang/jit_kernel/benchmark/bench_rope.py": 'register_cuda_ci(est_time=30, '
                                                        'suite="stage-b-test-1-gpu-large")\n',
}

SGLANG_YAML = """\
# yaml-language-server: $schema=https://raw.githubusercontent.com/ci-policy/ci-policy/main/ci_policy/schemas/\
config.schema.json
# ci-policy configuration: a starter written by `ci-policy init` from the markers and workflows of this checkout.
# Check every line marked TODO, then run `ci-policy lint`.
version: 1
gpu_requires_labels: false  # some accelerator registrations name no label
backends:
  "npu": {accelerator: true}
  "tpu": {accelerator: true}  # from the marker name register_tpu_ci
  "xpu": {accelerator: true}
markers:
  names:
    "register_amd_ci": "rocm"
    "register_npu_ci": "npu"
    "register_tpu_ci": "tpu"
    "register_xpu_ci": "xpu"
  extra_arguments:
    "in_process_group": "string"
    "max_retries": "integer"
    "runner_config": "string"
    "stage": "string"
  suite: "{stage}-test-{runner_config}"  # the suite of a call without suite=
discovery:
  roots:
    - {path: "python/sglang/jit_kernel/benchmark", pattern: ["bench_*.py"]}
    - "test/registered"
  pattern: "test_*.py"
cadences:
  nightly_selects: nightly_only  # nightly=True registrations run only in scheduled runs
stages:
  - name: "stage-a-test-cpu"  # 1 file, est_time total 30s
    backend: "cpu"
    runner: "python"  # every enabled file has an `if __name__ == "__main__":` block
  - name: "base-b-test-1-gpu-large"  # 2 files, est_time total 360s
    backend: "cuda"
    runner: "python"  # every enabled file has an `if __name__ == "__main__":` block
    runs_on: ["TODO-runner"]  # TODO: the runner labels of this stage's jobs; no workflow names them
  - name: "stage-b-test-1-gpu-large"  # 3 files, est_time total 240s
    backend: "cuda"
    runner: "pytest"  # 1 of 2 enabled files lacks an `if __name__ == "__main__":` block, so `python FILE` would run no test there
    runs_on: ["TODO-runner"]  # TODO: the runner labels of this stage's jobs; no workflow names them
  - name: "stage-b-test-1-gpu-small-amd"  # 1 file, est_time total 600s
    backend: "rocm"
    runner: "python"  # every enabled file has an `if __name__ == "__main__":` block
    runs_on: ["TODO-runner"]  # TODO: the runner labels of this stage's jobs; no workflow names them
  - name: "nightly-1-npu-a3"  # 1 file, est_time total 400s
    backend: "npu"
    runner: "python"  # every enabled file has an `if __name__ == "__main__":` block
    runs_on: ["TODO-runner"]  # TODO: the runner labels of this stage's jobs; no workflow names them
  - name: "per-commit-tpu"  # 1 file, est_time total 45s
    backend: "tpu"
    runner: "python"  # every enabled file has an `if __name__ == "__main__":` block
    runs_on: ["TODO-runner"]  # TODO: the runner labels of this stage's jobs; no workflow names them
  - name: "per-commit-xpu"  # 1 file, est_time total 200s
    backend: "xpu"
    runner: "pytest"  # 1 of 1 enabled file lacks an `if __name__ == "__main__":` block, so `python FILE` would run no test there
    runs_on: ["TODO-runner"]  # TODO: the runner labels of this stage's jobs; no workflow names them
"""  # noqa: E501


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def notes(root: Path) -> list[tuple]:
    return [(n.path, n.line, n.message, n.hint, n.code, n.severity) for n in starter(root).notes]


def test_the_builtin_dialect_gives_this_exact_configuration_and_labels_file(tmp_path):
    result = starter(write(tmp_path, BUILTIN))
    assert result.config_text == BUILTIN_YAML
    assert result.labels_text == BUILTIN_LABELS
    assert result.notes == ()
    assert (result.files, result.registrations, result.labels) == (5, 6, ("fsdp", "megatron", "rocm"))
    assert [(s.name, s.backend, s.files, s.est_time, s.runner) for s in result.stages] == [
        ("unit", "cpu", 2, 35, "pytest"), ("stage-b-1-gpu", "cuda", 2, 1500.5, "python"),
        ("stage-c-4-gpu", "cuda", 1, 60, "python"), ("stage-b-1-gpu-amd", "rocm", 1, 480, "python")]
    assert result.placeholders == (
        Placeholder(None, 23, "stages[1].runs_on: the runner labels of stage stage-b-1-gpu (cuda)",
                    "stages[1].runs_on"),
        Placeholder(None, 27, "stages[2].runs_on: the runner labels of stage stage-c-4-gpu (cuda)",
                    "stages[2].runs_on"),
        Placeholder(None, 31, "stages[3].runs_on: the runner labels of stage stage-b-1-gpu-amd (rocm)",
                    "stages[3].runs_on"),
        Placeholder("labels.py", 4, "the description of label fsdp"),
        Placeholder("labels.py", 5, "the description of label megatron"),
        Placeholder("labels.py", 6, "the description of label rocm"),
    )
    lines = BUILTIN_YAML.splitlines()
    assert [lines[p.line - 1].strip() for p in result.placeholders if p.path is None] == [
        'runs_on: ["TODO-runner"]  # TODO: the runner labels of this stage\'s jobs; no workflow names them'] * 3


def test_the_configuration_as_written_parses_with_the_project_parser(tmp_path):
    result = starter(write(tmp_path, BUILTIN))
    config = parse_config(result.config_text)
    assert [(s.name, s.backend, s.runner, s.runs_on) for s in config.stages] == [
        ("unit", "cpu", "pytest", ()), ("stage-b-1-gpu", "cuda", "python", ("TODO-runner",)),
        ("stage-c-4-gpu", "cuda", "python", ("TODO-runner",)),
        ("stage-b-1-gpu-amd", "rocm", "python", ("TODO-runner",))]
    assert config.cadences.nightly_selects == "nightly_only"
    assert config.discovery.roots == ("bench", "tests")
    assert config.discovery.root_patterns == (("bench", ("bench_*.py",)),)
    assert config.discovery.exclude == ("bench/bench_helpers.py", "tests/unit/test_utils.py")
    assert (config.labels_file, config.gpu_requires_labels) == ("labels.py", True)


def test_the_sglang_dialect_gives_this_exact_configuration(tmp_path):
    result = starter(write(tmp_path, SGLANG))
    assert result.config_text == SGLANG_YAML
    assert result.labels_text is None
    assert result.notes == ()
    assert (result.files, result.registrations) == (7, 10)
    assert yaml.safe_load(SGLANG_YAML)["markers"] == {
        "names": {"register_amd_ci": "rocm", "register_npu_ci": "npu", "register_tpu_ci": "tpu",
                  "register_xpu_ci": "xpu"},
        "extra_arguments": {"in_process_group": "string", "max_retries": "integer", "runner_config": "string",
                            "stage": "string"},
        "suite": "{stage}-test-{runner_config}"}


def test_only_the_builtin_markers_with_suites_need_no_backends_or_markers_section(tmp_path):
    write(tmp_path, {"tests/test_a.py": 'register_cpu_ci(est_time=1, suite="a")\n',
                     "tests/test_b.py": 'register_rocm_ci(est_time=2, suite="b")\n' + MAIN})
    text = starter(tmp_path).config_text
    assert "backends:" not in text and "markers:" not in text
    assert "gpu_requires_labels: false  # some accelerator registrations name no label\n" in text


@pytest.mark.parametrize("value", [
    "plain", "true", "null", "1.0", "0x10", "~", "- a", "a: b", "#c", "[x]", "{y}", "'q'", '"dq"', "back\\slash",
    "tab\there", "new\nline", "\u2028", "\x7f", "é", "\U0001f600", "*alias", "&anchor", "!tag", "%", "@", "`",
    " lead", "trail ", "",
])
def test_quote_reads_back_as_the_same_string(value):
    assert yaml.safe_load(f"k: {quote(value)}  # a comment") == {"k": value}


def test_yaml_special_suites_and_paths_round_trip_through_the_config_parser(tmp_path):
    odd = "odd: #dir [1] {x}"
    write(tmp_path, {
        f"{odd}/test_a.py": 'register_cpu_ci(est_time=1, suite="true")\n',
        f"{odd}/test_b.py": 'register_cpu_ci(est_time=1, suite="1.0")\n',
        f"{odd}/test_c.py": 'register_cpu_ci(est_time=1, suite="null")\n',
        f"{odd}/test_[*]?.py": "x = 1\n",  # unregistered, and a glob in its own name
        f"{odd}/sub/test_[*]?.py": "x = 1\n",
        f"{odd}/sub/test_d.py": 'register_cpu_ci(est_time=1, suite="null")\n',
    })
    result = starter(tmp_path)
    config = parse_config(result.config_text)
    assert [s.name for s in config.stages] == ["1.0", "null", "true"]
    assert config.discovery.roots == (odd,)
    # A name repeated among the unregistered files is one glob; it matches exactly those files.
    assert config.discovery.exclude == ("**/test_[[][*]][?].py",)
    assert config.discovery.excluded(f"{odd}/test_[*]?.py") and config.discovery.excluded(f"{odd}/sub/test_[*]?.py")
    assert not config.discovery.excluded(f"{odd}/test_a.py") and not config.discovery.excluded(f"{odd}/test_x.py")


def test_a_lone_unregistered_file_is_excluded_by_its_path_and_a_root_file_anchored(tmp_path):
    write(tmp_path, {"test_top.py": 'register_cpu_ci(est_time=1, suite="a")\n',
                     "test_[x].py": "",
                     "tests/test_y.py": 'register_cpu_ci(est_time=1, suite="a")\n',
                     "tests/deep/test_z.py": ""})
    config = parse_config(starter(tmp_path).config_text)
    assert config.discovery.roots == (".",)
    assert config.discovery.exclude == ("/test_[[]x].py", "tests/deep/test_z.py")
    assert [f for f in ("test_top.py", "test_[x].py", "tests/test_y.py", "tests/deep/test_z.py", "x/test_[x].py")
            if config.discovery.excluded(f)] == ["test_[x].py", "tests/deep/test_z.py"]


def test_an_exclude_of_a_path_starting_with_a_bang_or_a_hash_is_escaped(tmp_path):
    # Unescaped, `!x/...` would negate and `#x/...` would be a comment in a gitignore-style glob.
    write(tmp_path, {"!x/test_a.py": "", "!x/test_b.py": 'register_cpu_ci(est_time=1, suite="a")\n',
                     "#y/test_c.py": "", "#y/test_d.py": 'register_cpu_ci(est_time=1, suite="a")\n'})
    config = parse_config(starter(tmp_path).config_text)
    assert config.discovery.exclude == ("\\!x/test_a.py", "\\#y/test_c.py")
    assert [f for f in ("!x/test_a.py", "!x/test_b.py", "#y/test_c.py", "#y/test_d.py")
            if config.discovery.excluded(f)] == ["!x/test_a.py", "#y/test_c.py"]


def test_roots_merge_siblings_and_stop_below_unregistered_files(tmp_path):
    write(tmp_path, {"test/registered/a/test_1.py": 'register_cpu_ci(est_time=1, suite="a")\n',
                     "test/registered/b/c/test_2.py": 'register_cpu_ci(est_time=1, suite="a")\n',
                     "test/manual/test_3.py": "def test_not_registered():\n    pass\n",
                     "test/registered/b/util.py": "",
                     "tools/deep/er/bench_x.py": 'register_cpu_ci(est_time=1, suite="a")\n',
                     "tools/bench_other.py": ""})
    config = parse_config(starter(tmp_path).config_text)
    assert config.discovery.roots == ("test/registered", "tools/deep/er")
    assert config.discovery.root_patterns == (("tools/deep/er", ("bench_*.py",)),)
    assert (config.discovery.pattern, config.discovery.exclude) == ("test_*.py", ())


def test_several_patterns_and_a_suffix_pattern(tmp_path):
    write(tmp_path, {"t/test_a.py": 'register_cpu_ci(est_time=1, suite="a")\n',
                     "t/testing_b.py": 'register_cpu_ci(est_time=1, suite="a")\n',
                     "t/c_test.py": 'register_cpu_ci(est_time=1, suite="a")\n',
                     "t/single.py": 'register_cpu_ci(est_time=1, suite="a")\n'})
    config = parse_config(starter(tmp_path).config_text)
    assert config.discovery.pattern == ("*_test.py", "single.py", "test_*.py", "testing_*.py")


def test_a_suite_with_two_backends_is_a_stage_per_backend_and_lints_with_no_error(tmp_path):
    # A stage is its (backend, suite): each backend's registrations are planned by a stage of its
    # own name and backend, so nothing is accepted as unknown and nothing is suppressed.
    write(tmp_path, {"tests/test_a.py": 'register_cuda_ci(est_time=1, suite="shared")\n' + MAIN,
                     "tests/test_b.py": 'register_rocm_ci(est_time=1, suite="shared")\n' + MAIN,
                     "tests/test_d.py": 'register_rocm_ci(est_time=1, suite="shared")\n' + MAIN,
                     "tests/test_c.py": 'register_cpu_ci(est_time=1, suite="cpu")\n'})
    result = starter(tmp_path)
    assert [(s.name, s.backend, s.files) for s in result.stages] == [
        ("cpu", "cpu", 1), ("shared", "cuda", 1), ("shared", "rocm", 2)]
    assert "lint:" not in result.config_text
    assert notes(tmp_path) == []
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "ci-policy.yml").write_text(result.config_text)
    report = lint(tmp_path)
    assert [(d.code, d.path) for d in report.errors] == []
    assert report.suppressed == ()


def test_what_cannot_be_read_is_a_note_never_a_guess(tmp_path):
    write(tmp_path, {
        "tests/test_ok.py": 'register_cpu_ci(est_time=1, suite="ok")\n',
        "tests/test_dynamic.py": 'SUITE = "x"\nregister_cuda_ci(est_time=60 * 2, suite=SUITE)\n',
        "tests/test_template.py": 'register_cuda_ci(est_time=1, stage="a")\n',
        "tests/test_nosuite.py": "register_cuda_ci(est_time=1)\n",
        "tests/test_both.py": 'register_cuda_ci(est_time=1, suite="b-test-c", stage="a", runner_config="c")\n',
        "tests/test_star.py": "register_cuda_ci(*ARGS)\n",
        "tests/test_broken.py": "register_cuda_ci(est_time=1, suite='x'\n",
        "tests/test_notutf8.py": "",
        "tests/test_inside.py": 'def f():\n    register_cuda_ci(est_time=1, suite="inside")\n',
    })
    (tmp_path / "tests/test_notutf8.py").write_bytes(b"register_cpu_ci(1, '\xff')\n")
    hint = "write the value of {} itself"
    assert notes(tmp_path) == [
        ("tests/test_both.py", 1, "register_cuda_ci(...): suite 'b-test-c' differs from '{stage}-test-{runner_config}' "
         "= 'a-test-c'; the suite is used", "give either suite or stage and runner_config", None, "warning"),
        ("tests/test_broken.py", 1, "skipped: tests/test_broken.py is not valid Python: '(' was never closed",
         "fix the syntax error", None, "warning"),
        ("tests/test_dynamic.py", 2, "register_cuda_ci(...): est_time is not a literal", hint.format("est_time"),
         None, "warning"),
        ("tests/test_dynamic.py", 2, "register_cuda_ci(...): suite is not a literal; the call gives no stage",
         hint.format("suite"), None, "warning"),
        ("tests/test_nosuite.py", 1, "register_cuda_ci(...) has no suite; the call gives no stage", 'add suite="..."',
         None, "warning"),
        ("tests/test_notutf8.py", 1, "skipped: file tests/test_notutf8.py is not valid UTF-8", "save the file as UTF-8",
         None, "warning"),
        ("tests/test_star.py", 1, "register_cuda_ci(...) cannot be read: register_cuda_ci: *args is not allowed; write "
         "every argument literally; the call gives no stage", None, None, "warning"),
        ("tests/test_template.py", 1, "register_cuda_ci(...) has no suite, and stage and runner_config do not build "
         "one (both are needed); the call gives no stage", 'add suite="..."', None, "warning"),
    ]
    result = starter(tmp_path)
    assert [s.name for s in result.stages] == ["ok", "b-test-c"]
    # Files with a marker call are covered by discovery even when no stage came of it, so lint
    # reports their errors; a file calling a marker only inside a function is not registered.
    assert yaml.safe_load(result.config_text)["discovery"]["exclude"] == ["tests/test_inside.py"]
    assert result.files == 6


def test_extra_argument_types(tmp_path):
    write(tmp_path, {
        "t/test_a.py": 'register_cpu_ci(1, "a", retries=1, ratio=1, flag=True, tags=["x"], mixed="s", dyn=X)\n',
        "t/test_b.py": 'register_cpu_ci(1, "a", retries=2, ratio=0.5, flag=False, tags=[], mixed=1, none=None)\n',
        "t/test_c.py": 'register_cpu_ci(1, "a", mixed="t", odd={"k": 1})\n',
    })
    result = starter(tmp_path)
    assert yaml.safe_load(result.config_text)["markers"] == {"extra_arguments": {
        "dyn": "string", "flag": "boolean", "mixed": "string", "none": "string", "odd": "string",
        "ratio": "number", "retries": "integer", "tags": "strings"}}
    assert [(n.path, n.line, n.message) for n in result.notes] == [
        (None, None, "extra argument dyn has no literal value to take its type from; declared as string"),
        (None, None, "extra argument mixed has values of several types (integer: 1, string: 2); declared as the "
                     "most common one"),
        (None, None, "extra argument none has no literal value to take its type from; declared as string"),
        (None, None, "extra argument odd has no literal value to take its type from; declared as string"),
        ("t/test_a.py", 1, "register_cpu_ci(...): dyn is not a literal"),
        ("t/test_c.py", 1, "register_cpu_ci(...): odd={'k': 1} has no declarable type (string, integer, number, "
                           "boolean, strings)"),
    ]


def test_symlinks_are_never_followed(tmp_path):
    outside = write(tmp_path / "outside", {"test_secret.py": 'register_cuda_ci(est_time=1, suite="secret")\n',
                                           "pkg/test_p.py": 'register_cuda_ci(est_time=1, suite="secret")\n'})
    repo = write(tmp_path / "repo", {"tests/test_a.py": 'register_cpu_ci(est_time=1, suite="a")\n'})
    os.symlink(outside / "test_secret.py", repo / "tests" / "test_link.py")
    os.symlink(outside / "pkg", repo / "tests" / "linked")
    result = starter(repo)
    assert [s.name for s in result.stages] == ["a"]
    assert [(n.path, n.message, n.hint) for n in result.notes] == [
        ("tests/linked", "skipped tests/linked: a symlink; ci-policy refuses symlinks in a checkout",
         "replace the symlink with the real file or directory"),
        ("tests/test_link.py", "skipped tests/test_link.py: a symlink; ci-policy refuses symlinks in a checkout",
         "replace the symlink with the real file or directory"),
    ]


def test_a_checkout_without_markers_is_refused(tmp_path):
    write(tmp_path, {"tests/test_a.py": "def test():\n    pass\n", "src/m.py": "register_cuda_ci = None\n",
                     ".venv/test_v.py": 'register_cuda_ci(est_time=1, suite="v")\n'})
    with pytest.raises(InputError) as info:
        starter(tmp_path)
    assert info.value.diagnostic == Diagnostic(
        f"no test registrations in {tmp_path}: no Python file calls a register_<word>_ci(...) marker as a "
        "module-level statement", path=str(tmp_path),
        hint='register a test first, e.g. register_cpu_ci(est_time=60, suite="unit"), as '
             "docs/manual/markers.md describes")


def test_a_missing_checkout_is_refused(tmp_path):
    with pytest.raises(InputError) as info:
        starter(tmp_path / "nope")
    assert (info.value.diagnostic.code, info.value.diagnostic.message) == (
        "CP403", f"repository {tmp_path / 'nope'} is not a directory")


def test_directories_init_does_not_read_are_excluded_when_they_hold_test_file_names(tmp_path):
    write(tmp_path, {"tests/test_a.py": 'register_cpu_ci(est_time=1, suite="a")\n',
                     "tests/.venv/pyvenv.cfg": "", "tests/.venv/lib/test_site.py": "",
                     "tests/node_modules/pkg/test_js.py": "", "tests/build/notes.txt": "",
                     "tests/.pytest_cache/README.md": "", "tests/__pycache__/test_a.cpython-312.pyc": ""})
    result = starter(tmp_path)
    assert "  exclude:\n" + "".join(
        f'    - "{d}"  # not read by init (hidden, a virtualenv, build or dependency directory)\n'
        for d in ("tests/.venv/", "tests/node_modules/")) in result.config_text
    config = parse_config(result.config_text)
    assert config.discovery.exclude == ("tests/.venv/", "tests/node_modules/")


def test_a_literal_suite_wins_over_non_literal_template_arguments(tmp_path):
    write(tmp_path, {"t/test_a.py": 'register_cuda_ci(est_time=1, suite="s", stage=STAGE)\n',
                     "t/test_b.py": 'register_cuda_ci(est_time=1, stage=STAGE, runner_config="c")\n'})
    result = starter(tmp_path)
    assert [s.name for s in result.stages] == ["s"]
    assert [(n.path, n.message) for n in result.notes] == [
        (None, "extra argument stage has no literal value to take its type from; declared as string"),
        ("t/test_a.py", "register_cuda_ci(...): stage is not a literal"),
        ("t/test_b.py", "register_cuda_ci(...): stage is not a literal; the call gives no stage"),
    ]


def test_symlinks_to_other_files_are_skipped_without_a_note(tmp_path):
    write(tmp_path, {"tests/test_a.py": 'register_cpu_ci(est_time=1, suite="a")\n', "README.md": ""})
    os.symlink(tmp_path / "README.md", tmp_path / "tests" / "README.md")
    os.symlink(tmp_path / "tests", tmp_path / ".hidden-link")
    assert starter(tmp_path).notes == ()


def test_every_name_lint_reads_as_a_marker_is_found_and_its_backend_read_or_noted(tmp_path):
    write(tmp_path, {
        "t/test_a.py": 'register_Gaudi_ci(est_time=1, suite="hpu-a")\n',
        "t/test_b.py": 'register_my_tpu_ci(est_time=1, suite="tpu-b")\n',
        "t/test_c.py": 'register_9x_ci(est_time=1, suite="c")\n',
    })
    result = starter(tmp_path)
    data = yaml.safe_load(result.config_text)
    assert data["backends"] == {"gaudi": {"accelerator": True}, "my_tpu": {"accelerator": True}}
    assert data["markers"] == {"names": {"register_Gaudi_ci": "gaudi", "register_my_tpu_ci": "my_tpu"}}
    assert [(n.path, n.line, n.message, n.hint) for n in result.notes] == [
        ("t/test_c.py", 1, "register_9x_ci(...): no backend name can be read from the marker's name; the call "
                           "gives no stage",
         "declare a backend and map it in markers.names: {register_9x_ci: BACKEND}"),
    ]
    # What init wrote declares what lint reads: the one marker init could not name a backend for
    # is all that is left, as lint's undeclared-marker error.
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "ci-policy.yml").write_text(result.config_text)
    report = lint(tmp_path)
    assert [(d.code, d.path, d.line, d.col) for d in report.errors] == [("CP207", "t/test_c.py", 1, 1)]
    assert report.snapshot is not None and len(report.snapshot.registrations) == 2


# -- what the workflows say ---------------------------------------------------------------------------

GATED = "contains(github.event.pull_request.labels.*.name, 'run-ci')"


def test_workflows_give_runners_a_global_label_gate_schedules_and_the_collector_roots(tmp_path):
    write(tmp_path, {
        "tests/run.py": 'import glob\nFILES = glob.glob("suites/**/test_*.py", recursive=True)\n',
        "tests/suites/test_a.py": 'register_cuda_ci(est_time=10, suite="gpu")\n' + MAIN,
        "tests/suites/test_b.py": 'register_rocm_ci(est_time=20, suite="amd", nightly=True)\n' + MAIN,
        "tests/suites/test_helper.py": "def helper():\n    pass\n",
        "tests/suites/notes.py": "# not a test file by the collector's glob\n",
        "tests/other/test_c.py": 'register_cuda_ci(est_time=30, suite="gpu")\n' + MAIN,
        ".github/workflows/pr.yml": f"""\
on: [pull_request, push]
jobs:
  gpu:
    if: {GATED}
    runs-on: ${{{{ matrix.runner }}}}
    strategy: {{matrix: {{runner: [h100, h200]}}}}
    steps: [{{run: "cd tests && python run.py --hw cuda --suite gpu"}}]
  amd:
    if: {GATED}
    runs-on: [self-hosted, mi325]
    steps: [{{run: "cd tests && python run.py --hw amd --suite amd"}}]
""",
        ".github/workflows/weekly.yml": """\
on:
  schedule: [{cron: '0 3 * * 0'}, {cron: '0 1 * * *'}]
jobs:
  amd:
    runs-on: [self-hosted, mi355]
    steps: [{run: "cd tests && python run.py --hw amd --suite amd"}]
""",
    })
    result = starter(tmp_path)
    text = result.config_text
    assert '''discovery:
  roots:
    - "tests/suites"  # from tests/run.py's glob 'suites/**/test_*.py'
  pattern: "test_*.py"
  exclude:
    - "tests/suites/test_helper.py"  # no registration, so no stage would run it
pull_request:
  require_labels: ["run-ci"]  # every accelerator job of the workflows tests for it
cadences:
  schedules:
    "0 3 * * 0": weekly  # .github/workflows/weekly.yml
    "0 1 * * *": nightly  # .github/workflows/weekly.yml
  nightly_selects: nightly_only  # nightly=True registrations run only in scheduled runs
stages:
''' in text
    assert [(s.name, s.backend, s.runs_on, s.runs_on_from, s.cadences, s.requires_labels, s.variants)
            for s in result.stages] == [
        ("gpu", "cuda", ("h100",), ".github/workflows/pr.yml job gpu", ("regular",), (),
         (("h100", ("h100",)), ("h200", ("h200",)))),
        ("amd", "rocm", ("self-hosted", "mi325"), ".github/workflows/pr.yml job amd", ("regular", "nightly", "weekly"),
         (), (("mi325", ("self-hosted", "mi325")), ("mi355", ("self-hosted", "mi355")))),
    ]
    # A suite the workflows run on several runner pools runs on each: a variant per pool.
    assert """    variants:  # the workflows run it on each of these runner pools
      - {name: "mi325", runs_on: ["self-hosted", "mi325"]}
      - {name: "mi355", runs_on: ["self-hosted", "mi355"]}
""" in text
    assert result.not_discovered == ("tests/other/test_c.py",)
    assert [(n.path, n.line, n.message) for n in result.notes] == [
        ("tests/other/test_c.py", None, "tests/other/test_c.py registers tests but is not under the directories the "
                                        "workflows' collector reads (tests/suites); it is not discovered"),
    ]
    (tmp_path / ".github" / "ci-policy.yml").write_text(text)
    report = lint(tmp_path)
    assert (report.errors, report.warnings) == ((), ())
    assert report.snapshot is not None
    assert [(r.file, r.suite) for r in report.snapshot.registrations] == [
        ("tests/suites/test_a.py", "gpu"), ("tests/suites/test_b.py", "amd")]


def test_a_gate_shared_by_every_stage_run_on_pull_requests_is_the_pr_wide_gate(tmp_path):
    write(tmp_path, {
        "t/test_a.py": 'register_cuda_ci(est_time=1, suite="a")\n' + MAIN,
        "t/test_n.py": 'register_cuda_ci(est_time=1, suite="n", nightly=True)\n' + MAIN,
        ".github/workflows/pr.yml": f"on: pull_request\njobs:\n  a:\n    if: {GATED}\n    runs-on: h100\n"
                                    "    steps: [{run: python run.py --suite a}]\n",
        ".github/workflows/nightly.yml": "on: {schedule: [{cron: '0 0 * * *'}]}\njobs:\n  n:\n    runs-on: h200\n"
                                         "    steps: [{run: python run.py --suite n}]\n",
    })
    result = starter(tmp_path)
    assert result.require_labels == ("run-ci",)
    assert [(s.name, s.runs_on, s.cadences, s.requires_labels) for s in result.stages] == [
        ("a", ("h100",), ("regular",), ()), ("n", ("h200",), ("nightly",), ())]


def test_a_shared_suite_is_a_stage_per_backend(tmp_path):
    # A stage is its (backend, suite): both backends' stages, nothing ignored.
    write(tmp_path, {"t/test_a.py": 'register_cuda_ci(est_time=1, suite="shared")\n' + MAIN,
                     "t/test_b.py": 'register_rocm_ci(est_time=2, suite="shared")\n' + MAIN})
    result = starter(tmp_path)
    assert [(s.name, s.backend, s.files, s.est_time) for s in result.stages] == [
        ("shared", "cuda", 1, 1), ("shared", "rocm", 1, 2)]
    assert "lint:" not in result.config_text
    assert result.notes == ()


def test_names_read_from_workflows_cannot_break_out_of_a_comment(tmp_path):
    write(tmp_path, {
        "t/test_a.py": 'register_cuda_ci(est_time=1, suite="a")\n' + MAIN,
        ".github/workflows/ci.yml": 'on: {pull_request: {}, schedule: [{cron: "0 0 * * *"}]}\njobs:\n'
                                    '  "x\\nstages: []":\n    runs-on: h100\n'
                                    '    steps: [{run: "cd t && python3 run.py --suite a"}]\n',
        "t/run.py": 'FILES = "*\\nversion: 2/**/test_*.py"\n',
    })
    os.rename(tmp_path / ".github/workflows/ci.yml", tmp_path / ".github/workflows/ci\nversion: 3.yml")
    text = starter(tmp_path).config_text
    assert '    runs_on: ["h100"]  # from .github/workflows/ci\\u000aversion: 3.yml job x\\u000astages: []\n' in text
    assert '    "0 0 * * *": nightly  # .github/workflows/ci\\u000aversion: 3.yml\n' in text
    assert yaml.safe_load(text)["version"] == 1
    assert [s.name for s in parse_config(text).stages] == ["a"]


def test_a_collector_whose_directories_hold_no_registered_file_is_not_followed(tmp_path):
    write(tmp_path, {
        "t/test_a.py": 'register_cpu_ci(est_time=1, suite="a")\n',
        "ci/run.py": 'FILES = "suites/**/*.py"\n', "ci/suites/helper.py": "",
        ".github/workflows/ci.yml": 'on: push\njobs:\n  a:\n    runs-on: x\n'
                                    '    steps: [{run: "cd ci && python run.py --suite a"}]\n',
    })
    result = starter(tmp_path)
    assert [(r.path, r.pattern, r.source) for r in result.roots] == [("t", ("test_*.py",), None)]
    assert [(n.message, n.hint) for n in result.notes] == [
        ("the collector's directories (ci/suites) hold no file with markers; init took the discovery roots from the "
         "files instead", "check discovery.roots against the directories CI runs")]
