import unittest

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=900, suite="extra-a-test-1-gpu")

if __name__ == "__main__":
    unittest.main()
