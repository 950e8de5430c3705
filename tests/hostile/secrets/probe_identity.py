# finding 7: a PR's test, started by a runner that runs as root, looks for the runner's secrets
# where a process of the machine could: the runner's environment block and memory, and the
# --store-file. It imports nothing of ci_policy (it runs as another user, with the system's
# interpreter): the marker below is read by ci-policy as text, never run for its effect.
import json
import os


def register_cuda_ci(**kwargs):
    return None


register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])

STORE_FILE = "@STORE_FILE@"


def attempt(path):
    try:
        with open(path, "rb") as fh:
            return fh.read(4096).decode("utf-8", "replace")
    except OSError as exc:
        return f"unreadable: {exc.strerror}"


if __name__ == "__main__":
    runner = os.getppid()
    print("PROBE " + json.dumps({
        "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
        "home": os.environ.get("HOME"), "user": os.environ.get("USER"),
        "environ": attempt(f"/proc/{runner}/environ"), "mem": attempt(f"/proc/{runner}/mem"),
        "store_file": attempt(STORE_FILE),
    }, sort_keys=True))
