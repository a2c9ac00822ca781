#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The two version scripts (src/emberprof.map for x86-64,
src/emberprof-aarch64.map for aarch64) must interpose the same calls, each
under every version that architecture's glibc defines for it.

A name missing from one map is a wrapper that silently does nothing on that
architecture (the linker keeps it local); a version missing from a map is
a program linked against that version binding to glibc's function, past our
wrapper. So, for each map:
  1. its names are the other map's names (ember_[a-z]* aside);
  2. with that architecture's libc.so.6 present (readelf reads either
     architecture's ELF on any host): every name@version in the map is one
     libc defines, and every version libc defines for an interposed name is
     in the map;
  3. given the built library (--lib, with its --map): it exports each
     name@version of that map (a name the sources do not define is dropped
     without a word by ld).
A libc that is absent is skipped with a printed line; the map comparison
always runs. --sanitized: the library comes from the sanitizer build,
where the allocator's names are the sanitizer's (src/preload/heap_exports.c
is empty): those are not looked for in it.
  check_version_maps.py SRCDIR [--lib LIB --map MAP [--sanitized]]
"""
ALLOCATOR = {"malloc", "free", "calloc", "realloc", "posix_memalign", "memalign", "valloc",
             "pvalloc", "aligned_alloc", "reallocarray"}
import os
import re
import subprocess
import sys

MAPS = {
    # map file -> that architecture's glibc (Debian's multiarch path)
    "src/emberprof.map": "/lib/x86_64-linux-gnu/libc.so.6",
    "src/emberprof-aarch64.map": "/lib/aarch64-linux-gnu/libc.so.6",
}


def parse_map(path):
    """{name: set(versions)} of the map's global names, ember_* aside."""
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    names = {}
    for m in re.finditer(r"([\w.]+)\s*\{(.*?)\}", text, re.S):
        version, body = m.group(1), m.group(2)
        glob = re.search(r"global:(.*?)(?:local:|$)", body, re.S)
        if not glob:
            continue
        for name in re.split(r"[;\s]+", glob.group(1)):
            if name and not name.startswith("ember_"):
                names.setdefault(name, set()).add(version)
    return names


def dyn_versions(lib, defined_only=True):
    """{name: set(versions)} of a shared object's dynamic symbols."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or "@" not in f[7]:
            continue
        if defined_only and f[6] == "UND":
            continue
        name, _, version = f[7].partition("@")
        syms.setdefault(name, set()).add(version.lstrip("@").split(" ")[0])
    return syms


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    src, lib, libmap = args[0], None, None
    if "--lib" in args:
        lib = args[args.index("--lib") + 1]
        libmap = os.path.relpath(args[args.index("--map") + 1], src)
    maps = {m: parse_map(os.path.join(src, m)) for m in MAPS}
    errors = []

    a, b = list(maps)
    for x, y in ((a, b), (b, a)):
        for name in sorted(set(maps[x]) - set(maps[y])):
            errors.append(f"{name} is in {x} but not in {y}")

    for m, libc in MAPS.items():
        if not os.path.exists(libc):
            print(f"note: {libc} absent: {m}'s versions not checked against it")
            continue
        have = dyn_versions(libc)
        for name, versions in sorted(maps[m].items()):
            glibc = have.get(name, set())
            for v in sorted(versions - glibc):
                errors.append(f"{m}: {name}@{v}: {libc} has no such version "
                              f"(it has {sorted(glibc) or 'none'})")
            for v in sorted(glibc - versions):
                errors.append(f"{m}: {name}@{v} is in {libc} but not in the map: "
                              f"programs linked against it bypass our wrapper")
        print(f"{m}: {len(maps[m])} names checked against {libc}")

    if lib:
        exported = dyn_versions(lib)
        want = maps.get(libmap)
        if want is None:
            sys.exit(f"--map {libmap} is none of {list(MAPS)}")
        if "--sanitized" in args:
            print("sanitizer build: the allocator's names are not ours, not checked")
            want = {k: v for k, v in want.items() if k not in ALLOCATOR}
        for name, versions in sorted(want.items()):
            for v in sorted(versions - exported.get(name, set())):
                errors.append(f"{lib} does not export {name}@{v} ({libmap} lists it)")
        print(f"{lib}: exports every name@version of {libmap}")

    for e in errors:
        print("FAIL:", e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
