# finding 4: a test may still stop its own retries: an infra-looking failure it reports as `code`.
import os
import sys

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])

if __name__ == "__main__":
    with open(os.environ["CI_POLICY_FAILURE_KIND_FILE"], "w", encoding="utf-8") as fh:
        fh.write("code")
    print("Server failed to start")
    sys.exit(1)
