"""finding 2: a test that survives SIGTERM (it only notes it) while a PID hopper runs; the runner
gets a second SIGTERM or SIGINT during its kill grace."""

import os
import signal
import subprocess
import sys
import time

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])


def noted(signum, frame):
    # The runner signals the attempt's processes and then their group, so a second SIGTERM can
    # arrive while this handler runs: each call writes its own temporary file.
    temporary = f"pids/term.{time.monotonic_ns()}.tmp"
    with open(temporary, "w") as fh:
        fh.write(str(signum))
    os.replace(temporary, "pids/term")


def main():
    signal.signal(signal.SIGTERM, noted)
    subprocess.Popen([sys.executable, "hostile/hopper.py", os.getcwd()])
    while not os.path.exists("pids/hopper"):
        time.sleep(0.01)
    print("ready", flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main()
