"""finding 2: a passing test that leaves a PID hopper (re-fork + setsid every 2 ms) behind; it
notes its cgroup in pids/cgroup."""

import os
import subprocess
import sys
import time

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])


def main():
    # Where the runner put this attempt (its cgroup v2 path), for the test to check.
    with open("pids/cgroup", "w") as fh:
        fh.write(next(line for line in open("/proc/self/cgroup").read().splitlines() if line.startswith("0::")))
    subprocess.Popen([sys.executable, "hostile/hopper.py", os.getcwd()])
    while not os.path.exists("pids/hopper"):
        time.sleep(0.01)
    print("hopper started", flush=True)


if __name__ == "__main__":
    main()
