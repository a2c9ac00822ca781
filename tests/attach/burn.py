# SPDX-License-Identifier: Apache-2.0
"""burn.py STATE - a Python program `emberprof attach` attaches to (a real
interpreter nobody here wrote). It forks a child, and both wait for a line
on stdin; "go" makes each burn 1.5 s of its own CPU time (time.process_time,
never a wall clock), write it to STATE.<pid> and exit; the parent waits for
its child first. "ready" in STATE once both wait.
"""
import os
import sys
import time


def burn(seconds):
    t0 = time.process_time()
    x = 0
    while time.process_time() - t0 < seconds:
        for i in range(10000):
            x += i * i
    return time.process_time() - t0


state = sys.argv[1]
r, w = os.pipe()
child = os.fork()
if child == 0:
    os.close(w)
    os.read(r, 1)  # the parent's go
    spent = burn(1.5)
    with open("%s.%d" % (state, os.getpid()), "w") as f:
        f.write("%f\n" % spent)
    os._exit(0)
os.close(r)
with open(state + ".tmp", "w") as f:
    f.write("ready %d %d\n" % (os.getpid(), child))
os.rename(state + ".tmp", state)
line = sys.stdin.readline()
os.write(w, b"g")
spent = burn(1.5)
with open("%s.%d" % (state, os.getpid()), "w") as f:
    f.write("%f\n" % spent)
_, status = os.waitpid(child, 0)
sys.exit(0 if status == 0 else 1)
