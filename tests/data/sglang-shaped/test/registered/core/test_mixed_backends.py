import unittest

from sglang.test.ci.ci_register import register_amd_ci, register_cuda_ci

register_cuda_ci(est_time=200, suite="base-b-test-2-gpu-large")
register_amd_ci(est_time=240, suite="stage-b-test-small-1-gpu-amd")


class TestCase(unittest.TestCase):
    def test_it(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
