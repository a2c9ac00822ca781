#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# heap.sh - the overhead of memory (allocation) profiling, benchmark 6 of
# docs/BENCHMARKS.md: the malloc-heavy bench/heap_workload.c (4 threads,
# many small allocations and frees, a fixed amount of work) run side by
# side, interleaved, in ROUNDS rounds, under:
#
#   base       glibc malloc, nothing profiled (the reference of "ember")
#   control    the same again: its ratio to base is the noise floor
#   ember-cpu  emberprof with CPU profiling only (LD_PRELOAD libemberprof.so,
#              EMBERPROF_OUTPUT_DIR; 100 Hz): its malloc interposition is
#              in place but samples nothing
#   ember      the same plus emberprof's own allocation sampling at the
#              default mean of 512 KiB ($EMBER_BENCH_HEAP_ENV, default
#              "EMBERPROF_ALLOC=on EMBERPROF_ALLOC_BACKEND=emberprof");
#              ember/ember-cpu is what allocation profiling adds. Both only
#              when the library interposes malloc, else reported as pending
#   je         jemalloc (LD_PRELOAD libjemalloc.so.2), profiling off
#   je-prof    jemalloc with MALLOC_CONF=prof:true,lg_prof_sample:19
#              (its sampler at a 512 KiB mean; nothing dumped)
#   je-ember   je-prof plus emberprof (CPU and EMBERPROF_ALLOC_BACKEND=jemalloc:
#              jemalloc's samples dumped at each window), libjemalloc.so.2
#              first in LD_PRELOAD, as docs/CONFIG.md recommends
#   je-ember-lf the same with libemberprof.so first: its malloc then passes
#              every call on to jemalloc (the cost of that detour)
#   tc         gperftools' tcmalloc (libtcmalloc.so.4), sampling off
#   tc-sample  tcmalloc with TCMALLOC_SAMPLE_PARAMETER=524288
#
# Ratios are per round (each against its own allocator's unprofiled run in
# the same round: ember/base, ember/ember-cpu, je-prof/je, tc-sample/tc,
# je-ember/je), then the median
# and min..max over rounds. CPU is user+sys of the whole process from
# /usr/bin/time (all threads, exit included). Each round runs the
# configurations starting one further along the list, so none always
# runs first. The workload prints a checksum that must be the same in
# every run. A benchmark: it judges nothing.
#
#     bash bench/heap.sh BUILD_DIR [ROUNDS]      (ROUNDS default 7)
#     bash bench/heap.sh --summary FILE.tsv       (the summary of an earlier run)
#     bash bench/heap.sh --paired BUILD_DIR       (only the paired-blocks runs below)
#
# Then, when the library interposes malloc, the precise part: the
# paired-blocks program (bench/heap_paired.c) under libemberprof.so with
# allocation profiling off and on, under libemberprof_noalloc.so (what
# `emberprof run` preloads for CPU-only profiles), under a no-op interposer
# (bench/noop_malloc.c: the floor of any malloc interposition), and
# jemalloc with its sampler switched per thread (MODE jeprof), for the
# workload as above and with every allocated byte written (TOUCH); its
# hooked/raw ratio is the hook's cost measured inside one process, where
# run-to-run noise cancels.
#
# EMBER_BENCH_HEAP_ARGS: workload arguments (default "4 8000000 4096").
# EMBER_BENCH_PAIRED_ARGS: paired-blocks arguments (default "4 300 20000").
# Rows go to BUILD_DIR/bench-results/heap.tsv, the output to heap.txt.
set -euo pipefail

# Per-round ratios, then median [min..max] over rounds, from a heap.tsv.
summary() {
awk -F'\t' -v order="$2" '
NR > 1 { cpu[$1, $2] = $3; wall[$1, $2] = $4; rss[$1, $2] = $5; if ($1 + 1 > R) R = $1 + 1; seen[$2] = 1 }
function med(a, k,   i, j, t, n) { n = k; for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
function line(label, c, ref,   r, x, y, k, lo, hi) {
	if (!(c in seen) || !(ref in seen)) return
	k = 0; lo = 1e9; hi = -1e9
	for (r = 0; r < R; r++) { if (!((r, c) in cpu) || !((r, ref) in cpu) || cpu[r, ref] <= 0) continue
		k++; x[k] = cpu[r, c] / cpu[r, ref]; y[k] = wall[r, c] / wall[r, ref]
		if (x[k] < lo) lo = x[k]; if (x[k] > hi) hi = x[k] }
	if (k) printf "%-22s CPU %.3f [%.3f..%.3f]   wall %.3f\n", label, med(x, k), lo, hi, med(y, k)
}
function abs(c,   r, x, k, m) { if (!(c in seen)) return; k = 0
	for (r = 0; r < R; r++) { k++; x[k] = cpu[r, c] }; m = med(x, k)
	for (r = 0; r < R; r++) { k++; x[k - R] = rss[r, c] }
	printf "  %-11s CPU %.3f s (median), max RSS %d KiB (median)\n", c, m, med(x, R) }
END {
	printf "\nSummary over %d rounds: ratio of CPU time (user+sys), median [min..max]\n", R
	line("control / base", "control", "base")
	line("ember / base", "ember", "base")
	line("ember-cpu / base", "ember-cpu", "base")
	line("ember / ember-cpu", "ember", "ember-cpu")
	line("je-ember / je", "je-ember", "je")
	line("je-ember / je-prof", "je-ember", "je-prof")
	line("je-ember-lf / je-prof", "je-ember-lf", "je-prof")
	line("je-prof / je", "je-prof", "je")
	line("tc-sample / tc", "tc-sample", "tc")
	line("je / base", "je", "base")
	line("tc / base", "tc", "base")
	printf "\nAbsolute:\n"
	n = split(order, o, " "); for (i = 1; i <= n; i++) abs(o[i])
}' "$1"
}

if [ "${1:-}" = --summary ]; then
	# Re-summarize an earlier run: bash bench/heap.sh --summary heap.tsv
	summary "$2" "base control ember-cpu ember je je-prof je-ember je-ember-lf tc tc-sample"
	exit 0
fi

paired_only=0
if [ "${1:-}" = --paired ]; then
	# Only the paired-blocks runs: bash bench/heap.sh --paired BUILD_DIR
	paired_only=1
	shift
fi

if [ $# -lt 1 ]; then
	echo "usage: bash bench/heap.sh BUILD_DIR [ROUNDS]" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
rounds=${2:-${EMBER_BENCH_ROUNDS:-7}}
args=${EMBER_BENCH_HEAP_ARGS:-4 8000000 4096}
heap_env=${EMBER_BENCH_HEAP_ENV:-EMBERPROF_ALLOC=on EMBERPROF_ALLOC_BACKEND=emberprof}
libdir=/usr/lib/x86_64-linux-gnu
je=${EMBER_BENCH_JEMALLOC:-$libdir/libjemalloc.so.2}
tc=${EMBER_BENCH_TCMALLOC:-$libdir/libtcmalloc.so.4}
results=$build/bench-results
mkdir -p "$results"
workload=$build/bench/ember_bench_heap_workload
lib=$build/libemberprof.so
[ -x "$workload" ] || { echo "heap.sh: $workload missing; cmake --build $build --target bench_programs" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "heap.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }

# The paired-blocks runs (see the top). Output also to $results/heap.txt.
paired_runs() {
paired=$build/bench/ember_bench_heap_paired
pargs=${EMBER_BENCH_PAIRED_ARGS:-4 300 20000}
if [ -x "$paired" ] && nm -D --defined-only "$lib" 2>/dev/null | grep -qw malloc; then
	echo "
Paired blocks (one process; hooked/raw = emberprof's hook and sampler over glibc's malloc called directly):" |
		tee -a "$results/heap.txt"
	noop=$build/bench/libember_bench_noop_malloc.so
	for touch in 0 1; do
		for alloc in noop noalloc off on jeprof; do
			mkdir -p "$tmp/prof-paired"
			mode=glibc extra="" aval=$alloc
			if [ "$alloc" = noalloc ]; then
				# What `emberprof run` preloads for CPU-only profiles.
				pre=$build/libemberprof_noalloc.so aval=off
				[ -e "$pre" ] || continue
			elif [ "$alloc" = noop ]; then
				# The floor: malloc and free that only jump to glibc's.
				[ -e "$noop" ] || continue
				pre=$noop
			elif [ "$alloc" = jeprof ]; then
				# jemalloc's sampler, switched per thread: hooked/raw is its cost.
				[ -e "$je" ] || continue
				pre=$je mode=jeprof extra="MALLOC_CONF=prof:true,lg_prof_sample:19"
			else
				pre=$lib
			fi
			# shellcheck disable=SC2086 # args are a word list
			out=$(env LD_PRELOAD="$pre" EMBERPROF_OUTPUT_DIR="$tmp/prof-paired" EMBERPROF_ALLOC=$aval $extra \
				"$paired" $pargs 4096 $touch $mode) || { echo "heap.sh: paired run failed: $out" >&2; exit 1; }
			printf '%s\n' "$out" | awk -v a="$alloc" -v t="$touch" '
				/^mode raw/ { raw = $6 }
				/^ratio control/ { ctl = $12 }
				/^ratio hooked/ { med = $5; sums = $12 }
				/^estimate/ { est = $6 " .. " $8 }
				END { printf "  %-22s touch=%s  raw %s ns/pair  hooked/raw median %s sums %s  control/raw sums %s  with agent threads %s\n", (a == "noop" ? "no-op interposer" : a == "noalloc" ? "libemberprof_noalloc" : a == "jeprof" ? "jemalloc prof on/off" : "EMBERPROF_ALLOC=" a), t, raw, med, sums, ctl, est }' |
				tee -a "$results/heap.txt"
		done
	done
fi
}

if [ "$paired_only" = 1 ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	: >"$results/heap.txt"
	paired_runs
	exit 0
fi

# Configuration name -> environment (env(1) arguments).
names=(base control)
declare -A envs=([base]="" [control]="")
if [ -e "$lib" ] && nm -D --defined-only "$lib" 2>/dev/null | grep -qw malloc; then
	names+=(ember-cpu ember)
	envs[ember-cpu]="LD_PRELOAD=$lib EMBERPROF_OUTPUT_DIR=@TMP@"
	envs[ember]="LD_PRELOAD=$lib EMBERPROF_OUTPUT_DIR=@TMP@ $heap_env"
	ember_state="measured ($heap_env)"
else
	ember_state="PENDING: $lib does not interpose malloc (emberprof's own allocation sampling is on the heap branch)"
fi
if [ -e "$je" ]; then
	names+=(je je-prof)
	envs[je]="LD_PRELOAD=$je"
	envs[je-prof]="LD_PRELOAD=$je MALLOC_CONF=prof:true,lg_prof_sample:19"
	if [ "$ember_state" != "${ember_state#measured}" ]; then
		names+=(je-ember je-ember-lf)
		jb="MALLOC_CONF=prof:true,lg_prof_sample:19 EMBERPROF_OUTPUT_DIR=@TMP@ EMBERPROF_ALLOC=on EMBERPROF_ALLOC_BACKEND=jemalloc"
		envs[je-ember]="LD_PRELOAD=$je:$lib $jb"
		envs[je-ember-lf]="LD_PRELOAD=$lib:$je $jb"
	fi
else
	echo "heap.sh: $je missing (apt-get install libjemalloc2); jemalloc skipped" >&2
fi
if [ -e "$tc" ]; then
	names+=(tc tc-sample)
	envs[tc]="LD_PRELOAD=$tc"
	envs[tc-sample]="LD_PRELOAD=$tc TCMALLOC_SAMPLE_PARAMETER=524288"
else
	echo "heap.sh: $tc missing (apt-get install libgoogle-perftools4); tcmalloc skipped" >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tsv=$results/heap.tsv
printf 'round\tconfig\tcpu_s\twall_s\tmaxrss_kib\n' >"$tsv"
{
	echo "== heap profiling overhead: $rounds rounds, ember_bench_heap_workload $args"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); emberprof $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo '?')"
	echo "ember: $ember_state"
} | tee "$results/heap.txt"

expected=""
n=${#names[@]}
for ((r = 0; r < rounds; r++)); do
	for ((i = 0; i < n; i++)); do
		c=${names[$(((i + r) % n))]}
		out=$tmp/$c.out
		mkdir -p "$tmp/prof-$c"
		# shellcheck disable=SC2086 # the environment and args are word lists
		/usr/bin/time -f '%U %S %e %M' -o "$tmp/time" \
			env ${envs[$c]//@TMP@/$tmp/prof-$c} "$workload" $args >"$out" 2>"$tmp/err" ||
			{ echo "heap.sh: $c failed:" >&2; cat "$tmp/err" >&2; exit 1; }
		sum=$(cat "$out")
		if [ -z "$expected" ]; then expected=$sum; fi
		[ "$sum" = "$expected" ] || { echo "heap.sh: $c printed '$sum', not '$expected'" >&2; exit 1; }
		read -r u s e m <"$tmp/time"
		printf '%d\t%s\t%s\t%s\t%s\n' "$r" "$c" "$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')" "$e" "$m" >>"$tsv"
	done
	echo "round $((r + 1))/$rounds done ($(cut -d' ' -f1 /proc/loadavg) load)" | tee -a "$results/heap.txt"
done

summary "$tsv" "${names[*]}" | tee -a "$results/heap.txt"
echo "ember: $ember_state" | tee -a "$results/heap.txt"

paired_runs
