"""finding 2: a test that times out with a PID hopper (re-fork + setsid every 2 ms) running."""

import os
import subprocess
import sys
import time

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])


def main():
    subprocess.Popen([sys.executable, "hostile/hopper.py", os.getcwd()])
    while not os.path.exists("pids/hopper"):
        time.sleep(0.01)
    print("hopper started", flush=True)
    time.sleep(60)


if __name__ == "__main__":
    main()
