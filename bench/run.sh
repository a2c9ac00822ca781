#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh - runs every emberprof benchmark against a build directory and
# prints a summary. `make bench` calls it with the default build.
#
#     bash bench/run.sh BUILD_DIR
#
# 1. the machine (CPU model, vCPUs, kernel, CONFIG_HZ, clock source), since
#    every number depends on it;
# 2. ember_bench_sample_cost: the cost of one sample at depths 8, 32, 128,
#    with the default unwinding (auto: DWARF tables where they exist) and
#    with frame pointers only (about 1 minute);
# 3. bench/overhead.sh: CPU/wall overhead, delivered samples and added max
#    RSS against gperftools, in interleaved paired runs (about 3-6 minutes;
#    EMBER_BENCH_ROUNDS sets the number of rounds, default 5);
# 4. the same with a 0.5 CPU-second workload, where the fixed costs of
#    starting and stopping the profilers dominate (about 30 s);
# 5. bench/heap.sh: the overhead of allocation profiling on a malloc-heavy
#    workload, emberprof against jemalloc's and tcmalloc's samplers
#    (about 1-2 minutes idle; EMBER_BENCH_HEAP_ROUNDS, default 7).
#
# Benchmarks judge nothing: the numbers are to be read against the targets
# in docs/BENCHMARKS.md. Full outputs go to BUILD_DIR/bench-results/.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: bash bench/run.sh BUILD_DIR" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
results=$build/bench-results
mkdir -p "$results"

# Build what is missing (a no-op after `make build`).
cmake --build "$build" --target bench_programs -j "$(nproc)" >/dev/null ||
	{ echo "run.sh: building the benchmarks in $build failed" >&2; exit 1; }

start=$(date +%s)
{
	echo "== machine"
	echo "cpu:    $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "vcpus:  $(nproc)"
	echo "kernel: $(uname -r)"
	hz=$({ zcat /proc/config.gz 2>/dev/null || cat "/boot/config-$(uname -r)" 2>/dev/null; } |
		grep '^CONFIG_HZ=' || true)
	echo "tick:   ${hz:-CONFIG_HZ unknown (no /boot/config)}"
	echo "clock:  $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?')"
	echo "load:   $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, before the run)"
	echo "emberprof $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo '?')" \
		"(uncommitted changes: $(git -C "$here/.." status --porcelain 2>/dev/null | wc -l) files)"
} | tee "$results/machine.txt"

echo
echo "== cost per sample (ember_bench_sample_cost), default unwinding (auto) and frame pointers"
{
	"$build/bench/ember_bench_sample_cost" --unwind auto
	"$build/bench/ember_bench_sample_cost" --unwind fp
} | tee "$results/sample_cost.txt"

echo
echo "== overhead, delivered samples, added RSS (bench/overhead.sh)"
bash "$here/overhead.sh" "$build" >/dev/null

echo
echo "== fixed costs: the same with a 0.5 CPU-second workload, 9 rounds"
EMBER_BENCH_NAME=fixedcost EMBER_BENCH_WORKLOAD_ARGS="4 1000" \
	bash "$here/overhead.sh" "$build" 9 >/dev/null

echo
echo "== allocation profiling overhead (bench/heap.sh)"
bash "$here/heap.sh" "$build" "${EMBER_BENCH_HEAP_ROUNDS:-7}" >/dev/null

echo
echo "== summary"
cat "$results/machine.txt"
echo
echo "-- cost per sample, ns per call: median [p25..p75] over rounds"
cat "$results/sample_cost.txt"
echo
echo "-- overhead, delivered samples and max RSS"
sed -n '/^Summary over/,$p' "$results/overhead.txt"
echo
echo "-- fixed costs (workload: 4 threads x 1000 calls, about 0.5 CPU-seconds)"
sed -n '/^Summary over/,$p' "$results/fixedcost.txt"
echo
echo "-- allocation profiling (malloc-heavy workload, ratios of CPU time)"
sed -n '/^Summary over/,$p' "$results/heap.txt"
echo
echo "Targets: CPU overhead <= 1% at 100 Hz and <= 3% at 1 kHz; <= 2 us per sample at"
echo "depth 32; added RSS <= 10 MiB; allocation profiling at the default mean <= 3% and"
echo "no worse than the better of je-prof/je and tc-sample/tc. See docs/BENCHMARKS.md."
echo "Per-run rows: $results/overhead.tsv; total time $(($(date +%s) - start)) s."
