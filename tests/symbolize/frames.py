#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""frames.py PROFILE... - the frames of every location of pprof files, as
`go tool pprof -symbolize=none -raw` reads them
(pprof's own symbolization off: only what the file says), one line per location:

    BUILDID+0xFILEOFFSET<TAB>func file:line;inlined-caller file:line...

keyed by the module's build id and the address's offset in its file, so
that two runs of one build (at other load addresses) and a stripped copy
of it compare equal. Locations of mappings without a build id or without
a file path ([vdso]) are left out, and so are the locations without an
address the tree engine adds for CPU no sample stands for ([unsampled],
[uncounted]); a location without frames, or whose
only frame is the placeholder of stripped code (`module+0xSTART`, named
after the function's .eh_frame FDE), prints "-".
Sorted, duplicates removed (several windows name one address alike)."""
import os
import re
import subprocess
import sys

LOC = re.compile(r"^\s*(\d+): (0x[0-9a-f]+) M=(\d+) ?(.*)$")
MAP = re.compile(r"^(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S*) ?(\S*)")


def strip_s(frame):
    """A frame without pprof's " s=START" (the function's start line)."""
    return re.sub(r" s=\d+", "", frame.strip())


def frames(path):
    env = dict(os.environ)
    env.setdefault("GOCACHE", "/tmp/ember-gocache")
    raw = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-raw", path], capture_output=True,
                         text=True, env=env, check=True).stdout
    locs, maps, sec, cur = [], {}, None, None
    for line in raw.splitlines():
        if line.startswith("Locations"):
            sec = "L"
            continue
        if line.startswith("Mappings"):
            sec = "M"
            continue
        if sec == "L":
            m = LOC.match(line)
            if m:
                cur = [int(m.group(2), 16), m.group(3), []]
                locs.append(cur)
                if m.group(4).strip():
                    cur[2].append(strip_s(m.group(4)))
            elif cur is not None and line.strip():
                cur[2].append(strip_s(line))
        elif sec == "M":
            m = MAP.match(line)
            if m:
                maps[m.group(1)] = (int(m.group(2), 16), int(m.group(4), 16), m.group(5),
                                    m.group(6))
    out = set()
    for addr, mid, fr in locs:
        if mid not in maps:
            continue
        start, off, fname, bid = maps[mid]
        if not fname.startswith("/") or not re.fullmatch(r"[0-9a-f]+", bid or ""):
            continue
        if addr < start:  # no address: the tree engine's [unsampled], [uncounted]
            continue
        base = re.escape(os.path.basename(fname))
        if len(fr) == 1 and re.match(base + r"\+0x[0-9a-f]+\b", fr[0]):
            fr = []
        out.add("%s+0x%x\t%s" % (bid, addr - start + off, ";".join(fr) if fr else "-"))
    return out


def main():
    allf = set()
    for p in sys.argv[1:]:
        allf |= frames(p)
    for line in sorted(allf):
        print(line)


if __name__ == "__main__":
    main()
