#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tree_coverage.sh BUILD_DIR [ROUNDS] - what a tree of short processes costs
# under `emberprof run` (the tree engine) and under `perf record -g` (at the
# same 100 Hz, and at perf's default 4000 Hz), side by side: the CPU time
# (user + system, by wait4's rusage) of the profiler and the tree together,
# over the tree's alone, in interleaved rounds, medians; and the share of
# the tree's CPU that emberprof's profiles hold (docs/BENCHMARKS.md,
# "Short-lived processes: all of the CPU"). Workloads: a 500-iteration
# shell loop of /bin/true, and `make -j2` of 200 one-line C files.
set -euo pipefail
build=$(cd "$1" && pwd)
rounds=${2:-5}
src=$(cd "$(dirname "$0")/.." && pwd)
cover=$src/tests/tree/tree_cover.py
ep=$build/emberprof
command -v perf >/dev/null || { echo "perf (linux-perf) is not installed"; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir "$out/src"
for i in $(seq 200); do printf 'int f%d(int x) { return x * %d + 1; }\n' "$i" "$i" >"$out/src/f$i.c"; done
printf 'OBJS := $(patsubst %%.c,%%.o,$(wildcard *.c))\nall: $(OBJS)\n%%.o: %%.c\n\tcc -O1 -c $< -o $@\n' >"$out/src/Makefile"

loop=(bash -c 'for i in $(seq 500); do /bin/true; done')
mk=(make -s -C "$out/src" -j2)
# one NAME WORKLOAD VARIANT: appends "cpu_s [coverage]" to $out/NAME.VARIANT
one() {
	local name=$1 variant=$2
	shift 2
	rm -f "$out"/src/*.o
	rm -rf "$out/p" "$out/perf.data"
	case $variant in
	bare) python3 "$cover" run "$out/ru" -- "$@" >/dev/null ;;
	emberprof) python3 "$cover" run "$out/ru" -- "$ep" run -q -o "$out/p" -- "$@" >/dev/null 2>&1 ;;
	perf100) python3 "$cover" run "$out/ru" -- perf record -q -g -F 100 -o "$out/perf.data" -- "$@" >/dev/null 2>&1 ;;
	perf) python3 "$cover" run "$out/ru" -- perf record -q -g -o "$out/perf.data" -- "$@" >/dev/null 2>&1 ;;
	esac
	local cpu cov=""
	read -r cpu <"$out/ru"
	[ "$variant" = emberprof ] && cov=" $(python3 "$cover" profiles "$out/p" 10 | awk '{ print $1 }')"
	echo "$cpu$cov" >>"$out/$name.$variant"
}
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for r in $(seq "$rounds"); do
	for v in bare emberprof perf100 perf; do
		one loop $v "${loop[@]}"
		one make $v "${mk[@]}"
	done
done
for name in loop make; do
	bare=$(awk '{ print $1 }' "$out/$name.bare" | med)
	printf '%s: the tree alone %.3f s of CPU (median of %d)\n' "$name" "$bare" "$rounds"
	for v in emberprof perf100 perf; do
		c=$(awk '{ print $1 }' "$out/$name.$v" | med)
		printf '  %-28s %.3f s  %.2fx\n' "$( [ $v = emberprof ] && echo 'emberprof run (100 Hz)' || ([ $v = perf100 ] && echo 'perf record -g -F 100' || echo 'perf record -g (4000 Hz)'))" "$c" "$(echo "$c / $bare" | bc -l)"
	done
	# coverage: the profiles' CPU over the tree's (the run's CPU less
	# emberprof's own is not separable here: over the bare tree's)
	cov=$(awk '{ print $2 / '"$bare"' }' "$out/$name.emberprof" | med)
	printf '  emberprof profiles hold %.0f %% of the bare tree'"'"'s CPU (median)\n' "$(echo "$cov * 100" | bc -l)"
done
