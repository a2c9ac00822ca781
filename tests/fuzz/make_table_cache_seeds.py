#!/usr/bin/env python3
"""make_table_cache_seeds.py - writes the seed inputs of fuzz_table_cache
(input layout in fuzz_table_cache.c) into corpus_table_cache/: small
synthetic tables in mode 1 (a valid header is made around them) and one
raw input in mode 0. Usage: make_table_cache_seeds.py DIR"""
import os
import struct
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def row(pc, cfa, fp, kind):
    return struct.pack("<IhbB", pc, cfa, fp, kind)


def mode1(rows, index, shift):
    return (bytes([1]) + struct.pack("<HHB", len(rows), len(index), shift) + b"".join(rows) +
            b"".join(struct.pack("<I", i) for i in index))


# a function: push rbp; mov rbp, rsp; ... then a gap, then a PLT stub and a signal trampoline
fn = [row(0x1000, 1, 0, 1), row(0x1001, 2, -2, 1), row(0x1004, 2, -2, 2), row(0x1040, 0, 0, 0),
      row(0x1200, 1, 11, 3), row(0x1300, 0, 0, 4), row(0x1310, 0, 0, 0)]
seeds = {
    "one_function.bin": mode1(fn[:4], [0], 9),
    "plt_signal.bin": mode1(fn, [0, 4], 9),
    "unknown_rows.bin": mode1([row(0, 1, 0, 5), row(8, 3, -3, 0x2a), row(64, 0, 0, 0x08)], [], 9),
    "raw_garbage.bin": bytes([0]) + b"EMBRUTAB" + bytes(200),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
