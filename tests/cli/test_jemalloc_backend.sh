# SPDX-License-Identifier: Apache-2.0
# test_jemalloc_backend.sh - EMBERPROF_ALLOC_BACKEND end to end, through
# the preloaded library: a program on jemalloc with profiling on
# (tests/fixtures/jemalloc_twosites.c: 18 MB live at one call site, 6 MB
# at another) gets a memory profile from jemalloc's profiler, whichever
# of the two libraries comes first in LD_PRELOAD, in which `go tool pprof`
# finds both sites (big first) and none of emberprof's own allocations;
# alloc_* summed over many short windows are what was allocated; auto
# picks jemalloc, emberprof keeps emberprof's hook; without jemalloc
# the backend refuses with a clear message and the program runs on; a bad
# value is named.
. "$(dirname "$0")/lib.sh"

lib="${EMBER_TEST_LIB:-$EMBER_TEST_BINDIR/libemberprof.so}"
fixture="$EMBER_TEST_BINDIR/tests/fixtures/ember_fixture_jemalloc"
je=libjemalloc.so.2
case "${EMBER_TEST_SANITIZE:-OFF}" in
ON | on | 1 | TRUE | true)
	# ASan's allocator, preloaded first, would serve malloc instead of jemalloc.
	echo "skipped: in the sanitizer build jemalloc cannot be the allocator"
	exit 77
	;;
esac
command -v go >/dev/null || { fail "go is needed (golang-go)"; done_tests; }
[ -x "$fixture" ] || { fail "no $fixture"; done_tests; }
export HOME="${HOME:-$T}"

# run NAME PRELOAD BACKEND: the fixture, profiled, with jemalloc's profiler on.
run() {
	rm -rf "$T/$1"
	EMBERPROF_LOG_LEVEL=info EMBERPROF_OUTPUT_DIR=$T/$1 EMBERPROF_ALLOC=on \
		EMBERPROF_ALLOC_BACKEND=$3 MALLOC_CONF=prof:true,lg_prof_sample:10,prof_accum:true \
		LD_PRELOAD="$2" "$fixture" "$T/$1.heap" >"$1.out" 2>"$1.err"
}

# top NAME: go tool pprof -top of the run's last memory profile (the final
# window: a run that crosses a window boundary, which falls on wall-clock
# multiples of 10 s, has two), inuse_space.
top() {
	f=$(ls "$T/$1"/*.memory.pb.gz 2>/dev/null | sort | tail -1)
	if [ -z "$f" ]; then
		fail "$1: no memory profile"
		ls -la "$T/$1" >&2
		: >"$1.top"
		return
	fi
	go tool pprof -sample_index=inuse_space -top -unit=byte "$f" >"$1.top" 2>&1 ||
		fail "$1: go tool pprof failed"
}

# near NAME SITE TRUE [TYPE]: the site's value in NAME.top (inuse_space,
# or TYPE) within 10% of TRUE bytes.
# At a 1 KiB mean a 256-byte block is sampled with p = 0.22 (768 bytes:
# 0.53), so the estimate for 24000 blocks has a relative sd of
# sqrt((1-p)/(24000 p)) = 1.2% (0.6%): 10% is 8 sd or more. Counting
# twice (emberprof's hook and jemalloc) would give 2x.
near() {
	v=$(awk -v s="$2" '$NF == s { sub(/B$/, "", $1); print $1 }' "$1.top")
	if [ -n "$v" ] && awk -v v="$v" -v t="$3" 'BEGIN { exit !(v > 0.9 * t && v < 1.1 * t) }'; then
		ok "$1: $2 ${4:-inuse_space} $v B, true $3"
	else
		fail "$1: $2 ${4:-inuse_space} '$v' B, true $3 (band 10%)"
	fi
}

for order in "$lib $je" "$je $lib"; do
	name=order$((${n:-0} + 1)); n=$((${n:-0} + 1))
	run "$name" "$order" jemalloc; rc=$?
	check_exit "LD_PRELOAD=$order: fixture" 0 $rc
	check_grep "LD_PRELOAD=$order" "$name.err" "allocation profiling backend jemalloc: jemalloc's profiler"
	top "$name"
	check_grep "LD_PRELOAD=$order: pprof names" "$name.top" "ember_jm_site_big"
	check_grep "LD_PRELOAD=$order: pprof names" "$name.top" "ember_jm_site_small"
	first=$(grep -m1 -o 'ember_jm_site_[a-z]*' "$name.top")
	if [ "$first" = ember_jm_site_big ]; then ok "$name: big site first"; else fail "$name: first is '$first'"; fi
	near "$name" ember_jm_site_big 18432000
	near "$name" ember_jm_site_small 6144000
	# The agent thread's own allocations are not sampled by jemalloc.
	check_no_grep "LD_PRELOAD=$order: no agent allocations" "$name.top" "ember__symbolizer"
	check_no_grep "LD_PRELOAD=$order: no agent allocations" "$name.top" "start_thread"
done

# Short windows: alloc_* are per window, so summed over every window
# (pprof merges the files) each site's alloc_space is what it allocated.
# The fixture pauses 400 ms halfway, so its allocations span windows
# however fast it runs.
rm -rf "$T/win"
EMBER_JM_PAUSE_MS=400 EMBERPROF_INTERVAL=100ms EMBERPROF_OUTPUT_DIR=$T/win EMBERPROF_ALLOC=on \
	EMBERPROF_ALLOC_BACKEND=jemalloc MALLOC_CONF=prof:true,lg_prof_sample:10,prof_accum:true \
	LD_PRELOAD="$lib $je" "$fixture" "$T/win.heap" >win.out 2>win.err; rc=$?
check_exit "100ms windows: fixture" 0 $rc
nwin=$(ls "$T/win"/*.memory.pb.gz 2>/dev/null | wc -l)
if [ "$nwin" -ge 2 ]; then ok "100ms windows: $nwin memory profiles"; else fail "100ms windows: $nwin memory profiles"; fi
go tool pprof -sample_index=alloc_space -top -unit=byte "$T/win"/*.memory.pb.gz >win.top 2>&1 ||
	fail "100ms windows: go tool pprof failed"
near win ember_jm_site_big 18432000 alloc_space
near win ember_jm_site_small 6144000 alloc_space

run auto "$lib $je" auto; rc=$?
check_exit "auto: fixture" 0 $rc
check_grep "auto picks jemalloc" auto.err "allocation profiling backend auto: jemalloc's profiler"

run own "$lib $je" emberprof; rc=$?
check_exit "emberprof: fixture" 0 $rc
check_no_grep "emberprof backend: not jemalloc's" own.err "jemalloc's profiler"
top own
check_grep "emberprof backend: its own samples" own.top "ember_jm_site_big"

# No jemalloc: refused with the reason; the program runs unharmed.
run none "$lib" jemalloc; rc=$?
check_exit "no jemalloc: fixture exits as without profiling" 3 $rc
check_grep "no jemalloc: reason" none.err "alloc backend jemalloc: jemalloc is not in the process"

# Through `emberprof run --alloc`: the variable passes to the program
# without a warning, and jemalloc's profiler is used.
rm -rf "$T/cli"
EMBERPROF_LOG_LEVEL=info EMBERPROF_ALLOC_BACKEND=jemalloc LD_PRELOAD=$je \
	MALLOC_CONF=prof:true,lg_prof_sample:10,prof_accum:true \
	"$EMBERPROF" run --alloc --quiet --output "$T/cli" -- "$fixture" "$T/cli.heap" >cli.out 2>cli.err; rc=$?
check_exit "emberprof run --alloc" 0 $rc
check_no_grep "emberprof run --alloc: known variable" cli.err "unknown environment variable"
check_grep "emberprof run --alloc: jemalloc's profiler" cli.err "allocation profiling backend jemalloc: jemalloc's profiler"
top cli
check_grep "emberprof run --alloc: pprof names" cli.top "ember_jm_site_big"

# A bad value.
EMBERPROF_OUTPUT_DIR=$T/bad EMBERPROF_ALLOC_BACKEND=tcmalloc LD_PRELOAD=$lib sh -c 'echo ran' >out 2>err; rc=$?
check_exit "bad EMBERPROF_ALLOC_BACKEND" 0 $rc
check_grep "bad EMBERPROF_ALLOC_BACKEND" out "ran"
check_grep "bad EMBERPROF_ALLOC_BACKEND" err "EMBERPROF_ALLOC_BACKEND"
check_grep "bad EMBERPROF_ALLOC_BACKEND" err "expected auto, emberprof or jemalloc"

done_tests
