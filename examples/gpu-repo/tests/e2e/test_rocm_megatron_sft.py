"""E2E: Megatron-LM SFT on four AMD MI350 GPUs (ROCm).

Simulated here: the tensor/pipeline layout and a loss-masking check that
only assistant tokens contribute to the SFT loss.
"""

from ci_policy import register_rocm_ci

register_rocm_ci(est_time=540, suite="stage-c-4-gpu-mi350", labels=["megatron", "rocm"])

import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from minirl.backends.megatron import MegatronConfig


def masked_mean(values, mask):
    kept = [v for v, m in zip(values, mask) if m]
    return sum(kept) / len(kept)


class ROCmMegatronSFTTest(unittest.TestCase):
    def test_layout(self):
        cfg = MegatronConfig(tensor_parallel=2, pipeline_parallel=2)
        self.assertEqual(cfg.data_parallel_size(4), 1)

    def test_loss_mask(self):
        token_losses = [9.0, 9.0, 1.0, 2.0, 3.0]
        mask = [0, 0, 1, 1, 1]  # prompt tokens are masked out
        self.assertAlmostEqual(masked_mean(token_losses, mask), 2.0)


if __name__ == "__main__":
    unittest.main()
