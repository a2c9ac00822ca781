# SPDX-License-Identifier: Apache-2.0
# test_heap_preload.sh - `emberprof run --alloc` on a C++ program that
# knows nothing of emberprof (tests/heap/heap_cxx.cpp): new/delete
# reach our malloc through libstdc++ under LD_PRELOAD. Two call sites
# allocate 96- and 32-byte objects, 50000 each (3:1 in bytes); with a
# sampling mean of 256 bytes the alloc_space ratio has a relative standard
# deviation near 1.3%, so the 5% band is about four of them wide
# (`go tool pprof` reads the profile and gives the values). Skipped in
# the sanitizer build, where AddressSanitizer owns malloc.
. "$(dirname "$0")/lib.sh"
: "${EMBER_TEST_SRCDIR:?}"
. "$(dirname "$0")/heap_lib.sh"
prog="$EMBER_TEST_BINDIR/tests/heap/ember_heap_cxx"
[ -x "$prog" ] || { fail "no $prog"; done_tests; }

"$EMBERPROF" run --alloc=256 -o "$T/prof" -- "$prog" >out 2>err; rc=$?
check_exit "run --alloc" 0 $rc
check_grep "program ran" out "heap_cxx done"
check_grep "summary table" err "bytes allocated (alloc_space)"
n=$(ls prof | grep -c '\.memory\.pb\.gz$')
if [ "$n" -ge 1 ]; then ok "memory profile written ($n)"; else fail "no .memory.pb.gz"; ls -la prof >&2; fi

# Values from go tool pprof, in bytes (-unit=B), summed over the windows:
# the cumulative column, since the leaf is libstdc++'s operator new.
big=$(heap_cum alloc_space "make_big()" prof/*.memory.pb.gz)
small=$(heap_cum alloc_space "make_small()" prof/*.memory.pb.gz)
echo "alloc_space: make_big $big B, make_small $small B"
leaf=$(heap_cum alloc_space "operator new(unsigned long)" prof/*.memory.pb.gz)
if [ "$leaf" != 0 ]; then ok "operator new is the allocating frame"; else fail "no operator new frame"; fi
if heap_ratio3_ok "$big" "$small"; then
	ok "alloc_space ratio 3:1 within 5%"
else
	fail "alloc_space ratio: $big / $small"
	cat pprof.err >&2
fi
# Everything was deleted before exit: nothing of either site in use at
# the end of the final window (the last file; names sort by time).
inuse=$(heap_cum inuse_space "make_big()" "$(ls prof/*.memory.pb.gz | tail -n 1)")
if [ "$inuse" = 0 ]; then ok "inuse_space empty after delete"; else fail "inuse_space of make_big: $inuse"; fi

# JFR: each sampled allocation is a profiler.Malloc event (async-profiler's
# native allocation type) whose stack is the allocating site's; the JDK's
# jfr tool reads the recording (tests/tools/jfr_check.py).
sites="$EMBER_TEST_BINDIR/tests/heap/ember_heap_sites"
"$EMBERPROF" run --alloc=4096 --format both --interval 60m -o jfr -q -- "$sites" >out 2>err; rc=$?
check_exit "run --alloc --format both" 0 $rc
cat >expect.json <<'X'
{"frame_types": ["Native", "C++"], "methods": {"profiler.Malloc": ["site_a", "site_b", "main"]}}
X
f=$(ls -S jfr/*.jfr 2>/dev/null | head -1)
if [ -n "$f" ] && python3 "$EMBER_TEST_SRCDIR/tests/tools/jfr_check.py" "$f" expect.json >check.out 2>&1; then
	ok "JFR: profiler.Malloc events at site_a and site_b, read by the JDK's jfr tool"
else
	fail "jfr_check on ${f:-no .jfr}:"
	sed 's/^/    /' check.out >&2 2>/dev/null
	ls -la jfr >&2
fi

# A bad value is refused before the program runs.
"$EMBERPROF" run --alloc=lots -- true >out 2>err; rc=$?
check_exit "bad --alloc" 2 $rc
check_grep "bad --alloc" err "EMBERPROF_ALLOC"

done_tests
