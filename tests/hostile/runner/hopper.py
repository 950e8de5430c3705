"""finding 2: a PID hopper. Re-forks and calls setsid every 2 ms, so every pid it had is gone
by the time a killer that scans /proc signals it. Its argv carries the checkout's path, which
is how the test finds every generation in /proc."""

import os
import sys
import time

ready = os.path.join(sys.argv[1], "pids", "hopper")
first = True
while True:
    if os.fork():
        os._exit(0)
    os.setsid()
    if first:
        with open(ready + ".tmp", "w") as fh:
            fh.write(str(os.getpid()))
        os.replace(ready + ".tmp", ready)
        first = False
    time.sleep(0.002)
