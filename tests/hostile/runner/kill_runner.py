"""finding 2: a test that SIGKILLs the runner, with a PID hopper and a sleeper left running."""

import os
import signal
import subprocess
import sys
import time

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])


def main():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", os.getcwd()])
    subprocess.Popen([sys.executable, "hostile/hopper.py", os.getcwd()])
    while not os.path.exists("pids/hopper"):
        time.sleep(0.01)
    print("killing the runner", flush=True)
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(60)


if __name__ == "__main__":
    main()
