#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make_jfr_seeds.py - writes small JFR recordings shaped like
async-profiler's (corpus_jfr/): the fuzz target's seeds and the fixtures
of tests/unit/test_jfr_read.c. Run from this directory; the output is
committed, so this only documents and regenerates it.

asprof_like.jfr: one chunk, compressed integers, ticks of 1 GHz, with
  jdk.ActiveSetting clock=tsc; threads 4242 "main" and 4343 "worker";
  a 50 ms poll on 4242 (profiler.UserEvent, type tokio.PollcatchV1 through
  the profiler.types.UserEventType pool, Latin-1 data) with three
  jdk.ExecutionSample and one profiler.WallClockSample (samples=2) inside,
  a sample before it and one of thread 4343 during it (neither belongs to
  it); a 2 ms poll with one sample; a sample whose stack trace index is
  missing from its pool.
clock_monotonic.jfr: the same with clock=monotonic (the decoder refuses it).
two_chunks.jfr: asprof_like.jfr twice (two chunks).
empty_fields.jfr: hostile: a constant pool of 1000 values of a type whose
  200 fields each have 200 fields each of 200 fields of a type with no
  fields: no bytes, 8 million values each; the reader must refuse it.
"""
import struct


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    for _ in range(8):
        if v < 0x80:
            out.append(v)
            return bytes(out)
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v & 0xFF)  # the 9th byte carries 8 bits
    return bytes(out)


def utf8(s):
    b = s.encode()
    return b"\x03" + varint(len(b)) + b


def latin1(b):
    return b"\x05" + varint(len(b)) + b


def event(type_id, body):
    payload = varint(type_id) + body
    size = len(payload) + 4
    # size as a padded 4-byte varint, as the JDK writes it
    sz = bytes([(size & 0x7F) | 0x80, ((size >> 7) & 0x7F) | 0x80, ((size >> 14) & 0x7F) | 0x80, (size >> 21) & 0x7F])
    return sz + payload


# (id, name, super, [(field, type id, cp, array)])
CLASSES = [
    (1, "long", None, []), (2, "int", None, []), (3, "java.lang.String", None, []),
    (4, "boolean", None, []),
    (10, "java.lang.Thread", None, [("osName", 3, 0, 0), ("osThreadId", 1, 0, 0),
                                   ("javaName", 3, 0, 0), ("javaThreadId", 1, 0, 0)]),
    (11, "jdk.types.Symbol", None, [("string", 3, 0, 0)]),
    (12, "java.lang.Class", None, [("name", 11, 1, 0)]),
    (13, "jdk.types.Method", None, [("type", 12, 1, 0), ("name", 11, 1, 0), ("descriptor", 11, 1, 0)]),
    (14, "jdk.types.StackFrame", None, [("method", 13, 1, 0), ("lineNumber", 2, 0, 0),
                                       ("bytecodeIndex", 2, 0, 0), ("type", 15, 1, 0)]),
    (15, "jdk.types.FrameType", None, [("description", 3, 0, 0)]),
    (16, "jdk.types.StackTrace", None, [("truncated", 4, 0, 0), ("frames", 14, 0, 1)]),
    (17, "jdk.types.ThreadState", None, [("name", 3, 0, 0)]),
    (20, "jdk.ExecutionSample", "jdk.jfr.Event", [("startTime", 1, 0, 0), ("sampledThread", 10, 1, 0),
                                                  ("stackTrace", 16, 1, 0), ("state", 17, 1, 0)]),
    (21, "profiler.WallClockSample", "jdk.jfr.Event", [("startTime", 1, 0, 0), ("sampledThread", 10, 1, 0),
                                                       ("stackTrace", 16, 1, 0), ("state", 17, 1, 0),
                                                       ("samples", 2, 0, 0)]),
    (22, "profiler.UserEvent", "jdk.jfr.Event", [("startTime", 1, 0, 0), ("eventThread", 10, 1, 0),
                                                 ("type", 23, 1, 0), ("data", 3, 0, 0)]),
    (23, "profiler.types.UserEventType", None, [("name", 3, 0, 0)]),
    (24, "jdk.ActiveSetting", "jdk.jfr.Event", [("startTime", 1, 0, 0), ("duration", 1, 0, 0),
                                                ("eventThread", 10, 1, 0), ("id", 1, 0, 0),
                                                ("name", 3, 0, 0), ("value", 3, 0, 0)]),
]


def metadata(classes_def=None):
    strings = []

    def s(x):
        if x not in strings:
            strings.append(x)
        return strings.index(x)

    def element(name, attrs, children):
        b = varint(s(name)) + varint(len(attrs))
        for k, v in attrs:
            b += varint(s(k)) + varint(s(v))
        b += varint(len(children))
        for c in children:
            b += c
        return b

    classes = []
    for cid, name, sup, fields in (classes_def or CLASSES):
        attrs = [("name", name), ("id", str(cid))]
        if sup:
            attrs.append(("superType", sup))
        if name == "jdk.types.Symbol":
            attrs.append(("simpleType", "true"))  # the JDK's reader unwraps it to its string
        fels = []
        for fname, ftype, cp, arr in fields:
            fa = [("name", fname), ("class", str(ftype))]
            if cp:
                fa.append(("constantPool", "true"))
            if arr:
                fa.append(("dimension", "1"))
            fels.append(element("field", fa, []))
        classes.append(element("class", attrs, fels))
    root = element("root", [], [element("metadata", [], classes), element("region", [("gmtOffset", "0")], [])])
    body = varint(0) + varint(0) + varint(1) + varint(len(strings))
    for x in strings:
        body += utf8(x)
    return event(0, body + root)


def checkpoint():
    pools = []

    def pool(cid, entries):
        b = varint(cid) + varint(len(entries))
        for idx, val in entries:
            b += varint(idx) + val
        pools.append(b)

    pool(10, [(1, utf8("main-os") + varint(4242) + utf8("main") + varint(1)),
              (2, utf8("worker") + varint(4343) + utf8("worker") + varint(2))])
    syms = ["slow_callback", "uv_run", "main", "", "busy_other", "()V"]
    pool(11, [(i + 1, utf8(x)) for i, x in enumerate(syms)])
    pool(12, [(1, varint(4))])
    pool(13, [(1, varint(1) + varint(1) + varint(6)), (2, varint(1) + varint(2) + varint(6)),
              (3, varint(1) + varint(3) + varint(6)), (4, varint(1) + varint(5) + varint(6))])
    pool(15, [(1, utf8("Native"))])

    def frame(m):
        return varint(m) + varint(0) + varint(0) + varint(1)
    pool(16, [(1, b"\x00" + varint(3) + frame(1) + frame(2) + frame(3)),
              (2, b"\x00" + varint(2) + frame(4) + frame(3))])
    pool(17, [(1, utf8("STATE_RUNNABLE"))])
    pool(23, [(1, utf8("tokio.PollcatchV1"))])
    body = varint(0) + varint(0) + varint(0) + b"\x00" + varint(len(pools)) + b"".join(pools)
    return event(1, body)


T0 = 1_000_000_000


def sample(t, thread, stack):
    return event(20, varint(t) + varint(thread) + varint(stack) + varint(1))


def user_poll(before, after, thread=1):
    data = struct.pack("<QQ", before, after)
    return event(22, varint(after + 1000) + varint(thread) + varint(1) + latin1(data))


def chunk(clock):
    evs = [event(24, varint(T0) + varint(0) + varint(1) + varint(1) + utf8("clock") + utf8(clock))]
    before, after = T0 + 10_000_000, T0 + 60_000_000          # the 50 ms poll
    evs.append(sample(T0 + 5_000_000, 1, 1))                  # before the poll
    for k in (1, 2, 3):
        evs.append(sample(before + k * 10_000_000, 1, 1))
    evs.append(event(21, varint(before + 45_000_000) + varint(1) + varint(1) + varint(1) + varint(2)))
    evs.append(sample(before + 20_000_000, 2, 2))             # another thread
    evs.append(user_poll(before, after))
    b2, a2 = T0 + 100_000_000, T0 + 102_000_000               # a 2 ms poll
    evs.append(sample(b2 + 1_000_000, 1, 1))
    evs.append(sample(b2 + 1_500_000, 1, 99))                 # stack trace not in the pool
    evs.append(user_poll(b2, a2))
    meta = metadata()
    cp = checkpoint()
    body = b"".join(evs)
    hdr = 68
    meta_off = hdr + len(body)
    cp_off = meta_off + len(meta)
    size = cp_off + len(cp)
    header = b"FLR\x00" + struct.pack(">HHqqqqqqqi", 2, 0, size, cp_off, meta_off,
                                      1_700_000_000_000_000_000, 200_000_000, T0, 1_000_000_000, 1)
    return header + body + meta + cp


def empty_fields():
    cls = [(1, "long", None, []), (30, "E", None, [])]
    cls.append((31, "D", None, [("f%d" % i, 30, 0, 0) for i in range(200)]))
    cls.append((32, "C", None, [("f%d" % i, 31, 0, 0) for i in range(200)]))
    cls.append((33, "B", None, [("f%d" % i, 32, 0, 0) for i in range(200)]))
    meta = metadata(cls)
    pool = varint(33) + varint(1000) + b"".join(varint(i + 1) for i in range(1000))
    cp = event(1, varint(0) + varint(0) + varint(0) + b"\x00" + varint(1) + pool)
    meta_off = 68
    cp_off = meta_off + len(meta)
    size = cp_off + len(cp)
    header = b"FLR\x00" + struct.pack(">HHqqqqqqqi", 2, 0, size, cp_off, meta_off, 0, 0, 0, 1_000_000_000, 1)
    return header + meta + cp


if __name__ == "__main__":
    open("corpus_jfr/empty_fields.jfr", "wb").write(empty_fields())
    a = chunk("tsc")
    open("corpus_jfr/asprof_like.jfr", "wb").write(a)
    open("corpus_jfr/clock_monotonic.jfr", "wb").write(chunk("monotonic"))
    open("corpus_jfr/two_chunks.jfr", "wb").write(a + a)
