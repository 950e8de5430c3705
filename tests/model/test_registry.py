"""The test registry: argument binding, types, labels, suites, implicit roots, cpu_only
roots, the `python FILE` runner rule, duplicates, and the order of registrations."""

from __future__ import annotations

import pytest
from expected_codes import as_json
from helpers import MINIMAL_CONFIG, MINIMAL_LABELS
from hypothesis import given, settings
from hypothesis import strategies as st
from marker_calls import arbitrary_calls

from ci_policy.config.top import parse_config
from ci_policy.errors import Diagnostic
from ci_policy.model.registry import Registration, argument_type, registrations_of
from ci_policy.model.snapshot import load_snapshot
from ci_policy.read.labels import parse_labels
from ci_policy.read.markers import scan

PATH = "tests/e2e/test_x.py"
CONFIG = parse_config(MINIMAL_CONFIG)
LABELS = parse_labels(MINIMAL_LABELS)
MAIN = '\nif __name__ == "__main__":\n    main()\n'
NO_MAIN = '\ndef test_it():\n    assert True\n'


def err(line, col, message, hint=None, path=PATH):
    return as_json(path, line, col, message, hint)


def errors_of(errors) -> list[dict]:
    return [e.as_dict() for e in sorted(errors, key=Diagnostic.sort_key)]


def parse(text, path=PATH, config=CONFIG, labels=LABELS):
    result = scan(text, path)
    regs = registrations_of(result, config, labels)
    return regs, errors_of(result.errors)


def reg(line, backend, suite, est_time, labels=(), nightly=False, disabled=None, col=1, path=PATH):
    return Registration(file=path, line=line, col=col, backend=backend, suite=suite, est_time=est_time,
                        labels=labels, nightly=nightly, disabled=disabled)


def exact(regs):
    """Registrations plus the type of est_time (1800 and 1800.0 compare equal)."""
    return [(r, type(r.est_time)) for r in regs]


# ---------------------------------------------------------------------------
# Accepted forms: every field of the Registration, exactly.
# ---------------------------------------------------------------------------

ACCEPTED = [
    pytest.param('register_cpu_ci(300, "cpu")', [reg(1, "cpu", "cpu", 300)], id="positional"),
    pytest.param('register_cpu_ci(est_time=300, suite="cpu")', [reg(1, "cpu", "cpu", 300)], id="keywords"),
    pytest.param('register_cpu_ci(suite="cpu", est_time=300)', [reg(1, "cpu", "cpu", 300)],
                 id="keywords-reordered"),
    pytest.param('register_cpu_ci(300, suite="cpu")', [reg(1, "cpu", "cpu", 300)], id="mixed"),
    pytest.param('register_cpu_ci(1_800, "cpu")', [reg(1, "cpu", "cpu", 1800)], id="underscores"),
    pytest.param('register_cpu_ci(1.8e3, "cpu")', [reg(1, "cpu", "cpu", 1800.0)], id="exponent-float"),
    pytest.param('register_cpu_ci(0x708, "cpu")', [reg(1, "cpu", "cpu", 1800)], id="hex"),
    pytest.param('register_cpu_ci(+90.5, "cpu")', [reg(1, "cpu", "cpu", 90.5)], id="unary-plus"),
    pytest.param('register_cpu_ci(0, "cpu")', [reg(1, "cpu", "cpu", 0)], id="zero"),
    pytest.param('register_cpu_ci(-0, "cpu")', [reg(1, "cpu", "cpu", 0)], id="minus-zero-int"),
    pytest.param('register_cpu_ci(-0.0, "cpu")', [reg(1, "cpu", "cpu", 0.0)], id="minus-zero-float"),
    pytest.param('register_cpu_ci(604800, "cpu")', [reg(1, "cpu", "cpu", 604800)], id="seven-days"),
    pytest.param('register_cpu_ci(60, "cpu", labels=None)', [reg(1, "cpu", "cpu", 60)], id="cpu-labels-none"),
    pytest.param('register_cpu_ci(60, "cpu", labels=[])', [reg(1, "cpu", "cpu", 60)], id="cpu-labels-empty"),
    pytest.param('register_cpu_ci(60, "cpu", labels=["long"])', [reg(1, "cpu", "cpu", 60, ("long",))],
                 id="cpu-with-label"),
    pytest.param('register_cpu_ci(60, "cpu", nightly=True)', [reg(1, "cpu", "cpu", 60, nightly=True)],
                 id="nightly-true"),
    pytest.param('register_cpu_ci(60, "cpu", nightly=False)', [reg(1, "cpu", "cpu", 60)], id="nightly-false"),
    pytest.param('register_cpu_ci(60, "cpu", disabled="flaky on driver 580, see #1234")',
                 [reg(1, "cpu", "cpu", 60, disabled="flaky on driver 580, see #1234")], id="disabled-reason"),
    pytest.param('register_cpu_ci(60, "cpu", disabled=None)', [reg(1, "cpu", "cpu", 60)], id="disabled-none"),
    pytest.param('register_cpu_ci(60, "c" "pu")', [reg(1, "cpu", "cpu", 60)], id="concatenated-suite"),
    pytest.param('register_cuda_ci(600, "gpu-a", labels=["megatron", "fsdp"])',
                 [reg(1, "cuda", "gpu-a", 600, ("megatron", "fsdp"))], id="cuda-label-order-kept"),
    pytest.param('register_cuda_ci(600, "gpu-b", labels=["long"], nightly=True, disabled="broken")',
                 [reg(1, "cuda", "gpu-b", 600, ("long",), True, "broken")], id="cuda-every-field"),
    pytest.param('register_cuda_ci(disabled=None, nightly=False, labels=["fsdp"], suite="gpu-a", est_time=5)',
                 [reg(1, "cuda", "gpu-a", 5, ("fsdp",))], id="cuda-all-keywords-reversed"),
    pytest.param('register_rocm_ci(60, "amd", labels=["fsdp"])', [reg(1, "rocm", "amd", 60, ("fsdp",))],
                 id="rocm"),
    pytest.param('register_cuda_ci(600, "gpu-a", labels=["fsdp"])\nregister_rocm_ci(900, "amd", labels=["fsdp"])',
                 [reg(1, "cuda", "gpu-a", 600, ("fsdp",)), reg(2, "rocm", "amd", 900, ("fsdp",))],
                 id="cuda-and-rocm-in-one-file"),
    pytest.param('register_cuda_ci(600, "gpu-a", labels=["fsdp"])\nregister_cuda_ci(60, "gpu-b", labels=["long"])',
                 [reg(1, "cuda", "gpu-a", 600, ("fsdp",)), reg(2, "cuda", "gpu-b", 60, ("long",))],
                 id="two-cuda-suites"),
    pytest.param('register_cpu_ci(10, "cpu")\nregister_cuda_ci(600, "gpu-a", labels=["fsdp"])',
                 [reg(1, "cpu", "cpu", 10), reg(2, "cuda", "gpu-a", 600, ("fsdp",))], id="cpu-and-cuda"),
    pytest.param('from ci_policy import register_cuda_ci\n\nregister_cuda_ci(\n    600,\n    "gpu-a",\n'
                 '    labels=["fsdp"],  # why\n)', [reg(3, "cuda", "gpu-a", 600, ("fsdp",))],
                 id="multi-line-after-import"),
    pytest.param('import os; register_cpu_ci(1, "cpu")', [reg(1, "cpu", "cpu", 1, col=12)], id="after-semicolon"),
]


@pytest.mark.parametrize("text, expected", ACCEPTED)
def test_accepted_registration(text, expected):
    regs, errors = parse(text + "\n" + MAIN)
    assert errors == []
    assert exact(regs) == exact(expected)


@pytest.mark.parametrize("text, expected", ACCEPTED)
def test_accepted_registration_in_a_snapshot(make_repo, text, expected):
    snap = load_snapshot(make_repo({PATH: text + "\n" + MAIN}))
    assert errors_of(snap.errors) == []
    assert exact(snap.registrations) == exact(expected)
    assert snap.registrations_for(PATH) == tuple(expected)


# ---------------------------------------------------------------------------
# Rejected forms: the exact error(s), and no registration.
# ---------------------------------------------------------------------------

NON_LITERAL = ("{name}: {key} must be a literal, not `{shown}` (ci-policy reads it from source without "
               "running the file)")
NON_LITERAL_HINT = "write the value of {key} itself (a number, string, True/False, None, or a list or dict of those)"
EST_HINT = "write e.g. est_time=300"
SUITE_HINT = 'write e.g. suite="stage-b-1-gpu-h200"'
STAGES_HINT = "configured {backend} stages: {names} (stages are listed in .github/ci-policy.yml)"
# A name another backend configures: the stage to add for this backend, then the configured ones.
ADD_HINT = ("to run it on {backend} too, add {{name: {suite}, backend: {backend}{runs_on}}} to the stages in "
            ".github/ci-policy.yml; " + STAGES_HINT)
LABEL_HINT = "use a valid label, or add {label!r} with a description to KNOWN_LABELS in labels.py"
NEEDS_LABEL = ("{name}: a {backend} registration needs at least one label (gpu_requires_labels is true), "
               "so that a PR can select it")
NEEDS_LABEL_HINT = "add labels=[...] with one of: megatron, fsdp, long"
DISABLED_HINT = 'write e.g. disabled="flaky on driver 580, see #1234"'
HUGE = "9" * 400


def non_literal(col, key, shown, name="register_cpu_ci"):
    return err(1, col, NON_LITERAL.format(name=name, key=key, shown=shown), NON_LITERAL_HINT.format(key=key))


def bad_est(value, col=17, name="register_cpu_ci"):
    return err(1, col, f"{name}: est_time must be a finite non-negative number of seconds, got {value}", EST_HINT)


def needs_label(name="register_cuda_ci", backend="cuda"):
    return err(1, 1, NEEDS_LABEL.format(name=name, backend=backend), NEEDS_LABEL_HINT)


def unknown_label(col, label, close=None, name="register_cuda_ci"):
    mean = f" (did you mean {close!r}?)" if close else ""
    return err(1, col, f"{name}: unknown label {label!r}{mean}; valid labels: megatron, fsdp, long",
               LABEL_HINT.format(label=label))


REJECTED = [
    # binding
    pytest.param('register_cpu_ci(*args)',
                 [err(1, 17, "register_cpu_ci: *args is not allowed; write every argument literally")],
                 id="starred"),
    pytest.param('register_cpu_ci(1, "cpu", *rest)',
                 [err(1, 27, "register_cpu_ci: *args is not allowed; write every argument literally")],
                 id="starred-after-positionals"),
    pytest.param('register_cpu_ci(1, "cpu", **kw)',
                 [err(1, 27, "register_cpu_ci: **kwargs is not allowed; write every argument literally")],
                 id="double-starred"),
    pytest.param('register_cpu_ci(1, "cpu", ["long"])',
                 [err(1, 27, "register_cpu_ci takes at most 2 positional arguments (est_time, suite), got 3",
                      "pass labels, nightly, disabled by keyword")], id="too-many-positionals"),
    pytest.param('register_cuda_ci(1, "gpu-a", ["fsdp"], True)',
                 [err(1, 30, "register_cuda_ci takes at most 2 positional arguments (est_time, suite), got 4",
                      "pass labels, nightly, disabled by keyword")], id="too-many-positionals-cuda"),
    pytest.param('register_cpu_ci(1, "cpu", est_time=2)',
                 [err(1, 27, "register_cpu_ci: argument 'est_time' is given twice (positionally and by keyword)",
                      "pass it once")], id="est-time-twice"),
    pytest.param('register_cpu_ci(1, "cpu", suite="cpu")',
                 [err(1, 27, "register_cpu_ci: argument 'suite' is given twice (positionally and by keyword)",
                      "pass it once")], id="suite-twice"),
    pytest.param('register_cpu_ci(1, "cpu", lables=["long"])',
                 [err(1, 27, "register_cpu_ci: unknown argument 'lables'; did you mean 'labels'?",
                      "accepted arguments: est_time, suite, labels, nightly, disabled; to accept another, declare "
                      "it in the configuration: markers: {extra_arguments: {lables: string}}")],
                 id="misspelt-argument"),
    pytest.param('register_cpu_ci(1, "cpu", timeout=5)',
                 [err(1, 27, "register_cpu_ci: unknown argument 'timeout'",
                      "accepted arguments: est_time, suite, labels, nightly, disabled; to accept another, declare "
                      "it in the configuration: markers: {extra_arguments: {timeout: string}}")],
                 id="unknown-argument"),
    pytest.param('register_cpu_ci(1)', [err(1, 1, "register_cpu_ci: missing required argument 'suite'")],
                 id="missing-suite"),
    pytest.param('register_cpu_ci(suite="cpu")',
                 [err(1, 1, "register_cpu_ci: missing required argument 'est_time'")], id="missing-est-time"),
    pytest.param('register_cpu_ci()', [err(1, 1, "register_cpu_ci: missing required argument 'est_time'"),
                                       err(1, 1, "register_cpu_ci: missing required argument 'suite'")],
                 id="missing-both"),
    # literals only
    pytest.param('register_cpu_ci(30 * 60, "cpu")', [non_literal(17, "est_time", "30 * 60")], id="expression"),
    pytest.param('register_cpu_ci(TIME, "cpu")', [non_literal(17, "est_time", "TIME")], id="name-est-time"),
    pytest.param('register_cpu_ci(1, SUITE)', [non_literal(20, "suite", "SUITE")], id="name-suite"),
    pytest.param('register_cpu_ci(1, f"cpu")', [non_literal(20, "suite", "f'cpu'")], id="f-string-suite"),
    pytest.param('register_cpu_ci(1, "cpu", labels=LABELS)', [non_literal(34, "labels", "LABELS")],
                 id="name-labels"),
    pytest.param('register_cpu_ci(1, "cpu", labels=["long", x])', [non_literal(34, "labels", "['long', x]")],
                 id="name-inside-labels"),
    pytest.param('register_cpu_ci(1, "cpu", labels=[*BASE])', [non_literal(34, "labels", "[*BASE]")],
                 id="starred-inside-labels"),
    pytest.param('register_cpu_ci(1, "cpu", nightly=not False)', [non_literal(35, "nightly", "not False")],
                 id="expression-nightly"),
    pytest.param('register_cpu_ci(1, "cpu", disabled=REASON)', [non_literal(36, "disabled", "REASON")],
                 id="name-disabled"),
    pytest.param('register_cpu_ci(1, "cpu", labels=[{[1]: 2}])', [non_literal(34, "labels", "[{[1]: 2}]")],
                 id="unhashable-dict-key"),
    # est_time
    pytest.param('register_cpu_ci(True, "cpu")', [bad_est("True")], id="est-time-bool"),
    pytest.param('register_cpu_ci("300", "cpu")', [bad_est("'300'")], id="est-time-string"),
    pytest.param('register_cpu_ci(None, "cpu")', [bad_est("None")], id="est-time-none"),
    pytest.param('register_cpu_ci([60], "cpu")', [bad_est("[60]")], id="est-time-list"),
    pytest.param('register_cpu_ci(-1, "cpu")', [bad_est("-1")], id="est-time-negative"),
    pytest.param('register_cpu_ci(-0.5, "cpu")', [bad_est("-0.5")], id="est-time-negative-float"),
    pytest.param('register_cpu_ci(1e999, "cpu")', [bad_est("inf")], id="est-time-infinite"),
    pytest.param('register_cpu_ci(-1e999, "cpu")', [bad_est("-inf")], id="est-time-minus-infinite"),
    pytest.param(f'register_cpu_ci({HUGE}, "cpu")', [bad_est(HUGE[:20] + f"... ({len(HUGE)} characters)")],
                 id="est-time-too-large-for-a-float"),
    # finding 5: finite but beyond 7 days
    pytest.param('register_cpu_ci(1e300, "cpu")', [err(1, 17, "register_cpu_ci: est_time must be at most 604800 "
                                                   "seconds (7 days), got 1e+300", "the range is [0, 604800]")],
                 id="est-time-1e300"),
    pytest.param('register_cpu_ci(604800.5, "cpu")', [err(1, 17, "register_cpu_ci: est_time must be at most 604800 "
                                                      "seconds (7 days), got 604800.5", "the range is [0, 604800]")],
                 id="est-time-just-over-7-days"),
    # suite
    pytest.param('register_cpu_ci(1, 3)', [err(1, 20, "register_cpu_ci: suite must be a string, got 3", SUITE_HINT)],
                 id="suite-int"),
    pytest.param('register_cpu_ci(1, None)',
                 [err(1, 20, "register_cpu_ci: suite must be a string, got None", SUITE_HINT)], id="suite-none"),
    pytest.param('register_cpu_ci(1, "cpus")',
                 [err(1, 20, "register_cpu_ci: suite 'cpus' is not a configured cpu stage; did you mean 'cpu'?",
                      STAGES_HINT.format(backend="cpu", names="cpu"))], id="suite-misspelt"),
    pytest.param('register_cpu_ci(1, "gpu-a")',
                 [err(1, 20, "register_cpu_ci: suite 'gpu-a' is a cuda stage, not a cpu stage",
                      ADD_HINT.format(backend="cpu", names="cpu", suite="gpu-a",
                                      runs_on=""))], id="cpu-on-cuda-stage"),
    pytest.param('register_cuda_ci(1, "gpu-c", labels=["fsdp"])',
                 [err(1, 21, "register_cuda_ci: suite 'gpu-c' is not a configured cuda stage; did you mean 'gpu-b'?",
                      STAGES_HINT.format(backend="cuda", names="gpu-a, gpu-b"))], id="cuda-unknown-stage"),
    pytest.param('register_cuda_ci(1, "cpu", labels=["fsdp"])',
                 [err(1, 21, "register_cuda_ci: suite 'cpu' is a cpu stage, not a cuda stage",
                      ADD_HINT.format(backend="cuda", names="gpu-a, gpu-b", suite="cpu",
                                      runs_on=", runs_on: [...]"))], id="cuda-on-cpu-stage"),
    pytest.param('register_cuda_ci(1, "amd", labels=["fsdp"])',
                 [err(1, 21, "register_cuda_ci: suite 'amd' is a rocm stage, not a cuda stage",
                      ADD_HINT.format(backend="cuda", names="gpu-a, gpu-b", suite="amd",
                                      runs_on=", runs_on: [...]"))], id="cuda-on-rocm-stage"),
    pytest.param('register_rocm_ci(1, "gpu-a", labels=["fsdp"])',
                 [err(1, 21, "register_rocm_ci: suite 'gpu-a' is a cuda stage, not a rocm stage",
                      ADD_HINT.format(backend="rocm", names="amd", suite="gpu-a",
                                      runs_on=", runs_on: [...]"))], id="rocm-on-cuda-stage"),
    pytest.param('register_cuda_ci(1, "", labels=["fsdp"])',
                 [err(1, 21, "register_cuda_ci: suite '' is not a configured cuda stage",
                      STAGES_HINT.format(backend="cuda", names="gpu-a, gpu-b"))], id="suite-empty"),
    # labels
    pytest.param('register_cpu_ci(1, "cpu", labels="long")',
                 [err(1, 34, "register_cpu_ci: labels must be a list of string literals or None, got 'long'",
                      'write e.g. labels=["megatron"]')], id="labels-string"),
    pytest.param('register_cuda_ci(1, "gpu-a", labels="fsdp")',
                 [err(1, 37, "register_cuda_ci: labels must be a list of string literals or None, got 'fsdp'",
                      'write e.g. labels=["megatron"]')], id="cuda-labels-string-is-one-error"),
    pytest.param('register_cuda_ci(1, "gpu-a", labels=("fsdp",))',
                 [err(1, 37, "register_cuda_ci: labels must be a list of string literals or None, got ('fsdp',)",
                      'write e.g. labels=["megatron"]')], id="labels-tuple"),
    pytest.param('register_cuda_ci(1, "gpu-a", labels=[1])',
                 [err(1, 38, "register_cuda_ci: labels entries must be strings, got 1")], id="label-int"),
    pytest.param('register_cuda_ci(1, "gpu-a", labels=["fsdp", "fsdp"])',
                 [err(1, 46, "register_cuda_ci: label 'fsdp' is listed twice")], id="label-twice"),
    pytest.param('register_cuda_ci(1, "gpu-a", labels=["megatorn"])', [unknown_label(38, "megatorn", "megatron")],
                 id="label-misspelt"),
    pytest.param('register_cuda_ci(1, "gpu-a", labels=["nccl"])', [unknown_label(38, "nccl")], id="label-unknown"),
    pytest.param('register_cuda_ci(1, "gpu-a", labels=["fsdp", "nccl"])', [unknown_label(46, "nccl")],
                 id="label-unknown-after-valid"),
    pytest.param('register_cpu_ci(1, "cpu", labels=["nccl"])', [unknown_label(35, "nccl", name="register_cpu_ci")],
                 id="cpu-label-unknown"),
    pytest.param('register_cuda_ci(1, "gpu-a")', [needs_label()], id="cuda-without-labels"),
    pytest.param('register_cuda_ci(1, "gpu-a", labels=None)', [needs_label()], id="cuda-labels-none"),
    pytest.param('register_cuda_ci(1, "gpu-a", labels=[])', [needs_label()], id="cuda-labels-empty"),
    pytest.param('register_rocm_ci(1, "amd")', [needs_label("register_rocm_ci", "rocm")], id="rocm-without-labels"),
    # nightly
    pytest.param('register_cpu_ci(1, "cpu", nightly=1)',
                 [err(1, 35, "register_cpu_ci: nightly must be True or False, got 1")], id="nightly-int"),
    pytest.param('register_cpu_ci(1, "cpu", nightly="yes")',
                 [err(1, 35, "register_cpu_ci: nightly must be True or False, got 'yes'")], id="nightly-string"),
    pytest.param('register_cpu_ci(1, "cpu", nightly=None)',
                 [err(1, 35, "register_cpu_ci: nightly must be True or False, got None")], id="nightly-none"),
    # disabled
    pytest.param('register_cpu_ci(1, "cpu", disabled=True)',
                 [err(1, 36, "register_cpu_ci: disabled must be a reason string or None, got True", DISABLED_HINT)],
                 id="disabled-bool"),
    pytest.param('register_cpu_ci(1, "cpu", disabled=["why"])',
                 [err(1, 36, "register_cpu_ci: disabled must be a reason string or None, got ['why']",
                      DISABLED_HINT)], id="disabled-list"),
    pytest.param('register_cpu_ci(1, "cpu", disabled="")',
                 [err(1, 36, "register_cpu_ci: disabled must give a reason, got ''", DISABLED_HINT)],
                 id="disabled-empty"),
    pytest.param('register_cpu_ci(1, "cpu", disabled="  ")',
                 [err(1, 36, "register_cpu_ci: disabled must give a reason, got '  '", DISABLED_HINT)],
                 id="disabled-blank"),
    # several problems in one call are all reported
    pytest.param('register_cuda_ci(-1, "gpu-z", nightly=0)',
                 [needs_label(), bad_est("-1", col=18, name="register_cuda_ci"),
                  err(1, 22, "register_cuda_ci: suite 'gpu-z' is not a configured cuda stage; "
                      "did you mean 'gpu-b'?", STAGES_HINT.format(backend="cuda", names="gpu-a, gpu-b")),
                  err(1, 39, "register_cuda_ci: nightly must be True or False, got 0")], id="several-problems"),
    pytest.param('register_cpu_ci(X, Y, labels=Z)',
                 [non_literal(17, "est_time", "X"), non_literal(20, "suite", "Y"), non_literal(30, "labels", "Z")],
                 id="several-non-literals"),
]


@pytest.mark.parametrize("text, expected", REJECTED)
def test_rejected_registration(text, expected):
    regs, errors = parse(text + "\n" + MAIN)
    assert errors == expected
    assert regs == []


@pytest.mark.parametrize("text, expected", REJECTED)
def test_rejected_registration_in_a_snapshot(make_repo, text, expected):
    snap = load_snapshot(make_repo({PATH: text + "\n" + MAIN}))
    assert errors_of(snap.errors) == expected
    assert snap.registrations == ()


def test_error_is_located_on_the_argument_line_of_a_multi_line_call():
    _, errors = parse('register_cuda_ci(\n    60,\n    "gpu-a",\n    labels=["fsdp", "nope"],\n)\n' + MAIN)
    assert errors == [err(4, 21, "register_cuda_ci: unknown label 'nope'; valid labels: megatron, fsdp, long",
                          LABEL_HINT.format(label="nope"))]


def test_one_bad_registration_does_not_drop_a_good_one():
    regs, errors = parse('register_cuda_ci(60, "gpu-a", labels=["fsdp"])\nregister_rocm_ci(60, "amd")\n' + MAIN)
    assert regs == [reg(1, "cuda", "gpu-a", 60, ("fsdp",))]
    assert errors == [err(2, 1, NEEDS_LABEL.format(name="register_rocm_ci", backend="rocm"), NEEDS_LABEL_HINT)]


def test_gate_calls_are_not_registrations():
    regs, errors = parse('register_cpu_ci(1, "cpu")\nregister_ci_gate(metric_key="loss")\n')
    assert regs == [reg(1, "cpu", "cpu", 1)]
    assert errors == []


# ---------------------------------------------------------------------------
# Configuration and label registry variations.
# ---------------------------------------------------------------------------

NO_GPU_LABELS_CONFIG = MINIMAL_CONFIG.replace("version: 1\n", "version: 1\ngpu_requires_labels: false\n")


def test_gpu_registration_without_labels_when_labels_are_not_required():
    config = parse_config(NO_GPU_LABELS_CONFIG)
    regs, errors = parse('register_cuda_ci(60, "gpu-a")\nregister_rocm_ci(60, "amd", labels=None)\n' + MAIN,
                         config=config)
    assert errors == []
    assert regs == [reg(1, "cuda", "gpu-a", 60), reg(2, "rocm", "amd", 60)]


def test_labels_are_still_checked_when_not_required():
    config = parse_config(NO_GPU_LABELS_CONFIG)
    regs, errors = parse('register_cuda_ci(60, "gpu-a", labels=["nccl"])\n' + MAIN, config=config)
    assert (regs, errors) == ([], [unknown_label(39, "nccl")])


def test_unknown_label_lists_the_labels_of_the_configured_registry(make_repo):
    config = MINIMAL_CONFIG.replace("version: 1\n", "version: 1\nlabels_file: ci/labels.py\n")
    repo = make_repo({
        "ci/labels.py": 'KNOWN_LABELS = {"nccl": "collectives", "vllm": "vLLM engine"}\n',
        PATH: 'register_cuda_ci(60, "gpu-a", labels=["vlm"])\n' + MAIN,
    }, config=config, labels=None)
    snap = load_snapshot(repo)
    assert errors_of(snap.errors) == [err(1, 39, "register_cuda_ci: unknown label 'vlm' (did you mean 'vllm'?); "
                                             "valid labels: nccl, vllm",
                                          "use a valid label, or add 'vlm' with a description to KNOWN_LABELS "
                                          "in ci/labels.py")]


def test_empty_label_registry():
    labels = parse_labels("KNOWN_LABELS = {}\n")
    _, errors = parse('register_cuda_ci(60, "gpu-a", labels=["fsdp"])\nregister_rocm_ci(60, "amd")\n' + MAIN,
                      labels=labels)
    assert errors == [
        err(1, 39, "register_cuda_ci: unknown label 'fsdp'; valid labels: none", LABEL_HINT.format(label="fsdp")),
        err(2, 1, NEEDS_LABEL.format(name="register_rocm_ci", backend="rocm"),
            "add labels=[...] with one of: (none defined)"),
    ]


def test_backend_without_stages():
    config = parse_config(MINIMAL_CONFIG.replace("  - {name: amd, backend: rocm, runs_on: [mi350]}\n", ""))
    _, errors = parse('register_rocm_ci(60, "amd", labels=["fsdp"])\n' + MAIN, config=config)
    assert errors == [err(1, 22, "register_rocm_ci: suite 'amd' is not a configured rocm stage",
                          STAGES_HINT.format(backend="rocm", names="none"))]


# ---------------------------------------------------------------------------
# Implicit roots and cpu_only.
# ---------------------------------------------------------------------------

UNIT = "tests/unit/test_u.py"


def implicit(path=UNIT, est_time=1):
    return Registration(file=path, line=None, col=None, backend="cpu", suite="cpu", est_time=est_time,
                        implicit=True, est_source="implicit")


def test_unregistered_file_under_an_implicit_root_gets_its_registration(make_repo):
    snap = load_snapshot(make_repo({UNIT: NO_MAIN, "tests/unit/deep/er/test_v.py": NO_MAIN}))
    assert errors_of(snap.errors) == []
    assert snap.registrations == (implicit("tests/unit/deep/er/test_v.py"), implicit())
    assert all(r.implicit and r.line is None for r in snap.registrations)


def test_most_specific_implicit_root_wins(make_repo):
    config = MINIMAL_CONFIG.replace(
        "    - {root: tests/unit, backend: cpu, suite: cpu, est_time: 1, cpu_only: true}\n",
        "    - {root: tests/unit, backend: cpu, suite: cpu, est_time: 1, cpu_only: true}\n"
        "    - {root: tests/unit/slow, backend: cpu, suite: cpu, est_time: 120}\n")
    snap = load_snapshot(make_repo({UNIT: NO_MAIN, "tests/unit/slow/test_s.py": NO_MAIN}, config=config))
    assert errors_of(snap.errors) == []
    assert snap.registrations == (implicit("tests/unit/slow/test_s.py", 120), implicit())


def test_explicit_registration_under_an_implicit_root_replaces_it(make_repo):
    snap = load_snapshot(make_repo({UNIT: 'register_cpu_ci(5, "cpu", nightly=True)\n'}))
    assert errors_of(snap.errors) == []
    assert snap.registrations == (reg(1, "cpu", "cpu", 5, nightly=True, path=UNIT),)


def test_invalid_registration_under_an_implicit_root_gets_no_fallback(make_repo):
    snap = load_snapshot(make_repo({UNIT: 'register_cpu_ci(-5, "cpu")\n'}))
    assert errors_of(snap.errors) == [bad_est("-5") | {"path": UNIT}]
    assert snap.registrations == ()


def test_misplaced_marker_under_an_implicit_root_is_still_an_error(make_repo):
    snap = load_snapshot(make_repo({UNIT: 'def setup():\n    register_cpu_ci(5, "cpu")\n'}))
    assert errors_of(snap.errors) == [err(
        2, 5, "register_cpu_ci(...) here is not a registration: markers are read only as module-level "
        "expression statements (not inside a function, class, `if`, `with`, or an assignment)",
        "write `register_cpu_ci(...)` as a statement at module level, outside any block", path=UNIT)]


def cpu_only_error(line, name, backend, path=UNIT):
    return err(line, 1, f"{name}: {path} is under tests/unit, a cpu_only implicit root; "
               f"{backend} tests cannot live there", "move the file out of tests/unit or register it for CPU",
               path=path)


@pytest.mark.parametrize("text, expected", [
    pytest.param('register_cuda_ci(60, "gpu-a", labels=["fsdp"])\n' + MAIN,
                 [cpu_only_error(1, "register_cuda_ci", "cuda")], id="cuda"),
    pytest.param('register_rocm_ci(60, "amd", labels=["fsdp"])\n' + MAIN,
                 [cpu_only_error(1, "register_rocm_ci", "rocm")], id="rocm"),
    pytest.param('register_cpu_ci(1, "cpu")\nregister_cuda_ci(60, "gpu-b", labels=["long"])\n' + MAIN,
                 [cpu_only_error(2, "register_cuda_ci", "cuda")], id="cpu-and-cuda"),
    pytest.param('register_cuda_ci(60, "gpu-a", labels=["fsdp"])\n' + NO_MAIN,
                 [cpu_only_error(1, "register_cuda_ci", "cuda"),
                  err(1, 1, "stage gpu-a runs tests/unit/test_u.py as `python FILE`, but the file has no "
                      '`if __name__ == "__main__":` block that calls something, so it would exit 0 without '
                      "running a test",
                      'add `if __name__ == "__main__": unittest.main()` (or pytest.main([__file__]))', path=UNIT)],
                 id="cuda-without-main"),
])
def test_gpu_registration_under_a_cpu_only_root_is_an_error(make_repo, text, expected):
    snap = load_snapshot(make_repo({UNIT: text}))
    assert errors_of(snap.errors) == expected
    assert not any(r.implicit for r in snap.registrations)


def test_gpu_registration_under_a_non_cpu_only_implicit_root_is_allowed(make_repo):
    config = MINIMAL_CONFIG.replace("est_time: 1, cpu_only: true}", "est_time: 1}")
    snap = load_snapshot(make_repo({UNIT: 'register_cuda_ci(60, "gpu-a", labels=["fsdp"])\n' + MAIN},
                                   config=config))
    assert errors_of(snap.errors) == []
    assert snap.registrations == (reg(1, "cuda", "gpu-a", 60, ("fsdp",), path=UNIT),)


# ---------------------------------------------------------------------------
# Stages that run a file as `python FILE` need a main block that calls something.
# ---------------------------------------------------------------------------

def python_runner(stage, line=1, path=PATH):
    return err(line, 1, f"stage {stage} runs {path} as `python FILE`, but the file has no "
               '`if __name__ == "__main__":` block that calls something, so it would exit 0 without running a test',
               'add `if __name__ == "__main__": unittest.main()` (or pytest.main([__file__]))', path=path)


@pytest.mark.parametrize("text, expected", [
    pytest.param('register_cuda_ci(60, "gpu-a", labels=["fsdp"])\n' + MAIN, [], id="cuda-with-main"),
    pytest.param('register_cuda_ci(60, "gpu-a", labels=["fsdp"])\n' + NO_MAIN, [python_runner("gpu-a")],
                 id="cuda-without-main"),
    pytest.param('register_rocm_ci(60, "amd", labels=["fsdp"])\n' + NO_MAIN, [python_runner("amd")],
                 id="rocm-without-main"),
    pytest.param('register_cuda_ci(60, "gpu-a", labels=["fsdp"])\nif __name__ == "__main__":\n    pass\n',
                 [python_runner("gpu-a")], id="main-block-calls-nothing"),
    pytest.param('import os\n\nregister_cuda_ci(60, "gpu-a", labels=["fsdp"])\n'
                 'register_cuda_ci(60, "gpu-b", labels=["fsdp"])\n' + NO_MAIN,
                 [python_runner("gpu-a", 3), python_runner("gpu-b", 4)], id="one-error-per-registration"),
    pytest.param('register_cpu_ci(60, "cpu")\n' + NO_MAIN, [], id="cpu-stage-runs-pytest"),
    # A disabled registration runs nothing: only the enabled ones of a file need the block.
    pytest.param('register_cuda_ci(90, "gpu-a", labels=["fsdp"], disabled="flaky on H100")\n' + NO_MAIN, [],
                 id="disabled-without-main"),
    pytest.param('register_cuda_ci(90, "gpu-a", labels=["fsdp"], disabled="flaky on H100")\n'
                 'register_cuda_ci(90, "gpu-b", labels=["fsdp"])\n' + NO_MAIN,
                 [python_runner("gpu-b", 2)], id="disabled-and-enabled-without-main"),
])
def test_python_runner_needs_a_main_block(make_repo, text, expected):
    snap = load_snapshot(make_repo({PATH: text}))
    assert errors_of(snap.errors) == expected
    assert len(snap.registrations) == text.count("register_")


def test_runner_is_read_from_the_stage(make_repo):
    config = (MINIMAL_CONFIG.replace("{name: cpu, backend: cpu}", "{name: cpu, backend: cpu, runner: python}")
              .replace("runs_on: [mi350]}", "runs_on: [mi350], runner: pytest}"))
    snap = load_snapshot(make_repo({
        PATH: 'register_cpu_ci(60, "cpu")\n' + NO_MAIN,
        "tests/e2e/test_rocm.py": 'register_rocm_ci(60, "amd", labels=["fsdp"])\n' + NO_MAIN,
        UNIT: NO_MAIN,
    }, config=config))
    assert errors_of(snap.errors) == [python_runner("cpu"), python_runner("cpu", path=UNIT)]
    assert [r.file for r in snap.registrations] == ["tests/e2e/test_rocm.py", PATH, UNIT]


# ---------------------------------------------------------------------------
# Files without a registration, and duplicates.
# ---------------------------------------------------------------------------

def unregistered(path=PATH):
    return err(1, 1, f"{path} matches the discovery pattern 'test_*.py' but has no registration and is not "
               "under an implicit root, so no stage would run it",
               "add register_cpu_ci/register_cuda_ci/register_rocm_ci(...) at module level, or add an implicit "
               "root for its directory in the configuration", path=path)


@pytest.mark.parametrize("text", [
    pytest.param(NO_MAIN, id="plain-test"),
    pytest.param("", id="empty"),
    pytest.param("# register_cuda_ci(60, 'gpu-a', labels=['fsdp'])\n" + MAIN, id="commented-out"),
    pytest.param('register_ci_gate(metric_key="train/grad_norm")\n', id="gate-only"),
])
def test_file_without_registration_outside_implicit_roots_is_an_error(make_repo, text):
    snap = load_snapshot(make_repo({PATH: text}))
    assert errors_of(snap.errors) == [unregistered()]
    assert snap.registrations == ()


def test_files_not_matching_the_pattern_are_not_test_files(make_repo):
    snap = load_snapshot(make_repo({"tests/e2e/helpers.py": NO_MAIN, "tests/e2e/x_test.py": NO_MAIN}))
    assert (snap.files, snap.errors, snap.registrations) == ((), (), ())


def duplicate(name, suite, first, second):
    return err(second, 1, f"{name}: {PATH} is registered twice for suite {suite!r} (lines {first} and {second}), "
               "so it would run twice", "keep one registration per suite")


@pytest.mark.parametrize("text, expected", [
    pytest.param('register_cpu_ci(1, "cpu")\nregister_cpu_ci(1, "cpu")\n',
                 [duplicate("register_cpu_ci", "cpu", 1, 2)], id="identical"),
    pytest.param('register_cuda_ci(1, "gpu-a", labels=["fsdp"])\nregister_cuda_ci(90, "gpu-a", labels=["long"], '
                 'nightly=True)\n' + MAIN, [duplicate("register_cuda_ci", "gpu-a", 1, 2)], id="different-arguments"),
    pytest.param('register_cpu_ci(1, "cpu")\nregister_cpu_ci(2, "cpu")\nregister_cpu_ci(3, "cpu")\n',
                 [duplicate("register_cpu_ci", "cpu", 1, 2), duplicate("register_cpu_ci", "cpu", 1, 3)],
                 id="three-times"),
    pytest.param('register_cuda_ci(1, "gpu-a", labels=["fsdp"])\nregister_cuda_ci(1, "gpu-b", labels=["fsdp"])\n'
                 + MAIN, [], id="two-suites-is-fine"),
])
def test_registering_a_file_twice_for_one_suite_is_an_error(make_repo, text, expected):
    snap = load_snapshot(make_repo({PATH: text}))
    assert errors_of(snap.errors) == expected


# ---------------------------------------------------------------------------
# Registry order: by file, then by line.
# ---------------------------------------------------------------------------

def test_registrations_are_ordered_by_file_then_line(make_repo):
    snap = load_snapshot(make_repo({
        "tests/e2e/test_b.py": 'register_rocm_ci(5, "amd", labels=["fsdp"])\nregister_cpu_ci(1, "cpu")\n' + MAIN,
        "tests/e2e/test_a.py": 'import os\n\nregister_cuda_ci(9, "gpu-b", labels=["long"])\n'
                               'register_cuda_ci(9, "gpu-a", labels=["long"])\n' + MAIN,
        "tests/a_first/test_z.py": 'register_cpu_ci(2, "cpu")\n',
        UNIT: NO_MAIN,
    }))
    assert errors_of(snap.errors) == []
    assert [(r.file, r.line, r.suite) for r in snap.registrations] == [
        ("tests/a_first/test_z.py", 1, "cpu"),
        ("tests/e2e/test_a.py", 3, "gpu-b"),
        ("tests/e2e/test_a.py", 4, "gpu-a"),
        ("tests/e2e/test_b.py", 1, "amd"),
        ("tests/e2e/test_b.py", 2, "cpu"),
        (UNIT, None, "cpu"),
    ]


# ---------------------------------------------------------------------------
# Property: any valid registration round-trips exactly.
# ---------------------------------------------------------------------------

SUITES = {"cpu": ["cpu"], "cuda": ["gpu-a", "gpu-b"], "rocm": ["amd"]}
MARKER = {"cpu": "register_cpu_ci", "cuda": "register_cuda_ci", "rocm": "register_rocm_ci"}


# Strategies drawn from inside the composites below are built once: hypothesis validates each
# strategy object on its first draw, which cost more than the draws when built per call.
# Valid est_times are in [0, 604800] (7 days); larger ones are refused (finding 5).
EST_TIME_VALUES = st.integers(0, 604800) | st.floats(min_value=0.0, max_value=604800.0, allow_nan=False)
LABEL_NAMES = {min_size: st.lists(st.sampled_from(["megatron", "fsdp", "long"]), unique=True, min_size=min_size)
               for min_size in (0, 1)}
DISABLED = st.none() | st.text(max_size=30).filter(str.strip)


@st.composite
def est_times(draw):
    value = draw(EST_TIME_VALUES)
    forms = [repr(value), "+" + repr(value)]
    if isinstance(value, int):
        forms += [f"{value:_}", hex(value)]
    return value, draw(st.sampled_from(forms))


@st.composite
def registration_calls(draw, backend, suite, line):
    est_time, est_src = draw(est_times())
    names = draw(LABEL_NAMES[0 if backend == "cpu" else 1])
    kwargs = []
    if names:
        kwargs.append(f"labels={names!r}")
    else:
        form = draw(st.sampled_from(["", "labels=None", "labels=[]"]))
        if form:
            kwargs.append(form)
    nightly = draw(st.sampled_from([None, True, False]))
    if nightly is not None:
        kwargs.append(f"nightly={nightly!r}")
    disabled = draw(DISABLED)
    if disabled is not None or draw(st.booleans()):
        kwargs.append(f"disabled={disabled!r}")
    n_positional = draw(st.integers(0, 2))
    positional = [est_src, repr(suite)][:n_positional]
    kwargs += [f"est_time={est_src}", f"suite={suite!r}"][n_positional:]
    kwargs = draw(st.permutations(kwargs))
    source = f"{MARKER[backend]}({', '.join(positional + list(kwargs))})"
    expected = Registration(file=PATH, line=line, col=1, backend=backend, suite=suite, est_time=est_time,
                            labels=tuple(names), nightly=bool(nightly), disabled=disabled)
    return source, expected


@st.composite
def registration_files(draw):
    suites = draw(st.lists(st.sampled_from(["cpu", "gpu-a", "gpu-b", "amd"]), unique=True, min_size=1))
    header = draw(st.sampled_from(["", "import os\n", "# comment\n\n"]))
    line = header.count("\n") + 1
    lines, expected = [], []
    for suite in suites:
        backend = next(b for b, names in SUITES.items() if suite in names)
        source, reg_ = draw(registration_calls(backend, suite, line))
        lines.append(source)
        expected.append(reg_)
        line += 1
    return header + "\n".join(lines) + "\n" + MAIN, expected


@settings(max_examples=400)
@given(registration_files())
def test_valid_registrations_round_trip(case):
    text, expected = case
    regs, errors = parse(text)
    assert errors == []
    assert exact(regs) == exact(expected)
    assert [repr(r.est_time) for r in regs] == [repr(r.est_time) for r in expected]


# ---------------------------------------------------------------------------
# Property: any call with arbitrary (possibly invalid) arguments yields a
# registration or an error on its line, never an exception and never silence.
# ---------------------------------------------------------------------------

CONSTANTS = ["'cpu'", "'gpu-a'", "'gpu-b'", "'amd'", "'fsdp'", "'megatron'", "'long'"]
POSITIONAL, KEYWORD_ONLY = ("est_time", "suite"), ("labels", "nightly", "disabled")


def calls_of(markers):
    return arbitrary_calls(markers, POSITIONAL, KEYWORD_ONLY, CONSTANTS)


@settings(max_examples=500)
@given(st.lists(calls_of(["register_cpu_ci", "register_cuda_ci", "register_rocm_ci"]), min_size=1, max_size=3))
def test_every_registration_call_yields_a_registration_or_an_error(calls):
    regs, errors = parse("\n".join(calls) + "\n" + MAIN)
    for line in range(1, len(calls) + 1):
        assert any(r.line == line for r in regs) or any(e["line"] == line for e in errors), calls[line - 1]
    assert all(e["path"] == PATH and e["line"] is not None and e["col"] >= 1 for e in errors)


# ---------------------------------------------------------------------------
# Dialects: configured marker names, extra arguments, the suite template.
# ---------------------------------------------------------------------------

DIALECT_TEXT = """\
version: 1
backends: {npu: {accelerator: true}}
markers:
  names: {register_amd_ci: rocm, register_npu_ci: npu}
  extra_arguments: {stage: string, runner_config: string, in_process_group: string, gpus: integer,
                    ratio: number, eager: boolean, tags: strings}
  suite: "{stage}-test-{runner_config}"
discovery:
  roots: [tests]
  pattern: [test_*.py, testing_*.py]
  implicit:
    - {root: tests/unit, backend: cpu, suite: cpu, est_time: 1, cpu_only: true}
stages:
  - {name: cpu, backend: cpu}
  - {name: base-b-test-1-gpu-large, backend: cuda, runs_on: [h200]}
  - {name: amd, backend: rocm, runs_on: [mi350]}
  - {name: amd-2, backend: rocm, runs_on: [mi350]}
  - {name: npu-a3, backend: npu, runs_on: [a3]}
"""
DIALECT = parse_config(DIALECT_TEXT)
LARGE = "base-b-test-1-gpu-large"


def dialect(text, path=PATH):
    result = scan(text, path, frozenset(DIALECT.markers.names))
    return registrations_of(result, DIALECT, LABELS), errors_of(result.errors)


def marked(line, backend, suite, est_time, marker, **kw):
    return Registration(file=PATH, line=line, col=1, backend=backend, suite=suite, est_time=est_time,
                        marker=marker, **kw)


@pytest.mark.parametrize("text, expected", [
    pytest.param('register_amd_ci(600, "amd", labels=["fsdp"], nightly=True)',
                 [marked(1, "rocm", "amd", 600, "register_amd_ci", labels=("fsdp",), nightly=True)], id="amd"),
    pytest.param('register_npu_ci(est_time=400, suite="npu-a3", labels=["fsdp"])',
                 [marked(1, "npu", "npu-a3", 400, "register_npu_ci", labels=("fsdp",))], id="npu"),
    pytest.param('register_cuda_ci(est_time=300, stage="base-b", runner_config="1-gpu-large", labels=["fsdp"])',
                 [marked(1, "cuda", LARGE, 300, "register_cuda_ci", labels=("fsdp",))], id="suite-from-template"),
    pytest.param('register_cuda_ci(300, stage="base-b", runner_config="1-gpu-large", labels=["fsdp"])',
                 [marked(1, "cuda", LARGE, 300, "register_cuda_ci", labels=("fsdp",))],
                 id="est-time-positional-alone"),
    pytest.param(f'register_cuda_ci(300, "{LARGE}", stage="base-b", runner_config="1-gpu-large", labels=["fsdp"])',
                 [marked(1, "cuda", LARGE, 300, "register_cuda_ci", labels=("fsdp",))], id="suite-and-template-agree"),
    pytest.param(f'register_cuda_ci(300, "{LARGE}", stage="other", labels=["fsdp"])',
                 [marked(1, "cuda", LARGE, 300, "register_cuda_ci", labels=("fsdp",))],
                 id="suite-and-part-of-the-template"),
    pytest.param(f'register_cuda_ci(60, "{LARGE}", labels=["fsdp"], in_process_group="kernels", gpus=2, '
                 'ratio=0.5, eager=False, tags=["a", "b"])',
                 [marked(1, "cuda", LARGE, 60, "register_cuda_ci", labels=("fsdp",))], id="every-extra-type"),
    pytest.param('register_cpu_ci(1, "cpu")\nregister_amd_ci(2, "amd", labels=["long"])\n'
                 'register_rocm_ci(3, "amd-2", labels=["long"], disabled="old")\n',
                 [marked(1, "cpu", "cpu", 1, "register_cpu_ci"),
                  marked(2, "rocm", "amd", 2, "register_amd_ci", labels=("long",)),
                  marked(3, "rocm", "amd-2", 3, "register_rocm_ci", labels=("long",), disabled="old")],
                 id="several-names-of-one-backend"),
])
def test_accepted_dialect_registration(text, expected):
    regs, errors = dialect(text + MAIN)
    assert (regs, errors) == (expected, [])
    assert [r.marker for r in regs] == [r.marker for r in expected]


TEMPLATE = "'{stage}-test-{runner_config}'"


@pytest.mark.parametrize("text, expected", [
    pytest.param('register_cuda_ci(1, stage="base-b", runner_config=1, labels=["fsdp"])',
                 [err(1, 51, "register_cuda_ci: runner_config must be a string, got 1",
                      f"markers.extra_arguments in {DIALECT.path} declares runner_config as string")],
                 id="string"),
    pytest.param(f'register_cuda_ci(1, "{LARGE}", gpus=True, labels=["fsdp"])',
                 [err(1, 53, "register_cuda_ci: gpus must be an integer, got True",
                      f"markers.extra_arguments in {DIALECT.path} declares gpus as integer")], id="integer"),
    pytest.param(f'register_cuda_ci(1, "{LARGE}", ratio="x", labels=["fsdp"])',
                 [err(1, 54, "register_cuda_ci: ratio must be a finite number, got 'x'",
                      f"markers.extra_arguments in {DIALECT.path} declares ratio as number")], id="number"),
    pytest.param(f'register_cuda_ci(1, "{LARGE}", eager=1, labels=["fsdp"])',
                 [err(1, 54, "register_cuda_ci: eager must be True or False, got 1",
                      f"markers.extra_arguments in {DIALECT.path} declares eager as boolean")], id="boolean"),
    pytest.param(f'register_cuda_ci(1, "{LARGE}", tags=["a", 1], labels=["fsdp"])',
                 [err(1, 53, "register_cuda_ci: tags must be a list of strings, got ['a', 1]",
                      f"markers.extra_arguments in {DIALECT.path} declares tags as strings")], id="strings"),
    pytest.param(f'register_cuda_ci(1, "{LARGE}", in_process_group=GROUP, labels=["fsdp"])',
                 [err(1, 65, "register_cuda_ci: in_process_group must be a literal, not `GROUP` (ci-policy reads "
                      "it from source without running the file)", "write the value of in_process_group itself (a "
                      "number, string, True/False, None, or a list or dict of those)")], id="not-literal"),
    pytest.param(f'register_cuda_ci(1, "{LARGE}", timeout=5, labels=["fsdp"])',
                 [err(1, 48, "register_cuda_ci: unknown argument 'timeout'",
                      "accepted arguments: est_time, suite, labels, nightly, disabled, stage, runner_config, "
                      "in_process_group, gpus, ratio, eager, tags; to accept another, declare it in the "
                      "configuration: markers: {extra_arguments: {timeout: string}}")], id="undeclared-extra"),
    pytest.param('register_cuda_ci(1, stage="base-b", labels=["fsdp"])',
                 [err(1, 1, f"register_cuda_ci: no suite, and the suite template {TEMPLATE} also needs runner_config",
                      "pass suite=... or runner_config=...")], id="template-incomplete"),
    pytest.param('register_cuda_ci(1, labels=["fsdp"])',
                 [err(1, 1, f"register_cuda_ci: no suite, and the suite template {TEMPLATE} also needs stage, "
                      "runner_config", "pass suite=... or stage=..., runner_config=...")], id="template-empty"),
    pytest.param('register_cuda_ci(suite="x", labels=["fsdp"])',
                 [err(1, 1, "register_cuda_ci: missing required argument 'est_time'")], id="est-time-still-required"),
    pytest.param(f'register_cuda_ci(1, "{LARGE}", stage="base-a", runner_config="1-gpu-large", labels=["fsdp"])',
                 [err(1, 21, f"register_cuda_ci: suite '{LARGE}' differs from 'base-a-test-1-gpu-large', the suite "
                      f"the template {TEMPLATE} builds from stage and runner_config",
                      "give suite or the template's arguments, or make them agree")], id="template-mismatch"),
    pytest.param('register_cuda_ci(1, stage="base-a", runner_config="1-gpu-large", labels=["fsdp"])',
                 [err(1, 1, "register_cuda_ci: suite 'base-a-test-1-gpu-large' is not a configured cuda stage; "
                      f"did you mean '{LARGE}'?", f"configured cuda stages: {LARGE} (stages are listed in "
                      f"{DIALECT.path})")], id="template-suite-not-a-stage"),
    pytest.param('register_npu_ci(1, "npu-a3")',
                 [err(1, 1, "register_npu_ci: a npu registration needs at least one label (gpu_requires_labels "
                      "is true), so that a PR can select it", "add labels=[...] with one of: megatron, fsdp, long")],
                 id="accelerator-needs-a-label"),
    pytest.param('register_amd_ci(1, "npu-a3", labels=["fsdp"])',
                 [err(1, 20, "register_amd_ci: suite 'npu-a3' is a npu stage, not a rocm stage",
                      "to run it on rocm too, add {name: npu-a3, backend: rocm, runs_on: [...]} to the stages in "
                      f"{DIALECT.path}; configured rocm stages: amd, amd-2 (stages are listed in {DIALECT.path})")],
                 id="stage-of-another-backend"),
])
def test_rejected_dialect_registration(text, expected):
    regs, errors = dialect(text + MAIN)
    assert (regs, errors) == ([], expected)


def test_a_registration_remembers_its_marker_and_the_json_registry_shows_it(make_repo):
    snap = load_snapshot(make_repo({
        PATH: 'register_amd_ci(2, "amd", labels=["long"])\n' + MAIN, "tests/unit/test_u.py": NO_MAIN,
    }, config=DIALECT_TEXT))
    assert snap.errors == ()
    assert [r.as_dict() for r in snap.registrations] == [
        {"file": PATH, "line": 1, "backend": "rocm", "suite": "amd", "est_time": 2, "labels": ["long"],
         "nightly": False, "disabled": None, "implicit": False, "marker": "register_amd_ci"},
        {"file": "tests/unit/test_u.py", "line": None, "backend": "cpu", "suite": "cpu", "est_time": 1,
         "labels": [], "nightly": False, "disabled": None, "implicit": True, "marker": None}]
    # Left out, a written registration gets its backend's built-in marker name.
    assert reg(1, "rocm", "amd", 2).marker == "register_rocm_ci"


def test_an_accelerator_registration_of_a_declared_backend_is_refused_under_a_cpu_only_root(make_repo):
    path = "tests/unit/test_u.py"
    snap = load_snapshot(make_repo({path: 'register_npu_ci(1, "npu-a3", labels=["fsdp"])\n' + MAIN},
                                   config=DIALECT_TEXT))
    assert errors_of(snap.errors) == [err(1, 1, f"register_npu_ci: {path} is under tests/unit, a cpu_only implicit "
                                             "root; npu tests cannot live there",
                                             "move the file out of tests/unit or register it for CPU", path=path)]


def test_a_file_whose_markers_are_all_undeclared_gets_that_error_and_no_unregistered_error(make_repo):
    text = 'from ci import register_xpu_ci\n\nregister_xpu_ci(est_time=200, suite="per-commit-xpu")\n' + MAIN
    snap = load_snapshot(make_repo({PATH: text, "tests/unit/test_u.py": text}, config=DIALECT_TEXT))
    configured = "register_amd_ci, register_cpu_ci, register_cuda_ci, register_npu_ci, register_rocm_ci"
    assert errors_of(snap.errors) == [
        err(3, 1, f"register_xpu_ci(...) looks like a registration marker but the configuration does not declare it "
            f"(configured: {configured}), so ci-policy reads no registration from it",
            "declare it: markers: {names: {register_xpu_ci: BACKEND}} in the configuration, with BACKEND one of its "
            "backends", path=path) for path in (PATH, "tests/unit/test_u.py")]
    # Under an implicit root too, a file with an undeclared marker is not given the root's registration.
    assert snap.registrations == ()


def test_the_unregistered_error_shows_the_pattern_the_file_matched_and_the_configured_markers(make_repo):
    path = "tests/e2e/testing_x.py"
    snap = load_snapshot(make_repo({path: NO_MAIN}, config=DIALECT_TEXT))
    assert errors_of(snap.errors) == [err(
        1, 1, f"{path} matches the discovery pattern 'testing_*.py' but has no registration and is not under an "
        "implicit root, so no stage would run it",
        "add register_cpu_ci/register_cuda_ci/register_rocm_ci/register_amd_ci/register_npu_ci(...) at module "
        "level, or add an implicit root for its directory in the configuration", path=path)]


@pytest.mark.parametrize("value, kind", [
    (True, "boolean"), (3, "integer"), (0.5, "number"), (float("inf"), None), ("x", "string"),
    (["a", "b"], "strings"), ([], "strings"), ([1], None), ({"k": 1}, None), (None, None),
])
def test_argument_type_is_the_narrowest_extra_argument_type_that_accepts_a_literal(value, kind):
    assert argument_type(value) == kind


def test_a_marker_may_not_register_to_a_command_stage():
    config = parse_config(MINIMAL_CONFIG.replace(
        "  - {name: gpu-b,", "  - {name: kernel, backend: cuda, runs_on: [h100], command: [pytest, -q, tests/], "
        "working_directory: sgl-kernel, paths: ['sgl-kernel/**'], est_time: 900}\n  - {name: gpu-b,"))
    regs, errors = parse('register_cuda_ci(60, "kernel", labels=["fsdp"])\n'
                         'register_cuda_ci(60, "gpu-a", labels=["fsdp"])\n' + MAIN, config=config)
    # The registration naming the command stage is dropped alone; the file's other one stays.
    assert errors == [err(1, 22, "register_cuda_ci: suite 'kernel' is a stage with a command (pytest -q tests/), "
                                 "which runs its suite itself; no marker registers to it",
                          "name a cuda stage that runs test files (gpu-a, gpu-b), or remove command from stage "
                          "'kernel' in .github/ci-policy.yml to run the files registered to it")]
    assert regs == [reg(2, "cuda", "gpu-a", 60, labels=("fsdp",))]
