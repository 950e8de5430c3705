"""E2E: rollout generation through the SGLang engine on one H200.

Simulated here: a deterministic toy "engine" fills the rollout buffer and
the collected log-probabilities stay consistent with the reference.
"""

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=180, suite="stage-b-1-gpu-h200", labels=["sglang"])

import pathlib
import random
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from minirl.kl import mean_kl
from minirl.rollout import RolloutBuffer, Transition


def toy_engine(num_steps, seed=0):
    rng = random.Random(seed)
    for i in range(num_steps):
        yield Transition(reward=rng.random(), value=0.5, logp=-rng.random(), done=(i % 8 == 7))


class SGLangRolloutTest(unittest.TestCase):
    def test_rollout_fills_buffer(self):
        buf = RolloutBuffer(capacity=32)
        for t in toy_engine(32):
            buf.add(t)
        self.assertTrue(buf.full)
        self.assertEqual(sum(t.done for t in buf.transitions()), 4)

    def test_engine_logprobs_match_trainer(self):
        logp = [t.logp for t in toy_engine(64, seed=1)]
        trainer_logp = [lp + 1e-4 for lp in logp]
        self.assertLess(mean_kl(logp, trainer_logp), 1e-6)


if __name__ == "__main__":
    unittest.main()
