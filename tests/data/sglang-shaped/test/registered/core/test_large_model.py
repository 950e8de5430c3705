import unittest

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=300, stage="base-b", runner_config="2-gpu-large")


class TestCase(unittest.TestCase):
    def test_it(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
