"""Advantage estimation: GAE and per-batch normalisation."""

from __future__ import annotations

import math
from typing import List, Sequence, Tuple


def compute_gae(
    rewards: Sequence[float],
    values: Sequence[float],
    dones: Sequence[bool],
    last_value: float = 0.0,
    gamma: float = 0.99,
    lam: float = 0.95,
) -> Tuple[List[float], List[float]]:
    """Generalised Advantage Estimation over a single trajectory segment.

    ``values[t]`` is the value estimate of the state at step ``t`` and
    ``last_value`` bootstraps the state after the final step. ``dones[t]``
    marks that the episode terminated after step ``t``.

    Returns ``(advantages, returns)`` where ``returns = advantages + values``.
    """
    if not (len(rewards) == len(values) == len(dones)):
        raise ValueError("rewards, values and dones must have the same length")
    n = len(rewards)
    advantages = [0.0] * n
    gae = 0.0
    next_value = last_value
    for t in reversed(range(n)):
        not_done = 0.0 if dones[t] else 1.0
        delta = rewards[t] + gamma * next_value * not_done - values[t]
        gae = delta + gamma * lam * not_done * gae
        advantages[t] = gae
        next_value = values[t]
    returns = [a + v for a, v in zip(advantages, values)]
    return advantages, returns


def normalize_advantages(advantages: Sequence[float], eps: float = 1e-8) -> List[float]:
    """Shift to zero mean and scale to unit (population) standard deviation."""
    n = len(advantages)
    if n == 0:
        return []
    mean = sum(advantages) / n
    var = sum((a - mean) ** 2 for a in advantages) / n
    std = math.sqrt(var)
    return [(a - mean) / (std + eps) for a in advantages]


def group_relative_advantages(rewards: Sequence[float], eps: float = 1e-6) -> List[float]:
    """GRPO-style advantages: rewards normalised within one prompt's group."""
    return normalize_advantages(rewards, eps=eps)
