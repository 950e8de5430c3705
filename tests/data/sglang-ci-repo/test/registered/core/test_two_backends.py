import unittest

from sglang.test.ci.ci_register import register_amd_ci, register_cuda_ci

register_cuda_ci(est_time=180, suite="stage-b-test-1-gpu-large")
register_amd_ci(est_time=240, suite="stage-b-test-1-gpu-small-amd")


class TestTwoBackends(unittest.TestCase):
    def test_decode(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
