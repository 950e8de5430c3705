"""E2E: supervised fine-tuning with the Megatron-LM backend on one H200.

Simulated here: checks that the SFT loss on a toy batch decreases under a
few steps of gradient descent with a Megatron single-GPU layout.
"""

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=300, suite="stage-b-1-gpu-h200", labels=["megatron"])

import math
import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from minirl.backends.megatron import MegatronConfig


def nll(weight, data):
    """Mean negative log-likelihood of a 1-parameter logistic model."""
    total = 0.0
    for x, y in data:
        p = 1.0 / (1.0 + math.exp(-weight * x))
        total -= math.log(p if y else 1.0 - p)
    return total / len(data)


class MegatronSFTTest(unittest.TestCase):
    def test_single_gpu_layout(self):
        cfg = MegatronConfig()
        self.assertEqual(cfg.model_parallel_size, 1)
        self.assertEqual(cfg.data_parallel_size(1), 1)

    def test_loss_decreases(self):
        data = [(1.0, 1), (2.0, 1), (-1.0, 0), (-0.5, 0)]
        w, lr, h = 0.0, 0.5, 1e-5
        start = nll(w, data)
        for _ in range(20):
            grad = (nll(w + h, data) - nll(w - h, data)) / (2 * h)
            w -= lr * grad
        self.assertLess(nll(w, data), start)


if __name__ == "__main__":
    unittest.main()
