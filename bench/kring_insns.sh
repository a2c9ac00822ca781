#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions per ember__kring_take (the perf engine's kernel frames, read
# in the signal handler) for a record of 8 and of 48 kernel frames,
# valgrind --tool=callgrind on the native build:
#   bash bench/kring_insns.sh [build dir]
# Each count is the difference between a run of 2N and of N takes,
# divided by N, so start-up cancels. Exact and repeatable: one run each.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
N=20000
count() { # frames n -> instructions
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$B/bench/ember_bench_kring_insns" "$1" "$2" 2>&1 >/dev/null |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
printf "%8s %14s %16s\n" frames "insns/take" "insns/frame"
for f in 8 48; do
  a=$(count $f $N); b=$(count $f $((2 * N)))
  awk -v a="$a" -v b="$b" -v n=$N -v f=$f 'BEGIN { u = (b - a) / n; printf "%8d %14.1f %16.2f\n", f, u, u / f }'
done
