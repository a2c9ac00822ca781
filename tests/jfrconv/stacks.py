#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""stacks.py - folded stacks from a pprof file and from jfrconv's collapsed output.

Reads gzip'd or plain pprof (profile.proto) with a minimal protobuf decoder
(no dependency), so that our pprof and async-profiler's converter output can
be compared stack by stack.

  stacks.py pprof FILE [SAMPLE_TYPE]   prints "root;...;leaf VALUE" per stack
  stacks.py types FILE                 prints the sample types
  stacks.py same WHAT A B              A and B ("root;...;leaf VALUE" lines)
                                       hold the same stacks with the same
                                       values: exit 0, else 1 with the first
                                       differences
  stacks.py near WHAT A B N C          the same stacks, and every value of A
                                       within C of B's divided by N, where
                                       C holds per stack the number of
                                       events (rounding: each event's value
                                       is rounded, and at least 1); a
                                       stack of B may be missing from A
                                       when it weighs less than that
  stacks.py keys WHAT A B              the same stacks, values aside
  stacks.py html FILE                  async-profiler's HTML flame graph:
                                       "TOTAL" then every frame name, one
                                       a line (its name table unpacked)
"""
import gzip
import sys


def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def fields(b):
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        f, w = k >> 3, k & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
        elif w == 1:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif w == 5:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise ValueError("wire type %d" % w)
        yield f, w, v


def packed(w, v):
    if w == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def load(path):
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    p = {"types": [], "samples": [], "maps": {}, "locs": {}, "funcs": {}, "strs": []}
    for f, w, v in fields(data):
        if f == 1:
            t = {g: x for g, _, x in fields(v)}
            p["types"].append((t.get(1, 0), t.get(2, 0)))
        elif f == 2:
            locs, vals = [], []
            for g, ww, x in fields(v):
                if g == 1:
                    locs += packed(ww, x)
                elif g == 2:
                    vals += packed(ww, x)
            p["samples"].append((locs, vals))
        elif f == 3:
            m = {g: x for g, _, x in fields(v)}
            p["maps"][m.get(1, 0)] = m
        elif f == 4:
            loc = {"lines": []}
            for g, _, x in fields(v):
                if g == 4:
                    ln = {h: y for h, _, y in fields(x)}
                    loc["lines"].append(ln.get(1, 0))
                else:
                    loc[g] = x
            p["locs"][loc.get(1, 0)] = loc
        elif f == 5:
            fn = {g: x for g, _, x in fields(v)}
            p["funcs"][fn.get(1, 0)] = fn.get(2, 0)
        elif f == 6:
            p["strs"].append(v.decode("utf-8", "replace"))
    return p


def frame_names(p, loc_id):
    """Leaf-first names of one location: its (inlined) functions, or, as
    emberprof's JFR writer names an unsymbolized frame, 0x<file offset>;
    so is a line whose function is only the symbolizer's stand-in for a
    function of a stripped module, "<file name>+0x<start>" (the writer's
    start_placeholder, src/encode/jfr.c)."""
    loc = p["locs"][loc_id]
    a = loc.get(3, 0)
    m = p["maps"].get(loc.get(2, 0))
    path = p["strs"][m.get(5, 0)] if m else ""
    base = path.rsplit("/", 1)[-1] if path.startswith("/") else ""
    if m and a >= m.get(2, 0):
        a = a - m.get(2, 0) + m.get(4, 0)
    addr = "0x%x" % a
    if not loc["lines"]:
        return [addr]
    names = [p["strs"][p["funcs"][fid]] for fid in loc["lines"]]
    return [addr if not n or (base and n.startswith(base + "+0x") and len(n) > len(base) + 3
                              and all(c in "0123456789abcdef" for c in n[len(base) + 3:]))
            else n for n in names]


def folded(path, type_name=None):
    p = load(path)
    idx = 0
    if type_name is not None:
        names = [p["strs"][t] for t, _ in p["types"]]
        idx = names.index(type_name)
    out = {}
    for locs, vals in p["samples"]:
        names = []
        for l in locs:
            names += frame_names(p, l)
        key = ";".join(reversed(names))
        out[key] = out.get(key, 0) + vals[idx]
    return out


def read_folded(path):
    out = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if not line:
            continue
        k, _, v = line.rpartition(" ")
        out[k] = out.get(k, 0) + int(v)
    return out


def same(what, a, b):
    x, y = read_folded(a), read_folded(b)
    diff = [k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
    print("%s: %d stacks, total %d vs %d stacks, total %d; %d differ" % (
        what, len(x), sum(x.values()), len(y), sum(y.values()), len(diff)))
    for k in diff[:10]:
        print("  %s: %s vs %s" % (k, x.get(k), y.get(k)))
    return 1 if diff or not x else 0


def near(what, a, b, n, c):
    x, y, z = read_folded(a), read_folded(b), read_folded(c)
    # JFR counts whole samples: each event's weight plus its thread's
    # carry, rounded, the rest carried to the thread's next event (jfr.c).
    # So a stack's count may be off by up to one per event, and a stack
    # whose events each weigh less than one interval may round to none.
    bad = [k for k in sorted(set(x) | set(y))
           if k not in y
           or (k not in x and y[k] / n >= max(1, z.get(k, 0)))
           or (k in x and abs(x[k] - y[k] / n) > max(1, z.get(k, 0)))]
    print("%s: %d stacks, total %d vs %d stacks, total %.1f; %d differ" % (
        what, len(x), sum(x.values()), len(y), sum(y.values()) / n, len(bad)))
    for k in bad[:10]:
        print("  %s: %s vs %s" % (k, x.get(k), y.get(k, 0) / n))
    return 1 if bad or not x else 0


def keys(what, a, b):
    x, y = read_folded(a), read_folded(b)
    bad = sorted(set(x) ^ set(y))
    print("%s: %d stacks vs %d stacks; %d in one only" % (what, len(x), len(y), len(bad)))
    for k in bad[:10]:
        print("  %s: %s vs %s" % (k, x.get(k), y.get(k)))
    return 1 if bad or not x else 0


def html(path):
    """The root's width and the names in the `const cpool = [...]` table,
    each entry the previous one's first (code of its first char - 32)
    characters followed by its rest (the page's own unpack())."""
    import ast
    import re
    text = open(path, encoding="utf-8").read()
    m = re.search(r"const cpool = (\[.*?\]);", text, re.S)
    names = ast.literal_eval(m.group(1)) if m else []
    for i in range(1, len(names)):
        names[i] = names[i - 1][:ord(names[i][0]) - 32] + names[i][1:]
    root = re.search(r"unpack\(cpool\);\s*n\(\d+,(\d+)\)", text)
    print(root.group(1) if root else -1)
    for n in names:
        print(n)


def main():
    if sys.argv[1] == "html":
        return html(sys.argv[2])
    if sys.argv[1] == "near":
        sys.exit(near(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), sys.argv[6]))
    if sys.argv[1] == "keys":
        sys.exit(keys(sys.argv[2], sys.argv[3], sys.argv[4]))
    if sys.argv[1] == "same":
        sys.exit(same(sys.argv[2], sys.argv[3], sys.argv[4]))
    if sys.argv[1] == "types":
        p = load(sys.argv[2])
        print(" ".join("%s/%s" % (p["strs"][t], p["strs"][u]) for t, u in p["types"]))
    else:
        for k, v in sorted(folded(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None).items()):
            print("%s %d" % (k, v))


if __name__ == "__main__":
    main()
