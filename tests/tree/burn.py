# SPDX-License-Identifier: Apache-2.0
"""burn.py SECS OUT - burns SECS of this thread's CPU in Python, then appends
"PID CPU_SECONDS" (getrusage(RUSAGE_THREAD): the interpreter's own time,
start-up included, without the agent's threads) to OUT."""
import os
import resource
import sys
import time


def tree_burn(secs):
    t0 = time.thread_time()
    x = 0
    while time.thread_time() - t0 < secs:
        for i in range(10000):
            x += i * i
    return x


tree_burn(float(sys.argv[1]))
ru = resource.getrusage(resource.RUSAGE_THREAD)
with open(sys.argv[2], "a") as f:
    f.write("%d %.3f\n" % (os.getpid(), ru.ru_utime + ru.ru_stime))
