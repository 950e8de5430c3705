"""E2E: Megatron-LM weak-scaling run on an external 8-GPU GB200 cluster.

Simulated here: data-parallel degree and global batch size across the
supported world sizes.
"""

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=3000, suite="stage-d-8-gpu-gb200", labels=["megatron"])

import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from minirl.backends.megatron import MegatronConfig


class GB200ScalingTest(unittest.TestCase):
    def test_weak_scaling_global_batch(self):
        cfg = MegatronConfig(tensor_parallel=2, micro_batch_size=4)
        batches = [cfg.data_parallel_size(n) * cfg.micro_batch_size for n in (2, 4, 8)]
        self.assertEqual(batches, [4, 8, 16])


if __name__ == "__main__":
    unittest.main()
