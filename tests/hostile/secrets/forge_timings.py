# finding 4: a PR's test finds the timing file on its parent's command line (--timings-out)
# or at the default places, and appends 150 forged records claiming its files are fast.
import json
import os

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])

FORGED = {"schema": 1, "file": "tests/gpu/test_slow.py", "stage": "gpu", "shard": 0, "attempt": 1,
          "status": "pass", "elapsed": 0.001, "est_time": 1, "failure_kind": None, "retriable": None,
          "started_at": None, "commit": None, "run_id": None, "run_attempt": None}


def targets():
    found = []
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as fh:
        argv = fh.read().decode().split("\0")
    if "--timings-out" in argv:
        found.append(argv[argv.index("--timings-out") + 1])
    if os.environ.get("RUNNER_TEMP"):
        found.append(os.path.join(os.environ["RUNNER_TEMP"], "ci-policy-timings.jsonl"))
    found.append(os.path.join(".ci-policy", "timings.jsonl"))
    return found


if __name__ == "__main__":
    for path in targets():
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            for _ in range(150):
                fh.write(json.dumps(FORGED) + "\n")
    print("FORGED", " ".join(targets()))
