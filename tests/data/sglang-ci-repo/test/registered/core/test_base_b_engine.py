import unittest

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=300, stage="base-b", runner_config="1-gpu-large")


class TestBaseB(unittest.TestCase):
    def test_serving(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
