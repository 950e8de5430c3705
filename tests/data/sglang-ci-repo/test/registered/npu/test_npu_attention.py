import unittest

from sglang.test.ci.ci_register import register_npu_ci

register_npu_ci(est_time=400, suite="nightly-1-npu-a3", nightly=True)


class TestNPUAttention(unittest.TestCase):
    def test_ascend_backend(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
