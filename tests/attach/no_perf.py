# SPDX-License-Identifier: Apache-2.0
"""no_perf.py CMD [ARGS...] - runs CMD with perf_event_open refused
(EACCES), as the kernel refuses it at a perf_event_paranoid that forbids
it: a seccomp filter on this process (no privilege needed, no sysctl
touched), inherited by CMD."""
import ctypes
import os
import platform
import struct
import sys

NR = {"x86_64": 298, "aarch64": 241}.get(platform.machine())
if NR is None:
    print("no_perf.py: perf_event_open's number on %s is not known" % platform.machine())
    sys.exit(77)
EACCES = 13
# ld [nr]; jeq NR ? next : skip; ret ERRNO(EACCES); ret ALLOW
insns = [(0x20, 0, 0, 0), (0x15, 0, 1, NR), (0x06, 0, 0, 0x00050000 | EACCES),
         (0x06, 0, 0, 0x7fff0000)]
buf = b"".join(struct.pack("HBBI", *i) for i in insns)
filt = ctypes.create_string_buffer(buf)


class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


prog = Prog(len(insns), ctypes.addressof(filt))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:
    print("no_perf.py: seccomp refused: %s" % os.strerror(ctypes.get_errno()))
    sys.exit(77)
os.execvp(sys.argv[1], sys.argv[1:])
