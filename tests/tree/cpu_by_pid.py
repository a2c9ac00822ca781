#!/usr/bin/env python3
"""cpu_by_pid.py DIR - the CPU time in the pprof files of DIR, per pid.

Each file is read by `go tool pprof -raw` (a reader nobody here wrote);
the sum of its cpu/nanoseconds sample values goes to the pid in its name
(APP-TIME-PID-SEQ[.kind].pb.gz, docs/CONFIG.md). Prints "PID SECONDS"
lines, sorted by pid. Wall-clock and memory profiles are left out.
"""
import os
import re
import subprocess
import sys

d = sys.argv[1]
total = {}
for name in sorted(os.listdir(d)):
    m = re.match(r".*-(\d+)-\d+\.pb\.gz$", name)
    if not m:
        continue
    raw = subprocess.run(["go", "tool", "pprof", "-raw", os.path.join(d, name)], check=True,
                         capture_output=True, text=True).stdout
    lines = raw.splitlines()
    try:
        head = lines.index("Samples:") + 1
    except ValueError:
        continue
    types = lines[head].split()
    if "cpu/nanoseconds[dflt]" in types:
        col = types.index("cpu/nanoseconds[dflt]")
    elif "cpu/nanoseconds" in types:
        col = types.index("cpu/nanoseconds")
    else:
        continue
    ns = 0
    for line in lines[head + 1:]:
        if not line.startswith(" "):
            break
        vals = line.split(":")[0].split()
        ns += int(vals[col])
    pid = int(m.group(1))
    total[pid] = total.get(pid, 0) + ns
for pid in sorted(total):
    print(pid, "%.3f" % (total[pid] / 1e9))
