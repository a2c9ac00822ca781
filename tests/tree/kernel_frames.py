#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kernel_frames.py DIR [--order] - the kernel frames of the samples in `read`.

Reads every pprof file of DIR with `go tool pprof -raw` and, for the
samples whose stack holds libc's read (by sample count), prints
"IN_READ WITH_NAMED WITH_ONE_UNNAMED MAX_UNNAMED": how many samples are in
read, how many carry at least one named frame in the [kernel.kallsyms]
mapping, how many carry exactly one frame and it is `[kernel]`, and the
most `[kernel]` frames one sample carries. With --order, a fifth number:
how many of the samples in read have a kernel frame on the caller side of
read (kernel frames belong below it, leaf first).
"""
import os
import re
import subprocess
import sys

READ = {"read", "__libc_read", "__GI___libc_read", "__read", "__read_nocancel"}
in_read = named = one_unnamed = max_unnamed = misplaced = 0
d = sys.argv[1]
order = "--order" in sys.argv[2:]
for f in sorted(os.listdir(d)):
    if not f.endswith(".pb.gz"):
        continue
    raw = subprocess.run(["go", "tool", "pprof", "-raw", os.path.join(d, f)], check=True,
                         capture_output=True, text=True).stdout
    lines = raw.splitlines()
    kmaps = set()
    for line in lines[lines.index("Mappings") + 1:] if "Mappings" in lines else []:
        m = re.match(r"^(\d+): \S+ (\S+)", line)
        if m and m.group(2) == "[kernel.kallsyms]":
            kmaps.add(m.group(1))
    locs, cur = {}, None
    for line in lines[lines.index("Locations") + 1:lines.index("Mappings")]:
        m = re.match(r"^\s+(\d+): 0x[0-9a-f]+ M=(\d+) ?(\S*)", line)
        if m:
            cur = m.group(1)
            locs[cur] = (m.group(2), [m.group(3)] if m.group(3) else [])
        elif cur and line.strip():
            locs[cur][1].append(line.split()[0])  # an inlined function
    head = lines.index("Samples:") + 1
    for line in lines[head + 1:]:
        if not line.startswith(" "):
            break
        m = re.match(r"^\s+(\d+)\s+\d+: ([\d ]+)$", line.rstrip())
        if not m:
            continue
        n = int(m.group(1))
        ids = m.group(2).split()
        funcs = [fn for i in ids for fn in locs.get(i, ("", []))[1]]
        if not READ.intersection(funcs):
            continue
        in_read += n
        kern = [fn for i in ids if locs.get(i, ("", []))[0] in kmaps for fn in locs[i][1]]
        unnamed = kern.count("[kernel]")
        if any(fn != "[kernel]" for fn in kern):
            named += n
        if kern == ["[kernel]"]:
            one_unnamed += n
        max_unnamed = max(max_unnamed, unnamed)
        # leaf first: the last kernel frame before the first frame in read
        first_read = min(k for k, i in enumerate(ids) if READ.intersection(locs.get(i, ("", []))[1]))
        if any(locs.get(i, ("", []))[0] in kmaps for i in ids[first_read:]):
            misplaced += n
print(in_read, named, one_unnamed, max_unnamed, *([misplaced] if order else []))
