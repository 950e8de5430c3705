"""E2E (nightly): Megatron-LM PPO convergence check on four H200 GPUs.

Simulated here: a toy two-armed bandit policy trained with REINFORCE
converges to the better arm.
"""

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=1500, suite="stage-c-4-gpu-h200", labels=["megatron"], nightly=True)

import math
import pathlib
import random
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from minirl.advantages import normalize_advantages


class MegatronNightlyConvergenceTest(unittest.TestCase):
    def test_bandit_converges(self):
        rng = random.Random(0)
        theta = 0.0  # logit of choosing arm 1
        payoff = (0.2, 0.8)
        for _ in range(200):
            p1 = 1.0 / (1.0 + math.exp(-theta))
            actions = [1 if rng.random() < p1 else 0 for _ in range(16)]
            rewards = [1.0 if rng.random() < payoff[a] else 0.0 for a in actions]
            adv = normalize_advantages(rewards)
            grad = sum(a_i * ((1.0 if a else 0.0) - p1) for a, a_i in zip(actions, adv)) / len(actions)
            theta += 0.5 * grad
        self.assertGreater(1.0 / (1.0 + math.exp(-theta)), 0.9)


if __name__ == "__main__":
    unittest.main()
