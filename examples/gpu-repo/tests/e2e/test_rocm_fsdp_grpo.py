"""E2E: GRPO with the FSDP backend, on both CUDA (H200) and ROCm (MI350).

Simulated here: GRPO advantages plus a per-token KL penalty computed with
the k3 estimator.
"""

from ci_policy import register_cuda_ci, register_rocm_ci

register_cuda_ci(est_time=360, suite="stage-c-4-gpu-h200", labels=["fsdp"])
register_rocm_ci(est_time=480, suite="stage-c-4-gpu-mi350", labels=["fsdp", "rocm"])

import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from minirl.advantages import group_relative_advantages
from minirl.backends.fsdp import FSDPConfig
from minirl.kl import kl_k3, mean_kl


class FSDPGRPOMultiBackendTest(unittest.TestCase):
    def test_kl_penalised_rewards(self):
        rewards = [1.0, 0.0, 0.5, 0.25]
        logp = [-0.5, -1.0, -0.7, -0.2]
        ref_logp = [-0.6, -0.9, -0.7, -0.4]
        beta = 0.05
        penalised = [r - beta * k for r, k in zip(rewards, kl_k3(logp, ref_logp))]
        self.assertTrue(all(p <= r for p, r in zip(penalised, rewards)))
        adv = group_relative_advantages(penalised)
        self.assertAlmostEqual(sum(adv), 0.0, places=9)
        self.assertGreaterEqual(mean_kl(logp, ref_logp), 0.0)

    def test_hybrid_shard(self):
        self.assertEqual(FSDPConfig(sharding_strategy="HYBRID_SHARD").shard_size(10, 4), 3)


if __name__ == "__main__":
    unittest.main()
