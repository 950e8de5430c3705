# finding 4: a PR's failing test reports its own failure as `infra` to buy retries.
import os
import sys

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])

if __name__ == "__main__":
    with open(os.environ["CI_POLICY_FAILURE_KIND_FILE"], "w", encoding="utf-8") as fh:
        fh.write("infra")
    print("attempt", os.environ["CI_POLICY_ATTEMPT"])
    sys.exit(1)
