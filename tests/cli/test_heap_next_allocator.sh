# SPDX-License-Identifier: Apache-2.0
# test_heap_next_allocator.sh - libemberprof.so preloaded in front of
# another allocator (LD_PRELOAD=libemberprof.so:libjemalloc.so.2, and the
# same with tcmalloc): emberprof's malloc must hand every call to that
# allocator, not to glibc (tests/heap/heap_sites.c checks each block with
# the allocator's own malloc_usable_size), and still sample: 3:1 between
# the two sites in alloc_space within 5% (mean 256 bytes; 96- and 32-byte
# blocks, 50000 each: relative sd of the ratio about 1.3%). Skipped in the
# sanitizer build, where AddressSanitizer owns malloc.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/heap_lib.sh"
prog="$EMBER_TEST_BINDIR/tests/heap/ember_heap_sites"
[ -x "$prog" ] || { fail "no $prog"; done_tests; }
lib="${EMBER_TEST_LIB:-$EMBER_TEST_BINDIR/libemberprof.so}"

for next in libjemalloc.so.2 libtcmalloc_minimal.so.4; do
	path=$(ldconfig -p | awk -v n="$next" '$1 == n { print $NF; exit }')
	if [ -z "$path" ]; then
		fail "$next is not installed (scripts/setup-deps.sh installs it)"
		continue
	fi
	rm -rf prof
	EMBERPROF_OUTPUT_DIR=$T/prof EMBERPROF_ALLOC=256 EMBERPROF_LOG_LEVEL=info \
		LD_PRELOAD="$lib:$path" "$prog" >out 2>err; rc=$?
	check_exit "$next" 0 $rc
	check_grep "$next: ran" out "heap_sites done"
	check_grep "$next: allocations served by it" err "allocations served by $path"
	a=$(heap_cum alloc_space site_a prof/*.memory.pb.gz)
	b=$(heap_cum alloc_space site_b prof/*.memory.pb.gz)
	echo "$next: alloc_space site_a $a B, site_b $b B"
	if heap_ratio3_ok "$a" "$b"; then
		ok "$next: alloc_space ratio 3:1 within 5%"
	else
		fail "$next: alloc_space ratio $a / $b"
		cat pprof.err err >&2
	fi
done

done_tests
