"""finding 9: a passing test, run while no record can be written."""

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])


def main():
    print("ok", flush=True)


if __name__ == "__main__":
    main()
