#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libsize.sh - what the preloaded library weighs in every profiled
# process: the text, data and bss sizes and the exported dynamic symbols
# of libemberprof.so and libemberprof_noalloc.so, and the instructions a
# short-lived process (/bin/true) executes with each preloaded and its
# agent started as `emberprof run` starts it (valgrind's callgrind counts
# instructions, repeatable on a noisy machine), against /bin/true alone.
# The agent thread races the process's exit, so a run counts either the
# start alone or the start and the thread's first steps: each figure is
# the median of EMBER_BENCH_ROUNDS (7) runs, and the lowest and highest
# are shown beside it.
#
#     bash bench/libsize.sh BUILD_DIR [OTHER_BUILD_DIR]
#
# With a second build directory (another commit's build, e.g. a git
# worktree of it) both are measured in the same run, side by side, so the
# ratios compare like with like. Judges nothing: docs/BENCHMARKS.md holds
# the figures.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bash bench/libsize.sh BUILD_DIR [OTHER_BUILD_DIR]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "libsize.sh: valgrind is needed" >&2; exit 2; }

insns() { # command... -> instructions executed (all processes of the command)
	local out
	out=$(mktemp -d)
	valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$out/cg.%p" "$@" \
		>/dev/null 2>"$out/log" || true
	local total=0 n
	for f in "$out"/cg.*; do
		n=$(sed -n 's/^summary: \([0-9]*\).*/\1/p' "$f" | head -n 1)
		total=$((total + ${n:-0}))
	done
	rm -rf "$out"
	echo "$total"
}

rounds=${EMBER_BENCH_ROUNDS:-7}
median_insns() { # command... -> "median min max" over $rounds runs
	local i v=()
	for ((i = 0; i < rounds; i++)); do v+=("$(insns "$@")"); done
	printf '%s\n' "${v[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)], a[1], a[NR]}'
}

read -r base _ < <(median_insns /bin/true)
printf '%-48s %8s %6s %7s %8s %10s %6s %s\n' library text data bss exported "insns" ratio "(min..max)"
for b in "$@"; do
	b=$(cd "$b" && pwd)
	for lib in libemberprof.so libemberprof_noalloc.so; do
		f=$(readlink -f "$b/$lib")
		read -r text data bss _ < <(size "$f" | tail -n 1)
		exp=$(nm -D --defined-only "$f" | wc -l)
		dir=$(mktemp -d)
		read -r n lo hi < <(median_insns env LD_PRELOAD="$f" EMBERPROF_OUTPUT_DIR="$dir" /bin/true)
		rm -rf "$dir"
		printf '%-48s %8s %6s %7s %8s %10s %6.1f (%s..%s)\n' "$b/$lib" "$text" "$data" "$bss" \
			"$exp" "$n" "$(echo "$n / $base" | bc -l)" "$lo" "$hi"
	done
done
echo "/bin/true alone: $base instructions"
