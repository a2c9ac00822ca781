#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# flame.sh - the flame graph benchmark (docs/BENCHMARKS.md, "Flame graphs"):
#
#  1. ember_bench_flame_gen writes a profile of 1,000,000 samples over
#     100,000 unique stacks; `emberprof flame` turns it into HTML: the wall
#     time (best and median of 5), the file's size, and instructions
#     (callgrind, if valgrind is installed); with EMBER_ASPROF_JFRCONV,
#     the size of async-profiler's HTML of the same stacks;
#  2. the page in headless chromium (bench/flame_render.js): first full
#     render, zoom, search; then d3-flame-graph's SVG on the same stacks (bench/flame_peer.js, when
#     `npm ci` was run in bench/flame-peer; minutes, not seconds);
#  3. one hour of the demo: a ten-second window of `emberprof run` copied
#     360 times, merged by `emberprof flame` (best and median of 5).
#
#     bash bench/flame.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out="$build/bench-results/flame"
rm -rf "$out"
mkdir -p "$out"
cmake --build "$build" --target ember_bench_flame_gen emberprof_cli emberprof_demo >/dev/null

# best and median of N runs of a command: wall time and CPU time (user +
# system; the machine is shared, so CPU time is the steadier figure)
timeit() {
	local n=$1; shift
	: >"$out/times"
	for _ in $(seq "$n"); do
		/usr/bin/time -f '%e %U %S' -a -o "$out/times" "$@" >/dev/null 2>&1
	done
	local w c
	w=$(awk '{print int($1 * 1000)}' "$out/times" | sort -n | awk '{v[NR]=$1} END {printf "best %d ms, median %d ms", v[1], v[int((NR+1)/2)]}')
	c=$(awk '{print int(($2 + $3) * 1000)}' "$out/times" | sort -n | awk '{v[NR]=$1} END {printf "best %d ms, median %d ms", v[1], v[int((NR+1)/2)]}')
	echo "wall $w; CPU $c (of $n runs)"
}

"$build/bench/ember_bench_flame_gen" "$out/big.pb.gz"
echo "input: $(stat -c %s "$out/big.pb.gz") bytes of gzip'd pprof (1,000,000 samples, 100,000 stacks)"
echo "emberprof flame: $(timeit 5 "$build/emberprof" flame -o "$out/big.html" "$out/big.pb.gz")"
echo "page size: $(stat -c %s "$out/big.html") bytes; gzip'd $(gzip -c "$out/big.html" | wc -c) bytes"
echo "emberprof flame --folded: $(timeit 5 "$build/emberprof" flame --folded -o "$out/big.folded" "$out/big.pb.gz")"
# async-profiler's own HTML of the same stacks, where its converter is
# available (EMBER_ASPROF_JFRCONV=/path/to/jfrconv; it reads folded text as
# well as JFR). Never built or fetched by this script.
if [ -n "${EMBER_ASPROF_JFRCONV:-}" ] && [ -x "$EMBER_ASPROF_JFRCONV" ]; then
	"$build/emberprof" flame --folded -o "$out/big.collapsed" "$out/big.pb.gz"
	"$EMBER_ASPROF_JFRCONV" "$out/big.collapsed" "$out/big-asprof.html" >/dev/null 2>&1
	echo "async-profiler's jfrconv HTML of the same stacks: $(stat -c %s "$out/big-asprof.html") bytes; gzip'd $(gzip -c "$out/big-asprof.html" | wc -c) bytes"
else
	echo "async-profiler's jfrconv: not compared (set EMBER_ASPROF_JFRCONV)"
fi
if command -v valgrind >/dev/null; then
	valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" \
		"$build/emberprof" flame -o "$out/big-cg.html" "$out/big.pb.gz" 2>"$out/callgrind.txt" >/dev/null
	echo "instructions (callgrind): $(sed -n 's/.*Collected : //p' "$out/callgrind.txt")"
fi
node "$here/flame_render.js" "$out/big.html"
# d3-flame-graph (SVG) on the same stacks, if bench/flame-peer is installed
node "$here/flame_peer.js" "$out/big.folded" "$out"

# One hour of the demo: 360 copies of one ten-second window.
"$build/emberprof" run -q -o "$out/demo" --interval 10s -- "$build/emberprof_demo" --threads 4 --seconds 12 >/dev/null 2>&1
win=$(ls -S "$out/demo"/*.pb.gz | head -n 1)
mkdir -p "$out/hour"
for i in $(seq -w 1 360); do cp "$win" "$out/hour/w$i.pb.gz"; done
echo "one window: $(stat -c %s "$win") bytes, $("$build/emberprof" top -n 1 "$win" | head -n 1)"
echo "merge 360 windows: $(timeit 5 "$build/emberprof" flame -o "$out/hour.html" "$out"/hour/*.pb.gz)"
node "$here/flame_render.js" "$out/hour.html"
