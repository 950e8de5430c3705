"""sdk.markers: the registration markers do nothing at run time and take the documented arguments.

The markers are looked up by name: a call written here would read, to `ci-policy lint`, as a
registration of this file that is not at module level.
"""

from __future__ import annotations

import inspect

import pytest

import ci_policy
from ci_policy.sdk import markers

BACKEND_MARKERS = ["register_cpu_ci", "register_cuda_ci", "register_rocm_ci"]
GATE_MARKER = "register_ci_gate"


def marker_named(name: str):
    return getattr(markers, name)


@pytest.mark.parametrize("name", BACKEND_MARKERS)
def test_a_backend_marker_accepts_its_documented_calls_and_returns_none(name):
    marker = marker_named(name)
    assert marker(300, "stage-a") is None
    assert marker(est_time=12.5, suite="stage-b") is None
    assert marker(60, "gpu", labels=["megatron", "fsdp"], nightly=True, disabled="flaky on h200") is None
    assert marker(60, "gpu", labels=None, nightly=False, disabled=None) is None


@pytest.mark.parametrize("name", BACKEND_MARKERS)
def test_a_backend_marker_signature(name):
    assert str(inspect.signature(marker_named(name))) == (
        "(est_time: 'float', suite: 'str', *, labels: 'Sequence[str] | None' = None, "
        "nightly: 'bool' = False, disabled: 'str | None' = None) -> 'None'")


@pytest.mark.parametrize("name", BACKEND_MARKERS)
def test_a_backend_marker_refuses_undocumented_arguments(name):
    marker = marker_named(name)
    with pytest.raises(TypeError):
        marker(60)
    with pytest.raises(TypeError):
        marker(60, "gpu", ["megatron"])
    with pytest.raises(TypeError):
        marker(60, "gpu", label="megatron")


def test_the_gate_marker_accepts_its_documented_calls_and_returns_none():
    gate = marker_named(GATE_MARKER)
    assert gate(metric_key="train/grad_norm") is None
    assert gate(metric_key="train/ppo_kl", steps="last", constraint={"max": 0.1}) is None
    assert gate(metric_key="k", steps=[0, 3], constraint={"rel_tol": 0.05}, enforce=True,
                allowlist_reason="known drift") is None
    assert str(inspect.signature(gate)) == (
        "(*, metric_key: 'str', steps: 'Any' = None, constraint: 'Any' = None, enforce: 'bool' = False, "
        "allowlist_reason: 'str | None' = None) -> 'None'")
    with pytest.raises(TypeError):
        gate("train/grad_norm")
    with pytest.raises(TypeError):
        gate()


def test_the_markers_are_the_package_api():
    assert [name for name in dir(markers) if name.startswith("register_")] == sorted(BACKEND_MARKERS + [GATE_MARKER])
    for name in BACKEND_MARKERS + [GATE_MARKER]:
        assert getattr(ci_policy, name) is marker_named(name)
