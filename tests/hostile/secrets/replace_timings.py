# finding 4: a PR's test replaces the whole timing file (a rename over it) with forged records.
import json
import os

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])

if __name__ == "__main__":
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as fh:
        argv = fh.read().decode().split("\0")
    path = argv[argv.index("--timings-out") + 1]
    forged = {"schema": 1, "file": "tests/gpu/test_slow.py", "stage": "gpu", "shard": 0, "attempt": 1,
              "status": "pass", "elapsed": 0.001}
    with open(path + ".new", "w", encoding="utf-8") as fh:
        fh.write(json.dumps(forged) + "\n")
    os.replace(path + ".new", path)
    print("REPLACED")
