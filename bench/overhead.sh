#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# overhead.sh - benchmarks 1 and 3 of docs/BENCHMARKS.md: the CPU and wall
# overhead of profiling, the delivered/expected sample ratio, and the added
# max RSS, for emberprof (LD_PRELOAD libemberprof.so) and gperftools'
# libprofiler at 100 Hz and 1000 Hz, in interleaved paired runs of the
# bench workload (bench/workload.c: 4 threads, ~2.5 CPU-seconds each).
#
#     bash bench/overhead.sh BUILD_DIR [ROUNDS]
#
# ROUNDS (default 5, or $EMBER_BENCH_ROUNDS) rounds of base, control,
# ember@100, gperf@100, ember@1000, gperf@1000 (and ember-nd@100 when run
# as root: emberprof with /usr/lib/debug hidden, see bench/abrun.c). Each
# round takes about 7 x 5 s on an idle 2-vCPU machine. The per-run rows go
# to BUILD_DIR/bench-results/NAME.tsv, the whole output to
# BUILD_DIR/bench-results/NAME.txt, NAME being $EMBER_BENCH_NAME or
# "overhead".
#
# Workload size can be changed with EMBER_BENCH_WORKLOAD_ARGS
# (default "4 20000 62500": threads, calls per thread, iterations per call);
# run.sh also runs it with "4 1000" (0.5 CPU-seconds) to expose the fixed
# costs of starting and stopping a profiler.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: bash bench/overhead.sh BUILD_DIR [ROUNDS]" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
rounds=${2:-${EMBER_BENCH_ROUNDS:-5}}
workload_args=${EMBER_BENCH_WORKLOAD_ARGS:-4 20000 62500}
gperf=${EMBER_BENCH_GPERF:-/usr/lib/x86_64-linux-gnu/libprofiler.so}
results=$build/bench-results
name=${EMBER_BENCH_NAME:-overhead}
mkdir -p "$results"

for f in bench/ember_bench_abrun bench/ember_bench_count bench/ember_bench_workload libemberprof.so; do
	if [ ! -e "$build/$f" ]; then
		echo "overhead.sh: $build/$f is missing; build with: cmake --build $build --target bench_programs" >&2
		exit 1
	fi
done

extra=()
if [ -e "$gperf" ]; then
	extra+=(--gperf "$gperf")
else
	echo "overhead.sh: $gperf not found (Debian: apt-get install libgoogle-perftools-dev); gperftools skipped" >&2
fi
if [ "$(id -u)" = 0 ] && [ -d /usr/lib/debug ]; then
	extra+=(--hide-debug /usr/lib/debug)
fi

echo "== overhead and RSS: $rounds rounds, workload: ember_bench_workload $workload_args"
# shellcheck disable=SC2086 # workload_args is a list of words on purpose
"$build/bench/ember_bench_abrun" --rounds "$rounds" --rates 100,1000 \
	--lib "$build/libemberprof.so" --count "$build/bench/ember_bench_count" \
	"${extra[@]}" --tsv "$results/$name.tsv" \
	-- "$build/bench/ember_bench_workload" $workload_args 2>&1 |
	grep -v '^PROFILE: interrupts/evictions/bytes' | tee "$results/$name.txt"
