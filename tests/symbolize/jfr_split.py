#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""jfr_split.py IN.jfr OUT.jfr - rewrites a one-chunk recording of
emberprof's JFR writer (one checkpoint, pools FrameType, ThreadState,
Thread, StackTrace, Method, Class, Symbol in that order) into the shape
other writers (the JDK) use: two checkpoints, chained by their delta.

    header | metadata | CP1 | the other events | CP2

CP1 = FrameType, ThreadState, Thread, StackTrace, Symbol (delta 0), right
after the metadata, so that the events after it move when it changes;
CP2 = Method, Class, with the delta back to CP1, the one the header points
at. So `emberprof symbolize` must rewrite stack traces in a checkpoint that
is not the last, recompute CP2's delta and the header's offsets, append to
CP2's Method pool and add a Symbol pool to it. The JDK's `jfr` reads the
result as it reads the input (the tests check that first)."""
import sys


def var(data, i):
    v = 0
    for k in range(8):
        b = data[i]
        i += 1
        v |= (b & 0x7F) << (7 * k)
        if not b & 0x80:
            return v, i
    return v | data[i] << 56, i + 1


def put_var(v):
    v &= (1 << 64) - 1
    out = bytearray()
    for _ in range(8):
        if v <= 0x7F:
            out.append(v)
            return bytes(out)
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v & 0xFF)
    return bytes(out)


def string(data, i):
    enc = data[i]
    i += 1
    if enc in (0, 1):
        return i
    if enc == 3:
        n, i = var(data, i)
        return i + n
    raise SystemExit("jfr_split: string encoding %d not written by emberprof" % enc)


def entry_end(pool, data, i):
    """The end of one constant (after its key) of emberprof's pools."""
    if pool in ("FrameType", "ThreadState", "Symbol"):
        return string(data, i)
    if pool == "Thread":
        i = string(data, i)
        _, i = var(data, i)
        i = string(data, i)
        _, i = var(data, i)
        _, i = var(data, i)
        return i
    if pool == "StackTrace":
        i += 1  # truncated
        n, i = var(data, i)
        for _ in range(4 * n):
            _, i = var(data, i)
        return i
    if pool == "Method":
        for _ in range(4):
            _, i = var(data, i)
        return i + 1
    if pool == "Class":
        for _ in range(4):
            _, i = var(data, i)
        return i
    raise SystemExit("jfr_split: unexpected pool " + pool)


NAMES = {24: "FrameType", 25: "ThreadState", 22: "Thread", 26: "StackTrace", 28: "Method",
         21: "Class", 31: "Symbol"}


def event(body):
    n, s = len(body), 1
    while len(put_var(n + s)) > s:
        s += 1
    return put_var(n + s) + body


def main():
    data = open(sys.argv[1], "rb").read()
    size = int.from_bytes(data[8:16], "big")
    if size != len(data):
        raise SystemExit("jfr_split: one chunk only")
    pos, meta, cp, others = 68, None, None, []
    while pos < size:
        n, i = var(data, pos)
        t, body = var(data, i)
        if t == 0:
            meta = data[pos:pos + n]
        elif t == 1:
            cp = (body, pos + n)
        else:
            others.append(data[pos:pos + n])
        pos += n
    i, end = cp
    head = i
    for _ in range(3):  # start, duration, delta
        _, i = var(data, i)
    flags = data[i]
    i += 1
    npools, i = var(data, i)
    pools = {}
    for _ in range(npools):
        tid, i = var(data, i)
        count, i = var(data, i)
        start = i
        for _ in range(count):
            _, i = var(data, i)
            i = entry_end(NAMES[tid], data, i)
        pools[NAMES[tid]] = put_var(tid) + put_var(count) + data[start:i]
    if i != end:
        raise SystemExit("jfr_split: the checkpoint has bytes after its pools")
    _, j = var(data, head)
    _, j = var(data, j)
    start_dur = data[head:j]  # start and duration, as they were

    def checkpoint(names, delta):
        body = put_var(1) + start_dur + put_var(delta) + bytes([flags]) + put_var(len(names))
        for nm in names:
            body += pools[nm]
        return event(body)

    cp1 = checkpoint(["FrameType", "ThreadState", "Thread", "StackTrace", "Symbol"], 0)
    out = bytearray(data[:68]) + meta
    cp1_at = len(out)
    out += cp1
    for e in others:
        out += e
    cp2_at = len(out)
    out += checkpoint(["Method", "Class"], cp1_at - cp2_at)
    out[8:16] = len(out).to_bytes(8, "big")
    out[16:24] = cp2_at.to_bytes(8, "big")
    out[24:32] = (68).to_bytes(8, "big")
    open(sys.argv[2], "wb").write(bytes(out))


if __name__ == "__main__":
    main()
