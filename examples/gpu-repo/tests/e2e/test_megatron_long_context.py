"""E2E: long-context (128k) training with Megatron-LM context parallelism.

Takes about 40 minutes on four H200 GPUs, so it is labelled ``long``.
Simulated here: sequence chunks are split evenly across context-parallel
ranks.
"""

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=2400, suite="stage-c-4-gpu-h200", labels=["megatron", "long"])

import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from minirl.backends.megatron import MegatronConfig


def split_sequence(seq_len, cp):
    """Load-balanced context-parallel split: rank i gets chunks i and 2*cp-1-i."""
    chunk = seq_len // (2 * cp)
    return [(i, 2 * cp - 1 - i, 2 * chunk) for i in range(cp)]


class MegatronLongContextTest(unittest.TestCase):
    def test_context_parallel_layout(self):
        cfg = MegatronConfig(tensor_parallel=2, context_parallel=2)
        self.assertEqual(cfg.model_parallel_size, 4)
        self.assertEqual(cfg.data_parallel_size(4), 1)

    def test_split_covers_sequence(self):
        seq_len, cp = 131072, 2
        parts = split_sequence(seq_len, cp)
        chunks = sorted(c for a, b, _ in parts for c in (a, b))
        self.assertEqual(chunks, list(range(2 * cp)))
        self.assertEqual(sum(n for _, _, n in parts), seq_len)


if __name__ == "__main__":
    unittest.main()
