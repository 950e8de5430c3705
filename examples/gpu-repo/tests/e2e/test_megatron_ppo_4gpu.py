"""E2E: PPO with the Megatron-LM backend on four H200 GPUs (TP=2, DP=2).

Simulated here: the parallel layout and a clipped PPO objective over a
rollout buffer.
"""

from ci_policy import register_cuda_ci

register_cuda_ci(900, "stage-c-4-gpu-h200", labels=["megatron"])

import math
import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from minirl.advantages import normalize_advantages
from minirl.backends.megatron import MegatronConfig
from minirl.rollout import RolloutBuffer, Transition


def clipped_objective(ratio, advantage, eps=0.2):
    return min(ratio * advantage, max(min(ratio, 1 + eps), 1 - eps) * advantage)


class MegatronPPO4GPUTest(unittest.TestCase):
    def test_layout(self):
        cfg = MegatronConfig(tensor_parallel=2)
        self.assertEqual(cfg.data_parallel_size(4), 2)
        with self.assertRaises(ValueError):
            MegatronConfig(tensor_parallel=3).data_parallel_size(4)

    def test_clipped_objective(self):
        buf = RolloutBuffer(capacity=6)
        for i in range(6):
            buf.add(Transition(reward=float(i % 2), value=0.5, logp=-1.0, done=(i == 5)))
        adv = normalize_advantages(buf.advantages())
        new_logp = -0.5
        for t, a in zip(buf.transitions(), adv):
            ratio = math.exp(new_logp - t.logp)
            obj = clipped_objective(ratio, a)
            self.assertLessEqual(obj, ratio * a + 1e-12)
            if a > 0:
                self.assertAlmostEqual(obj, 1.2 * a)


if __name__ == "__main__":
    unittest.main()
