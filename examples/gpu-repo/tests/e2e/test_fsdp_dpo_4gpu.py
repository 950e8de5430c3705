"""E2E: DPO with the FSDP backend on four H200 GPUs.

Simulated here: the DPO loss prefers the chosen response and the
parameters are sharded evenly across four ranks.
"""

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=600, suite="stage-c-4-gpu-h200", labels=["fsdp"])

import math
import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from minirl.backends.fsdp import FSDPConfig


def dpo_loss(pi_chosen, pi_rejected, ref_chosen, ref_rejected, beta=0.1):
    margin = beta * ((pi_chosen - ref_chosen) - (pi_rejected - ref_rejected))
    return math.log1p(math.exp(-margin))


class FSDPDPO4GPUTest(unittest.TestCase):
    def test_sharding(self):
        cfg = FSDPConfig(sharding_strategy="FULL_SHARD")
        self.assertEqual(cfg.shard_size(1001, 4), 251)
        self.assertEqual(FSDPConfig(sharding_strategy="NO_SHARD").shard_size(1001, 4), 1001)

    def test_dpo_loss(self):
        neutral = dpo_loss(-1.0, -1.0, -1.0, -1.0)
        self.assertAlmostEqual(neutral, math.log(2.0))
        self.assertLess(dpo_loss(-0.5, -2.0, -1.0, -1.0), neutral)
        self.assertGreater(dpo_loss(-2.0, -0.5, -1.0, -1.0), neutral)


if __name__ == "__main__":
    unittest.main()
