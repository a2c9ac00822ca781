#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""cpu_by_pid.py DIR [LEAF] - the CPU time in the pprof files of DIR, per pid.

Each file is read by `go tool pprof -raw` (a reader nobody here wrote);
the sum of its cpu/nanoseconds sample values goes to the pid in its name
(APP-TIME-PID-SEQ[.kind].pb.gz, docs/CONFIG.md), or, for a sample labelled
with a pid (the tree engine's profiles, and the profile the short-lived
processes of a window share), to that pid. Prints "PID SECONDS" lines,
sorted by pid. Wall-clock and memory profiles are left out. With LEAF, only
the samples whose leaf frame is the function LEAF count (to the
microsecond).
"""
import os
import re
import subprocess
import sys

d = sys.argv[1]
leaf = sys.argv[2] if len(sys.argv) > 2 else None
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
    pid = int(m.group(1))
    names = {}  # location id -> its first (innermost) function
    if leaf is not None:
        at = lines.index("Locations") + 1 if "Locations" in lines else len(lines)
        for line in lines[at:]:
            lm = re.match(r"^\s+(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(.*?) \S*:\d+ s=\d+$", line)
            if lm:
                names[lm.group(1)] = lm.group(2)
            elif not line.startswith(" "):
                break
    last = None  # (pid, ns) of the sample whose labels may follow
    for line in lines[head + 1:]:
        if not line.startswith(" "):
            break
        if re.match(r"^\s+[A-Za-z_][\w.]*:\[", line):
            # a sample's labels: its pid, when labelled, takes its time
            lm = re.search(r"\bpid:\[(\d+)\]", line)
            if lm and last:
                total[last[0]] -= last[1]
                p = int(lm.group(1))
                total[p] = total.get(p, 0) + last[1]
                last = None
            continue
        vals = line.split(":")[0].split()
        ns = int(vals[col])
        if leaf is not None:
            locs = line.split(":", 1)[1].split()
            if not locs or names.get(locs[0]) != leaf:
                last = None
                continue
        total[pid] = total.get(pid, 0) + ns
        last = (pid, ns)
for pid in sorted(total):
    print(pid, ("%.6f" if leaf else "%.3f") % (total[pid] / 1e9))
