"""`markers:` marker names mapped to backends, extra arguments with a type, the suite template."""

from __future__ import annotations

import pytest
from config_cases import HEAD, coded, coded_err

from ci_policy.config.markers import template_fields
from ci_policy.config.top import parse_config

STAGES = "stages:\n  - {name: cpu, backend: cpu}\n"


def with_markers(markers: str, backends: str = "backends: {npu: {}}\n") -> str:
    return HEAD + backends + "markers:\n" + markers + STAGES


def test_without_markers_the_built_in_names_are_the_dialect():
    config = parse_config(HEAD + STAGES)
    assert dict(config.markers.names) == {"register_cpu_ci": "cpu", "register_cuda_ci": "cuda",
                                          "register_rocm_ci": "rocm"}
    assert (dict(config.markers.extra_arguments), config.markers.suite, config.markers.suite_fields) == ({}, None, ())


def test_declared_names_are_added_to_the_built_ins_and_several_may_share_a_backend():
    config = parse_config(with_markers(
        "  names: {register_amd_ci: rocm, register_mi300_ci: rocm, register_npu_ci: npu, register_cuda_ci: cuda}\n"
        "  extra_arguments: {stage: string, runner_config: string, gpus: integer, tags: strings}\n"
        '  suite: "{stage}-test-{runner_config}"\n'))
    assert dict(config.markers.names) == {
        "register_cpu_ci": "cpu", "register_cuda_ci": "cuda", "register_rocm_ci": "rocm",
        "register_amd_ci": "rocm", "register_mi300_ci": "rocm", "register_npu_ci": "npu"}
    assert config.markers.names_of("rocm") == ("register_rocm_ci", "register_amd_ci", "register_mi300_ci")
    assert dict(config.markers.extra_arguments) == {"stage": "string", "runner_config": "string",
                                                    "gpus": "integer", "tags": "strings"}
    assert (config.markers.suite, config.markers.suite_fields) == ("{stage}-test-{runner_config}",
                                                                  ("stage", "runner_config"))


@pytest.mark.parametrize("markers, needle, message, code, hint", [
    ("  names: {register_npu: npu}\n", "register_npu", "markers.names.register_npu: 'register_npu' is not a marker "
     "name (expected register_<word>_ci)", "CP105", "write e.g. register_npu_ci: npu"),
    ("  names: {register_ci_gate: cpu}\n", "register_ci_gate", "markers.names.register_ci_gate: register_ci_gate "
     "is the gate marker, not a registration marker", "CP105", "remove it from markers.names"),
    ("  names: {register_cuda_ci: rocm}\n", "rocm", "markers.names.register_cuda_ci: register_cuda_ci is built in "
     "for cuda and cannot be mapped to rocm", "CP108",
     "remove register_cuda_ci from markers.names, or map another name to rocm"),
    ("  names: {register_xpu_ci: xpu}\n", "xpu}", "markers.names.register_xpu_ci: backend 'xpu' is not declared "
     "(backends: cpu, cuda, rocm, npu)", "CP105",
     "declare it in the configuration: backends: {xpu: {accelerator: true}}"),
    ("  names: {register_xpu_ci: 3}\n", "3}", "markers.names.register_xpu_ci: expected a string, got an integer "
     "('3')", "CP104", None),
    ("  extra_arguments: {suite: string}\n", "suite", "markers.extra_arguments.suite: suite is a built-in argument "
     "of every registration marker (est_time, suite, labels, nightly, disabled)", "CP105",
     "remove suite from markers.extra_arguments"),
    ("  extra_arguments: {runner-config: string}\n", "runner-config", "markers.extra_arguments.runner-config: "
     "'runner-config' is not a Python argument name", "CP105", None),
    ("  extra_arguments: {stage: str}\n", "str}", "markers.extra_arguments.stage: expected one of string, integer, "
     "number, boolean, strings, got 'str'", "CP105", None),
    ("  extra_arguments: {stage: string}\n  suite: \"{stage}-{runner_config}\"\n", '"{stage}',
     "markers.suite: {runner_config} is not a declared extra argument (markers.extra_arguments: stage)", "CP108",
     "declare it: markers: {extra_arguments: {runner_config: string}}"),
    ("  suite: \"{stage\"\n", '"{stage', "markers.suite: '{stage' is not a valid template: expected '}' before "
     "end of string", "CP105", 'write e.g. "{stage}-test-{runner_config}"'),
    ("  suite: \"stage-}\"\n", '"stage', "markers.suite: 'stage-}' is not a valid template: Single '}' encountered "
     "in format string", "CP105", 'write e.g. "{stage}-test-{runner_config}"'),
    ("  extra_arguments: {stage: string}\n  suite: \"{stage!r}\"\n", '"{stage', "markers.suite: '{stage!r}': "
     "{stage} must be a bare field, without a conversion or format spec", "CP105",
     'write e.g. "{stage}-test-{runner_config}"'),
    ("  suite: \"{}-x\"\n", '"{}', "markers.suite: '{}-x': {} must name an extra argument, e.g. {stage}", "CP105",
     'write e.g. "{stage}-test-{runner_config}"'),
    ("  suite: \"fixed\"\n", '"fixed', "markers.suite: 'fixed' has no {field}, so every call would get the same "
     "suite", "CP105", 'write e.g. "{stage}-test-{runner_config}"'),
    ("  sute: x\n", "sute", "markers.sute: unknown key; did you mean 'suite'?", "CP102",
     "allowed keys here: extra_arguments, names, suite"),
])
def test_invalid_markers_are_located(markers, needle, message, code, hint):
    text = with_markers(markers)
    assert coded(text) == [coded_err(text, needle, message, code, hint)]


def test_a_marker_of_an_invalid_backends_section_is_not_checked_again():
    text = with_markers("  names: {register_npu_ci: npu}\n", backends="backends: {NPU: {}}\n")
    assert [e[3] for e in coded(text)] == [
        "backends.NPU: 'NPU' is not a valid backend name (expected [a-z][a-z0-9_]*)"]


def test_template_fields_are_listed_once_in_order():
    assert template_fields("{a}-{b}-{a}") == ("a", "b")
    assert template_fields("{{literal}}-{a}") == ("a",)
