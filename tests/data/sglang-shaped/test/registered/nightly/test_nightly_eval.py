import unittest

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=1800, suite="nightly-1-gpu", nightly=True)


class TestCase(unittest.TestCase):
    def test_it(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
