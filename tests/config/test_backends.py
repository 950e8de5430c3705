"""`backends:` the built-in cpu, cuda and rocm, declared backends, and where a backend is named."""

from __future__ import annotations

import pytest
from config_cases import HEAD, P, coded, coded_err, errors

from ci_policy.config.top import parse_config

DECLARE = "declare it in the configuration: backends: {{{}: {{accelerator: true}}}}"
NPU_STAGE = "stages:\n  - {name: npu-a3, backend: npu, runs_on: [a3]}\n"


def with_backends(backends: str, stages: str = NPU_STAGE, extra: str = "") -> str:
    return HEAD + backends + stages + extra


def test_without_backends_the_built_ins_are_all_there_are():
    config = parse_config(HEAD + "stages:\n  - {name: cpu, backend: cpu}\n")
    assert config.backends.names == ("cpu", "cuda", "rocm")
    assert config.backends.accelerators == ("cuda", "rocm")
    assert [config.is_accelerator(b) for b in ("cpu", "cuda", "rocm", "npu")] == [False, True, True, False]


def test_declared_backends_follow_the_built_ins_and_are_accelerators_by_default():
    config = parse_config(with_backends("backends:\n  npu: {accelerator: true}\n  xpu:\n  arm: {accelerator: false}\n"))
    assert config.backends.names == ("cpu", "cuda", "rocm", "npu", "xpu", "arm")
    assert config.backends.accelerators == ("cuda", "rocm", "npu", "xpu")
    assert config.backends.line == 5


def test_a_stage_of_a_declared_backend_gets_the_accelerator_defaults():
    config = parse_config(with_backends(
        "backends: {npu: {}, arm: {accelerator: false}}\n",
        NPU_STAGE + "  - {name: arm, backend: arm}\n"))
    npu, arm = config.stages
    assert (npu.backend, npu.runner, npu.diff_pruned) == ("npu", "python", True)
    assert (arm.backend, arm.runner, arm.diff_pruned) == ("arm", "pytest", False)


def test_an_accelerator_stage_needs_runs_on_and_a_non_accelerator_one_does_not():
    text = with_backends("backends: {npu: {}, arm: {accelerator: false}}\n",
                         "stages:\n  - {name: n, backend: npu}\n  - {name: a, backend: arm}\n")
    assert coded(text) == [coded_err(text, "{name: n", "stages[0].runs_on: required for npu stages that are not "
                                     "external", "CP103", "list the runner labels, e.g. runs_on: [h200, 4gpu]")]


def test_a_stage_of_an_undeclared_backend_says_how_to_declare_it():
    text = with_backends("")
    assert coded(text) == [coded_err(text, "npu, runs_on", "stages[0].backend: expected one of cpu, cuda, rocm, "
                                     "got 'npu'", "CP105", "did you mean 'cpu'? Otherwise, " + DECLARE.format("npu"))]
    text = with_backends("backends: {xpu: {}}\n", "stages:\n  - {name: g, backend: gaudi, runs_on: [g]}\n")
    assert coded(text) == [coded_err(text, "gaudi", "stages[0].backend: expected one of cpu, cuda, rocm, xpu, "
                                     "got 'gaudi'", "CP105", DECLARE.format("gaudi"))]


@pytest.mark.parametrize("backends, needle, message, code, hint", [
    ("backends: {NPU: {}}\n", "NPU", "backends.NPU: 'NPU' is not a valid backend name (expected [a-z][a-z0-9_]*)",
     "CP105", "use lower-case letters, digits and '_', e.g. npu"),
    ("backends: {npu-a3: {}}\n", "npu-a3", "backends.npu-a3: 'npu-a3' is not a valid backend name "
     "(expected [a-z][a-z0-9_]*)", "CP105", "use lower-case letters, digits and '_', e.g. npu"),
    ("backends: {cpu: {accelerator: true}}\n", "cpu", "backends.cpu: cpu is built in with accelerator: false and "
     "cannot be redeclared differently", "CP108", "remove cpu from backends"),
    ("backends: {cuda: {accelerator: false}}\n", "cuda", "backends.cuda: cuda is built in with accelerator: true "
     "and cannot be redeclared differently", "CP108", "remove cuda from backends"),
    ("backends: {npu: {acelerator: true}}\n", "acelerator", "backends.npu.acelerator: unknown key; did you mean "
     "'accelerator'?", "CP102", "allowed keys here: accelerator, container_options"),
    ("backends: {npu: {accelerator: 1}}\n", "1}", "backends.npu.accelerator: expected a boolean, got an integer "
     "('1')", "CP104", None),
    ("backends: [npu]\n", "[npu]", "backends: expected a mapping, got a list", "CP104", None),
])
def test_invalid_backends_are_located(backends, needle, message, code, hint):
    text = with_backends(backends, "stages:\n  - {name: cpu, backend: cpu}\n")
    assert coded(text) == [coded_err(text, needle, message, code, hint)]


def test_a_built_in_redeclared_the_same_is_accepted():
    config = parse_config(with_backends("backends: {cuda: {accelerator: true}, cpu: {accelerator: false}, npu: }\n"))
    assert config.backends.names == ("cpu", "cuda", "rocm", "npu")


def test_an_implicit_root_and_a_file_run_image_may_name_a_declared_backend():
    config = parse_config(with_backends(
        "backends: {npu: {}}\n", extra="file_run:\n  image: {npu: ghcr.io/org/ci-npu}\n").replace(
        "  roots: [tests]\n", "  roots: [tests]\n  implicit:\n    - {root: tests, backend: npu, suite: npu-a3, "
        "est_time: 5}\n"))
    assert config.discovery.implicit[0].backend == "npu"
    assert config.file_run.image_for("npu") == "ghcr.io/org/ci-npu"


def test_a_file_run_image_of_an_undeclared_backend_is_an_unknown_key():
    text = with_backends("", "stages:\n  - {name: cpu, backend: cpu}\n",
                         "file_run:\n  image: {npu: ghcr.io/org/ci-npu}\n")
    assert errors(text) == [(P, 7, 11, "file_run.image.npu: unknown key; did you mean 'cpu'?",
                             "allowed keys here: cpu, cuda, rocm")]
