"""E2E: GRPO training with the FSDP backend on one H200.

Simulated here: group-relative advantages for a batch of prompts and the
FSDP sharding layout on a single GPU.
"""

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=240, suite="stage-b-1-gpu-h200", labels=["fsdp"])

import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from minirl.advantages import group_relative_advantages
from minirl.backends.fsdp import FSDPConfig


class FSDPGRPOTest(unittest.TestCase):
    def test_group_advantages_zero_mean(self):
        groups = [[1.0, 0.0, 0.0, 1.0], [0.2, 0.4, 0.9, 0.1]]
        for rewards in groups:
            adv = group_relative_advantages(rewards)
            self.assertAlmostEqual(sum(adv), 0.0, places=9)
            best = max(range(len(rewards)), key=rewards.__getitem__)
            self.assertGreater(adv[best], 0.0)

    def test_single_gpu_shard_holds_all_params(self):
        self.assertEqual(FSDPConfig().shard_size(1000, 1), 1000)


if __name__ == "__main__":
    unittest.main()
