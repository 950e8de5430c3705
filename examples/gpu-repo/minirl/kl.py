"""KL-divergence estimators computed from per-token log-probabilities.

Given samples drawn from the policy ``pi`` with log-probabilities
``logp`` and the reference model log-probabilities ``ref_logp`` for the
same tokens, these estimate ``KL(pi || ref)``:

* k1: ``logp - ref_logp`` (unbiased, high variance, can be negative)
* k3: ``exp(r) - 1 - r`` with ``r = ref_logp - logp`` (unbiased, always >= 0)
"""

from __future__ import annotations

import math
from typing import List, Sequence


def _check(logp: Sequence[float], ref_logp: Sequence[float]) -> None:
    if len(logp) != len(ref_logp):
        raise ValueError("logp and ref_logp must have the same length")


def kl_k1(logp: Sequence[float], ref_logp: Sequence[float]) -> List[float]:
    """Per-token k1 estimator."""
    _check(logp, ref_logp)
    return [lp - rl for lp, rl in zip(logp, ref_logp)]


def kl_k3(logp: Sequence[float], ref_logp: Sequence[float]) -> List[float]:
    """Per-token k3 estimator (non-negative)."""
    _check(logp, ref_logp)
    out = []
    for lp, rl in zip(logp, ref_logp):
        r = rl - lp
        out.append(math.expm1(r) - r)
    return out


def mean_kl(logp: Sequence[float], ref_logp: Sequence[float], estimator: str = "k3") -> float:
    """Mean KL over tokens using the named estimator (``"k1"`` or ``"k3"``)."""
    if estimator == "k1":
        values = kl_k1(logp, ref_logp)
    elif estimator == "k3":
        values = kl_k3(logp, ref_logp)
    else:
        raise ValueError(f"unknown KL estimator: {estimator!r}")
    if not values:
        return 0.0
    return sum(values) / len(values)
