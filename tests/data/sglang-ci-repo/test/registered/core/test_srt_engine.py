import unittest

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=120, suite="stage-b-test-1-gpu-large")


class TestSRTEngine(unittest.TestCase):
    def test_generate(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
