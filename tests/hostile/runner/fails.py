"""finding 9: a failing test, run while no record can be written."""

import sys

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])


def main():
    print("failing", flush=True)
    sys.exit(3)


if __name__ == "__main__":
    main()
