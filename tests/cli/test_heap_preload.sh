# test_heap_preload.sh - `emberprof run --alloc` on a C++ program that
# knows nothing of emberprof (tests/heap/heap_cxx.cpp): new/delete
# reach our malloc through libstdc++ under LD_PRELOAD. Two call sites
# allocate 96- and 32-byte objects, 50000 each (3:1 in bytes); with a
# sampling mean of 256 bytes the alloc_space ratio has a relative standard
# deviation near 1.3%, so the 5% band is about four of them wide
# (`go tool pprof` reads the profile and gives the values). Skipped in
# the sanitizer build, where AddressSanitizer owns malloc.
. "$(dirname "$0")/lib.sh"

case "${EMBER_TEST_SANITIZE:-OFF}" in
ON | on | 1 | TRUE | true)
	echo "SKIP: the sanitizer build does not interpose malloc (AddressSanitizer owns it)"
	exit 77
	;;
esac
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
cum() { # INDEX FUNCTION [FILES...]
	index=$1 func=$2
	shift 2
	HOME=$T GOCACHE=$T/gocache go tool pprof -sample_index="$index" -unit=B -top -nodecount=1000 \
		"$@" 2>pprof.err | awk -v f="$func" '
		{ name = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", name); sub(/ \(inline\)$/, "", name) }
		name == f { v = $4; sub(/B$/, "", v); print v; found = 1 }
		END { if (!found) print 0 }'
}
big=$(cum alloc_space "make_big()" prof/*.memory.pb.gz)
small=$(cum alloc_space "make_small()" prof/*.memory.pb.gz)
echo "alloc_space: make_big $big B, make_small $small B"
leaf=$(cum alloc_space "operator new(unsigned long)" prof/*.memory.pb.gz)
if [ "$leaf" != 0 ]; then ok "operator new is the allocating frame"; else fail "no operator new frame"; fi
if awk -v a="$big" -v b="$small" 'BEGIN { exit !(b > 0 && a / b > 2.85 && a / b < 3.15) }'; then
	ok "alloc_space ratio 3:1 within 5%"
else
	fail "alloc_space ratio: $big / $small"
	cat pprof.err >&2
fi
# Everything was deleted before exit: nothing of either site in use at
# the end of the final window (the last file; names sort by time).
inuse=$(cum inuse_space "make_big()" "$(ls prof/*.memory.pb.gz | tail -n 1)")
if [ "$inuse" = 0 ]; then ok "inuse_space empty after delete"; else fail "inuse_space of make_big: $inuse"; fi

# A bad value is refused before the program runs.
"$EMBERPROF" run --alloc=lots -- true >out 2>err; rc=$?
check_exit "bad --alloc" 2 $rc
check_grep "bad --alloc" err "EMBERPROF_ALLOC"

done_tests
