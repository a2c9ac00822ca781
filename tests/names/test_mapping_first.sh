# SPDX-License-Identifier: Apache-2.0
# test_mapping_first.sh - mapping 1 of every profile written (CPU, wall,
# memory) is the main executable, though the program's time and
# allocations are all in a library: `go tool pprof` prints mapping 1 as
# the "File:" and Grafana Pyroscope takes mapping[0] as the binary.
. "$(dirname "$0")/lib.sh"
if [ "${EMBERPROF_ENGINE:-}" = tree ]; then
	# --engine tree makes CPU profiles only: those
	profile "$T/m" --rate 1000 -i 1s -- "$EMBER_NAMES_PROG" alloc 1.5
	n=$(wc -l <"$T/m.firstmaps")
	[ "$n" -ge 2 ] || fail "mapping 1: only $n profiles; expected one per window (2)"
	check_first_mapping "CPU (--engine tree)" "$T/m" "$EMBER_NAMES_PROG"
	done_tests
fi
profile "$T/m" --rate 1000 --wall --alloc -i 1s -- "$EMBER_NAMES_PROG" alloc 1.5
n=$(wc -l <"$T/m.firstmaps")
min=3
[ -n "${EMBER_TEST_SANITIZE:-}" ] && [ "$EMBER_TEST_SANITIZE" != OFF ] && min=2
if [ "$n" -lt "$min" ]; then
	fail "mapping 1: only $n profiles; expected CPU, wall and memory ones"
fi
check_first_mapping "CPU, wall, memory" "$T/m" "$EMBER_NAMES_PROG"
ls "$T/m" >"$T/m.files"
if [ -n "${EMBER_TEST_SANITIZE:-}" ] && [ "$EMBER_TEST_SANITIZE" != OFF ]; then
	# ASan's allocator, preloaded first, serves malloc: no allocation is
	# sampled, and a profile with no sample is not written
	ok "memory profile: none expected in the sanitizer build"
else
	check_grep "memory profile written" "$T/m.files" ".memory.pb.gz"
fi
check_grep "wall profile written" "$T/m.files" "wall"
done_tests
