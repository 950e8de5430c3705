"""The `gates:` section of `.github/ci-policy.yml`, and the snapshot's checks of declared gates."""

from __future__ import annotations

import pytest
from helpers import MAIN_BLOCK, MINIMAL_CONFIG

from ci_policy.config.gates import SHIPPED_DEFAULTS, GateRequirement, GatesConfig
from ci_policy.config.top import parse_config
from ci_policy.errors import Diagnostic, InputErrors
from ci_policy.model.snapshot import load_snapshot
from ci_policy.sdk.metrics import DEFAULT_CAPTURE

P = ".github/ci-policy.yml"
GATES_LINE = MINIMAL_CONFIG.count("\n") + 1  # `gates:` follows the minimal configuration
V1 = "rollout/tito_session_mismatch_rate/v1/assistant_text"
V2 = "rollout/tito_session_mismatch_rate/v2/assistant_text"
TEMPLATE = "rollout/tito_session_mismatch_rate/{version}/assistant_text"
NOT_CAPTURED_HINT = "add it to gates.capture, or a gate on it could never be evaluated"


def gates_of(section: str) -> GatesConfig:
    return parse_config(MINIMAL_CONFIG + section, P).gates


def errors(section: str) -> list[tuple]:
    with pytest.raises(InputErrors) as info:
        parse_config(MINIMAL_CONFIG + section, P)
    return [(e.path, e.line, e.col, e.message, e.hint) for e in info.value.errors]


def at(section: str, needle: str, nth: int = 1) -> tuple[int, int]:
    """1-based (line, col) in the whole configuration of the nth `needle` of `section`."""
    pos = -1
    for _ in range(nth):
        pos = section.index(needle, pos + 1)
    line = MINIMAL_CONFIG.count("\n") + section.count("\n", 0, pos) + 1
    return line, pos - (section.rfind("\n", 0, pos) + 1) + 1


def err(section: str, needle: str, message: str, hint=None, nth: int = 1) -> tuple:
    return (P, *at(section, needle, nth), message, hint)


def shipped_with(**overrides) -> dict[str, dict]:
    merged = {**SHIPPED_DEFAULTS, **{k.replace("__", "/"): v for k, v in overrides.items()}}
    return dict(sorted(merged.items()))


# -- accepted ----------------------------------------------------------------------------------------

def test_no_gates_section_means_the_shipped_gates():
    gates = parse_config(MINIMAL_CONFIG).gates
    assert gates == GatesConfig()
    assert gates == GatesConfig(capture=DEFAULT_CAPTURE, defaults=shipped_with(), window=10, min_samples=3,
                                reference="mean", require=(), line=None)
    assert gates.defaults == SHIPPED_DEFAULTS


def test_an_empty_gates_section_is_the_defaults_located():
    assert gates_of("gates: {}\n") == GatesConfig(line=GATES_LINE)


def test_every_field():
    capture = "[" + ", ".join(DEFAULT_CAPTURE) + ", train/loss]"
    section = f"""\
gates:
  capture: {capture}
  defaults:
    train/loss: {{steps: [0, 10], constraint: {{abs_floor_up: 0.5, abs_floor_down: 0.5}}}}
    train/grad_norm:
      steps: last
      constraint: {{rel_up: 0.25, rel_down: 0.25}}
  window: 20
  min_samples: 20
  reference: median
  require:
    - files: "tests/e2e/session_server/test_*.py"
      metric_keys: ["{TEMPLATE}"]
      versions: [v1, v2]
    - files: [tests/e2e/test_a.py, "tests/e2e/b/**"]
      metric_keys: [train/loss, train/grad_norm]
      versions: [v2]
"""
    gates = gates_of(section)
    loss = {"steps": (0, 10), "constraint": {"abs_floor_up": 0.5, "abs_floor_down": 0.5}}
    grad = {"steps": "last", "constraint": {"rel_up": 0.25, "rel_down": 0.25}}
    assert gates == GatesConfig(
        capture=(*DEFAULT_CAPTURE, "train/loss"),
        defaults=shipped_with(train__loss=loss, train__grad_norm=grad),
        window=20, min_samples=20, reference="median",
        require=(
            GateRequirement(files=("tests/e2e/session_server/test_*.py",), metric_keys=(TEMPLATE,),
                            versions=("v1", "v2"), line=at(section, "files:")[0]),
            GateRequirement(files=("tests/e2e/test_a.py", "tests/e2e/b/**"),
                            metric_keys=("train/loss", "train/grad_norm"), versions=("v2",),
                            line=at(section, "files:", 2)[0]),
        ),
        line=at(section, "capture:")[0])  # a block mapping starts at its first key
    defaults = gates.defaults
    assert defaults["train/loss"] == loss and defaults["train/grad_norm"] == grad
    assert defaults["train/ppo_kl"] == SHIPPED_DEFAULTS["train/ppo_kl"]
    assert gates.require[0].required_keys() == ((V1, "v1"), (V2, "v2"))
    assert gates.require[1].required_keys() == (("train/loss", None), ("train/grad_norm", None))


@pytest.mark.parametrize("section, field, expected", [
    ("gates:\n  window: 1\n  min_samples: 1\n", "min_samples", 1),
    ("gates:\n  window: 7\n  min_samples: 7\n", "window", 7),
    ("gates:\n  min_samples: 10\n", "min_samples", 10),  # == the default window
    ("gates:\n  reference: mean\n", "reference", "mean"),
    ("gates:\n  capture: [" + ", ".join(reversed(DEFAULT_CAPTURE)) + "]\n", "capture",
     tuple(reversed(DEFAULT_CAPTURE))),
])
def test_single_fields(section, field, expected):
    assert getattr(gates_of(section), field) == expected


def test_a_default_may_replace_a_shipped_one_with_a_step_list():
    gates = gates_of("gates:\n  defaults:\n    train/ppo_kl: {steps: [5, 0], constraint: {rel_up: 0, rel_down: 2}}\n")
    # Read-only: the step list is stored as a tuple.
    assert gates.defaults == shipped_with(train__ppo_kl={"steps": (5, 0), "constraint": {"rel_up": 0, "rel_down": 2}})


def test_require_forms():
    section = ("gates:\n  require:\n"
               "    - {files: tests/x.py, metric_keys: [a, b]}\n"
               "    - {files: [tests/y.py], metric_keys: ['a/{version}', c], versions: [v2, v1]}\n"
               "    - {files: tests/z.py, metric_keys: [d], versions: [v1]}\n")
    assert gates_of(section).require == (
        GateRequirement(files=("tests/x.py",), metric_keys=("a", "b"), versions=(), line=GATES_LINE + 2),
        GateRequirement(files=("tests/y.py",), metric_keys=("a/{version}", "c"), versions=("v2", "v1"),
                        line=GATES_LINE + 3),
        GateRequirement(files=("tests/z.py",), metric_keys=("d",), versions=("v1",), line=GATES_LINE + 4),
    )
    assert gates_of(section).require[1].required_keys() == (("a/v2", "v2"), ("a/v1", "v1"), ("c", None))


# -- rejected ----------------------------------------------------------------------------------------

GATE_KEYS_HINT = "allowed keys here: capture, defaults, min_samples, reference, require, window"
DEFAULT_KEYS_HINT = "allowed keys here: constraint, steps"
REQUIRE_KEYS_HINT = "allowed keys here: files, metric_keys, versions"
GRAD_DEFAULT = "gates.defaults['train/grad_norm']"


def grad_default(steps: str = "all", constraint: str = "{rel_up: 1, rel_down: 1}") -> str:
    return f"gates:\n  defaults:\n    train/grad_norm: {{steps: {steps}, constraint: {constraint}}}\n"


REJECTED = [
    pytest.param("gates:\n  windw: 5\n", [("windw", "gates.windw: unknown key; did you mean 'window'?",
                                          GATE_KEYS_HINT)], id="unknown-key"),
    pytest.param("gates:\n  enforce: true\n", [("enforce", "gates.enforce: unknown key", GATE_KEYS_HINT)],
                 id="unknown-key-no-suggestion"),
    pytest.param("gates: [window]\n", [("[", "gates: expected a mapping, got a list", None)], id="not-a-mapping"),
    pytest.param("gates:\n", [("\n", "gates: expected a mapping, got null", None)], id="null"),
    pytest.param("gates:\n  capture: []\n", [("[]", "gates.capture: must not be empty", None)], id="capture-empty"),
    pytest.param("gates:\n  capture: train/grad_norm\n",
                 [("train", "gates.capture: expected a list, got a string ('train/grad_norm')", None)],
                 id="capture-not-a-list"),
    pytest.param(grad_default(steps="first"),
                 [("first", f"{GRAD_DEFAULT}.steps: steps must be \"last\", \"all\" or a list of step indices, "
                            "got 'first'", None)], id="steps-word"),
    pytest.param(grad_default(steps="[]"), [("[]", f"{GRAD_DEFAULT}.steps: steps must not be an empty list", None)],
                 id="steps-empty"),
    pytest.param(grad_default(steps="[1, 1]"), [("[1, 1]", f"{GRAD_DEFAULT}.steps: steps lists a step twice: [1, 1]",
                                                 None)], id="steps-duplicate"),
    pytest.param(grad_default(steps="[-1]"),
                 [("[-1]", f"{GRAD_DEFAULT}.steps: steps must list integer step indices >= 0, got [-1]", None)],
                 id="steps-negative"),
    pytest.param(grad_default(steps="[1.5]"),
                 [("[1.5]", f"{GRAD_DEFAULT}.steps: steps must list integer step indices >= 0, got [1.5]", None)],
                 id="steps-float"),
    pytest.param(grad_default(steps="true"),
                 [("true", f"{GRAD_DEFAULT}.steps: steps must be \"last\", \"all\" or a list of step indices, "
                           "got True", None)], id="steps-bool"),
    pytest.param(grad_default(constraint="{rel_up: 1, rel_down: 1, rel: 2}"),
                 [("{rel_up", f"{GRAD_DEFAULT}.constraint: constraint has unknown key(s) 'rel'; accepted: rel_up, "
                              "abs_floor_up, rel_down, abs_floor_down", None)], id="constraint-unknown-key"),
    pytest.param(grad_default(constraint="{rel_up: -1, rel_down: 1}"),
                 [("{rel_up", f"{GRAD_DEFAULT}.constraint: constraint['rel_up'] must be a finite number >= 0, got -1",
                   None)], id="constraint-negative"),
    pytest.param(grad_default(constraint="{rel_up: 1, abs_floor_down: .nan}"),
                 [("{rel_up", f"{GRAD_DEFAULT}.constraint: constraint['abs_floor_down'] must be a finite number "
                              ">= 0, got nan", None)], id="constraint-nan"),
    pytest.param(grad_default(constraint="{rel_up: .inf, rel_down: 1}"),
                 [("{rel_up", f"{GRAD_DEFAULT}.constraint: constraint['rel_up'] must be a finite number >= 0, got inf",
                   None)], id="constraint-inf"),
    pytest.param(grad_default(constraint="{rel_up: 1e-3, rel_down: 1}"),  # YAML 1.1: 1e-3 is a string
                 [("{rel_up", f"{GRAD_DEFAULT}.constraint: constraint['rel_up'] must be a finite number >= 0, "
                              "got '1e-3'", None)], id="constraint-yaml-string"),
    pytest.param(grad_default(constraint="{rel_up: true, rel_down: 1}"),
                 [("{rel_up", f"{GRAD_DEFAULT}.constraint: constraint['rel_up'] must be a finite number >= 0, "
                              "got True", None)], id="constraint-bool"),
    pytest.param(grad_default(constraint="{rel_up: 1}"),
                 [("{rel_up", f"{GRAD_DEFAULT}.constraint: constraint needs at least one bound per side "
                              "(rel_up or abs_floor_up, and rel_down or abs_floor_down)", None)],
                 id="constraint-one-side"),
    pytest.param(grad_default(constraint="0.5"),
                 [("0.5", f"{GRAD_DEFAULT}.constraint: constraint must be a dict, got 0.5", None)],
                 id="constraint-not-a-dict"),
    pytest.param("gates:\n  defaults:\n    train/grad_norm: {steps: all}\n",
                 [("{steps", f"{GRAD_DEFAULT}.constraint: required key is missing", None)], id="default-no-constraint"),
    pytest.param("gates:\n  defaults:\n    train/grad_norm: {constraint: {rel_up: 1, rel_down: 1}}\n",
                 [("{constraint", f"{GRAD_DEFAULT}.steps: required key is missing", None)], id="default-no-steps"),
    pytest.param(grad_default().replace("}}\n", "}, enforce: true}\n"),
                 [("enforce", f"{GRAD_DEFAULT}.enforce: unknown key", DEFAULT_KEYS_HINT)], id="default-unknown-key"),
    pytest.param("gates:\n  defaults:\n    train/grad_norm: last\n",
                 [("last", f"{GRAD_DEFAULT}: expected a mapping, got a string ('last')", None)],
                 id="default-not-a-mapping"),
    pytest.param("gates:\n  defaults: [train/grad_norm]\n",
                 [("[", "gates.defaults: expected a mapping, got a list", None)], id="defaults-not-a-mapping"),
    pytest.param("gates:\n  defaults:\n    train/loss: {steps: last, constraint: {rel_up: 1, rel_down: 1}}\n",
                 [("train/loss", "gates.defaults['train/loss']: default gate key 'train/loss' is not captured",
                   NOT_CAPTURED_HINT)],
                 id="default-key-not-in-default-capture"),
    pytest.param("gates:\n  capture: [" + ", ".join(DEFAULT_CAPTURE) + "]\n"
                 "  defaults:\n    train/loss: {steps: last, constraint: {rel_up: 1, rel_down: 1}}\n",
                 [("train/loss", "gates.defaults['train/loss']: default gate key 'train/loss' is not captured",
                   NOT_CAPTURED_HINT)],
                 id="default-key-not-in-capture"),
    pytest.param("gates:\n  window: 5\n  min_samples: 6\n",
                 [("6", "gates.min_samples: must not exceed gates.window (5), got 6", None)],
                 id="min-samples-above-window"),
    pytest.param("gates:\n  min_samples: 11\n",
                 [("11", "gates.min_samples: must not exceed gates.window (10), got 11", None)],
                 id="min-samples-above-default-window"),
    pytest.param("gates:\n  window: 0\n", [("0", "gates.window: must be at least 1, got 0", None)], id="window-zero"),
    pytest.param("gates:\n  min_samples: 0\n", [("0", "gates.min_samples: must be at least 1, got 0", None)],
                 id="min-samples-zero"),
    pytest.param("gates:\n  min_samples: 1.5\n",
                 [("1.5", "gates.min_samples: expected an integer, got a number ('1.5')", None)],
                 id="min-samples-float"),
    pytest.param("gates:\n  window: true\n",
                 [("true", "gates.window: expected an integer, got a boolean ('true')", None)], id="window-bool"),
    pytest.param("gates:\n  reference: mode\n",
                 [("mode", "gates.reference: expected one of mean, median, got 'mode'", None)], id="reference"),
    pytest.param("gates:\n  require: {files: x}\n",
                 [("{", "gates.require: expected a list, got a mapping", None)], id="require-not-a-list"),
    pytest.param("gates:\n  require:\n    - {metric_keys: [a]}\n",
                 [("{", "gates.require[0].files: required key is missing", None)], id="require-no-files"),
    pytest.param("gates:\n  require:\n    - {files: x}\n",
                 [("{", "gates.require[0].metric_keys: required key is missing", None)], id="require-no-keys"),
    pytest.param("gates:\n  require:\n    - {files: x, metric_keys: [a], version: [v1]}\n",
                 [("version:", "gates.require[0].version: unknown key; did you mean 'versions'?", REQUIRE_KEYS_HINT)],
                 id="require-unknown-key"),
    pytest.param("gates:\n  require:\n    - {files: [], metric_keys: [a]}\n",
                 [("[]", "gates.require[0].files: must not be empty", None)], id="require-files-empty"),
    pytest.param("gates:\n  require:\n    - {files: 'tests/[', metric_keys: [a]}\n",
                 [("'tests/[", "gates.require[0].files: invalid glob 'tests/[': unclosed '['", None)],
                 id="require-bad-glob"),
    pytest.param("gates:\n  require:\n    - {files: x, metric_keys: []}\n",
                 [("[]", "gates.require[0].metric_keys: must not be empty", None)], id="require-keys-empty"),
    pytest.param("gates:\n  require:\n    - {files: x, metric_keys: [a, a]}\n",
                 [("a]", "gates.require[0].metric_keys[1]: duplicate entry 'a'", None)], id="require-keys-duplicate"),
    pytest.param("gates:\n  require:\n    - {files: x, metric_keys: ['a/{version}', 'b/{version}']}\n",
                 [("['a", "gates.require[0].metric_keys: 'a/{version}' uses {version} but no versions are listed",
                   "add versions: [v1, v2]")], id="version-template-without-versions"),
    pytest.param("gates:\n  require:\n    - {files: x, metric_keys: [b, 'a/{version}']}\n  window: 0\n",
                 [("[b", "gates.require[0].metric_keys: 'a/{version}' uses {version} but no versions are listed",
                   "add versions: [v1, v2]"),
                  ("0", "gates.window: must be at least 1, got 0", None)], id="every-error-reported"),
]


@pytest.mark.parametrize("section, expected", REJECTED)
def test_rejected(section, expected):
    assert errors(section) == [err(section, needle, message, hint) for needle, message, hint in expected]


def test_a_restricted_capture_keeps_only_the_shipped_defaults_it_captures():
    config = parse_config(MINIMAL_CONFIG + "gates:\n  capture: [train/grad_norm]\n")
    assert config.gates.capture == ("train/grad_norm",)
    assert list(config.gates.defaults) == ["train/grad_norm"]


@pytest.mark.parametrize("versions, needle, message", [
    ("[v1, v3]", "v3]", "gates.require[0].versions[1]: expected one of v1, v2, got 'v3'"),
    ("[V1]", "V1", "gates.require[0].versions[0]: expected one of v1, v2, got 'V1'"),
    ("[v2, '1']", "'1'", "gates.require[0].versions[1]: expected one of v1, v2, got '1'"),
    ("[1]", "1]", "gates.require[0].versions[0]: expected a string, got an integer ('1')"),
])
def test_versions_other_than_v1_and_v2_are_rejected(versions, needle, message):
    section = f"gates:\n  require:\n    - {{files: x, metric_keys: ['a/{{version}}'], versions: {versions}}}\n"
    assert err(section, needle, message) in errors(section)


def test_an_invalid_version_is_the_only_error():
    section = "gates:\n  require:\n    - {files: x, metric_keys: ['a/{version}'], versions: [v1, v3]}\n"
    assert errors(section) == [err(section, "v3", "gates.require[0].versions[1]: expected one of v1, v2, got 'v3'")]


# -- the snapshot: declared gates against the configuration -----------------------------------------------

GATED_FILE = "tests/e2e/test_gated.py"


def gated_repo(make_repo, *gates: str, config_gates: str = ""):
    body = "\n".join(gates)
    text = ('from ci_policy import register_ci_gate, register_cuda_ci\n\n'
            'register_cuda_ci(est_time=60, suite="gpu-a", labels=["megatron"])\n'
            f"{body}\n{MAIN_BLOCK}")
    return load_snapshot(make_repo({GATED_FILE: text}, config=MINIMAL_CONFIG + config_gates))


def gate_error(line: int, code: str, message: str, hint: str) -> Diagnostic:
    return Diagnostic(message, path=GATED_FILE, line=line, col=1, hint=hint, code=code)


def uncaptured(key: str, line: int) -> Diagnostic:
    return gate_error(line, "CP510", f"register_ci_gate: metric_key {key!r} is not captured, so it "
                                     "can never be evaluated",
                      f"add it to gates.capture in {P}")


def no_default(what: str, key: str, line: int) -> Diagnostic:
    first = what.split(" and ")[0]
    return gate_error(line, "CP511", f"register_ci_gate: {what} not given and gates.defaults has none for {key!r}",
                      f"write {first}=... in the call or add a default in {P}")


CAPTURE_LOSS = "gates:\n  capture: [" + ", ".join(DEFAULT_CAPTURE) + ", train/loss]\n"
BOTH = '{"rel_up": 1, "rel_down": 1}'


def test_declared_gates_on_captured_keys_with_defaults_are_valid(make_repo):
    snapshot = gated_repo(make_repo, f'register_ci_gate(metric_key="{V1}")', f'register_ci_gate(metric_key="{V2}")',
                          'register_ci_gate(metric_key="train/grad_norm", steps=[0, 9])')
    assert snapshot.errors == ()
    assert [g.metric_key for g in snapshot.gates] == [V1, V2, "train/grad_norm"]


def test_a_declared_gate_on_an_uncaptured_key(make_repo):
    snapshot = gated_repo(make_repo, f'register_ci_gate(metric_key="train/loss", steps="last", constraint={BOTH})')
    assert snapshot.errors == (uncaptured("train/loss", 4),)


@pytest.mark.parametrize("call, what", [
    ('register_ci_gate(metric_key="train/loss")', "steps and constraint"),
    ('register_ci_gate(metric_key="train/loss", steps="all")', "constraint"),
    (f'register_ci_gate(metric_key="train/loss", constraint={BOTH})', "steps"),
])
def test_a_declared_gate_without_steps_or_constraint_and_no_default(make_repo, call, what):
    snapshot = gated_repo(make_repo, call, config_gates=CAPTURE_LOSS)
    assert snapshot.errors == (no_default(what, "train/loss", 4),)


def test_a_configured_default_completes_a_declared_gate(make_repo):
    config = CAPTURE_LOSS + "  defaults:\n    train/loss: {steps: last, constraint: {rel_up: 1, rel_down: 1}}\n"
    snapshot = gated_repo(make_repo, 'register_ci_gate(metric_key="train/loss")', config_gates=config)
    assert snapshot.errors == ()


def test_an_uncaptured_gate_without_defaults_reports_both(make_repo):
    snapshot = gated_repo(make_repo, f'register_ci_gate(metric_key="{V1}")', 'register_ci_gate(metric_key="a/b")')
    assert snapshot.errors == (uncaptured("a/b", 5), no_default("steps and constraint", "a/b", 5))


def test_steps_none_without_a_default_is_an_error(make_repo):
    snapshot = gated_repo(make_repo, f'register_ci_gate(metric_key="train/loss", steps=None, constraint={BOTH})',
                          config_gates=CAPTURE_LOSS)
    assert snapshot.errors == (no_default("steps", "train/loss", 4),)


def test_a_window_below_the_default_min_samples_is_located_at_the_window():
    section = "gates:\n  window: 2\n"
    assert errors(section) == [err(section, "2", "gates.window: must be at least gates.min_samples (3, the default), "
                                   "got 2", "lower gates.min_samples too")]
    assert gates_of("gates:\n  window: 2\n  min_samples: 2\n").window == 2
