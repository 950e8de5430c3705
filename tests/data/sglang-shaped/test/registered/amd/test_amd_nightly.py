import unittest

from sglang.test.ci.ci_register import register_amd_ci

register_amd_ci(est_time=900, suite="nightly-amd-1-gpu", nightly=True)


class TestCase(unittest.TestCase):
    def test_it(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
