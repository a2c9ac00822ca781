#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# engines.sh - the sampling engines side by side (docs/BENCHMARKS.md
# "Engines"): CPU and wall overhead and delivered/expected samples of
# emberprof with per-thread CPU timers (EMBERPROF_ENGINE=timer) and with
# perf_events (EMBERPROF_ENGINE=perf), and of gperftools, at 100 Hz and
# 1000 Hz, in interleaved paired runs of the bench workload (see
# overhead.sh and abrun.c; medians of per-round ratios to the unprofiled
# run of the same round).
#
#     bash bench/engines.sh BUILD_DIR [ROUNDS]
#
# ROUNDS defaults to 5 ($EMBER_BENCH_ROUNDS); each round runs 8
# configurations of about 5 s each. Where the kernel refuses perf events
# the perf runs fail to start their agent (the run reports no profile).
# Then the kernel's share of each mechanism (ember_bench_engine_cost).
# Output: BUILD_DIR/bench-results/engines.{txt,tsv}, engine_cost.txt.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: bash bench/engines.sh BUILD_DIR [ROUNDS]" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
rounds=${2:-${EMBER_BENCH_ROUNDS:-5}}
workload_args=${EMBER_BENCH_WORKLOAD_ARGS:-4 20000 62500}
gperf=${EMBER_BENCH_GPERF:-/usr/lib/x86_64-linux-gnu/libprofiler.so}
results=$build/bench-results
mkdir -p "$results"

for f in bench/ember_bench_abrun bench/ember_bench_count bench/ember_bench_workload libemberprof.so; do
	if [ ! -e "$build/$f" ]; then
		echo "engines.sh: $build/$f is missing; build with: cmake --build $build --target bench_programs" >&2
		exit 1
	fi
done
extra=()
if [ -e "$gperf" ]; then
	extra+=(--gperf "$gperf")
else
	echo "engines.sh: $gperf not found; gperftools skipped" >&2
fi

echo "== engines: $rounds rounds, workload: ember_bench_workload $workload_args"
# shellcheck disable=SC2086 # workload_args is a list of words on purpose
"$build/bench/ember_bench_abrun" --rounds "$rounds" --rates 100,1000 --engines timer,perf \
	--lib "$build/libemberprof.so" --count "$build/bench/ember_bench_count" \
	"${extra[@]}" --tsv "$results/engines.tsv" \
	-- "$build/bench/ember_bench_workload" $workload_args 2>&1 |
	grep -v '^PROFILE: interrupts/evictions/bytes' | tee "$results/engines.txt"

# The kernel's share, without any profiler code: a single thread under a
# bare task-clock event (with and without its signal), CPU timers and a
# CLOCK_MONOTONIC timer, interleaved (engine_cost.c).
if [ -x "$build/bench/ember_bench_engine_cost" ]; then
	echo "== kernel share per mechanism at 1000 Hz (ember_bench_engine_cost)"
	"$build/bench/ember_bench_engine_cost" "${EMBER_BENCH_COST_ROUNDS:-15}" 1000 2>/dev/null |
		tee "$results/engine_cost.txt"
else
	echo "engines.sh: $build/bench/ember_bench_engine_cost not built (target ember_bench_engine_cost); kernel share skipped" >&2
fi
