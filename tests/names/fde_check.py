# SPDX-License-Identifier: Apache-2.0
"""fde_check.py - checks the names of a stripped module's functions in
profiles against its FDEs, as test_fde.sh asks.

    fde_check.py MODULE_PATH FRAMES RAW...

FRAMES is `readelf --debug-dump=frames MODULE_PATH`; each RAW is
`go tool pprof -raw` of one profile. The FDE ranges are read from readelf,
independently of emberprof's own reader (src/symbols/fdetab.c). For each
location in MODULE_PATH's mapping, its address is turned into the file's
ELF virtual address (through the mapping's start and file offset and the
file's program headers, from `readelf -lW`), and it is checked that:
  - it has a function name: one .dynsym defines, else of the form
    BASENAME+0xSTART; in a PLT section, a stub's "foo@plt" or, for the
    lazy-binding header and unknown entries, the section's own name
    (src/symbols/pltsyms.h); PLT names are not counted per FDE, since one
    FDE covers a whole PLT section;
  - START is the start of the FDE covering the address (or, where no FDE
    covers it, the end of the FDE below it); an address below every FDE
    (.init's _init) has no name at all;
  - the nearest start wins (src/symbols/symbolizer.h): a placeholder
    is given only where no .dynsym function starts between its FDE's
    start and the address;
  - no two names lie inside one FDE but where a .dynsym function starts
    inside it (its code is then that function's), and there are no more
    names than FDEs touched and such functions.
Prints one "ok"/"FAIL" line per check and a summary; exits 1 on a failure.
"""
import os
import re
import subprocess
import sys


def fdes(frames_text):
    out = []
    for m in re.finditer(r"FDE cie=\w+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", frames_text):
        lo, hi = int(m.group(1), 16), int(m.group(2), 16)
        if hi > lo:
            out.append((lo, hi))
    return sorted(set(out))


def loads(path):
    text = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True,
                          check=True).stdout
    segs = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0] == "LOAD":
            segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))  # offset, vaddr, filesz
    return segs


def dynsyms(path):
    """The functions .dynsym defines (the only symbols a stripped file
    keeps): name -> the set of their start addresses."""
    text = subprocess.run(["readelf", "--dyn-syms", "-W", path], capture_output=True,
                          text=True, check=True).stdout
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND":
            out.setdefault(f[7].split("@")[0], set()).add(int(f[1], 16))
    return out


def vaddr_of(segs, off):
    for o, v, sz in segs:
        if o <= off < o + sz:
            return off - o + v
    return None


def parse_raw(text, path):
    maps = {}
    sect = None
    locs = []
    for line in text.splitlines():
        if line in ("Locations", "Mappings"):
            sect = line
            continue
        if sect == "Mappings":
            m = re.match(r"(\d+): 0x([0-9a-f]+)/0x([0-9a-f]+)/0x([0-9a-f]+) (\S+)", line)
            if m and m.group(5) == path:
                maps[m.group(1)] = (int(m.group(2), 16), int(m.group(4), 16))
        elif sect == "Locations":
            m = re.match(r"\s*\d+: 0x([0-9a-f]+) M=(\d+) ?(.*)$", line)
            if m:
                name = re.sub(r" \S*:\d+ s=\d+$", "", m.group(3)).strip()
                locs.append((int(m.group(1), 16), m.group(2), name))
    # A location at address 0 is no code: the frames the agents add for
    # CPU time no sample stands for ("[before sampling]", the tree
    # engine's "[unsampled]", and the program's name as their root) sit
    # in the program's mapping at no address.
    return [(a, maps[mid], n) for a, mid, n in locs if mid in maps and a != 0]


def plt_sections(path):
    """The PLT sections: (name, lo, hi) in file virtual addresses."""
    text = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True,
                          check=True).stdout
    out = []
    for m in re.finditer(r"\]\s+(\.plt(?:\.sec|\.got|\.bnd)?)\s+\w+\s+([0-9a-f]+)\s+[0-9a-f]+"
                         r"\s+([0-9a-f]+)", text):
        lo = int(m.group(2), 16)
        out.append((m.group(1), lo, lo + int(m.group(3), 16)))
    return out


def main():
    path, frames = sys.argv[1], sys.argv[2]
    base = os.path.basename(os.path.realpath(path))
    table = fdes(open(frames).read())
    segs = loads(path)
    exported = dynsyms(path)
    plts = plt_sections(path)
    starts = sorted(a for addrs in exported.values() for a in addrs)
    failures = 0
    names = {}      # name -> the FDE indexes of its addresses
    touched = set()
    nlocs = 0
    unnamed = 0
    pat = re.compile(re.escape(base) + r"\+0x([0-9a-f]+)$")
    for raw in sys.argv[3:]:
        for addr, (start, off), name in parse_raw(open(raw).read(), os.path.realpath(path)):
            nlocs += 1
            va = vaddr_of(segs, addr - start + off)
            cover = [i for i, (lo, hi) in enumerate(table) if va is not None and lo <= va < hi]
            m = pat.match(name)
            plt = [s for s, lo, hi in plts if va is not None and lo <= va < hi]
            if plt and (name.endswith("@plt") or name == plt[0]):
                for i in cover:
                    touched.add(i)
                continue
            if not m and name == "" and va is not None and not any(lo <= va for lo, hi in table):
                # below every FDE (.init's _init): left unnamed, as
                # src/symbols/fdetab.h says (nothing to group it with)
                unnamed += 1
                continue
            if not m and name in exported:
                # named from .dynsym: one name per FDE still
                for i in cover:
                    touched.add(i)
                    names.setdefault(name, set()).add(i)
                continue
            if not m:
                print(f"FAIL: 0x{addr:x} (vaddr {va and hex(va)}) is named {name!r}, "
                      f"not {base}+0xSTART")
                failures += 1
                continue
            fstart = int(m.group(1), 16)
            closer = [a for a in starts if va is not None and fstart <= a <= va]
            if closer:
                print(f"FAIL: vaddr 0x{va:x} is named {name} but a .dynsym function starts "
                      f"closer, at 0x{closer[-1]:x}")
                failures += 1
            if cover:
                i = cover[-1]
                touched.add(i)
                if table[i][0] != fstart:
                    print(f"FAIL: vaddr 0x{va:x} is named {name} but its FDE starts at "
                          f"0x{table[i][0]:x}")
                    failures += 1
                names.setdefault(name, set()).add(i)
            else:
                below = [hi for lo, hi in table if hi <= va]
                want = max(below) if below else None
                if want != fstart:
                    print(f"FAIL: vaddr 0x{va:x}, in no FDE, is named {name}, expected "
                          f"{base}+0x{want or 0:x}")
                    failures += 1
    # no two names inside one FDE, but for .dynsym functions starting inside it
    by_fde = {}
    for name, idx in names.items():
        for i in idx:
            by_fde.setdefault(i, set()).add(name)
    splits = 0
    for i, ns in by_fde.items():
        lo, hi = table[i]
        inside = {n for n in ns if any(lo < a < hi for a in exported.get(n, ()))}
        splits += len(inside)
        if len(ns - inside) > 1:
            print(f"FAIL: FDE 0x{lo:x}..0x{hi:x} has {len(ns)} names: {sorted(ns)}")
            failures += 1
    distinct = set(names)
    if len(distinct) > len(touched) + splits:
        print(f"FAIL: {len(distinct)} functions for {len(touched)} FDEs touched "
              f"(and {splits} .dynsym functions inside them)")
        failures += 1
    print(f"{base}: {nlocs} locations, {len(distinct)} functions, {len(touched)} FDEs "
          f"touched of {len(table)}" + (f", {unnamed} below every FDE (unnamed)" if unnamed else ""))
    if nlocs == 0:
        print(f"FAIL: no location in {path}")
        failures += 1
    sys.exit(1 if failures else 0)


main()
