import unittest

from sglang.test.ci.ci_register import register_amd_ci, register_cuda_ci, register_npu_ci

register_cuda_ci(est_time=150, stage="base-b", runner_config="1-gpu-large")
register_amd_ci(est_time=600, suite="stage-b-test-1-gpu-small-amd", nightly=True)
register_npu_ci(est_time=400, suite="nightly-1-npu-a3", nightly=True)


class TestThreeBackends(unittest.TestCase):
    def test_prefill(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
