"""Unit tests for GAE and advantage normalisation."""

import math

import pytest

from minirl.advantages import compute_gae, group_relative_advantages, normalize_advantages


def test_gae_single_step_terminal():
    adv, ret = compute_gae([1.0], [0.5], [True], last_value=10.0)
    assert adv == pytest.approx([0.5])
    assert ret == pytest.approx([1.0])


def test_gae_lambda_one_equals_discounted_return_minus_value():
    rewards = [1.0, 0.0, 2.0]
    values = [0.3, 0.2, 0.1]
    gamma = 0.9
    adv, ret = compute_gae(rewards, values, [False, False, True], gamma=gamma, lam=1.0)
    expected_returns = [1.0 + gamma * 0.0 + gamma**2 * 2.0, 0.0 + gamma * 2.0, 2.0]
    assert ret == pytest.approx(expected_returns)
    assert adv == pytest.approx([r - v for r, v in zip(expected_returns, values)])


def test_gae_lambda_zero_is_td_error():
    rewards = [1.0, 1.0]
    values = [0.5, 0.25]
    adv, _ = compute_gae(rewards, values, [False, False], last_value=1.0, gamma=0.5, lam=0.0)
    assert adv == pytest.approx([1.0 + 0.5 * 0.25 - 0.5, 1.0 + 0.5 * 1.0 - 0.25])


def test_gae_done_stops_bootstrapping():
    adv_a, _ = compute_gae([0.0, 0.0], [0.0, 0.0], [True, False], last_value=5.0)
    assert adv_a[0] == pytest.approx(0.0)
    assert adv_a[1] > 0


def test_gae_length_mismatch():
    with pytest.raises(ValueError):
        compute_gae([1.0], [0.0, 0.0], [False])


def test_normalize_zero_mean_unit_std():
    out = normalize_advantages([1.0, 2.0, 3.0, 4.0])
    mean = sum(out) / len(out)
    std = math.sqrt(sum((x - mean) ** 2 for x in out) / len(out))
    assert mean == pytest.approx(0.0, abs=1e-9)
    assert std == pytest.approx(1.0, rel=1e-6)


def test_normalize_empty_and_constant():
    assert normalize_advantages([]) == []
    assert normalize_advantages([2.0, 2.0]) == pytest.approx([0.0, 0.0])


def test_group_relative_advantages_sign():
    out = group_relative_advantages([0.0, 1.0, 1.0, 0.0])
    assert out[1] > 0 > out[0]
