import unittest

from sglang.test.ci.ci_register import register_xpu_ci

register_xpu_ci(est_time=200, suite="per-commit-xpu")


class TestCase(unittest.TestCase):
    def test_it(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
