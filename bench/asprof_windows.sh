#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# asprof_windows.sh - samples delivered by the async-profiler backend across
# window rotations (docs/BENCHMARKS.md "async-profiler backend:
# samples across windows"), side by side with async-profiler used directly
# (LD_PRELOAD + ASPROF_COMMAND, one recording for the whole run) on the same
# work: the bench workload, 2 threads.
#
#     ASYNC_PROFILER_HOME=DIR bash bench/asprof_windows.sh BUILD_DIR [ROUNDS]
#
# DIR is an async-profiler 4.x build or release (lib/libasyncProfiler.so and
# bin/jfrconv, or build/lib and build/bin); nothing here builds it. Without
# it the script says so and exits 77.
#
# Per run, CPU samples are divided by what the run's CPU time allows
# (CPU seconds / interval), and wall samples inside the workers' main_loop
# by what the run's wall time allows (2 threads x elapsed / interval): so the
# shares do not depend on how loaded the machine is. Counted with
# async-profiler's own converter (jfrconv --cpu / --wall -o collapsed).
# emberprof runs use 1 s windows, rotated with `dump` (the default) and with
# stop/start (EMBERPROF_ASPROF_ROTATE=stop); the per-window CPU counts are printed too
# (an empty window while the threads are busy is a failure of the backend).
# Output: BUILD_DIR/bench-results/asprof_windows.txt
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: ASYNC_PROFILER_HOME=DIR bash bench/asprof_windows.sh BUILD_DIR [ROUNDS]" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
rounds=${2:-${EMBER_BENCH_ROUNDS:-3}}
home=${ASYNC_PROFILER_HOME:-}
lib= jfrconv=
for d in "$home" "$home/build"; do
	[ -n "$home" ] && [ -e "$d/lib/libasyncProfiler.so" ] && lib=$d/lib/libasyncProfiler.so
	[ -n "$home" ] && [ -e "$d/bin/jfrconv" ] && jfrconv=$d/bin/jfrconv
done
if [ -z "$lib" ] || [ -z "$jfrconv" ]; then
	echo "SKIP: set ASYNC_PROFILER_HOME to an async-profiler 4.x build (lib/libasyncProfiler.so, bin/jfrconv)" >&2
	exit 77
fi
workload=$build/bench/ember_bench_workload
emberprof=$build/emberprof
for f in "$workload" "$emberprof"; do
	[ -x "$f" ] || { echo "asprof_windows.sh: $f is missing; build first" >&2; exit 1; }
done
args=${EMBER_BENCH_WORKLOAD_ARGS:-2 20000 62500}
nthreads=${args%% *}
results=$build/bench-results
mkdir -p "$results"
out=$results/asprof_windows.txt
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# counts FILE -> "cpu wall": its samples of all CPU stacks, and of wall stacks through main_loop
counts() {
	local x y
	x=$("$jfrconv" --cpu -o collapsed "$1" "$T/c.txt" >/dev/null 2>&1 && awk '{s += $NF} END {print s + 0}' "$T/c.txt")
	y=$("$jfrconv" --wall -o collapsed "$1" "$T/w.txt" >/dev/null 2>&1 && awk '/main_loop/ {s += $NF} END {print s + 0}' "$T/w.txt")
	echo "${x:-0} ${y:-0}"
}
ns() { case $1 in *ms) echo $((${1%ms} * 1000000)) ;; *s) echo $((${1%s} * 1000000000)) ;; esac; }

{
	echo "async-profiler: $lib ($(git -C "$home" describe --tags 2>/dev/null || echo "version unknown"))"
	echo "workload: ember_bench_workload $args; $rounds rounds; shares = samples / (time / interval)"
	printf '%-6s %-9s %8s %8s %10s %10s  %s\n' interval mode cpu wall cpu_share wall_share "per-window cpu"
} | tee "$out"
for r in $(seq "$rounds"); do
	for iv in 100ms 10ms; do
		n=$(ns $iv)
		for mode in direct dump stop; do
			rm -rf "$T/o" && mkdir -p "$T/o"
			if [ $mode = direct ]; then
				/usr/bin/time -f '%U %S %e' -o "$T/time" env LD_PRELOAD="$lib" \
					ASPROF_COMMAND="start,event=cpu,interval=$n,wall=${iv},jfr,cstack=dwarf,file=$T/o/all.jfr" \
					"$workload" $args >/dev/null
			else
				/usr/bin/time -f '%U %S %e' -o "$T/time" env EMBERPROF_ASPROF_LIB="$lib" \
					EMBERPROF_ASPROF_ROTATE=$mode EMBERPROF_ASPROF_CPU_INTERVAL=$iv EMBERPROF_ASPROF_WALL_INTERVAL=$iv \
					"$emberprof" run -q --backend asprof --format jfr --interval 1s -o "$T/o" \
					-- "$workload" $args >/dev/null 2>"$T/err"
			fi
			read -r u s e <"$T/time"
			c=0 w=0 per=""
			for f in $(ls "$T"/o/*.jfr | sort -t- -k4,4n); do
				read -r x y <<<"$(counts "$f")"
				c=$((c + x)) w=$((w + y))
				[ $mode = direct ] || per="$per $x"
			done
			awk -v iv=$iv -v m=$mode -v c="$c" -v w="$w" -v u="$u" -v s="$s" -v e="$e" -v n="$n" \
				-v t="$nthreads" -v per="$per" 'BEGIN {
				printf "%-6s %-9s %8d %8d %9.1f%% %9.1f%% %s\n", iv, m, c, w,
					100 * c / ((u + s) * 1e9 / n), 100 * w / (t * e * 1e9 / n), per }' | tee -a "$out"
		done
	done
done
