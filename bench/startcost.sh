#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# startcost.sh - what emberprof costs processes that live a few
# milliseconds, and the start-up of big programs. Interleaved
# paired runs: each round runs every configuration of a case once, in an
# order that rotates from round to round; the summary gives per
# configuration the median CPU time (user + sys of the command and all
# its descendants, from wait4), its ratio to the unprofiled median of the
# same rounds, the median of the per-round ratios, the median max RSS
# (the largest process of the tree), the median page faults of the tree
# and their ratio to the unprofiled median (a count that hardly varies
# from run to run, where CPU time on a virtual machine does; there a
# fault costs tens of microseconds) and, for emberprof, the profile
# files written.
#
#     bash bench/startcost.sh BUILD_DIR [CASE...]
#
# Cases: loop (bash running /bin/true 300 times: unprofiled; what
# LD_PRELOAD alone costs, with a library that does nothing ("empty") and
# with emberprof's library and no request to profile ("idle"); the empty
# library in every process and one idle thread with its own malloc arena in
# the shell ("thread": the floor of an in-process agent with a thread
# there, bench/thread_preload.c); the tree sampled from outside, perf
# events inherited and 8 KiB stacks copied, records only counted
# ("tree-floor": the floor of an out-of-process engine,
# bench/perf_tree_floor.c; skipped where perf events are refused); the
# tree engine itself, `emberprof run --engine tree` ("tree": sampled from
# outside, stacks walked and named in emberprof; skipped with tree-floor); `emberprof
# run --engine auto --no-follow-children` (the library in the shell, its
# children not profiled); `emberprof run --engine auto` ("library": the
# preloaded library in the whole tree); `emberprof run` ("run": the
# default, which is the tree engine where perf events count kernel time,
# else the library), rustc (`rustc -O` on a
# small file, the real compiler, not rustup's proxy), clangxx (`clang++ -O2 -c` on a small
# C++ file), node (`node -e` with a small loop). A case whose program is
# absent is skipped with a note. EMBER_BENCH_ROUNDS sets the rounds (5).
# EMBER_BENCH_BEFORE=PATH adds, in the same rounds, the configurations
# "before..." run with another emberprof executable (an older build; it
# preloads the library of its own build directory), for before/after
# figures measured side by side.
# rustc, clangxx and node run the library (--engine auto) three ways (the unwind-table
# cache, EMBERPROF_UNWIND_CACHE): "nocache" (off), "cold" (a new, empty
# cache directory in every run: the first process of a binary) and "warm"
# (one directory for all rounds, filled by one run before them); and a
# fourth, "tree" (`--engine tree`), where perf events are permitted.
# Judges nothing: docs/BENCHMARKS.md holds the figures and targets.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: bash bench/startcost.sh BUILD_DIR [loop|rustc|clangxx|node ...]" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
shift
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(loop rustc clangxx node)
rounds=${EMBER_BENCH_ROUNDS:-5}
# EMBER_BENCH_NO_BUILD=1: the build directory as it is (a run as another
# user, who cannot write it: nobody, to measure perf_event_paranoid 2)
[ "${EMBER_BENCH_NO_BUILD:-0}" = 1 ] ||
cmake --build "$build" --target ember_bench_cpurun ember_bench_empty_preload ember_bench_thread_preload \
	ember_bench_perf_tree_floor \
	emberprof_cli emberprof \
	emberprof_noalloc -j 2 >/dev/null ||
	{ echo "startcost.sh: building in $build failed" >&2; exit 1; }
runner=$build/bench/ember_bench_cpurun
ember=$build/emberprof
before=${EMBER_BENCH_BEFORE:-}
work=$(mktemp -d /tmp/ember-startcost.XXXXXX)
trap 'rm -rf "$work"' EXIT

# One case: NAME, then configurations as "LABEL|COMMAND" (COMMAND run by
# bash -c; @OUT@ becomes a fresh output directory of that run, @CACHE@ a
# fresh unwind-table cache directory, removed after the run).
run_case() {
	local name=$1
	shift
	local configs=("$@") n=$#
	local tsv=$work/$name.tsv
	: >"$tsv"
	for ((r = 0; r < rounds; r++)); do
		for ((k = 0; k < n; k++)); do
			local c=${configs[$(((k + r) % n))]}
			local label=${c%%|*} cmd=${c#*|}
			local out=$work/out-$name-$r-$label
			rm -rf "$out"
			local res
			cmd=${cmd//@CACHE@/$out.utab}
			res=$("$runner" bash -c "${cmd//@OUT@/$out}")
			local files=0
			[ -d "$out" ] && files=$(find "$out" -type f | wc -l)
			echo "$r $label $res $files" >>"$tsv"
			rm -rf "$out" "$out.utab"
		done
	done
	echo "== $name ($rounds rounds): median CPU s, ratio of medians to unprofiled, median" \
		"of per-round ratios [min..max], median max RSS MiB (+ over unprofiled)," \
		"median page faults (ratio to unprofiled), files"
	awk -v base="${configs[0]%%|*}" '
	function median(arr, m,   i, j, t, a) {
		for (i = 1; i <= m; i++) a[i] = arr[i]
		for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return m % 2 ? a[(m+1)/2] : (a[m/2] + a[m/2+1]) / 2
	}
	{ cpu[$2, $1] = $3; rss[$2, $1] = $5; flt[$2, $1] = $7; files[$2, $1] = $8; if (!($2 in seen)) { seen[$2] = 1; order[++nl] = $2 } rounds[$1] = 1 }
	END {
		nr = 0; for (r in rounds) nr++
		for (r = 0; r < nr; r++) { bc[r+1] = cpu[base, r]; br[r+1] = rss[base, r]; bf[r+1] = flt[base, r] }
		bcm = median(bc, nr); brm = median(br, nr); bfm = median(bf, nr)
		for (l = 1; l <= nl; l++) {
			lab = order[l]
			lo = 1e9; hi = 0
			for (r = 0; r < nr; r++) {
				c[r+1] = cpu[lab, r]; m[r+1] = rss[lab, r]; f[r+1] = files[lab, r]; g[r+1] = flt[lab, r]
				q[r+1] = cpu[base, r] > 0 ? cpu[lab, r] / cpu[base, r] : 0
				if (q[r+1] < lo) lo = q[r+1]; if (q[r+1] > hi) hi = q[r+1]
			}
			cm = median(c, nr); mm = median(m, nr); gm = median(g, nr)
			printf "  %-10s cpu %7.3f s  x%5.2f  (per round x%5.2f [%4.2f..%4.2f])  rss %7.1f MiB (%+6.1f)  faults %7d (x%4.2f)  files %d\n",
				lab, cm, (bcm > 0 ? cm / bcm : 0), median(q, nr), lo, hi, mm / 1024, (mm - brm) / 1024,
				gm, (bfm > 0 ? gm / bfm : 0), median(f, nr)
		}
	}' "$tsv"
}

# The emberprof configurations of a big program's case (see the header):
# NAME COMMAND; fills the array `emb`. The warm cache is filled first.
ember_configs() {
	local warm=$work/warm-$1
	"$ember" run -f -q --engine auto --unwind-cache "$warm" -o "$work/prime-$1" -- bash -c "$2" >/dev/null 2>&1 || true
	rm -rf "$work/prime-$1"
	emb=("nocache|$ember run -f --engine auto --unwind-cache off -o @OUT@ -- $2"
		"cold|$ember run -f --engine auto --unwind-cache @CACHE@ -o @OUT@ -- $2"
		"warm|$ember run -f --engine auto --unwind-cache $warm -o @OUT@ -- $2")
	if [ "$tree_ok" = 1 ]; then emb+=("tree|$ember run --engine tree -o @OUT@ -- $2"); fi
}
# Whether --engine tree can run here (perf events permitted).
tree_ok=0
"$build/emberprof" run -q --engine tree -o "$work/tree-probe" -- true >/dev/null 2>&1 && tree_ok=1
rm -rf "$work/tree-probe"

for c in "${cases[@]}"; do
	case $c in
	loop)
		loop='for i in $(seq 300); do /bin/true; done'
		extra=()
		[ -z "$before" ] || extra=("before|$before run -o @OUT@ -- bash -c '$loop'")
		tf=$build/bench/ember_bench_perf_tree_floor
		if "$tf" 8192 true 2>/dev/null; then
			extra+=("tree-floor|$tf 8192 bash -c '$loop' 2>/dev/null")
			extra+=("tree|$ember run --engine tree -o @OUT@ -- bash -c '$loop'")
		else
			echo "== loop: no tree-floor configuration, perf events refused here"
		fi
		run_case loop "unprofiled|$loop" \
			"empty|LD_PRELOAD=$build/bench/libember_bench_empty_preload.so bash -c '$loop'" \
			"thread|EMBER_BENCH_IDLE_THREAD=\$\$ LD_PRELOAD=$build/bench/libember_bench_thread_preload.so bash -c '$loop'" \
			"idle|LD_PRELOAD=$build/libemberprof_noalloc.so bash -c '$loop'" \
			"nofollow|$ember run --engine auto --no-follow-children -o @OUT@ -- bash -c '$loop'" \
			"library|$ember run --engine auto -o @OUT@ -- bash -c '$loop'" \
			"run|$ember run -o @OUT@ -- bash -c '$loop'" ${extra[@]+"${extra[@]}"}
		;;
	rustc)
		if ! command -v rustc >/dev/null; then
			echo "== rustc: skipped, rustc not found"
			continue
		fi
		rc="$(rustc --print sysroot)/bin/rustc"
		cat >"$work/small.rs" <<'RS'
use std::collections::HashMap;
fn main() {
    let mut m: HashMap<String, usize> = HashMap::new();
    for w in "the quick brown fox jumps over the lazy dog the end".split(' ') {
        *m.entry(w.to_string()).or_insert(0) += 1;
    }
    let mut v: Vec<_> = m.into_iter().collect();
    v.sort();
    println!("{:?}", v);
}
RS
		cmd="$rc -O -o $work/small-rs $work/small.rs"
		ember_configs rustc "$cmd"
		run_case rustc "unprofiled|$cmd" "${emb[@]}" \
			${before:+"before-nocache|$before run -f --unwind-cache off -o @OUT@ -- $cmd"}
		;;
	clangxx)
		if ! command -v clang++ >/dev/null; then
			echo "== clang++: skipped, clang++ not found"
			continue
		fi
		cat >"$work/small.cc" <<'CC'
#include <algorithm>
#include <map>
#include <string>
#include <vector>
int count(const std::vector<std::string> &v) {
	std::map<std::string, int> m;
	for (const auto &s : v) m[s]++;
	return (int)std::count_if(m.begin(), m.end(), [](auto &p) { return p.second > 1; });
}
CC
		cmd="clang++ -O2 -c -o $work/small.o $work/small.cc"
		ember_configs clangxx "$cmd"
		run_case clangxx "unprofiled|$cmd" "${emb[@]}" \
			${before:+"before-nocache|$before run -f --unwind-cache off -o @OUT@ -- $cmd"}
		;;
	node)
		if ! command -v node >/dev/null; then
			echo "== node: skipped, node not found"
			continue
		fi
		cmd="node -e 'let s = 0; for (let i = 0; i < 3e6; i++) s += i % 7; console.log(s)'"
		ember_configs node "$cmd"
		run_case node "unprofiled|$cmd" "${emb[@]}" \
			${before:+"before-nocache|$before run -f --unwind-cache off -o @OUT@ -- $cmd"}
		;;
	*)
		echo "startcost.sh: unknown case $c" >&2
		exit 2
		;;
	esac
done
