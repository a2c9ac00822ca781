#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fork.sh BUILD_DIR [ROUNDS] - the wall time of one fork (+ _exit, or + exec
# of a static program) in a process profiled by the preloaded library, with
# fork children followed (the default) and not (EMBERPROF_FOLLOW_CHILDREN=0),
# against the same unprofiled, and unprofiled with one idle thread that has
# its own malloc arena (the floor of any in-process agent); interleaved
# rounds, medians (docs/BENCHMARKS.md "14. Forks").
set -euo pipefail
build=$(cd "$1" && pwd)
rounds=${2:-7}
cmake --build "$build" --target ember_bench_fork_cost ember_bench_static_true emberprof >/dev/null
fc=$build/bench/ember_bench_fork_cost
st=$build/bench/ember_bench_static_true
lib=$build/libemberprof_noalloc.so
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for mode in exit exec; do
	n=${EMBER_BENCH_FORKS:-500}
	[ $mode = exec ] && n=$((n / 2))
	for r in $(seq "$rounds"); do
		env -u LD_PRELOAD "$fc" $n $mode "$st" >>"$out/$mode.plain"
		env -u LD_PRELOAD EMBER_BENCH_IDLE_THREAD=1 "$fc" $n $mode "$st" >>"$out/$mode.thread"
		LD_PRELOAD=$lib EMBERPROF_OUTPUT_DIR=$out/p EMBERPROF_FOLLOW_CHILDREN=0 "$fc" $n $mode "$st" >>"$out/$mode.nofollow"
		LD_PRELOAD=$lib EMBERPROF_OUTPUT_DIR=$out/p "$fc" $n $mode "$st" >>"$out/$mode.follow"
	done
	# med FILE COLUMN
	med() { awk -v c="$2" '{ print $c }' "$1" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
	for col in 1 2; do
		what="wall"
		[ $col = 2 ] && what="CPU "
		printf 'fork + %-5s %s per fork: unprofiled %7.1f us, unprofiled + idle thread %7.1f us, profiled with children not followed %7.1f us, followed %7.1f us\n' \
			$mode "$what" "$(med "$out/$mode.plain" $col)" "$(med "$out/$mode.thread" $col)" \
			"$(med "$out/$mode.nofollow" $col)" "$(med "$out/$mode.follow" $col)"
	done
done
