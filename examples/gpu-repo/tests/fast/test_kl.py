"""Unit tests for the k1 / k3 KL estimators."""

import math

import pytest

from minirl.kl import kl_k1, kl_k3, mean_kl


def test_identical_distributions_have_zero_kl():
    logp = [-0.1, -2.0, -0.7]
    assert kl_k1(logp, logp) == pytest.approx([0.0, 0.0, 0.0])
    assert kl_k3(logp, logp) == pytest.approx([0.0, 0.0, 0.0])


def test_k1_values():
    assert kl_k1([-1.0, -0.5], [-1.5, -0.25]) == pytest.approx([0.5, -0.25])


def test_k3_is_non_negative():
    logp = [-0.1, -3.0, -0.2, -1.0]
    ref = [-2.0, -0.1, -0.2, -1.5]
    assert all(v >= 0.0 for v in kl_k3(logp, ref))


def test_k3_value():
    r = -0.5 - (-1.0)
    assert kl_k3([-1.0], [-0.5]) == pytest.approx([math.exp(r) - 1 - r])


def test_mean_kl_estimators():
    logp = [-1.0, -0.5]
    ref = [-1.5, -0.25]
    assert mean_kl(logp, ref, "k1") == pytest.approx(0.125)
    assert mean_kl(logp, ref) == pytest.approx(sum(kl_k3(logp, ref)) / 2)
    assert mean_kl([], []) == 0.0


def test_errors():
    with pytest.raises(ValueError):
        kl_k1([0.0], [])
    with pytest.raises(ValueError):
        mean_kl([0.0], [0.0], "k2")
