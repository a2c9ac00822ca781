#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions per unwound frame at depth 32, frame pointers and DWARF, on
# x86-64 (valgrind --tool=callgrind, native build) and aarch64 (qemu-aarch64
# with bench/qemu_insn_plugin.c, cross build), side by side:
#   bash bench/unwind_insns.sh [x86 build dir] [aarch64 build dir]
# Each count is the difference between a run of 2N and of N unwinds,
# divided by N and by the frames recorded, so start-up and the table build
# cancel. Instruction counts are exact and repeatable: one run each.
set -euo pipefail
cd "$(dirname "$0")/.."
X86=${1:-build} ARM=${2:-build-aarch64}
N=2000
plugin=$(mktemp -d)/libinsn.so
cc -O2 -shared -fPIC bench/qemu_insn_plugin.c -o "$plugin"

x86_count() { # mode n -> instructions
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$X86/bench/ember_bench_unwind_insns" "$1" "$2" 2>&1 >/dev/null |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
arm_count() {
  qemu-aarch64 -plugin "$plugin" -d plugin "$ARM/bench/ember_bench_unwind_insns" "$1" "$2" 2>&1 >/dev/null |
    sed -n 's/^insns \([0-9]*\)$/\1/p'
}
frames() { "$@" | sed -n 's/.* unwinds of \([0-9]*\) frames.*/\1/p'; }

printf "%-8s %-6s %8s %14s %16s\n" arch walker frames "insns/unwind" "insns/frame"
for mode in fp dwarf; do
  for arch in x86-64 aarch64; do
    if [ $arch = x86-64 ]; then
      a=$(x86_count $mode $N); b=$(x86_count $mode $((2 * N)))
      f=$(frames "$X86/bench/ember_bench_unwind_insns" $mode 1)
    else
      a=$(arm_count $mode $N); b=$(arm_count $mode $((2 * N)))
      f=$(frames qemu-aarch64 "$ARM/bench/ember_bench_unwind_insns" $mode 1)
    fi
    awk -v a="$a" -v b="$b" -v n=$N -v f="$f" -v arch=$arch -v m=$mode \
      'BEGIN { u = (b - a) / n; printf "%-8s %-6s %8d %14.1f %16.2f\n", arch, m, f, u, u / f }'
  done
done
