#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""fn_cpu.py SAMPLE_INDEX FILE... - the value each function's stacks hold
(cumulative: seconds for cpu and wall, counts for samples), read by `go tool pprof -top`
(a reader nobody here wrote). Prints "FUNCTION SECONDS" lines."""
import subprocess
import sys

idx, files = sys.argv[1], sys.argv[2:]
unit = [] if idx == "samples" else ["-unit=ms"]
out = subprocess.run(["go", "tool", "pprof", "-top", "-cum", "-nodecount=100000",
                      "-sample_index=" + idx] + unit + files,
                     check=True, capture_output=True, text=True).stdout
started = False
for line in out.splitlines():
    f = line.split()
    if f[:1] == ["flat"]:
        started = True
        continue
    if not started or len(f) < 6:
        continue
    cum = f[3]
    try:  # durations in ms, counts as they are
        v = float(cum[:-2]) / 1000 if cum.endswith("ms") else float(cum)
    except ValueError:
        continue
    print(f[5], v)
