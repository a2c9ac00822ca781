#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# symbolize_agent.sh - what symbolization costs the profiled program, and
# what EMBERPROF_SYMBOLIZE=0 saves (docs/BENCHMARKS.md section 16).
# Each workload runs, interleaved, in ROUNDS rounds under:
#
#   base  nothing preloaded
#   on    libemberprof (the CPU-only library `run` preloads,
#         libemberprof_noalloc.so) started by EMBERPROF_AUTOSTART=1,
#         writing pprof files (100 Hz, 10 s windows): names resolved in
#         the program, as by default
#   off   the same with EMBERPROF_SYMBOLIZE=0: addresses, mappings and
#         build ids only
#
# CPU is user+sys and RSS the peak of the program's process
# (/usr/bin/time), all threads, exit included. Per round: on/base and
# off/base of CPU, off/on of CPU and of RSS, RSS on-base and off-base in
# MB; then the median over rounds (min..max for off/on). The workloads:
# bench/workload.c (2 threads; a small program), python3 running a
# loop (a big interpreter, libm, libz, libexpat... mapped) and Debian's
# gzip, a stripped program without DWARF (named from .dynsym and FDE
# placeholders: a symbolizing agent maps libelf only, no libdw). A
# benchmark: it judges nothing.
#
#     bash bench/symbolize_agent.sh BUILD_DIR [ROUNDS]    (ROUNDS default 5)
set -euo pipefail

B=$(cd "${1:?usage: bench/symbolize_agent.sh BUILD_DIR [ROUNDS]}" && pwd)
ROUNDS=${2:-5}
LIB=$B/libemberprof_noalloc.so
WL=$B/bench/ember_bench_workload
[ -e "$LIB" ] && [ -x "$WL" ] || { echo "build it first: cmake --build $B --target emberprof_noalloc ember_bench_workload" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/ember-symagent-XXXXXX")
trap 'rm -rf "$T"' EXIT
for v in $(env | sed -n 's/^\(EMBERPROF_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export EMBERPROF_UNWIND_CACHE=off

one() { # CONFIG OUTFILE CMD...: appends "config cpu rss_kb"
	local cfg=$1 out=$2
	shift 2
	rm -rf "$T/prof" && mkdir -p "$T/prof"
	case $cfg in
	base) /usr/bin/time -f "%U %S %M" -o "$T/t" "$@" >/dev/null ;;
	on) LD_PRELOAD=$LIB EMBERPROF_AUTOSTART=1 EMBERPROF_OUTPUT_DIR=$T/prof \
		/usr/bin/time -f "%U %S %M" -o "$T/t" "$@" >/dev/null ;;
	off) LD_PRELOAD=$LIB EMBERPROF_AUTOSTART=1 EMBERPROF_OUTPUT_DIR=$T/prof EMBERPROF_SYMBOLIZE=0 \
		/usr/bin/time -f "%U %S %M" -o "$T/t" "$@" >/dev/null ;;
	esac
	echo "$cfg $(awk '{ printf "%.3f %d", $1 + $2, $3 }' "$T/t")" >>"$out"
}

bench() { # NAME CMD...
	local name=$1
	shift
	: >"$T/$name.tsv"
	local cfgs=(base on off)
	for r in $(seq "$ROUNDS"); do
		for k in 0 1 2; do # each round starts one further along
			one "${cfgs[$(((k + r) % 3))]}" "$T/$name.tsv" "$@"
		done
		echo "round $r" >>"$T/$name.tsv"
	done
	python3 - "$name" "$T/$name.tsv" <<'PY'
import statistics, sys
rounds, cur = [], {}
for line in open(sys.argv[2]):
    f = line.split()
    if f[0] == "round":
        rounds.append(cur); cur = {}
    else:
        cur[f[0]] = (float(f[1]), int(f[2]))
med = statistics.median
def col(fn):
    v = [fn(r) for r in rounds]
    return med(v), min(v), max(v)
on_cpu = col(lambda r: r["on"][0] / r["base"][0])
off_cpu = col(lambda r: r["off"][0] / r["base"][0])
offon_cpu = col(lambda r: r["off"][0] / r["on"][0])
offon_rss = col(lambda r: r["off"][1] / r["on"][1])
on_rss = col(lambda r: (r["on"][1] - r["base"][1]) / 1024)
off_rss = col(lambda r: (r["off"][1] - r["base"][1]) / 1024)
base_cpu = med([r["base"][0] for r in rounds])
print("%-9s base %.2f CPU-s | CPU on/base %.3f  off/base %.3f  off/on %.3f (%.3f..%.3f) | "
      "RSS +%.1f MB on, +%.1f MB off, off/on %.3f (%.3f..%.3f)" % (
      sys.argv[1], base_cpu, on_cpu[0], off_cpu[0], offon_cpu[0], offon_cpu[1], offon_cpu[2],
      on_rss[0], off_rss[0], offon_rss[0], offon_rss[1], offon_rss[2]))
PY
}

echo "agent in the host, symbolization on vs off (EMBERPROF_SYMBOLIZE=0); $ROUNDS rounds, medians"
bench workload "$WL" 2 6000 62500
bench python3 python3 -c 'import json, zlib, math
s = 0
for i in range(500000):
    s += len(json.dumps({"k": i, "v": math.sqrt(i)})) + zlib.crc32(b"%d" % i) % 7
print(s)'
awk 'BEGIN { x = 7; for (i = 0; i < 600000; i++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%d %x line %d\n", x % 1000, x, i % 77 } }' >"$T/data"
bench gzip gzip -9 -c "$T/data"
