import unittest

from sglang.test.ci.ci_register import register_amd_ci, register_cuda_ci

# nightly must be True or False: this registration is invalid, the AMD one below is not.
register_cuda_ci(est_time=60, suite="stage-b-test-small-1-gpu", nightly="yes")  # ci-policy: ignore[CP229]
register_amd_ci(est_time=180, suite="stage-b-test-small-1-gpu-amd")


class TestCase(unittest.TestCase):
    def test_it(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
