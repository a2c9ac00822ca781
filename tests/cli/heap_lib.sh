# SPDX-License-Identifier: Apache-2.0
# heap_lib.sh - shared by the allocation profiling CLI tests (after lib.sh).

# The sanitizer build does not define malloc & co: nothing to test there.
case "${EMBER_TEST_SANITIZE:-OFF}" in
ON | on | 1 | TRUE | true)
	echo "SKIP: the sanitizer build does not interpose malloc (AddressSanitizer owns it)"
	exit 77
	;;
esac

# heap_cum INDEX FUNCTION FILES...: the cumulative value of FUNCTION for
# sample type INDEX, in bytes (or count), as `go tool pprof -top` gives it
# summed over FILES; 0 if FUNCTION is not listed. pprof's stderr goes to
# pprof.err.
heap_cum() {
	index=$1 func=$2
	shift 2
	HOME=$T GOCACHE=$T/gocache go tool pprof -sample_index="$index" -unit=B -top -nodecount=1000 \
		"$@" 2>pprof.err | awk -v f="$func" '
		{ name = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", name); sub(/ \(inline\)$/, "", name) }
		name == f { v = $4; sub(/B$/, "", v); print v; found = 1 }
		END { if (!found) print 0 }'
}

# heap_ratio3_ok A B: whether A/B is 3 within 5%.
heap_ratio3_ok() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(b > 0 && a / b > 2.85 && a / b < 3.15) }'
}
