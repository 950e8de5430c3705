import unittest

from sglang.test.ci.ci_register import register_amd_ci

register_amd_ci(est_time=600, suite="stage-b-test-1-gpu-small-amd", nightly=True)


class TestAMDNightly(unittest.TestCase):
    def test_mla(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
