#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make_table_cache_seeds.py - writes the seed inputs of fuzz_table_cache
(input layout in fuzz_table_cache.c) into corpus_table_cache/: small
synthetic tables in mode 1 (a valid header is made around them), in the
packed mode (packed as the agent does, then a byte or a few corrupted)
and one raw input in mode 0. Usage: make_table_cache_seeds.py DIR"""
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


def packed(rows, at=0xffff, xor=0, tail=b""):
    """Rows packed by the fuzzer; the byte `at` past the header's check
    xor'ed, then `tail` written there (at 0xffff: past any small file)."""
    return bytes([0x11]) + struct.pack("<HBH", at, xor, len(tail)) + b"".join(rows) + tail


# a function: push rbp; mov rbp, rsp; ... then a gap, then a PLT stub and a signal trampoline
fn = [row(0x1000, 1, 0, 1), row(0x1001, 2, -2, 1), row(0x1004, 2, -2, 2), row(0x1040, 0, 0, 0),
      row(0x1200, 1, 11, 3), row(0x1300, 0, 0, 4), row(0x1310, 0, 0, 0)]
seeds = {
    "one_function.bin": mode1(fn[:4], [0], 9),
    "plt_signal.bin": mode1(fn, [0, 4], 9),
    "unknown_rows.bin": mode1([row(0, 1, 0, 5), row(8, 3, -3, 0x2a), row(64, 0, 0, 0x08)], [], 9),
    "raw_garbage.bin": bytes([0]) + b"EMBRUTAB" + bytes(200),
    "packed_function.bin": packed(fn),
    # rows in three 64 KiB pages, one of them empty
    "packed_pages.bin": packed(fn + [row(0x10010, 2, 0, 1), row(0x3fffe, 0, 0, 4),
                                     row(0x30000, 0, 0, 0)]),
    # the same, the first row word and some index bytes corrupted
    "packed_corrupt_row.bin": packed(fn, at=4, xor=0x80),
    "packed_corrupt_index.bin": packed(fn + [row(0x10010, 2, 0, 1)], at=60, xor=0xff,
                                       tail=b"\xff\xff\x00"),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
