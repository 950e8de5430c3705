"""finding 2: a PID hopper. Re-forks and calls setsid every 2 ms, so every pid it had is gone
by the time a killer that scans /proc signals it. Its argv carries the checkout's path, which
is how the test finds every generation in /proc. Every 25th generation writes how many there
were (each inherits the count) to pids/hops."""

import os
import sys
import time

ready = os.path.join(sys.argv[1], "pids", "hopper")
hops = 0
while True:
    if os.fork():
        os._exit(0)
    os.setsid()
    hops += 1
    if hops % 25 == 1:
        name = ready if hops == 1 else os.path.join(sys.argv[1], "pids", "hops")
        with open(name + ".tmp", "w") as fh:
            fh.write(str(os.getpid() if hops == 1 else hops))
        os.replace(name + ".tmp", name)
    time.sleep(0.002)
