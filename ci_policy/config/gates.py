"""The values of metric-history gates: shipped defaults and the checks of `steps` and `constraint`.

- In: plain values, from the configuration's `gates.defaults` or a test file's
  `register_ci_gate(...)` literals.
- Out: the problems found, as one sentence each (empty when the value is fine).
- Stated here, once, because both the configuration and the gate declarations use them.
"""

from __future__ import annotations

from typing import Any

from ci_policy.read.numbers import is_finite_number

CONSTRAINT_KEYS = ("rel_up", "abs_floor_up", "rel_down", "abs_floor_down")

SHIPPED_DEFAULTS: dict[str, dict] = {
    # Deliberately loose: a known trailing-newline drift makes plain-text turns mismatch.
    "rollout/tito_session_mismatch_rate/v1/assistant_text":
        {"steps": "last", "constraint": {"rel_up": 1.0, "abs_floor_up": 0.1, "rel_down": 1.0}},
    "rollout/tito_session_mismatch_rate/v2/assistant_text":
        {"steps": "last", "constraint": {"rel_up": 1.0, "abs_floor_up": 0.1, "rel_down": 1.0}},
    "train/grad_norm":
        {"steps": "all", "constraint": {"rel_up": 0.5, "abs_floor_up": 0.05, "rel_down": 0.5, "abs_floor_down": 0.05}},
    "train/ppo_kl":
        {"steps": "all", "constraint": {"rel_up": 1.0, "abs_floor_up": 0.001, "rel_down": 1.0, "abs_floor_down": 0.001}},
    "train/train_rollout_logprob_abs_diff":
        {"steps": "all", "constraint": {"rel_up": 0.5, "abs_floor_up": 0.01, "rel_down": 1.0, "abs_floor_down": 0.01}},
    "train/train_rollout_kl":
        {"steps": "all", "constraint": {"rel_up": 1.0, "abs_floor_up": 0.001, "rel_down": 1.0, "abs_floor_down": 0.001}},
    "rollout/raw_reward":
        {"steps": "all", "constraint": {"rel_up": 0.3, "abs_floor_up": 0.05, "rel_down": 0.3, "abs_floor_down": 0.05}},
}


def _number_ok(v: Any) -> bool:
    return is_finite_number(v) and v >= 0


def steps_problems(steps: Any) -> list[str]:
    """Why `steps` is not "last", "all" or a non-empty list of distinct step indices >= 0."""
    if isinstance(steps, str):
        if steps in ("last", "all"):
            return []
        return [f'steps must be "last", "all" or a list of step indices, got {steps!r}']
    if isinstance(steps, list):
        if not steps:
            return ["steps must not be an empty list"]
        if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in steps):
            return [f"steps must list integer step indices >= 0, got {steps!r}"]
        if len(set(steps)) != len(steps):
            return [f"steps lists a step twice: {steps!r}"]
        return []
    return [f'steps must be "last", "all" or a list of step indices, got {steps!r}']


def constraint_problems(constraint: Any) -> list[str]:
    """Why `constraint` is not a dict of known bounds, finite and >= 0, at least one per side."""
    if not isinstance(constraint, dict):
        return [f"constraint must be a dict, got {constraint!r}"]
    problems = []
    bad = [k for k in constraint if k not in CONSTRAINT_KEYS]
    if bad:
        problems.append(f"constraint has unknown key(s) {', '.join(map(repr, bad))}; "
                        f"accepted: {', '.join(CONSTRAINT_KEYS)}")
    for k, v in constraint.items():
        if k in CONSTRAINT_KEYS and not _number_ok(v):
            problems.append(f"constraint[{k!r}] must be a finite number >= 0, got {v!r}")
    if not any(k in constraint for k in ("rel_up", "abs_floor_up")) or not any(
            k in constraint for k in ("rel_down", "abs_floor_down")):
        problems.append("constraint needs at least one bound per side "
                        "(rel_up or abs_floor_up, and rel_down or abs_floor_down)")
    return problems
