# SPDX-License-Identifier: Apache-2.0
"""compileall_driver.py OUT DIR - `python3 -m compileall -q -j0 DIR` in this
process, noting the CPU of the pool's worker processes before the pool
shuts them down: "PID SECONDS" lines in OUT, each the worker's main
thread's CPU (/proc/PID/task/PID/stat: the program's own time, without
the threads an agent adds)."""
import compileall
import concurrent.futures.process as cfp
import os
import sys

out, target = sys.argv[1], sys.argv[2]
tick = os.sysconf("SC_CLK_TCK")
real_shutdown = cfp.ProcessPoolExecutor.shutdown


def shutdown(self, *args, **kwargs):
    with open(out, "a") as f:
        for pid in list((self._processes or {}).keys()):
            with open("/proc/%d/task/%d/stat" % (pid, pid)) as st:
                fields = st.read().rsplit(")", 1)[1].split()
            f.write("%d %.2f\n" % (pid, (int(fields[11]) + int(fields[12])) / tick))
    return real_shutdown(self, *args, **kwargs)


cfp.ProcessPoolExecutor.shutdown = shutdown
sys.argv = ["compileall", "-q", "-j0", target]
sys.exit(int(not compileall.main()))  # what `python3 -m compileall` does
