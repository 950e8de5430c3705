"""finding 2: a test that dies of a signal is reported with the signal's name."""

import os
import signal

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])


def main():
    print("about to die", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main()
