"""Unit tests for the rollout buffer."""

import pytest

from minirl.advantages import compute_gae
from minirl.rollout import RolloutBuffer, Transition


def _fill(buf, n):
    for i in range(n):
        buf.add(Transition(reward=float(i), value=0.1 * i, logp=-1.0, done=(i == n - 1)))


def test_add_until_full():
    buf = RolloutBuffer(capacity=3)
    _fill(buf, 3)
    assert len(buf) == 3
    assert buf.full
    with pytest.raises(OverflowError):
        buf.add(Transition(reward=0.0, value=0.0, logp=0.0))
    buf.clear()
    assert len(buf) == 0 and not buf.full


def test_invalid_capacity():
    with pytest.raises(ValueError):
        RolloutBuffer(0)


def test_advantages_match_compute_gae():
    buf = RolloutBuffer(capacity=4)
    _fill(buf, 4)
    ts = buf.transitions()
    expected, _ = compute_gae([t.reward for t in ts], [t.value for t in ts], [t.done for t in ts])
    assert buf.advantages() == pytest.approx(expected)


def test_minibatches_cover_everything_once():
    buf = RolloutBuffer(capacity=10)
    _fill(buf, 10)
    batches = list(buf.minibatches(3, seed=0))
    assert [len(b) for b in batches] == [3, 3, 3, 1]
    seen = sorted(t.reward for b in batches for t in b)
    assert seen == [float(i) for i in range(10)]


def test_minibatches_deterministic_with_seed():
    buf = RolloutBuffer(capacity=8)
    _fill(buf, 8)
    a = [[t.reward for t in b] for b in buf.minibatches(4, seed=123)]
    b = [[t.reward for t in b] for b in buf.minibatches(4, seed=123)]
    assert a == b
